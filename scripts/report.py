#!/usr/bin/env python3
"""HTML report of a `loom serve` result or a `loom experiment` sweep, with
matplotlib charts: latency CDFs, queue-wait histograms, per-core utilization,
batch sizes (serve); throughput-p99 curves and SLO attainment (sweep).

Usage: report.py RESULT.json OUT_DIR   (run by `loom report`)
"""
import html
import json
import os
import shutil
import sys
import tempfile


# The folder the report is drawn into before it replaces OUT_DIR's files, so
# an error or an interrupt leaves neither an empty nor a half-drawn report.
STAGING = None


def die(msg, code=1):
    if STAGING:
        shutil.rmtree(STAGING, ignore_errors=True)
    print("loom: error: " + msg, file=sys.stderr)
    sys.exit(code)


def draw_timeline(ax, spans, title):
    """Batches per core as horizontal bars (ms of simulated time), coloured by stream."""
    colors = ["C%d" % i for i in range(10)]
    cores = sorted({b["core"] for b in spans})
    for b in spans:
        ax.broken_barh([(b["start_us"] / 1000.0, (b["end_us"] - b["start_us"]) / 1000.0)], (b["core"] - 0.4, 0.8),
                       facecolors=colors[b["stream"] % len(colors)], edgecolor="black", linewidth=0.3)
    ax.set_yticks(cores); ax.set_yticklabels(["core %d" % c for c in cores])
    ax.set_xlabel("simulated time (ms)"); ax.set_title(title); ax.grid(alpha=0.3, axis="x")


def tune_section(res, rows, save, plt):
    """The closed-loop mapping report of `loom tune` (docs/tuning.md)."""
    t = res["target"]
    rows.append(("initial mapping", "; ".join("%s: %s" % (k, v["choice"]) for k, v in res["initial_mapping"].items())))
    rows.append(("gap (after swap, mean)", "initial %.1f us, best per shape %.1f us, recovered %.1f%% after the last round (target 80%%: %s)" % (
        t["baseline_us"], t["best_per_shape_us"], 100 * t["recovered_after_last_round"], "met" if t["met"] else "missed")))
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, lat in [("initial mapping", res["baseline"]["after_swap"]), ("best per shape", res["best_per_shape"]["after_swap"])] + \
            [("round %d" % r["round"], r["after_swap"]) for r in res["rounds"]]:
        pts = lat["cdf_us"]
        if pts:
            ax.plot([p / 1000.0 for p in pts], [i / 100.0 for i in range(len(pts))], label=name)
    ax.set_xlabel("latency (ms)"); ax.set_ylabel("fraction of requests"); ax.set_title("Latency CDF of requests after the swap point")
    ax.legend(); ax.grid(alpha=0.3)
    save(fig, "tune_latency_cdf.png", "Latency CDFs before/after")
    fig, ax = plt.subplots(figsize=(7, 4))
    last = res["rounds"][-1]["prediction_error"]
    labels = ["%s/%d" % (e["kind"], e["rows"]) for e in last]
    x = range(len(last))
    ax.bar([i - 0.2 for i in x], [100 * e["error_before"] for e in last], width=0.4, label="cost model")
    ax.bar([i + 0.2 for i in x], [100 * e["error_after"] for e in last], width=0.4, label="refitted")
    ax.set_xticks(list(x)); ax.set_xticklabels(labels, rotation=60, fontsize=7)
    ax.set_ylabel("mean |error| (%)"); ax.set_title("Per-layer prediction error by (kind, rows), last round")
    ax.legend(); ax.grid(alpha=0.3)
    save(fig, "tune_prediction_error.png", "Prediction error before/after the refit")
    if "timeline" in res["baseline"] and res["rounds"] and "timeline" in res["rounds"][-1]:
        fig, axes = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
        draw_timeline(axes[0], res["baseline"]["timeline"], "Per-core timeline after the swap point: initial mapping")
        draw_timeline(axes[1], res["rounds"][-1]["timeline"],
                      "Per-core timeline after the swap point: round %d mapping" % res["rounds"][-1]["round"])
        save(fig, "tune_timelines.png", "Per-core timelines before/after (batches; colour: stream)")
    for r in res["rounds"]:
        sw = r["swap"]
        rows.append(("round %d" % r["round"], "plan error %.2f%% -> %.2f%%; swap at %.1f ms: %d submitted, %d completed, %d dropped, %d lost, %d reordered; mean %.1f us, p99 %.1f us; gap recovered %.1f%%" % (
            100 * r["plan_error_before"], 100 * r["plan_error_after"], sw["at_ms"], sw["submitted"], sw["completed"], sw["dropped"],
            sw["lost"], sw["reordered_within_stream"], r["after_swap"]["mean_us"], r["after_swap"]["p99_us"], 100 * r["gap_recovered_mean"])))
        ch = r["decisions_changed"]
        if ch:
            table = "<table border=1 cellpadding=3><tr><th>seq</th><th>batch</th><th>from</th><th>to</th><th>why</th></tr>"
            for d in ch:
                table += "<tr>" + "".join("<td>%s</td>" % html.escape(str(d[c])) for c in ["seq", "batch", "from", "to", "why"]) + "</tr>"
            rows.append(("round %d decisions" % r["round"], table + "</table>"))
    return "loom tune: %s on %s/%s, %d rounds" % (res["workload"], res["backend"], res["config"], len(res["rounds"]))


def main():
    if len(sys.argv) != 3:
        die("usage: report.py RESULT.json OUT_DIR")
    src, out = sys.argv[1], sys.argv[2]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not installed; loom report needs it (pip install matplotlib)")
    try:
        with open(src) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: cannot read the result: %s" % (src, str(e).splitlines()[0]))
    global STAGING
    parent = os.path.dirname(os.path.abspath(out))
    if os.path.exists(out) and not os.path.isdir(out):
        die("%s: exists and is not a directory" % out)
    try:
        os.makedirs(parent, exist_ok=True)
        STAGING = tempfile.mkdtemp(prefix=".loom-report.", dir=parent)
    except OSError as e:
        die("%s: cannot create the output directory: %s" % (out, e.strerror))
    final, out = out, STAGING

    figs = []

    def save(fig, name, title):
        path = os.path.join(out, name)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        figs.append((name, title))

    rows = []
    try:
        if res.get("kind") == "serve":
            head = "loom serve: %s on %s/%s, batching %s, scheduling %s" % (
                res["workload"], res["backend"], res["config"], res["batching"], res["scheduling"]["used"])
            if res["scheduling"].get("reason"):
                rows.append(("auto scheduling", res["scheduling"]["reason"]))
            if res.get("trace"):
                # The batches per core (loom serve --trace), copied beside the page.
                src_trace = res["trace"] if os.path.isabs(res["trace"]) else os.path.join(os.path.dirname(os.path.abspath(src)), res["trace"])
                if os.path.isfile(src_trace):
                    shutil.copyfile(src_trace, os.path.join(out, "trace.json"))
                    rows.append(("per-core timeline", "trace.json (Chrome trace JSON: open it in https://ui.perfetto.dev or chrome://tracing)"))
                    try:
                        with open(src_trace) as f:
                            evs = json.load(f)["traceEvents"]
                        names = [s["name"] for s in res["streams"]]
                        spans = [{"core": e["pid"], "stream": names.index(e["name"]) if e["name"] in names else 0,
                                  "start_us": e["ts"], "end_us": e["ts"] + e["dur"]} for e in evs if e.get("ph") == "X"]
                    except (OSError, ValueError, KeyError) as e:
                        die("%s: cannot read the trace: %s" % (src_trace, e))
                    if spans:
                        # The first 5 ms with batches: the whole run is in trace.json.
                        t0 = min(b["start_us"] for b in spans)
                        spans = [b for b in spans if b["start_us"] < t0 + 5000.0]
                        fig, ax = plt.subplots(figsize=(9, 3))
                        draw_timeline(ax, spans, "Per-core timeline, first 5 ms (colour: stream)")
                        save(fig, "timeline.png", "Per-core timeline")
                else:
                    rows.append(("per-core timeline", "%s: not found" % res["trace"]))
            rows += [("requests", "%d submitted, %d completed, %d dropped" % (res["submitted"], res["completed"], res["dropped"])),
                     ("throughput", "%.1f req/s" % res["throughput_rps"]),
                     ("fairness", "Jain %.3f, ANTT %.3f, STP %.3f" % (res["fairness"]["jain"], res["fairness"]["antt"], res["fairness"]["stp"])),
                     ("core imbalance", "%.3f" % res["core_imbalance"])]
            for s in res["streams"]:
                l = s["latency"]
                fmt = lambda v: "-" if v is None else "%.3f ms" % (v / 1000.0)
                rows.append(("stream " + s["name"], "p50 %s, p95 %s, p99 %s, p99.9 %s, SLO %.2f ms met %.1f%%" % (
                    fmt(l["p50_us"]), fmt(l["p95_us"]), fmt(l["p99_us"]), fmt(l["p999_us"]), s["slo_ms"], 100 * s["slo_attainment"])))
            fig, ax = plt.subplots(figsize=(7, 4))
            for s in res["streams"]:
                pts = s["latency_cdf_us"]
                if pts:
                    ax.plot([p / 1000.0 for p in pts], [i / 100.0 for i in range(len(pts))], label=s["name"])
                    ax.axvline(s["slo_ms"], linestyle=":", color="grey")
            ax.set_xlabel("latency (ms)"); ax.set_ylabel("fraction of requests"); ax.set_title("Latency CDF (dotted: SLOs)")
            ax.legend(); ax.grid(alpha=0.3)
            save(fig, "latency_cdf.png", "Latency CDFs")
            fig, ax = plt.subplots(figsize=(7, 4))
            for s in res["streams"]:
                h = s["queue_wait"]["histogram"]
                labels = ["%g" % b["lo_us"] for b in h]
                ax.plot(range(len(h)), [b["count"] for b in h], marker="o", label=s["name"])
            ax.set_xticks(range(len(labels))); ax.set_xticklabels(labels, rotation=45)
            ax.set_xlabel("queue wait bucket lower edge (us)"); ax.set_ylabel("requests"); ax.set_title("Queue-wait histogram")
            ax.legend(); ax.grid(alpha=0.3)
            save(fig, "queue_wait.png", "Queue-wait histograms")
            fig, ax = plt.subplots(figsize=(7, 3.5))
            cores = res["cores"]
            ax.bar([str(c["core"]) for c in cores], [100 * c["utilization"] for c in cores],
                   color=["C%d" % c["port"] for c in cores])
            ax.set_xlabel("core (colour: memory port)"); ax.set_ylabel("utilization (%)"); ax.set_ylim(0, 100)
            ax.set_title("Per-core utilization")
            save(fig, "core_utilization.png", "Per-core utilization")
            fig, ax = plt.subplots(figsize=(7, 3.5))
            bs = sorted(res["batch_sizes"].items(), key=lambda kv: int(kv[0]))
            ax.bar([k for k, _ in bs], [v for _, v in bs])
            ax.set_xlabel("batch size"); ax.set_ylabel("batches"); ax.set_title("Batch-size histogram")
            save(fig, "batch_sizes.png", "Batch sizes")
        elif res.get("kind") == "sweep":
            head = "loom experiment: %s (%d runs)" % (res["sweep"], len(res["runs"]))
            groups = {}
            settings = res.get("settings", ["config", "batching", "scheduling"])
            # Curves are labelled by the settings that vary (the others are in the title).
            varying = [k for k in settings if len({str(r[k]) for r in res["runs"]}) > 1] or settings[:1]
            fixed = ", ".join("%s %s" % (k, res["runs"][0][k]) for k in settings if k not in varying)
            head_note = "\n" + fixed if fixed else ""

            def numkey(t):
                return tuple((0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v)) for v in t)

            for r in res["runs"]:
                groups.setdefault(tuple(r[k] for k in varying), []).append(r)
            ordered = sorted(groups.items(), key=lambda kv: numkey(kv[0]))
            colors = plt.get_cmap("tab20").colors if len(ordered) > 10 else plt.get_cmap("tab10").colors

            def label(key):
                return " ".join("%s=%s" % (k, v) for k, v in zip(varying, key))
            fig, ax = plt.subplots(figsize=(8, 5))
            for i, (key, runs) in enumerate(ordered):
                by_load = {}
                for r in runs:
                    by_load.setdefault(r["load_scale"], []).append(r)
                loads = sorted(by_load)
                tput = [sum(r["throughput_rps"] for r in by_load[l]) / len(by_load[l]) for l in loads]
                p99 = [sum((r["p99_us"] or 0) for r in by_load[l]) / len(by_load[l]) / 1000.0 for l in loads]
                ax.plot(tput, p99, marker="os^Dv"[i // len(colors) % 5], color=colors[i % len(colors)], label=label(key))
            ax.set_xlabel("throughput (req/s)"); ax.set_ylabel("p99 latency (ms)")
            ax.set_title("Throughput vs p99 (mean over seeds)" + head_note, fontsize=9)
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5)); ax.grid(alpha=0.3)
            save(fig, "throughput_p99.png", "Throughput-p99 curves")
            fig, ax = plt.subplots(figsize=(8, 4.5))
            for i, (key, runs) in enumerate(ordered):
                by_load = {}
                for r in runs:
                    by_load.setdefault(r["load_scale"], []).append(r)
                loads = sorted(by_load)
                ax.plot(loads, [100 * sum(r["slo_attainment"] for r in by_load[l]) / len(by_load[l]) for l in loads],
                        marker="os^Dv"[i // len(colors) % 5], color=colors[i % len(colors)], label=label(key))
            ax.set_xlabel("load scale"); ax.set_ylabel("SLO attainment (%)")
            ax.set_title("SLO attainment vs load" + head_note, fontsize=9)
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5)); ax.grid(alpha=0.3)
            save(fig, "slo_attainment.png", "SLO attainment")
            cols = list(settings) + ["scheduling_used", "load_scale", "seed", "throughput_rps", "p99_us", "slo_attainment", "stp", "antt"]
            table = "<table border=1 cellpadding=3><tr>" + "".join("<th>%s</th>" % c for c in cols) + "</tr>"
            for r in res["runs"]:
                table += "<tr>" + "".join("<td>%s</td>" % html.escape(("%.4g" % r[c]) if isinstance(r[c], float) else str(r[c])) for c in cols) + "</tr>"
            table += "</table>"
            rows.append(("runs", table))
        elif res.get("kind") == "tune":
            head = tune_section(res, rows, save, plt)
        else:
            die("%s: field 'kind' must be 'serve', 'sweep' or 'tune'" % src)
    except (KeyError, TypeError, ValueError) as e:
        die("%s: not a complete loom result (%s)" % (src, e))

    body = ["<html><head><meta charset='utf-8'><title>loom report</title></head><body>",
            "<h1>%s</h1>" % html.escape(head), "<table>"]
    for k, v in rows:
        body.append("<tr><th align=left valign=top>%s</th><td>%s</td></tr>" % (html.escape(k), v if v.startswith("<table") else html.escape(v)))
    body.append("</table>")
    for name, title in figs:
        body.append("<h2>%s</h2><img src='%s'>" % (html.escape(title), name))
    body.append("</body></html>")
    try:
        with open(os.path.join(out, "index.html"), "w") as f:
            f.write("\n".join(body))
        if not os.path.exists(final):
            os.rename(out, final)
        else:
            for name in os.listdir(out):
                os.replace(os.path.join(out, name), os.path.join(final, name))
            os.rmdir(out)
    except OSError as e:
        die("%s: cannot write the report: %s" % (final, e.strerror))
    STAGING = None
    print("loom report: %s" % os.path.join(final, "index.html"))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        die("interrupted; no report written", 130)
