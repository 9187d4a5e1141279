// RefDevice as the runtime sees it: register map, W1C/W1S semantics, device
// memory, rings with wrap-around, semaphores across cores, soft reset.
#include <gtest/gtest.h>

#include "harness.h"

namespace loom::ref::test {
namespace {

namespace reg = spec::reg;
namespace cr = spec::core_reg;

TEST(RefRegs, IdentificationAndScratch) {
  Harness h("small");
  RefDevice& d = h.dev();
  EXPECT_EQ(d.backend(), "ref");
  EXPECT_EQ(d.read_reg(reg::ID), 0x4C4F4F4Du);
  EXPECT_EQ(d.read_reg(reg::VERSION), 0x00010000u);
  // small: 4 cores, 8x8 array, 2 memory ports.
  EXPECT_EQ(d.read_reg(reg::HWCFG), 4u | 8u << 8 | 8u << 16 | 2u << 24);
  EXPECT_EQ(d.read_reg(reg::SCRATCH), 0u);
  d.write_reg(reg::SCRATCH, 0xDEADBEEF);
  EXPECT_EQ(d.read_reg(reg::SCRATCH), 0xDEADBEEFu);
  d.write_reg(reg::ID, 0);  // read-only
  EXPECT_EQ(d.read_reg(reg::ID), 0x4C4F4F4Du);
  d.write_reg(reg::WATCHDOG, 1000);
  EXPECT_EQ(d.read_reg(reg::WATCHDOG), 1000u);
  EXPECT_EQ(d.read_reg(reg::SOFT_RESET), 0u);                        // w1s reads 0
  EXPECT_EQ(d.read_reg(spec::core_reg_addr(4, cr::RING_SIZE)), 0u);  // core 4 does not exist on `small`
  EXPECT_EQ(h.reg(1, cr::RING_SIZE), Harness::kRingSize);
  EXPECT_FALSE(d.has_time());
  EXPECT_EQ(d.cycles(), 0u);
}

TEST(RefRegs, CompletionIrqAndW1c) {
  Harness h;
  RefDevice& d = h.dev();
  d.write_reg(reg::IRQ_ENABLE, 0x0101);
  h.run(0, {nop(), end_insn()});
  EXPECT_EQ(h.status(0), kDone);
  EXPECT_EQ(d.read_reg(reg::IRQ_STATUS), 0x1u);
  EXPECT_TRUE(d.irq_line());
  d.write_reg(reg::IRQ_STATUS, 0x2);  // clearing another bit leaves ours
  EXPECT_EQ(d.read_reg(reg::IRQ_STATUS), 0x1u);
  d.write_reg(reg::IRQ_STATUS, 0x1);
  EXPECT_EQ(d.read_reg(reg::IRQ_STATUS), 0u);
  EXPECT_FALSE(d.irq_line());

  // Error path: status bit 8+core, ERR_CAUSE is W1C and re-arms the doorbell.
  h.run(1, {spec::Insn{{63}}});
  EXPECT_EQ(d.read_reg(reg::IRQ_STATUS), 0x200u);
  EXPECT_FALSE(d.irq_line());  // core 1's error interrupt is not enabled
  EXPECT_EQ(d.read_reg(reg::STATUS), 0x200u);
  EXPECT_EQ(h.err(1), spec::err::ILLEGAL_INSN);
  d.write_reg(spec::core_reg_addr(1, cr::ERR_CAUSE), spec::err::AXI_SLVERR);
  EXPECT_EQ(h.err(1), spec::err::ILLEGAL_INSN);
  d.write_reg(spec::core_reg_addr(1, cr::ERR_CAUSE), spec::err::ILLEGAL_INSN);
  EXPECT_EQ(h.err(1), 0u);
  EXPECT_EQ(h.status(1), 0u);
}

TEST(RefRegs, CountersAndClear) {
  Harness h;
  const uint64_t d = h.put(std::vector<uint8_t>(64, 1));
  h.run(0, {load(Buffer::IN, 0, d, 2, 16), nop(), store(Buffer::OUT, 0, d, 1, 8), end_insn()});
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_LOAD), 1u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_STORE), 1u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_SYNC), 2u);
  EXPECT_EQ(h.counter(0, spec::Counter::BYTES_RD), 32u);
  EXPECT_EQ(h.counter(0, spec::Counter::BYTES_WR), 8u);
  EXPECT_EQ(h.counter(0, spec::Counter::QUEUE_HWM), 4u);
  EXPECT_EQ(h.counter(0, spec::Counter::CYCLES_BUSY), 0u);  // no time in the ref model
  h.dev().write_reg(spec::core_reg_addr(0, cr::CTR_CLEAR), 1);
  for (unsigned k = 0; k < spec::kNumCounters; ++k) EXPECT_EQ(h.counter(0, spec::Counter(k)), 0u) << k;
}

TEST(RefMemory, AllocFreeAndBounds) {
  Harness h;
  RefDevice& d = h.dev();
  auto a = d.alloc(100, 4096);
  ASSERT_TRUE(a.is_ok());
  EXPECT_NE(*a, 0u);
  EXPECT_EQ(*a % 4096, 0u);
  auto b = d.alloc(10, 256);
  ASSERT_TRUE(b.is_ok());
  EXPECT_TRUE(*b >= *a + 100 || *b + 10 <= *a);
  std::vector<uint8_t> buf(100, 7);
  EXPECT_TRUE(d.write(*a, buf).is_ok());
  EXPECT_FALSE(d.write(*a + 1, buf).is_ok());  // one byte past the end
  EXPECT_FALSE(d.read(0, std::span<uint8_t>(buf.data(), 1)).is_ok());
  EXPECT_FALSE(d.alloc(16, 3).is_ok());
  d.free(*a);
  EXPECT_FALSE(d.read(*a, buf).is_ok());
  EXPECT_FALSE(d.alloc(uint64_t(1) << 40).is_ok());
}

TEST(RefFactory, RejectsUnmodellableConfig) {
  spec::HwConfig bad = config("tiny");
  bad.cores = 9;
  auto dev = make_ref_device(bad);
  ASSERT_FALSE(dev.is_ok());
  EXPECT_NE(dev.error().str().find("cores"), std::string::npos);
  auto good = make_ref_device(config("default"));
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ((*good)->config().cores, 4u);
}

TEST(RefSemaphores, WaitResolvedByOtherCoreAndUnsatisfiableWait) {
  Harness h;
  RefDevice& d = h.dev();
  // Core 0 waits for two signals that core 1 gives after its own work; core
  // 0 is submitted first so the round-robin must come back to it.
  h.submit(0, {sem_wait(3, 2), nop(), end_insn()});
  h.submit(1, {nop(), sem_signal(3), nop(), sem_signal(3), end_insn()});
  h.idle();
  EXPECT_EQ(h.status(0), kDone);
  EXPECT_EQ(h.status(1), kDone);
  EXPECT_EQ(d.read_reg(reg::SEM_VALUE + 3 * 4), 2u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_SYNC), 3u);

  // Nobody will ever signal semaphore 5 three times: run_until_idle returns
  // with core 0 busy and blocked, its ring head on the wait.
  const uint32_t head = h.reg(0, cr::RING_HEAD);
  h.run(0, {sem_signal(5), sem_wait(5, 3), end_insn()});
  EXPECT_EQ(h.status(0), kBusy | kBlocked);
  EXPECT_EQ(h.reg(0, cr::RING_HEAD), head + 1);
  EXPECT_EQ(d.read_reg(reg::STATUS), 0x1u);

  // The host can unblock it by signalling from another core.
  h.run(1, {sem_signal(5), sem_signal(5), end_insn()});
  EXPECT_EQ(h.status(0), kDone);

  d.write_reg(reg::SEM_CLEAR, 1u << 3);
  EXPECT_EQ(d.read_reg(reg::SEM_VALUE + 3 * 4), 0u);
  EXPECT_EQ(d.read_reg(reg::SEM_VALUE + 5 * 4), 3u);
}

TEST(RefSoftReset, ResetsOneCoreAndPreservesTheOther) {
  Harness h;
  RefDevice& d = h.dev();
  const uint64_t src = h.put(std::vector<uint8_t>(32, 9));
  // Core 0 faults with tokens outstanding; core 1 does work and finishes.
  h.run(0, {with_tokens(load(Buffer::IN, 0, src, 1, 32), false, false, false, true), spec::Insn{{62}}});
  h.run(1, {load(Buffer::IN, 0, src, 1, 32), end_insn()});
  ASSERT_EQ(h.err(0), spec::err::ILLEGAL_INSN);
  ASSERT_EQ(h.core(0).tokens[unsigned(hw::TokenQueue::LoadToCompute)], 1u);
  const uint64_t c1_loads = h.counter(1, spec::Counter::INSN_LOAD);
  const uint32_t c1_head = h.reg(1, cr::RING_HEAD);

  d.write_reg(reg::SOFT_RESET, 1u << 0);
  EXPECT_EQ(h.err(0), 0u);
  EXPECT_EQ(h.status(0), 0u);
  EXPECT_EQ(h.reg(0, cr::RING_HEAD), 0u);
  EXPECT_EQ(h.reg(0, cr::RING_TAIL), 0u);
  EXPECT_EQ(h.reg(0, cr::ERR_PC), 0u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_LOAD), 0u);
  EXPECT_EQ(h.core(0).tokens[unsigned(hw::TokenQueue::LoadToCompute)], 0u);
  EXPECT_EQ(h.reg(0, cr::RING_SIZE), Harness::kRingSize);  // configuration survives
  EXPECT_EQ(d.read_reg(reg::IRQ_STATUS), 0x2u);            // core 1's completion stays

  EXPECT_EQ(h.status(1), kDone);
  EXPECT_EQ(h.counter(1, spec::Counter::INSN_LOAD), c1_loads);
  EXPECT_EQ(h.reg(1, cr::RING_HEAD), c1_head);
  EXPECT_EQ(h.core(1).buf(Buffer::IN)[31], 9);

  // The reset core runs again from ring index 0.
  h.run(0, {nop(), end_insn()});
  EXPECT_EQ(h.status(0), kDone);
  EXPECT_EQ(h.reg(0, cr::RING_HEAD), 2u);
}

TEST(RefRing, WrapAroundAcrossRefills) {
  // 300 instructions through a 64-entry ring, refilled in batches of up to
  // 50: the head wraps several times and results accumulate in order.
  Harness h;
  const uint64_t one = h.put({1}), d = h.alloc(4);
  spec::GemmInsn g;  // ACC[0] += IN[0] * WGT[0] = 1
  g.accumulate = 1;
  g.m = g.n = g.k_len = 1;
  g.lda = g.ldb = 1;
  g.ldc = 4;
  h.run(0, {load(Buffer::IN, 0, one, 1, 1), load(Buffer::WGT, 0, one, 1, 1)});
  unsigned total = 2, gemms = 0;
  std::mt19937 rng(test_seed(11));
  while (total < 300) {
    const unsigned batch = std::min(300u - total, unsigned(rand_in(rng, 1, 50)));
    std::vector<spec::Insn> prog(batch, g.encode());
    total += batch;
    gemms += batch;
    h.run(0, prog);
    ASSERT_EQ(h.err(0), 0u);
    EXPECT_EQ(h.status(0), 0u);  // starved, neither busy nor done
    EXPECT_EQ(h.reg(0, cr::RING_HEAD), total % Harness::kRingSize);
  }
  h.run(0, {store(Buffer::ACC, 0, d, 1, 4), end_insn()});
  EXPECT_EQ(h.status(0), kDone);
  EXPECT_EQ(from_le32(h.get(d, 4))[0], int32_t(gemms));
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_COMPUTE), gemms);
  EXPECT_LE(h.counter(0, spec::Counter::QUEUE_HWM), 50u);
}

TEST(RefRing, InvalidRingConfigurationFaults) {
  Harness h;
  h.dev().write_reg(spec::core_reg_addr(0, cr::RING_SIZE), 48);  // not a power of two
  h.dev().write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1);
  h.idle();
  EXPECT_EQ(h.err(0), spec::err::ILLEGAL_INSN);
}

}  // namespace
}  // namespace loom::ref::test
