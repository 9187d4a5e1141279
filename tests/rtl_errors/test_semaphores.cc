// Semaphores at the top of their range, on the tiny and small fabrics (rtl)
// and the golden model (ref): every bit of every counter through SEM_VALUE, the
// saturation at 2^32 - 1 that the ISA specifies, and SEM_WAIT's unsigned
// compare. A counter grows by one per SEM_SIGNAL, so the tests preload it
// through the backends' backdoor (RtlDevice::preload_semaphore) instead of
// signalling 2^32 times; everything after the preload runs as a host would
// drive it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "error_rig.h"

namespace loom::rtl_errors {
namespace {

class Semaphores : public OnConfig {};

TEST_P(Semaphores, EveryBitReadsBackAndClears) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  const unsigned n = r.config().semaphores;
  for (uint32_t pattern : {0xFFFFFFFFu, 0xAAAAAAAAu, 0x55555555u, 0x80000001u, 0x00000000u}) {
    // Each semaphore its own value, so a crossed wire between two shows.
    for (unsigned i = 0; i < n; ++i) ASSERT_TRUE(r.preload_semaphore(i, pattern ^ (i * 0x01010101u)));
    for (unsigned i = 0; i < n; ++i) EXPECT_EQ(r.semaphore(i), pattern ^ (i * 0x01010101u)) << "semaphore " << i;
    // Registers past the configuration's semaphores read 0.
    for (unsigned i = n; i < spec::reg::SEM_VALUE_COUNT; ++i) EXPECT_EQ(r.semaphore(i), 0u) << "semaphore " << i;
  }
  EXPECT_FALSE(r.preload_semaphore(n, 1)) << "the backdoor refuses a semaphore the configuration lacks";
  for (unsigned i = 0; i < n; ++i) ASSERT_TRUE(r.preload_semaphore(i, 0xFFFFFFFFu));
  r.wgreg(spec::reg::SEM_CLEAR, 0x55u);  // every other semaphore
  for (unsigned i = 0; i < n; ++i) EXPECT_EQ(r.semaphore(i), (0x55u >> i & 1) ? 0u : 0xFFFFFFFFu) << "semaphore " << i;
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(Semaphores, SignalsSaturateAtTheTop) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r.preload_semaphore(2, 0xFFFFFFFDu));
  ASSERT_TRUE(r.preload_semaphore(3, 0xFFFFFFFEu));
  // Core 1 signals semaphore 2 four times and 3 twice; core 0 waits for both
  // at the largest count, which only a saturated counter reaches.
  r.submit(0, {sem_wait(2, 0xFFFFFFFFu), sem_wait(3, 0xFFFFFFFFu), end_insn()});
  r.advance(2000);
  EXPECT_EQ(r.status(0), kBusy | kBlocked);
  r.run(1, {sem_signal(2), sem_signal(3), sem_signal(2), sem_signal(2), sem_signal(3), sem_signal(2), end_insn()});
  EXPECT_EQ(r.status(1), kDone);
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.semaphore(2), 0xFFFFFFFFu);
  EXPECT_EQ(r.semaphore(3), 0xFFFFFFFFu);
  // Both cores signalling a saturated semaphore keep it there.
  r.submit(0, {sem_signal(2), sem_signal(2), end_insn()});
  r.run(1, {sem_signal(2), sem_signal(2), end_insn()});
  EXPECT_EQ(r.semaphore(2), 0xFFFFFFFFu);
  EXPECT_EQ(r.err(0) | r.err(1), 0u);
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

TEST_P(Semaphores, WaitComparesUnsigned) {
  Rig r(backend(), config());
  ASSERT_TRUE(r.ok());
  // 0x7FFFFFFF < 0x80000000 unsigned (a signed compare would pass at once).
  ASSERT_TRUE(r.preload_semaphore(1, 0x7FFFFFFFu));
  r.submit(0, {sem_wait(1, 0x80000000u), end_insn()});
  r.advance(2000);
  EXPECT_EQ(r.status(0), kBusy | kBlocked);
  r.run(1, {sem_signal(1), end_insn()});
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.semaphore(1), 0x80000000u);
  // 0x80000000 >= 0x7FFFFFFF: no wait (a signed compare would block).
  ASSERT_TRUE(r.preload_semaphore(4, 0x80000000u));
  r.run(0, {sem_wait(4, 0x7FFFFFFFu), end_insn()});
  EXPECT_EQ(r.status(0), kDone);
  EXPECT_EQ(r.counter(0, spec::Counter::INSN_SYNC), 4u);  // both waits and ENDs
  EXPECT_TRUE(r.health().is_ok()) << r.health().str();
}

INSTANTIATE_TEST_SUITE_P(B, Semaphores, every_config(), config_case_name);

}  // namespace
}  // namespace loom::rtl_errors
