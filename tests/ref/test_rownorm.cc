// ROWNORM (softmax and layer normalization over rows) on the golden model,
// end to end through LOAD/STORE and the command ring: against a naive
// transcription of the spec's formulas in 128-bit and long-double arithmetic,
// against float softmax and layer normalization (the approximation's
// accuracy), and every error the spec names.
#include <gtest/gtest.h>

#include <cmath>

#include "common/rownorm.h"
#include "harness.h"
#include "naive.h"

namespace loom::ref::test {
namespace {


std::vector<uint8_t> table_bytes(const std::array<uint16_t, 256>& t) {
  std::vector<uint8_t> b;
  for (uint16_t e : t) b.push_back(uint8_t(e & 0xFF)), b.push_back(uint8_t(e >> 8));
  return b;
}

// The spec's softmax, written out once more with its own arithmetic.
std::vector<int8_t> naive_softmax(const std::vector<uint8_t>& x, unsigned m, unsigned n,
                                  const std::array<uint16_t, 256>& t, const spec::RownormInsn& r) {
  std::vector<int8_t> y(m * n);
  for (unsigned i = 0; i < m; ++i) {
    int mx = -128;
    for (unsigned j = 0; j < n; ++j) mx = std::max<int>(mx, s8(x[i * n + j]));
    unsigned __int128 sum = 0;
    for (unsigned j = 0; j < n; ++j) sum += t[unsigned(mx - s8(x[i * n + j]))];
    const unsigned __int128 rec = sum == 0 ? 0 : ((unsigned __int128)1 << 32) - 1;
    const unsigned __int128 rr = sum == 0 ? 0 : rec / sum;
    for (unsigned j = 0; j < n; ++j) {
      const int64_t p = int64_t((t[unsigned(mx - s8(x[i * n + j]))] * rr) / 65536);
      y[i * n + j] = naive_clamp(naive_rq(p, int64_t(r.mult), int(r.shift)) + r.out_zp, r.clip_lo, r.clip_hi);
    }
  }
  return y;
}

// The spec's layer normalization, with a square root by bisection.
std::vector<int8_t> naive_layernorm(const std::vector<uint8_t>& x, unsigned m, unsigned n,
                                    const std::vector<int32_t>& par, const spec::RownormInsn& r) {
  std::vector<int8_t> y(m * n);
  for (unsigned i = 0; i < m; ++i) {
    __int128 s1 = 0, s2 = 0;
    for (unsigned j = 0; j < n; ++j) {
      const __int128 d = s8(x[i * n + j]) - int64_t(r.in_zp);
      s1 += d, s2 += d * d;
    }
    __int128 v = __int128(n) * s2 - s1 * s1 + __int128(r.eps);
    if (v < 1) v = 1;
    int e = 0;  // the even shift 2e that puts v in [2^60, 2^62)
    while ((v << (2 * (e + 1))) < (__int128(1) << 62)) ++e;
    const __int128 vs = v << (2 * e);
    __int128 lo = 0, hi = __int128(1) << 32;  // floor(sqrt(vs)) in [lo, hi)
    while (hi - lo > 1) {
      const __int128 mid = (lo + hi) / 2;
      (mid * mid <= vs ? lo : hi) = mid;
    }
    const __int128 big_q = (__int128(1) << 72) / lo;
    const __int128 rr = e >= 24 ? big_q * (__int128(1) << (e - 24)) : big_q / (__int128(1) << (24 - e));
    for (unsigned j = 0; j < n; ++j) {
      const __int128 c = __int128(n) * (s8(x[i * n + j]) - int64_t(r.in_zp)) - s1;
      // z = floor((c * r + 2^31) / 2^32): rounded to units of 2^-16, half up
      const __int128 prod = c * rr + (__int128(1) << 31);
      __int128 z = prod / (__int128(1) << 32);
      if (prod < 0 && z * (__int128(1) << 32) != prod) --z;
      const __int128 a = z * par[3 * j + 1] + par[3 * j];
      const int sh = par[3 * j + 2];
      const __int128 mag = a < 0 ? -a : a;
      __int128 t = (mag + (__int128(1) << (sh - 1))) >> sh;
      if (a < 0) t = -t;
      t = std::min<__int128>(std::max<__int128>(t, INT32_MIN), INT32_MAX);
      y[i * n + j] = naive_clamp(int64_t(t) + r.out_zp, r.clip_lo, r.clip_hi);
    }
  }
  return y;
}

struct RowRun {
  uint32_t err = 0;
  std::vector<int8_t> y;
};

RowRun run_rownorm(const spec::RownormInsn& r, const std::vector<uint8_t>& x, const std::vector<uint8_t>& param,
                uint64_t canary = 0x5A) {
  Harness h;
  const uint64_t mn = r.m * r.n;
  const uint64_t dx = h.put(x), dp = h.put(param);
  const std::vector<uint8_t> fill(std::max<uint64_t>(mn, 1), uint8_t(canary));
  const uint64_t dy = h.put(fill);
  std::vector<Insn> prog;
  if (!param.empty()) prog.push_back(load(Buffer::PARAM, r.param_addr & ~uint64_t(3), dp, 1, param.size()));
  if (mn && !x.empty()) prog.push_back(load(Buffer::IN, r.in_addr, dx, 1, mn));
  prog.push_back(r.encode());
  if (mn) prog.push_back(store(Buffer::OUT, r.out_addr, dy, 1, mn));
  prog.push_back(end_insn());
  h.run(0, prog);
  RowRun out;
  out.err = h.err(0);
  if (out.err == 0)
    for (uint8_t b : h.get(dy, mn)) out.y.push_back(s8(b));
  return out;
}

TEST(RefRownorm, SoftmaxMatchesTheSpecOnRandomRows) {
  const uint32_t seed = test_seed(77);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const unsigned m = rand_in(rng, 1, 6), n = trial == 0 ? 1 : rand_in(rng, 1, 300);
    std::array<uint16_t, 256> t;
    for (auto& e : t) e = uint16_t(rand_in(rng, 0, 65535));  // any table: the sum may pass 2^16
    if (trial % 7 == 3) t.fill(0);                          // S = 0: r = 0
    spec::RownormInsn r;
    r.m = m, r.n = n;
    r.in_addr = rand_in(rng, 0, 500);
    r.out_addr = rand_in(rng, 0, 500);
    r.param_addr = 4 * rand_in(rng, 0, 100);
    r.mult = rand_in(rng, INT32_MIN, INT32_MAX);
    r.shift = rand_in(rng, 1, 40);
    r.out_zp = rand_in(rng, -128, 127);
    r.clip_lo = rand_in(rng, -128, 0);
    r.clip_hi = rand_in(rng, 0, 127);
    r.in_zp = rand_in(rng, -128, 127);  // not used by softmax
    const auto x = random_bytes(rng, m * n);
    const RowRun got = run_rownorm(r, x, table_bytes(t));
    ASSERT_EQ(got.err, 0u);
    ASSERT_EQ(got.y, naive_softmax(x, m, n, t, r));
  }
}

TEST(RefRownorm, LayerNormMatchesTheSpecOnRandomRows) {
  const uint32_t seed = test_seed(78);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const unsigned m = rand_in(rng, 1, 5), n = trial == 0 ? 1 : rand_in(rng, 1, 300);
    std::vector<int32_t> par;
    for (unsigned j = 0; j < n; ++j) {
      par.push_back(rand_in(rng, INT32_MIN, INT32_MAX));
      par.push_back(rand_in(rng, INT32_MIN, INT32_MAX));
      par.push_back(trial % 5 == 0 ? rand_in(rng, 1, 62) : rand_in(rng, 30, 50));
    }
    spec::RownormInsn r;
    r.ln = true;
    r.m = m, r.n = n;
    r.in_addr = rand_in(rng, 0, 500);
    r.out_addr = rand_in(rng, 0, 500);
    r.param_addr = 4 * rand_in(rng, 0, 50);
    r.eps = trial % 3 == 0 ? 0 : uint64_t(rand_in(rng, 0, INT32_MAX)) * 2;
    r.in_zp = rand_in(rng, -128, 127);
    r.out_zp = rand_in(rng, -128, 127);
    r.clip_lo = rand_in(rng, -128, 0);
    r.clip_hi = rand_in(rng, 0, 127);
    r.shift = 0;  // not used (and not checked) by layer normalization
    auto x = random_bytes(rng, m * n);
    if (trial % 6 == 1) std::fill(x.begin(), x.end(), uint8_t(rand_in(rng, 0, 255)));  // zero variance
    if (trial % 6 == 2)
      for (auto& b : x) b = uint8_t(rand_in(rng, 0, 1) ? 127 : 128);  // extreme rows
    const RowRun got = run_rownorm(r, x, le32(par));
    ASSERT_EQ(got.err, 0u);
    ASSERT_EQ(got.y, naive_layernorm(x, m, n, par, r));
  }
}

TEST(RefRownorm, ParametersFromScalesTrackFloatSoftmaxAndLayerNorm) {
  std::mt19937 rng(5);
  const unsigned n = 128;
  // Softmax of int8 logits with scale 0.08 into the usual 1/256 output.
  SoftmaxParams sp;
  std::string why;
  ASSERT_TRUE(softmax_params(0.08, 1.0 / 256, &sp, &why)) << why;
  spec::RownormInsn r;
  r.m = 4, r.n = n, r.mult = sp.mult, r.shift = uint64_t(sp.shift), r.out_zp = -128, r.clip_lo = -128, r.clip_hi = 127;
  const auto x = random_bytes(rng, 4 * n);
  const RowRun s = run_rownorm(r, x, table_bytes(sp.table));
  ASSERT_EQ(s.err, 0u);
  double worst = 0;
  for (unsigned i = 0; i < 4; ++i) {
    double mx = -1e9, sum = 0;
    for (unsigned j = 0; j < n; ++j) mx = std::max(mx, 0.08 * s8(x[i * n + j]));
    for (unsigned j = 0; j < n; ++j) sum += std::exp(0.08 * s8(x[i * n + j]) - mx);
    for (unsigned j = 0; j < n; ++j) {
      const double want = std::exp(0.08 * s8(x[i * n + j]) - mx) / sum * 256 - 128;
      worst = std::max(worst, std::abs(want - s.y[i * n + j]));
    }
  }
  EXPECT_LE(worst, 1.0) << "softmax within one output step of float";

  // Layer normalization with gamma, beta and epsilon.
  std::vector<float> gamma(n), beta(n);
  for (unsigned j = 0; j < n; ++j) gamma[j] = 0.5f + 0.01f * float(j % 17), beta[j] = -0.3f + 0.005f * float(j % 29);
  const double xs = 0.05, ys = 0.03;
  std::vector<LayerNormChannel> ch;
  uint32_t eps = 0;
  ASSERT_TRUE(layernorm_channels(gamma, beta, ys, &ch, &why)) << why;
  ASSERT_TRUE(layernorm_eps(1e-5, xs, n, &eps, &why)) << why;
  std::vector<int32_t> par;
  for (const auto& c : ch) par.insert(par.end(), {c.b, c.g, c.sh});
  spec::RownormInsn l;
  l.ln = true, l.m = 4, l.n = n, l.eps = eps, l.in_zp = 3, l.out_zp = -2, l.clip_lo = -128, l.clip_hi = 127;
  const RowRun o = run_rownorm(l, x, le32(par));
  ASSERT_EQ(o.err, 0u);
  worst = 0;
  for (unsigned i = 0; i < 4; ++i) {
    double mean = 0, var = 0;
    for (unsigned j = 0; j < n; ++j) mean += xs * (s8(x[i * n + j]) - 3);
    mean /= n;
    for (unsigned j = 0; j < n; ++j) var += std::pow(xs * (s8(x[i * n + j]) - 3) - mean, 2);
    var /= n;
    for (unsigned j = 0; j < n; ++j) {
      const double v = (xs * (s8(x[i * n + j]) - 3) - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
      const double want = std::clamp(v / ys - 2, -128.0, 127.0);
      worst = std::max(worst, std::abs(want - o.y[i * n + j]));
    }
  }
  EXPECT_LE(worst, 1.0) << "layer normalization within one output step of float";
}

// Layer normalization as ONNX computes it, in float then rounded once (half
// to even, as QuantizeLinear): the integer kernel's normalized value is
// within 2^-16 of exact, so it gives the same code on all but the outputs
// within a few 2^-16 of a rounding boundary. Rows of 8..320 channels, deviations from
// a few codes to the whole int8 range.
TEST(RefRownorm, LayerNormRoundsAsFloatDoesOffItsBoundaries) {
  std::mt19937 rng(11);
  uint64_t total = 0, same = 0;
  for (const unsigned n : {8u, 32u, 96u, 256u, 320u}) {  // 12 n bytes of PARAM, m n of OUT: within tiny
    const double xs = 0.02 + 0.01 * (n % 7), ys = 0.025, epsilon = 1e-5;
    std::normal_distribution<float> gauss(1.0f, 0.3f), shift(0.0f, 0.3f);
    std::vector<float> gamma(n), beta(n);
    for (unsigned j = 0; j < n; ++j) gamma[j] = gauss(rng), beta[j] = shift(rng);
    std::vector<LayerNormChannel> ch;
    uint32_t eps = 0;
    std::string why;
    ASSERT_TRUE(layernorm_channels(gamma, beta, ys, &ch, &why)) << why;
    ASSERT_TRUE(layernorm_eps(epsilon, xs, n, &eps, &why)) << why;
    std::vector<int32_t> par;
    for (const auto& c : ch) par.insert(par.end(), {c.b, c.g, c.sh});
    const unsigned m = 24;
    std::vector<uint8_t> x(m * n);
    for (unsigned i = 0; i < m; ++i) {
      std::normal_distribution<double> row(rand_in(rng, -20, 20), 2.0 + 3.0 * i);
      for (unsigned j = 0; j < n; ++j) x[i * n + j] = uint8_t(int8_t(std::clamp(std::lround(row(rng)), -128L, 127L)));
    }
    spec::RownormInsn l;
    l.ln = true, l.m = m, l.n = n, l.eps = eps, l.in_zp = -3, l.out_zp = 5, l.clip_lo = -128, l.clip_hi = 127;
    const RowRun o = run_rownorm(l, x, le32(par));
    ASSERT_EQ(o.err, 0u);
    for (unsigned i = 0; i < m; ++i) {
      double mean = 0, sq = 0;
      for (unsigned j = 0; j < n; ++j) mean += xs * (s8(x[i * n + j]) + 3);
      mean /= n;
      for (unsigned j = 0; j < n; ++j) sq += std::pow(xs * (s8(x[i * n + j]) + 3) - mean, 2);
      const double dev = std::sqrt(sq / n + epsilon);
      for (unsigned j = 0; j < n; ++j) {
        const double v = (xs * (s8(x[i * n + j]) + 3) - mean) / dev * gamma[j] + beta[j];
        const double want = std::clamp(std::nearbyint(v / ys) + 5, -128.0, 127.0);
        EXPECT_LE(std::abs(want - o.y[i * n + j]), 1.0) << "n " << n << " row " << i << " channel " << j;
        ++total, same += (want == o.y[i * n + j]);
      }
    }
  }
  EXPECT_GE(double(same), 0.999 * double(total)) << same << " of " << total << " outputs as float rounds them";
}

TEST(RefRownorm, ErrorsAsTheSpecNames) {
  std::mt19937 rng(9);
  const auto x = random_bytes(rng, 64);
  const std::vector<uint8_t> table(512, 1);
  spec::RownormInsn r;
  r.m = 4, r.n = 16, r.mult = 1 << 30, r.shift = 30;
  // Softmax shift outside 1..62, clip_lo > clip_hi, an unaligned PARAM address.
  spec::RownormInsn bad = r;
  bad.shift = 0;
  EXPECT_EQ(run_rownorm(bad, x, table).err, spec::err::ILLEGAL_INSN);
  bad = r;
  bad.clip_lo = 5, bad.clip_hi = 4;
  EXPECT_EQ(run_rownorm(bad, x, table).err, spec::err::ILLEGAL_INSN);
  bad = r;
  bad.param_addr = 2;
  EXPECT_EQ(run_rownorm(bad, x, table).err, spec::err::ILLEGAL_INSN);
  // The whole table is bounds-checked; so are the rows of IN and OUT.
  const uint64_t param_bytes = uint64_t(config("tiny").param_kib) * 1024;
  bad = r;
  bad.param_addr = param_bytes - 508;
  EXPECT_EQ(run_rownorm(bad, x, {}).err, spec::err::SCRATCHPAD_OOB);
  bad = r;
  bad.in_addr = uint64_t(config("tiny").in_kib) * 1024 - 63;
  EXPECT_EQ(run_rownorm(bad, {}, table).err, spec::err::SCRATCHPAD_OOB);
  // No rows: nothing is touched, not even a table past the end.
  bad = r;
  bad.m = 0;
  bad.param_addr = param_bytes - 4;
  EXPECT_EQ(run_rownorm(bad, {}, {}).err, 0u);
  // Layer normalization: the triples are checked (every channel, before any
  // write); its shift field is not.
  spec::RownormInsn l = r;
  l.ln = true, l.shift = 0;
  std::vector<int32_t> par;
  for (unsigned j = 0; j < 16; ++j) par.insert(par.end(), {0, 1 << 20, 20});
  EXPECT_EQ(run_rownorm(l, x, le32(par)).err, 0u);
  par[3 * 15 + 2] = 63;
  EXPECT_EQ(run_rownorm(l, x, le32(par)).err, spec::err::ILLEGAL_INSN);
  l.param_addr = param_bytes - 12 * 16 + 4;
  EXPECT_EQ(run_rownorm(l, x, {}).err, spec::err::SCRATCHPAD_OOB);
}

}  // namespace
}  // namespace loom::ref::test
