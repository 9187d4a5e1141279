// The serving scheduler: a discrete-event loop that replays arrivals, queues,
// batching and per-core dispatch. In the simulator (mode "sim") a batch's end
// comes from service times measured on a timed backend (serve/service.h); in
// mode "live" the batch runs on the device and its end is the device's
// (serve/live.h). docs/serving.md describes what is measured and what is
// simulated.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/status.h"
#include "serve/live.h"
#include "serve/metrics.h"
#include "serve/result.h"
#include "serve/service.h"
#include "serve/workload.h"

namespace loom::serve {

/// One request of the main run, in arrival order (for `loom tune`'s swap check).
struct ServedRequest {
  int stream = 0;
  double arrival_us = 0, start_us = -1, done_us = -1;
  int64_t seq = 1;
  bool dropped = false;
  LatencyParts parts;  // completed: where done - arrival went
};

/// One batch of the main run on one core, in simulated time (for timelines).
/// A batch on several cores (a gang) has one span per core, in order, the
/// first (member 0) on its lead core.
struct BatchSpan {
  int core = 0, stream = 0, requests = 0;
  int64_t seq = 1;  // the padded sequence length the batch ran at
  double start_us = 0, end_us = 0;
  int cores = 1, member = 0;  // the batch's cores, and which of them this span is
};

struct ServeOptions {
  std::string backend = "tlm";
  /// "sim": the discrete-event simulator over measured service times (the
  /// default); "live": every batch runs on the device (serve/live.h).
  std::string mode = "sim";
  LiveOptions live;
  /// Live: how often a failed batch's requests are queued again before they
  /// fail with its reason.
  int max_retries = 1;
  double load_scale = 1.0;  // multiplies every arrival rate (sweeps)
  /// Called now and then with the fraction of the work done (arrivals
  /// replayed over the main run, then the isolated runs), for a progress bar.
  std::function<void(double)> on_progress;
  std::vector<ServedRequest>* requests = nullptr;  // if set: filled with the main run's requests
  std::vector<BatchSpan>* spans = nullptr;         // if set: filled with the main run's batches per core
};

/// Runs the workload (its batching/scheduling fields already resolved) and
/// returns its typed result (ServeResult::to_json writes the document).
/// Fails if any request is unaccounted for.
Expected<ServeResult> run_serve(const Workload& w, const ServeOptions& o, ServiceModel& sm);

/// Generates every stream's arrivals as the simulator does (budgets checked
/// first) and returns their counts in [from_us, to_us), in stream order.
Expected<std::vector<int64_t>> arrival_counts(const Workload& w, double load_scale, double from_us = 0,
                                              double to_us = std::numeric_limits<double>::infinity());

/// Chrome trace-event JSON (Perfetto) of a run's batches: one track per core,
/// one interval per batch named after its stream; timestamps in microseconds
/// of simulated device time.
std::string batches_trace_json(const Workload& w, const std::vector<BatchSpan>& spans);

}  // namespace loom::serve
