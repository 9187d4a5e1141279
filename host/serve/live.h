// Live serving: the batches the scheduler dispatches run on the device itself
// (runtime::CoreJobs), side by side on their cores, instead of being timed
// by the simulator's model. The scheduler (serve/server.cc) is the same in
// both modes; only where a batch's end comes from differs. On timed backends
// the clock is the device's: arrivals happen in device time and the host
// reacts at completion interrupts. docs/serving.md "Live mode".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/device.h"
#include "runtime/jobs.h"
#include "serve/service.h"

namespace loom::serve {

struct LiveOptions {
  runtime::Completion completion = runtime::Completion::Interrupt;
  uint64_t poll_cycles = 2000;
  /// A batch running longer than this many times its predicted service time
  /// (and at least 10,000 cycles longer) is aborted: the host-side timeout.
  double timeout_factor = 20.0;
};

/// A batch that ended on its core.
struct LiveEnd {
  int core = 0;
  uint64_t batch = 0;  // the id given to start()
  double end_us = 0;   // device time since the engine started
  Status status;       // ok, or why the batch failed (device error, wrong output, timeout)
};

struct LiveStats {
  uint64_t device_runs = 0;      // one-core plans run
  uint64_t checked = 0;          // runs whose outputs were compared with the golden model
  uint64_t mismatches = 0;       // runs whose outputs differed
  uint64_t device_errors = 0;    // runs that ended in a device error
  uint64_t timeouts = 0;         // batches aborted by the host-side timeout
};

class LiveEngine {
 public:
  LiveEngine(runtime::Device& dev, const LiveOptions& o);
  ~LiveEngine();

  /// Device time in microseconds since the engine started.
  double now_us() const;
  bool busy(int core) const;
  size_t running() const;

  /// Starts batch `id`'s work on idle core `core`; `predicted_us` is the
  /// service time the scheduler expects (for the host-side timeout; 0: none).
  Status start(int core, LiveWork work, uint64_t id, double predicted_us);

  /// Lets the device run until `until_us` (infinite: until a batch ends) or
  /// until one or more batches end, and returns those (empty: the time was
  /// reached first). The device clock is then at the returned ends, or at
  /// `until_us`.
  Expected<std::vector<LiveEnd>> advance(double until_us);

  const LiveStats& stats() const { return stats_; }

 private:
  struct Core {
    bool busy = false;
    uint64_t id = 0;
    LiveWork work;
    size_t next = 0;             // next part to run
    uint64_t resume_at = 0;      // device cycles: host work before the next part (or after the last) ends then
    bool finishing = false;      // every part ran; host work after the last runs until resume_at
    uint64_t started = 0;        // device cycles at the start
    uint64_t deadline = 0;       // device cycles: the host-side timeout
  };
  uint64_t to_cycles(double us) const;
  double to_us(uint64_t cycles) const;
  /// Starts core c's next part now, or sets its resume time when host work
  /// comes first; ends the batch when nothing is left.
  Status step(int c, uint64_t now, std::vector<LiveEnd>& out);

  runtime::Device& dev_;
  LiveOptions o_;
  runtime::CoreJobs jobs_;
  uint64_t c0_ = 0;
  double mhz_ = 1;
  std::vector<Core> cores_;
  LiveStats stats_;
};

}  // namespace loom::serve
