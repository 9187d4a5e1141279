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

Status dispatch_tasks(Device& dev, const plan::Plan& p, const std::vector<spec::Insn>& pool,
                      std::vector<DispatchRing>& rings, const RunOptions& opt, DispatchStats* stats) {
  const size_t ncores = rings.size();
  const size_t n = p.tasks.size();
  const spec::HwConfig& cfg = dev.config();
  const unsigned ports = std::max(1u, cfg.mem_ports);
  if (ncores > dev.config().semaphores) return make_error("dispatch", "more cores than semaphores");
  for (const auto& t : p.tasks)
    if (t.end > pool.size() || t.begin > t.end) return make_error("dispatch", "task outside the task pool");

  // Critical path: a task's cycles plus the longest path after it.
  std::vector<std::vector<uint32_t>> succ(n);
  std::vector<uint32_t> waiting(n, 0);  // dependencies not yet handed to a core
  for (size_t t = 0; t < n; ++t) {
    waiting[t] = uint32_t(p.tasks[t].deps.size());
    for (auto d : p.tasks[t].deps) succ[d].push_back(uint32_t(t));
  }
  std::vector<uint64_t> level(n, 0);
  for (size_t t = n; t-- > 0;) {
    uint64_t after = 0;
    for (auto s : succ[t]) after = std::max(after, level[s]);
    level[t] = p.tasks[t].cycles + after;
  }
  const auto later = [&](uint32_t a, uint32_t b) { return level[a] != level[b] ? level[a] < level[b] : a > b; };
  std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(later)> ready(later);
  for (size_t t = 0; t < n; ++t)
    if (waiting[t] == 0) ready.push(uint32_t(t));

  std::vector<Core> cores(ncores);
  std::vector<int> core_of(n, -1);      // where each task went
  std::vector<uint32_t> ordinal(n, 0);  // its completion count on that core's semaphore
  std::vector<uint8_t> finished(n, 0);
  std::vector<uint32_t> on_port(ports, 0);  // queued tasks per memory port
  stats->tasks.assign(ncores, 0);
  stats->instructions.assign(ncores, 0);
  size_t done = 0;
  uint64_t stretch = 1;
  const uint64_t start = dev.cycles();

  while (done < n) {
    // Hand ready tasks to cores with room: fewest queued first, then the
    // least loaded memory port (the task's own port on a tie), then index.
    while (!ready.empty()) {
      const uint32_t t = ready.top();
      size_t best = ncores;
      for (size_t c = 0; c < ncores; ++c) {
        if (cores[c].queued.size() >= kQueuedPerCore) continue;
        if (best == ncores) {
          best = c;
          continue;
        }
        const auto key = [&](size_t k) {
          return std::tuple(cores[k].queued.size(), on_port[spec::mem_port_of(cfg, unsigned(k))],
                            spec::mem_port_of(cfg, unsigned(k)) != p.tasks[t].port, k);
        };
        if (key(c) < key(best)) best = c;
      }
      if (best == ncores) break;
      ready.pop();
      Core& c = cores[best];
      const auto& task = p.tasks[t];
      // A dependency still running or queued on another core is waited for
      // on the device: its core's semaphore reaches the dependency's
      // ordinal when it finishes. One on this core finished before (the
      // ring runs in order and each task ends in a draining SEM_SIGNAL).
      std::vector<uint32_t> need(ncores, 0);
      for (auto d : task.deps)
        if (!finished[d] && core_of[d] != int(best))
          need[size_t(core_of[d])] = std::max(need[size_t(core_of[d])], ordinal[d]);
      for (size_t k = 0; k < ncores; ++k)
        if (need[k] > 0) {
          spec::SemWaitInsn w;
          w.sem_id = k;
          w.count = need[k];
          c.pending.push_back(w.encode());
        }
      c.pending.insert(c.pending.end(), pool.begin() + task.begin, pool.begin() + task.end);
      spec::SemSignalInsn sig;
      sig.sem_id = best;
      c.pending.push_back(sig.encode());
      c.queued.push_back(t);
      core_of[t] = int(best);
      ordinal[t] = uint32_t(++stats->tasks[best]);
      ++on_port[spec::mem_port_of(cfg, unsigned(best))];
      // Dispatch order is a topological order and every wait names a task
      // handed out earlier, so no set of waits can close a cycle.
      for (auto s : succ[t])
        if (--waiting[s] == 0) ready.push(s);
    }
    // Stream what fits into the rings.
    bool wrote = false;
    for (size_t ci = 0; ci < ncores; ++ci) {
      Core& c = cores[ci];
      DispatchRing& r = rings[ci];
      if (c.sent == c.pending.size()) continue;
      const uint32_t head = dev.read_reg(core_reg_addr(unsigned(ci), creg::RING_HEAD));
      const uint32_t used = (r.tail - head) & (r.size - 1);
      uint64_t room = std::min<uint64_t>(r.size - 1 - used, c.pending.size() - c.sent);
      while (room > 0) {
        const uint64_t chunk = std::min<uint64_t>(room, r.size - r.tail);
        LOOM_TRY(
            dev.write(r.addr + uint64_t(r.tail) * spec::kInsnBytes,
                      {reinterpret_cast<const uint8_t*>(c.pending.data() + c.sent), size_t(chunk * spec::kInsnBytes)}));
        c.sent += chunk;
        stats->instructions[ci] += chunk;
        r.tail = uint32_t((r.tail + chunk) & (r.size - 1));
        room -= chunk;
        wrote = true;
        dev.write_reg(core_reg_addr(unsigned(ci), creg::RING_TAIL), r.tail);
        dev.write_reg(core_reg_addr(unsigned(ci), creg::DOORBELL), 1);
      }
      if (c.sent == c.pending.size()) {
        c.pending.clear();
        c.sent = 0;
      }
    }
    // A quantum: the shortest task at the front of a queue (its core has the
    // next task queued behind it, so it keeps working while the host
    // catches up); untimed backends run until idle.
    // A core whose task did not fit its ring needs a refill after about a
    // ring's share of the task's cycles. A timed model that stops only at
    // its next event (which may lie beyond a short quantum) gets a longer
    // quantum until time moves.
    uint64_t quantum = opt.timeout_cycles;
    if (dev.has_time()) {
      uint64_t shortest = kMaxQuantum * 2;
      for (size_t ci = 0; ci < ncores; ++ci) {
        const Core& c = cores[ci];
        if (c.queued.empty()) continue;
        const auto& front = p.tasks[c.queued.front()];
        shortest = std::min(shortest, front.cycles);
        if (c.sent < c.pending.size())
          shortest = std::min(shortest, front.cycles * rings[ci].size / std::max<uint64_t>(front.end - front.begin, 1));
      }
      quantum = std::min(opt.timeout_cycles, std::clamp<uint64_t>(shortest, kMinQuantum, kMaxQuantum) * stretch);
    }
    ++stats->quanta;
    const uint64_t before = dev.cycles();
    Status ran = dev.run_until_idle(quantum);
    stretch = (dev.has_time() && !ran && dev.cycles() == before) ? std::min<uint64_t>(stretch * 4, 1u << 20) : 1;
    // On a timed backend a quantum that ends with cores still busy is the
    // point of the quantum, not an error (a core error is reported below).
    bool any_error = false;
    for (size_t ci = 0; ci < ncores; ++ci)
      if (dev.read_reg(core_reg_addr(unsigned(ci), creg::STATUS)) & 4u) any_error = true;
    if (!ran && !(dev.has_time() && !any_error)) return ran;

    size_t newly = 0;
    for (size_t ci = 0; ci < ncores; ++ci) {
      Core& c = cores[ci];
      const uint32_t v = dev.read_reg(spec::reg::SEM_VALUE + uint32_t(ci) * spec::reg::SEM_VALUE_STRIDE);
      while (c.finished < v && !c.queued.empty()) {
        const uint32_t t = c.queued.front();
        c.queued.pop_front();
        --on_port[spec::mem_port_of(cfg, unsigned(ci))];
        ++c.finished;
        finished[t] = 1;
        ++done;
        ++newly;
      }
      const uint32_t st = dev.read_reg(core_reg_addr(unsigned(ci), creg::STATUS));
      if (st & creg::STATUS_ERROR_MASK) {
        const uint32_t cause = dev.read_reg(core_reg_addr(unsigned(ci), creg::ERR_CAUSE));
        std::string where = "?";
        if (!c.queued.empty()) {
          const auto& task = p.tasks[c.queued.front()];
          where = std::to_string(c.queued.front()) +
                  (task.layer < p.layers.size() ? " (layer " + p.layers[task.layer].name + ")" : std::string());
        }
        return make_error(std::string(dev.backend()) + ": core " + std::to_string(ci),
                          "device error " + device_error_causes(cause) + " in task " + where);
      }
    }
    if (dev.has_time() && dev.cycles() - start > opt.timeout_cycles)
      return make_error(std::string(dev.backend()), "dynamic dispatch: tasks still running after " +
                                                        std::to_string(opt.timeout_cycles) + " cycles");
    if (newly == 0 && !wrote && !dev.has_time()) {
      bool queued = false;
      for (const auto& c : cores) queued = queued || !c.queued.empty();
      if (!queued && ready.empty())
        return make_error("dispatch", "no task is ready and none is running (a dependency cycle in the plan)");
      if (queued)
        return make_error(std::string(dev.backend()),
                          "dynamic dispatch: the device ran until idle but no task finished");
    }
  }
  return Status::ok();
}

}  // namespace loom::runtime
