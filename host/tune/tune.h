// `loom tune`: the closed loop from the fabric's counters back to the
// compiler. Serve a workload with an initial mapping, measure per-layer
// cycles on the timed backend, refit the cost model's correction, re-decide
// the mapping for the observed shape mix, hot-swap it into a running serving
// simulation and serve again. docs/tuning.md describes every step.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "loom/spec_gen.h"
#include "serve/memo.h"
#include "serve/server.h"
#include "serve/service.h"
#include "serve/workload.h"

namespace loom::tune {

/// One point of the decision space: the plan's row tile, the fusion policy,
/// double buffering and the placement. For a gemm_chain, `rows` is the rows
/// per plan run (a batch of seq x batch rows runs in ceil(seq x batch / rows)
/// chunks, the last one padded); for an ONNX model with a batch dimension
/// (a CNN) it is the requests per run: a batch of b runs in ceil(b / rows)
/// runs of the program compiled for a batch of `rows`; for a bucketed model (zoo:bert or an ONNX
/// file with a symbolic dimension, and a seq_len distribution) it is the bucket, the sequence length the batch is
/// padded to, and `requests` the requests one run of that length's program
/// holds (device segments and host ops): a batch of b runs in
/// ceil(b / requests) runs of the program compiled for that many requests,
/// the last padded (1 in the decision space; pick_requests decides it per
/// bucket and batch size).
///
/// Placement: a batch runs on `cores` cores at once (a gang: the serving
/// simulator starts it when that many cores are free and holds them all until
/// it ends), its plans compiled for that many cores with `placement` (and
/// `tasks_per_core` when dynamic). One core: static.
///
/// `params` (with the round that fitted them) are the refitted cost-model
/// parameters the plan is compiled with (CompileOptions::cost_params); empty:
/// the configuration's uncorrected model.
struct Choice {
  int64_t rows = 64;
  compiler::Fusion fusion = compiler::Fusion::Cost;
  bool double_buffer = true;
  int cores = 1;
  compiler::Placement placement = compiler::Placement::Static;
  int tasks_per_core = 1;
  int requests = 0;  // a bucketed model's requests per run (0 for the others)
  std::optional<compiler::CostParams> params;
  int params_round = 0;
  /// "rows=64,fusion=cost,db=on" (+ ",cores=2,placement=dynamic,tpc=2" on
  /// several cores; + ",req=4" with several requests a run; + ",cost=r1"
  /// with params of round 1)
  std::string tag() const;
  /// The placement alone: "1 core", "2 cores static", "4 cores dynamic x2".
  std::string placement_tag() const;
  /// The same rows, fusion, double buffering and placement (whatever the parameters).
  bool same_decision(const Choice& o) const {
    return rows == o.rows && fusion == o.fusion && double_buffer == o.double_buffer && cores == o.cores &&
           placement == o.placement && tasks_per_core == o.tasks_per_core && requests == o.requests;
  }
  bool operator==(const Choice& o) const { return same_decision(o) && params_round == o.params_round; }
};

/// Every choice: rows in {32, 64, ..., 1024} (a bucketed model: its bucket
/// lengths, one request a run; an ONNX model with a batch dimension: requests per run 1, 2, 4,
/// ... up to `max_batch`) x fusion {none, cost} x double buffering {on, off} x
/// placement: one core, and for every power of two k in 2..`max_cores`: k
/// cores static, pipeline, dynamic with 1 and with 2 tasks per core.
/// `lengths`: a bucketed model's bucket lengths (empty: ModelSpec::bucket_lengths).
std::vector<Choice> decision_space(const serve::ModelSpec& m = {}, const std::vector<int64_t>& lengths = {},
                                   int max_cores = 1, int max_batch = 8);

/// Mean time in a G/G/c queue by the Allen-Cunneen approximation: `c`
/// servers, arrivals at `lambda` per unit of time, service of mean `s`; the
/// M/M/c wait (Erlang C through the Erlang B recurrence) scaled by (ca2 +
/// cs2) / 2, the squared coefficients of variation of the inter-arrival and
/// service times (1 and 1: M/M/c exactly; 1 and 0: M/D/c's usual
/// approximation); infinite when the queue is unstable (lambda x s >= c).
/// The placement decision weighs each gang width with it (docs/tuning.md).
double ggc_latency(int c, double lambda, double s, double ca2, double cs2);

/// measured ~= a * predicted + b, fitted by least squares.
struct LinearFit {
  double a = 1.0, b = 0.0;
  int n = 0;
  double apply(double x) const { return a * x + b; }
};
/// Least squares over (predicted, measured) points; with one point, or all
/// points at one x, a fixed offset (a = 1, b = mean of measured - predicted);
/// with none, the identity.
LinearFit fit_linear(const std::vector<std::pair<double, double>>& pts);

/// The refitted cost-model correction: a line per layer kind (the compiled
/// layer's op, "+fused" when it is a fused group) and the plan's fixed
/// overhead (measured plan cycles minus the sum of its layers' cycles).
struct Calibration {
  std::map<std::string, LinearFit> per_kind;
  double overhead = 0;
  nlohmann::ordered_json to_json() const;
};

/// Per-layer telemetry of one plan.
struct LayerSample {
  std::string kind;
  int64_t rows = 0;                      // shape bucket: the plan's rows
  uint64_t predicted = 0, measured = 0;  // predicted: the uncorrected cost model's
  uint64_t insns = 0;                    // the cost model's instructions of the layer (one core)
  std::string name = {};                 // the plan layer's name ('+'-joined when fused)
};
struct PlanTelemetry {
  std::string model, choice;  // model key, Choice::tag
  int64_t rows = 0;
  uint64_t predicted = 0;  // the compiler's prediction, sum over layers
  uint64_t measured = 0;   // the whole plan on the backend
  std::vector<LayerSample> layers;
  /// Per part (device segment) of the run: its whole cycles and how many of
  /// `layers` are its (0: pipeline and dynamic plans, whose layers overlap,
  /// have no per-layer cycles; they are measured whole).
  std::vector<uint64_t> part_cycles, part_predicted;  // part_predicted: uncorrected
  std::vector<size_t> part_layers;
  /// The fabric's counters over the whole run (every part, every core), and
  /// what the compiler predicted of them (plan::LayerInfo::macs, the cost
  /// model's DRAM traffic).
  std::array<uint64_t, spec::kNumCounters> counters{};
  uint64_t predicted_macs = 0, predicted_bytes_rd = 0, predicted_bytes_wr = 0;
};

/// The compiler's refitted cost parameters: over every layer sample,
/// measured - predicted ~= layer_cycles + insn_cycles x insns by least
/// squares with insn_cycles >= 0 (all samples at one instruction count, or a
/// negative slope: insn_cycles = 0 and layer_cycles the mean residual).
/// `base` gives the hardware fields.
struct CostFit {
  compiler::CostParams params;
  int points = 0;
  double unconstrained_insn_cycles = 0;  // the negative slope the constraint refused (0: none)
  double rms_before = 0, rms_after = 0;  // RMS of the per-layer residual (cycles)
};
CostFit fit_cost_params(const std::vector<PlanTelemetry>& telemetry, const compiler::CostParams& base);

/// A refit's validation split: of the measured plans in measurement order
/// (the loop only appends, so a plan keeps its index), every
/// kHoldOutEvery-th from the second (index 1, 4, 7, ...) is held out; its
/// layers are never fitted, and validate every refit against the
/// parameters it would replace.
constexpr size_t kHoldOutEvery = 3;
/// Whether the plan at `index` of the telemetry is held out.
inline bool held_out(size_t index) { return index % kHoldOutEvery == 1; }
/// The telemetry split by held_out: the plans fitted and the plans held out.
struct HeldOutSplit {
  std::vector<PlanTelemetry> fit, held;
};
HeldOutSplit split_held_out(const std::vector<PlanTelemetry>& telemetry);

/// Mean relative error |corrected - measured| / measured of `cp`'s
/// per-layer predictions (the uncorrected prediction + cp's correction,
/// clamped at 0) over every layer of `tel`; 0 when it has none.
double layer_error(const std::vector<PlanTelemetry>& tel, const compiler::CostParams& cp);

/// The verdict on a refit: validated on the held-out plans, it is accepted
/// when its per-layer error there is no higher than that of the parameters
/// it would replace, and rejected otherwise, or when nothing is held out.
struct RefitCheck {
  /// The refitted parameters are the ones the round re-compiles with.
  bool accepted = false;
  /// Held-out plans and their layers (the validation samples).
  size_t validation_plans = 0, validation_samples = 0;
  /// layer_error on the held-out layers: the parameters in force before the
  /// refit (before) and the refitted ones (after).
  double error_before = 0, error_after = 0;
  /// One line: the comparison, or why there was none.
  std::string reason;
  nlohmann::ordered_json to_json() const;
};
/// Validates `candidate` against `current` on the `held` plans.
RefitCheck validate_refit(const std::vector<PlanTelemetry>& held, const compiler::CostParams& current,
                          const compiler::CostParams& candidate);

/// A compiler decision that differs between two compiles of one graph
/// (pass output, `loom compile --explain`): the node, the pass, the text
/// before and after ("" when the decision exists on one side only).
struct DecisionChange {
  std::string pass, node, before, after;
};
/// The decisions of the fusion and tiling passes that differ between `a` and
/// `b`; numbers after the choice itself (predicted cycles, bytes) are not
/// compared, only what was chosen.
std::vector<DecisionChange> diff_decisions(const std::vector<compiler::Decision>& a,
                                           const std::vector<compiler::Decision>& b);

/// Compiles and measures plans for each choice, with a cache.
class Lab {
 public:
  /// Measures on `sm`'s device (one tlm platform per process); zoo models
  /// come from `sm`'s zoo builder.
  explicit Lab(serve::ServiceModel& sm) : sm_(sm) {}
  /// The choice's program as the compile driver makes it (what `loom run`
  /// runs), kept for the compiler's predictions, decisions and the plans'
  /// layers: its plans keep no instruction streams or constants (memory),
  /// so it is not runnable. A gemm_chain: one segment; a bucketed model:
  /// the program of the bucket's length.
  Expected<const plan::Program*> compiled(const serve::ModelSpec& m, const Choice& c);
  /// Wall time of the choice's compile (ms).
  double compile_ms(const serve::ModelSpec& m, const Choice& c) const;
  /// The host ops' cycles of one run of `p` (the stated host model).
  uint64_t host_cycles(const plan::Program& p) const { return sm_.host_cost(p).host_cycles; }
  /// The compiler's prediction of one run of the choice: its device
  /// segments plus the host cycles.
  Expected<uint64_t> predicted_cycles(const serve::ModelSpec& m, const Choice& c);
  /// Runs every segment whole (`measured`: the device segments' cycles,
  /// without the host ops, which host_cycles gives) and once more with
  /// per-layer cycles (runtime::RunOptions::layer_cycles) for the layers.
  Expected<const PlanTelemetry*> measure(const serve::ModelSpec& m, const Choice& c);
  /// One run of the choice as named stretches of measured cycles, in order:
  /// each layer (its plan name) and the host ops between device segments.
  Expected<std::vector<std::pair<std::string, double>>> run_layers(const serve::ModelSpec& m, const Choice& c);
  /// Corrected prediction of one plan run under `cal`.
  Expected<double> predict(const serve::ModelSpec& m, const Choice& c, const Calibration& cal);
  /// The compiler's own prediction of one plan run (with the choice's cost
  /// parameters) plus the plan overhead.
  Expected<double> predict_compiled(const serve::ModelSpec& m, const Choice& c, double overhead);
  uint64_t backend_runs() const { return runs_; }

 private:
  /// The choice compiled in full (runnable plans) by the compile driver.
  Expected<plan::Program> build(const serve::ModelSpec& m, const Choice& c);
  serve::ServiceModel& sm_;
  std::map<std::string, plan::Program> compiled_;
  std::map<std::string, double> compile_ms_;
  std::map<std::string, PlanTelemetry> measured_;
  uint64_t runs_ = 0;
};

/// The kind of a compiled layer for the fit ("Gemm", "Gemm+fused", ...).
std::string layer_kind(const std::string& op, const std::string& name);

/// Refits `cal` from every sample (per kind: least squares).
Calibration refit(const std::vector<PlanTelemetry>& telemetry);

/// The swap check over the main run's requests (arrival order): nothing lost
/// (every request completed or dropped), nothing reordered within a stream
/// (dispatch order equals arrival order), submitted = completed + dropped.
/// Sets `ok`; the JSON has the counts and the requests dispatched after the swap.
nlohmann::ordered_json swap_check(const std::vector<serve::ServedRequest>& reqs, double swap_us, size_t streams,
                                  bool& ok);

/// The most buckets (plans) a bucketed model may have.
constexpr int kMaxBuckets = 8;

struct TuneOptions {
  std::string backend = "tlm";
  /// Builds zoo models (ServiceModel::set_zoo_builder); needed by zoo streams.
  serve::ZooBuilder zoo_builder;
  std::string cache_dir;  // service-time cache (loom serve --cache); "" none
  /// Bucketed models: at most this many buckets (plans) per model
  /// (1..kMaxBuckets), of these lengths (empty: zoo:bert's six; an ONNX
  /// file's ladder over its requests' lengths, serve::bucket_ladder).
  int max_buckets = 3;
  std::vector<int64_t> bucket_lengths;
  /// Placement: the most cores one batch may run on (decision_space's
  /// max_cores); -1: the configuration's cores.
  int max_cores_per_batch = -1;
  /// The server's batch cap per model after the swap point as a decision of
  /// the loop (ModelMap::batch_cap); false: the workload's max_batch.
  bool decide_batch_cap = true;
  runtime::DeviceOptions device;  // the measuring device's options
  int rounds = 3;
  double swap_at_ms = -1;  // < 0: the first drift time of any stream, else half the duration
  /// Called now and then with the fraction of the loop done and the phase
  /// it is in ("round 2 of 3"), for a progress bar.
  std::function<void(double fraction, const std::string& phase)> on_progress;
};

/// One retune round's figures, as the summary and callers read them (null
/// in the report: nullopt, an empty sample).
struct TuneRound {
  int round = 0;
  /// Mapping entries (a shape or a bucket's lengths) whose choice (rows,
  /// fusion, double buffering, placement) differs from the previous round's
  /// mapping, and entries kept but moved to a plan compiled with other
  /// parameters.
  size_t mapping_changed = 0, plans_recompiled = 0;
  /// Batch caps changed (of mapping_changed): "MODEL: batch cap 8 (max_batch) -> batch cap 2".
  std::vector<std::string> batch_caps_changed;
  /// Fusion and tiling decisions in which a compile with the cost parameters
  /// in force differs from the uncorrected compile of the same choice: over
  /// every choice of the decision space (in `compiler_plans_changed` of
  /// `compiler_plans_compared` plans), and in the plans this round's mapping
  /// deploys. Not a change from the previous round.
  size_t compiler_decisions_changed = 0, compiler_decisions_deployed = 0;
  int compiler_plans_changed = 0, compiler_plans_compared = 0;
  /// The round's refit and its validation.
  RefitCheck refit;
  double plan_error_before = 0, plan_error_after = 0;  // mean relative error of the plans measured
  std::optional<double> mean_us;                       // after the swap point
  std::optional<double> gap_recovered_mean;            // of the initial mapping's gap to the best per shape
  std::optional<double> gain_us, offline_recompile_us, batch_cap_us, refit_us;  // the gain split into its causes
};

/// What the closed loop found: the figures its summary and callers read,
/// typed, and the mapping report of every phase (kind "tune",
/// docs/schema/tune.schema.json) they come from, written by to_json.
struct TuneResult {
  serve::Memo memo;  // the review memo, the report's first field after "kind"
  double swap_at_ms = 0;
  int rounds_requested = 0;
  std::optional<double> baseline_us, best_per_shape_us;  // mean after the swap point
  std::optional<double> offline_mean_us, offline_gap_recovered_mean;
  std::optional<double> offline_capped_mean_us;  // the offline re-map under the loop's batch caps
  bool target_met = false;                       // >= 80 % of the gap recovered after the last round
  std::vector<TuneRound> rounds;
  nlohmann::ordered_json cost_params;  // the last round's refit as a cost-params file
  nlohmann::ordered_json report;

  nlohmann::ordered_json to_json() const { return report; }
};

/// Runs the closed loop.
Expected<TuneResult> run_tune(const serve::Workload& w, const TuneOptions& o);

}  // namespace loom::tune
