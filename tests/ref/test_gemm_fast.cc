// hw::exec_gemm against a straightforward element-by-element evaluation of
// the GEMM rule in docs/spec/isa.yaml, called directly on a core's
// scratchpads: thousands of random shapes, strides (including overlapping and
// zero strides), zero points (including the int8 extremes), accumulate on and
// off, k_len = 0 and out-of-range operands. Everything the instruction can
// change (all four scratchpads, the return code, every counter) must match.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "hw/golden.h"
#include "naive.h"

namespace loom::ref::test {
namespace {

// The rule written plainly: checks first, then C[i][j] (+)= sum_k (A - az)(B
// - bz) in int64 and wrapped to 32 bits, rows in order, columns in order.
uint32_t plain_gemm(hw::CoreState& s, const spec::GemmInsn& g) {
  if (g.acc_addr % 4 != 0 || g.ldc % 4 != 0) return spec::err::ILLEGAL_INSN;
  const auto& a = s.buf(Buffer::IN);
  const auto& b = s.buf(Buffer::WGT);
  auto& c = s.buf(Buffer::ACC);
  const auto fits = [](uint64_t size, uint64_t addr, uint64_t rows, uint64_t stride, uint64_t cols) {
    if (rows == 0 || cols == 0) return true;
    const uint64_t len = (rows - 1) * stride + cols;
    return addr + len <= size;
  };
  if ((g.n != 0 && !fits(a.size(), g.in_addr, g.m, g.lda, g.k_len)) ||
      (g.m != 0 && !(g.b_trans ? fits(b.size(), g.wgt_addr, g.n, g.ldb, g.k_len)
                                : fits(b.size(), g.wgt_addr, g.k_len, g.ldb, g.n))) || !fits(c.size(), g.acc_addr, g.m, g.ldc, 4 * g.n))
    return spec::err::SCRATCHPAD_OOB;
  for (uint64_t i = 0; i < g.m; ++i)
    for (uint64_t j = 0; j < g.n; ++j) {
      const uint64_t at = g.acc_addr + i * g.ldc + 4 * j;
      int64_t sum = 0;
      if (g.accumulate)
        sum = int64_t(uint32_t(c[at]) | uint32_t(c[at + 1]) << 8 | uint32_t(c[at + 2]) << 16 |
                      uint32_t(c[at + 3]) << 24);
      for (uint64_t k = 0; k < g.k_len; ++k)
        sum += (int64_t(int8_t(a[g.in_addr + i * g.lda + k])) - g.a_zp) *
               (int64_t(int8_t(b[g.wgt_addr + (g.b_trans ? j * g.ldb + k : k * g.ldb + j)])) - g.b_zp);
      const uint32_t v = uint32_t(wrap32(sum));
      for (int q = 0; q < 4; ++q) c[at + q] = uint8_t(v >> (8 * q));
    }
  s.counter(spec::Counter::MACS) += g.m * g.n * g.k_len;
  return 0;
}

unsigned pick(std::mt19937& rng, unsigned lo, unsigned hi) {
  return std::uniform_int_distribution<unsigned>(lo, hi)(rng);
}

std::vector<uint8_t> noise(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = uint8_t(rng());
  return v;
}

hw::CoreState random_core(std::mt19937& rng, size_t in, size_t wgt, size_t acc) {
  hw::CoreState s;
  s.buf(Buffer::IN) = noise(rng, in);
  s.buf(Buffer::WGT) = noise(rng, wgt);
  s.buf(Buffer::ACC) = noise(rng, acc);
  s.buf(Buffer::OUT) = noise(rng, 16);
  s.buf(Buffer::PARAM) = noise(rng, 16);
  s.counter(spec::Counter::MACS) = rng();
  return s;
}

int64_t random_zp(std::mt19937& rng) {
  switch (pick(rng, 0, 5)) {
    case 0:
      return -128;
    case 1:
      return 127;
    case 2:
      return 0;
    default:
      return int64_t(pick(rng, 0, 255)) - 128;
  }
}

// One random instruction sized to mostly fit a core of the given sizes; a
// few land out of range or misaligned on purpose.
spec::GemmInsn random_insn(std::mt19937& rng, size_t in, size_t wgt, size_t acc, unsigned max_mn, unsigned max_k) {
  spec::GemmInsn g;
  g.accumulate = pick(rng, 0, 1);
  g.b_trans = pick(rng, 0, 2) == 0;
  g.m = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, max_mn);
  g.n = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, max_mn);
  g.k_len = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, max_k);
  g.a_zp = random_zp(rng);
  g.b_zp = random_zp(rng);
  // Strides: packed, padded, overlapping (smaller than a row) or zero.
  const auto stride = [&](uint64_t row, uint64_t unit) -> uint64_t {
    switch (pick(rng, 0, 7)) {
      case 0:
        return 0;
      case 1:
        return unit * pick(rng, 0, unsigned(std::max<uint64_t>(row / unit, 1)));
      default:
        return row + unit * pick(rng, 0, 7);
    }
  };
  g.lda = stride(g.k_len, 1);
  g.ldb = stride(g.b_trans ? g.k_len : g.n, 1);
  g.ldc = stride(4 * g.n, 4);
  const auto place = [&](uint64_t size, uint64_t span, uint64_t unit) -> uint64_t {
    if (pick(rng, 0, 49) == 0) return unit * pick(rng, 0, unsigned((size + 64) / unit));  // anywhere
    return span >= size ? 0 : unit * pick(rng, 0, unsigned((size - span) / unit));
  };
  g.in_addr = place(in, hw::span_2d(g.m, g.lda, g.k_len), 1);
  g.wgt_addr = place(wgt, g.b_trans ? hw::span_2d(g.n, g.ldb, g.k_len) : hw::span_2d(g.k_len, g.ldb, g.n), 1);
  g.acc_addr = place(acc, hw::span_2d(g.m, g.ldc, 4 * g.n), 4);
  if (pick(rng, 0, 99) == 0) g.acc_addr += 2;
  if (pick(rng, 0, 99) == 0) g.ldc += 2;
  // Through the encoding, as the fabric sees it.
  return spec::GemmInsn::decode(g.encode());
}

std::string describe(const spec::GemmInsn& g) {
  return "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k_len) +
         " lda=" + std::to_string(g.lda) + " ldb=" + std::to_string(g.ldb) + " ldc=" + std::to_string(g.ldc) +
         " in=" + std::to_string(g.in_addr) + " wgt=" + std::to_string(g.wgt_addr) +
         " acc=" + std::to_string(g.acc_addr) + " azp=" + std::to_string(g.a_zp) +
         " bzp=" + std::to_string(g.b_zp) + " accumulate=" + std::to_string(g.accumulate) +
         " b_trans=" + std::to_string(g.b_trans);
}

// Runs g on two copies of one random core; returns the plain evaluation's code.
uint32_t expect_same(std::mt19937& rng, size_t in, size_t wgt, size_t acc, const spec::GemmInsn& g) {
  SCOPED_TRACE(describe(g));
  hw::CoreState fast = random_core(rng, in, wgt, acc);
  hw::CoreState plain = fast;
  const uint32_t want = plain_gemm(plain, g);
  EXPECT_EQ(hw::exec_gemm(fast, g), want);
  for (unsigned b = 0; b < spec::kNumBuffers; ++b) EXPECT_TRUE(fast.sp[b] == plain.sp[b]) << "buffer " << b;
  EXPECT_EQ(fast.counters, plain.counters);
  return want;
}

TEST(RefGemmFast, MatchesPlainEvaluationOnRandomInstructions) {
  const uint32_t seed = test_seed(20261130);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  unsigned ok = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const size_t in = pick(rng, 1, 4096), wgt = pick(rng, 1, 4096), acc = 4 * pick(rng, 1, 1024);
    const spec::GemmInsn g = random_insn(rng, in, wgt, acc, 24, 64);
    ok += expect_same(rng, in, wgt, acc, g) == 0;
    if (::testing::Test::HasFailure()) break;
  }
  // Most instructions must be valid, or the arithmetic would go untested.
  EXPECT_GT(ok, 2000u);
}

TEST(RefGemmFast, MatchesPlainEvaluationOnWideAndDeepTiles) {
  // Wider than one column block and deeper than the small cases, with row
  // counts around multiples of the row block.
  const uint32_t seed = test_seed(4242);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    spec::GemmInsn g;
    g.accumulate = trial % 2;
    g.b_trans = trial % 3 == 0;
    g.m = pick(rng, 1, 11);
    g.n = pick(rng, 500, 1100);
    g.k_len = pick(rng, 1, 300);
    g.a_zp = random_zp(rng);
    g.b_zp = random_zp(rng);
    g.lda = g.k_len + pick(rng, 0, 3);
    g.ldb = (g.b_trans ? g.k_len : g.n) + pick(rng, 0, 3);
    g.ldc = 4 * g.n + 4 * pick(rng, 0, 3);
    g = spec::GemmInsn::decode(g.encode());
    const uint64_t wgt = g.b_trans ? hw::span_2d(g.n, g.ldb, g.k_len) : hw::span_2d(g.k_len, g.ldb, g.n);
    expect_same(rng, hw::span_2d(g.m, g.lda, g.k_len), wgt, hw::span_2d(g.m, g.ldc, 4 * g.n), g);
  }
}

TEST(RefGemmFast, LongestSumOfExtremeValues) {
  // k_len at its largest with every product at its largest magnitude: the
  // sums exceed 2^31 once the zero points are applied and must wrap exactly.
  for (const int64_t v : {-128, 127})
    for (const int64_t zp : {-128, 127, 0}) {
      spec::GemmInsn g;
      g.m = 5;
      g.n = 7;
      g.k_len = 65535;
      g.a_zp = zp;
      g.b_zp = -zp;
      g.lda = g.k_len;
      g.ldb = g.n;
      g.ldc = 4 * g.n;
      g.accumulate = 1;
      SCOPED_TRACE("value " + std::to_string(v) + " zp " + std::to_string(zp));
      hw::CoreState fast;
      fast.buf(Buffer::IN).assign(g.m * g.k_len, uint8_t(int8_t(v)));
      fast.buf(Buffer::WGT).assign(g.k_len * g.n, uint8_t(int8_t(v)));
      fast.buf(Buffer::ACC).assign(4 * g.m * g.n, 0x7f);
      hw::CoreState plain = fast;
      ASSERT_EQ(plain_gemm(plain, g), 0u);
      ASSERT_EQ(hw::exec_gemm(fast, g), 0u);
      ASSERT_TRUE(fast.buf(Buffer::ACC) == plain.buf(Buffer::ACC));
    }
}

}  // namespace
}  // namespace loom::ref::test
