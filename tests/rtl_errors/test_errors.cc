// Error causes on the tiny fabric (rtl) and the golden model (ref) through the
// register map: ILLEGAL_INSN, SCRATCHPAD_OOB, WINDOW, AXI_SLVERR/AXI_DECERR,
// with ERR_PC, STATUS, IRQ_STATUS and the interrupt line.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error_rig.h"

namespace loom::rtl_errors {
namespace {

using K = spec::Counter;
using hw::FaultKind;

/// The state every faulting case must leave core `c` in: exactly `cause`,
/// ERR_PC = `pc`, halted (error only), the global error bit and the error
/// interrupt status set, RING_HEAD as the spec allows for the backend.
void expect_faulted(Rig& r, unsigned c, uint32_t cause, uint32_t pc, uint32_t tail) {
  EXPECT_EQ(r.err(c), cause);
  EXPECT_EQ(r.err_pc(c), pc);
  EXPECT_EQ(r.status(c), kError);
  const uint32_t g = r.greg(spec::reg::STATUS);
  EXPECT_EQ(g & (1u << c), 0u) << "global busy bit";
  EXPECT_NE(g & spec::reg::STATUS_ERROR(c), 0u) << "global error bit";
  const uint32_t irq = r.greg(spec::reg::IRQ_STATUS);
  EXPECT_NE(irq & spec::reg::IRQ_STATUS_ERROR(c), 0u) << "IRQ_STATUS error bit";
  EXPECT_EQ(irq & (1u << c), 0u) << "IRQ_STATUS completion bit";
  const uint32_t head = r.reg(c, cr::RING_HEAD);
  if (r.is_rtl()) {
    // Fetch runs ahead: the faulting instruction was fetched, later ones may be.
    EXPECT_GT(head, pc);
    EXPECT_LE(head, tail);
  } else {
    EXPECT_EQ(head, pc);  // the faulting instruction did not retire
  }
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

/// INSN_SYNC after a fault: exactly `before` on ref. On rtl the dispatcher
/// hands a unit its instruction and moves on while the unit checks it (units
/// run concurrently, docs/rtl-core.md), so the NOP right after the faulting
/// instruction may retire before the error halts the core.
void expect_syncs_after_fault(Rig& r, uint64_t before) {
  const uint64_t n = r.counter(0, K::INSN_SYNC);
  if (r.is_rtl()) {
    EXPECT_GE(n, before);
    EXPECT_LE(n, before + 1);
  } else {
    EXPECT_EQ(n, before);
  }
}

class Illegal : public OnBackend {};

TEST_P(Illegal, OpcodesFlagsBuffersAndAlignment) {
  struct Case {
    const char* what;
    Insn insn;
  };
  spec::GemmInsn gemm_ldc;
  gemm_ldc.m = gemm_ldc.n = gemm_ldc.k_len = 1;
  gemm_ldc.lda = gemm_ldc.ldb = 1;
  gemm_ldc.ldc = 6;
  const Case cases[] = {
      {"opcode 11", Insn{{11}}},
      {"opcode 63", Insn{{63}}},
      {"pop_prev on SEM_SIGNAL", with_tokens(sem_signal(0), true, false, false, false)},
      {"push_next on SEM_WAIT", with_tokens(sem_wait(0, 0), false, false, false, true)},
      {"pop_next on FENCE", with_tokens(fence(), false, true, false, false)},
      {"push_prev on END", with_tokens(end_insn(), false, false, true, false)},
      {"pop_prev on LOAD (no previous unit)", with_tokens(load(Buffer::IN, 0, 0, 0, 0), true, false, false, false)},
      {"push_next on STORE (no next unit)", with_tokens(store(Buffer::OUT, 0, 0, 0, 0), false, false, false, true)},
      {"LOAD into ACC", load(Buffer::ACC, 0, 0, 0, 0)},
      {"LOAD into buffer 5", load(Buffer(5), 0, 0, 0, 0)},
      {"LOAD into buffer 7", load(Buffer(7), 0, 0, 0, 0)},
      {"STORE from IN", store(Buffer::IN, 0, 0, 0, 0)},
      {"STORE from PARAM", store(Buffer::PARAM, 0, 0, 0, 0)},
      {"STORE from ACC, sp_addr 2", store(Buffer::ACC, 2, 0, 0, 0)},
      {"STORE from ACC, sp_stride 6", store(Buffer::ACC, 0, 0, 0, 0, 4, 6)},
      {"LOAD into PARAM, sp_addr 2", load(Buffer::PARAM, 2, 0, 0, 0)},
      {"GEMM acc_addr 2", gemm(0, 0, 2, 1, 1, 1)},
      {"GEMM ldc 6", gemm_ldc.encode()},
      {"SEM_WAIT on semaphore 8 (tiny has 8)", sem_wait(8, 0)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(GetParam()) + ": " + c.what);
    Rig r(GetParam());
    ASSERT_TRUE(r.ok());
    // A LOAD before the faulting instruction, fenced so that it retires.
    const uint64_t src = r.put(std::vector<uint8_t>(64, 0x5A));
    r.run(0, {nop(), load(Buffer::OUT, 0, src, 1, 64), fence(), c.insn, nop(), end_insn()});
    expect_faulted(r, 0, spec::err::ILLEGAL_INSN, 3, 6);
    EXPECT_EQ(r.counter(0, K::INSN_LOAD), 1u);
    expect_syncs_after_fault(r, 2);
    EXPECT_EQ(r.counter(0, K::BYTES_WR), 0u);
    EXPECT_EQ(r.mem_stats().write_bursts, 0u);
    // Core 1 was never started and is untouched.
    EXPECT_EQ(r.status(1), 0u);
    EXPECT_EQ(r.err(1), 0u);
  }
}

TEST_P(Illegal, DoorbellIgnoredWhileInError) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  r.run(0, {nop(), Insn{{12}}, nop(), end_insn()});
  expect_faulted(r, 0, spec::err::ILLEGAL_INSN, 1, 4);
  const uint32_t head = r.reg(0, cr::RING_HEAD);
  r.wcreg(0, cr::DOORBELL, 1);
  r.idle();
  EXPECT_EQ(r.status(0), kError);
  EXPECT_EQ(r.err(0), spec::err::ILLEGAL_INSN);
  EXPECT_EQ(r.err_pc(0), 1u);
  EXPECT_EQ(r.reg(0, cr::RING_HEAD), head);
  EXPECT_EQ(r.counter(0, K::INSN_SYNC), 1u);
}

TEST_P(Illegal, InvalidRingAtDoorbell) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  r.wcreg(0, cr::RING_SIZE, 48);  // not a power of two
  r.wcreg(0, cr::RING_TAIL, 1);
  r.wcreg(0, cr::DOORBELL, 1);
  r.idle();
  EXPECT_EQ(r.err(0), spec::err::ILLEGAL_INSN);
  EXPECT_EQ(r.status(0), kError);
  EXPECT_EQ(r.counter(0, K::INSN_SYNC), 0u);
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(Illegal, LaterStoreDoesNotRunAfterIllegalLoad) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t dst = r.put(std::vector<uint8_t>(64, 0xEE));
  r.run(0, {load(Buffer::ACC, 0, 0, 0, 0), store(Buffer::OUT, 0, dst, 1, 64), end_insn()});
  expect_faulted(r, 0, spec::err::ILLEGAL_INSN, 0, 3);
  EXPECT_EQ(r.counter(0, K::INSN_STORE), 0u);
  EXPECT_EQ(r.get(dst, 64), std::vector<uint8_t>(64, 0xEE));
  EXPECT_EQ(r.mem_stats().write_bursts, 0u);
}

TEST_P(Illegal, EarlierLoadInFlightWhenLaterInstructionFaults) {
  // No FENCE: the LOAD is still waiting on memory when the STORE is rejected.
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t src = r.put(std::vector<uint8_t>(64, 0x5A));
  r.run(0, {load(Buffer::OUT, 0, src, 1, 64), store(Buffer::IN, 0, 0, 0, 0), end_insn()});
  expect_faulted(r, 0, spec::err::ILLEGAL_INSN, 1, 3);
  if (r.is_rtl()) {
    // The halt abandons every unit's instruction (docs/rtl-core.md, Core and
    // the unit contract's halt_i), so the earlier LOAD may not retire.
    EXPECT_LE(r.counter(0, K::INSN_LOAD), 1u);
  } else {
    EXPECT_EQ(r.counter(0, K::INSN_LOAD), 1u);  // everything before ERR_PC completed
  }
}

class Scratchpad : public OnBackend {};

TEST_P(Scratchpad, OutOfBoundsMovesNothing) {
  // tiny: IN, WGT, ACC 16 KiB; OUT 8 KiB; PARAM 4 KiB.
  constexpr uint64_t kIn = 16 * 1024, kOut = 8 * 1024, kAcc = 16 * 1024, kParam = 4 * 1024;
  struct Case {
    const char* what;
    Insn insn;
  };
  spec::EltwiseInsn e;
  e.count = 10;
  e.a_shift = e.b_shift = 1;
  e.b_addr = kIn - 9;
  spec::GemmInsn g;  // the second row of C starts at the end of ACC
  g.m = 2;
  g.n = g.k_len = 1;
  g.lda = g.ldb = 1;
  g.ldc = kAcc;
  const Case cases[] = {
      {"LOAD past IN", load(Buffer::IN, kIn - 8, 0, 1, 16)},
      {"LOAD padding row past IN", load(Buffer::IN, kIn - 16, 0, 1, 16, 16, 16, 0, 1)},
      {"LOAD past PARAM", load(Buffer::PARAM, kParam - 4, 0, 1, 8)},
      {"STORE past OUT", store(Buffer::OUT, kOut - 4, 0, 1, 8)},
      {"STORE second row past ACC", store(Buffer::ACC, kAcc - 16, 0, 2, 16, 16, 16)},
      {"GEMM past ACC", g.encode()},
      {"ELTWISE B past IN", e.encode()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(GetParam()) + ": " + c.what);
    Rig r(GetParam());
    ASSERT_TRUE(r.ok());
    const uint64_t src = r.put(std::vector<uint8_t>(64, 0x11));
    const uint64_t dst = r.put(std::vector<uint8_t>(64, 0xCC));
    Insn insn = c.insn;
    const uint64_t op = spec::get_bits(insn, 0, 6);
    if (op == uint64_t(spec::Opcode::LOAD)) spec::set_bits(insn, 64, 48, src);
    if (op == uint64_t(spec::Opcode::STORE)) spec::set_bits(insn, 64, 48, dst);
    r.run(0, {nop(), insn, end_insn()});
    expect_faulted(r, 0, spec::err::SCRATCHPAD_OOB, 1, 3);
    EXPECT_EQ(r.get(dst, 64), std::vector<uint8_t>(64, 0xCC));
    EXPECT_EQ(r.counter(0, K::BYTES_RD), 0u);
    EXPECT_EQ(r.counter(0, K::BYTES_WR), 0u);
    EXPECT_EQ(r.counter(0, K::INSN_LOAD) + r.counter(0, K::INSN_STORE) + r.counter(0, K::INSN_COMPUTE), 0u);
    EXPECT_EQ(r.mem_stats().write_bursts, 0u);
  }
}

class Window : public OnBackend {};

/// One 512-byte allocation: core 0 owns the first half, the second half is
/// another tenant's canary. Every byte the faulting DMA would touch answers
/// SLVERR, so any AXI request issued for it shows in the memory statistics.
struct Tenants {
  uint64_t mine = 0, other = 0;
  explicit Tenants(Rig& r) {
    mine = r.put(std::vector<uint8_t>(512, 0x22));
    other = mine + 256;
    r.fill(other, std::vector<uint8_t>(256, 0xCA));
    r.set_window(0, mine, mine + 256);
  }
};

TEST_P(Window, StoreCrossingLimitIsBlockedWhole) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  Tenants t(r);
  // Fill OUT from a source of its own (window opened for it), then narrow
  // the window to core 0's half before the store.
  const uint64_t src = r.put(std::vector<uint8_t>(128, 0x77));
  r.set_window(0, src, src + 128);
  r.run(0, {load(Buffer::OUT, 0, src, 2, 64), end_insn()});  // ring slots 0, 1
  ASSERT_EQ(r.err(0), 0u);
  r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);  // forget that stream's completion
  r.set_window(0, t.mine, t.mine + 256);
  r.inject_fault(t.mine + 192, 128, FaultKind::SlvErr);  // tripwire over the whole store range
  const auto before = r.mem_stats();
  r.run(0, {nop(), store(Buffer::OUT, 0, t.mine + 192, 2, 64), end_insn()});  // slots 2..4
  expect_faulted(r, 0, spec::err::WINDOW, 3, 5);
  EXPECT_EQ(r.get(t.other, 256), std::vector<uint8_t>(256, 0xCA));
  EXPECT_EQ(r.get(t.mine, 256), std::vector<uint8_t>(256, 0x22));  // not even the in-window row moved
  EXPECT_EQ(r.counter(0, K::BYTES_WR), 0u);
  const auto after = r.mem_stats();
  EXPECT_EQ(after.write_bursts, before.write_bursts) << "an AXI write was issued for a blocked STORE";
  EXPECT_EQ(after.slverr, 0u);
}

TEST_P(Window, LoadOneBytePastLimitIssuesNoRead) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  Tenants t(r);
  const uint64_t dst = r.put(std::vector<uint8_t>(64, 0xEE));
  r.inject_fault(t.mine, 512, FaultKind::SlvErr);  // tripwire: any read of the tenants
  r.run(0, {nop(), nop(), load(Buffer::OUT, 0, t.mine + 1, 4, 64), end_insn()});
  expect_faulted(r, 0, spec::err::WINDOW, 2, 4);
  EXPECT_EQ(r.counter(0, K::BYTES_RD), 0u);
  EXPECT_EQ(r.counter(0, K::INSN_LOAD), 0u);
  const auto s = r.mem_stats();
  EXPECT_EQ(s.slverr, 0u) << "an AXI read was issued for a blocked LOAD";
  EXPECT_EQ(s.decerr, 0u);
  EXPECT_EQ(s.write_bursts, 0u);
  EXPECT_EQ(r.get(dst, 64), std::vector<uint8_t>(64, 0xEE));
  EXPECT_EQ(r.get(t.other, 256), std::vector<uint8_t>(256, 0xCA));
}

TEST_P(Window, StridedLoadLastRowOutside) {
  // First row inside, last row outside via dram_stride: the whole range counts.
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  Tenants t(r);
  r.inject_fault(t.mine, 512, FaultKind::DecErr);
  r.run(0, {load(Buffer::IN, 0, t.mine, 2, 16, 256), end_insn()});
  expect_faulted(r, 0, spec::err::WINDOW, 0, 2);
  EXPECT_EQ(r.mem_stats().decerr, 0u) << "an AXI read was issued for a blocked LOAD";
  EXPECT_EQ(r.counter(0, K::BYTES_RD), 0u);
}

TEST_P(Window, DefaultDenyButPurePaddingPasses) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t b = r.put(std::vector<uint8_t>(16, 1));
  const uint64_t dst = r.put(std::vector<uint8_t>(16, 0xEE));
  r.set_window(0, 0, 0);  // nothing allowed
  // Zero real rows: padding only, touches no memory and is not window-checked.
  r.run(0, {load(Buffer::OUT, 0, 0, 0, 8, 8, 8, 2, 0, 5), load(Buffer::IN, 0, b, 1, 1), end_insn()});
  expect_faulted(r, 0, spec::err::WINDOW, 1, 3);
  EXPECT_EQ(r.counter(0, K::INSN_LOAD), 1u);
  // Recover and read the padding back through a STORE inside a fresh window.
  r.soft_reset(0);
  EXPECT_EQ(r.err(0), 0u);
  r.set_window(0, dst, dst + 16);
  r.run(0, {store(Buffer::OUT, 0, dst, 1, 16), end_insn()});
  EXPECT_EQ(r.err(0), 0u);
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.get(dst, 16), std::vector<uint8_t>(16, 5));
}

class Axi : public OnBackend {};

TEST_P(Axi, InjectedFaultsOnLoadAndStore) {
  struct Case {
    const char* what;
    bool is_load;
    FaultKind kind;
    uint32_t cause;
  };
  const Case cases[] = {
      {"SLVERR on LOAD", true, FaultKind::SlvErr, spec::err::AXI_SLVERR},
      {"DECERR on LOAD", true, FaultKind::DecErr, spec::err::AXI_DECERR},
      {"SLVERR on STORE", false, FaultKind::SlvErr, spec::err::AXI_SLVERR},
      {"DECERR on STORE", false, FaultKind::DecErr, spec::err::AXI_DECERR},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(GetParam()) + ": " + c.what);
    Rig r(GetParam());
    ASSERT_TRUE(r.ok());
    const uint64_t buf = r.put(std::vector<uint8_t>(256, 0x44));
    // Row 3 of a 4-row transfer (stride 32) hits the faulting byte.
    r.inject_fault(buf + 100, 1, c.kind);
    const Insn dma = c.is_load ? load(Buffer::IN, 0, buf, 4, 16, 32) : store(Buffer::OUT, 0, buf, 4, 16, 32);
    r.run(0, {nop(), dma, nop(), end_insn()});
    expect_faulted(r, 0, c.cause, 1, 4);
    EXPECT_EQ(r.counter(0, c.is_load ? K::INSN_LOAD : K::INSN_STORE), 0u);
    expect_syncs_after_fault(r, 1);
    if (r.is_rtl()) {
      const auto s = r.mem_stats();
      EXPECT_GT(c.kind == FaultKind::SlvErr ? s.slverr : s.decerr, 0u) << "memory model never answered the fault";
    } else if (!c.is_load) {
      // The golden model moves nothing; the RTL may keep earlier beats (docs/rtl-core.md).
      EXPECT_EQ(r.get(buf, 256), std::vector<uint8_t>(256, 0x44));
    }
    // Recovery: soft reset, clear the fault, the same transfer completes.
    r.clear_faults();
    r.soft_reset(0);
    EXPECT_EQ(r.err(0), 0u);
    EXPECT_EQ(r.status(0), 0u);
    r.run(0, {dma, end_insn()});
    EXPECT_EQ(r.err(0), 0u);
    EXPECT_EQ(r.status(0), kDone);
    EXPECT_EQ(r.counter(0, c.is_load ? K::INSN_LOAD : K::INSN_STORE), 1u);
    EXPECT_TRUE(r.health().is_ok()) << r.health().str();
  }
}

TEST_P(Axi, UnallocatedMemoryAnswersDecerr) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const uint64_t b = r.put(std::vector<uint8_t>(64, 0));
  r.run(0, {load(Buffer::IN, 0, b + 4096, 1, 64), end_insn()});
  expect_faulted(r, 0, spec::err::AXI_DECERR, 0, 2);
}

class Irq : public OnBackend {};

TEST_P(Irq, ErrorInterruptRaisesLineAndW1CClearsIt) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.irq_line());
  r.wgreg(spec::reg::IRQ_ENABLE, 1u << 8);  // core 0 error only
  EXPECT_EQ(r.greg(spec::reg::IRQ_ENABLE), 1u << 8);
  r.run(0, {nop(), Insn{{40}}, end_insn()});
  expect_faulted(r, 0, spec::err::ILLEGAL_INSN, 1, 3);
  EXPECT_EQ(r.greg(spec::reg::IRQ_STATUS), 1u << 8);
  EXPECT_TRUE(r.irq_line());
  // W1C of another bit changes nothing.
  r.wgreg(spec::reg::IRQ_STATUS, 1u << 9);
  EXPECT_EQ(r.greg(spec::reg::IRQ_STATUS), 1u << 8);
  EXPECT_TRUE(r.irq_line());
  r.wgreg(spec::reg::IRQ_STATUS, 1u << 8);
  EXPECT_EQ(r.greg(spec::reg::IRQ_STATUS), 0u);
  EXPECT_FALSE(r.irq_line());
  // Clearing the interrupt does not clear the cause.
  EXPECT_EQ(r.err(0), spec::err::ILLEGAL_INSN);
  // ERR_CAUSE is W1C too.
  r.wcreg(0, cr::ERR_CAUSE, 0xFFFFFFFFu);
  EXPECT_EQ(r.err(0), 0u);
  EXPECT_EQ(r.status(0) & kError, 0u);
  EXPECT_EQ(r.greg(spec::reg::STATUS) & (1u << 8), 0u);
  EXPECT_FALSE(r.irq_line());
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(Irq, StatusLatchesWhileDisabledAndOtherCoreStaysQuiet) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  // Core 1 errors with only core 0's interrupts enabled: status, no line.
  r.wgreg(spec::reg::IRQ_ENABLE, (1u << 0) | (1u << 8));
  r.run(1, {Insn{{50}}, end_insn()});
  EXPECT_EQ(r.err(1), spec::err::ILLEGAL_INSN);
  EXPECT_EQ(r.err_pc(1), 0u);
  EXPECT_EQ(r.greg(spec::reg::IRQ_STATUS), 1u << 9);
  EXPECT_FALSE(r.irq_line());
  EXPECT_EQ(r.greg(spec::reg::STATUS), 1u << 9);
  // Enabling it afterwards raises the line from the latched status.
  r.wgreg(spec::reg::IRQ_ENABLE, 1u << 9);
  EXPECT_TRUE(r.irq_line());
  r.wgreg(spec::reg::IRQ_STATUS, 0xFFFFu);
  EXPECT_FALSE(r.irq_line());
  // Core 0 completes normally: its completion bit, not an error bit.
  r.wgreg(spec::reg::IRQ_ENABLE, 0xFFFFu);
  r.run(0, {nop(), end_insn()});
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.greg(spec::reg::IRQ_STATUS), 1u << 0);
  EXPECT_TRUE(r.irq_line());
  r.wgreg(spec::reg::IRQ_STATUS, 1u << 0);
  EXPECT_FALSE(r.irq_line());
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

INSTANTIATE_TEST_SUITE_P(B, Illegal, ::testing::Values("rtl", "ref"), backend_name);
INSTANTIATE_TEST_SUITE_P(B, Scratchpad, ::testing::Values("rtl", "ref"), backend_name);
INSTANTIATE_TEST_SUITE_P(B, Window, ::testing::Values("rtl", "ref"), backend_name);
INSTANTIATE_TEST_SUITE_P(B, Axi, ::testing::Values("rtl", "ref"), backend_name);
INSTANTIATE_TEST_SUITE_P(B, Irq, ::testing::Values("rtl", "ref"), backend_name);

}  // namespace
}  // namespace loom::rtl_errors
