// Compute instructions (GEMM, POSTOP, POOL, ELTWISE) on random shapes against
// naive arithmetic, end to end through LOAD/STORE and the command ring.
#include <gtest/gtest.h>

#include "harness.h"
#include "naive.h"

namespace loom::ref::test {
namespace {


struct GemmCase {
  unsigned m, n, k, lda, ldb, ldc;
  int a_zp, b_zp;
};

GemmCase random_gemm(std::mt19937& rng) {
  GemmCase g{};
  g.m = rand_in(rng, 1, 12);
  g.n = rand_in(rng, 1, 12);
  g.k = rand_in(rng, 1, 40);
  g.lda = g.k + rand_in(rng, 0, 5);
  g.ldb = g.n + rand_in(rng, 0, 5);
  g.ldc = 4 * (g.n + rand_in(rng, 0, 3));
  g.a_zp = rand_in(rng, -128, 127);
  g.b_zp = rand_in(rng, -128, 127);
  return g;
}

spec::Insn gemm_insn(const GemmCase& g, uint64_t in, uint64_t wgt, uint64_t acc, bool accumulate) {
  spec::GemmInsn i;
  i.accumulate = accumulate;
  i.in_addr = in;
  i.wgt_addr = wgt;
  i.acc_addr = acc;
  i.m = g.m;
  i.n = g.n;
  i.k_len = g.k;
  i.a_zp = g.a_zp;
  i.b_zp = g.b_zp;
  i.lda = g.lda;
  i.ldb = g.ldb;
  i.ldc = g.ldc;
  return i.encode();
}

// C (+)= (A - a_zp)(B - b_zp), as plain int64 sums wrapped once at the end.
std::vector<int32_t> naive_gemm(const GemmCase& g, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<int32_t> c(g.m * g.n);
  for (unsigned i = 0; i < g.m; ++i)
    for (unsigned j = 0; j < g.n; ++j) {
      int64_t sum = 0;
      for (unsigned k = 0; k < g.k; ++k)
        sum += int64_t(s8(a[i * g.lda + k]) - g.a_zp) * int64_t(s8(b[k * g.ldb + j]) - g.b_zp);
      c[i * g.n + j] = wrap32(sum);
    }
  return c;
}

TEST(RefGemm, RandomShapesStridesZeroPointsAndAccumulate) {
  const uint32_t seed = test_seed(1234);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Harness h;
    const GemmCase g = random_gemm(rng);
    const auto a1 = random_bytes(rng, g.m * g.lda), a2 = random_bytes(rng, g.m * g.lda);
    const auto b = random_bytes(rng, g.k * g.ldb);
    const uint64_t in1 = rand_in(rng, 0, 100), in2 = 2048 + rand_in(rng, 0, 100);
    const uint64_t wgt = rand_in(rng, 0, 100), acc = 4 * rand_in(rng, 0, 50);
    const uint64_t da1 = h.put(a1), da2 = h.put(a2), db = h.put(b);
    const uint64_t dc = h.alloc(g.m * g.n * 4);
    h.run(0,
          {load(Buffer::IN, in1, da1, 1, g.m * g.lda), load(Buffer::IN, in2, da2, 1, g.m * g.lda),
           load(Buffer::WGT, wgt, db, 1, g.k * g.ldb), gemm_insn(g, in1, wgt, acc, false),
           gemm_insn(g, in2, wgt, acc, true), store(Buffer::ACC, acc, dc, g.m, 4 * g.n, 4 * g.n, g.ldc), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    ASSERT_EQ(h.status(0) & kDone, kDone);
    const auto c1 = naive_gemm(g, a1, b), c2 = naive_gemm(g, a2, b);
    const auto got = from_le32(h.get(dc, g.m * g.n * 4));
    for (unsigned e = 0; e < g.m * g.n; ++e)
      ASSERT_EQ(got[e], wrap32(int64_t(c1[e]) + c2[e]))
          << "element " << e << " m=" << g.m << " n=" << g.n << " k=" << g.k;
    EXPECT_EQ(h.counter(0, spec::Counter::MACS), 2ull * g.m * g.n * g.k);
    EXPECT_EQ(h.counter(0, spec::Counter::INSN_COMPUTE), 2u);
  }
}

TEST(RefGemm, SumWrapsModulo2To32) {
  // Five accumulating passes of k = 16384 products of (-255)(-255) exceed
  // 2^32; the accumulator keeps the low 32 bits.
  Harness h;
  const GemmCase g{1, 1, 16384, 16384, 1, 4, 127, 127};
  const uint64_t da = h.put(std::vector<uint8_t>(16384, 0x80)), db = h.put(std::vector<uint8_t>(16384, 0x80));
  const uint64_t dc = h.alloc(4);
  std::vector<spec::Insn> prog{load(Buffer::IN, 0, da, 1, 16384), load(Buffer::WGT, 0, db, 1, 16384)};
  for (int pass = 0; pass < 5; ++pass) prog.push_back(gemm_insn(g, 0, 0, 0, pass > 0));
  prog.push_back(store(Buffer::ACC, 0, dc, 1, 4));
  prog.push_back(end_insn());
  h.run(0, prog);
  ASSERT_EQ(h.err(0), 0u);
  EXPECT_EQ(from_le32(h.get(dc, 4))[0], wrap32(5ll * 16384 * 65025));
}

TEST(RefGemm, ZeroKOverwriteClearsAndZeroMIsANoOp) {
  Harness h;
  auto& acc = h.core(0).buf(Buffer::ACC);
  std::fill(acc.begin(), acc.begin() + 64, uint8_t(0xAB));
  GemmCase clear{2, 2, 0, 1, 1, 8, 0, 0};
  GemmCase none{0, 2, 4, 4, 2, 8, 0, 0};
  h.run(0, {gemm_insn(none, 0, 0, 32, false), gemm_insn(clear, 0, 0, 0, false), end_insn()});
  ASSERT_EQ(h.err(0), 0u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(acc[i], 0) << i;
  for (int i = 32; i < 64; ++i) EXPECT_EQ(acc[i], 0xAB) << i;
  EXPECT_EQ(h.counter(0, spec::Counter::MACS), 0u);
}

TEST(RefPostop, RandomPerChannelParamsResidualReluAndRescale) {
  const uint32_t seed = test_seed(99);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  int rescaled = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Harness h;
    const unsigned m = rand_in(rng, 1, 9), n = rand_in(rng, 1, 17);
    std::vector<int32_t> accv(m * n), params;
    for (auto& v : accv) v = rand_in(rng, -200000, 200000);
    for (unsigned j = 0; j < n; ++j) {
      params.push_back(rand_in(rng, -50000, 50000));       // bias
      params.push_back(rand_in(rng, 1 << 29, INT32_MAX));  // mult
      params.push_back(rand_in(rng, 30, 42));              // shift
    }
    const auto res = random_bytes(rng, m * n);
    spec::PostopInsn p;
    p.residual = trial % 2;
    p.rescale = trial % 4 == 3;  // every other residual trial is a requantizing add
    p.res_shift = rand_in(rng, 1, 62);
    p.res_mult = rand_in(rng, INT32_MIN, INT32_MAX);
    p.res_zp = rand_in(rng, -128, 127);
    p.out_zp = rand_in(rng, -20, 20);
    p.clip_lo = trial % 3 == 0 ? p.out_zp : -128;  // every third trial is a fused ReLU
    p.clip_hi = rand_in(rng, 60, 127);
    // rescale: the add's zero points and clamp, and its (a_mult, a_shift) pair after the triples.
    p.a_zp = rand_in(rng, -128, 127);
    p.add_zp = rand_in(rng, -128, 127);
    p.add_lo = trial % 8 == 3 ? p.add_zp : rand_in(rng, -128, 0);
    p.add_hi = rand_in(rng, std::max<int>(int(p.add_lo), 0), 127);
    const int32_t a_mult = trial % 8 == 7 ? rand_in(rng, INT32_MIN, INT32_MAX) : rand_in(rng, 1 << 29, INT32_MAX);
    const int32_t a_shift = trial == 11 ? 1 : trial == 15 ? 62 : rand_in(rng, 28, 36);
    if (p.rescale) {
      params.push_back(a_mult);
      params.push_back(a_shift);
    }
    p.m = m;
    p.n = n;
    p.acc_addr = 64;
    p.out_addr = rand_in(rng, 0, 300);
    p.param_addr = 4 * rand_in(rng, 0, 20);
    p.res_addr = rand_in(rng, 0, 300);
    // ACC is not a LOAD target: place the tile there directly.
    auto& acc = h.core(0).buf(Buffer::ACC);
    const auto acc_bytes = le32(accv);
    std::copy(acc_bytes.begin(), acc_bytes.end(), acc.begin() + 64);
    const uint64_t dp = h.put(le32(params)), dr = h.put(res), dout = h.alloc(m * n);
    h.run(0, {load(Buffer::PARAM, p.param_addr, dp, 1, params.size() * 4), load(Buffer::IN, p.res_addr, dr, 1, m * n),
              p.encode(), store(Buffer::OUT, p.out_addr, dout, 1, m * n), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    rescaled += int(p.rescale);
    const auto got = h.get(dout, m * n);
    for (unsigned i = 0; i < m; ++i)
      for (unsigned j = 0; j < n; ++j) {
        const int64_t v = wrap32(int64_t(accv[i * n + j]) + params[3 * j]);
        int64_t y = naive_rq(v, params[3 * j + 1], params[3 * j + 2]) + p.out_zp;
        const int64_t rv = int64_t(s8(res[i * n + j])) - p.res_zp;
        const int64_t r = p.residual ? naive_rq(rv, p.res_mult, int(p.res_shift)) : 0;
        if (p.rescale) {  // one rounding of the sum at a_shift (res_shift is not used)
          const int64_t x = naive_clamp(y, p.clip_lo, p.clip_hi);
          y = naive_rqs(x - p.a_zp, a_mult, rv, p.res_mult, a_shift) + p.add_zp;
          ASSERT_EQ(s8(got[i * n + j]), naive_clamp(y, p.add_lo, p.add_hi)) << "rescale i=" << i << " j=" << j;
        } else {
          ASSERT_EQ(s8(got[i * n + j]), naive_clamp(y + r, p.clip_lo, p.clip_hi)) << "i=" << i << " j=" << j;
        }
      }
  }
  EXPECT_EQ(rescaled, 10);
}

// `even` rounds the main requantization's ties to even and nothing else:
// v / 2 for v in -40..40 (mult 2^30, shift 31) ties on every odd v.
TEST(RefPostop, EvenRoundsTiesToEven) {
  const unsigned m = 9, n = 9;
  std::vector<int32_t> accv(m * n), params;
  for (unsigned e = 0; e < m * n; ++e) accv[e] = int32_t(e) - 40;
  for (unsigned j = 0; j < n; ++j) params.insert(params.end(), {0, 1 << 30, 31});
  for (const bool even : {false, true}) {
    SCOPED_TRACE(even ? "even" : "away");
    Harness h;
    spec::PostopInsn p;
    p.even = even;
    p.m = m, p.n = n, p.acc_addr = 64, p.out_addr = 0, p.param_addr = 0;
    p.out_zp = 3, p.clip_lo = -128, p.clip_hi = 127, p.res_shift = 1;
    auto& acc = h.core(0).buf(Buffer::ACC);
    const auto acc_bytes = le32(accv);
    std::copy(acc_bytes.begin(), acc_bytes.end(), acc.begin() + 64);
    const uint64_t dp = h.put(le32(params)), dout = h.alloc(m * n);
    h.run(0, {load(Buffer::PARAM, 0, dp, 1, params.size() * 4), p.encode(), store(Buffer::OUT, 0, dout, 1, m * n),
              end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    const auto got = h.get(dout, m * n);
    for (unsigned e = 0; e < m * n; ++e) {
      const int v = accv[e], half = v / 2;  // toward zero
      // A tie (odd v) goes away from zero, or to the even one of half and half +- 1.
      const int away = v % 2 == 0 ? half : half + (v > 0 ? 1 : -1);
      const int to_even = v % 2 == 0 ? half : (half % 2 == 0 ? half : away);
      ASSERT_EQ(s8(got[e]), (even ? to_even : away) + 3) << "v=" << v;
    }
  }
}

// rescale is POSTOP followed by ELTWISE without the round trip of the clamped
// result through memory: both programs must write the same bytes.
TEST(RefPostop, RescaleEqualsPostopThenEltwise) {
  const uint32_t seed = test_seed(4242);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const unsigned m = rand_in(rng, 1, 6), n = rand_in(rng, 1, 20), mn = m * n;
    std::vector<int32_t> accv(mn), params;
    for (auto& v : accv) v = rand_in(rng, -300000, 300000);
    for (unsigned j = 0; j < n; ++j) {
      params.push_back(rand_in(rng, -50000, 50000));
      params.push_back(rand_in(rng, 1 << 29, INT32_MAX));
      params.push_back(rand_in(rng, 30, 40));
    }
    const int32_t a_mult = rand_in(rng, trial % 5 == 0 ? INT32_MIN : 1 << 29, INT32_MAX);
    const int32_t a_shift = rand_in(rng, 27, 36);
    params.push_back(a_mult);
    params.push_back(a_shift);
    const auto res = random_bytes(rng, mn);

    spec::PostopInsn p;
    p.m = m;
    p.n = n;
    p.acc_addr = 0;
    p.param_addr = 0;
    p.out_zp = rand_in(rng, -30, 30);
    p.clip_lo = trial % 3 == 0 ? p.out_zp : rand_in(rng, -128, -50);
    p.clip_hi = rand_in(rng, 50, 127);
    p.residual = 1;
    p.rescale = 1;
    p.res_addr = 1024;
    p.res_zp = rand_in(rng, -128, 127);
    p.res_mult = rand_in(rng, 1 << 29, INT32_MAX);
    p.res_shift = rand_in(rng, 27, 36);
    p.a_zp = rand_in(rng, -128, 127);
    p.add_zp = rand_in(rng, -128, 127);
    p.add_lo = trial % 4 == 0 ? p.add_zp : rand_in(rng, -128, -1);
    p.add_hi = rand_in(rng, std::max<int>(int(p.add_lo), 0), 127);

    // The same POSTOP without the add, then ELTWISE on its stored result.
    spec::PostopInsn plain = p;
    plain.residual = plain.rescale = 0;
    spec::EltwiseInsn e;
    e.count = mn;
    e.a_addr = 4096;
    e.b_addr = p.res_addr;
    e.out_addr = 2048;
    e.a_zp = p.a_zp, e.a_mult = a_mult, e.a_shift = a_shift;
    e.b_zp = p.res_zp, e.b_mult = p.res_mult, e.b_shift = p.res_shift;
    e.out_zp = p.add_zp, e.clip_lo = p.add_lo, e.clip_hi = p.add_hi;

    Harness fused, split;
    for (Harness* h : {&fused, &split}) {
      auto& acc = h->core(0).buf(Buffer::ACC);
      const auto acc_bytes = le32(accv);
      std::copy(acc_bytes.begin(), acc_bytes.end(), acc.begin());
    }
    const uint64_t fp = fused.put(le32(params)), fr = fused.put(res), fo = fused.alloc(mn);
    fused.run(0, {load(Buffer::PARAM, 0, fp, 1, params.size() * 4), load(Buffer::IN, p.res_addr, fr, 1, mn),
                  p.encode(), store(Buffer::OUT, 0, fo, 1, mn), end_insn()});
    ASSERT_EQ(fused.err(0), 0u);
    const uint64_t sp = split.put(le32(params)), sr = split.put(res), sx = split.alloc(mn), so = split.alloc(mn);
    split.run(0, {load(Buffer::PARAM, 0, sp, 1, 12 * n), load(Buffer::IN, p.res_addr, sr, 1, mn), plain.encode(),
                  store(Buffer::OUT, 0, sx, 1, mn), fence(), load(Buffer::IN, e.a_addr, sx, 1, mn), e.encode(),
                  store(Buffer::OUT, e.out_addr, so, 1, mn), end_insn()});
    ASSERT_EQ(split.err(0), 0u);
    EXPECT_EQ(fused.get(fo, mn), split.get(so, mn));
  }
}

TEST(RefPool, RandomMaxAndAvg) {
  const uint32_t seed = test_seed(7);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Harness h;
    spec::PoolInsn p;
    p.avg = trial % 2;
    p.p = rand_in(rng, 1, 10);
    p.win = rand_in(rng, 1, 9);
    p.c = rand_in(rng, 1, 16);
    p.in_zp = rand_in(rng, -128, 127);
    p.out_zp = rand_in(rng, -128, 127);
    p.clip_lo = rand_in(rng, -128, 0);
    p.clip_hi = rand_in(rng, 0, 127);
    p.mult = rand_in(rng, 1 << 28, INT32_MAX);
    p.shift = rand_in(rng, 28, 36);
    p.in_addr = rand_in(rng, 0, 500);
    p.out_addr = rand_in(rng, 0, 500);
    const uint64_t nin = p.p * p.win * p.c, nout = p.p * p.c;
    const auto x = random_bytes(rng, nin);
    const uint64_t dx = h.put(x), dy = h.alloc(nout);
    h.run(0, {load(Buffer::IN, p.in_addr, dx, 1, nin), p.encode(), store(Buffer::OUT, p.out_addr, dy, 1, nout),
              end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    const auto got = h.get(dy, nout);
    for (uint64_t i = 0; i < p.p; ++i)
      for (uint64_t ch = 0; ch < p.c; ++ch) {
        int64_t mx = INT64_MIN, sum = 0;
        for (uint64_t w = 0; w < p.win; ++w) {
          const int64_t v = s8(x[(i * p.win + w) * p.c + ch]);
          mx = std::max(mx, v);
          sum += v - p.in_zp;
        }
        const int64_t y = p.avg ? naive_rq_even(sum, p.mult, int(p.shift)) + p.out_zp : mx;
        ASSERT_EQ(s8(got[i * p.c + ch]), naive_clamp(y, p.clip_lo, p.clip_hi)) << "pixel " << i << " ch " << ch;
      }
  }
}

TEST(RefEltwise, RandomQuantizedAdd) {
  const uint32_t seed = test_seed(2024);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Harness h;
    spec::EltwiseInsn e;
    e.count = rand_in(rng, 1, 700);
    e.a_addr = rand_in(rng, 0, 1000);
    e.b_addr = 4096 + rand_in(rng, 0, 1000);
    e.out_addr = rand_in(rng, 0, 1000);
    e.a_zp = rand_in(rng, -128, 127);
    e.b_zp = rand_in(rng, -128, 127);
    e.out_zp = rand_in(rng, -128, 127);
    e.clip_lo = rand_in(rng, -128, 0);
    e.clip_hi = rand_in(rng, 0, 127);
    e.a_mult = rand_in(rng, INT32_MIN, INT32_MAX);
    e.b_mult = trial % 5 == 0 ? 0 : rand_in(rng, INT32_MIN, INT32_MAX);  // unary every fifth trial
    e.a_shift = rand_in(rng, 25, 40);
    e.b_shift = rand_in(rng, 25, 40);
    const auto a = random_bytes(rng, e.count), b = random_bytes(rng, e.count);
    const uint64_t da = h.put(a), db = h.put(b), dy = h.alloc(e.count);
    h.run(0, {load(Buffer::IN, e.a_addr, da, 1, e.count), load(Buffer::IN, e.b_addr, db, 1, e.count), e.encode(),
              store(Buffer::OUT, e.out_addr, dy, 1, e.count), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    const auto got = h.get(dy, e.count);
    for (uint64_t i = 0; i < e.count; ++i) {
      // One rounding of the sum at a_shift; b_shift is checked but not used.
      const int64_t y =
          naive_rqs(int64_t(s8(a[i])) - e.a_zp, e.a_mult, int64_t(s8(b[i])) - e.b_zp, e.b_mult, int(e.a_shift)) +
          e.out_zp;
      ASSERT_EQ(s8(got[i]), naive_clamp(y, e.clip_lo, e.clip_hi)) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace loom::ref::test
