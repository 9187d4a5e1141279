// The spec's register map over the golden fabric's state (control_regs.h).
#include "hw/control_regs.h"

namespace loom::hw {
namespace {

namespace cr = spec::core_reg;

uint32_t lo32(uint64_t v) { return uint32_t(v); }
uint32_t hi16(uint64_t v) { return uint32_t(v >> 32) & 0xFFFFu; }
uint64_t with_lo(uint64_t v, uint32_t lo) { return (v & ~uint64_t(0xFFFFFFFFu)) | lo; }
// Device addresses are 48-bit: the HI halves keep bits [47:32] only.
uint64_t with_hi(uint64_t v, uint32_t hi) { return (v & 0xFFFFFFFFu) | (uint64_t(hi & 0xFFFFu) << 32); }

}  // namespace

uint32_t ControlRegs::read(uint32_t offset) const {
  // Unaligned or unmapped offsets read 0, like an AXI-Lite slave that
  // decodes word addresses and answers OKAY everywhere.
  if ((offset & 3) != 0) return 0;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c >= cfg_.cores) return 0;
    return read_core(c, (offset - spec::kCoreBase) % spec::kCoreStride);
  }
  switch (offset) {
    case spec::reg::ID:
      return spec::kIdValue;
    case spec::reg::VERSION:
      return spec::kVersion;
    case spec::reg::HWCFG:
      return spec::hwcfg_value(cfg_);
    case spec::reg::SCRATCH:
      return scratch_;
    case spec::reg::STATUS: {
      uint32_t v = 0;
      for (unsigned c = 0; c < cfg_.cores; ++c) {
        if (rings[c].running) v |= spec::reg::STATUS_BUSY(c);
        if (fabric_.core(c).err_cause != 0) v |= spec::reg::STATUS_ERROR(c);
      }
      return v;
    }
    case spec::reg::IRQ_ENABLE:
      return irq_enable_;
    case spec::reg::IRQ_STATUS:
      return irq_status;
    case spec::reg::WATCHDOG:
      return watchdog_;
    default:
      break;
  }
  if (offset >= spec::reg::SEM_VALUE &&
      offset < spec::reg::SEM_VALUE + spec::reg::SEM_VALUE_COUNT * spec::reg::SEM_VALUE_STRIDE)
    return fabric_.semaphore((offset - spec::reg::SEM_VALUE) / spec::reg::SEM_VALUE_STRIDE);
  return 0;  // write-only (SOFT_RESET, SEM_CLEAR) and unmapped
}

uint32_t ControlRegs::read_core(unsigned c, uint32_t off) const {
  const RingCtl& r = rings[c];
  const CoreState& s = fabric_.core(c);
  const uint32_t ctr_end = cr::COUNTERS + 8 * spec::kNumCounters;
  if (off >= cr::COUNTERS && off < ctr_end) {
    const uint64_t v = s.counters[(off - cr::COUNTERS) / 8];
    return (off & 4) ? uint32_t(v >> 32) : uint32_t(v);
  }
  switch (off) {
    case cr::RING_BASE_LO:
      return lo32(r.base);
    case cr::RING_BASE_HI:
      return hi16(r.base);
    case cr::RING_SIZE:
      return r.size;
    case cr::RING_HEAD:
      return r.head;
    case cr::RING_TAIL:
      return r.tail;
    case cr::STATUS:
      return (r.running ? cr::STATUS_BUSY_MASK : 0) | (r.done ? cr::STATUS_DONE_MASK : 0) |
             (s.err_cause ? cr::STATUS_ERROR_MASK : 0) | (r.blocked ? cr::STATUS_BLOCKED_MASK : 0);
    case cr::ERR_CAUSE:
      return s.err_cause;
    case cr::ERR_PC:
      return s.err_pc;
    case cr::WIN_BASE_LO:
      return lo32(s.win_base);
    case cr::WIN_BASE_HI:
      return hi16(s.win_base);
    case cr::WIN_LIMIT_LO:
      return lo32(s.win_limit);
    case cr::WIN_LIMIT_HI:
      return hi16(s.win_limit);
    default:
      return 0;  // DOORBELL and CTR_CLEAR are write-only
  }
}

void ControlRegs::write(uint32_t offset, uint32_t value) {
  if ((offset & 3) != 0) return;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c < cfg_.cores) write_core(c, (offset - spec::kCoreBase) % spec::kCoreStride, value);
    return;
  }
  switch (offset) {
    case spec::reg::SCRATCH:
      scratch_ = value;
      break;
    case spec::reg::IRQ_ENABLE:
      irq_enable_ = value;
      break;
    case spec::reg::IRQ_STATUS:
      irq_status &= ~value;
      break;
    case spec::reg::SOFT_RESET:
      for (unsigned c = 0; c < cfg_.cores; ++c)
        if (value & (1u << c)) soft_reset(c);
      break;
    case spec::reg::WATCHDOG:
      watchdog_ = value;  // the untimed model never expires it; the tlm core model does
      break;
    case spec::reg::SEM_CLEAR:
      for (unsigned i = 0; i < fabric_.num_semaphores(); ++i)
        if (value & (1u << i)) fabric_.clear_semaphore(i);
      hooks_->semaphores_cleared(value);
      break;
    default:
      break;  // read-only and unmapped registers ignore writes
  }
}

void ControlRegs::write_core(unsigned c, uint32_t off, uint32_t value) {
  RingCtl& r = rings[c];
  CoreState& s = fabric_.core(c);
  switch (off) {
    case cr::RING_BASE_LO:
      r.base = with_lo(r.base, value);
      break;
    case cr::RING_BASE_HI:
      r.base = with_hi(r.base, value);
      break;
    case cr::RING_SIZE:
      r.size = value;
      break;
    case cr::RING_TAIL:
      r.tail = value;
      hooks_->tail_written(c);
      break;
    case cr::DOORBELL:
      if (value & 1) doorbell(c);
      break;
    case cr::ERR_CAUSE:
      s.err_cause &= ~value;
      break;
    case cr::WIN_BASE_LO:
      s.win_base = with_lo(s.win_base, value);
      break;
    case cr::WIN_BASE_HI:
      s.win_base = with_hi(s.win_base, value);
      break;
    case cr::WIN_LIMIT_LO:
      s.win_limit = with_lo(s.win_limit, value);
      break;
    case cr::WIN_LIMIT_HI:
      s.win_limit = with_hi(s.win_limit, value);
      break;
    case cr::CTR_CLEAR:
      if (value & 1) s.counters.fill(0);
      break;
    default:
      break;
  }
}

void ControlRegs::fault(unsigned c, uint32_t cause) {
  RingCtl& r = rings[c];
  fabric_.raise(c, cause, r.head);
  r.running = false;
  r.blocked = false;
  irq_status |= spec::reg::IRQ_STATUS_ERROR(c);
}

void ControlRegs::doorbell(unsigned c) {
  RingCtl& r = rings[c];
  CoreState& s = fabric_.core(c);
  // A halted core stays halted until its error causes are cleared (W1C or
  // soft reset); it then resumes at RING_HEAD, the instruction that faulted.
  if (s.err_cause != 0) return;
  const bool was_running = r.running;
  r.done = false;
  r.blocked = false;
  const bool pow2 = r.size != 0 && (r.size & (r.size - 1)) == 0;
  if (!pow2 || r.size > cfg_.ring_depth || (r.base & 31) != 0 || r.tail >= r.size || r.head >= r.size) {
    // A ring the fetcher cannot walk is reported like a bad instruction.
    fault(c, spec::err::ILLEGAL_INSN);
    return;
  }
  r.running = true;
  uint64_t& hwm = s.counter(spec::Counter::QUEUE_HWM);
  const uint64_t occupancy = (r.tail - r.head) & (r.size - 1);
  if (occupancy > hwm) hwm = occupancy;
  hooks_->started(c, was_running);
}

void ControlRegs::soft_reset(unsigned c) {
  RingCtl& r = rings[c];
  // Ring base/size and the window are configuration, not unit state: they
  // survive so the host can restart with a fresh tail and a doorbell.
  r.head = r.tail = 0;
  r.running = r.done = r.blocked = false;
  fabric_.reset_core(c);
  irq_status &= ~(spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c));
  hooks_->core_reset(c);
}

bool cores_quiescent(const spec::HwConfig& cfg, const std::function<uint32_t(uint32_t)>& read_reg,
                     std::string* busy_cores) {
  const uint32_t busy = read_reg(spec::reg::STATUS);
  bool idle = true;
  for (unsigned c = 0; c < cfg.cores && c < spec::kMaxCores; ++c) {
    if (!(busy & spec::reg::STATUS_BUSY(c))) continue;
    const uint32_t st = read_reg(spec::core_reg_addr(c, cr::STATUS));
    if ((st & cr::STATUS_BUSY_MASK) && !(st & cr::STATUS_BLOCKED_MASK)) {
      idle = false;
      if (busy_cores) busy_cores->append(" ").append(std::to_string(c));
    }
  }
  return idle;
}

}  // namespace loom::hw
