// `loom serve`: replays a serving workload (docs/serving.md) on service times
// measured on a timed backend and prints the result (latency percentiles,
// throughput, batching, per-core utilization, fairness, accounting).
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/cli_common.h"
#include "cli/process.h"
#include "cli/progress.h"
#include "cli/zoo_models.h"
#include "common/tensor_io.h"
#include "serve/memo.h"
#include "serve/server.h"
#include "serve/service.h"
#include "serve/workload.h"

namespace loom::cli {

namespace {

struct ServeOpts {
  std::string workload, backend = "tlm", config, batching, scheduling, output, cache, trace, mode = "sim",
                        completion = "interrupt";
  int64_t max_retries = 1;
  std::vector<std::string> faults;
  DeviceFlags device;
  // Not given: the workload's. A value given is checked, whatever it is.
  std::optional<int64_t> seed, max_batch;
  std::optional<double> max_delay_ms, slack_margin;
  double load_scale = 1.0;
  bool json = false, progress = false, admission = false, no_admission = false, no_grouping = false;
};

/// The workload fields that flags override, and the run's own flags, each checked.
Status apply_overrides(const ServeOpts& o, serve::Workload& w) {
  if (o.seed) {
    if (*o.seed < 0) return error_of("--seed: must be >= 0, got " + std::to_string(*o.seed));
    w.seed = uint64_t(*o.seed);
  }
  if (!o.config.empty()) w.config = o.config;
  if (!o.batching.empty()) {
    if (!serve::valid_batching(o.batching))
      return error_of("--batching: unknown batching policy '" + o.batching + "' (none, fixed, deadline)");
    w.batching = o.batching;
  }
  if (!o.scheduling.empty()) {
    if (!serve::valid_scheduling(o.scheduling))
      return error_of("--scheduling: unknown scheduling policy '" + o.scheduling + "' (static, dynamic, auto)");
    w.scheduling = o.scheduling;
  }
  if (o.max_batch) {
    if (*o.max_batch < 1 || *o.max_batch > 4096)
      return error_of("--max-batch: must be in 1..4096, got " + std::to_string(*o.max_batch));
    w.max_batch = int(*o.max_batch);
  }
  if (o.max_delay_ms) {
    if (!(*o.max_delay_ms >= 0 && *o.max_delay_ms <= 1e6))
      return error_of("--max-queue-delay-ms: must be in [0, 1e6] milliseconds");
    w.max_queue_delay_ms = *o.max_delay_ms;
  }
  if (o.slack_margin) {
    if (!(*o.slack_margin >= 0 && *o.slack_margin < 1)) return error_of("--slack-margin: must be in [0, 1)");
    w.slack_margin = *o.slack_margin;
  }
  if (o.no_grouping) w.shape_grouping = false;
  if (o.admission && o.no_admission) return error_of("--admission and --no-admission: choose one");
  if (o.admission) w.admission = true;
  if (o.no_admission) w.admission = false;
  if (!(o.load_scale > 0)) return error_of("--load-scale: must be > 0");
  if (o.mode != "sim" && o.mode != "live") return error_of("--mode: '" + o.mode + "' is not sim or live");
  if (o.completion != "interrupt" && o.completion != "poll")
    return error_of("--completion: '" + o.completion + "' is not interrupt or poll");
  if (o.max_retries < 0 || o.max_retries > 100) return error_of("--max-retries: must be in 0..100");
  if (!o.faults.empty() && o.mode != "live") return error_of("--fault: faults are injected in --mode live only");
  return {};
}

/// Live: what the device did, every fault asked for (applied or not, and why
/// not) and every reason a batch failed.
void print_live(const serve::LiveResult& l) {
  const auto& c = l.counters;
  std::printf(
      "  live: %llu device runs, %llu checked against the golden model (%llu differed), %llu device errors, "
      "%llu host timeouts, %lld requests retried\n",
      (unsigned long long)c.device_runs, (unsigned long long)c.checked, (unsigned long long)c.mismatches,
      (unsigned long long)c.device_errors, (unsigned long long)c.timeouts, (long long)l.retried_requests);
  const auto ms = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", v);
    return std::string(b);
  };
  for (const auto& f : l.faults_injected) {
    std::string when = f.applied_ms < 0 ? "never applied: " + f.not_applied() : "applied at " + ms(f.applied_ms);
    if (f.ended_ms >= 0) when += ", lifted at " + ms(f.ended_ms);
    std::printf("    fault %s (core %d): %s\n", f.event.text.c_str(), f.event.core, when.c_str());
  }
  for (const auto& f : l.failures)
    std::printf("    failed batches: %lld x %s\n", (long long)f.batches, f.reason.c_str());
}

/// The short text summary of a serve result (without --json).
void print_summary(const ServeOpts& o, const serve::Workload& wl, const serve::ServeResult& r) {
  std::printf("%s on %s/%s (%s): batching %s, scheduling %s\n", o.workload.c_str(), o.backend.c_str(),
              wl.config.c_str(), o.mode == "live" ? "live" : "simulated", wl.batching.c_str(),
              r.settings.scheduling.used.c_str());
  std::printf("  requests: %lld submitted, %lld completed, %lld failed, %lld dropped; throughput %.1f req/s\n",
              (long long)r.submitted, (long long)r.completed, (long long)r.failed, (long long)r.dropped,
              r.throughput_rps);
  if (r.live) print_live(*r.live);
  const auto ms = [](const std::optional<double>& us) { return us ? *us / 1000.0 : 0.0; };
  for (const auto& s : r.streams) {
    std::printf("  %-12s p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  SLO %.2f ms met %.1f%%\n", s.name.c_str(),
                ms(s.latency.p50), ms(s.latency.p99), ms(s.latency.p999), s.slo_ms, 100.0 * s.slo_attainment);
    if (s.latency_attribution.p99.requests)
      std::printf("  %-12s %s\n", "",
                  ("p99 tail (" + std::to_string(s.latency_attribution.p99.requests) +
                   " requests): " + serve::shares_text(s.latency_attribution.p99))
                      .c_str());
  }
  std::printf("  fairness: Jain %.3f, ANTT %.3f, STP %.3f; core imbalance %.3f\n", r.fairness.jain, r.fairness.antt,
              r.fairness.stp, r.core_imbalance);
  std::printf("  decision: %s\n", r.memo.decision.c_str());
  for (const auto& c : r.memo.checks)
    if (!c.holds) std::printf("    not: %s: %s\n", c.clause.c_str(), c.detail.c_str());
  std::printf("    owner action: %s\n", r.memo.owner_action.c_str());
}

int serve(const ServeOpts& o) {
  // Output paths are checked first, so a bad one fails before the simulation.
  if (!o.output.empty())
    if (Status s = check_output_file("-o", o.output); !s) return fail(s.error());
  if (!o.trace.empty())
    if (Status s = check_output_file("--trace", o.trace); !s) return fail(s.error());
  if (!o.cache.empty())
    if (Status s = check_output_dir("--cache", o.cache); !s) return fail(s.error());
  auto w = serve::load_workload(o.workload);
  if (!w) return fail(w.error());
  if (Status s = apply_overrides(o, *w); !s) return fail(s.error());
  std::vector<serve::FaultEvent> faults;
  for (const auto& t : o.faults) {
    auto f = serve::parse_fault(t);
    if (!f) return fail(f.error());
    faults.push_back(*f);
  }
  auto cfg = find_config(w->config);
  if (!cfg) return fail(cfg.error());
  for (const auto& f : faults)  // a fault aimed at a core the configuration lacks would never apply
    if (unsigned(f.core) >= (*cfg)->cores)
      return fail("--fault " + excerpt(f.text) + ": core " + std::to_string(f.core) +
                  (f.text.find('/') == std::string::npos ? " (the default CORE)" : "") + " is not in configuration '" +
                  w->config + "' (" + std::to_string((*cfg)->cores) + " cores)");
  auto dev = device_options(o.device, o.backend);
  if (!dev) return fail(dev.error());
  serve::ServiceModel sm(**cfg, o.backend, o.cache, *dev);
  ZooModels zoo{o.cache, {}};
  sm.set_zoo_builder([&zoo](const serve::ModelSpec& m) { return zoo.build(m); });
  serve::ServeOptions so;
  so.backend = o.backend;
  so.load_scale = o.load_scale;
  so.mode = o.mode;
  so.live.completion = o.completion == "poll" ? runtime::Completion::Poll : runtime::Completion::Interrupt;
  so.max_retries = int(o.max_retries);
  so.live.faults = faults;
  Progress progress("serve " + o.workload + " on " + o.backend, true, o.progress);
  double done = 0;  // the fraction of the run so far: measuring happens inside it
  so.on_progress = [&](double f) { progress.update(done = f); };
  // A service time is measured when the run first needs it: each may be a
  // long simulation (rtl), so each is shown, out of the most the run can ask
  // for (every stream's shapes times every batch size).
  size_t most = 0, measured = 0, stretches = 0;
  for (const auto& s : w->streams) most += s.shapes.values.size();
  most *= size_t(std::max(1, w->max_batch));
  sm.set_on_measure([&](const std::string& what, bool stretch) {
    const std::string n = stretch
                              ? "port stretch " + std::to_string(++stretches)
                              : "service time " + std::to_string(++measured) + " of at most " + std::to_string(most);
    progress.update(done,
                    "measuring on " + o.backend + ": " + n + ", " + (stretch ? what.substr(what.find(':') + 2) : what));
  });
  std::vector<serve::BatchSpan> spans;
  if (!o.trace.empty()) so.spans = &spans;
  auto r = serve::run_serve(*w, so, sm);
  progress.finish();
  if (!r) return fail(r.error());
  if (!o.trace.empty()) {
    if (Status s = write_file_atomic(o.trace, serve::batches_trace_json(*w, spans)); !s) return fail(s.error());
    announce_written("serve", o.trace);
    r->trace = std::filesystem::absolute(o.trace).string();  // loom report copies it beside the page
  }
  const std::string text = versioned("serve", r->to_json()).dump(2) + "\n";
  if (!o.output.empty()) {
    if (Status s = write_file_atomic(o.output, text); !s) return fail(s.error());
    announce_written("serve", o.output);
  }
  if (o.progress)
    std::cerr << "loom serve: " << sm.backend_runs() << " service times measured on " << o.backend << ", "
              << sm.disk_hits() << " from the cache\n";
  // --json prints the result (with -o too: the file is a copy); without it
  // stdout gets the short summary below.
  if (o.json) {
    std::cout << text;
    return 0;
  }
  print_summary(o, *w, *r);
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* c = app.add_subcommand(
      "serve", "Serve a workload: simulated over service times measured on a timed backend, or live on the device");
  c->add_option("WORKLOAD", o->workload, "Workload file (.yaml)")->required();
  c->add_option("--backend", o->backend, "Timed backend that measures service times or serves live (tlm, rtl, cosim)");
  c->add_option("--mode", o->mode,
                "Where batches run: sim, the simulator over measured service times (default), or live, on the device");
  c->add_option("--completion", o->completion, "Live: how the host learns a batch ended, interrupt (default) or poll");
  c->add_option("--fault", o->faults,
                "Live: inject a fault under load, KIND@AT_MS[+FOR_MS][/CORE] (repeatable; docs/serving.md)");
  c->add_option("--max-retries", o->max_retries,
                "Live: times a failed batch's requests are queued again before they fail (default 1)");
  add_device_flags(c, o->device);
  c->add_option("--seed", o->seed, "Seed (overrides the workload's)");
  c->add_option("--config", o->config, "Hardware configuration (overrides the workload's)");
  c->add_option("--batching", o->batching, "Batching policy: none, fixed or deadline (overrides the workload's)");
  c->add_option("--scheduling", o->scheduling, "Core scheduling: static, dynamic or auto (overrides the workload's)");
  c->add_option("--max-batch", o->max_batch, "Largest batch (overrides the workload's max_batch)");
  c->add_option("--max-queue-delay-ms", o->max_delay_ms,
                "Longest wait for a batch to fill, fixed batching (overrides the workload's max_queue_delay_ms)");
  c->add_option("--slack-margin", o->slack_margin,
                "Slack kept before a deadline, deadline batching (overrides the workload's slack_margin)");
  c->add_flag("--no-shape-grouping", o->no_grouping,
              "Deadline batching: batch in FIFO order only (shape_grouping: false)");
  c->add_option("--load-scale", o->load_scale, "Multiply every arrival rate by this factor");
  c->add_flag("--admission", o->admission, "Turn admission control on (drops requests predicted to miss their SLO)");
  c->add_flag("--no-admission", o->no_admission, "Turn admission control off (whatever the workload says)");
  c->add_option("--cache", o->cache, "Folder caching measured service times by plan hash");
  c->add_flag("--json", o->json, "Print the result as JSON");
  c->add_option("-o,--output", o->output,
                "Also write the JSON result to this file (stdout: the summary, or the JSON with --json)");
  c->add_flag("--progress", o->progress,
              "Progress on stderr from the start (without it: after 2 s), and the service times measured");
  c->add_option("--trace", o->trace, "Write the batches per core as Chrome trace JSON (opens in Perfetto)");
  c->callback([o] {
    // No exception after the tlm platform has run: the exit code goes back
    // through main() (see deferred_exit_code).
    if (int rc = serve(*o)) deferred_exit_code() = rc;
  });
}

}  // namespace loom::cli
