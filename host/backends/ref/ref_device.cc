// RefDevice: register map, command rings and the run loop around the golden
// fabric model.
#include "backends/ref/ref_device.h"

#include <string>

namespace loom::ref {
namespace {

namespace cr = spec::core_reg;

constexpr uint32_t kCoreBusy = 1u << 0;
constexpr uint32_t kCoreDone = 1u << 1;
constexpr uint32_t kCoreError = 1u << 2;
constexpr uint32_t kCoreBlocked = 1u << 3;

uint32_t lo32(uint64_t v) { return uint32_t(v); }
uint32_t hi16(uint64_t v) { return uint32_t(v >> 32) & 0xFFFFu; }
uint64_t with_lo(uint64_t v, uint32_t lo) { return (v & ~uint64_t(0xFFFFFFFFu)) | lo; }
// Device addresses are 48-bit: the HI halves keep bits [47:32] only.
uint64_t with_hi(uint64_t v, uint32_t hi) { return (v & 0xFFFFFFFFu) | (uint64_t(hi & 0xFFFFu) << 32); }

}  // namespace

RefDevice::RefDevice(const spec::HwConfig& cfg) : cfg_(cfg), fabric_(cfg_, mem_) {}

Expected<uint64_t> RefDevice::alloc(uint64_t bytes, uint64_t align) { return mem_.alloc(bytes, align); }
void RefDevice::free(uint64_t addr) { mem_.free(addr); }
Status RefDevice::write(uint64_t addr, std::span<const uint8_t> bytes) { return mem_.host_write(addr, bytes); }
Status RefDevice::read(uint64_t addr, std::span<uint8_t> bytes) { return mem_.host_read(addr, bytes); }

uint32_t RefDevice::read_reg(uint32_t offset) {
  // Unaligned or unmapped offsets read 0, like an AXI-Lite slave that
  // decodes word addresses and answers OKAY everywhere.
  if ((offset & 3) != 0) return 0;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c >= cfg_.cores) return 0;
    return read_core_reg(c, (offset - spec::kCoreBase) % spec::kCoreStride);
  }
  switch (offset) {
    case spec::reg::ID:
      return spec::kIdValue;
    case spec::reg::VERSION:
      return spec::kVersion;
    case spec::reg::HWCFG:
      return (cfg_.cores & 0xFFu) | (cfg_.array_rows & 0xFFu) << 8 | (cfg_.array_cols & 0xFFu) << 16 |
             (cfg_.mem_ports & 0xFFu) << 24;
    case spec::reg::SCRATCH:
      return scratch_;
    case spec::reg::STATUS: {
      uint32_t v = 0;
      for (unsigned c = 0; c < cfg_.cores; ++c) {
        if (rings_[c].running) v |= 1u << c;
        if (fabric_.core(c).err_cause != 0) v |= 1u << (8 + c);
      }
      return v;
    }
    case spec::reg::IRQ_ENABLE:
      return irq_enable_;
    case spec::reg::IRQ_STATUS:
      return irq_status_;
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

uint32_t RefDevice::read_core_reg(unsigned c, uint32_t off) const {
  const RingCtl& r = rings_[c];
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
      return (r.running ? kCoreBusy : 0) | (r.done ? kCoreDone : 0) | (s.err_cause ? kCoreError : 0) |
             (r.blocked ? kCoreBlocked : 0);
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

void RefDevice::write_reg(uint32_t offset, uint32_t value) {
  if ((offset & 3) != 0) return;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c < cfg_.cores) write_core_reg(c, (offset - spec::kCoreBase) % spec::kCoreStride, value);
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
      irq_status_ &= ~value;
      break;
    case spec::reg::SOFT_RESET:
      for (unsigned c = 0; c < cfg_.cores; ++c)
        if (value & (1u << c)) soft_reset(c);
      break;
    case spec::reg::WATCHDOG:
      watchdog_ = value;  // stored for read-back; the untimed model never expires it
      break;
    case spec::reg::SEM_CLEAR:
      for (unsigned i = 0; i < fabric_.num_semaphores(); ++i)
        if (value & (1u << i)) fabric_.clear_semaphore(i);
      break;
    default:
      break;  // read-only and unmapped registers ignore writes
  }
}

void RefDevice::write_core_reg(unsigned c, uint32_t off, uint32_t value) {
  RingCtl& r = rings_[c];
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

void RefDevice::fault(unsigned c, uint32_t cause) {
  RingCtl& r = rings_[c];
  fabric_.raise(c, cause, r.head);
  r.running = false;
  r.blocked = false;
  irq_status_ |= 1u << (8 + c);
}

void RefDevice::doorbell(unsigned c) {
  RingCtl& r = rings_[c];
  CoreState& s = fabric_.core(c);
  // A halted core stays halted until its error causes are cleared (W1C or
  // soft reset); it then resumes at RING_HEAD, the instruction that faulted.
  if (s.err_cause != 0) return;
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
}

void RefDevice::soft_reset(unsigned c) {
  RingCtl& r = rings_[c];
  // Ring base/size and the window are configuration, not unit state: they
  // survive so the host can restart with a fresh tail and a doorbell.
  r.head = r.tail = 0;
  r.running = r.done = r.blocked = false;
  fabric_.reset_core(c);
  irq_status_ &= ~((1u << c) | (1u << (8 + c)));
}

bool RefDevice::step(unsigned c) {
  RingCtl& r = rings_[c];
  if (!r.running) return false;
  if (r.head == r.tail) {
    r.running = false;  // starved: not done, waits for a refill and doorbell
    return false;
  }
  const uint64_t addr = r.base + uint64_t(spec::kInsnBytes) * r.head;
  // Instruction fetch is not a DMA: the window does not apply, but the
  // memory's responses (and injected faults) do.
  switch (mem_.probe(addr, spec::kInsnBytes)) {
    case AxiResp::Okay:
      break;
    case AxiResp::SlvErr:
      fault(c, spec::err::AXI_SLVERR);
      return true;
    case AxiResp::DecErr:
      fault(c, spec::err::AXI_DECERR);
      return true;
  }
  uint8_t raw[spec::kInsnBytes];
  mem_.read(addr, raw);
  spec::Insn insn;
  for (unsigned w = 0; w < spec::kInsnWords; ++w)
    insn.w[w] = uint32_t(raw[4 * w]) | uint32_t(raw[4 * w + 1]) << 8 | uint32_t(raw[4 * w + 2]) << 16 |
                uint32_t(raw[4 * w + 3]) << 24;

  switch (fabric_.execute(c, insn, r.head)) {
    case Outcome::Blocked:
      r.blocked = true;
      return false;
    case Outcome::Faulted:
      r.running = false;
      r.blocked = false;
      irq_status_ |= 1u << (8 + c);
      return true;
    case Outcome::RetiredEnd:
      r.head = (r.head + 1) & (r.size - 1);
      r.running = false;
      r.blocked = false;
      r.done = true;
      irq_status_ |= 1u << c;
      return true;
    case Outcome::Retired:
      r.head = (r.head + 1) & (r.size - 1);
      r.blocked = false;
      return true;
  }
  return true;
}

Status RefDevice::run_until_idle(uint64_t timeout_cycles) {
  (void)timeout_cycles;
  // Terminates: without branches every core retires at most one ring's worth
  // of instructions per doorbell, and a blocked core makes no progress.
  for (bool progress = true; progress;) {
    progress = false;
    for (unsigned c = 0; c < cfg_.cores; ++c) progress |= step(c);
  }
  return Status::ok();
}

Expected<std::unique_ptr<runtime::Device>> make_ref_device(const spec::HwConfig& cfg) {
  if (std::string why = validate_config(cfg); !why.empty())
    return make_error("ref device: config '" + std::string(cfg.name) + "'", why);
  return std::unique_ptr<runtime::Device>(std::make_unique<RefDevice>(cfg));
}

}  // namespace loom::ref
