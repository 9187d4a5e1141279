#!/usr/bin/env python3
"""Regenerates the figure tables of docs/serving.md and docs/tuning.md from the
commands that measure them, or checks that the docs still hold what those
commands give.

Every generated table sits in its doc between two markers,

    <!-- table: NAME -->
    ...the command(s), written by this script from the registry below...
    ...the table...
    <!-- /table -->

and NAME has an entry in TABLES: the doc, the commands (run from the
repository root with the given loom binary, one at a time), and a renderer
from their results to the table's rows. Only the region between the markers
is generated; the prose beside it (dates, commits, interpretation) is not.

  doc_tables.py LOOM --list                  names, docs, commands
  doc_tables.py LOOM --write [--only NAME..] run the commands, rewrite the regions
  doc_tables.py LOOM --check [--only NAME..] run the commands, exit 1 naming each
                                             stale table and its first differing cell
  doc_tables.py --markers                    markers and registry agree (runs nothing)

Comparison: deterministic figures (simulated cycles and latencies with a seed,
counts) must be equal as written. A column that holds wall-clock figures is
declared in its entry's `tolerance` with a relative tolerance: its numbers may
differ by that fraction (every other character of the cell must still match).
The declared tolerances are listed at the end of this help and by --list.

Outputs go to WORK/out/NAME (removed before each run; default WORK is
build/doc-tables), service times and zoo models to WORK/cache (kept: they are
keyed by the compiler version and every plan, so a rerun with a changed
compiler measures again). A doc is rewritten through a temporary file and a
rename, and only when every table asked for was generated; bad input (an
unknown name, a marker without its end, a failing command) is one line and
exit 1.
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^<!-- table: ([a-z0-9-]+) -->$")
END = "<!-- /table -->"
# How the commands are written in the docs: the work folder's default path, and
# `loom` for the binary (build/ci/bin/loom where a script takes it).
SHOWN_WORK = "build/doc-tables"


class Error(Exception):
    pass


class Table:
    """One generated table: `commands` (argument strings with {loom}, {out},
    {cache}), `render(out)` -> (header, rows) with rows as lists of cells,
    `tolerance` {column header: relative tolerance} for wall-clock columns,
    `skip` a reason the check cannot run it here (the region is then kept as
    written and reported as not checked)."""

    def __init__(self, name, doc, commands, render, tolerance=None, skip=None):
        self.name, self.doc, self.commands, self.render = name, doc, commands, render
        self.tolerance, self.skip = tolerance or {}, skip

    def argv(self, cmd, loom, work):
        out, cache = work / self.name, work / "cache"
        words = shlex.split(cmd)
        return [w.format(loom=loom, out=out, cache=cache) for w in words]

    def shown(self):
        lines = []
        for cmd in self.commands:
            words = shlex.split(cmd)
            shown = []
            for i, w in enumerate(words):
                loom = "loom" if i == 0 else "build/ci/bin/loom"
                shown.append(w.format(loom=loom, out=SHOWN_WORK + "/" + self.name, cache=SHOWN_WORK + "/cache"))
            lines.append(" ".join(shlex.quote(w) for w in shown))
        return lines


# ---------------------------------------------------------------- formatting


def fmt(x, digits):
    return "%.*f" % (digits, x)


def us(x):
    return "%.1f" % x


def ms_of_us(x, digits=1):
    return "%.*f" % (digits, x / 1000.0)


def pct(x, digits=0):
    return "%.*f %%" % (digits, 100.0 * x)


def load(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------- docs/serving.md


def render_batch_size(out):
    """The zoo batch sweep: per-request service time per batch size (each
    workload's `service_times.table`, over its points), and p50, p99 and SLO
    attainment per max_batch, means over the seeds."""
    sweep = out / "sweep"
    res = load(sweep / "results.json")
    names = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert": "BERT (seq 128)"}
    points = {}
    for p in res["runs"]:
        points.setdefault(workload_model(p["workload"]), []).append(p)
    rows = []
    for model in [m for m in names if m in points]:
        pts = points[model]
        per, slo = {}, None
        for p in pts:
            run = load(sweep / p["result"])
            slo = run["streams"][0]["slo_ms"]
            for t in run["service_times"]["table"]:
                per[t["batch"]] = t["us"] / t["batch"] / 1000.0
        batches = sorted({p["max_batch"] for p in pts})
        cols = {"p50": [], "p99": [], "slo": []}
        for b in batches:
            at = [p for p in pts if p["max_batch"] == b]
            cols["p50"].append("%.0f" % (sum(p["p50_us"] for p in at) / len(at) / 1000))
            cols["p99"].append("%.0f" % (sum(p["p99_us"] for p in at) / len(at) / 1000))
            cols["slo"].append("%.1f" % (100 * sum(p["slo_attainment"] for p in at) / len(at)))
        rows.append([
            names[model], " / ".join("%.2f" % per[b] for b in batches),
            "%.3f×" % (per[batches[0]] / per[batches[-1]]), " / ".join(cols["p50"]), " / ".join(cols["p99"]),
            "%s %% (%.0f ms)" % (" / ".join(cols["slo"]), slo)
        ])
    b = " / ".join(str(x) for x in batches)
    header = [
        "model", "per request on one core at batch %s (ms)" % b,
        "throughput per request, %d vs %d" % (batches[-1], batches[0]),
        "p50 at `max_batch` %s (ms)" % b, "p99 (ms)", "SLO attainment (SLO)"
    ]
    return header, rows


def workload_model(workload):
    return re.sub(r"^serve_batch_(.*)_workload\.yaml$", r"\1", os.path.basename(workload))


TABLES = [
    Table("serve-batch-size", "docs/serving.md",
          ["{loom} experiment examples/serve_zoo_batch_sweep.yaml -j 1 -o {out}/sweep"], render_batch_size),
]

# ----------------------------------------------------------------- machinery


def md_rows(header, rows):
    aligned = [header] + rows
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in aligned[1:]]
    return lines


def region_text(t, header, rows):
    lines = ["```sh"] + t.shown() + ["```", ""]
    return lines + md_rows(header, rows)


def regions(doc_path):
    """{name: (begin line index, end line index)} of a doc's markers; a marker
    without its end, an end without a marker, or a name twice is an Error."""
    lines = doc_path.read_text().splitlines()
    found, open_ = {}, None
    for i, line in enumerate(lines):
        m = BEGIN.match(line.strip())
        if m:
            if open_ is not None:
                raise Error("%s:%d: table '%s' opens before '%s' ends (%s)" %
                            (rel(doc_path), i + 1, m.group(1), open_[0], END))
            if m.group(1) in found:
                raise Error("%s:%d: table '%s' is marked twice" % (rel(doc_path), i + 1, m.group(1)))
            open_ = (m.group(1), i)
        elif line.strip() == END:
            if open_ is None:
                raise Error("%s:%d: %s without a table marker" % (rel(doc_path), i + 1, END))
            found[open_[0]] = (open_[1], i)
            open_ = None
        elif line.strip().startswith("<!-- table"):
            raise Error("%s:%d: malformed marker %r (want <!-- table: NAME -->)" % (rel(doc_path), i + 1, line.strip()))
    if open_ is not None:
        raise Error("%s:%d: table '%s' has no end marker (%s)" % (rel(doc_path), open_[1] + 1, open_[0], END))
    return lines, found


def rel(p):
    try:
        return str(pathlib.Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def docs():
    return sorted({t.doc for t in TABLES})


def check_markers(commands=True):
    """Problems between the markers of every doc and the registry, as lines
    (runs nothing); with `commands`, also a command written that is not the
    registry's."""
    bad = []
    by_name = {t.name: t for t in TABLES}
    seen = {}
    for path in sorted((ROOT / "docs").glob("*.md")):
        doc = rel(path)
        lines, found = regions(path)
        for name, (b, e) in found.items():
            seen[name] = doc
            t = by_name.get(name)
            if t is None:
                bad.append("%s:%d: table '%s' has no generator in scripts/doc_tables.py" % (doc, b + 1, name))
                continue
            if t.doc != doc:
                bad.append("%s:%d: table '%s' is registered for %s" % (doc, b + 1, name, t.doc))
                continue
            body = lines[b + 1:e]
            want = ["```sh"] + t.shown() + ["```"]
            if commands and body[:len(want)] != want:
                bad.append("%s:%d: table '%s': the command written is not the registry's (run --write --only %s)" %
                           (doc, b + 1, name, name))
    for t in TABLES:
        if t.name not in seen:
            bad.append("%s: no <!-- table: %s --> marker for the registered table" % (t.doc, t.name))
    return bad


def run_table(t, loom, work, reuse=False):
    out = work / t.name
    if reuse:
        if not out.is_dir():
            raise Error("%s: --reuse: no results in %s (run it once without --reuse)" % (t.name, out))
        return render(t, out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (work / "cache").mkdir(parents=True, exist_ok=True)
    for cmd in t.commands:
        argv = t.argv(cmd, loom, work)
        print("doc_tables: %s: %s" % (t.name, " ".join(shlex.quote(a) for a in argv)), file=sys.stderr, flush=True)
        log = out / "stderr.log"
        with open(log, "a") as err, open(out / "stdout.log", "a") as so:
            prep_experiment(argv, work)
            r = subprocess.run(argv, cwd=ROOT, stdout=so, stderr=err)
        if r.returncode != 0:
            tail = [l for l in log.read_text().splitlines() if l.strip()][-1:] or ["(no output)"]
            raise Error("%s: `%s` failed (exit %d): %s" % (t.name, " ".join(argv), r.returncode, tail[0]))
    return render(t, out)


def render(t, out):
    try:
        return t.render(out)
    except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
        raise Error("%s: cannot read the results in %s: %s: %s" % (t.name, out, type(e).__name__, e))


def prep_experiment(argv, work):
    """`loom experiment` keeps its service times in OUT/cache; pointing it at
    the shared cache makes a rerun cheap (the cache is keyed by every plan)."""
    if len(argv) > 1 and argv[1] == "experiment" and "-o" in argv:
        out = pathlib.Path(argv[argv.index("-o") + 1])
        if not (out / "cache").exists():
            out.mkdir(parents=True, exist_ok=True)
            (out / "cache").symlink_to((work / "cache").resolve(), target_is_directory=True)


def parse_table(lines):
    rows = [l for l in lines if l.startswith("|") and not re.match(r"^\|(-+:?\|)+$", l.replace(":", "").strip())]
    return [[c.strip() for c in r.strip().strip("|").split(" | ")] for r in rows if not re.match(r"^\|[-:|]+\|$", r)]


NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def cell_differs(a, b, tol):
    if a == b:
        return False
    if tol is None:
        return True
    if NUM.sub("#", a) != NUM.sub("#", b):
        return True
    for x, y in zip(NUM.findall(a), NUM.findall(b)):
        x, y = float(x.replace(",", "")), float(y.replace(",", ""))
        if abs(x - y) > tol * max(abs(x), abs(y)):
            return True
    return False


def first_difference(t, have, want):
    """A sentence naming the first cell where the doc's region differs from the
    regenerated one, or None when they agree (within the declared tolerances)."""
    shown = ["```sh"] + t.shown() + ["```"]
    if have[:len(shown)] != shown:
        return "the command written differs from the registry's"
    h, w = parse_table(have), parse_table(want)
    if not h:
        return "no table in the region"
    if h[0] != w[0]:
        return "header %r, now %r" % (" | ".join(h[0]), " | ".join(w[0]))
    header = w[0]
    for i in range(max(len(h), len(w))):
        if i >= len(h):
            return "row %d (%s) missing from the doc" % (i, w[i][0])
        if i >= len(w):
            return "row %d (%s) no longer produced" % (i, h[i][0])
        if len(h[i]) != len(w[i]):
            return "row %d (%s): %d cells, now %d" % (i, h[i][0], len(h[i]), len(w[i]))
        for j, (a, b) in enumerate(zip(h[i], w[i])):
            if cell_differs(a, b, t.tolerance.get(header[j])):
                return "row %d (%s), column '%s': doc '%s', now '%s'" % (i, h[i][0], header[j], a, b)
    return None


def write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    tol = ["  %s: '%s' within %g (relative)" % (t.name, c, x) for t in TABLES for c, x in t.tolerance.items()]
    epilog = __doc__.split("\n\n", 1)[1] + "\nWall-clock columns:\n" + ("\n".join(tol) or "  none")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("loom", nargs="?", help="the loom binary (build/ci/bin/loom)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate and rewrite the marked regions")
    mode.add_argument("--check", action="store_true", help="regenerate in memory; exit 1 if a table is stale")
    mode.add_argument("--list", action="store_true", help="list the tables, their docs and commands")
    mode.add_argument("--markers", action="store_true", help="check that markers and registry agree; run nothing")
    ap.add_argument("--only", nargs="+", default=[], metavar="NAME", help="these tables only")
    ap.add_argument("--reuse", action="store_true",
                    help="render from the results an earlier run left in WORK/NAME; run no command")
    ap.add_argument("--work", default=str(ROOT / SHOWN_WORK), help="outputs and cache (%(default)s)")
    a = ap.parse_args(argv)
    by_name = {t.name: t for t in TABLES}
    for n in a.only:
        if n not in by_name:
            raise Error("unknown table '%s' (known: %s)" % (n, ", ".join(by_name)))
    chosen = [by_name[n] for n in a.only] if a.only else TABLES
    if a.list:
        for t in chosen:
            print("%s  %s%s" % (t.name, t.doc, "  (not checked: %s)" % t.skip if t.skip else ""))
            for line in t.shown():
                print("    " + line)
            for c, x in t.tolerance.items():
                print("    wall-clock column '%s': within %g (relative)" % (c, x))
        return 0
    if a.markers:
        bad = check_markers()
        for b in bad:
            print(b)
        if bad:
            print("doc_tables: markers and registry disagree (%d problem(s))" % len(bad))
            return 1
        print("doc_tables: %d tables, each marked once in %s" % (len(TABLES), ", ".join(docs())))
        return 0
    if not a.loom:
        raise Error("--write and --check need the loom binary")
    loom = os.path.abspath(a.loom)
    if not os.access(loom, os.X_OK):
        raise Error("%s: not an executable" % a.loom)
    work = pathlib.Path(a.work).resolve()
    bad = check_markers(commands=False)
    if bad:
        raise Error(bad[0])
    texts = {doc: regions(ROOT / doc) for doc in docs()}
    stale, new = [], {}
    for t in chosen:
        lines, found = texts[t.doc]
        if t.name not in found:
            raise Error("%s: no <!-- table: %s --> marker" % (t.doc, t.name))
        if t.skip:
            print("doc_tables: %s: not checked: %s" % (t.name, t.skip))
            continue
        header, rows = run_table(t, loom, work, a.reuse)
        region = region_text(t, header, rows)
        b, e = found[t.name]
        diff = first_difference(t, lines[b + 1:e], region)
        if diff:
            stale.append("%s: table '%s' is stale: %s" % (t.doc, t.name, diff))
        else:
            print("doc_tables: %s: fresh" % t.name)
        new[t.name] = region
    if a.check:
        for s in stale:
            print(s)
        if stale:
            print("doc_tables: %d stale table(s); `python3 scripts/doc_tables.py LOOM --write --only %s` rewrites them" %
                  (len(stale), " ".join(s.split("'")[1] for s in stale)))
            return 1
        return 0
    for doc in docs():
        lines, found = texts[doc]
        out = list(lines)
        for name, (b, e) in sorted(found.items(), key=lambda kv: -kv[1][0]):
            if name in new:
                out[b + 1:e] = new[name]
        if out != lines:
            write_atomic(ROOT / doc, "\n".join(out) + "\n")
            print("doc_tables: wrote %s" % doc)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Error as e:
        print("doc_tables: error: %s" % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("doc_tables: interrupted", file=sys.stderr)
        sys.exit(130)
