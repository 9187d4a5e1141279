// RefDevice: register map, command rings and the run loop around the golden
// fabric model.
#include "backends/ref/ref_device.h"

#include <string>

#include "loom_hls_units.h"

namespace loom::ref {

RefDevice::RefDevice(const spec::HwConfig& cfg) : cfg_(cfg), fabric_(cfg_, mem_), regs_(cfg_, fabric_) {}

Expected<uint64_t> RefDevice::alloc(uint64_t bytes, uint64_t align) { return mem_.alloc(bytes, align); }
void RefDevice::free(uint64_t addr) { mem_.free(addr); }
Status RefDevice::write(uint64_t addr, std::span<const uint8_t> bytes) { return mem_.host_write(addr, bytes); }
Status RefDevice::read(uint64_t addr, std::span<uint8_t> bytes) { return mem_.host_read(addr, bytes); }

uint32_t RefDevice::read_reg(uint32_t offset) { return regs_.read(offset); }
void RefDevice::write_reg(uint32_t offset, uint32_t value) { regs_.write(offset, value); }

bool RefDevice::step(unsigned c) {
  hw::RingCtl& r = regs_.rings[c];
  if (!r.running) return false;
  if (r.head == r.tail) {
    r.running = false;  // starved: not done, waits for a refill and doorbell
    return false;
  }
  const uint64_t addr = r.base + uint64_t(spec::kInsnBytes) * r.head;
  // Instruction fetch is not a DMA: the window does not apply, but the
  // memory's responses (and injected faults) do.
  switch (mem_.probe(addr, spec::kInsnBytes)) {
    case hw::AxiResp::Okay:
      break;
    case hw::AxiResp::SlvErr:
      regs_.fault(c, spec::err::AXI_SLVERR);
      return true;
    case hw::AxiResp::DecErr:
      regs_.fault(c, spec::err::AXI_DECERR);
      return true;
  }
  uint8_t raw[spec::kInsnBytes];
  mem_.read(addr, raw);
  spec::Insn insn;
  for (unsigned w = 0; w < spec::kInsnWords; ++w)
    insn.w[w] = uint32_t(raw[4 * w]) | uint32_t(raw[4 * w + 1]) << 8 | uint32_t(raw[4 * w + 2]) << 16 |
                uint32_t(raw[4 * w + 3]) << 24;

  switch (fabric_.execute(c, insn, r.head)) {
    case hw::Outcome::Blocked:
      r.blocked = true;
      return false;
    case hw::Outcome::Faulted:
      r.running = false;
      r.blocked = false;
      regs_.irq_status |= spec::reg::IRQ_STATUS_ERROR(c);
      return true;
    case hw::Outcome::RetiredEnd:
      r.head = (r.head + 1) & (r.size - 1);
      r.running = false;
      r.blocked = false;
      r.done = true;
      regs_.irq_status |= spec::reg::IRQ_STATUS_DONE(c);
      return true;
    case hw::Outcome::Retired:
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

Expected<uint64_t> RefDevice::start_unit(const runtime::UnitCall& call) {
  Status st = hls::run(
      call, cfg_, [this](uint64_t a, std::span<uint8_t> out) { return mem_.host_read(a, out); },
      [this](uint64_t a, std::span<const uint8_t> in) { return mem_.host_write(a, in); });
  if (!st) return Status(st.error()).context("ref");
  unit_calls_[next_unit_call_] = Status::ok();
  return next_unit_call_++;
}

Status RefDevice::wait_unit(uint64_t handle, uint64_t timeout_cycles) {
  (void)timeout_cycles;
  auto it = unit_calls_.find(handle);
  if (it == unit_calls_.end())
    return make_error("ref", "wait_unit: no unit call " + std::to_string(handle) + " in flight");
  Status st = it->second;
  unit_calls_.erase(it);
  return st;
}

Expected<std::unique_ptr<runtime::Device>> make_ref_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& opt) {
  LOOM_TRY(opt.allow("ref", {}));
  if (std::string why = hw::validate_config(cfg); !why.empty())
    return make_error("ref device: config '" + std::string(cfg.name) + "'", why);
  return std::unique_ptr<runtime::Device>(std::make_unique<RefDevice>(cfg));
}

}  // namespace loom::ref
