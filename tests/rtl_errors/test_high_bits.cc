// Every address bit the spec gives a width of 48 (ring base, DMA window,
// LOAD/STORE addresses) and the strides' top bits, on the tiny fabric (rtl)
// and the golden model (ref). Device memory spans 4 GiB from 0x1000_0000,
// so the tests use what an address with a high bit set must do without
// memory behind it: a DMA leaves the window and is blocked before any beat
// (WINDOW), a window whose low 32 bits are zero still compares all 48, and a
// ring placed there answers DECERR on fetch (AXI_DECERR). A compare or an
// address path cut to fewer bits fails one of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "error_rig.h"

namespace loom::rtl_errors {
namespace {

class HighBits : public OnBackend {
 protected:
  /// Runs `prog` on core 0 and expects it halted on `cause` with no DMA byte
  /// moved and no memory beat written (the fetch reads the ring; an
  /// unallocated address read would answer DECERR, not `cause`), then
  /// recovers the core (soft reset, interrupts cleared).
  static void expect_fault_then_recover(Rig& r, const std::vector<Insn>& prog, uint32_t cause, const char* what,
                                        int bit) {
    const auto before = r.mem_stats();
    const uint64_t dma = r.counter(0, spec::Counter::BYTES_RD) + r.counter(0, spec::Counter::BYTES_WR);
    r.run(0, prog);
    EXPECT_EQ(r.err(0), cause) << what << ", bit " << bit;
    EXPECT_EQ(r.status(0), kError) << what << ", bit " << bit;
    EXPECT_EQ(r.counter(0, spec::Counter::BYTES_RD) + r.counter(0, spec::Counter::BYTES_WR), dma)
        << what << ", bit " << bit << ": a blocked DMA moved bytes";
    EXPECT_EQ(r.mem_stats().write_beats, before.write_beats) << what << ", bit " << bit << ": a blocked DMA wrote memory";
    r.soft_reset(0);
    r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);
    EXPECT_EQ(r.err(0), 0u);
  }
};

TEST_P(HighBits, WindowComparesAll48Bits) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t buf = r.put(std::vector<uint8_t>(64, 0x3C));
  const uint64_t dst = r.put(std::vector<uint8_t>(64, 0));
  for (int k = 32; k < 48; ++k) {
    // A base of bit k alone: its low 32 bits are zero, so only the full
    // compare puts the buffer below it.
    r.set_window(0, uint64_t(1) << k, ~uint64_t(0) >> 16);
    expect_fault_then_recover(r, {load(Buffer::OUT, 0, buf, 1, 64), end_insn()}, spec::err::WINDOW, "base", k);
    // A limit of bit k alone: the buffer is below it, in the window.
    r.set_window(0, hw::DeviceMemory::kBase, uint64_t(1) << k);
    r.run(0, {load(Buffer::OUT, 0, buf, 1, 64), store(Buffer::OUT, 0, dst, 1, 64), end_insn()});
    EXPECT_EQ(r.err(0), 0u) << "limit, bit " << k;
    EXPECT_EQ(r.status(0), kDone) << "limit, bit " << k;
  }
  EXPECT_EQ(r.get(dst, 64), std::vector<uint8_t>(64, 0x3C));
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(HighBits, DmaAddressAndStrideBitsLeaveTheWindow) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t buf = r.put(std::vector<uint8_t>(4096, 0x11));
  r.set_window(0, buf, buf + 4096);
  for (int k = 12; k < 48; ++k) {
    const uint64_t far = buf ^ (uint64_t(1) << k);  // outside [buf, buf + 4096) for every k >= 12
    expect_fault_then_recover(r, {load(Buffer::IN, 0, far, 1, 16), end_insn()}, spec::err::WINDOW, "LOAD address",
                              k);
    expect_fault_then_recover(r, {store(Buffer::OUT, 0, far, 1, 16), end_insn()}, spec::err::WINDOW,
                              "STORE address", k);
  }
  for (int k = 12; k < 32; ++k) {  // the second row lands `stride` past the first
    expect_fault_then_recover(r, {load(Buffer::IN, 0, buf, 2, 16, uint64_t(1) << k), end_insn()}, spec::err::WINDOW,
                              "LOAD stride", k);
    expect_fault_then_recover(r, {store(Buffer::OUT, 0, buf, 2, 16, uint64_t(1) << k), end_insn()},
                              spec::err::WINDOW, "STORE stride", k);
  }
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(HighBits, RingBaseBitsReachTheFetch) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  for (int k = 33; k < 48; ++k) {
    // Nothing is allocated at 2^k (memory ends at 0x1_1000_0000): the first
    // fetch answers DECERR. A base cut to fewer bits would fetch the ring.
    r.set_ring_base(0, uint64_t(1) << k);
    r.wcreg(0, cr::RING_TAIL, 1);
    r.wcreg(0, cr::DOORBELL, 1);
    r.idle();
    EXPECT_EQ(r.err(0), spec::err::AXI_DECERR) << "bit " << k;
    EXPECT_EQ(r.status(0), kError) << "bit " << k;
    r.soft_reset(0);
    r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);
  }
  // Back at its own ring, the core runs again.
  r.set_ring_base(0, r.ring(0));
  r.run(0, {nop(), end_insn()});
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

INSTANTIATE_TEST_SUITE_P(B, HighBits, ::testing::Values("rtl", "ref"), backend_name);

}  // namespace
}  // namespace loom::rtl_errors
