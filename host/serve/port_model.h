// The serving simulator's cores and the batches on them, with contention on
// the memory ports modelled as progress rates.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"
#include "serve/service.h"
#include "serve/sim_events.h"
#include "serve/workload.h"

namespace loom::serve::detail {

/// Keeps `e` in `err` unless `err` already holds an earlier error.
inline void keep_first(Status& err, const Error& e) {
  if (err) err = e;
}

/// A batch on one core or on a gang of cores; it is kept with its lead core.
struct RunningBatch {
  size_t si = 0;  // its stream, an index into the run's active streams
  int64_t seq = 1;
  int n = 0;
  double alone = 0, remaining = 0, last = 0, start = 0;
  size_t span = 0;        // the first of its spans, one per core of the gang
  double rate = 1;        // the stretch in force since `last`
  std::vector<int> gang;  // its cores, the lead first
};

/// Port contention as progress rates: a batch needs `alone` us of service
/// by itself; while other batches run on its port it progresses at
/// 1 / stretch, the stretch measured for it with exactly those batches on
/// the port's other cores (ServiceModel::stretch), or 1 + port_contention
/// x (k - 1) for k busy cores when the workload gives it. Whenever a
/// port's batches change, the finish of every batch on it is recomputed
/// and pushed as a done event.
///
/// A batch mapped onto several cores (ServiceModel::width, set by `loom
/// tune`) runs as a gang: it holds all its cores until it ends, and its state
/// lives with its first core (the lead). Stretches are measured for one-core
/// batches: a gang is stretched only by the workload's port_contention, and
/// stretches no one-core batch otherwise.
class PortModel {
 public:
  /// Errors of the stretch measurements go to `err` (the first one is kept).
  PortModel(const Workload& w, const std::vector<int>& active, const spec::HwConfig& cfg, ServiceModel& sm,
            EventQueue& ev, Status& err);

  int cores() const { return cores_; }
  int ports() const { return ports_; }
  int port_of(int core) const { return int(spec::mem_port_of(cfg_, unsigned(core))); }
  bool busy(int core) const { return busy_[size_t(core)]; }
  /// Busy cores on memory port `port`.
  int port_load(int port) const { return port_busy_[size_t(port)]; }
  /// The batch whose lead core is `lead` (the last one, once it has ended).
  RunningBatch& batch(int lead) { return run_[size_t(lead)]; }
  /// Whether a done event of generation `gen` on `lead` is the batch's current finish.
  bool current(int lead, int64_t gen) const { return gen == gen_[size_t(lead)]; }

  /// Puts `b` on its gang's cores, all busy from now on; returns it as kept.
  RunningBatch& occupy(RunningBatch b);
  /// Frees core `core` of the batch it runs.
  void release(int core);
  /// Recomputes, at `now`, the finish of every batch on each port the batch
  /// led by `lead` uses.
  void repace_ports_of(int lead, double now);

 private:
  bool on_port(const RunningBatch& r, int port) const;
  /// The rate at which the batch led by `lead` progresses with the batches now on its ports.
  double stretch(int lead);
  /// Recomputes the finish of every batch on `port` at `now`.
  void repace(int port, double now);

  const Workload& w_;
  const std::vector<int>& active_;
  const spec::HwConfig& cfg_;
  ServiceModel& sm_;
  EventQueue& ev_;
  Status& err_;
  int cores_, ports_;
  std::vector<bool> busy_;
  std::vector<int> port_busy_;
  std::vector<RunningBatch> run_;
  std::vector<int> lead_of_;  // busy cores: the lead core of the batch they run
  std::vector<int64_t> gen_;
};

}  // namespace loom::serve::detail
