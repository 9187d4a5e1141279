// The closed loop of `loom tune` (see tune.h and docs/tuning.md): its phases
// in order; each is a step of Loop (loop.h).
#include "tune/tune.h"

#include "tune/loop.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

Expected<TuneResult> run_tune(const serve::Workload& w, const TuneOptions& o) {
  auto setup = check_setup(w, o);
  if (!setup) return setup.error();
  Loop loop(std::move(*setup), o);
  LOOM_TRY(loop.open_device());
  json j = loop.header();
  // Deploy: one plan per model for the mix at time 0; serve the whole run with it.
  auto initial = loop.initial_mapping();
  if (!initial) return initial.error();
  j["initial_mapping"] = *initial;
  auto baseline = loop.serve_baseline();
  if (!baseline) return baseline.error();
  j["baseline"] = *baseline;
  // The references a round is measured against: the best mapping per shape
  // (measured), and re-mapping with the offline cost model (no telemetry).
  auto best = loop.search_best_per_shape();
  if (!best) return best.error();
  j["best_per_shape"] = *best;
  auto offline = loop.recompile_offline();
  if (!offline) return offline.error();
  j["offline_recompile"] = *offline;
  // The loop: measure, refit, re-decide, swap, serve.
  json rounds = json::array();
  for (int round = 1; round <= o.rounds; ++round) {
    auto r = loop.run_round(round);
    if (!r) return r.error();
    rounds.push_back(std::move(*r));
  }
  j["rounds"] = rounds;
  j["cost_params"] = loop.cost_params_file();
  j["target"] = loop.target();
  j["swap_ok"] = loop.swaps_ok();
  j["backend_runs"] = loop.backend_runs();
  if (!loop.swaps_ok()) return make_error("loom tune", "a plan swap lost or reordered requests (see the swap check)");
  TuneResult r = loop.figures();
  r.memo = loop.memo();
  r.cost_params = j["cost_params"];
  r.report = {{"kind", "tune"}, {"memo", r.memo.to_json()}};
  r.report.update(j);
  return r;
}

}  // namespace loom::tune
