// The serving simulator: a discrete-event loop over simulated device time that
// replays arrivals, queues, batching and per-core dispatch, with service times
// measured on a timed backend (serve/service.h). docs/serving.md describes
// what is measured and what is simulated.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "serve/service.h"
#include "serve/workload.h"

namespace loom::serve {

struct ServeOptions {
  std::string backend = "tlm";
  double load_scale = 1.0;  // multiplies every arrival rate (sweeps)
  bool progress = false;    // progress lines on stderr
};

/// Runs the workload (its batching/scheduling fields already resolved) and
/// returns the result document. Fails if any request is unaccounted for.
Expected<nlohmann::ordered_json> run_serve(const Workload& w, const ServeOptions& o, ServiceModel& sm);

}  // namespace loom::serve
