#!/usr/bin/env python3
"""Fails the loom Vitis flow on negative slack.

Reads a Vivado timing summary report (report_timing_summary, e.g. the routed
*_timing_summary_routed.rpt of a v++ --link run) and checks the Design
Timing Summary: WNS (setup) and WHS (hold) must not be negative. Prints one
line; exit 0 when met, 1 when violated, 2 when the report cannot be read or
has no constrained paths.

Usage: check_timing.py REPORT
"""
import sys


def parse_summary(text):
    """The Design Timing Summary row as {column: value string}, or None."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if "Design Timing Summary" in l), None)
    if start is None:
        return None
    for i in range(start, len(lines)):
        if "WNS(ns)" in lines[i]:
            # Column names contain single spaces ("TNS Failing Endpoints"); columns are
            # separated by two or more spaces.
            header = [h.strip() for h in lines[i].strip().split("  ") if h.strip()]
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or set(lines[j].strip()) <= set("- ")):
                j += 1
            if j >= len(lines):
                return None
            values = lines[j].split()
            if len(values) != len(header):
                return None
            return dict(zip(header, values))
    return None


def main(argv):
    if len(argv) != 2:
        print("usage: check_timing.py REPORT", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"check_timing: {path}: {e.strerror}", file=sys.stderr)
        return 2
    row = parse_summary(text)
    if row is None or "WNS(ns)" not in row or "WHS(ns)" not in row:
        print(f"check_timing: {path}: no Design Timing Summary table (is this a report_timing_summary report?)",
              file=sys.stderr)
        return 2
    try:
        wns, whs = float(row["WNS(ns)"]), float(row["WHS(ns)"])
    except ValueError:
        print(f"check_timing: {path}: WNS {row['WNS(ns)']}, WHS {row['WHS(ns)']}: no constrained paths "
              "(are the clocks defined?)", file=sys.stderr)
        return 2
    tns = row.get("TNS(ns)", "?")
    failing = row.get("TNS Failing Endpoints", "?")
    if wns < 0:
        print(f"timing: {path}: WNS {wns:.3f} ns (TNS {tns} ns, {failing} failing endpoints): negative setup slack",
              file=sys.stderr)
        return 1
    if whs < 0:
        print(f"timing: {path}: WHS {whs:.3f} ns (THS {row.get('THS(ns)', '?')} ns): negative hold slack",
              file=sys.stderr)
        return 1
    print(f"timing: {path}: WNS {wns:.3f} ns, WHS {whs:.3f} ns: met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
