#!/usr/bin/env python3
"""cli.passes_documented: docs/compiler.md's pass table names every pass of the
pipeline, in order, with the options it reads and the statistics it keeps, as
the passes declare them (`loom info --json`, field passes).

Usage: passes_doc_test.py LOOM ROOT
"""
import json
import pathlib
import re
import subprocess
import sys


def table(doc):
    """The pass table's rows as (name, reads, statistics), in order."""
    rows, inside = [], False
    for line in doc.splitlines():
        if line.startswith("| pass | file | does | reads | statistics |"):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and not line.startswith("| "):
            break
        if inside:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[-2]), re.findall(r"`([^`]+)`", cells[-1])))
    return rows


def main():
    loom, root = sys.argv[1], pathlib.Path(sys.argv[2])
    info = json.loads(subprocess.run([loom, "info", "--json"], check=True, capture_output=True, text=True).stdout)
    want = [(p["name"], p["options"], [s["key"] for s in p["statistics"]]) for p in info["passes"]]
    got = table((root / "docs" / "compiler.md").read_text())
    if not got:
        print("docs/compiler.md: no pass table (| pass | file | does | reads | statistics |)")
        return 1
    bad = []
    for name in [w[0] for w in want if w[0] not in [g[0] for g in got]]:
        bad.append(f"{name}: not in the table")
    for name in [g[0] for g in got if g[0] not in [w[0] for w in want]]:
        bad.append(f"{name}: in the table, not in the pipeline")
    if not bad and [g[0] for g in got] != [w[0] for w in want]:
        bad.append("the table's order is not the pipeline's: " + ", ".join(w[0] for w in want))
    declared = {w[0]: w for w in want}
    for name, reads, stats in got:
        if name not in declared:
            continue
        _, options, keys = declared[name]
        if sorted(reads) != sorted(options):
            bad.append(f"{name}: reads {reads} in the table, declares {options}")
        if sorted(stats) != sorted(keys):
            bad.append(f"{name}: statistics {stats} in the table, declares {keys}")
    if bad:
        print("\n".join(bad))
        print(f"docs/compiler.md's pass table is stale ({len(bad)} difference(s)); `{loom} info --passes` lists them")
        return 1
    print(f"docs/compiler.md: {len(got)} passes as declared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
