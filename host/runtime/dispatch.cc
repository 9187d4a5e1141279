// Host-side task queues for dynamic plans (runtime/dispatch.h).
#include "runtime/dispatch.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <string>
#include <tuple>

namespace loom::runtime {
namespace {

using spec::core_reg_addr;
namespace creg = spec::core_reg;

constexpr size_t kQueuedPerCore = 2;   // a second task hides the host's reaction time
constexpr uint64_t kMinQuantum = 256;  // cycles
constexpr uint64_t kMaxQuantum = 1u << 20;

struct Core {
  std::deque<uint32_t> queued;  // tasks written to the ring, oldest first
  std::vector<spec::Insn> pending;
  size_t sent = 0;        // of pending
  uint32_t finished = 0;  // tasks this core's semaphore has counted
};

}  // namespace

std::string device_error_causes(uint32_t cause) {
  std::string s;
  for (size_t b = 0; b < spec::kErrorNames.size(); ++b)
    if (cause & (1u << b)) s.append(s.empty() ? "" : "|").append(spec::kErrorNames[b]);
  return s.empty() ? "unknown" : s;
}

namespace {

/// One dynamic run: the ready tasks by critical path, each core's queue and
/// ring, and the device time between the host's turns.
class Dispatcher {
 public:
  Dispatcher(Device& dev, const plan::Plan& p, const std::vector<spec::Insn>& pool, std::vector<DispatchRing>& rings,
             const RunOptions& opt, DispatchStats* stats)
      : dev_(dev),
        p_(p),
        pool_(pool),
        rings_(rings),
        opt_(opt),
        stats_(stats),
        cfg_(dev.config()),
        ncores_(rings.size()),
        n_(p.tasks.size()),
        ready_(Later{&level_}),
        cores_(ncores_),
        core_of_(n_, -1),
        ordinal_(n_, 0),
        finished_(n_, 0),
        on_port_(std::max(1u, cfg_.mem_ports), 0),
        start_(dev.cycles()) {}

  Status run() {
    if (ncores_ > cfg_.semaphores) return make_error("dispatch", "more cores than semaphores");
    for (const auto& t : p_.tasks)
      if (t.end > pool_.size() || t.begin > t.end) return make_error("dispatch", "task outside the task pool");
    order_by_critical_path();
    stats_->tasks.assign(ncores_, 0);
    stats_->instructions.assign(ncores_, 0);
    while (done_ < n_) {
      hand_out();
      auto wrote = stream();
      if (!wrote) return wrote.error();
      LOOM_TRY(run_quantum());
      auto newly = retire();
      if (!newly) return newly.error();
      if (dev_.has_time() && dev_.cycles() - start_ > opt_.timeout_cycles)
        return make_error(std::string(dev_.backend()), "dynamic dispatch: tasks still running after " +
                                                           std::to_string(opt_.timeout_cycles) + " cycles");
      if (*newly == 0 && !*wrote && !dev_.has_time()) LOOM_TRY(stalled());
    }
    return Status::ok();
  }

 private:
  struct Later {
    const std::vector<uint64_t>* level;
    bool operator()(uint32_t a, uint32_t b) const {
      return (*level)[a] != (*level)[b] ? (*level)[a] < (*level)[b] : a > b;
    }
  };

  unsigned port_of(size_t core) const { return spec::mem_port_of(cfg_, unsigned(core)); }

  /// Critical path: a task's cycles plus the longest path after it; the
  /// tasks without dependencies are ready.
  void order_by_critical_path() {
    succ_.assign(n_, {});
    waiting_.assign(n_, 0);
    for (size_t t = 0; t < n_; ++t) {
      waiting_[t] = uint32_t(p_.tasks[t].deps.size());
      for (auto d : p_.tasks[t].deps) succ_[d].push_back(uint32_t(t));
    }
    level_.assign(n_, 0);
    for (size_t t = n_; t-- > 0;) {
      uint64_t after = 0;
      for (auto s : succ_[t]) after = std::max(after, level_[s]);
      level_[t] = p_.tasks[t].cycles + after;
    }
    for (size_t t = 0; t < n_; ++t)
      if (waiting_[t] == 0) ready_.push(uint32_t(t));
  }

  /// The core a ready task goes to: fewest queued first, then the least
  /// loaded memory port (the task's own port on a tie), then index; none
  /// (ncores) when every queue is full.
  size_t pick_core(uint32_t t) const {
    size_t best = ncores_;
    const auto key = [&](size_t k) {
      return std::tuple(cores_[k].queued.size(), on_port_[port_of(k)], port_of(k) != p_.tasks[t].port, k);
    };
    for (size_t c = 0; c < ncores_; ++c) {
      if (cores_[c].queued.size() >= kQueuedPerCore) continue;
      if (best == ncores_ || key(c) < key(best)) best = c;
    }
    return best;
  }

  /// Hands ready tasks to cores with room.
  void hand_out() {
    while (!ready_.empty()) {
      const uint32_t t = ready_.top();
      const size_t best = pick_core(t);
      if (best == ncores_) break;
      ready_.pop();
      Core& c = cores_[best];
      const auto& task = p_.tasks[t];
      // A dependency still running or queued on another core is waited for
      // on the device: its core's semaphore reaches the dependency's
      // ordinal when it finishes. One on this core finished before (the
      // ring runs in order and each task ends in a draining SEM_SIGNAL).
      std::vector<uint32_t> need(ncores_, 0);
      for (auto d : task.deps)
        if (!finished_[d] && core_of_[d] != int(best))
          need[size_t(core_of_[d])] = std::max(need[size_t(core_of_[d])], ordinal_[d]);
      for (size_t k = 0; k < ncores_; ++k)
        if (need[k] > 0) {
          spec::SemWaitInsn w;
          w.sem_id = k;
          w.count = need[k];
          c.pending.push_back(w.encode());
        }
      c.pending.insert(c.pending.end(), pool_.begin() + task.begin, pool_.begin() + task.end);
      spec::SemSignalInsn sig;
      sig.sem_id = best;
      c.pending.push_back(sig.encode());
      c.queued.push_back(t);
      core_of_[t] = int(best);
      ordinal_[t] = uint32_t(++stats_->tasks[best]);
      ++on_port_[port_of(best)];
      // Dispatch order is a topological order and every wait names a task
      // handed out earlier, so no set of waits can close a cycle.
      for (auto s : succ_[t])
        if (--waiting_[s] == 0) ready_.push(s);
    }
  }

  /// Streams what fits into the rings; whether anything was written.
  Expected<bool> stream() {
    bool wrote = false;
    for (size_t ci = 0; ci < ncores_; ++ci) {
      Core& c = cores_[ci];
      DispatchRing& r = rings_[ci];
      if (c.sent == c.pending.size()) continue;
      const uint32_t head = dev_.read_reg(core_reg_addr(unsigned(ci), creg::RING_HEAD));
      const uint32_t used = (r.tail - head) & (r.size - 1);
      uint64_t room = std::min<uint64_t>(r.size - 1 - used, c.pending.size() - c.sent);
      while (room > 0) {
        const uint64_t chunk = std::min<uint64_t>(room, r.size - r.tail);
        LOOM_TRY(dev_.write(
            r.addr + uint64_t(r.tail) * spec::kInsnBytes,
            {reinterpret_cast<const uint8_t*>(c.pending.data() + c.sent), size_t(chunk * spec::kInsnBytes)}));
        c.sent += chunk;
        stats_->instructions[ci] += chunk;
        r.tail = uint32_t((r.tail + chunk) & (r.size - 1));
        room -= chunk;
        wrote = true;
        dev_.write_reg(core_reg_addr(unsigned(ci), creg::RING_TAIL), r.tail);
        dev_.write_reg(core_reg_addr(unsigned(ci), creg::DOORBELL), 1);
      }
      if (c.sent == c.pending.size()) {
        c.pending.clear();
        c.sent = 0;
      }
    }
    return wrote;
  }

  /// A quantum: the shortest task at the front of a queue (its core has the
  /// next task queued behind it, so it keeps working while the host catches
  /// up); untimed backends run until idle. A core whose task did not fit its
  /// ring needs a refill after about a ring's share of the task's cycles. A
  /// timed model that stops only at its next event (which may lie beyond a
  /// short quantum) gets a longer quantum until time moves.
  Status run_quantum() {
    uint64_t quantum = opt_.timeout_cycles;
    if (dev_.has_time()) {
      uint64_t shortest = kMaxQuantum * 2;
      for (size_t ci = 0; ci < ncores_; ++ci) {
        const Core& c = cores_[ci];
        if (c.queued.empty()) continue;
        const auto& front = p_.tasks[c.queued.front()];
        shortest = std::min(shortest, front.cycles);
        if (c.sent < c.pending.size())
          shortest =
              std::min(shortest, front.cycles * rings_[ci].size / std::max<uint64_t>(front.end - front.begin, 1));
      }
      quantum = std::min(opt_.timeout_cycles, std::clamp<uint64_t>(shortest, kMinQuantum, kMaxQuantum) * stretch_);
    }
    ++stats_->quanta;
    const uint64_t before = dev_.cycles();
    Status ran = dev_.run_until_idle(quantum);
    stretch_ = (dev_.has_time() && !ran && dev_.cycles() == before) ? std::min<uint64_t>(stretch_ * 4, 1u << 20) : 1;
    // On a timed backend a quantum that ends with cores still busy is the
    // point of the quantum, not an error (a core error is reported by retire).
    bool any_error = false;
    for (size_t ci = 0; ci < ncores_; ++ci)
      if (dev_.read_reg(core_reg_addr(unsigned(ci), creg::STATUS)) & 4u) any_error = true;
    if (!ran && !(dev_.has_time() && !any_error)) return ran;
    return {};
  }

  /// Retires the tasks each core's semaphore counts as finished; a core in
  /// error is reported with its task. How many finished.
  Expected<size_t> retire() {
    size_t newly = 0;
    for (size_t ci = 0; ci < ncores_; ++ci) {
      Core& c = cores_[ci];
      const uint32_t v = dev_.read_reg(spec::reg::SEM_VALUE + uint32_t(ci) * spec::reg::SEM_VALUE_STRIDE);
      while (c.finished < v && !c.queued.empty()) {
        const uint32_t t = c.queued.front();
        c.queued.pop_front();
        --on_port_[port_of(ci)];
        ++c.finished;
        finished_[t] = 1;
        ++done_;
        ++newly;
      }
      const uint32_t st = dev_.read_reg(core_reg_addr(unsigned(ci), creg::STATUS));
      if (st & creg::STATUS_ERROR_MASK) {
        const uint32_t cause = dev_.read_reg(core_reg_addr(unsigned(ci), creg::ERR_CAUSE));
        std::string where = "?";
        if (!c.queued.empty()) {
          const auto& task = p_.tasks[c.queued.front()];
          where = std::to_string(c.queued.front()) +
                  (task.layer < p_.layers.size() ? " (layer " + p_.layers[task.layer].name + ")" : std::string());
        }
        return make_error(std::string(dev_.backend()) + ": core " + std::to_string(ci),
                          "device error " + device_error_causes(cause) + " in task " + where);
      }
    }
    return newly;
  }

  /// An untimed device that ran until idle with nothing finished or written.
  Status stalled() const {
    bool queued = false;
    for (const auto& c : cores_) queued = queued || !c.queued.empty();
    if (!queued && ready_.empty())
      return make_error("dispatch", "no task is ready and none is running (a dependency cycle in the plan)");
    if (queued)
      return make_error(std::string(dev_.backend()),
                        "dynamic dispatch: the device ran until idle but no task finished");
    return {};
  }

  Device& dev_;
  const plan::Plan& p_;
  const std::vector<spec::Insn>& pool_;
  std::vector<DispatchRing>& rings_;
  const RunOptions& opt_;
  DispatchStats* stats_;
  const spec::HwConfig& cfg_;
  const size_t ncores_, n_;
  std::vector<std::vector<uint32_t>> succ_;
  std::vector<uint32_t> waiting_;  // dependencies not yet handed to a core
  std::vector<uint64_t> level_;
  std::priority_queue<uint32_t, std::vector<uint32_t>, Later> ready_;
  std::vector<Core> cores_;
  std::vector<int> core_of_;       // where each task went
  std::vector<uint32_t> ordinal_;  // its completion count on that core's semaphore
  std::vector<uint8_t> finished_;
  std::vector<uint32_t> on_port_;  // queued tasks per memory port
  size_t done_ = 0;
  uint64_t stretch_ = 1;
  const uint64_t start_;
};

}  // namespace

Status dispatch_tasks(Device& dev, const plan::Plan& p, const std::vector<spec::Insn>& pool,
                      std::vector<DispatchRing>& rings, const RunOptions& opt, DispatchStats* stats) {
  return Dispatcher(dev, p, pool, rings, opt, stats).run();
}

}  // namespace loom::runtime
