// A device of any backend (ref, rtl, tlm, cosim) on the tiny configuration,
// driven through runtime::Device as a host driver would, with a DMA stream
// that an injected fault interrupts: shared by the cosim and tlm fault tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/memory.h"
#include "loom/spec_gen.h"
#include "device/device.h"
#include "support/insn_builders.h"

namespace loom::cosim_test {

using spec::Buffer;
using spec::Insn;
using namespace loom::test;
namespace cr = spec::core_reg;

constexpr uint32_t kDone = 2, kError = 4;

inline const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

/// What a core's registers say after a stream: the state the spec defines for
/// a fault, identical on every backend.
struct CoreReport {
  uint32_t err_cause = 0, err_pc = 0, status = 0, global_status = 0, irq_status = 0;
  uint64_t loads = 0, stores = 0;
  bool operator==(const CoreReport&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const CoreReport& r) {
  return os << "{cause " << r.err_cause << ", pc " << r.err_pc << ", status " << r.status << ", global "
            << r.global_status << ", irq " << r.irq_status << ", loads " << r.loads << ", stores " << r.stores << "}";
}

class Rig {
 public:
  static constexpr uint32_t kRingSize = 64;

  explicit Rig(std::unique_ptr<runtime::Device> dev) : dev_(std::move(dev)) {
    ring_ = alloc(uint64_t(kRingSize) * spec::kInsnBytes);
    wcreg(cr::RING_BASE_LO, uint32_t(ring_));
    wcreg(cr::RING_BASE_HI, uint32_t(ring_ >> 32));
    wcreg(cr::RING_SIZE, kRingSize);
    const uint64_t base = hw::DeviceMemory::kBase, limit = base + hw::DeviceMemory::kCapacity;
    wcreg(cr::WIN_BASE_LO, uint32_t(base));
    wcreg(cr::WIN_BASE_HI, uint32_t(base >> 32));
    wcreg(cr::WIN_LIMIT_LO, uint32_t(limit));
    wcreg(cr::WIN_LIMIT_HI, uint32_t(limit >> 32));
  }
  runtime::Device& dev() { return *dev_; }

  uint64_t alloc(uint64_t n) {
    auto a = dev_->alloc(n, 64);
    EXPECT_TRUE(a.is_ok()) << (a.is_ok() ? "" : a.error().str());
    return a.is_ok() ? *a : 0;
  }
  uint64_t put(const std::vector<uint8_t>& b) {
    const uint64_t a = alloc(b.size());
    EXPECT_TRUE(dev_->write(a, b).is_ok());
    return a;
  }
  std::vector<uint8_t> get(uint64_t a, uint64_t n) {
    std::vector<uint8_t> out(n);
    EXPECT_TRUE(dev_->read(a, out).is_ok());
    return out;
  }
  uint32_t creg(uint32_t off) { return dev_->read_reg(spec::core_reg_addr(0, off)); }
  void wcreg(uint32_t off, uint32_t v) { dev_->write_reg(spec::core_reg_addr(0, off), v); }
  uint64_t counter(spec::Counter k) {
    const uint32_t off = spec::counter_offset(k);
    return uint64_t(creg(off)) | uint64_t(creg(off + 4)) << 32;
  }

  /// Appends `insns` to core 0's ring, rings the doorbell, runs until idle.
  Status run(const std::vector<Insn>& insns) {
    uint32_t tail = creg(cr::RING_TAIL);
    for (const Insn& in : insns) {
      std::vector<uint8_t> raw(spec::kInsnBytes);
      for (unsigned w = 0; w < spec::kInsnWords; ++w)
        for (unsigned b = 0; b < 4; ++b) raw[4 * w + b] = uint8_t(in.w[w] >> (8 * b));
      EXPECT_TRUE(dev_->write(ring_ + uint64_t(spec::kInsnBytes) * tail, raw).is_ok());
      tail = (tail + 1) % kRingSize;
    }
    wcreg(cr::RING_TAIL, tail);
    wcreg(cr::DOORBELL, 1);
    return dev_->run_until_idle(2'000'000);
  }
  void soft_reset() { dev_->write_reg(spec::reg::SOFT_RESET, 1u); }

  CoreReport report() {
    CoreReport r;
    r.err_cause = creg(cr::ERR_CAUSE);
    r.err_pc = creg(cr::ERR_PC);
    r.status = creg(cr::STATUS);
    r.global_status = dev_->read_reg(spec::reg::STATUS);
    r.irq_status = dev_->read_reg(spec::reg::IRQ_STATUS);
    r.loads = counter(spec::Counter::INSN_LOAD);
    r.stores = counter(spec::Counter::INSN_STORE);
    return r;
  }

 private:
  std::unique_ptr<runtime::Device> dev_;
  uint64_t ring_ = 0;
};

/// One faulting DMA and what the device reports, then the recovery: soft
/// reset, faults cleared, the same copy again must be bit-exact.
struct FaultCase {
  const char* what;
  bool is_load;
  hw::FaultKind kind;
};

inline const FaultCase kFaultCases[] = {
    {"SLVERR on LOAD", true, hw::FaultKind::SlvErr},
    {"DECERR on LOAD", true, hw::FaultKind::DecErr},
    {"SLVERR on STORE", false, hw::FaultKind::SlvErr},
    {"DECERR on STORE", false, hw::FaultKind::DecErr},
};

inline uint32_t cause_of(hw::FaultKind k) {
  return k == hw::FaultKind::SlvErr ? spec::err::AXI_SLVERR : spec::err::AXI_DECERR;
}

/// The buffers of a fault case: `src` (256 bytes of a pattern) and `dst`.
struct Bufs {
  uint64_t src = 0, dst = 0;
  std::vector<uint8_t> pattern;
};

inline Bufs make_bufs(Rig& r) {
  Bufs b;
  for (unsigned i = 0; i < 256; ++i) b.pattern.push_back(uint8_t(i * 7 + 3));
  b.src = r.put(b.pattern);
  b.dst = r.put(std::vector<uint8_t>(256, 0xEE));
  return b;
}

/// The faulting stream: NOP, then LOAD src (4 rows of 16 at stride 32) into
/// OUT, FENCE, STORE OUT to dst, END; a fault at src + 100 hits the LOAD, one
/// at dst + 100 the STORE. Its PC is 1 (LOAD) or 3 (STORE).
inline std::vector<Insn> copy_stream(const Bufs& b) {
  return {nop(), load(Buffer::OUT, 0, b.src, 4, 16, 32), fence(), store(Buffer::OUT, 0, b.dst, 4, 16, 32),
          end_insn()};
}

/// Bytes the copy stream leaves in dst when it succeeds.
inline std::vector<uint8_t> copy_want(const Bufs& b) {
  std::vector<uint8_t> w(256, 0xEE);
  for (unsigned r = 0; r < 4; ++r)
    for (unsigned c = 0; c < 16; ++c) w[r * 32 + c] = b.pattern[r * 32 + c];
  return w;
}

/// Runs one fault case on `r`, with `inject` putting the fault at the given
/// address range and `clear` removing every fault; returns the report.
inline CoreReport run_fault_case(Rig& r, const FaultCase& c,
                                 const std::function<void(uint64_t, uint64_t, hw::FaultKind)>& inject,
                                 const std::function<void()>& clear) {
  const Bufs b = make_bufs(r);
  inject((c.is_load ? b.src : b.dst) + 100, 1, c.kind);
  const Status s = r.run(copy_stream(b));
  EXPECT_TRUE(s.is_ok()) << s.str();
  const CoreReport rep = r.report();
  EXPECT_EQ(rep.err_cause, cause_of(c.kind));
  EXPECT_EQ(rep.err_pc, c.is_load ? 1u : 3u);
  EXPECT_EQ(rep.status, kError);
  // Recovery: clear, soft reset, the same stream again is bit-exact.
  clear();
  r.soft_reset();
  EXPECT_EQ(r.creg(cr::ERR_CAUSE), 0u);
  EXPECT_EQ(r.creg(cr::STATUS), 0u);
  const Status s2 = r.run(copy_stream(b));
  EXPECT_TRUE(s2.is_ok()) << s2.str();
  EXPECT_EQ(r.creg(cr::ERR_CAUSE), 0u);
  EXPECT_EQ(r.creg(cr::STATUS), kDone);
  EXPECT_EQ(r.get(b.dst, 256), copy_want(b)) << "copy after recovery";
  return rep;
}

}  // namespace loom::cosim_test
