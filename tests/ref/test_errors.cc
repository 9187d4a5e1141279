// Error behaviour: dependency tokens and DEADLOCK, illegal instructions and
// fields, scratchpad bounds, DMA windows and AXI errors; a faulting
// instruction must change nothing but the error state.
#include <gtest/gtest.h>

#include "harness.h"
#include "naive.h"

namespace loom::ref::test {
namespace {

namespace cr = spec::core_reg;

spec::Insn gemm_1x1(uint64_t acc_addr = 0) {
  spec::GemmInsn g;
  g.m = g.n = g.k_len = 1;
  g.lda = g.ldb = 1;
  g.ldc = 4;
  g.acc_addr = acc_addr;
  return g.encode();
}

/// Runs `prog` on core 0 and returns ERR_CAUSE.
uint32_t run_err(Harness& h, const std::vector<spec::Insn>& prog) {
  h.run(0, prog);
  return h.err(0);
}

TEST(RefTokens, LegalProducerConsumerChain) {
  Harness h;
  const uint64_t src = h.put(std::vector<uint8_t>(16, 2)), dst = h.alloc(16);
  // load -> compute -> store, then store hands the buffer back to compute
  // and compute back to load, as in a double-buffered loop.
  h.run(0, {with_tokens(load(Buffer::IN, 0, src, 1, 1), false, false, false, true),
            with_tokens(load(Buffer::WGT, 0, src, 1, 1), false, false, false, true),
            with_tokens(gemm_1x1(), true, false, false, false), with_tokens(gemm_1x1(), true, false, true, true),
            with_tokens(store(Buffer::ACC, 0, dst, 1, 4), true, false, true, false),
            with_tokens(gemm_1x1(), false, true, false, false),
            with_tokens(load(Buffer::IN, 0, src, 1, 1), false, true, false, false), end_insn()});
  EXPECT_EQ(h.err(0), 0u);
  EXPECT_EQ(h.status(0), kDone);
  for (unsigned q = 0; q < hw::kNumTokenQueues; ++q) EXPECT_EQ(h.core(0).tokens[q], 0u) << q;
}

TEST(RefTokens, PopWithoutEarlierPushIsDeadlock) {
  Harness h;
  const uint64_t src = h.put(std::vector<uint8_t>(16, 2));
  // The store pops a compute token that only a later instruction pushes.
  EXPECT_EQ(run_err(h, {nop(), with_tokens(store(Buffer::OUT, 0, src, 1, 4), true, false, false, false),
                        with_tokens(gemm_1x1(), false, false, false, true), end_insn()}),
            spec::err::DEADLOCK);
  EXPECT_EQ(h.reg(0, cr::ERR_PC), 1u);
  EXPECT_EQ(h.reg(0, cr::RING_HEAD), 1u);  // the faulting instruction did not retire
  EXPECT_EQ(h.status(0), kError);          // halted: END never ran
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_COMPUTE), 0u);
  // A doorbell does not restart a core in error.
  h.dev().write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1);
  h.idle();
  EXPECT_EQ(h.reg(0, cr::RING_HEAD), 1u);
}

TEST(RefTokens, ZeroSizeComputeStillMovesTokens) {
  Harness h;
  spec::GemmInsn g;     // m = 0
  spec::EltwiseInsn e;  // count = 0
  e.a_shift = e.b_shift = 1;
  h.run(0, {with_tokens(load(Buffer::IN, 0, 0, 0, 0), false, false, false, true),
            with_tokens(g.encode(), true, false, false, true), with_tokens(e.encode(), false, false, false, true),
            with_tokens(store(Buffer::OUT, 0, 0, 0, 0), true, false, false, false),
            with_tokens(store(Buffer::OUT, 0, 0, 0, 0), true, false, false, false), end_insn()});
  EXPECT_EQ(h.err(0), 0u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_COMPUTE), 2u);
  for (unsigned q = 0; q < hw::kNumTokenQueues; ++q) EXPECT_EQ(h.core(0).tokens[q], 0u) << q;
}

TEST(RefIllegal, OpcodesFlagsAndFields) {
  struct Case {
    const char* what;
    spec::Insn insn;
  };
  auto postop = [](auto edit) {
    spec::PostopInsn p;
    p.m = p.n = 1;
    edit(p);
    return p.encode();
  };
  auto eltwise = [](auto edit) {
    spec::EltwiseInsn e;
    e.count = 1;
    e.a_shift = e.b_shift = 1;
    edit(e);
    return e.encode();
  };
  spec::PoolInsn pool_avg_shift0;
  pool_avg_shift0.avg = 1;
  spec::GemmInsn gemm_ldc;
  gemm_ldc.ldc = 6;
  const Case cases[] = {
      {"opcode 11", spec::Insn{{11}}},
      {"opcode 63", spec::Insn{{63}}},
      {"pop_prev on LOAD", with_tokens(load(Buffer::IN, 0, 0, 0, 0), true, false, false, false)},
      {"push_prev on LOAD", with_tokens(load(Buffer::IN, 0, 0, 0, 0), false, false, true, false)},
      {"push_next on STORE", with_tokens(store(Buffer::OUT, 0, 0, 0, 0), false, false, false, true)},
      {"pop_next on STORE", with_tokens(store(Buffer::OUT, 0, 0, 0, 0), false, true, false, false)},
      {"flag on SEM_SIGNAL", with_tokens(sem_signal(0), false, false, false, true)},
      {"flag on END", with_tokens(end_insn(), true, false, false, false)},
      {"LOAD into ACC", load(Buffer::ACC, 0, 0, 0, 0)},
      {"LOAD into buffer 5", load(spec::Buffer(5), 0, 0, 0, 0)},
      {"STORE from IN", store(Buffer::IN, 0, 0, 0, 0)},
      {"STORE from WGT", store(Buffer::WGT, 0, 0, 0, 0)},
      {"LOAD into PARAM misaligned", load(Buffer::PARAM, 2, 0, 0, 0)},
      {"STORE from ACC misaligned stride", store(Buffer::ACC, 0, 0, 0, 0, 4, 6)},
      {"GEMM acc_addr misaligned", gemm_1x1(2)},
      {"GEMM ldc misaligned", gemm_ldc.encode()},
      {"POSTOP residual with res_shift 0", postop([](auto& p) { p.residual = 1; })},
      {"POSTOP clip_lo > clip_hi", postop([](auto& p) { p.clip_lo = 1; })},
      {"POSTOP param_addr misaligned", postop([](auto& p) { p.param_addr = 6; })},
      {"POSTOP parameter table shift 0", postop([](auto&) {})},
      {"POOL avg with shift 0", pool_avg_shift0.encode()},
      {"ELTWISE a_shift 63", eltwise([](auto& e) { e.a_shift = 63; })},
      {"ELTWISE b_shift 0 with b_mult 0", eltwise([](auto& e) { e.b_shift = 0; })},
      {"SEM_WAIT on a semaphore the config lacks", sem_wait(8, 0)},
      {"SEM_SIGNAL on a semaphore the config lacks", sem_signal(200)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Harness h;
    auto& out = h.core(0).buf(Buffer::OUT);
    std::fill(out.begin(), out.begin() + 16, uint8_t(0xEE));
    EXPECT_EQ(run_err(h, {nop(), c.insn, end_insn()}), spec::err::ILLEGAL_INSN);
    EXPECT_EQ(h.reg(0, cr::ERR_PC), 1u);
    EXPECT_EQ(h.status(0), kError);
    EXPECT_EQ(out[0], 0xEE);
  }
}

// POSTOP rescale on a well-formed parameter table, so that each case fails
// for its own reason only: the unedited instruction (and each legal edit)
// runs, each illegal edit faults with OUT untouched.
TEST(RefIllegal, PostopRescale) {
  struct Case {
    const char* what;
    int32_t a_shift;          // PARAM word after the n triples and a_mult
    uint64_t param_from_end;  // param_addr = PARAM size - this (0: param_addr 0)
    void (*edit)(spec::PostopInsn&);
    uint32_t want;
  };
  constexpr unsigned kN = 3;
  const Case cases[] = {
      {"rescale with residual", 30, 0, [](spec::PostopInsn&) {}, 0},
      {"a_shift 1", 1, 0, [](spec::PostopInsn&) {}, 0},
      {"a_shift 62", 62, 0, [](spec::PostopInsn&) {}, 0},
      {"add_lo == add_hi", 30, 0, [](spec::PostopInsn& p) { p.add_lo = p.add_hi; }, 0},
      {"add_lo > add_hi without rescale is ignored", 0, 0,
       [](spec::PostopInsn& p) { p.rescale = 0, p.add_lo = 5, p.add_hi = 4; }, 0},
      {"rescale without residual", 30, 0, [](spec::PostopInsn& p) { p.residual = 0; }, spec::err::ILLEGAL_INSN},
      {"add_lo > add_hi", 30, 0, [](spec::PostopInsn& p) { p.add_lo = 5, p.add_hi = 4; }, spec::err::ILLEGAL_INSN},
      {"add_lo > add_hi with m = 0", 30, 0, [](spec::PostopInsn& p) { p.m = 0, p.add_lo = 127, p.add_hi = -128; },
       spec::err::ILLEGAL_INSN},
      {"rescale without residual with n = 0", 30, 0, [](spec::PostopInsn& p) { p.n = 0, p.residual = 0; },
       spec::err::ILLEGAL_INSN},
      {"a_shift 0 in PARAM", 0, 0, [](spec::PostopInsn&) {}, spec::err::ILLEGAL_INSN},
      {"a_shift 63 in PARAM", 63, 0, [](spec::PostopInsn&) {}, spec::err::ILLEGAL_INSN},
      {"a_shift -1 in PARAM", -1, 0, [](spec::PostopInsn&) {}, spec::err::ILLEGAL_INSN},
      // The whole word is the shift: legal low six bits do not make it legal.
      {"a_shift INT32_MIN + 30 in PARAM", INT32_MIN + 30, 0, [](spec::PostopInsn&) {}, spec::err::ILLEGAL_INSN},
      {"a_shift 94 in PARAM", 94, 0, [](spec::PostopInsn&) {}, spec::err::ILLEGAL_INSN},
      {"pair ends flush with PARAM", 30, 12 * kN + 8, [](spec::PostopInsn&) {}, 0},
      {"triples fit, the pair does not", 30, 12 * kN, [](spec::PostopInsn&) {}, spec::err::SCRATCHPAD_OOB},
      {"the pair's shift word past PARAM", 30, 12 * kN + 4, [](spec::PostopInsn&) {}, spec::err::SCRATCHPAD_OOB},
      {"triples flush with PARAM without rescale", 0, 12 * kN,
       [](spec::PostopInsn& p) { p.rescale = 0; }, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Harness h;
    auto& par = h.core(0).buf(Buffer::PARAM);
    spec::PostopInsn p;
    p.m = 2;
    p.n = kN;
    p.acc_addr = 0;
    p.out_addr = 0;
    p.param_addr = c.param_from_end ? par.size() - c.param_from_end : 0;
    p.clip_lo = -128;
    p.clip_hi = 127;
    p.residual = 1;
    p.rescale = 1;
    p.res_addr = 0;
    p.res_mult = 1 << 30;
    p.res_shift = 31;
    p.a_zp = 3;
    p.add_zp = -2;
    p.add_lo = -100;
    p.add_hi = 100;
    c.edit(p);
    // Channels: bias j, unit scale (2^30 / 2^30); then the add's pair, unless it falls past PARAM.
    std::vector<int32_t> table;
    for (unsigned j = 0; j < kN; ++j) table.insert(table.end(), {int32_t(j), 1 << 30, 30});
    table.push_back(1 << 30);
    table.push_back(c.a_shift);
    const auto bytes = le32(table);
    for (size_t k = 0; k < bytes.size() && p.param_addr + k < par.size(); ++k) par[p.param_addr + k] = bytes[k];
    auto& out = h.core(0).buf(Buffer::OUT);
    std::fill(out.begin(), out.begin() + 16, uint8_t(0xEE));
    const uint32_t err = run_err(h, {nop(), p.encode(), end_insn()});
    EXPECT_EQ(err, c.want);
    if (c.want != 0) {
      EXPECT_EQ(h.reg(0, cr::ERR_PC), 1u);
      EXPECT_EQ(h.status(0), kError);
      for (int k = 0; k < 16; ++k) EXPECT_EQ(out[k], 0xEE) << k;
    } else {
      EXPECT_EQ(h.status(0), kDone);
      // ACC and IN are zero: channel j's result is its bias j, and the residual adds 0.
      for (unsigned e = 0; e < p.m * p.n; ++e) {
        const int64_t x = e % kN;
        const int64_t y = p.rescale ? naive_clamp(naive_rq(x - p.a_zp, 1 << 30, c.a_shift) + p.add_zp, p.add_lo, p.add_hi)
                                    : naive_clamp(x, p.clip_lo, p.clip_hi);
        EXPECT_EQ(int(int8_t(out[e])), int(y)) << e;
      }
    }
  }
}

TEST(RefIllegal, NopIgnoresItsFlags) {
  Harness h;
  EXPECT_EQ(run_err(h, {with_tokens(nop(), true, true, true, true), end_insn()}), 0u);
  for (unsigned q = 0; q < hw::kNumTokenQueues; ++q) EXPECT_EQ(h.core(0).tokens[q], 0u);
}

TEST(RefScratchpad, OutOfBoundsMovesNothing) {
  const uint64_t size_in = 16 * 1024;  // tiny: 16 KiB IN and ACC, 8 KiB OUT
  struct Case {
    const char* what;
    spec::Insn insn;
  };
  spec::EltwiseInsn e;
  e.count = 10;
  e.a_shift = e.b_shift = 1;
  e.b_addr = size_in - 9;
  spec::GemmInsn g;
  g.m = 2;
  g.n = 1;
  g.k_len = 1;
  g.ldc = 16 * 1024;  // the second row starts at the end of ACC
  g.lda = g.ldb = 1;
  const Case cases[] = {
      {"LOAD past IN", load(Buffer::IN, size_in - 8, 0, 1, 16)},
      {"LOAD padding rows past IN", load(Buffer::IN, size_in - 16, 0, 1, 16, 16, 16, 0, 1)},
      {"STORE past OUT", store(Buffer::OUT, 8 * 1024 - 4, 0, 1, 8)},
      {"GEMM past ACC", g.encode()},
      {"ELTWISE B past IN", e.encode()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Harness h;
    const uint64_t src = h.put(std::vector<uint8_t>(64, 0x11));
    const uint64_t dst = h.put(std::vector<uint8_t>(64, 0xCC));
    spec::Insn insn = c.insn;
    // Point DMA instructions at this harness's buffers (dram_addr field).
    if (spec::get_bits(insn, 0, 6) == uint64_t(spec::Opcode::LOAD)) spec::set_bits(insn, 64, 48, src);
    if (spec::get_bits(insn, 0, 6) == uint64_t(spec::Opcode::STORE)) spec::set_bits(insn, 64, 48, dst);
    const auto in_before = h.core(0).buf(Buffer::IN);
    const auto acc_before = h.core(0).buf(Buffer::ACC);
    EXPECT_EQ(run_err(h, {insn, end_insn()}), spec::err::SCRATCHPAD_OOB);
    EXPECT_EQ(h.core(0).buf(Buffer::IN), in_before);
    EXPECT_EQ(h.core(0).buf(Buffer::ACC), acc_before);
    EXPECT_EQ(h.get(dst, 64), std::vector<uint8_t>(64, 0xCC));
    EXPECT_EQ(h.counter(0, spec::Counter::BYTES_RD), 0u);
  }
}

TEST(RefWindow, ViolationIsBlockedAndCanaryIntact) {
  Harness h;
  const uint64_t mine = h.put(std::vector<uint8_t>(256, 0x22));
  const uint64_t other = h.put(std::vector<uint8_t>(256, 0xCA));  // another tenant's canary
  ASSERT_EQ(other, mine + 256);                                   // first-fit places them back to back
  h.set_window(0, mine, mine + 256);
  auto& out = h.core(0).buf(Buffer::OUT);
  std::fill(out.begin(), out.begin() + 256, uint8_t(0x77));

  // A store whose last row crosses into the other buffer is blocked whole.
  EXPECT_EQ(run_err(h, {store(Buffer::OUT, 0, mine + 192, 2, 64, 64), end_insn()}), spec::err::WINDOW);
  EXPECT_EQ(h.get(other, 256), std::vector<uint8_t>(256, 0xCA));
  EXPECT_EQ(h.get(mine, 256), std::vector<uint8_t>(256, 0x22));  // not even the in-window row moved
  EXPECT_EQ(h.counter(0, spec::Counter::BYTES_WR), 0u);

  // Recovery: the host widens the window, clears the cause and rings again;
  // the core retries the instruction that faulted.
  h.set_window(0, mine, other + 256);
  h.dev().write_reg(spec::core_reg_addr(0, cr::ERR_CAUSE), spec::err::WINDOW);
  h.dev().write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1);
  h.idle();
  EXPECT_EQ(h.err(0), 0u);
  EXPECT_EQ(h.status(0), kDone);
  EXPECT_EQ(h.get(mine + 192, 64), std::vector<uint8_t>(64, 0x77));
}

TEST(RefWindow, LoadOneBytePastLimitAndDefaultDeny) {
  Harness h;
  const uint64_t buf = h.put(std::vector<uint8_t>(128, 0x33));
  h.set_window(0, buf, buf + 64);
  EXPECT_EQ(run_err(h, {load(Buffer::IN, 0, buf + 1, 1, 64), end_insn()}), spec::err::WINDOW);
  EXPECT_EQ(h.core(0).buf(Buffer::IN)[0], 0);

  Harness d;
  const uint64_t b2 = d.put(std::vector<uint8_t>(16, 1));
  d.set_window(0, 0, 0);  // reset value: nothing allowed
  EXPECT_EQ(run_err(d, {load(Buffer::IN, 0, 0, 0, 4, 4, 4, 2, 0, 5), load(Buffer::IN, 0, b2, 1, 1), end_insn()}),
            spec::err::WINDOW);
  EXPECT_EQ(d.reg(0, cr::ERR_PC), 1u);  // pure padding touches no memory and passed
  EXPECT_EQ(d.core(0).buf(Buffer::IN)[7], 5);
}

TEST(RefAxi, InjectedSlverrAndDecerr) {
  Harness h;
  const uint64_t buf = h.put(std::vector<uint8_t>(256, 0x44));
  h.dev().inject_fault(buf + 100, 1, hw::FaultKind::SlvErr);
  EXPECT_EQ(run_err(h, {load(Buffer::IN, 0, buf, 4, 16, 32), end_insn()}), spec::err::AXI_SLVERR);  // row 3 hits it
  EXPECT_EQ(h.core(0).buf(Buffer::IN)[0], 0);  // no partial burst landed
  EXPECT_EQ(h.reg(0, cr::ERR_PC), 0u);

  Harness s;
  const uint64_t b2 = s.put(std::vector<uint8_t>(64, 0xCA));
  s.dev().inject_fault(b2 + 60, 4, hw::FaultKind::DecErr);
  EXPECT_EQ(run_err(s, {store(Buffer::OUT, 0, b2, 1, 64), end_insn()}), spec::err::AXI_DECERR);
  EXPECT_EQ(s.get(b2, 64), std::vector<uint8_t>(64, 0xCA));
  s.dev().clear_faults();
  s.dev().write_reg(spec::core_reg_addr(0, cr::ERR_CAUSE), 0xFFFFFFFF);
  s.dev().write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1);
  s.idle();
  EXPECT_EQ(s.status(0), kDone);
  EXPECT_EQ(s.get(b2, 64), std::vector<uint8_t>(64, 0));

  // Unallocated memory inside the window answers DECERR.
  Harness u;
  const uint64_t b3 = u.put(std::vector<uint8_t>(64, 0));
  EXPECT_EQ(run_err(u, {load(Buffer::IN, 0, b3 + 32, 1, 64), end_insn()}), spec::err::AXI_DECERR);
}

TEST(RefAxi, FaultOnInstructionFetch) {
  Harness h;
  const uint64_t ring = uint64_t(h.reg(0, cr::RING_BASE_LO)) | uint64_t(h.reg(0, cr::RING_BASE_HI)) << 32;
  h.dev().inject_fault(ring + 2 * spec::kInsnBytes + 31, 1, hw::FaultKind::SlvErr);
  h.run(0, {nop(), nop(), nop(), end_insn()});
  EXPECT_EQ(h.err(0), spec::err::AXI_SLVERR);
  EXPECT_EQ(h.reg(0, cr::ERR_PC), 2u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_SYNC), 2u);
}

}  // namespace
}  // namespace loom::ref::test
