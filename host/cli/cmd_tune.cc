// `loom tune`: the closed loop (docs/tuning.md): serve with the initial
// mapping, measure per-layer cycles, refit the cost model, re-decide the
// mapping, hot-swap it into a serving run, serve again; N rounds.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/cli_common.h"
#include "cli/progress.h"
#include "cli/zoo_models.h"
#include "common/tensor_io.h"
#include "serve/workload.h"
#include "tune/tune.h"

namespace loom::cli {

namespace {

struct TuneOpts {
  std::string workload, backend = "tlm", output, cost_params_out, cache;
  int max_buckets = 3;
  std::optional<int> max_cores_per_batch;  // not given: the configuration's cores
  std::vector<int64_t> bucket_lengths;
  DeviceFlags device;
  std::optional<int64_t> seed;  // not given: the workload's
  int rounds = 3;
  std::optional<double> swap_at_ms;  // not given: the first drift
  std::string batch_cap = "decide";
  bool json = false, progress = false;
};

/// `x` (scaled) with `prec` decimals, or "n/a" where the result has none
/// (an empty sample).
std::string num(const std::optional<double>& x, double scale = 1, int prec = 1, const char* flags = "") {
  if (!x) return "n/a";
  char buf[64];
  const std::string fmt = std::string("%") + flags + "." + std::to_string(prec) + "f";
  std::snprintf(buf, sizeof buf, fmt.c_str(), scale * *x);
  return buf;
}

/// The short text summary of a tune result.
void print_summary(const tune::TuneResult& r, const std::string& workload, const std::string& backend) {
  std::printf("%s on %s: swap at %.1f ms\n", workload.c_str(), backend.c_str(), r.swap_at_ms);
  std::printf("  after the swap point: initial mapping %s us mean, best per shape %s us\n", num(r.baseline_us).c_str(),
              num(r.best_per_shape_us).c_str());
  std::printf("  re-compiled for the observed shapes with the offline cost model: %s us mean, gap recovered %s%%%s\n",
              num(r.offline_mean_us).c_str(), num(r.offline_gap_recovered_mean, 100).c_str(),
              r.offline_capped_mean_us != r.offline_mean_us
                  ? ("; under the batch caps " + num(r.offline_capped_mean_us) + " us").c_str()
                  : "");
  for (const auto& rd : r.rounds) {
    std::printf("  round %d: refit %s: %s (%zu layers of %zu held-out plans)\n", rd.round,
                rd.refit.accepted ? "accepted" : "rejected", rd.refit.reason.c_str(), rd.refit.validation_samples,
                rd.refit.validation_plans);
    std::printf(
        "    mapping: %zu entries changed, %zu plans recompiled; against the uncorrected compile the cost "
        "parameters in force change %zu fusion/tiling decisions in %d of %d plans compiled, %zu in the "
        "deployed plans\n",
        rd.mapping_changed, rd.plans_recompiled, rd.compiler_decisions_changed, rd.compiler_plans_changed,
        rd.compiler_plans_compared, rd.compiler_decisions_deployed);
    for (const auto& c : rd.batch_caps_changed) std::printf("    %s\n", c.c_str());
    std::printf("    plan error %.2f%% -> %.2f%%, mean %s us, gap recovered %s%%\n", 100 * rd.plan_error_before,
                100 * rd.plan_error_after, num(rd.mean_us).c_str(), num(rd.gap_recovered_mean, 100).c_str());
  }
  if (!r.rounds.empty()) {
    const auto& a = r.rounds.back();
    std::printf(
        "  gain after the last round: %s us = %s us from re-compiling (offline model) %s us from the batch cap %s us "
        "from the refit\n",
        num(a.gain_us).c_str(), num(a.offline_recompile_us).c_str(), num(a.batch_cap_us, 1, 1, "+").c_str(),
        num(a.refit_us, 1, 1, "+").c_str());
  }
  std::printf("  target (>= 80%% of the gap within %d rounds): %s\n", r.rounds_requested,
              r.target_met ? "met" : "missed");
  std::printf("  decision: %s (%s)\n", r.memo.decision.c_str(), r.memo.primary.trend.c_str());
  for (const auto& c : r.memo.checks)
    if (!c.holds) std::printf("    not: %s: %s\n", c.clause.c_str(), c.detail.c_str());
  std::printf("    owner action: %s\n", r.memo.owner_action.c_str());
}

int tune(const TuneOpts& o) {
  if (o.swap_at_ms && !(std::isfinite(*o.swap_at_ms) && *o.swap_at_ms >= 0))
    return fail("--swap-at-ms: expected a time in ms >= 0, got " + std::to_string(*o.swap_at_ms));
  auto w = serve::load_workload(o.workload);
  if (!w) return fail(w.error());
  if (o.seed) {
    if (*o.seed < 0) return fail("--seed: must be >= 0, got " + std::to_string(*o.seed));
    w->seed = uint64_t(*o.seed);
  }
  if (o.max_cores_per_batch && *o.max_cores_per_batch < 1)
    return fail("--max-cores-per-batch: must be >= 1, got " + std::to_string(*o.max_cores_per_batch));
  // Output folders are checked before the (long) loop runs, so a bad path
  // fails at once and leaves neither file half of a pair.
  for (const auto& [flag, path] : {std::pair{"-o", &o.output}, std::pair{"--cost-params-out", &o.cost_params_out}}) {
    if (path->empty()) continue;
    if (Status s = check_output_file(flag, *path); !s) return fail(s.error());
  }
  if (!o.cache.empty())
    if (Status s = check_output_dir("--cache", o.cache); !s) return fail(s.error());
  tune::TuneOptions to;
  to.backend = o.backend;
  to.cache_dir = o.cache;
  to.max_buckets = o.max_buckets;
  to.max_cores_per_batch = o.max_cores_per_batch.value_or(-1);
  to.decide_batch_cap = o.batch_cap == "decide";
  to.bucket_lengths = o.bucket_lengths;
  ZooModels zoo{o.cache, {}};
  to.zoo_builder = [&zoo](const serve::ModelSpec& m) { return zoo.build(m); };
  to.rounds = o.rounds;
  to.swap_at_ms = o.swap_at_ms.value_or(-1);
  Progress progress("tune " + o.workload + " on " + o.backend, true, o.progress);
  to.on_progress = [&](double f, const std::string& phase) { progress.update(f, phase); };
  auto dev = device_options(o.device, o.backend);
  if (!dev) return fail(dev.error());
  to.device = *dev;
  auto r = tune::run_tune(*w, to);
  progress.finish();
  if (!r) return fail(r.error());
  const std::string text = versioned("tune", r->to_json()).dump(2) + "\n";
  if (!o.output.empty()) {
    if (Status s = write_file_atomic(o.output, text); !s) return fail(s.error());
    announce_written("tune", o.output);
  }
  if (!o.cost_params_out.empty()) {
    if (Status s = write_file_atomic(o.cost_params_out, r->cost_params.dump(2) + "\n"); !s) return fail(s.error());
    announce_written("tune", o.cost_params_out);
  }
  // --json prints the report (with -o too: the file is a copy); without it
  // stdout gets the short summary.
  if (o.json) {
    std::cout << text;
    return 0;
  }
  print_summary(*r, o.workload, o.backend);
  return 0;
}

}  // namespace

void register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOpts>();
  auto* c = app.add_subcommand("tune", "Closed loop: measure per-layer cycles, refit the cost model, re-map, hot-swap");
  c->add_option("WORKLOAD", o->workload,
                "Workload file (.yaml); its streams use gemm_chain, or zoo:bert or an ONNX file with a symbolic "
                "dimension and a seq_len distribution")
      ->required();
  c->add_option("--backend", o->backend, "Timed backend (tlm, rtl)");
  add_device_flags(c, o->device);
  c->add_option("--rounds", o->rounds, "Retune rounds (1..10, default 3)");
  c->add_option("--seed", o->seed, "Seed (overrides the workload's)");
  c->add_option("--max-buckets", o->max_buckets,
                "Bucketed models (with seq_len): at most this many buckets, one plan each (1..8, default 3)");
  c->add_option("--bucket-lengths", o->bucket_lengths,
                "Bucketed models: the lengths buckets may have, comma-separated (default: zoo:bert "
                "32,64,128,256,384,512; an ONNX file 8,12,16,24,32,48,... from its shortest request's to its "
                "longest's)")
      ->delimiter(',');
  c->add_option("--max-cores-per-batch", o->max_cores_per_batch,
                "Placement: a batch may run on up to this many cores at once (2, 4, ... each with static, pipeline and "
                "dynamic plans); 1 keeps every batch on one core (default: the configuration's cores)");
  c->add_option("--batch-cap", o->batch_cap,
                "The server's batch cap after the swap point: decide (the loop caps each model's batches at 1, 2, "
                "4 or up to max_batch, by simulated runs; the default) or workload (its max_batch throughout)")
      ->check(CLI::IsMember({"decide", "workload"}));
  c->add_option("--cache", o->cache, "Folder caching measured service times by plan hash, and the zoo models built");
  c->add_option("--swap-at-ms", o->swap_at_ms, "When the new mapping is swapped in (default: the first drift)");
  c->add_flag("--json", o->json, "Print the report as JSON");
  c->add_option("-o,--output", o->output,
                "Also write the JSON report to this file (stdout: the summary, or the JSON with --json)");
  c->add_option("--cost-params-out", o->cost_params_out,
                "Write the last round's refitted cost parameters (for `loom compile --cost-params`)");
  c->add_flag("--progress", o->progress, "Progress on stderr from the start (without it: after 2 s)");
  c->callback([o] {
    if (int rc = tune(*o)) return defer_exit(rc);
  });
}

}  // namespace loom::cli
