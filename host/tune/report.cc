// The parts of the `loom tune` report computed from served requests, batch
// spans and telemetry (docs/tuning.md, "Report").
#include "tune/report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "serve/metrics.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

serve::LatencySummary latency_of(const std::vector<serve::ServedRequest>& reqs,
                                 const std::function<bool(const serve::ServedRequest&)>& keep) {
  std::vector<double> v;
  for (const auto& r : reqs)
    if (!r.dropped && r.done_us >= 0 && keep(r)) v.push_back(r.done_us - r.arrival_us);
  return serve::LatencySummary::of(std::move(v));
}

json latency_json(const serve::LatencySummary& s) {
  json j = s.to_json();
  j["cdf_us"] = s.cdf;
  return j;
}

json minus(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b ? json(*a - *b) : json(nullptr);
}

std::optional<double> gap_recovered(const std::optional<double>& initial, const std::optional<double>& best,
                                    const std::optional<double>& now) {
  if (!initial || !best || !now) return std::nullopt;
  return *initial - *best > 0 ? (*initial - *now) / (*initial - *best) : 1.0;
}

Expected<json> timeline_json(const std::vector<serve::BatchSpan>& spans, double from_us, double len_us,
                             const std::function<Expected<BatchLayers>(const serve::BatchSpan&)>& layers_of) {
  json a = json::array();
  size_t stretches = 0;
  double open = std::numeric_limits<double>::infinity();
  for (const auto& b : spans)
    if (b.end_us > from_us) open = std::min(open, std::max(b.start_us, from_us));
  if (!std::isfinite(open)) return a;
  from_us = open;
  const double to_us = open + len_us;
  for (const auto& b : spans) {
    if (!(b.end_us > from_us && b.start_us < to_us)) continue;
    json e = {{"core", b.core},         {"stream", b.stream}, {"start_us", b.start_us}, {"end_us", b.end_us},
              {"requests", b.requests}, {"seq", b.seq},       {"cores", b.cores}};
    auto run = layers_of(b);
    if (!run) return run.error();
    const auto& [steps, runs] = *run;
    double total = 0;
    for (const auto& st : steps) total += st.second;
    total *= double(runs);
    if (total > 0 && stretches + steps.size() * size_t(runs) <= kMaxTimelineLayers) {
      json ls = json::array();
      double t = b.start_us;
      const double k = (b.end_us - b.start_us) / total;
      for (int64_t r = 0; r < runs; ++r)
        for (const auto& [name, cyc] : steps) {
          ls.push_back(json::array({name, t, t + cyc * k}));
          t += cyc * k;
        }
      stretches += ls.size();
      e["layers"] = ls;
    }
    a.push_back(e);
  }
  return a;
}

json counters_json(const std::vector<PlanTelemetry>& tel) {
  json a = json::array();
  const auto rel = [](uint64_t pred, uint64_t meas) {
    return meas ? (double(pred) - double(meas)) / double(meas) : (pred ? 1.0 : 0.0);
  };
  for (const auto& t : tel) {
    json m = json::object();
    m["cycles"] = t.measured;  // the whole run's device cycles
    for (size_t k = 0; k < spec::kNumCounters; ++k) m[std::string(spec::kCounterNames[k])] = t.counters[k];
    const auto& ctr = t.counters;
    const uint64_t busy = ctr[size_t(spec::Counter::CYCLES_BUSY)];
    a.push_back(
        {{"model", t.model},
         {"choice", t.choice},
         {"rows", t.rows},
         {"measured", m},
         {"predicted",
          {{"macs", t.predicted_macs},
           {"bytes_rd", t.predicted_bytes_rd},
           {"bytes_wr", t.predicted_bytes_wr},
           {"cycles", t.predicted}}},
         {"error",
          {{"macs", rel(t.predicted_macs, ctr[size_t(spec::Counter::MACS)])},
           {"bytes_rd", rel(t.predicted_bytes_rd, ctr[size_t(spec::Counter::BYTES_RD)])},
           {"bytes_wr", rel(t.predicted_bytes_wr, ctr[size_t(spec::Counter::BYTES_WR)])},
           {"cycles", rel(t.predicted, t.measured)}}},
         {"compute_share", busy ? double(ctr[size_t(spec::Counter::CYCLES_COMPUTE)]) / double(busy) : 0.0},
         {"stall_mem_share", busy ? double(ctr[size_t(spec::Counter::CYCLES_STALL_MEM)]) / double(busy) : 0.0}});
  }
  return a;
}

std::string whole_part_name(const plan::Program& p, size_t k) {
  const auto& layers = p.segments[k].plan.layers;
  std::string name = layers.empty() ? "segment " + std::to_string(k) : layers.front().name;
  if (layers.size() > 1) name += " .. " + layers.back().name;
  return name;
}

json swap_check(const std::vector<serve::ServedRequest>& reqs, double swap_us, size_t streams, bool& ok) {
  int64_t submitted = 0, completed = 0, dropped = 0, lost = 0, reordered = 0, after = 0;
  std::vector<double> last_start(streams, -1.0);
  for (const auto& r : reqs) {
    ++submitted;
    if (r.dropped) {
      ++dropped;
      continue;
    }
    if (r.done_us < 0 || r.start_us < 0 || r.done_us < r.start_us) {
      ++lost;
      continue;
    }
    ++completed;
    if (r.start_us >= swap_us) ++after;
    double& ls = last_start[size_t(r.stream)];
    if (r.start_us < ls) ++reordered;
    ls = std::max(ls, r.start_us);
  }
  ok = lost == 0 && reordered == 0 && submitted == completed + dropped;
  json j;
  j["at_ms"] = swap_us / 1000.0;
  j["submitted"] = submitted;
  j["completed"] = completed;
  j["dropped"] = dropped;
  j["lost"] = lost;
  j["reordered_within_stream"] = reordered;
  j["dispatched_after_swap"] = after;
  j["ok"] = ok;
  return j;
}

}  // namespace loom::tune
