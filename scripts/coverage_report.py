#!/usr/bin/env python3
"""Per-module RTL coverage from Verilator coverage files, checked against the goals file.

  scripts/coverage_report.py [--goals docs/coverage-goals.yaml] [--check]
                             [--smoke] [--table FILE] DAT...

Reads one or more Verilator coverage files (.dat, merged or not), keeps the
points whose source is under rtl/ (testbench stand-ins are left out), adds up
the counts of a point over every instance and every file, and prints one row
per module: line (Verilator's line and branch points), toggle and user (the
RTL's cover properties) as hit/total and percent. A point counts as hit when
its count is above zero.

--check compares the totals with the goals file (line and toggle targets over
all modules, every required cover point hit unless waived) and exits 1 when a
goal is not met, listing what is missing. A waiver without a reason, or one
that matches no point of the modules present, is an error (exit 2).

--smoke checks a coverage build on a part of the RTL: the goals file is well
formed, each module present has line, toggle and user points, the cover
points named after the spec's opcodes and error causes exist where those
modules declare them, and some points were hit.
"""
import argparse
import fnmatch
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("line", "toggle", "user")


def die(msg, code=2):
    sys.stderr.write("loom: error: coverage: %s\n" % msg)
    sys.exit(code)


def read_dat(path, points):
    """Adds the points of one .dat file to points: (file, module, kind, label, line, col) -> count."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    with f:
        first = f.readline()
        if not first.startswith("# SystemC::Coverage"):
            die("%s: not a Verilator coverage file" % path)
        for ln in f:
            if not ln.startswith("C '"):
                continue
            end = ln.rfind("'")
            key, count = ln[3:end], ln[end + 1:].strip()
            fields = {}
            for kv in key.split("\x01"):
                if "\x02" in kv:
                    k, v = kv.split("\x02", 1)
                    fields[k] = v
            page = fields.get("page", "")
            if "/" not in page:
                continue
            ptype, module = page.split("/", 1)
            module = module.split("__", 1)[0]  # a parameterised module's suffix (loom_fifo__W112_D4)
            kind = {"v_line": "line", "v_branch": "line", "v_toggle": "toggle", "v_user": "user"}.get(ptype)
            src = os.path.realpath(fields.get("f", ""))
            rtl = os.path.join(ROOT, "rtl") + os.sep
            if kind is None or not src.startswith(rtl):
                continue
            k = (os.path.relpath(src, ROOT), module, kind, fields.get("o", ""), fields.get("l", ""), fields.get("n", ""))
            points[k] = points.get(k, 0) + int(count)


def load_goals(path):
    try:
        with open(path) as f:
            g = yaml.safe_load(f)
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    except yaml.YAMLError as e:
        die("%s: not YAML (%s)" % (path, str(e).splitlines()[0]))
    if not isinstance(g, dict) or not isinstance(g.get("targets"), dict):
        die("%s: expected a mapping with 'targets'" % path)
    t = g["targets"]
    for k in ("line", "toggle"):
        if not isinstance(t.get(k), (int, float)) or not 0 <= t[k] <= 100:
            die("%s: targets.%s: expected a percentage" % (path, k))
    req = t.get("user_required")
    if not isinstance(req, list) or not all(isinstance(x, str) and x for x in req):
        die("%s: targets.user_required: expected a list of point-name patterns" % path)
    waivers = g.get("waivers") or []
    if not isinstance(waivers, list):
        die("%s: waivers: expected a list" % path)
    for i, w in enumerate(waivers):
        if not isinstance(w, dict) or not isinstance(w.get("point"), str) or "." not in w["point"]:
            die("%s: waivers[%d]: expected 'point: <module>.<label>'" % (path, i))
        if not isinstance(w.get("reason"), str) or len(w["reason"].strip()) < 10:
            die("%s: waivers[%d] (%s): every waiver needs a reason" % (path, i, w["point"]))
    return g


def summarize(points):
    """module -> kind -> [hit, total]."""
    mods = {}
    for (src, module, kind, _label, _l, _n), count in points.items():
        m = mods.setdefault(module, {k: [0, 0] for k in KINDS})
        m[kind][1] += 1
        if count > 0:
            m[kind][0] += 1
    return mods


def pct(h, t):
    return "%5.1f %%" % (100.0 * h / t) if t else "    -  "


def table(mods):
    rows = ["| module | line | toggle | user (cover points) |", "|---|---|---|---|"]
    tot = {k: [0, 0] for k in KINDS}
    for name in sorted(mods):
        cells = []
        for k in KINDS:
            h, t = mods[name][k]
            tot[k][0] += h
            tot[k][1] += t
            cells.append("%s (%d/%d)" % (pct(h, t).strip(), h, t) if t else "-")
        rows.append("| %s | %s |" % (name, " | ".join(cells)))
    rows.append("| **total** | %s |" % " | ".join("%s (%d/%d)" % (pct(*tot[k]).strip(), *tot[k]) for k in KINDS))
    return rows, tot


def user_points(points):
    """(module, label) -> count, over every instance and location."""
    out = {}
    for (src, module, kind, label, _l, _n), count in points.items():
        if kind == "user":
            out[(module, label)] = out.get((module, label), 0) + count
    return out


def check(points, goals, tot, present):
    t = goals["targets"]
    failed = []
    for k in ("line", "toggle"):
        h, n = tot[k]
        p = 100.0 * h / n if n else 0.0
        ok = p >= t[k]
        print("goal %-6s >= %5.1f %%: %5.1f %% %s" % (k, t[k], p, "met" if ok else "NOT MET"))
        if not ok:
            failed.append("%s coverage %.1f %% < %s %%" % (k, p, t[k]))
    ups = user_points(points)
    waivers = goals.get("waivers") or []
    used = set()
    missing = []
    required = 0
    for (module, label), count in sorted(ups.items()):
        name = "%s.%s" % (module, label)
        if not any(fnmatch.fnmatchcase(label, pat) for pat in t["user_required"]):
            continue
        required += 1
        wv = [i for i, w in enumerate(waivers) if fnmatch.fnmatchcase(name, w["point"])]
        used.update(wv)
        if count == 0 and not wv:
            missing.append(name)
    waived = sum(1 for (m, lab), c in ups.items()
                 if any(fnmatch.fnmatchcase("%s.%s" % (m, lab), w["point"]) for w in waivers)
                 and any(fnmatch.fnmatchcase(lab, pat) for pat in t["user_required"]))
    print("goal required cover points (%s) hit: %d of %d, %d waived, %d missing %s" %
          (", ".join(t["user_required"]), required - len(missing) - waived, required, waived, len(missing),
           "met" if not missing else "NOT MET"))
    for name in missing:
        print("  not hit: %s" % name)
    if missing:
        failed.append("%d required cover points not hit" % len(missing))
    for i, w in enumerate(waivers):
        module = w["point"].split(".", 1)[0]
        if i not in used and any(fnmatch.fnmatchcase(m, module) for m in present):
            die("waiver '%s' matches no required cover point (stale waiver)" % w["point"])
    return failed


def smoke(points, mods):
    import re
    with open(os.path.join(ROOT, "docs", "spec", "isa.yaml")) as f:
        ops = [o["name"].lower() for o in yaml.safe_load(f)["opcodes"]]
    with open(os.path.join(ROOT, "docs", "spec", "regs.yaml")) as f:
        causes = [e["name"].lower() for e in yaml.safe_load(f)["error_causes"]]
    problems = []
    if not mods:
        problems.append("no coverage points under rtl/")
    for name, m in sorted(mods.items()):
        for k in KINDS:
            if m[k][1] == 0 and k != "user":
                problems.append("%s has no %s points" % (name, k))
    ups = user_points(points)
    # Every module whose source uses an opcode or error-cause macro must carry one point per spec entry.
    for (src, module) in sorted({(p[0], p[1]) for p in points}):
        text = open(os.path.join(ROOT, src)).read()
        for macro, names in (("LOOM_COVER_OPCODES", ops), ("LOOM_COVER_ERR_CAUSES", causes)):
            for prefix in re.findall(r"`%s\((\w+)," % macro, text):
                for n in names:
                    if (module, "%s_%s" % (prefix, n)) not in ups:
                        problems.append("%s: cover point %s_%s missing" % (module, prefix, n))
        for prefix, n in re.findall(r"`LOOM_COVER_STATES\((\w+),\s*\w+,\s*(\d+)\)", text):
            for i in range(int(n)):
                if (module, "%s_s%d" % (prefix, i)) not in ups:
                    problems.append("%s: cover point %s_s%d missing" % (module, prefix, i))
    if not any(c > 0 for c in points.values()):
        problems.append("no point was hit")
    for p in problems:
        print("smoke: " + p)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dat", nargs="+", help="Verilator coverage files")
    ap.add_argument("--goals", default=os.path.join(ROOT, "docs", "coverage-goals.yaml"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is not met")
    ap.add_argument("--smoke", action="store_true", help="check the coverage build itself (CI)")
    ap.add_argument("--table", help="also write the table (Markdown) to this file")
    a = ap.parse_args()
    goals = load_goals(a.goals)
    points = {}
    for d in a.dat:
        read_dat(d, points)
    mods = summarize(points)
    rows, tot = table(mods)
    print("\n".join(rows))
    if a.table:
        with open(a.table, "w") as f:
            f.write("\n".join(rows) + "\n")
    failed = []
    if a.smoke:
        failed += smoke(points, mods)
    if a.check:
        failed += check(points, goals, tot, set(mods))
    if failed:
        print("coverage: FAIL: " + "; ".join(failed[:5]) + (" ..." if len(failed) > 5 else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
