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
import signal
import sys
import tempfile


# The folder the report is drawn into before it replaces OUT_DIR's files, so
# an error or an interrupt leaves neither an empty nor a half-drawn report.
STAGING = None
# --timeline-ms START:END of `loom report` (None: the first 5 ms with batches).
WINDOW = None


def die(msg, code=1):
    if STAGING:
        shutil.rmtree(STAGING, ignore_errors=True)
    print("loom: error: " + msg, file=sys.stderr)
    sys.exit(code)


# Past this many streams a serve report's charts draw the SHOWN streams with
# the highest p99 and all streams together; every stream stays in the table.
MAX_DRAWN = 10
SHOWN = 8
# Their colours: matplotlib's cycle without its grey (C7), the colour of the
# streams not drawn one by one.
PALETTE = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9"]


def draw_timeline(ax, spans, title, names=None, shown=None):
    """Batches per core as horizontal bars (ms of simulated time), coloured by
    stream, with a legend naming the streams. Batches that carry their layers
    (`loom tune`: [name, start_us, end_us] each) are drawn layer by layer,
    coloured by layer name and labelled where a layer is wide enough, with the
    batch outlined. Bars of one colour on a core are one collection, so
    thousands of batches draw as fast as a few. `shown` (stream indexes, many
    streams): only these get a colour and a legend entry, the other streams'
    batches are grey."""
    colors = ["C%d" % i for i in range(10)]
    cores = sorted({b["core"] for b in spans})
    layered = any(b.get("layers") for b in spans)
    from matplotlib.patches import Patch
    if layered:
        draw_layers(ax, spans)
    else:
        def label(s):
            return names[s] if names and s < len(names) else "stream %d" % s
        used = sorted({b["stream"] for b in spans})
        rank = {s: k for k, s in enumerate(shown)} if shown is not None else None
        # (core, colour) -> bars: one broken_barh call each.
        groups = {}
        for b in spans:
            s = b["stream"]
            color = colors[s % len(colors)] if rank is None else (PALETTE[rank[s] % len(PALETTE)] if s in rank else "0.75")
            groups.setdefault((b["core"], color), []).append((b["start_us"] / 1000.0, (b["end_us"] - b["start_us"]) / 1000.0))
        for (core, color), xr in groups.items():
            # The streams not drawn one by one: white outlines (thousands of black ones would paint the bars black).
            ax.broken_barh(xr, (core - 0.4, 0.8), facecolors=color, edgecolor="black" if color != "0.75" else "white",
                           linewidth=0.3)
        if rank is None:
            handles = [Patch(color=colors[s % len(colors)], label=label(s)) for s in used]
        else:
            present = set(used)
            handles = [Patch(color=PALETTE[rank[s] % len(PALETTE)], label=label(s)) for s in shown if s in present]
            if not handles:
                handles.append(Patch(color="white", label="none of the %d in this window" % len(shown)))
            if len(used) > len(present & set(shown)):
                handles.append(Patch(color="0.75", label="%s other streams" % number(len(used) - len(present & set(shown)))))
        ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_yticks(cores); ax.set_yticklabels(["core %d" % c for c in cores])
    ax.set_xlabel("simulated time (ms)"); ax.set_title(title); ax.grid(alpha=0.3, axis="x")


# A layered timeline colours the layers with the most time one by one (a
# legend entry each) and the others grey.
TOP_LAYERS = len(PALETTE)


def draw_layers(ax, spans):
    """Batches that carry their layers, drawn layer by layer: the TOP_LAYERS
    layer names with the most time coloured, the others grey, each batch
    outlined, a layer labelled where it is wide enough."""
    from matplotlib.patches import Patch
    bars, time = {}, {}
    for b in spans:
        for name, s0, s1 in b.get("layers", []):
            bars.setdefault(name, {}).setdefault(b["core"], []).append((s0 / 1000.0, (s1 - s0) / 1000.0))
            time[name] = time.get(name, 0.0) + (s1 - s0)
    top = sorted(time, key=lambda n: -time[n])[:TOP_LAYERS]
    colour = {n: PALETTE[i] for i, n in enumerate(top)}
    lo = min(b["start_us"] for b in spans) / 1000.0
    hi = max(b["end_us"] for b in spans) / 1000.0
    width = max(hi - lo, 1e-9)
    for name, by_core in bars.items():
        for core, xr in by_core.items():
            ax.broken_barh(xr, (core - 0.4, 0.8), facecolors=colour.get(name, "0.8"), linewidth=0)
    for b in spans:
        for name, s0, s1 in b.get("layers", []):
            if (s1 - s0) / 1000.0 > 0.06 * width:
                ax.text((s0 + s1) / 2000.0, b["core"], name, ha="center", va="center", fontsize=5, clip_on=True)
    for core in sorted({b["core"] for b in spans}):
        ax.broken_barh([(b["start_us"] / 1000.0, (b["end_us"] - b["start_us"]) / 1000.0) for b in spans if b["core"] == core],
                       (core - 0.4, 0.8), facecolors="none", edgecolor="black", linewidth=0.6)
    handles = [Patch(color=colour[n], label=n) for n in top]
    if len(bars) > len(top):
        handles.append(Patch(color="0.8", label="%d other layers" % (len(bars) - len(top))))
    ax.legend(handles=handles, fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5), title="layer (most time first)",
              title_fontsize=6)


def number(v):
    """Readable numbers for tables: 13,160 / 1.32 / 0.000123."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or float(v).is_integer():
        return "{:,}".format(int(v))
    if abs(v) >= 1000:
        return "{:,.0f}".format(v)
    if abs(v) >= 100:
        return "%.1f" % v
    return "%.3g" % v


def tail_plot(ax, series, title):
    """Latency tail: 1 - CDF on a log axis (down to 1e-3), with p99 and p99.9
    marked on every curve. `series`: (name, cdf_us of 101 quantiles, p99_us,
    p999_us, colour). Each curve has its own line style and width (the
    first widest), so curves that coincide can be told apart."""
    for k, (name, pts, p99, p999, color) in enumerate(series):
        if not pts:
            continue
        xs = [p / 1000.0 for p in pts[:100]]
        ys = [1 - i / 100.0 for i in range(len(xs))]
        if p999 is not None:
            xs.append(p999 / 1000.0); ys.append(0.001)
        ax.plot(xs, ys, label=name, color=color, linestyle=["-", "--", "-.", ":"][k % 4], linewidth=max(0.8, 3.0 - 0.5 * k))
        if p99 is not None:
            ax.plot([p99 / 1000.0], [0.01], marker="o", color=color)
        if p999 is not None:
            ax.plot([p999 / 1000.0], [0.001], marker="s", color=color)
    ax.set_yscale("log"); ax.set_ylim(0.0008, 1.05)
    for y, lab in ((0.01, "p99"), (0.001, "p99.9")):
        ax.axhline(y, linestyle="--", color="grey", linewidth=0.7)
        ax.annotate(lab, (1.0, y), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
                    fontsize=7, va="center")
    ax.set_xlabel("latency (ms)"); ax.set_ylabel("fraction of requests slower (log)"); ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.08, 0.5))  # outside: never over a curve


def worst_streams(streams, k):
    """Indexes of the k streams with the highest p99 (streams with no
    completed request last), worst first; ties in result order."""
    def key(i):
        p99 = streams[i]["latency"]["p99_us"]
        return (p99 is None, -(p99 or 0.0), i)
    return sorted(range(len(streams)), key=key)[:k]


def pooled_cdf(streams):
    """101 latency quantiles of all streams' requests together, from each
    stream's 101 quantiles weighted by its completed requests (an estimate:
    the exact p99 and p99.9 over all requests are in the result's `latency`)."""
    import numpy as np
    vals, wts = [], []
    for s in streams:
        q = s["latency_cdf_us"]
        if q and s["completed"]:
            vals.append(np.asarray(q, dtype=float))
            wts.append(np.full(len(q), s["completed"] / len(q)))
    if not vals:
        return []
    v, w = np.concatenate(vals), np.concatenate(wts)
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(w[order])
    at = np.searchsorted(cum, np.linspace(0.0, 1.0, 101) * cum[-1], side="left")
    return [float(x) for x in v[np.minimum(at, len(v) - 1)]]


def stream_table(streams, order):
    """Every stream's latency percentiles and SLO attainment, one table."""
    def ms(v):
        return "-" if v is None else "%.3f" % (v / 1000.0)
    out = ["<table border=1 cellpadding=3><tr><th>stream</th><th>completed</th><th>p50 (ms)</th><th>p95 (ms)</th>"
           "<th>p99 (ms)</th><th>p99.9 (ms)</th><th>SLO (ms)</th><th>SLO met</th></tr>"]
    for i in order:
        s = streams[i]
        l = s["latency"]
        out.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.2f</td><td>%.1f%%</td></tr>" % (
            html.escape(s["name"]), number(s["completed"]), ms(l["p50_us"]), ms(l["p95_us"]), ms(l["p99_us"]),
            ms(l["p999_us"]), s["slo_ms"], 100 * s["slo_attainment"]))
    out.append("</table>")
    return "".join(out)


def prediction_error_trend(rounds):
    """Per (kind, rows) bucket: [(0, error of the uncorrected cost model),
    (i, error after round i's refit), ...] in percent, over the rounds that
    measured the bucket (the uncorrected model's error does not depend on the
    round, so every bucket has its point at 0)."""
    trend = {}
    for i, r in enumerate(rounds, 1):
        for e in r.get("prediction_error", []):
            key = (e["kind"], e["rows"])
            if key not in trend:
                trend[key] = [(0, 100 * e["error_before"])]
            trend[key].append((i, 100 * e["error_after"]))
    return trend


def retuning_actions(res):
    """One row per mapping the loop deployed (the initial one, then each
    round's swap): what changed, the measured latency after the swap point,
    and the point to roll back to, the mapping with the lowest measured p99
    (the earliest of equals)."""
    steps = [("initial mapping", "deployed", 0, 0, res["baseline"]["after_swap"])]
    for r in res["rounds"]:
        steps.append(("round %d" % r["round"], "swap at %.1f ms" % r["swap"]["at_ms"], len(r["decisions_changed"]),
                      len(r.get("plans_recompiled", [])), r["after_swap"]))
    best = min(range(len(steps)), key=lambda i: (steps[i][4]["p99_us"], i))
    table = ("<table border=1 cellpadding=3><tr><th>mapping</th><th>action</th><th>entries changed</th>"
             "<th>plans recompiled</th><th>mean after swap</th><th>p99 after swap</th><th>p99 vs previous</th>"
             "<th>roll back to</th></tr>")
    prev = None
    for i, (name, action, changed, recompiled, lat) in enumerate(steps):
        delta = "%+.1f%%" % (100 * (lat["p99_us"] / prev - 1)) if prev else ""
        table += "<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in (
            name, action, changed, recompiled, ms(lat["mean_us"]), ms(lat["p99_us"]), delta,
            "<- here (lowest measured p99)" if i == best else "")) + "</tr>"
        prev = lat["p99_us"]
    return table + "</table>"


def ms(us):
    """A latency given in us, as the reports print it: ms."""
    return "none" if us is None else "%s ms" % number(us / 1000.0)


def tune_section(res, page, plt):
    """The closed-loop mapping report of `loom tune` (docs/tuning.md): the
    facts a reader needs after the memo, the charts, then the per-plan
    detail collapsed."""
    t = res["target"]
    page.fact("initial mapping", "; ".join("%s: %s" % (k, v["choice"]) for k, v in res["initial_mapping"].items()))
    page.fact("gap (after swap, mean)", "initial %s, best per shape %s, recovered %.1f%% after the last round (target 80%%: %s)" % (
        ms(t["baseline_us"]), ms(t["best_per_shape_us"]), 100 * t["recovered_after_last_round"], "met" if t["met"] else "missed"))
    page.fact("retuning actions", retuning_actions(res), raw=True)
    if res["rounds"] and "attribution" in res["rounds"][0]:
        page.fact("attribution (after the swap point)", gain_split_table(res["rounds"]), raw=True)
    for r in res["rounds"]:
        page.fact("round %d" % r["round"], round_line(r))
    tune_charts(res, page, plt)
    tune_details(res, page)
    return "loom tune: %s on %s/%s, %d rounds" % (res["workload"], res["backend"], res["config"], len(res["rounds"]))


def round_line(r):
    """One round in a line: the refit's verdict, the plan error, the swap and
    the latency after it."""
    sw = r["swap"]
    fit = r.get("refit")
    verdict = "" if not isinstance(fit, dict) else "refit %s (%s); " % (
        "accepted" if fit["accepted"] else "rejected", fit["reason"])
    return ("%splan error %.2f%% -> %.2f%%; swap at %.1f ms: %d submitted, %d completed, %d dropped, %d lost, "
            "%d reordered; mean %s, p99 %s; gap recovered %.1f%%" % (
                verdict, 100 * r["plan_error_before"], 100 * r["plan_error_after"], sw["at_ms"], sw["submitted"],
                sw["completed"], sw["dropped"], sw["lost"], sw["reordered_within_stream"], ms(r["after_swap"]["mean_us"]),
                ms(r["after_swap"]["p99_us"]), 100 * r["gap_recovered_mean"]))


def gain_split_table(rounds):
    """Each round's gain after the swap point, split into re-compiling with
    the offline model, the batch cap (results before it: none) and the refit."""
    table = ("<table border=1 cellpadding=3><tr><th>round</th><th>gain (mean)</th><th>(a) re-compiling, offline model</th>"
             "<th>(b) the batch cap</th><th>(c) the refit</th><th>gain (p99)</th><th>(a) p99</th><th>(b) p99</th>"
             "<th>(c) p99</th></tr>")
    for r in rounds:
        a = r["attribution"]
        table += "<tr>" + "".join("<td>%s</td>" % c for c in (
            r["round"], ms(a["gain_us"]), ms(a["offline_recompile_us"]), ms(a.get("batch_cap_us", 0)),
            ms(a["refit_us"]), ms(a["gain_p99_us"]), ms(a["offline_recompile_p99_us"]),
            ms(a.get("batch_cap_p99_us", 0)), ms(a["refit_p99_us"]))) + "</tr>"
    return table + "</table>"


# At most this many (kind, rows) buckets drawn one by one in the prediction
# error charts: the worst; the others are summarized (a mean line, a count).
TOP_BUCKETS = len(PALETTE)


def tune_charts(res, page, plt):
    """The tail before/after, where its latency went, the prediction error
    (last round, and its trend) and the per-core timelines."""
    fig, ax = plt.subplots(figsize=(10, 4))
    curves = [("initial mapping", res["baseline"]["after_swap"]), ("best per shape", res["best_per_shape"]["after_swap"])]
    if "offline_recompile" in res:
        curves.append(("re-compiled, offline model", res["offline_recompile"]["after_swap"]))
        if "with_batch_cap" in res["offline_recompile"]:
            curves.append(("re-compiled, offline model, batch cap", res["offline_recompile"]["with_batch_cap"]["after_swap"]))
    curves += [("round %d" % r["round"], r["after_swap"]) for r in res["rounds"]]
    # A curve equal to an earlier one says so in its label, and every curve
    # has its own line style and width (the first drawn widest), so curves
    # that coincide can still be told apart.
    series = []
    for i, (name, lat) in enumerate(curves):
        same = next((n for n, l in curves[:i] if l["cdf_us"] == lat["cdf_us"]), None)
        series.append((name + (" (= %s)" % same if same else ""), lat["cdf_us"], lat.get("p99_us"), lat.get("p999_us"),
                       "C%d" % (i % 10)))
    tail_plot(ax, series, "Latency tail of requests after the swap point")
    page.save(fig, "tune_latency_cdf.png", "Latency tails before/after")
    before, after = res["baseline"].get("after_swap_attribution"), res["rounds"][-1].get("after_swap_attribution")
    if isinstance(before, list) and isinstance(after, list) and before and len(before) == len(after):
        named = []
        for b, a in list(zip(before, after))[:SHOWN]:
            named += [(b["stream"] + " deployed", b["attribution"]), (a["stream"] + " tuned", a["attribution"])]
        attribution_plot(plt, page, named)
    error_bars(res["rounds"][-1]["prediction_error"], page, plt)
    trend = prediction_error_trend(res["rounds"])
    if trend:
        error_trend(trend, res["rounds"], page, plt)
    if "timeline" in res["baseline"] and res["rounds"] and "timeline" in res["rounds"][-1]:
        fig, axes = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
        draw_timeline(axes[0], res["baseline"]["timeline"], "Per-core timeline after the swap point: initial mapping")
        draw_timeline(axes[1], res["rounds"][-1]["timeline"],
                      "Per-core timeline after the swap point: round %d mapping" % res["rounds"][-1]["round"])
        page.save(fig, "tune_timelines.png", "Per-core timelines before/after (each batch outlined, its layers coloured "
                  "by name: the %d layers with the most time, the others grey)" % TOP_LAYERS)


def error_bars(last, page, plt):
    """The last round's per-layer error per (kind, rows) bucket, cost model
    against refitted: horizontal bars (labels never overlap), the worst
    TOP_BUCKETS buckets."""
    order = sorted(last, key=lambda e: -max(e["error_before"], e["error_after"]))
    shown = order[:TOP_BUCKETS]
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.32 * len(shown)))
    y = range(len(shown))
    ax.barh([i - 0.2 for i in y], [100 * e["error_before"] for e in shown], height=0.4, label="cost model")
    ax.barh([i + 0.2 for i in y], [100 * e["error_after"] for e in shown], height=0.4, label="refitted")
    ax.set_yticks(list(y)); ax.set_yticklabels(["%s / %d rows" % (e["kind"], e["rows"]) for e in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean |error| per layer (%)")
    more = "" if len(order) <= len(shown) else " (the %d worst of %d)" % (len(shown), len(order))
    ax.set_title("Per-layer prediction error by (kind, rows), last round" + more, fontsize=10)
    ax.legend(fontsize=8, loc="lower right"); ax.grid(alpha=0.3, axis="x")
    page.save(fig, "tune_prediction_error.png", "Prediction error before/after the refit" + more)


def error_trend(trend, rounds, page, plt):
    """Per (kind, rows) bucket, its error over the rounds: the TOP_BUCKETS
    worst in the last round drawn and named, the others as thin grey lines
    (a round measures only the buckets of its plans, so no mean over them is
    drawn: it would mix different buckets from round to round)."""
    worst = sorted(trend, key=lambda k: -trend[k][-1][1])[:TOP_BUCKETS]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for key, pts in trend.items():
        if key not in worst:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, color="0.8", linewidth=0.7)
    for k, key in enumerate(worst):
        xs, ys = zip(*trend[key])
        ax.plot(xs, ys, marker="o", markersize=3, color=PALETTE[k % len(PALETTE)],
                linestyle=["-", "--", ":"][k // len(PALETTE) % 3], label="%s / %d rows" % key)
    steps = range(len(rounds) + 1)
    ax.set_xticks(list(steps))
    ax.set_xticklabels(["cost model"] + ["round %d" % x["round"] for x in rounds], fontsize=8)
    ax.set_ylabel("mean |error| per layer (%)")
    others = len(trend) - len(worst)
    ax.set_title("Prediction error per (kind, rows) bucket, every round" +
                 (" (grey: the %d other buckets)" % others if others else ""), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    page.save(fig, "tune_prediction_error_trend.png", "Prediction error per bucket over the rounds (the %d worst in "
              "the last round named)" % len(worst))


def plan_groups(items):
    """Items of a result list grouped by their plan, (model, choice), in
    first-seen order."""
    groups = {}
    for d in items:
        groups.setdefault((d["model"], d["choice"]), []).append(d)
    return groups


def html_table(cols, rows):
    """A table with a header of `cols` and escaped cells."""
    out = "<table border=1 cellpadding=3><tr>" + "".join("<th>%s</th>" % html.escape(c) for c in cols) + "</tr>"
    for r in rows:
        out += "<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in r) + "</tr>"
    return out + "</table>"


def collapsed(summary, body):
    """A block shown by its one-line summary, opened on a click."""
    return "<details><summary>%s</summary>%s</details>" % (html.escape(summary), body)


def tune_details(res, page):
    """Per round and per plan, what the loop changed and measured, each plan
    collapsed under a line that counts it."""
    for r in res["rounds"]:
        ch = r["decisions_changed"]
        if ch:
            page.detail("round %d decisions" % r["round"], "%d mapping entries changed" % len(ch),
                        html_table(["seq", "batch", "from", "to", "why"],
                                   [[d[c] for c in ("seq", "batch", "from", "to", "why")] for d in ch]))
        cd = r.get("compiler_decisions_changed", [])
        if cd:
            blocks = []
            for (model, choice), ds in plan_groups(cd).items():
                passes = {}
                for d in ds:
                    passes[d["pass"]] = passes.get(d["pass"], 0) + 1
                blocks.append(collapsed("%s %s: %d changed (%s)" % (model, choice, len(ds), ", ".join(
                    "%s %d" % kv for kv in sorted(passes.items()))), html_table(
                        ["pass", "node", "before", "after", "why"],
                        [[d[c] for c in ("pass", "node", "before", "after", "why")] for d in ds])))
            page.detail("round %d compiler decisions" % r["round"], "%d decisions changed in %d plans" % (
                len(cd), len(blocks)), "".join(blocks))
        else:
            page.fact("round %d compiler decisions" % r["round"],
                      "the refitted cost parameters changed no fusion or tiling decision in the %d plans compared" %
                      r.get("compiler_plans_compared", 0))
    last = res["rounds"][-1]
    prof = last.get("profile", [])
    if prof:
        blocks = []
        for p in prof:
            errs = [(l["predicted"] - l["measured"]) / l["measured"] for l in p["layers"] if l["measured"]]
            worst = max(errs, key=abs) if errs else 0.0
            blocks.append(collapsed("%s %s: %d layers, worst error %+.2f%%" % (p["model"], p["choice"], len(p["layers"]),
                                                                              100 * worst), html_table(
                ["layer", "kind", "predicted (offline)", "measured", "error"],
                [[l["name"], l["kind"], number(l["predicted"]), number(l["measured"]),
                  "%+.2f%%" % (100 * (l["predicted"] - l["measured"]) / l["measured"] if l["measured"] else 0.0)]
                 for l in p["layers"]])))
        page.detail("compile profile and telemetry of the deployed plans (last round)", "%d plans" % len(prof),
                    "".join(blocks))
    ctr = last.get("counters", [])
    if ctr:
        page.detail("counters of the measured plans (last round)", "%d plans" % len(ctr), counters_table(ctr))
    buckets_table(res, page)
    placements_table(res, page)


def counters_table(ctr):
    """The fabric's counters of every measured plan beside the compiler's
    predictions."""
    rows = []
    for c in sorted(ctr, key=lambda c: (c["model"], c["rows"], c["choice"])):
        m, p, e = c["measured"], c["predicted"], c["error"]
        rows.append([c["model"], c["choice"], "%s / %s (%+.2f%%)" % (number(p["cycles"]), number(m["cycles"]), 100 * e["cycles"]),
                     "%s (%+.2f%%)" % (number(m["macs"]), 100 * e["macs"]),
                     "%s (%+.2f%%)" % (number(m["bytes_rd"]), 100 * e["bytes_rd"]),
                     "%s (%+.2f%%)" % (number(m["bytes_wr"]), 100 * e["bytes_wr"]),
                     "%.1f%%" % (100 * c["compute_share"]), "%.1f%%" % (100 * c["stall_mem_share"])])
    return html_table(["model", "plan", "cycles predicted / measured", "MACs (error)", "bytes read (error)",
                       "bytes written (error)", "compute / busy", "memory stall / busy"], rows)


def mappings(res):
    """Every mapping of the run, named: the initial one, the oracle, the
    offline re-compile and each round's."""
    return [("initial mapping", res["initial_mapping"]), ("best per shape (oracle)", res["best_per_shape"].get("mapping", {})),
            ("re-compiled, offline model", res.get("offline_recompile", {}).get("mapping", {}))] + \
        [("round %d" % r["round"], r.get("mapping", {})) for r in res["rounds"]]


def buckets_table(res, page):
    """Bucketed models: the buckets of every mapping (each with its requests
    per run by batch size), with padding, plans and compile time."""
    def bucket(b):
        per_run = b.get("requests_per_run")
        return "%d: %s" % (b["seq"], b["choice"]) + \
            ("; requests a run for batches of 1..%d: %s" % (len(per_run), " ".join(map(str, per_run))) if per_run else "")

    rows = []
    for name, mm in mappings(res):
        for model, m in mm.items():
            if "buckets" in m:
                rows.append([name, model, ", ".join(bucket(b) for b in m["buckets"]), m["plans"],
                             "%.1f%%" % (100 * m["padding"]), number(m["expected_cycles_per_request"]),
                             "%s ms" % number(m["compile_ms"])])
    if rows:
        page.detail("sequence-length buckets", "%d mappings" % len(rows), html_table(
            ["mapping", "model", "buckets", "plans", "padding", "predicted or measured cycles per request",
             "compile"], rows))


def placements_table(res, page):
    """Placement: every gang width each mapping weighed (cores per batch, the
    servers they make, the service of a batch and the queue model's latency)."""
    rows = []
    for name, mm in mappings(res):
        for model, m in mm.items():
            for x in m.get("placements", []):
                lat = x["modelled_latency_us"]
                rows.append([name, model, x["cores"], x["servers"], ms(x["service_us"]),
                             "%.2f" % x.get("requests_per_batch", 1),
                             "%.2f / %.2f" % (x.get("arrival_scv", 1), x.get("service_scv", 1)),
                             lat if isinstance(lat, str) else ms(lat), "<- chosen" if x["chosen"] else ""])
    if rows:
        page.detail("placement: cores per batch", "%d mappings weighed" % len({(r[0], r[1]) for r in rows}), html_table(
            ["mapping", "model", "cores per batch", "servers", "service per batch", "requests per batch",
             "variation (arrivals / service)", "modelled mean latency (G/G/c)", "chosen"], rows))


PART_COLOURS = {"queueing": "#c62828", "batching": "#f9a825", "imbalance": "#6a1b9a", "service": "#1565c0",
                "host": "#2e7d32", "stretch": "#ef6c00"}


def attribution_plot(plt, page, named):
    """Where the latency went: per stream, the body (p50) and the tail (p99)
    as stacked bars of the mean parts, in ms."""
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.7 * len(named)))
    labels, y = [], 0
    for name, a in named:
        for band in ("p99", "p50"):
            b = a[band]
            left = 0.0
            for part in a["parts"]:
                v = (b[part + "_us"] or 0) / 1000.0
                ax.barh(y, v, left=left, color=PART_COLOURS.get(part, "grey"),
                        label=part if not labels else None)
                left += v
            labels.append("%s %s (%d)" % (name, "tail p99" if band == "p99" else "body p50", b["requests"]))
            y += 1
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean latency (ms)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.3, axis="x")
    page.save(fig, "latency_attribution.png", "Where the latency went: the tail (requests at or above the p99) and the "
         "body (at or below the p50) of each stream, mean parts (docs/serving.md, Tail attribution)")


def memo_html(memo):
    """The review memo as the page's first block: the decision and its rule's
    checks, then question, slice, primary metric, tail (with intervals),
    fairness, mechanism, evidence and owner action."""
    e = html.escape
    colour = {"ship": "#2e7d32", "bounded rollout": "#f9a825", "roll back": "#c62828", "escalate": "#c62828"}
    d = memo["decision"]
    out = ["<div style='border:2px solid %s;padding:8px 14px;margin:8px 0;max-width:1100px'>" % colour.get(d, "#555"),
           "<h2 style='margin:4px 0'>Decision: <span style='color:%s'>%s</span></h2>" % (colour.get(d, "#555"), e(d)),
           "<p><b>Question.</b> %s</p>" % e(memo["question"])]
    checks = "".join("<li>%s %s: %s%s</li>" % (
        "&#10004;" if c["holds"] else "&#10008;", e(c["clause"]), e(c["detail"]),
        "" if c["holds"] or "if_not" not in c else " <i>(&rarr; %s)</i>" % e(c["if_not"])) for c in memo["checks"])
    out.append("<p><b>Rule.</b> %s</p><ul>%s</ul>" % (e(memo["rule"]), checks))
    pm = memo["primary_metric"]
    # Latencies in ms, as every chart and table of the page gives them.
    scale, unit = (1000.0, "ms") if pm["unit"] == "us" else (1.0, pm["unit"])
    figure = "%s%s" % ("" if pm["before"] is None else number(pm["before"] / scale) + " &rarr; ",
                       "none" if pm["after"] is None else number(pm["after"] / scale))
    out.append("<p><b>Primary metric.</b> %s: %s (%s). %s</p>" % (e(pm["name"]), figure, e(unit), e(pm["trend"])))
    sl = memo["slice"]
    out.append("<p><b>Slice.</b> %s on %s (%s, %s), seed %s, %s; loom %s. Models: %s.</p>" % (
        e(sl["workload"]), e(sl["config"]), e(sl["backend"]), e(sl["mode"]), e(str(sl["seed"])), e(sl["load"]),
        e(sl["loom_version"]), e("; ".join(sl["models"]))))
    rows = ""
    for t in memo["tail"]:
        cells = ""
        for k in ("p50", "p95", "p99", "p999"):
            p = t["tail"][k]
            if p["value_us"] is None:
                cells += "<td>none</td>"
                continue
            flag = "" if p["enough_samples"] else " <i>(too few beyond it)</i>"
            cells += "<td>%.3f ms [%.3f, %.3f]%s</td>" % (p["value_us"] / 1000, p["ci95_lo_us"] / 1000,
                                                       p["ci95_hi_us"] / 1000, flag)
        rows += "<tr><td>%s</td><td>%d</td>%s<td>%.2f ms</td><td>%.1f %%</td></tr>" % (
            e(t["stream"]), t["tail"]["requests"], cells, t["slo_ms"], 100 * t["slo_attainment"])
    out.append("<p><b>Tail</b> (95 %% intervals):</p><table border=1 cellpadding=3><tr><th>stream</th><th>requests</th>"
               "<th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>SLO</th><th>attainment</th></tr>%s</table>" % rows)
    out.append("<p><b>Fairness.</b> %s</p><p><b>Mechanism.</b> %s</p>" % (e(memo["fairness"]), e(memo["mechanism"])))
    out.append("<p><b>Evidence.</b></p><ul>%s</ul>" % "".join("<li>%s</li>" % e(x) for x in memo["evidence"]))
    out.append("<p><b>Owner action.</b> %s</p></div>" % e(memo["owner_action"]))
    return "\n".join(out)


class Page:
    """A report page: the memo, the facts (short rows), the charts, then the
    detail tables, collapsed under a line each."""

    def __init__(self, out, plt):
        self.out, self.plt = out, plt
        self.facts, self.figs, self.details = [], [], []

    def fact(self, key, value, raw=False):
        """A row of the facts table; `raw`: value is HTML already."""
        self.facts.append((key, value if raw else html.escape(value)))

    def save(self, fig, name, title):
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, name), dpi=90, bbox_inches="tight")
        self.plt.close(fig)
        self.figs.append((name, title))

    def detail(self, title, summary, body):
        """A detail table after the charts, shown by `title: summary`."""
        self.details.append((title, summary, body))

    def html(self, head, memo):
        body = ["<html><head><meta charset='utf-8'><title>loom report</title><style>%s</style></head><body>" % STYLE,
                "<h1>%s</h1>" % html.escape(head), memo, "<table class=facts>"]
        for k, v in self.facts:
            body.append("<tr><th align=left valign=top>%s</th><td>%s</td></tr>" % (html.escape(k), v))
        body.append("</table>")
        if self.figs:
            body.append("<h2>Charts</h2>")
        for name, title in self.figs:
            body.append("<h3>%s</h3><img src='%s'>" % (html.escape(title), name))
        if self.details:
            body.append("<h2>Details</h2>")
        for title, summary, table in self.details:
            body.append("<details><summary><b>%s</b>: %s</summary>%s</details>" % (
                html.escape(title), html.escape(summary), table))
        body.append("</body></html>")
        return "\n".join(body)


STYLE = ("body{font-family:sans-serif;max-width:1250px;margin:12px auto;padding:0 12px} "
         "table{border-collapse:collapse;margin:4px 0} td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px} "
         "table.facts>tbody>tr>th{border:none;vertical-align:top;white-space:nowrap;padding-right:12px} "
         "table.facts>tbody>tr>td{border:none} details{margin:4px 0 4px 12px} summary{cursor:pointer} "
         "h3{font-size:15px;margin:18px 0 4px} img{max-width:100%}")


class StreamView:
    """Which streams a serve report's charts draw: every stream, or past
    MAX_DRAWN the SHOWN with the highest p99 and all of them together."""

    def __init__(self, streams):
        self.streams = streams
        self.many = len(streams) > MAX_DRAWN
        self.shown = worst_streams(streams, SHOWN) if self.many else list(range(len(streams)))
        self.summary = "all %s streams" % number(len(streams))

    def color(self, k):
        """The colour of the k-th stream drawn."""
        return PALETTE[k % len(PALETTE)] if self.many else "C%d" % (k % 10)


def serve_section(res, page, src, plt):
    """The report of `loom serve` (simulated or live)."""
    head = "loom serve: %s on %s/%s, batching %s, scheduling %s" % (
        res["workload"], res["backend"], res["config"], res["batching"], res["scheduling"]["used"])
    if res["scheduling"].get("reason"):
        page.fact("auto scheduling", res["scheduling"]["reason"])
    view = StreamView(res["streams"])
    if view.many:
        page.fact("streams", "%s streams: the charts draw the %d with the highest p99 and %s together; every stream is "
                  "in the per-stream table after the charts" % (number(len(view.streams)), len(view.shown), view.summary))
    serve_facts(res, page, view)
    latency_charts(res, page, plt, view)
    serve_timeline(res, page, src, plt, view)
    resource_charts(res, page, plt, view)
    return head


def serve_facts(res, page, view):
    """Requests, throughput, fairness, each stream's percentiles and the live
    run's counts, faults and failures."""
    page.fact("mode", "live: every batch ran on the device" if res.get("mode") == "live" else "simulated")
    page.fact("requests", "%d submitted, %d completed, %d failed, %d dropped" % (
        res["submitted"], res["completed"], res.get("failed", 0), res["dropped"]))
    page.fact("throughput", "%s req/s" % number(res["throughput_rps"]))
    page.fact("fairness", "Jain %.3f, ANTT %.3f, STP %.3f" % (res["fairness"]["jain"], res["fairness"]["antt"], res["fairness"]["stp"]))
    page.fact("core imbalance", "%.3f" % res["core_imbalance"])
    streams = view.streams
    if view.many:
        page.detail("Per-stream latency, all %s streams (highest p99 first)" % number(len(streams)),
                    "every stream's percentiles and SLO attainment", stream_table(streams, worst_streams(streams, len(streams))))
    else:
        for s in streams:
            l = s["latency"]
            page.fact("stream " + s["name"], "p50 %s, p95 %s, p99 %s, p99.9 %s, SLO %.2f ms met %.1f%%" % (
                ms3(l["p50_us"]), ms3(l["p95_us"]), ms3(l["p99_us"]), ms3(l["p999_us"]), s["slo_ms"], 100 * s["slo_attainment"]))
    if "live" not in res:
        return
    lv = res["live"]
    page.fact("live runs", "%d device runs (%s), %d checked against the golden model, %d differed; "
              "%d device errors, %d host timeouts; %d requests retried (at most %d times each)" % (
                  lv["device_runs"], lv["completion"], lv["checked_runs"], lv["output_mismatches"],
                  lv["device_errors"], lv["host_timeouts"], lv["retried_requests"], lv["max_retries"]))
    for f in lv["faults_injected"]:
        when = "never applied" if f["applied_ms"] is None else "applied at %s ms" % number(f["applied_ms"])
        if f.get("lifted_ms") is not None:
            when += ", lifted at %s ms" % number(f["lifted_ms"])
        page.fact("fault injected", "%s (core %d): %s" % (f["fault"], f["core"], when))
    for f in lv["failures"]:
        page.fact("failed batches", "%d x %s (%d requests failed)" % (f["batches"], f["reason"], f["requests_failed"]))


def ms3(us):
    """A percentile given in us, in ms with three decimals ("-": none)."""
    return "-" if us is None else "%.3f ms" % (us / 1000.0)


def serve_timeline(res, page, src, plt, view):
    """The batches per core of `loom serve --trace`, copied beside the page
    and drawn over a window (--timeline-ms; default the first 5 ms with
    batches)."""
    if not res.get("trace"):
        return
    src_trace = res["trace"] if os.path.isabs(res["trace"]) else os.path.join(os.path.dirname(os.path.abspath(src)), res["trace"])
    if not os.path.isfile(src_trace):
        page.fact("per-core timeline", "%s: not found" % res["trace"])
        return
    shutil.copyfile(src_trace, os.path.join(page.out, "trace.json"))
    page.fact("per-core timeline", "trace.json (Chrome trace JSON: open it in https://ui.perfetto.dev or chrome://tracing)")
    streams, many, shown = view.streams, view.many, view.shown
    try:
        with open(src_trace) as f:
            evs = json.load(f)["traceEvents"]
        index = {}
        for i, s in enumerate(streams):
            index.setdefault(s["name"], i)
        spans = [{"core": e["pid"], "stream": index.get(e["name"], 0),
                  "start_us": e["ts"], "end_us": e["ts"] + e["dur"]} for e in evs if e.get("ph") == "X"]
    except (OSError, ValueError, KeyError) as e:
        die("%s: cannot read the trace: %s" % (src_trace, e))
    if not spans:
        return
    t0 = min(b["start_us"] for b in spans)
    lo, hi = (WINDOW[0] * 1000.0, WINDOW[1] * 1000.0) if WINDOW else (t0, t0 + 5000.0)
    spans = [b for b in spans if b["end_us"] > lo and b["start_us"] < hi]
    fig, ax = plt.subplots(figsize=(10, 3))
    draw_timeline(ax, spans, "Per-core timeline, %s to %s ms (colour: stream%s)" % (
        number(lo / 1000.0), number(hi / 1000.0), "; the %d with the highest p99" % len(shown) if many else ""),
        [s["name"] for s in streams], shown if many else None)
    ax.set_xlim(lo / 1000.0, hi / 1000.0)
    page.save(fig, "timeline.png", "Per-core timeline" + (
        " (the %d streams with the highest p99 coloured, the other streams grey; "
        "loom report --timeline-ms picks the window)" % len(shown) if many else ""))


def latency_charts(res, page, plt, view):
    """The tail per stream, where its latency went, and latency over time."""
    streams, many, shown, summary = view.streams, view.many, view.shown, view.summary
    fig, ax = plt.subplots(figsize=(10, 4))
    # SLOs far right of every tail would squash the curves: those are
    # drawn only when near, and named in the legend either way.
    worst = max([(s["latency"]["max_us"] or 0) / 1000.0 for s in streams] + [1e-3])
    near = [streams[i]["slo_ms"] for i in shown if streams[i]["slo_ms"] <= 2 * worst]
    series = [("%s (SLO %s ms)" % (streams[i]["name"], number(streams[i]["slo_ms"])), streams[i]["latency_cdf_us"],
               streams[i]["latency"]["p99_us"], streams[i]["latency"]["p999_us"], view.color(k))
              for k, i in enumerate(shown)]
    if many:
        series.insert(0, (summary, pooled_cdf(streams), res["latency"]["p99_us"], res["latency"]["p999_us"], "black"))
    tail_plot(ax, series, "Latency tail per stream (dotted: SLOs within range)" if not many else
              "Latency tail: %s and the %d with the highest p99 (dotted: their SLOs within range)" % (summary, len(shown)))
    for k, i in enumerate(shown):
        if streams[i]["slo_ms"] in near:
            ax.axvline(streams[i]["slo_ms"], linestyle=":", color=view.color(k))
    ax.set_xlim(0, max([worst * 1.1] + [x * 1.05 for x in near]))
    page.save(fig, "latency_cdf.png", "Latency tails (1 - CDF, log scale; circles p99, squares p99.9)" + (
        "; %s: each stream's quantiles weighted by its completed requests, marks at the exact p99 and p99.9 "
        "over all requests; the %d streams with the highest p99" % (summary, len(shown)) if many else ""))
    if all(isinstance(streams[i].get("latency_attribution"), dict) for i in shown):
        attribution_plot(plt, page, [(streams[i]["name"], streams[i]["latency_attribution"]) for i in shown])
    if all("latency_over_time" in s for s in streams):
        latency_over_time(res, page, plt, view)


def latency_over_time(res, page, plt, view):
    """p99 and p50 per window of arrivals, with injected faults marked."""
    streams, many, shown, summary = view.streams, view.many, view.shown, view.summary
    fig, ax = plt.subplots(figsize=(8, 4))
    if many:
        # Per window, the highest p99 of any stream: the envelope of every curve not drawn.
        top = {}
        for s in streams:
            for x in s["latency_over_time"]:
                if x["p99_us"] is not None:
                    key = (x["start_ms"], x["end_ms"])
                    top[key] = max(top.get(key, 0.0), x["p99_us"])
        keys = sorted(top)
        ax.plot([(a + b) / 2 for a, b in keys], [top[k] / 1000.0 for k in keys], color="black", linewidth=2,
                label="highest p99 of %s" % summary)
    for k, i in enumerate(shown):
        s = streams[i]
        w = [x for x in s["latency_over_time"] if x["p99_us"] is not None]
        mid = [(x["start_ms"] + x["end_ms"]) / 2 for x in w]
        ax.plot(mid, [x["p99_us"] / 1000.0 for x in w], color=view.color(k), label=s["name"] + " p99")
        ax.plot(mid, [x["p50_us"] / 1000.0 for x in w], color=view.color(k), linestyle="--", label=s["name"] + " p50")
    # Injected faults (live): shaded while they last, a line when instant.
    for k, f in enumerate(res.get("live", {}).get("faults_injected", [])):
        if f["applied_ms"] is None:
            continue
        lab = "fault: " + f["fault"]
        if f.get("lifted_ms") is not None:
            ax.axvspan(f["applied_ms"], f["lifted_ms"], color="0.5", alpha=0.15 + 0.1 * (k % 2), label=lab)
        else:
            ax.axvline(f["applied_ms"], color="0.3", linestyle=":", label=lab)
    ax.set_xlabel("arrival time (ms of %s time)" % ("device" if res.get("mode") == "live" else "simulated"))
    ax.set_ylabel("latency (ms)")
    if many:
        ax.set_title("Latency over time (requests arriving in each of 50 windows)\n%s: the highest p99 per window; "
                     "the %d streams with the highest p99" % (summary, len(shown)), fontsize=9)
    else:
        ax.set_title("Latency over time (requests arriving in each of 50 windows)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5)); ax.grid(alpha=0.3)
    page.save(fig, "latency_over_time.png", "Latency over time" + (
        " (%s: the highest p99 per window; the %d streams with the highest p99)" % (summary, len(shown)) if many else ""))


def resource_charts(res, page, plt, view):
    """Queue waits, per-core utilization, batch sizes and (live) memory."""
    queue_wait_chart(page, plt, view)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    cores = res["cores"]
    ax.bar([str(c["core"]) for c in cores], [100 * c["utilization"] for c in cores],
           color=["C%d" % c["port"] for c in cores])
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="C%d" % q, label="memory port %d" % q) for q in sorted({c["port"] for c in cores})],
              fontsize=7)
    ax.set_xlabel("core"); ax.set_ylabel("utilization (%)"); ax.set_ylim(0, 100)
    ax.set_title("Per-core utilization (colour: memory port)")
    page.save(fig, "core_utilization.png", "Per-core utilization")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    bs = sorted(res["batch_sizes"].items(), key=lambda kv: int(kv[0]))
    ax.bar([k for k, _ in bs], [v for _, v in bs], label="all streams")
    ax.set_xlabel("batch size"); ax.set_ylabel("batches"); ax.set_title("Batch-size histogram")
    ax.legend(fontsize=7)
    page.save(fig, "batch_sizes.png", "Batch sizes")
    rss = res.get("live", {}).get("rss_mib")
    if rss:
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.plot([x["requests"] for x in rss], [x["mib"] for x in rss], marker=".", label="resident memory")
        ax.set_xlabel("requests arrived"); ax.set_ylabel("MiB"); ax.set_ylim(bottom=0)
        ax.set_title("Resident memory of the live run"); ax.legend(fontsize=7); ax.grid(alpha=0.3)
        page.save(fig, "rss.png", "Resident memory over the live run")


def queue_wait_chart(page, plt, view):
    """Queue-wait histograms per stream drawn (many streams: their sum
    first, log counts)."""
    streams, many, shown, summary = view.streams, view.many, view.shown, view.summary
    fig, ax = plt.subplots(figsize=(8, 4))
    # (label, counts, colour) per bar group; many streams: their sum first.
    bars, labels = [], []
    for k, i in enumerate(shown):
        h = streams[i]["queue_wait"]["histogram"]
        labels = ["%s-%s" % (number(b["lo_us"]), number(b["hi_us"]) if b["hi_us"] is not None else "inf") for b in h]
        bars.append((streams[i]["name"], [b["count"] for b in h], view.color(k)))
    if many:
        total = [0] * len(labels)
        for s in streams:
            for j, b in enumerate(s["queue_wait"]["histogram"][:len(total)]):
                total[j] += b["count"]
        bars.insert(0, (summary + " (sum)", total, "black"))
    width = 0.8 / max(1, len(bars))
    for i, (name, counts, c) in enumerate(bars):
        ax.bar([k + (i - (len(bars) - 1) / 2) * width for k in range(len(counts))], counts, width=width, color=c,
               label=name)
    ax.set_xticks(range(len(labels))); ax.set_xticklabels(labels, rotation=45, fontsize=7)
    ax.set_xlabel("queue wait (us; buckets of unequal width)")
    if many:
        ax.set_yscale("log"); ax.set_ylabel("requests (log)")
        ax.set_title("Queue-wait histogram: %s and the %d with the highest p99" % (summary, len(shown)))
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.set_ylabel("requests"); ax.set_title("Queue-wait histogram")
        ax.legend()
    ax.grid(alpha=0.3, axis="y")
    page.save(fig, "queue_wait.png", "Queue-wait histograms" + (
        " (%s summed; the %d streams with the highest p99)" % (summary, len(shown)) if many else ""))


def numkey(t):
    """A sort key over setting values: numbers by value, before strings."""
    return tuple((0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v)) for v in t)


def sweep_section(res, page, src, plt):
    """The report of a `loom experiment` sweep: a curve per combination of
    the settings that vary, over load; every run in a table."""
    if not isinstance(res.get("runs"), list) or not res["runs"]:
        die("%s: a sweep result with no runs" % src)
    settings = res.get("settings", ["config", "batching", "scheduling"])
    # Curves are labelled by the settings that vary (the others are in the title).
    varying = [k for k in settings if len({str(r[k]) for r in res["runs"]}) > 1] or settings[:1]
    fixed = ", ".join("%s %s" % (k, res["runs"][0][k]) for k in settings if k not in varying)
    head_note = "\n" + fixed if fixed else ""
    groups = {}
    for r in res["runs"]:
        groups.setdefault(tuple(r[k] for k in varying), []).append(r)
    ordered = sorted(groups.items(), key=lambda kv: numkey(kv[0]))
    colors = plt.get_cmap("tab20").colors if len(ordered) > 10 else plt.get_cmap("tab10").colors

    def curves(ax, y):
        """One curve per group over its loads, y(load, runs at it). A curve
        equal to an earlier one says so in its label, and each has its own
        line style and width (the first widest), so coinciding curves show."""
        drawn = []
        for i, (key, runs) in enumerate(ordered):
            by_load = {}
            for r in runs:
                by_load.setdefault(r["load_scale"], []).append(r)
            pts = [y(l, by_load[l]) for l in sorted(by_load)]
            name = " ".join("%s=%s" % (k, v) for k, v in zip(varying, key))
            same = next((n for n, p in drawn if p == pts), None)
            drawn.append((name, pts))
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="os^Dv"[i // len(colors) % 5], color=colors[i % len(colors)],
                    linestyle=["-", "--", "-.", ":"][i % 4], linewidth=max(0.8, 3.0 - 0.3 * i),
                    label=name + (" (= %s)" % same if same else ""))
        # Below the axes: long labels never squeeze the plot.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2); ax.grid(alpha=0.3)

    def mean(rs, f):
        return sum(f(r) for r in rs) / len(rs)
    fig, ax = plt.subplots(figsize=(8, 5))
    curves(ax, lambda l, rs: (mean(rs, lambda r: r["throughput_rps"]), mean(rs, lambda r: (r["p99_us"] or 0)) / 1000.0))
    ax.set_xlabel("throughput (req/s)"); ax.set_ylabel("p99 latency (ms, log)")
    ax.set_yscale("log")
    ax.set_title("Throughput vs p99 (mean over seeds)" + head_note, fontsize=9)
    page.save(fig, "throughput_p99.png", "Throughput-p99 curves")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    curves(ax, lambda l, rs: (l, 100 * mean(rs, lambda r: r["slo_attainment"])))
    ax.set_xlabel("load scale"); ax.set_ylabel("SLO attainment (%)")
    ax.set_title("SLO attainment vs load" + head_note, fontsize=9)
    page.save(fig, "slo_attainment.png", "SLO attainment")
    cols = list(settings) + ["scheduling_used", "load_scale", "seed", "throughput_rps", "p99_us", "slo_attainment", "stp", "antt"]
    table = "<table border=1 cellpadding=3><tr>" + "".join("<th>%s</th>" % c for c in cols) + "</tr>"
    for r in res["runs"]:
        table += "<tr>" + "".join("<td>%s</td>" % html.escape(number(r[c])) for c in cols) + "</tr>"
    page.detail("runs", "%d runs, one row each" % len(res["runs"]), table + "</table>")
    return "loom experiment: %s (%d runs)" % (res["sweep"], len(res["runs"]))


def tune_result_section(res, page, src, plt):
    """A tune result's section; one with no rounds has nothing to draw."""
    if not isinstance(res.get("rounds"), list) or not res["rounds"]:
        die("%s: a tune result with no rounds" % src)
    return tune_section(res, page, plt)


SECTIONS = {"serve": serve_section, "sweep": sweep_section, "tune": tune_result_section}


def parse_args():
    """RESULT.json OUT_DIR [START:END] (the window of --timeline-ms)."""
    global WINDOW
    if len(sys.argv) not in (3, 4):
        die("usage: report.py RESULT.json OUT_DIR [START:END]")
    if len(sys.argv) == 4:
        try:
            lo, hi = (float(x) for x in sys.argv[3].split(":"))
        except ValueError:
            lo = hi = -1.0
        if not (0 <= lo < hi < 1e12):
            die("--timeline-ms %s: give START:END in ms with 0 <= START < END" % sys.argv[3])
        WINDOW = (lo, hi)
    return sys.argv[1], sys.argv[2]


def stage(out):
    """The staging folder beside OUT_DIR the page is drawn into."""
    global STAGING
    parent = os.path.dirname(os.path.abspath(out))
    if os.path.exists(out) and not os.path.isdir(out):
        die("%s: exists and is not a directory" % out)
    try:
        os.makedirs(parent, exist_ok=True)
        STAGING = tempfile.mkdtemp(prefix=".loom-report.", dir=parent)
    except OSError as e:
        die("%s: cannot create the output directory: %s" % (out, e.strerror))
    return STAGING


def publish(page_html, staged, final):
    """index.html written, then the staged files moved into OUT_DIR."""
    global STAGING
    try:
        with open(os.path.join(staged, "index.html"), "w") as f:
            f.write(page_html)
        if not os.path.exists(final):
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staged, 0o777 & ~umask)  # mkdtemp made it private
            os.rename(staged, final)
        else:
            for name in os.listdir(staged):
                os.replace(os.path.join(staged, name), os.path.join(final, name))
            os.rmdir(staged)
    except OSError as e:
        die("%s: cannot write the report: %s" % (final, e.strerror))
    STAGING = None


def main():
    src, final = parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not installed; loom report needs it (pip install matplotlib)")
    try:
        with open(src) as f:
            res = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        die("%s: cannot read the result: %s" % (src, (str(e).splitlines() or [type(e).__name__])[0]))
    page = Page(stage(final), plt)
    try:
        section = SECTIONS.get(res.get("kind")) if isinstance(res.get("kind"), str) else None
        if section is None:
            die("%s: field 'kind' must be 'serve', 'sweep' or 'tune'" % src)
        head = section(res, page, src, plt)
        memo = memo_html(res["memo"]) if isinstance(res.get("memo"), dict) else ""
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError, RecursionError) as e:
        # Any part of the result missing or of the wrong shape: one line, the
        # staging folder removed (die), never a traceback.
        die("%s: not a complete loom result (%s: %s)" % (src, type(e).__name__, str(e)[:200]))
    publish(page.html(head, memo), page.out, final)
    print("loom report: wrote %s" % os.path.join(final, "index.html"), file=sys.stderr)


if __name__ == "__main__":
    # SIGTERM (a batch system's time limit) ends the run as Ctrl-C does:
    # no report, no staging folder left behind.
    signal.signal(signal.SIGTERM, lambda *_: die("terminated; no report written", 143))
    try:
        main()
    except KeyboardInterrupt:
        die("interrupted; no report written", 130)
