// The phases of `loom tune`'s closed loop and the state they share; run_tune
// (tune.cc) calls them in order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "serve/metrics.h"
#include "serve/result.h"
#include "serve/server.h"
#include "serve/service.h"
#include "serve/workload.h"
#include "tune/mapping.h"
#include "tune/placement.h"
#include "tune/refit.h"
#include "tune/report.h"
#include "tune/tune.h"

namespace loom::tune {

/// The checked inputs of one closed loop.
struct Setup {
  serve::Workload w;  // shape grouping off
  const spec::HwConfig* cfg = nullptr;
  int max_cores = 1;                                 // the most cores a batch may run on
  std::map<std::string, std::vector<int64_t>> lens;  // per bucketed model key: its bucket lengths, ascending
  std::map<std::string, serve::ModelSpec> models;    // by model key
  std::map<std::string, double> rate0;               // per model key: arrivals per us before the swap point
  Fabric fab;
  double swap_ms = 0, swap_us = 0;  // when the new mapping is swapped in
};

/// The workload and options checked (the first problem found, as the CLI reports it).
Expected<Setup> check_setup(const serve::Workload& w_in, const TuneOptions& o);

/// One serving run: its result, every request and every batch.
struct Served {
  serve::ServeResult result;
  std::vector<serve::ServedRequest> reqs;
  std::vector<serve::BatchSpan> spans;
};

/// A round's out-of-sample check: the fit so far predicting the plans it had
/// not measured (relative errors summed over them).
struct OutOfSample {
  double raw = 0;  // the uncorrected cost model
  double fit = 0;  // the previous round's fit
  int plans = 0;
};

/// A round's re-decision through the compiler with the refitted parameters,
/// with the report's records of what changed.
struct Redecision {
  Mapping next;
  nlohmann::ordered_json changed = nlohmann::ordered_json::array();           // mapped choices changed
  nlohmann::ordered_json caps_changed = nlohmann::ordered_json::array();      // batch caps changed
  nlohmann::ordered_json recompiled = nlohmann::ordered_json::array();        // same decision, other parameters
  nlohmann::ordered_json compiler_changed = nlohmann::ordered_json::array();  // fusion/tiling decisions changed
  nlohmann::ordered_json mapping = nlohmann::ordered_json::object();          // per model: buckets or placements
  int compared = 0, plans_changed = 0;
  size_t compiler_deployed = 0;  // of compiler_changed, in the plans `next` deploys
};

/// A round's refit: the candidate fitted on the plans not held out, and its validation.
struct RoundRefit {
  CostFit candidate;
  RefitCheck check;
};

/// The closed loop: serve with an initial mapping, search the best mapping
/// per shape, re-map with the offline cost model, then rounds of measure,
/// refit, re-decide, swap and serve. Each phase returns its report section.
class Loop {
 public:
  Loop(Setup s, const TuneOptions& o);
  /// The measuring backend opened: an untimed one fails here, before the choices compile.
  Status open_device();
  /// The report's opening: the run's inputs and the decision space.
  nlohmann::ordered_json header() const;
  /// One plan per model chosen by the uncorrected cost model for the mix at deployment.
  Expected<nlohmann::ordered_json> initial_mapping();
  /// Serves the whole run with the initial mapping.
  Expected<nlohmann::ordered_json> serve_baseline();
  /// The oracle: the best choice per shape by measured cycles, swapped in and served.
  Expected<nlohmann::ordered_json> search_best_per_shape();
  /// Re-mapped for the observed shapes with the offline cost model, swapped in and served.
  Expected<nlohmann::ordered_json> recompile_offline();
  /// Round `round`: measure, refit, re-decide, swap, serve.
  Expected<nlohmann::ordered_json> run_round(int round);
  /// The cost-params file of the last refit.
  nlohmann::ordered_json cost_params_file() const;
  /// How much of the gap to the best mapping the last round recovered.
  nlohmann::ordered_json target() const;
  /// Every swap lost and reordered nothing.
  bool swaps_ok() const { return all_ok_; }
  /// The typed figures of the loop so far (TuneResult without its report).
  TuneResult figures() const;
  /// The review memo: should the mapping of the last round replace the
  /// deployed one after the swap point? (memo.cc)
  serve::Memo memo() const;
  uint64_t backend_runs() const { return lab_.backend_runs() + sm_.backend_runs(); }

 private:
  /// A bucketed model's bucket lengths (empty for the others).
  const std::vector<int64_t>& lens_of(const std::string& key) const {
    static const std::vector<int64_t> none;
    auto it = s_.lens.find(key);
    return it == s_.lens.end() ? none : it->second;
  }
  using Epochs = std::vector<std::pair<double, const Mapping*>>;
  using SeqsOf = std::function<std::set<int64_t>(const std::string&)>;
  using Cost = std::function<Expected<double>(const serve::ModelSpec&, const Choice&)>;

  /// Enters the next progress stage.
  void progress(const std::string& phase);
  /// Serves the workload (`w`, or the loop's) with each mapping of `epochs` in force from its time (us);
  /// the loop's workload moves the progress bar over [from, to] of the phase, a trial's does not move it.
  Expected<Served> serve_with(const Epochs& epochs, const serve::Workload* w = nullptr, double from = 0, double to = 1);
  /// Sets `j`'s "latency" (every request) and "after_swap" (arrivals from the
  /// swap point) and returns the latter; refused when no request of the `run`
  /// completes after the swap point.
  Expected<serve::LatencySummary> add_latency(nlohmann::ordered_json& j, const std::vector<serve::ServedRequest>& reqs,
                                              const std::string& run) const;
  /// The layers of a batch under the mapping `after` in force from the swap point (the initial one before it).
  std::function<Expected<BatchLayers>(const serve::BatchSpan&)> layers_with(const Mapping& after);

  // Mixes and shapes a decision is made for.
  /// The mix at deployment of model `key`.
  LengthMix initial_mix(const std::string& key) const;
  /// The lengths of the requests of model `key` that arrived after the swap point in a run.
  std::set<int64_t> observed_seqs(const Served& run, const std::string& key) const;
  /// Model `key`'s requests that arrived at or after the swap point in a
  /// run: per us of the rest of the run, and their inter-arrival times'
  /// squared coefficient of variation (1 with fewer than 3 requests).
  Arrivals observed_arrivals(const Served& run, const std::string& key) const;
  /// Model `key`'s batches that started at or after the swap point in a run,
  /// by (length, requests); none: each of `seqs` once, alone.
  BatchMix observed_batches(const Served& run, const std::string& key, const std::set<int64_t>& seqs) const;
  /// Every length the workload gives model `key`.
  std::set<int64_t> workload_seqs(const std::string& key) const;

  // Decisions.
  /// A bucketed model's mapping record: its buckets, the padding and the plans' compile time.
  Expected<nlohmann::ordered_json> bucket_json(const serve::ModelSpec& spec, const BucketPick& bp);
  /// The measured cost of one run of a choice: device parts plus host ops.
  Expected<double> measured_cost(const serve::ModelSpec& spec, const Choice& c);
  /// A mapping of every model for the shapes, batches and arrival rate
  /// observed after the swap point in `seen`, each choice costed by `cost`.
  Status decide(const Served& seen, const SeqsOf& seqs_of, const Cost& cost, Mapping& out,
                nlohmann::ordered_json& buckets);

  // The round's steps.
  /// Step 1: telemetry of every plan the last run used that is not measured yet.
  Expected<OutOfSample> measure_new_plans();
  /// Step 3: every choice compiled with the cost parameters in force; the compiler's prediction ranks them.
  Expected<Redecision> redecide(const Calibration& before);
  /// A model's candidates with the refitted parameters; compiler decisions they change go to `rd`.
  Expected<Candidates> refitted_candidates(const std::string& key, const serve::ModelSpec& spec, int round,
                                           const std::string& params_text, Redecision& rd);
  /// Step 3 for a bucketed model: the buckets re-chosen for the lengths observed after the swap point.
  Status redecide_buckets(const std::string& key, const serve::ModelSpec& spec, const Candidates& cands, int round,
                          const Calibration& before, const std::string& params_text, Redecision& rd);
  /// The server's batch cap per model for `next` swapped in at the swap
  /// point, each cap tried in a simulated run of the workload under another
  /// arrival seed (batch_cap.cc); the record of what was weighed.
  Expected<nlohmann::ordered_json> decide_caps(Mapping& next);
  /// decide_caps on `next`, each model's record into `mapping[model]["batch_cap"]`
  /// and, given `changed`, a cap that differs from the last run's mapping's into it.
  Status cap_mapping(Mapping& next, nlohmann::ordered_json& mapping, nlohmann::ordered_json* changed);
  /// Step 3 for a gemm chain: its width, then a choice per observed (seq, batch).
  Status redecide_gemm(const std::string& key, const serve::ModelSpec& spec, const Candidates& cands, int round,
                       const Calibration& before, const std::string& params_text, Redecision& rd);
  /// Step 2: the cost parameters refitted on the plans not held out, validated on the held-out ones; in force when
  /// accepted.
  RoundRefit refit_cost_params(int round);
  /// Of a mapping's plans compiled with refitted parameters, the fusion/tiling decisions that differ from the
  /// uncorrected compile.
  Expected<size_t> deployed_compiler_changes(const Mapping& m);
  /// The round's report section.
  Expected<nlohmann::ordered_json> round_json(int round, const OutOfSample& fresh, const FitErrors& fe,
                                              const RoundRefit& rf, const Redecision& rd, nlohmann::ordered_json swap,
                                              const Served& cur);
  /// The compile profile of the deployed plans beside their telemetry.
  Expected<nlohmann::ordered_json> deployed_profile(const Mapping& next);

  Setup s_;
  const TuneOptions& o_;
  serve::ServiceModel sm_;
  Lab lab_;
  std::map<std::string, std::vector<Choice>> spaces_;  // per model key, in decision-space order

  // Progress: the serve runs (baseline, best per shape, one per round) and
  // the exhaustive search are equal stages.
  double stages_ = 0, stage_ = -1;
  double at_ = 0;  // the fraction last reported (a measurement is shown at it)
  std::string phase_;

  Mapping m0_;         // the initial mapping
  Served base_;        // the run with the initial mapping alone
  double tl_len_ = 0;  // the timelines' window (us)
  // Latency after the swap point: initial mapping, best per shape, offline re-map.
  serve::LatencySummary l0_, lbest_, loff_;
  serve::LatencySummary lcap_;  // the offline re-map under the loop's batch caps (loff_ when it decides none)

  // Across rounds.
  std::vector<PlanTelemetry> tel_;
  std::set<std::string> measured_tags_;
  Calibration cal_;  // identity before the first refit
  compiler::CostParams base_cp_;
  CostFit cfit_;          // the compiler's cost parameters in force: uncorrected before the first accepted refit
  int params_round_ = 0;  // the round that fitted cfit_ (0: uncorrected)
  Mapping prev_;          // the mapping the last run swapped in
  const Served* last_ = nullptr;  // the last run: the baseline, then each round's
  std::vector<Served> runs_;      // the rounds' runs (reserved up front: last_ points into it)
  bool all_ok_ = true;
  std::optional<double> recovered_last_;
  std::vector<TuneRound> rounds_;  // each round's figures, as round_json writes them
};

}  // namespace loom::tune
