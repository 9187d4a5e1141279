// The serving scheduler's discrete-event loop (server.h): arrivals, queues,
// batching decisions, core and gang choice, and in live mode the glue to the
// device's engine. Internal to loom_serve.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/status.h"
#include "serve/live.h"
#include "serve/metrics.h"
#include "serve/policy.h"
#include "serve/port_model.h"
#include "serve/server.h"
#include "serve/sim_events.h"

namespace loom::serve::detail {

/// What held a queued request, as Sim::held_ counts it: no core free
/// (queueing), a core free that its stream may use (batching: the policy
/// filling or holding the batch, or a gang gathering its cores), or a core
/// free that its stream may not use (imbalance: another stream's home core,
/// or a port at its max_per_port limit).
enum HeldKind : size_t { kHeldQueueing, kHeldBatching, kHeldImbalance, kHeldKinds };

struct Req {
  int stream = 0;
  double arrival = 0, deadline = 0;
  int64_t seq = 1;
  double start = -1, done = -1;
  bool dropped = false;
  bool failed = false;                       // live: its batch failed more often than max_retries allows
  int attempts = 0;                          // live: batches it was part of that failed
  int reason = -1;                           // live, failed: index into SimOut::fail_reasons
  LatencyParts parts;                        // completed: where done - arrival went
  std::array<double, kHeldKinds> held_at{};  // its stream's Sim::held_ when it was queued
};

/// The starting state of stream `idx`'s generator under `seed`: a hash of
/// both, so that no two (seed, stream) pairs share a stretch of draws.
uint64_t stream_state(uint64_t seed, int idx);
/// Arrivals of one stream, seeded by (workload seed, stream index) only, so a
/// stream sees the same requests alone and in any mix.
std::vector<Req> arrivals(const Stream& s, int idx, uint64_t seed, double duration_us, double scale);

enum class Sched { Static, Dynamic };

struct SimOut {
  std::vector<Req> reqs;
  std::vector<double> core_busy;
  std::vector<int64_t> core_batches;
  std::map<int, int64_t> batch_hist;
  std::vector<BatchSpan> spans;
  int64_t fallbacks = 0, steals = 0, port_limit_waits = 0;
  int64_t gang_batches = 0;  // batches run on several cores at once
  double makespan = 0;
  // Live mode.
  std::vector<std::string> fail_reasons;  // distinct reasons a batch failed, first seen first
  std::map<int, int64_t> failed_batches;  // reason index -> batches
  int64_t retried = 0;                    // requests queued again after their batch failed
  std::vector<int64_t> quarantines;       // per core: times taken out of service after a failure
  std::vector<double> quarantine_us;      // per core: back-off time, summed
  LiveStats live;
  std::vector<FaultApplied> faults;
  std::vector<std::pair<int64_t, double>> rss;  // live: (requests arrived, resident MiB), 100 samples
};

/// A stream's waiting requests: their indices into SimOut::reqs, and the view
/// of them the batching policy decides on, kept in step.
struct StreamQueue {
  std::deque<int> ids;
  std::deque<QueuedReq> view;

  size_t size() const { return ids.size(); }
  bool empty() const { return ids.empty(); }
  void push_back(int id, const Req& r) {
    ids.push_back(id);
    view.push_back({r.arrival, r.deadline, r.seq});
  }
  void push_front(int id, const Req& r) {
    ids.push_front(id);
    view.push_front({r.arrival, r.deadline, r.seq});
  }
  /// Removes and returns the requests `dec` batches: the first dec.n, or
  /// those at positions dec.idx (ascending).
  std::vector<int> take(const BatchDecision& dec);
};

/// Live: a core whose batch failed on the device is out of service for a
/// back-off (0.5 ms, doubling with each failure in a row, at most 8 ms; a
/// success resets it), so retried requests go to the other cores, as a
/// circuit breaker does.
class CoreBreaker {
 public:
  explicit CoreBreaker(int cores)
      : out_until_(size_t(cores), -std::numeric_limits<double>::infinity()), fails_in_row_(size_t(cores), 0) {}
  bool in_service(int core, double now) const { return now >= out_until_[size_t(core)]; }
  void succeeded(int core) { fails_in_row_[size_t(core)] = 0; }
  /// Takes `core` out of service after a failure at `now`; returns the back-off in us.
  double failed(int core, double now) {
    const int n = std::min(++fails_in_row_[size_t(core)], 5);
    const double backoff = 500.0 * double(1 << (n - 1));
    out_until_[size_t(core)] = now + backoff;
    return backoff;
  }

 private:
  std::vector<double> out_until_;
  std::vector<int> fails_in_row_;
};

/// One run of the scheduler over a set of the workload's streams (all of them,
/// or one for its isolated latency). A Sim runs once.
class Sim {
 public:
  Sim(const Workload& w, const std::vector<int>& active, Sched sched, const spec::HwConfig& cfg, ServiceModel& sm,
      const ServeOptions& o, std::function<void(size_t arrived, size_t total)> tick = {});

  Expected<SimOut> run(Batching batching);

 private:
  // Set-up.
  /// Static partition: each active stream's home cores (`count_`) and each core's home stream (`home_`, -1: none).
  Status partition();
  /// Every active stream's arrivals, merged in time order, into out_.reqs.
  Status generate_arrivals();
  /// Per-core counters and per-stream batching parameters.
  void init_run(Batching batching);
  /// Live: measures every service time and compiles every plan the run may
  /// ask for, then hands the device to the engine.
  Status start_live();

  // The event loop.
  Status event_loop();
  /// Live: runs the device until the next event and finishes the batches that
  /// ended before it; false when none did.
  Expected<bool> finish_live_ends();
  /// A request arrives: queued, or dropped by admission control.
  void arrive(int idx, double now);
  /// Dispatches batches at `now` while a stream has one and a core can take it.
  void schedule(double now);

  // Scheduling decisions.
  double service_us(size_t si, int64_t seq, int n);
  bool usable(int core, double now) const;
  /// The batching decision of every stream with waiting requests (wake-ups
  /// pushed for those that wait); false when no stream has a batch.
  bool decide_batches(double now, std::vector<BatchDecision>& dec);
  /// Static scheduling: the first usable core whose home stream has a batch, and that stream.
  std::pair<int, size_t> choose_static(double now, const std::vector<BatchDecision>& dec) const;
  /// Dynamic scheduling: the usable core on the least busy memory port within
  /// max_per_port (-1: none), counting a wait on the limit.
  int choose_dynamic_core(double now);
  /// Dynamic scheduling: the stream whose batch goes to `core`.
  size_t choose_dynamic_stream(int core, const std::vector<BatchDecision>& dec) const;
  /// The padded length of the batch `dec` would take from stream si's queue.
  int64_t batch_seq(size_t si, const BatchDecision& dec) const;
  /// The cores stream `pick`'s batch runs on, `core` first: more than one when
  /// it is mapped onto a gang. Empty when not enough cores are free yet.
  std::vector<int> gather_gang(int core, size_t pick, const BatchDecision& dec, double now);

  // Tail attribution.
  /// Time moves to `now`: every stream with queued requests adds the time
  /// since the last call to the kind of holding its queue saw (held_).
  void advance(double now);
  /// A batch ended well on `core` at `now`: each request's latency split
  /// into its parts (Req::parts).
  void attribute(int core, double now);

  // Batches.
  /// Starts stream si's batch `dec` on `gang` at `now`.
  void dispatch(const std::vector<int>& gang, size_t si, const BatchDecision& dec, double now);
  /// A batch ended on `core` (a gang's lead) at `now`: its requests are
  /// done, or (live, a failed batch) retried or failed; `failed_core`: the
  /// core the failure was seen on (-1: `core`).
  void finish(int core, double now, const Status& st, int failed_core = -1);
  /// Live: the batch led by `core` failed at `now`; `failed_core` (of a
  /// gang, the core that had the failure) goes out of service and the
  /// batch's requests are queued again at the front of their stream's
  /// queue, or fail with the reason once they have been retried max_retries
  /// times.
  void fail_batch(int core, int failed_core, size_t si, double now, const Status& st);

  const Workload& w_;
  std::vector<int> active_;
  Sched sched_;
  const spec::HwConfig& cfg_;
  ServiceModel& sm_;
  const ServeOptions& o_;
  std::function<void(size_t, size_t)> tick_;

  Batching batching_ = Batching::Fixed;
  SimOut out_;
  Status err_;  // the first error of the run; the loop stops at the next check
  EventQueue ev_;
  PortModel ports_;
  CoreBreaker breaker_;
  std::vector<int> home_, count_;
  std::vector<StreamQueue> queue_;
  std::vector<BatchParams> bp_;
  std::vector<double> wake_;                          // per stream: its pending wake-up (inf: none)
  std::vector<std::vector<int>> batch_reqs_;          // per lead core: the requests of its batch
  std::vector<double> batch_host_us_;                 // per lead core: its batch's host-op time
  std::vector<std::array<double, kHeldKinds>> held_;  // per stream: time its queue was held, by kind
  std::vector<char> home_free_;                       // per stream, scratch of advance()
  double clock_ = 0;                                  // where advance() last moved time to
  std::unique_ptr<LiveEngine> live_;
  uint64_t next_batch_ = 1;               // live: the id of the next batch started
  size_t arrived_ = 0, next_report_ = 0;  // arrivals so far, and at which the next progress report is due
};

}  // namespace loom::serve::detail
