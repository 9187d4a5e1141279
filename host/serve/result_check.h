// The typed reader of loom's result files (a `loom serve` result, a `loom
// experiment` sweep and its folder, a `loom tune` result): each check names
// every field that a reader of the file reads (the merge of a sweep folder,
// `loom report` and its script, scripts/report.py) and refuses the file in
// one line, naming the file and the field path, before any of it is read.
// The merge's row builder lives here too, beside what it relies on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace loom::serve {

using ordered_json = nlohmann::ordered_json;

/// A setting a serve sweep varies (a field of a sweep file besides `slurm`,
/// a key of a point's params) and what its values are: "string", "config",
/// "batching", "scheduling" or "backend" (strings); "int", "delay",
/// "margin", "load" or "seed" (numbers); "bool".
struct SweepAxis {
  const char* name;
  const char* kind;
};
/// In the order of the sweep's columns.
inline constexpr SweepAxis kSweepAxes[] = {{"workload", "string"},
                                           {"configs", "config"},
                                           {"batching", "batching"},
                                           {"scheduling", "scheduling"},
                                           {"backend", "backend"},
                                           {"max_batch", "int"},
                                           {"max_queue_delay_ms", "delay"},
                                           {"slack_margin", "margin"},
                                           {"admission", "bool"},
                                           {"loads", "load"},
                                           {"seeds", "seed"}};

/// A sweep folder's points.json: `kind` absent, "serve" or "commands";
/// `sweep` absent or a string; a non-empty array of point objects, each with
/// its `name` and `argv` (commands) or its `params` and serve `args`
/// (serve). A serve point's params are the sweep's axes (the fields of a
/// sweep file), each of the axis's type, and every point has the same axes.
Status check_manifest(const ordered_json& man, const std::string& where);

/// A `loom serve` result (kind "serve" or absent, as in runs/N.json): what
/// the merge reads (its streams' names, counts, SLO attainment and
/// latencies; the run's settings, latency, scheduling and fairness) and what
/// the report draws (percentiles, latency CDFs and windows, queue-wait
/// histograms, cores, batch sizes, the live section when there is one).
Status check_serve_result(const ordered_json& r, const std::string& where);

/// A `loom experiment` sweep result (results.json): a non-empty array of
/// run objects, each with every setting the report groups by and the
/// metrics it draws.
Status check_sweep_result(const ordered_json& r, const std::string& where);

/// A `loom tune` result: the mappings, latencies, rounds and timelines the
/// report draws.
Status check_tune_result(const ordered_json& r, const std::string& where);

/// Dispatches on `kind` ("serve", "sweep", "tune"); any other kind, or a
/// document that is not an object, is refused.
Status check_result(const ordered_json& r, const std::string& where);

/// The names of the streams of `results` (each passed check_serve_result),
/// first seen first.
std::vector<std::string> stream_names(const std::vector<ordered_json>& results);

/// One row of results.json and results.csv: the point's settings
/// (`params`, of a manifest that passed check_manifest), then the run's
/// metrics, then each stream's (`r` passed check_serve_result).
ordered_json sweep_row(const ordered_json& params, const ordered_json& r, const std::vector<std::string>& streams,
                       size_t i);

/// The results.json of a serve sweep: `man` passed check_manifest, and
/// `results` holds each point's result, which passed check_serve_result.
/// What this writes passes check_sweep_result.
ordered_json sweep_result(const ordered_json& man, const std::vector<ordered_json>& results, ordered_json wall);

/// A row as a CSV line, and the header line of its columns.
std::pair<std::string, std::string> csv_line(const ordered_json& row);

}  // namespace loom::serve
