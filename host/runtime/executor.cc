// Plan executor: programs windows and command rings through registers,
// streams instructions into the rings as they drain, and reads results back.
#include "runtime/executor.h"

#include <algorithm>
#include <cstring>

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
  for (auto& in : stream) {
    const auto op = spec::Opcode(spec::get_bits(in, 0, 6));
    if (op == spec::Opcode::SEM_SIGNAL) {
      auto x = spec::SemSignalInsn::decode(in);
      x.sem_id += shift;
      in = x.encode();
    } else if (op == spec::Opcode::SEM_WAIT) {
      auto x = spec::SemWaitInsn::decode(in);
      x.sem_id += shift;
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

Expected<RunResult> execute(Device& dev, const plan::Plan& p, const std::map<std::string, Tensor>& inputs,
                            const RunOptions& opt) {
  const auto& cfg = dev.config();
  if (p.config != cfg.name)
    return make_error(
        "plan", "compiled for configuration '" + p.config + "' but the device is '" + std::string(cfg.name) + "'");
  if (p.cores.size() > cfg.cores) return make_error("plan", "uses more cores than the device has");
  if (dev.read_reg(spec::reg::ID) != spec::kIdValue)
    return make_error(std::string(dev.backend()), "ID register mismatch: not a loom fabric");
  if ((dev.read_reg(spec::reg::VERSION) >> 16) != spec::kVersionMajor)
    return make_error(std::string(dev.backend()), "fabric major version differs from this loom's spec");

  // Device memory: the plan's whole image in one allocation.
  auto base_or = dev.alloc(std::max<uint64_t>(p.memory_bytes, 1));
  if (!base_or) return base_or.error();
  const uint64_t base = *base_or;
  std::vector<uint64_t> allocations{base};
  auto cleanup = [&] {
    for (auto a : allocations) dev.free(a);
  };

  if (!p.constants.empty()) {
    Status s = dev.write(base + p.constants_offset, p.constants);
    if (!s) return cleanup(), s.error();
  }
  for (const auto& b : p.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) return cleanup(), make_error("input '" + b.name + "'", "missing");
    const Tensor& t = it->second;
    if (t.dtype != b.dtype || t.shape != b.shape)
      return cleanup(), make_error("input '" + b.name + "'",
                                   "expected " + std::string(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                                       ", got " + std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape));
    Status s = dev.write(base + b.offset, t.data);
    if (!s) return cleanup(), s.error();
  }

  // Rings and windows, one per core used by the plan.
  const uint32_t ncores = uint32_t(p.cores.size());
  std::vector<CoreRing> rings(ncores);
  uint32_t mask = 0;
  for (uint32_t c = 0; c < ncores; ++c) mask |= 1u << c;
  dev.write_reg(spec::reg::SOFT_RESET, mask);
  dev.write_reg(spec::reg::SEM_CLEAR, 0xFFFFFFFFu);
  dev.write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
  dev.write_reg(spec::reg::IRQ_ENABLE,
                (mask << spec::reg::IRQ_ENABLE_DONE_SHIFT) | (mask << spec::reg::IRQ_ENABLE_ERROR_SHIFT));
  for (uint32_t c = 0; c < ncores; ++c) {
    auto& r = rings[c];
    r.stream = relocate(p.cores[c], base);
    r.size = p.tasks.empty() ? ring_entries_for(r.stream.size(), cfg.ring_depth) : cfg.ring_depth;
    auto ra = dev.alloc(uint64_t(r.size) * spec::kInsnBytes);
    if (!ra) return cleanup(), ra.error();
    allocations.push_back(*ra);
    r.ring_addr = *ra;
    write_reg64(dev, core_reg_addr(c, creg::RING_BASE_LO), core_reg_addr(c, creg::RING_BASE_HI), r.ring_addr);
    dev.write_reg(core_reg_addr(c, creg::RING_SIZE), r.size);
    write_reg64(dev, core_reg_addr(c, creg::WIN_BASE_LO), core_reg_addr(c, creg::WIN_BASE_HI), base);
    write_reg64(dev, core_reg_addr(c, creg::WIN_LIMIT_LO), core_reg_addr(c, creg::WIN_LIMIT_HI), base + p.memory_bytes);
    dev.write_reg(core_reg_addr(c, creg::CTR_CLEAR), 1);
    r.tail = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
  }

  RunResult res;
  res.has_time = dev.has_time();
  const uint64_t start_cycles = dev.cycles();
  std::vector<uint64_t> dispatched(ncores, 0);
  if (!p.tasks.empty()) {
    // A dynamic plan: the tasks go to whichever core is free; then every
    // core gets its END (the streams below).
    std::vector<DispatchRing> dr;
    for (const auto& r : rings) dr.push_back({r.ring_addr, r.size, r.tail});
    DispatchStats ds;
    Status s = dispatch_tasks(dev, p, rings[0].stream, dr, opt, &ds);
    if (!s) {
      dev.write_reg(spec::reg::SOFT_RESET, mask);
      return cleanup(), s.error();
    }
    for (uint32_t c = 0; c < ncores; ++c) {
      rings[c].tail = dr[c].tail;
      rings[c].stream.assign(1, spec::EndInsn{}.encode());
      dispatched[c] = ds.instructions[c];
    }
    res.tasks = p.tasks.size();
    res.quanta = ds.quanta;
  }
  std::vector<uint32_t> last_head(ncores, ~0u);
  UnitPhases units(p, base);  // HLS unit calls (none: streams run whole)
  LayerCuts cuts(p, opt.layer_cycles && dev.has_time());
  // Layer 0 starts at the run's start; the first cut is where layer 1 begins.
  if (cuts.enabled()) cuts.advance(start_cycles);
  const auto limit = [&](uint32_t c, uint64_t n) { return std::min(units.limit(c, n), cuts.limit(c, n)); };
  for (uint64_t round = 0;; ++round) {
    // Refill every ring with as much of its stream as fits.
    bool wrote = false;
    for (uint32_t c = 0; c < ncores; ++c) {
      auto& r = rings[c];
      const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
      const uint32_t used = (r.tail - head) & (r.size - 1);
      uint64_t room = r.size - 1 - used;
      uint64_t n = std::min<uint64_t>(room, limit(c, r.stream.size()) - r.written);
      while (n > 0) {
        const uint64_t chunk = std::min<uint64_t>(n, r.size - r.tail);
        Status s = dev.write(
            r.ring_addr + uint64_t(r.tail) * spec::kInsnBytes,
            {reinterpret_cast<const uint8_t*>(r.stream.data() + r.written), size_t(chunk * spec::kInsnBytes)});
        if (!s) return cleanup(), s.error();
        r.written += chunk;
        r.tail = uint32_t((r.tail + chunk) & (r.size - 1));
        n -= chunk;
        wrote = true;
        if (round > 0) ++res.ring_refills;
        dev.write_reg(core_reg_addr(c, creg::RING_TAIL), r.tail);
        dev.write_reg(core_reg_addr(c, creg::DOORBELL), 1);
      }
    }
    Status s = dev.run_until_idle(opt.timeout_cycles);
    if (!s) return cleanup(), s.error();
    if (opt.progress) {
      uint64_t done = 0, total = 0;
      for (uint32_t c = 0; c < ncores; ++c) {
        const auto& r = rings[c];
        const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
        done += r.written - ((r.tail - head) & (r.size - 1));  // written minus still in the ring
        total += r.stream.size();
      }
      opt.progress(done, total);
    }

    bool all_done = true, progressed = wrote, at_cut = units.pending() || cuts.pending();
    for (uint32_t c = 0; c < ncores; ++c) {
      auto& r = rings[c];
      const uint32_t st = dev.read_reg(core_reg_addr(c, creg::STATUS));
      if (st & creg::STATUS_ERROR_MASK) {
        const uint32_t cause = dev.read_reg(core_reg_addr(c, creg::ERR_CAUSE));
        const uint32_t pc = dev.read_reg(core_reg_addr(c, creg::ERR_PC));
        dev.write_reg(spec::reg::SOFT_RESET, 1u << c);
        cleanup();
        return make_error(std::string(dev.backend()) + ": core " + std::to_string(c),
                          describe_device_error(cause, pc, r.written, r.size, r.stream));
      }
      const uint32_t head = dev.read_reg(core_reg_addr(c, creg::RING_HEAD));
      if (head != last_head[c]) progressed = true;
      last_head[c] = head;
      if (r.written != limit(c, r.stream.size()) || head != r.tail) at_cut = false;
      if (!(st & creg::STATUS_DONE_MASK) || r.written < r.stream.size()) all_done = false;
    }
    if (at_cut && cuts.pending()) {  // every core ran its stream up to the next layer
      cuts.advance(dev.cycles());
      continue;
    }
    if (at_cut) {  // every core issued its stream up to the next unit call's cut
      Status us = units.advance(dev, opt);
      if (!us) return dev.write_reg(spec::reg::SOFT_RESET, mask), cleanup(), us.error();
      continue;
    }
    if (all_done) break;
    if (!progressed) {
      std::string who;
      for (uint32_t c = 0; c < ncores; ++c) {
        const uint32_t st = dev.read_reg(core_reg_addr(c, creg::STATUS));
        if (!(st & creg::STATUS_DONE_MASK))
          who += " core " + std::to_string(c) +
                 ((st & creg::STATUS_BLOCKED_MASK) ? " (blocked on a semaphore)" : " (stopped before END)");
      }
      dev.write_reg(spec::reg::SOFT_RESET, mask);
      cleanup();
      return make_error(std::string(dev.backend()), "device made no progress:" + who);
    }
  }
  res.cycles = dev.cycles() - start_cycles;
  res.layer_cycles = cuts.finish(dev.cycles(), &res.layer_start);

  for (const auto& b : p.outputs) {
    Tensor t(b.dtype, b.shape);
    Status s = dev.read(base + b.offset, t.data);
    if (!s) return cleanup(), s.error();
    res.outputs.emplace_back(b.name, std::move(t));
  }
  res.cores.resize(ncores);
  for (uint32_t c = 0; c < ncores; ++c) {
    auto& cr = res.cores[c];
    for (unsigned k = 0; k < spec::kNumCounters; ++k) {
      const uint32_t off = core_reg_addr(c, spec::counter_offset(spec::Counter(k)));
      cr.counters[k] = dev.read_reg(off) | (uint64_t(dev.read_reg(off + 4)) << 32);
    }
    cr.instructions = rings[c].stream.size() + dispatched[c];
    cr.done = true;
  }
  cleanup();
  return res;
}

}  // namespace loom::runtime
