// Plan executor: programs windows and command rings through registers,
// streams instructions into the rings as they drain, and reads results back.
#include "runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "runtime/dispatch.h"

namespace loom::runtime {
namespace {

using spec::core_reg_addr;
namespace creg = spec::core_reg;

struct CoreRing {
  uint64_t ring_addr = 0;
  uint32_t size = 0;     // entries, power of two
  uint64_t written = 0;  // stream instructions written so far
  uint32_t tail = 0;     // ring index
  std::vector<spec::Insn> stream;
};

/// The HLS unit calls of a plan (plan::UnitCallInfo), sequenced by the host:
/// each core's stream is released only up to the next cut; once every core
/// has issued all of it, the host starts the call there (or waits for it),
/// then releases the streams up to the following cut. A call so runs beside
/// the cores' share of its layer, after every earlier layer and before any
/// later one.
class UnitPhases {
 public:
  UnitPhases(const plan::Plan& p, uint64_t base) : p_(p), base_(base) {
    for (size_t i = 0; i < p.unit_calls.size(); ++i) {
      events_.push_back({true, i, p.unit_calls[i].start_at});
      events_.push_back({false, i, p.unit_calls[i].wait_at});
    }
    handles_.resize(p.unit_calls.size());
  }
  bool pending() const { return next_ < events_.size(); }
  /// How far core c's stream may be written now.
  uint64_t limit(uint32_t c, uint64_t stream_size) const {
    return pending() && c < events_[next_].at.size() ? std::min<uint64_t>(events_[next_].at[c], stream_size)
                                                     : stream_size;
  }
  /// Starts or waits for the call at the current cut.
  Status advance(Device& dev, const RunOptions& opt) {
    const Event& e = events_[next_++];
    const plan::UnitCallInfo& u = p_.unit_calls[e.call];
    const std::string where = "unit call " + std::to_string(e.call) + " (" + u.kernel + " for layer '" +
                              (u.layer < p_.layers.size() ? p_.layers[u.layer].name : "?") + "')";
    if (!e.start) return Status(dev.wait_unit(handles_[e.call], opt.timeout_cycles)).context(where);
    UnitCall call{u.kernel, u.unit, u.args};
    for (uint32_t a = 0; a < u.ptr_args && a < call.args.size(); ++a) call.args[a] += int64_t(base_);
    auto h = dev.start_unit(call);
    if (!h) return Status(h.error()).context(where);
    handles_[e.call] = *h;
    return Status::ok();
  }

 private:
  struct Event {
    bool start;
    size_t call;
    std::vector<uint32_t> at;
  };
  const plan::Plan& p_;
  uint64_t base_;
  std::vector<Event> events_;
  std::vector<uint64_t> handles_;
  size_t next_ = 0;
};

/// Per-layer cycles (RunOptions::layer_cycles) of a static plan: each core's
/// stream is released one layer at a time, cut where the next layer begins
/// (after the barrier that ends the previous one, so the cores are in step
/// there anyway); the device cycles at each cut end one layer.
class LayerCuts {
 public:
  LayerCuts(const plan::Plan& p, bool want) {
    enabled_ = want && p.placement == "static" && p.tasks.empty() && p.unit_calls.empty() && !p.layers.empty();
    for (const auto& l : p.layers)
      if (l.insn_begin.size() != p.cores.size()) enabled_ = false;
    if (enabled_) layers_ = &p.layers;
  }
  bool enabled() const { return enabled_; }
  bool pending() const { return enabled_ && next_ < layers_->size(); }
  uint64_t limit(uint32_t c, uint64_t stream_size) const {
    return pending() ? std::min<uint64_t>((*layers_)[next_].insn_begin[c], stream_size) : stream_size;
  }
  /// Every core has run its stream up to the cut at `cycles`.
  void advance(uint64_t cycles) {
    if (next_ > 0) cycles_.push_back(cycles - at_);
    if (next_ < layers_->size()) starts_.push_back(cycles);
    at_ = cycles;
    ++next_;
  }
  /// The cycles of every layer, once the run ended at `end`.
  std::vector<uint64_t> finish(uint64_t end, std::vector<uint64_t>* starts) {
    if (!enabled_) return {};
    while (next_ < layers_->size()) advance(at_);  // layers with no instructions left
    cycles_.push_back(end - at_);
    *starts = starts_;
    return cycles_;
  }

 private:
  bool enabled_ = false;
  const std::vector<plan::LayerInfo>* layers_ = nullptr;
  size_t next_ = 0;
  uint64_t at_ = 0;
  std::vector<uint64_t> cycles_, starts_;
};

}  // namespace

std::vector<spec::Insn> relocate(const std::vector<spec::Insn>& stream, uint64_t base) {
  std::vector<spec::Insn> out = stream;
  for (auto& in : out) {
    const auto op = spec::Opcode(spec::get_bits(in, 0, 6));
    if (op == spec::Opcode::LOAD) {
      auto l = spec::LoadInsn::decode(in);
      l.dram_addr += base;
      in = l.encode();
    } else if (op == spec::Opcode::STORE) {
      auto s = spec::StoreInsn::decode(in);
      s.dram_addr += base;
      in = s.encode();
    }
  }
  return out;
}

std::vector<spec::Insn> renumber_semaphores(std::vector<spec::Insn> stream, uint64_t shift) {
  return renumber_semaphores(std::move(stream), [shift](uint64_t s) { return s + shift; });
}

std::vector<spec::Insn> renumber_semaphores(std::vector<spec::Insn> stream,
                                            const std::function<uint64_t(uint64_t)>& map) {
  for (auto& in : stream) {
    const auto op = spec::Opcode(spec::get_bits(in, 0, 6));
    if (op == spec::Opcode::SEM_SIGNAL) {
      auto x = spec::SemSignalInsn::decode(in);
      x.sem_id = map(x.sem_id);
      in = x.encode();
    } else if (op == spec::Opcode::SEM_WAIT) {
      auto x = spec::SemWaitInsn::decode(in);
      x.sem_id = map(x.sem_id);
      in = x.encode();
    }
  }
  return stream;
}

uint64_t max_semaphore(const std::vector<spec::Insn>& stream) {
  uint64_t m = 0;
  for (const auto& in : stream) {
    const auto op = spec::Opcode(spec::get_bits(in, 0, 6));
    if (op == spec::Opcode::SEM_SIGNAL) m = std::max<uint64_t>(m, spec::SemSignalInsn::decode(in).sem_id);
    if (op == spec::Opcode::SEM_WAIT) m = std::max<uint64_t>(m, spec::SemWaitInsn::decode(in).sem_id);
  }
  return m;
}

uint32_t ring_entries_for(uint64_t n, uint32_t depth) {
  uint32_t s = 2;
  while (s < depth && s < n + 1) s <<= 1;
  return std::min(s, depth);
}

void write_reg64(Device& dev, uint32_t lo_addr, uint32_t hi_addr, uint64_t v) {
  dev.write_reg(lo_addr, uint32_t(v));
  dev.write_reg(hi_addr, uint32_t(v >> 32));
}

std::string describe_device_error(uint32_t cause, uint32_t pc, uint64_t written, uint32_t ring_size,
                                  const std::vector<spec::Insn>& stream) {
  const uint64_t idx = written == 0 ? 0 : written - 1 - ((written - 1 - pc) & (ring_size - 1));
  std::string op = "?";
  if (idx < stream.size())
    if (const auto* info = spec::opcode_info(spec::get_bits(stream[idx], 0, 6))) op = std::string(info->name);
  return std::string("device error ")
      .append(device_error_causes(cause))
      .append(" at instruction ")
      .append(std::to_string(idx))
      .append(" (")
      .append(op)
      .append(")");
}

namespace {

/// The device memory of one run, freed when the run ends however it ends.
class Allocations {
 public:
  explicit Allocations(Device& dev) : dev_(dev) {}
  ~Allocations() {
    for (auto a : held_) dev_.free(a);
  }
  Allocations(const Allocations&) = delete;
  Allocations& operator=(const Allocations&) = delete;
  Expected<uint64_t> alloc(uint64_t bytes) {
    auto a = dev_.alloc(bytes);
    if (a) held_.push_back(*a);
    return a;
  }

 private:
  Device& dev_;
  std::vector<uint64_t> held_;
};

/// The plan is for this device: its configuration, its cores, a loom fabric
/// of this spec's major version.
Status check_device(Device& dev, const plan::Plan& p) {
  const auto& cfg = dev.config();
  if (p.config != cfg.name)
    return make_error(
        "plan", "compiled for configuration '" + p.config + "' but the device is '" + std::string(cfg.name) + "'");
  if (p.cores.size() > cfg.cores) return make_error("plan", "uses more cores than the device has");
  if (dev.read_reg(spec::reg::ID) != spec::kIdValue)
    return make_error(std::string(dev.backend()), "ID register mismatch: not a loom fabric");
  if ((dev.read_reg(spec::reg::VERSION) >> 16) != spec::kVersionMajor)
    return make_error(std::string(dev.backend()), "fabric major version differs from this loom's spec");
  return {};
}

/// The plan's constants and inputs written into its image at `base`.
Status load_image(Device& dev, const plan::Plan& p, uint64_t base, const std::map<std::string, Tensor>& inputs) {
  if (!p.constants.empty()) LOOM_TRY(dev.write(base + p.constants_offset, p.constants));
  for (const auto& b : p.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) return make_error("input '" + b.name + "'", "missing");
    const Tensor& t = it->second;
    if (t.dtype != b.dtype || t.shape != b.shape)
      return make_error("input '" + b.name + "'", "expected " + std::string(dtype_name(b.dtype)) + " " +
                                                      shape_str(b.shape) + ", got " + std::string(dtype_name(t.dtype)) +
                                                      " " + shape_str(t.shape));
    LOOM_TRY(dev.write(base + b.offset, t.data));
  }
  return {};
}

/// Resets the plan's cores (`mask`) and gives each its ring and its window
/// over the image at `base`.
Expected<std::vector<CoreRing>> open_rings(Device& dev, const plan::Plan& p, uint64_t base, uint32_t mask,
                                           Allocations& mem) {
  const auto& cfg = dev.config();
  dev.write_reg(spec::reg::SOFT_RESET, mask);
  dev.write_reg(spec::reg::SEM_CLEAR, 0xFFFFFFFFu);
  dev.write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
  dev.write_reg(spec::reg::IRQ_ENABLE,
                (mask << spec::reg::IRQ_ENABLE_DONE_SHIFT) | (mask << spec::reg::IRQ_ENABLE_ERROR_SHIFT));
  std::vector<CoreRing> rings(p.cores.size());
  for (uint32_t c = 0; c < rings.size(); ++c) {
    auto& r = rings[c];
    r.stream = relocate(p.cores[c], base);
    r.size = p.tasks.empty() ? ring_entries_for(r.stream.size(), cfg.ring_depth) : cfg.ring_depth;
    auto ra = mem.alloc(uint64_t(r.size) * spec::kInsnBytes);
    if (!ra) return ra.error();
    r.ring_addr = *ra;
    write_reg64(dev, core_reg_addr(c, creg::RING_BASE_LO), core_reg_addr(c, creg::RING_BASE_HI), r.ring_addr);
    dev.write_reg(core_reg_addr(c, creg::RING_SIZE), r.size);
    write_reg64(dev, core_reg_addr(c, creg::WIN_BASE_LO), core_reg_addr(c, creg::WIN_BASE_HI), base);
    write_reg64(dev, core_reg_addr(c, creg::WIN_LIMIT_LO), core_reg_addr(c, creg::WIN_LIMIT_HI), base + p.memory_bytes);
    dev.write_reg(core_reg_addr(c, creg::CTR_CLEAR), 1);
    r.tail = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
  }
  return rings;
}

/// A dynamic plan: the tasks go to whichever core is free (dispatch_tasks);
/// then every core's stream is its END. `dispatched`: per core.
Status run_tasks(Device& dev, const plan::Plan& p, std::vector<CoreRing>& rings, const RunOptions& opt,
                 std::vector<uint64_t>& dispatched, RunResult& res) {
  std::vector<DispatchRing> dr;
  for (const auto& r : rings) dr.push_back({r.ring_addr, r.size, r.tail});
  DispatchStats ds;
  LOOM_TRY(dispatch_tasks(dev, p, rings[0].stream, dr, opt, &ds));
  for (uint32_t c = 0; c < rings.size(); ++c) {
    rings[c].tail = dr[c].tail;
    rings[c].stream.assign(1, spec::EndInsn{}.encode());
    dispatched[c] = ds.instructions[c];
  }
  res.tasks = p.tasks.size();
  res.quanta = ds.quanta;
  return {};
}

/// Writes every ring as much of its stream as fits up to `limit(c, size)`
/// and rings its doorbell; whether anything was written.
Expected<bool> refill_rings(Device& dev, std::vector<CoreRing>& rings,
                            const std::function<uint64_t(uint32_t, uint64_t)>& limit, bool count_refills,
                            RunResult& res) {
  bool wrote = false;
  for (uint32_t c = 0; c < rings.size(); ++c) {
    auto& r = rings[c];
    const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
    const uint32_t used = (r.tail - head) & (r.size - 1);
    uint64_t room = r.size - 1 - used;
    uint64_t n = std::min<uint64_t>(room, limit(c, r.stream.size()) - r.written);
    while (n > 0) {
      const uint64_t chunk = std::min<uint64_t>(n, r.size - r.tail);
      LOOM_TRY(
          dev.write(r.ring_addr + uint64_t(r.tail) * spec::kInsnBytes,
                    {reinterpret_cast<const uint8_t*>(r.stream.data() + r.written), size_t(chunk * spec::kInsnBytes)}));
      r.written += chunk;
      r.tail = uint32_t((r.tail + chunk) & (r.size - 1));
      n -= chunk;
      wrote = true;
      if (count_refills) ++res.ring_refills;
      dev.write_reg(core_reg_addr(c, creg::RING_TAIL), r.tail);
      dev.write_reg(core_reg_addr(c, creg::DOORBELL), 1);
    }
  }
  return wrote;
}

void report_progress(Device& dev, const std::vector<CoreRing>& rings, const RunOptions& opt) {
  if (!opt.progress) return;
  uint64_t done = 0, total = 0;
  for (uint32_t c = 0; c < rings.size(); ++c) {
    const auto& r = rings[c];
    const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
    done += r.written - ((r.tail - head) & (r.size - 1));  // written minus still in the ring
    total += r.stream.size();
  }
  opt.progress(done, total);
}

/// The cores after a stretch of device time.
struct Poll {
  bool all_done = true;  // every core at END with its whole stream written
  bool at_cut = true;    // every core issued its stream up to its limit
  bool moved = false;    // some ring head moved since the last poll
};

/// Polls every core; a core in error is reset and reported by name.
Expected<Poll> poll_cores(Device& dev, const std::vector<CoreRing>& rings,
                          const std::function<uint64_t(uint32_t, uint64_t)>& limit, std::vector<uint32_t>& last_head) {
  Poll poll;
  for (uint32_t c = 0; c < rings.size(); ++c) {
    const auto& r = rings[c];
    const uint32_t st = dev.read_reg(core_reg_addr(c, creg::STATUS));
    if (st & creg::STATUS_ERROR_MASK) {
      const uint32_t cause = dev.read_reg(core_reg_addr(c, creg::ERR_CAUSE));
      const uint32_t pc = dev.read_reg(core_reg_addr(c, creg::ERR_PC));
      dev.write_reg(spec::reg::SOFT_RESET, 1u << c);
      return make_error(std::string(dev.backend()) + ": core " + std::to_string(c),
                        describe_device_error(cause, pc, r.written, r.size, r.stream));
    }
    const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
    if (head != last_head[c]) poll.moved = true;
    last_head[c] = head;
    if (r.written != limit(c, r.stream.size()) || head != r.tail) poll.at_cut = false;
    if (!(st & creg::STATUS_DONE_MASK) || r.written < r.stream.size()) poll.all_done = false;
  }
  return poll;
}

/// The error of a run that stopped moving: which cores, and why.
Error no_progress(Device& dev, uint32_t ncores, uint32_t mask) {
  std::string who;
  for (uint32_t c = 0; c < ncores; ++c) {
    const uint32_t st = dev.read_reg(core_reg_addr(c, creg::STATUS));
    if (!(st & creg::STATUS_DONE_MASK))
      who += " core " + std::to_string(c) +
             ((st & creg::STATUS_BLOCKED_MASK) ? " (blocked on a semaphore)" : " (stopped before END)");
  }
  dev.write_reg(spec::reg::SOFT_RESET, mask);
  return make_error(std::string(dev.backend()), "device made no progress:" + who);
}

/// Feeds the rings until every core is done: the streams released up to the
/// next HLS unit call's or layer's cut, the call started there, and so on.
Status run_streams(Device& dev, const plan::Plan& p, uint64_t base, std::vector<CoreRing>& rings, uint32_t mask,
                   const RunOptions& opt, uint64_t start_cycles, RunResult& res) {
  std::vector<uint32_t> last_head(rings.size(), ~0u);
  UnitPhases units(p, base);  // HLS unit calls (none: streams run whole)
  LayerCuts cuts(p, opt.layer_cycles && dev.has_time());
  // Layer 0 starts at the run's start; the first cut is where layer 1 begins.
  if (cuts.enabled()) cuts.advance(start_cycles);
  const std::function<uint64_t(uint32_t, uint64_t)> limit = [&](uint32_t c, uint64_t n) {
    return std::min(units.limit(c, n), cuts.limit(c, n));
  };
  for (uint64_t round = 0;; ++round) {
    auto wrote = refill_rings(dev, rings, limit, round > 0, res);
    if (!wrote) return wrote.error();
    LOOM_TRY(dev.run_until_idle(opt.timeout_cycles));
    report_progress(dev, rings, opt);
    auto poll = poll_cores(dev, rings, limit, last_head);
    if (!poll) return poll.error();
    const bool at_cut = poll->at_cut && (units.pending() || cuts.pending());
    if (at_cut && cuts.pending()) {  // every core ran its stream up to the next layer
      cuts.advance(dev.cycles());
      continue;
    }
    if (at_cut) {  // every core issued its stream up to the next unit call's cut
      Status us = units.advance(dev, opt);
      if (!us) return dev.write_reg(spec::reg::SOFT_RESET, mask), us.error();
      continue;
    }
    if (poll->all_done) break;
    if (!*wrote && !poll->moved) return no_progress(dev, uint32_t(rings.size()), mask);
  }
  res.cycles = dev.cycles() - start_cycles;
  res.layer_cycles = cuts.finish(dev.cycles(), &res.layer_start);
  return {};
}

/// The plan's outputs and every core's counters, once the run ended.
Status read_results(Device& dev, const plan::Plan& p, uint64_t base, const std::vector<CoreRing>& rings,
                    const std::vector<uint64_t>& dispatched, RunResult& res) {
  for (const auto& b : p.outputs) {
    Tensor t(b.dtype, b.shape);
    LOOM_TRY(dev.read(base + b.offset, t.data));
    res.outputs.emplace_back(b.name, std::move(t));
  }
  res.cores.resize(rings.size());
  for (uint32_t c = 0; c < rings.size(); ++c) {
    auto& cr = res.cores[c];
    for (unsigned k = 0; k < spec::kNumCounters; ++k) {
      const uint32_t off = core_reg_addr(c, spec::counter_offset(spec::Counter(k)));
      cr.counters[k] = dev.read_reg(off) | (uint64_t(dev.read_reg(off + 4)) << 32);
    }
    cr.instructions = rings[c].stream.size() + dispatched[c];
    cr.done = true;
  }
  return {};
}

}  // namespace

Expected<RunResult> execute(Device& dev, const plan::Plan& p, const std::map<std::string, Tensor>& inputs,
                            const RunOptions& opt) {
  LOOM_TRY(check_device(dev, p));
  // Device memory: the plan's whole image in one allocation, then the rings.
  Allocations mem(dev);
  auto base = mem.alloc(std::max<uint64_t>(p.memory_bytes, 1));
  if (!base) return base.error();
  LOOM_TRY(load_image(dev, p, *base, inputs));
  const uint32_t ncores = uint32_t(p.cores.size());
  uint32_t mask = 0;
  for (uint32_t c = 0; c < ncores; ++c) mask |= 1u << c;
  auto rings = open_rings(dev, p, *base, mask, mem);
  if (!rings) return rings.error();

  RunResult res;
  res.has_time = dev.has_time();
  const uint64_t start_cycles = dev.cycles();
  std::vector<uint64_t> dispatched(ncores, 0);
  if (!p.tasks.empty()) {
    Status s = run_tasks(dev, p, *rings, opt, dispatched, res);
    if (!s) return dev.write_reg(spec::reg::SOFT_RESET, mask), s.error();
  }
  LOOM_TRY(run_streams(dev, p, *base, *rings, mask, opt, start_cycles, res));
  LOOM_TRY(read_results(dev, p, *base, *rings, dispatched, res));
  return res;
}

}  // namespace loom::runtime
