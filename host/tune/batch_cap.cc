// The server's batch cap as a decision of `loom tune` (docs/tuning.md "Batch
// cap"): how large the batches of each model may grow after the swap point,
// decided by simulated runs of the workload under another arrival seed.
#include <algorithm>

#include "tune/loop.h"
#include "tune/space.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

struct Trial {
  int cap = 0;
  serve::LatencySummary after;  // the model's requests arriving after the swap point
};

/// Of the trials that completed at least 99 % of the most any completed
/// (the same throughput), the one of the lowest p99; the smaller cap on a tie.
const Trial* pick(const std::vector<Trial>& trials) {
  int64_t most = 0;
  for (const auto& t : trials) most = std::max(most, t.after.count);
  const Trial* best = nullptr;
  for (const auto& t : trials) {
    if (!t.after.p99 || double(t.after.count) < 0.99 * double(most)) continue;
    if (!best || *t.after.p99 < *best->after.p99) best = &t;
  }
  return best;
}

}  // namespace

Status Loop::cap_mapping(Mapping& next, json& mapping, json* changed) {
  auto caps = decide_caps(next);
  if (!caps) return caps.error();
  const auto text = [&](int cap) {
    return "batch cap " + std::to_string(cap > 0 ? cap : s_.w.max_batch) + (cap > 0 ? "" : " (max_batch)");
  };
  for (const auto& [key, rec] : caps->items()) {
    mapping[key]["batch_cap"] = rec;
    const int was = prev_[key].batch_cap, now = next[key].batch_cap;
    if (!changed || std::max(was, 0) == now || (was == 0 && now == s_.w.max_batch)) continue;
    changed->push_back({{"model", key},
                        {"from", text(was)},
                        {"to", text(now)},
                        {"why",
                         "the lowest p99 after the swap point at the same throughput of the caps tried ("
                         "mapping.batch_cap)"}});
  }
  return Status::ok();
}

Expected<json> Loop::decide_caps(Mapping& next) {
  json out = json::object();
  if (!o_.decide_batch_cap || s_.w.batching == "none" || s_.w.max_batch <= 1) return out;  // nothing to decide
  // Another arrival seed than the run the cap is served in: the decision
  // sees the workload's load, not the arrivals it is judged on.
  serve::Workload trial_w = s_.w;
  trial_w.seed = s_.w.seed + 1;
  for (const auto& [key, spec] : s_.models) {
    std::vector<Trial> trials;
    for (int cap : doubling_to(s_.w.max_batch)) {  // 1, 2, 4, ... and max_batch
      Mapping m = next;
      m[key].batch_cap = cap;
      auto run = serve_with({{0.0, &m0_}, {s_.swap_us, &m}}, &trial_w);
      if (!run) return run.error();
      trials.push_back({cap, latency_of(run->reqs, [&, &k = key](const serve::ServedRequest& r) {
                          return r.arrival_us >= s_.swap_us &&
                                 serve::model_key(s_.w.streams[size_t(r.stream)].model) == k;
                        })});
    }
    const Trial* best = pick(trials);
    json tried = json::array();
    for (const auto& t : trials)
      tried.push_back({{"cap", t.cap},
                       {"completed", t.after.count},
                       {"p99_us", json_of(t.after.p99)},
                       {"mean_us", json_of(t.after.mean)},
                       {"chosen", &t == best}});
    json rec = {{"tried", tried},
                {"rule",
                 "lowest p99 after the swap point among the caps that complete at least 99 % of the most "
                 "requests, in a simulated run under arrival seed " +
                     std::to_string(trial_w.seed)}};
    if (best) {
      next[key].batch_cap = best->cap;
      rec["chosen"] = best->cap;
    } else {
      rec["chosen"] = nullptr;  // no trial completed a request after the swap: the workload's max_batch
    }
    out[key] = rec;
  }
  return out;
}

}  // namespace loom::tune
