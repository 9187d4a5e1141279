// Hung cores, the watchdog and per-core soft reset on the tiny fabric (rtl)
// and the golden model (ref): one core hangs or is reset while the other
// keeps running, and the reset core then runs a fresh stream correctly.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "error_rig.h"

namespace loom::rtl_errors {
namespace {

using K = spec::Counter;
constexpr uint32_t kWatchdog = 3000;

/// After SOFT_RESET of core `c`: no error, idle, ring pointers at zero.
void expect_reset_state(Rig& r, unsigned c) {
  EXPECT_EQ(r.err(c), 0u);
  EXPECT_EQ(r.status(c), 0u);
  EXPECT_EQ(r.reg(c, cr::RING_HEAD), 0u);
  EXPECT_EQ(r.reg(c, cr::RING_TAIL), 0u);
  EXPECT_EQ(r.greg(spec::reg::STATUS) & ((1u << c) | (1u << (8 + c))), 0u);
}

/// Every counter of `now` equals `then` (architectural) or has not gone
/// backwards (timing counters of a core that may still be busy or blocked).
void expect_counters_untouched(const std::array<uint64_t, spec::kNumCounters>& then,
                               const std::array<uint64_t, spec::kNumCounters>& now, bool exact_all) {
  for (unsigned k = 0; k < spec::kNumCounters; ++k) {
    SCOPED_TRACE(std::string(spec::kCounterNames[k]));
    if (exact_all || architectural(k))
      EXPECT_EQ(now[k], then[k]);
    else
      EXPECT_GE(now[k], then[k]);
  }
}

class Hang : public OnBackend {
 protected:
  /// Core 0 runs `hang` (which never completes on its own); core 1 runs a long
  /// stream meanwhile. rtl: the watchdog raises TIMEOUT at `pc` while core 1
  /// is still busy; ref: `ref_cause` (0: the core just stays blocked). Then
  /// core 0 is soft-reset and runs a fresh stream; core 1's results stand.
  void run_case(const std::vector<Insn>& hang, uint32_t pc, uint32_t ref_cause) {
    Rig r(GetParam());
    ASSERT_TRUE(r.ok());
    r.wgreg(spec::reg::WATCHDOG, kWatchdog);
    EXPECT_EQ(r.greg(spec::reg::WATCHDOG), kWatchdog);
    r.wgreg(spec::reg::IRQ_ENABLE, 1u << 8);  // core 0 error interrupt

    const Work w1 = Work::make(r, 24, 512, 101);
    r.submit(1, w1.prog);
    r.submit(0, hang);

    if (r.is_rtl()) {
      const uint64_t start = r.rtl()->cycles();
      bool core1_busy = false;
      for (uint64_t spent = 0; spent < 200'000 && r.err(0) == 0; spent += 64) r.rtl()->step(64);
      const uint64_t fired = r.rtl()->cycles() - start;
      core1_busy = (r.status(1) & kBusy) != 0;
      std::printf("TIMEOUT seen %llu cycles after the doorbells\n", static_cast<unsigned long long>(fired));
      ASSERT_EQ(r.err(0), spec::err::TIMEOUT) << "after " << fired << " cycles";
      EXPECT_GE(fired, kWatchdog);
      EXPECT_EQ(r.err_pc(0), pc);
      EXPECT_EQ(r.status(0), kError);
      EXPECT_NE(r.greg(spec::reg::IRQ_STATUS) & (1u << 8), 0u);
      EXPECT_TRUE(r.irq_line());
      EXPECT_TRUE(core1_busy) << "core 1 finished before core 0 timed out: lengthen its stream";
      EXPECT_EQ(r.err(1), 0u);
      r.idle();
    } else {
      r.idle();
      if (ref_cause) {
        EXPECT_EQ(r.err(0), ref_cause);
        EXPECT_EQ(r.err_pc(0), pc);
        EXPECT_EQ(r.status(0), kError);
        EXPECT_EQ(r.reg(0, cr::RING_HEAD), pc);
        EXPECT_TRUE(r.irq_line());
      } else {
        // The untimed model has no watchdog: the core stays blocked.
        EXPECT_EQ(r.err(0), 0u);
        EXPECT_EQ(r.status(0), kBusy | kBlocked);
        EXPECT_FALSE(r.irq_line());
      }
    }
    // Core 1 completed its own stream correctly.
    EXPECT_EQ(r.err(1), 0u);
    EXPECT_EQ(r.status(1), kDone);
    w1.expect_results(r);
    w1.expect_counters(r, 1);
    const auto c1 = r.counters(1);

    // Recovery of core 0; core 1 is done and idle, so nothing of it may move.
    r.wgreg(spec::reg::IRQ_STATUS, 1u << 8);
    r.soft_reset(0);
    expect_reset_state(r, 0);
    EXPECT_FALSE(r.irq_line());
    const auto c0 = r.counters(0);
    const Work w0 = Work::make(r, 6, 256, 202);
    r.run(0, w0.prog);
    EXPECT_EQ(r.err(0), 0u);
    EXPECT_EQ(r.status(0), kDone);
    w0.expect_results(r);
    w0.expect_counters(r, 0, 0, c0);

    w1.expect_results(r);
    EXPECT_EQ(r.status(1), kDone);
    expect_counters_untouched(c1, r.counters(1), true);
    EXPECT_TRUE(r.health().is_ok()) << r.health().str();
  }
};

TEST_P(Hang, SemaphoreNobodySignalsTimesOut) {
  run_case({nop(), sem_wait(3, 1), end_insn()}, 1, 0);
}

TEST_P(Hang, TokenNeverPushedIsTimeoutOnRtlDeadlockOnRef) {
  // The GEMM pops a load->compute token that no instruction pushes.
  run_case({nop(), nop(), with_tokens(gemm(0, 0, 0, 1, 1, 1), true, false, false, false), end_insn()}, 2,
           spec::err::DEADLOCK);
}

TEST_P(Hang, StoreWaitsForComputeTokenNeverPushed) {
  run_case({nop(), with_tokens(store(Buffer::OUT, 0, 0, 0, 0), true, false, false, false), end_insn()}, 1,
           spec::err::DEADLOCK);
}

TEST_P(Hang, WatchdogZeroNeverFires) {
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  r.wgreg(spec::reg::WATCHDOG, 0);
  r.submit(0, {sem_wait(1, 1), end_insn()});
  r.advance(3 * kWatchdog);
  EXPECT_EQ(r.err(0), 0u);
  EXPECT_EQ(r.status(0), kBusy | kBlocked);
  // SEM_CLEAR of another semaphore does not wake it; nothing but a signal does.
  r.wgreg(spec::reg::SEM_CLEAR, 1u << 1);
  r.advance(100);
  EXPECT_EQ(r.status(0), kBusy | kBlocked);
  r.run(1, {sem_signal(1), end_insn()});
  EXPECT_EQ(r.status(1), kDone);
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.greg(spec::reg::SEM_VALUE + 4 * 1), 1u);
  EXPECT_EQ(r.counter(0, K::INSN_SYNC), 2u);
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

class SoftReset : public OnBackend {};

TEST_P(SoftReset, OneCoreWhileBothArePausedMidStream) {
  // Both cores stop mid-stream on a semaphore; core 1 is reset there, then a
  // fresh stream on core 1 signals core 0, which resumes where it stopped.
  Rig r(GetParam());
  ASSERT_TRUE(r.ok());
  const Work a0 = Work::make(r, 6, 256, 301, false), b0 = Work::make(r, 6, 256, 302);
  const Work a1 = Work::make(r, 6, 256, 303, false), b1 = Work::make(r, 6, 256, 304);
  std::vector<Insn> p0 = a0.then({sem_wait(2, 1)}), p1 = a1.then({sem_wait(3, 1)});
  p0.insert(p0.end(), b0.prog.begin(), b0.prog.end());
  p1.insert(p1.end(), b1.prog.begin(), b1.prog.end());
  r.submit(0, p0);
  r.submit(1, p1);
  r.idle();
  ASSERT_EQ(r.status(0), kBusy | kBlocked);
  ASSERT_EQ(r.status(1), kBusy | kBlocked);
  a0.expect_results(r);
  a1.expect_results(r);
  a0.expect_counters(r, 0);
  EXPECT_EQ(r.get(b0.copy_dst, 64), std::vector<uint8_t>(64, 0xDD));  // second half not started
  const auto snap0 = r.counters(0);
  const uint32_t head0 = r.reg(0, cr::RING_HEAD);

  r.soft_reset(1);
  expect_reset_state(r, 1);
  expect_counters_untouched(snap0, r.counters(0), false);
  EXPECT_EQ(r.status(0), kBusy | kBlocked);
  EXPECT_EQ(r.err(0), 0u);
  EXPECT_EQ(r.reg(0, cr::RING_HEAD), head0);
  EXPECT_EQ(r.greg(spec::reg::SEM_VALUE + 4 * 2), 0u);

  const auto base1 = r.counters(1);
  const Work c1 = Work::make(r, 4, 256, 305, false);
  r.run(1, c1.then({sem_signal(2), end_insn()}));
  EXPECT_EQ(r.err(1), 0u);
  EXPECT_EQ(r.status(1), kDone);
  c1.expect_results(r);
  c1.expect_counters(r, 1, 2, base1);
  // Core 1's old stream did not come back after the reset.
  EXPECT_EQ(r.get(b1.copy_dst, 64), std::vector<uint8_t>(64, 0xDD));

  EXPECT_EQ(r.err(0), 0u);
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.greg(spec::reg::SEM_VALUE + 4 * 2), 1u);
  a0.expect_results(r);
  b0.expect_results(r);
  b0.expect_counters(r, 0, 1, a0.counts());  // + the SEM_WAIT
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

// rtl only: the reset lands at arbitrary cycles, with core 1's bursts in
// flight on the memory port both cores share.
TEST(SoftResetTimed, MidBurstResetLeavesOtherCoreUntouched) {
  if (!rtl_built()) GTEST_SKIP() << "tiny loom_fabric not verilated into this build";
  for (uint64_t point : {150u, 500u, 900u, 1400u, 2300u}) {
    SCOPED_TRACE("reset after " + std::to_string(point) + " cycles");
    Rig r("rtl");
    ASSERT_TRUE(r.ok());
    const Work w0 = Work::make(r, 16, 512, 401), w1 = Work::make(r, 16, 512, 402);
    r.submit(0, w0.prog);
    r.submit(1, w1.prog);
    r.rtl()->step(point);
    ASSERT_NE(r.status(1) & kBusy, 0u) << "core 1 no longer running";
    ASSERT_NE(r.status(0) & kBusy, 0u) << "core 0 no longer running";
    const uint32_t head0 = r.reg(0, cr::RING_HEAD);
    const auto snap0 = r.counters(0);
    r.soft_reset(1);
    const auto now0 = r.counters(0);
    for (unsigned k = 0; k < spec::kNumCounters; ++k) EXPECT_GE(now0[k], snap0[k]) << spec::kCounterNames[k];
    EXPECT_GE(r.reg(0, cr::RING_HEAD), head0);
    expect_reset_state(r, 1);

    r.idle();
    EXPECT_EQ(r.err(0), 0u);
    EXPECT_EQ(r.status(0), kDone);
    w0.expect_results(r);
    w0.expect_counters(r, 0);
    EXPECT_EQ(r.status(1), 0u);
    EXPECT_EQ(r.err(1), 0u);

    const auto base1 = r.counters(1);
    const Work v1 = Work::make(r, 4, 256, 403);
    r.run(1, v1.prog);
    EXPECT_EQ(r.err(1), 0u);
    EXPECT_EQ(r.status(1), kDone);
    v1.expect_results(r);
    v1.expect_counters(r, 1, 0, base1);
    w0.expect_results(r);
    EXPECT_TRUE(r.health().is_ok()) << r.health().str();
  }
}

INSTANTIATE_TEST_SUITE_P(B, Hang, ::testing::Values("rtl", "ref"), backend_name);
INSTANTIATE_TEST_SUITE_P(B, SoftReset, ::testing::Values("rtl", "ref"), backend_name);

}  // namespace
}  // namespace loom::rtl_errors
