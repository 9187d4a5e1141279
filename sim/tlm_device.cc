// TlmDevice: the spec's register map (RefDevice's semantics) over the
// process-wide platform, and the factory that attaches it.
#include "tlm_device.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/ref/golden.h"
#include "platform.h"

#include <tlm>

namespace loom::tlm {
namespace {

namespace cr = spec::core_reg;

constexpr uint32_t kCoreBusy = 1u << 0;
constexpr uint32_t kCoreDone = 1u << 1;
constexpr uint32_t kCoreError = 1u << 2;
constexpr uint32_t kCoreBlocked = 1u << 3;

uint32_t lo32(uint64_t v) { return uint32_t(v); }
uint32_t hi16(uint64_t v) { return uint32_t(v >> 32) & 0xFFFFu; }
uint64_t with_lo(uint64_t v, uint32_t lo) { return (v & ~uint64_t(0xFFFFFFFFu)) | lo; }
uint64_t with_hi(uint64_t v, uint32_t hi) { return (v & 0xFFFFFFFFu) | (uint64_t(hi & 0xFFFFu) << 32); }

bool g_device_alive = false;

class TlmDevice final : public runtime::Device {
 public:
  explicit TlmDevice(const spec::HwConfig& cfg)
      : st_(cfg), platform_(Platform::instance()),
        // Whole picoseconds per cycle; every delay is a multiple of it, so
        // cycle counts are exact even where the true period is not (300 MHz).
        period_(std::round(1e6 / std::max(1u, cfg.clock_mhz)), sc_core::SC_PS),
        base_(sc_core::sc_time_stamp()) {
    g_device_alive = true;
    // Work abandoned by an earlier device (a run that timed out) may still
    // hold timed waits; with no device attached they only return to idle.
    if (sc_core::sc_pending_activity())
      sc_core::sc_start(sc_core::sc_max_time() - sc_core::sc_time_stamp() - sc_core::sc_time::from_value(1),
                        sc_core::SC_EXIT_ON_STARVATION);
    base_ = sc_core::sc_time_stamp();
    platform_.attach(&st_, period_);
    // Quantum boundaries are absolute simulated times; starting each device
    // on one keeps its cycle counts independent of what ran before it.
    const uint64_t q = ::tlm::tlm_global_quantum::instance().get().value();
    if (const uint64_t rem = base_.value() % q; rem != 0) {
      sc_core::sc_start(sc_core::sc_time::from_value(q - rem));
      base_ = sc_core::sc_time_stamp();
    }
  }
  ~TlmDevice() override {
    platform_.attach(nullptr, period_);
    // Lets the abandoned threads of this device return to their idle waits.
    if (sc_core::sc_pending_activity_at_current_time()) sc_core::sc_start(sc_core::SC_ZERO_TIME);
    g_device_alive = false;
  }

  std::string_view backend() const override { return "tlm"; }
  const spec::HwConfig& config() const override { return st_.cfg; }

  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align) override { return st_.mem.alloc(bytes, align); }
  void free(uint64_t addr) override { st_.mem.free(addr); }
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override { return st_.mem.host_write(addr, bytes); }
  Status read(uint64_t addr, std::span<uint8_t> bytes) override { return st_.mem.host_read(addr, bytes); }

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  Status run_until_idle(uint64_t timeout_cycles) override;

  bool has_time() const override { return true; }
  uint64_t cycles() const override { return uint64_t((sc_core::sc_time_stamp() - base_) / period_); }

 private:
  uint32_t read_core_reg(unsigned c, uint32_t off) const;
  void write_core_reg(unsigned c, uint32_t off, uint32_t value);
  void doorbell(unsigned c);
  void soft_reset(unsigned c);

  DeviceState st_;
  Platform& platform_;
  sc_core::sc_time period_;
  sc_core::sc_time base_;
  uint32_t scratch_ = 0;
  uint32_t irq_enable_ = 0;
  uint32_t watchdog_ = 0;
};

uint32_t TlmDevice::read_reg(uint32_t offset) {
  if ((offset & 3) != 0) return 0;
  const spec::HwConfig& cfg = st_.cfg;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c >= cfg.cores) return 0;
    return read_core_reg(c, (offset - spec::kCoreBase) % spec::kCoreStride);
  }
  switch (offset) {
    case spec::reg::ID:
      return spec::kIdValue;
    case spec::reg::VERSION:
      return spec::kVersion;
    case spec::reg::HWCFG:
      return (cfg.cores & 0xFFu) | (cfg.array_rows & 0xFFu) << 8 | (cfg.array_cols & 0xFFu) << 16 |
             (cfg.mem_ports & 0xFFu) << 24;
    case spec::reg::SCRATCH:
      return scratch_;
    case spec::reg::STATUS: {
      uint32_t v = 0;
      for (unsigned c = 0; c < cfg.cores; ++c) {
        if (st_.rings[c].running) v |= 1u << c;
        if (st_.fabric.core(c).err_cause != 0) v |= 1u << (8 + c);
      }
      return v;
    }
    case spec::reg::IRQ_ENABLE:
      return irq_enable_;
    case spec::reg::IRQ_STATUS:
      return st_.irq_status;
    case spec::reg::WATCHDOG:
      return watchdog_;
    default:
      break;
  }
  if (offset >= spec::reg::SEM_VALUE &&
      offset < spec::reg::SEM_VALUE + spec::reg::SEM_VALUE_COUNT * spec::reg::SEM_VALUE_STRIDE)
    return st_.fabric.semaphore((offset - spec::reg::SEM_VALUE) / spec::reg::SEM_VALUE_STRIDE);
  return 0;
}

uint32_t TlmDevice::read_core_reg(unsigned c, uint32_t off) const {
  const RingCtl& r = st_.rings[c];
  const ref::CoreState& s = st_.fabric.core(c);
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
      return 0;
  }
}

void TlmDevice::write_reg(uint32_t offset, uint32_t value) {
  if ((offset & 3) != 0) return;
  const spec::HwConfig& cfg = st_.cfg;
  if (offset >= spec::kCoreBase) {
    const uint32_t c = (offset - spec::kCoreBase) / spec::kCoreStride;
    if (c < cfg.cores) write_core_reg(c, (offset - spec::kCoreBase) % spec::kCoreStride, value);
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
      st_.irq_status &= ~value;
      break;
    case spec::reg::SOFT_RESET:
      for (unsigned c = 0; c < cfg.cores; ++c)
        if (value & (1u << c)) soft_reset(c);
      break;
    case spec::reg::WATCHDOG:
      watchdog_ = value;  // stored for read-back; the model does not expire it
      break;
    case spec::reg::SEM_CLEAR:
      for (unsigned i = 0; i < st_.fabric.num_semaphores(); ++i)
        if (value & (1u << i)) {
          st_.fabric.clear_semaphore(i);
          st_.sem_times[i].clear();
        }
      platform_.poke_semaphores();
      break;
    default:
      break;
  }
}

void TlmDevice::write_core_reg(unsigned c, uint32_t off, uint32_t value) {
  RingCtl& r = st_.rings[c];
  ref::CoreState& s = st_.fabric.core(c);
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
      platform_.core(c).poke();
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

void TlmDevice::doorbell(unsigned c) {
  RingCtl& r = st_.rings[c];
  ref::CoreState& s = st_.fabric.core(c);
  if (s.err_cause != 0) return;
  const bool was_running = r.running;
  r.done = false;
  r.blocked = false;
  const bool pow2 = r.size != 0 && (r.size & (r.size - 1)) == 0;
  if (!pow2 || r.size > st_.cfg.ring_depth || (r.base & 31) != 0 || r.tail >= r.size || r.head >= r.size) {
    st_.fabric.raise(c, spec::err::ILLEGAL_INSN, r.head);
    r.running = false;
    st_.irq_status |= 1u << (8 + c);
    return;
  }
  r.running = true;
  uint64_t& hwm = s.counter(spec::Counter::QUEUE_HWM);
  const uint64_t occupancy = (r.tail - r.head) & (r.size - 1);
  if (occupancy > hwm) hwm = occupancy;
  platform_.core(c).start(was_running);
}

void TlmDevice::soft_reset(unsigned c) {
  RingCtl& r = st_.rings[c];
  r.head = r.tail = 0;
  r.running = r.done = r.blocked = false;
  st_.fabric.reset_core(c);
  st_.irq_status &= ~((1u << c) | (1u << (8 + c)));
  platform_.core(c).reset();
}

Status TlmDevice::run_until_idle(uint64_t timeout_cycles) {
  if (!sc_core::sc_pending_activity()) return Status::ok();  // nothing started: no time passes
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const double room = (sc_core::sc_max_time() - now) / period_;
  const double limit = std::min(double(timeout_cycles), room - 1);
  sc_core::sc_start(period_ * limit, sc_core::SC_EXIT_ON_STARVATION);
  if (sc_core::sc_pending_activity())
    return make_error("tlm device", "cores still busy after " + std::to_string(timeout_cycles) +
                                        " cycles (run_until_idle timeout)");
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<runtime::Device>> make_tlm_device(const spec::HwConfig& cfg) {
  const std::string where = "tlm device: config '" + std::string(cfg.name) + "'";
  if (std::string why = ref::validate_config(cfg); !why.empty()) return make_error(where, why);
  if (cfg.clock_mhz == 0) return make_error(where, "clock_mhz must be non-zero");
  if (g_device_alive)
    return make_error(where, "another tlm device is alive in this process (SystemC elaborates one platform "
                             "per process; destroy the first device or use a separate process)");
  return std::unique_ptr<runtime::Device>(std::make_unique<TlmDevice>(cfg));
}

}  // namespace loom::tlm
