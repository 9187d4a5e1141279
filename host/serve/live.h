// Live serving: the batches the scheduler dispatches run on the device itself
// (runtime::CoreJobs), side by side on their cores, instead of being timed
// by the simulator's model. The scheduler (serve/sim.cc) is the same in
// both modes; only where a batch's end comes from differs. On timed backends
// the clock is the device's: arrivals happen in device time and the host
// reacts at completion interrupts. docs/serving.md "Live mode".
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "device/device.h"
#include "runtime/jobs.h"
#include "serve/service.h"

namespace loom::serve {

/// A fault injected under load (docs/serving.md "Faults under load").
struct FaultEvent {
  std::string kind;   // one of fault_kinds()
  double at_ms = 0;   // device time of the run at which it is injected
  double for_ms = 2;  // memory faults and stalls, a masked interrupt: how long they last
  int core = 1;       // the core it aims at
  std::string text;   // as given (for the result)
};
/// The fault kinds, with what each does.
const std::vector<std::pair<std::string, std::string>>& fault_kinds();
/// Whether a fault of `kind` lasts (FOR_MS): memory faults, stalls, masked
/// interrupts. The others act once.
bool fault_lasts(const std::string& kind);
/// "KIND@AT_MS[+FOR_MS][/CORE]", e.g. "slverr-read@10+5/1". Every field
/// given is checked: none empty, numbers in plain decimal, AT_MS in [0, 1e6]
/// ms, FOR_MS in (0, 1e6] ms and only on a kind that lasts, CORE a whole
/// number below spec::kMaxCores (serve checks it against the configuration).
Expected<FaultEvent> parse_fault(const std::string& text);

struct LiveOptions {
  runtime::Completion completion = runtime::Completion::Interrupt;
  uint64_t poll_cycles = 2000;
  /// A batch running longer than this many times its predicted service time
  /// (and at least 10,000 cycles longer) is aborted: the host-side timeout.
  double timeout_factor = 20.0;
  /// Faults to inject, in any order.
  std::vector<FaultEvent> faults;
};

/// A batch that ended on its core (a gang's: on its lead core).
struct LiveEnd {
  int core = 0;
  uint64_t batch = 0;    // the id given to start()
  double end_us = 0;     // device time since the engine started
  Status status;         // ok, or why the batch failed (device error, wrong output, timeout)
  int failed_core = -1;  // a failed batch: the core the failure was seen on (of a gang, the one that had it)
};

/// When an injected fault took effect.
struct FaultApplied {
  FaultEvent event;
  double applied_ms = -1;    // -1: never (its core had nothing to aim at)
  double ended_ms = -1;      // memory faults, stalls, masked interrupts: when they were lifted
  std::string waiting = {};  // while not applied: what it waits for (empty: its time)
  /// Why a fault never applied, for the report: what it was still waiting
  /// for, or its time, which the run did not reach.
  std::string not_applied() const;
};

struct LiveStats {
  uint64_t device_runs = 0;    // one-core plans run
  uint64_t checked = 0;        // runs whose outputs were compared with the golden model
  uint64_t mismatches = 0;     // runs whose outputs differed
  uint64_t device_errors = 0;  // runs that ended in a device error
  uint64_t timeouts = 0;       // batches aborted by the host-side timeout
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
  Status start(int core, LiveWork work, uint64_t id, double predicted_us) {
    return start(std::vector<int>{core}, std::move(work), id, predicted_us);
  }
  /// The same on the idle cores `gang` (the lead first): each run of the
  /// work is one job on all of them (a plan compiled for that many cores),
  /// and the batch holds every core of the gang until it ends.
  Status start(const std::vector<int>& gang, LiveWork work, uint64_t id, double predicted_us);

  /// Lets the device run until `until_us` (infinite: until a batch ends) or
  /// until one or more batches end, and returns those (empty: the time was
  /// reached first). The device clock is then at the returned ends, or at
  /// `until_us`.
  Expected<std::vector<LiveEnd>> advance(double until_us);

  const LiveStats& stats() const { return stats_; }
  const std::vector<FaultApplied>& faults() const { return faults_; }

 private:
  struct Core {
    bool busy = false;
    int lead = -1;          // the core that runs the batch this core is part of (itself: the batch is its own)
    std::vector<int> gang;  // the lead: every core of its batch, itself first
    uint64_t id = 0;
    LiveWork work;
    size_t next = 0;         // next part to run
    uint64_t resume_at = 0;  // device cycles: host work before the next part (or after the last) ends then
    bool finishing = false;  // every part ran; host work after the last runs until resume_at
    uint64_t started = 0;    // device cycles at the start
    uint64_t deadline = 0;   // device cycles: the host-side timeout
  };
  uint64_t to_cycles(double us) const;
  /// Device cycles since the device's start (timed backends) or wall time
  /// in cycles of the configuration's clock (untimed: a card).
  uint64_t clock() const;
  double to_us(uint64_t cycles) const;
  /// Starts core c's next part now, or sets its resume time when host work
  /// comes first; ends the batch when nothing is left.
  Status step(int c, uint64_t now, std::vector<LiveEnd>& out);
  /// The batch led by core `c` ended: its cores are free.
  void release(int c);
  bool leads(size_t c) const { return cores_[c].busy && cores_[c].lead == int(c); }

  /// Injects the faults due by `now` and lifts those that are over; returns
  /// the next time one is due (device cycles; max: none).
  Expected<uint64_t> inject(uint64_t now);
  Status set_memory_faults();
  /// The plan the cores `gang` run next: `p`, or a broken copy when a fault
  /// aims at one of them (its stream broken).
  const plan::Plan& plan_for(const std::vector<int>& gang, const plan::Plan& p);

  runtime::Device& dev_;
  LiveOptions o_;
  std::vector<FaultApplied> faults_;
  std::vector<std::string> pending_break_;  // per core: "" or the fault kind breaking its next run
  std::vector<bool> corrupt_next_;          // per core: flip a bit of its next run's outputs
  std::vector<std::string> active_mem_;     // memory-fault texts in force
  std::string active_stall_;
  std::deque<plan::Plan> broken_;  // broken copies (stable addresses for CoreJobs' images)
  runtime::CoreJobs jobs_;
  bool timed_ = true;
  std::chrono::steady_clock::time_point wall0_;
  uint64_t c0_ = 0;
  double mhz_ = 1;
  std::vector<Core> cores_;
  LiveStats stats_;
};

}  // namespace loom::serve
