// The parts of the `loom tune` report computed from served requests, batch
// spans and telemetry: latency statistics, per-core timelines, counters
// beside their predictions, and the names of parts measured whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "serve/metrics.h"
#include "serve/server.h"
#include "tune/tune.h"

namespace loom::tune {

/// Latency statistics of the completed requests that pass `keep`.
serve::LatencySummary latency_of(const std::vector<serve::ServedRequest>& reqs,
                                 const std::function<bool(const serve::ServedRequest&)>& keep);
/// As a tune result writes it: the summary with its CDF ("cdf_us").
nlohmann::ordered_json latency_json(const serve::LatencySummary& s);

/// x, or null.
inline nlohmann::ordered_json json_of(const std::optional<double>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}
/// a - b, null when either is missing (an empty sample).
nlohmann::ordered_json minus(const std::optional<double>& a, const std::optional<double>& b);
/// The share of the gap between the initial mapping and the best per shape
/// that `now` recovers (1 when there is no gap); none when a value is missing.
std::optional<double> gap_recovered(const std::optional<double>& initial, const std::optional<double>& best,
                                    const std::optional<double>& now);

/// One run of a batch's mapped choice: its named stretches of cycles and how
/// many runs the batch takes.
using BatchLayers = std::pair<std::vector<std::pair<std::string, double>>, int64_t>;

/// Past this many layer stretches in all, timeline batches carry no layers.
constexpr size_t kMaxTimelineLayers = 4000;

/// The batches per core in a window of `len_us` of simulated time (the
/// per-core timeline of the closed-loop report) that opens with the first
/// batch running at or after `from_us` (so an idle stretch after the swap
/// point does not leave it empty), each with the layers it ran: the runs of
/// its mapped choice (`layers_of`: the named stretches of one run and the
/// number of runs), scaled to the batch's span. Past kMaxTimelineLayers
/// stretches in all, batches carry no layers.
Expected<nlohmann::ordered_json> timeline_json(
    const std::vector<serve::BatchSpan>& spans, double from_us, double len_us,
    const std::function<Expected<BatchLayers>(const serve::BatchSpan&)>& layers_of);

/// Every measured plan's counters beside the compiler's predictions of them.
nlohmann::ordered_json counters_json(const std::vector<PlanTelemetry>& tel);

/// The name of part `k` of a compiled choice when it is measured whole (a
/// pipeline or dynamic plan overlaps its layers): its first and last layer.
std::string whole_part_name(const plan::Program& p, size_t k);

}  // namespace loom::tune
