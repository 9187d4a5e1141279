// The kernel-side requantization (hls/include/loom_hls_quant.h) equals the
// golden model's (host/common/quant.h): every shift 1..62 crossed with edge
// and random multipliers and values (requantize and requantize_even), the requantizing add (requantize_sum)
// on int8 differences with edge and random multiplier pairs and exact ties of
// the sum, plus the int8 output clamp over its whole input range.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/quant.h"
#include "ir/builder.h"
#include "loom_hls_quant.h"

int main() {
  loom::ir::Rng rng(0x5155414E54);
  // Values the kernels pass: int32 accumulators (any value after the wrap),
  // int8 differences, pool sums; multipliers: any int32.
  std::vector<int64_t> values = {0, 1, -1, 2, -2, 127, -128, 255, -255, 256, 65535, -65536, 255 * 65535,
                                 -255 * 65535, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 1 << 30,
                                 -(1 << 30)};
  for (int i = 0; i < 200; ++i) values.push_back(rng.range(INT32_MIN, INT32_MAX));
  for (int i = 0; i < 100; ++i) values.push_back(rng.range(-70000, 70000));
  std::vector<int32_t> mults = {0, 1, -1, 2, INT32_MAX, INT32_MIN, INT32_MIN + 1, 1 << 30, (1 << 30) + 1,
                                -(1 << 30)};
  for (int i = 0; i < 40; ++i) mults.push_back(int32_t(rng.range(INT32_MIN, INT32_MAX)));
  for (int i = 0; i < 20; ++i) mults.push_back(int32_t(rng.range(1 << 30, INT32_MAX)));
  long long compared = 0;
  int failures = 0;
  auto check = [&](int64_t v, int32_t m, int s) {
    ++compared;
    const int32_t want = loom::requantize(v, m, s), got = loom_hls::requantize(v, m, s);
    if (want != got && failures++ < 5)
      std::fprintf(stderr, "MISMATCH requantize(%lld, %d, %d): kernel %d, golden %d\n", (long long)v, m, s, got, want);
    const int32_t want_e = loom::requantize_even(v, m, s), got_e = loom_hls::requantize_even(v, m, s);
    if (want_e != got_e && failures++ < 5)
      std::fprintf(stderr, "MISMATCH requantize_even(%lld, %d, %d): kernel %d, golden %d\n", (long long)v, m, s, got_e,
                   want_e);
  };
  for (int s = 1; s <= 62; ++s) {
    for (int64_t v : values)
      for (int32_t m : mults) check(v, m, s);
    // Exact ties: v * mult = (2q + 1) * 2^(shift-1) must round away from zero (to even in requantize_even).
    for (int64_t q = -40; q <= 40; ++q) {
      if (s <= 31) check((2 * q + 1) * (int64_t(1) << (s - 1)), 1, s);  // ties, both signs
    }
  }
  // requantize_sum: operands as the kernels pass them (int8 values minus zero
  // points, within 255; the precondition allows up to 2^16), any multipliers.
  std::vector<int64_t> diffs = {0, 1, -1, 2, -2, 127, -127, 128, -128, 254, -254, 255, -255, 65535, -65535};
  for (int i = 0; i < 30; ++i) diffs.push_back(rng.range(-255, 255));
  auto check_sum = [&](int64_t a, int32_t ma, int64_t b, int32_t mb, int s) {
    ++compared;
    const int32_t want = loom::requantize_sum(a, ma, b, mb, s), got = loom_hls::requantize_sum(a, ma, b, mb, s);
    if (want != got && failures++ < 5)
      std::fprintf(stderr, "MISMATCH requantize_sum(%lld, %d, %lld, %d, %d): kernel %d, golden %d\n", (long long)a,
                   ma, (long long)b, mb, s, got, want);
  };
  for (int s = 1; s <= 62; ++s) {
    for (int i = 0; i < 4000; ++i) {
      const int64_t a = diffs[size_t(rng.range(0, int64_t(diffs.size()) - 1))];
      const int64_t b = diffs[size_t(rng.range(0, int64_t(diffs.size()) - 1))];
      check_sum(a, mults[size_t(rng.range(0, int64_t(mults.size()) - 1))], b,
                mults[size_t(rng.range(0, int64_t(mults.size()) - 1))], s);
    }
    // Exact ties of the sum: (a + b) * m = (2q + 1) * 2^(s-1) with m a power of two (INT32_MIN
    // past 2^30), a + b odd times the rest, both signs.
    const int e = s - 1 < 31 ? s - 1 : 31;
    const int t = s - 1 - e;
    if (t <= 15) {
      const int32_t m = e == 31 ? INT32_MIN : int32_t(1) << e;
      for (int64_t q = -20; q <= 20; ++q) {
        const int64_t sum = (2 * q + 1) * (int64_t(1) << t);
        const int64_t a = sum / 2 + rng.range(-100, 100);
        if (a > 65535 || a < -65535 || sum - a > 65535 || sum - a < -65535) continue;
        check_sum(a, m, sum - a, m, s);
      }
    }
  }
  for (int64_t v = -70000; v <= 70000; ++v) {
    ++compared;
    for (int lo : {-128, -5, 0}) {
      const int hi = lo == 0 ? 127 : 6;
      if (loom::clamp_i8(v, lo, hi) != loom_hls::clamp_out(v, lo, hi) && failures++ < 5)
        std::fprintf(stderr, "MISMATCH clamp(%lld, %d, %d)\n", (long long)v, lo, hi);
    }
  }
  std::printf("hls.quant.equal: %lld comparisons, %d failures\n", compared, failures);
  return failures == 0 ? 0 : 1;
}
