// The result of a serving run (`loom serve`, and each run of `loom tune`'s
// loop), typed: run_serve (server.cc) fills it, the CLI's summary and the
// tuner read its fields, and ServeResult::to_json writes the result document
// (kind "serve", docs/schema/serve.schema.json) in one place.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/jobs.h"
#include "serve/live.h"
#include "serve/memo.h"
#include "serve/metrics.h"

namespace loom::serve {

/// The scheduling policy asked for, the one used, and (auto only) why.
struct SchedulingChoice {
  std::string requested;              // static | dynamic | auto
  std::string used;                   // static | dynamic
  std::optional<std::string> reason;  // auto: the measures and their limits; null otherwise
  nlohmann::ordered_json to_json() const;
};

/// The run's settings: the workload's knobs after the CLI's overrides, and
/// the run's own options. The result document's first fields (after "kind").
struct ServeSettings {
  /// The workload and where it ran.
  std::string workload, backend, mode, config;
  uint64_t seed = 1;
  double load_scale = 1.0;
  /// Batching.
  std::string batching;
  int max_batch = 0;
  double max_queue_delay_ms = 0, slack_margin = 0;
  bool shape_grouping = true;
  /// Scheduling and admission.
  SchedulingChoice scheduling;
  bool admission = false;
  double duration_ms = 0;
  /// {"kind": "serve", "workload", ..., "duration_ms"}.
  nlohmann::ordered_json to_json() const;
};

/// ONNX streams: the program the stream runs (a bucketed model: its longest
/// bucket's; the segments and host ops are the same at every length).
struct OnnxStreamInfo {
  size_t segments = 0;
  size_t fallback_ops = 0;
  std::vector<std::string> fallback_op_names;  // "node (Op)" of every host op, in order
  double host_us_per_request = 0;              // the host ops' stated cost
  /// Its fields, flat in the stream's object.
  nlohmann::ordered_json to_json() const;
};

/// One bin of a queue-wait histogram: waits in [lo_us, hi_us).
struct WaitBin {
  double lo_us = 0;
  std::optional<double> hi_us;  // null: no upper edge (the last bin)
  int64_t count = 0;
  nlohmann::ordered_json to_json() const;
};

/// A stream's queue waits (arrival to start, completed requests): their
/// summary and a histogram over fixed edges.
struct QueueWait {
  LatencySummary summary;
  std::vector<WaitBin> histogram;
  /// The summary's fields, then "histogram".
  nlohmann::ordered_json to_json() const;
};

/// Latency over time: the completed requests that arrived in one of equal
/// windows of the run (bursts and drift show up here, not in the whole-run
/// percentiles).
struct LatencyWindow {
  double start_ms = 0, end_ms = 0;
  int64_t completed = 0;
  std::optional<double> p50_us, p99_us;  // null: none completed
  nlohmann::ordered_json to_json() const;
};

/// One stream's part of the main run.
struct StreamResult {
  /// What it serves.
  std::string name, model;             // model: the model key (serve::model_key)
  std::optional<OnnxStreamInfo> onnx;  // ONNX models only
  int priority = 0;
  double slo_ms = 0;
  /// Its requests.
  int64_t submitted = 0, completed = 0, dropped = 0, failed = 0;
  double throughput_rps = 0;
  /// Latency (arrival to done) of the completed requests; its cdf is the
  /// result's "latency_cdf_us".
  LatencySummary latency;
  QueueWait queue_wait;
  /// Where its completed requests' latency went, over all, the body and the tail.
  LatencyAttribution latency_attribution;
  double slo_attainment = 1;  // met / submitted (1 with none submitted)
  /// Against the stream alone on the fabric: its mean latency there, and
  /// the slowdown of its mean latency here over it.
  double isolated_mean_latency_us = 0, slowdown = 1;
  std::vector<LatencyWindow> latency_over_time;
  nlohmann::ordered_json to_json() const;
};

/// Live: the times a core was taken out of service after a failed batch.
struct OutOfService {
  int64_t times = 0;
  double us = 0;  // the back-off time, summed
  /// {"out_of_service", "out_of_service_us"}, flat in the core's object.
  nlohmann::ordered_json to_json() const;
};

/// One core over the main run.
struct CoreResult {
  int64_t core = 0;
  unsigned port = 0;  // its memory port
  double busy_us = 0, utilization = 0;
  int64_t batches = 0;
  std::optional<OutOfService> out_of_service;  // live only
  nlohmann::ordered_json to_json() const;
};

/// Fairness over the streams' slowdowns: Jain's index of their inverses,
/// ANTT (mean slowdown) and STP (sum of the inverses).
struct Fairness {
  double jain = 1, antt = 1, stp = 0;
  nlohmann::ordered_json to_json() const;
};

/// One measured service time: a batch of `batch` requests at `seq` alone on a core.
struct ServiceTime {
  std::string model;  // model key
  int64_t seq = 0;
  int batch = 0;
  uint64_t cycles = 0;
  double us = 0;
  nlohmann::ordered_json to_json() const;
};

/// One measured port stretch: a batch while the batches `with` run on the
/// other cores of its memory port.
struct PortStretch {
  std::string model;  // model key
  int64_t seq = 0;
  int batch = 0;
  std::vector<std::tuple<std::string, int64_t, int>> with;  // (model key, seq, batch) of the others
  double stretch = 1;
  uint64_t alone_cycles = 0;           // device cycles of the batch alone on the port
  std::vector<uint64_t> phase_cycles;  // its device cycles at each phase of the others
  nlohmann::ordered_json to_json() const;
};

/// The service times and port stretches the run used, as measured.
struct ServiceTimes {
  std::string backend;
  uint32_t clock_mhz = 0;
  std::vector<ServiceTime> table;
  std::vector<PortStretch> port_stretch;
  nlohmann::ordered_json to_json() const;
};

/// Live: every batch that failed for one reason.
struct BatchFailure {
  std::string reason;
  int64_t batches = 0;
  int64_t requests_failed = 0;  // of its requests, those that failed for good (retries used up)
  nlohmann::ordered_json to_json() const;
};

/// Live: resident memory of the process after `requests` arrivals.
struct RssSample {
  int64_t requests = 0;
  double mib = 0;
  nlohmann::ordered_json to_json() const;
};

/// Live: what the device did (the requests of a failed batch are queued
/// again up to max_retries times, then fail).
struct LiveResult {
  runtime::Completion completion = runtime::Completion::Interrupt;
  std::vector<FaultApplied> faults_injected;  // every fault asked for, applied or not
  std::vector<RssSample> rss;                 // 100 samples over the run
  LiveStats counters;
  int max_retries = 0;
  int64_t retried_requests = 0;
  std::vector<BatchFailure> failures;  // by reason, first seen first
  nlohmann::ordered_json to_json() const;
};

/// A serving run: its settings, the totals and latency over every stream,
/// each stream's part, the cores, fairness and the scheduler's counters,
/// the service times it used and (live) what the device did.
struct ServeResult {
  ServeSettings settings;
  Memo memo;  // the review memo: the result's first field after "kind"
  double makespan_ms = 0;
  /// Totals: submitted = completed + failed + dropped.
  int64_t submitted = 0, completed = 0, failed = 0, dropped = 0;
  double throughput_rps = 0;
  LatencySummary latency;                  // of every completed request
  LatencyAttribution latency_attribution;  // where their latency went
  std::vector<StreamResult> streams;
  std::map<int, int64_t> batch_sizes;  // batch size -> batches
  /// The cores, and the imbalance of their utilizations (max / mean - 1).
  std::vector<CoreResult> cores;
  double core_imbalance = 0;
  Fairness fairness;
  /// The scheduler's counters: deadline batching's fallbacks (deadline
  /// infeasible), batches stolen, waits on max_per_port, gang batches.
  int64_t fallbacks = 0, steals = 0, port_limit_waits = 0, gang_batches = 0;
  /// Service-time stretch per other busy core on a port (null: measured),
  /// and the busy cores allowed per port (0: no limit).
  std::optional<double> port_contention;
  int max_per_port = 0;
  ServiceTimes service_times;
  std::optional<LiveResult> live;    // mode live only
  std::optional<std::string> trace;  // set by `loom serve --trace`: the trace file's absolute path

  /// The result document (without its version header), every field in its
  /// order of docs/schema/serve.schema.json.
  nlohmann::ordered_json to_json() const;
};

}  // namespace loom::serve
