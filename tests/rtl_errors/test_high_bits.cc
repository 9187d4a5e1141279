// Every address bit the spec gives a width of 48 (ring base, DMA window,
// LOAD/STORE addresses) and the strides' top bits, on every core of the tiny
// and small fabrics (rtl) and the golden model (ref). Device memory spans
// 4 GiB from 0x1000_0000, so past it the tests use what an address must do
// without memory behind it: a DMA leaves the window and is blocked before
// any beat (WINDOW), a window whose low 32 bits are zero still compares all
// 48, and a ring placed there answers DECERR on fetch (AXI_DECERR); below
// it, a ring at every bit of a 2 MiB arena runs. A compare or an address
// path cut to fewer bits fails one of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "error_rig.h"

namespace loom::rtl_errors {
namespace {

class HighBits : public OnConfig {
 protected:
  /// Runs `prog` on core `c` and expects it halted on `cause` with no DMA byte
  /// moved and no memory beat written (the fetch reads the ring; an
  /// unallocated address read would answer DECERR, not `cause`), then
  /// recovers the core (soft reset, interrupts cleared).
  static void expect_fault_then_recover(Rig& r, unsigned c, const std::vector<Insn>& prog, uint32_t cause,
                                        const char* what, int bit) {
    const auto before = r.mem_stats();
    const uint64_t dma = r.counter(c, spec::Counter::BYTES_RD) + r.counter(c, spec::Counter::BYTES_WR);
    r.run(c, prog);
    EXPECT_EQ(r.err(c), cause) << what << ", core " << c << ", bit " << bit;
    EXPECT_EQ(r.status(c), kError) << what << ", core " << c << ", bit " << bit;
    EXPECT_EQ(r.counter(c, spec::Counter::BYTES_RD) + r.counter(c, spec::Counter::BYTES_WR), dma)
        << what << ", core " << c << ", bit " << bit << ": a blocked DMA moved bytes";
    EXPECT_EQ(r.mem_stats().write_beats, before.write_beats)
        << what << ", core " << c << ", bit " << bit << ": a blocked DMA wrote memory";
    r.soft_reset(c);
    r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);
    EXPECT_EQ(r.err(c), 0u);
  }
};

TEST_P(HighBits, WindowComparesAll48Bits) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  const uint64_t buf = r.put(std::vector<uint8_t>(64, 0x3C));
  for (unsigned c = 0; c < r.config().cores; ++c) {
    const uint64_t dst = r.put(std::vector<uint8_t>(64, 0));
    for (int k = 32; k < 48; ++k) {
      // A base of bit k alone: its low 32 bits are zero, so only the full
      // compare puts the buffer below it.
      r.set_window(c, uint64_t(1) << k, ~uint64_t(0) >> 16);
      expect_fault_then_recover(r, c, {load(Buffer::OUT, 0, buf, 1, 64), end_insn()}, spec::err::WINDOW, "base", k);
      // A limit of bit k alone: the buffer is below it, in the window.
      r.set_window(c, hw::DeviceMemory::kBase, uint64_t(1) << k);
      r.run(c, {load(Buffer::OUT, 0, buf, 1, 64), store(Buffer::OUT, 0, dst, 1, 64), end_insn()});
      EXPECT_EQ(r.err(c), 0u) << "limit, core " << c << ", bit " << k;
      EXPECT_EQ(r.status(c), kDone) << "limit, core " << c << ", bit " << k;
    }
    EXPECT_EQ(r.get(dst, 64), std::vector<uint8_t>(64, 0x3C)) << "core " << c;
    // Edges at every bit: a base 2^k past the buffer denies it, a limit
    // 2^k - 1 past its end admits it, one byte short of its end denies it.
    for (int k = 0; k < 48; ++k) {
      r.set_window(c, buf + (uint64_t(1) << k), ~uint64_t(0) >> 16);
      expect_fault_then_recover(r, c, {load(Buffer::OUT, 0, buf, 1, 64), end_insn()}, spec::err::WINDOW,
                                "base past the buffer", k);
      r.set_window(c, buf, buf + 64 + (uint64_t(1) << k) - 1);
      r.run(c, {load(Buffer::OUT, 0, buf, 1, 64), end_insn()});
      EXPECT_EQ(r.err(c), 0u) << "limit past the end, core " << c << ", bit " << k;
    }
    r.set_window(c, buf, buf + 63);
    expect_fault_then_recover(r, c, {load(Buffer::OUT, 0, buf, 1, 64), end_insn()}, spec::err::WINDOW,
                              "limit one byte short", 0);
  }
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(HighBits, DmaAddressAndStrideBitsLeaveTheWindow) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  const uint64_t buf = r.put(std::vector<uint8_t>(4096, 0x11));
  for (unsigned c = 0; c < r.config().cores; ++c) {
    r.set_window(c, buf, buf + 4096);
    for (int k = 12; k < 48; ++k) {
      const uint64_t far = buf ^ (uint64_t(1) << k);  // outside [buf, buf + 4096) for every k >= 12
      expect_fault_then_recover(r, c, {load(Buffer::IN, 0, far, 1, 16), end_insn()}, spec::err::WINDOW,
                                "LOAD address", k);
      expect_fault_then_recover(r, c, {store(Buffer::OUT, 0, far, 1, 16), end_insn()}, spec::err::WINDOW,
                                "STORE address", k);
    }
    for (int k = 12; k < 32; ++k) {  // the second row lands `stride` past the first
      expect_fault_then_recover(r, c, {load(Buffer::IN, 0, buf, 2, 16, uint64_t(1) << k), end_insn()},
                                spec::err::WINDOW, "LOAD stride", k);
      expect_fault_then_recover(r, c, {store(Buffer::OUT, 0, buf, 2, 16, uint64_t(1) << k), end_insn()},
                                spec::err::WINDOW, "STORE stride", k);
    }
  }
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(HighBits, RingBaseBitsReachTheFetch) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  // An arena aligned to 2^21, so arena + 2^k sets bit k alone of the low 21.
  constexpr uint64_t kArena = uint64_t(1) << 21;
  const uint64_t ring_bytes = uint64_t(Rig::kRingSize) * spec::kInsnBytes;
  const uint64_t arena = r.alloc(kArena + ring_bytes, kArena);
  for (unsigned c = 0; c < r.config().cores; ++c) {
    const uint64_t own = r.ring(c);
    // A ring at arena + 2^k, k = 5 (the 32-byte alignment) .. 21: it runs.
    for (int k = 5; k <= 21; ++k) {
      r.move_ring(c, arena + (uint64_t(1) << k));
      r.run(c, {nop(), end_insn()});
      EXPECT_EQ(r.status(c), kDone) << "core " << c << ", ring at arena + 2^" << k;
      EXPECT_EQ(r.err(c), 0u) << "core " << c << ", ring at arena + 2^" << k;
    }
    r.soft_reset(c);
    for (int k = 22; k < 48; ++k) {
      // Nothing is allocated past the arena (and memory ends at
      // 0x1_1000_0000): the first fetch answers DECERR. A base cut to fewer
      // bits would fetch from allocated memory.
      r.set_ring_base(c, arena + (uint64_t(1) << k));
      r.wcreg(c, cr::RING_TAIL, 1);
      r.wcreg(c, cr::DOORBELL, 1);
      r.idle();
      EXPECT_EQ(r.err(c), spec::err::AXI_DECERR) << "core " << c << ", bit " << k;
      EXPECT_EQ(r.status(c), kError) << "core " << c << ", bit " << k;
      r.soft_reset(c);
      r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);
    }
    // Back at its own ring, the core runs again.
    r.move_ring(c, own);
    r.run(c, {nop(), end_insn()});
    EXPECT_EQ(r.status(c), kDone) << "core " << c;
  }
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

INSTANTIATE_TEST_SUITE_P(B, HighBits, every_config(), config_case_name);

}  // namespace
}  // namespace loom::rtl_errors
