// Fixed-point requantization shared by the golden model, the direct reference
// ops and the compiler, so that every path rounds identically.
//
// rq(v, mult, shift) = round_half_away_from_zero(v * mult / 2^shift), computed
// exactly in 64-bit arithmetic (|v * mult| < 2^63 for int32 operands) and
// saturated to int32. 1 <= shift <= 62.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace loom {

inline constexpr int kMinShift = 1;
inline constexpr int kMaxShift = 62;

constexpr int32_t sat_i32(int64_t v) {
  return int32_t(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

constexpr int32_t requantize(int64_t v, int32_t mult, int shift) {
  // v is an int32 (or a sum that the callers keep within int32), so the
  // product fits in int64: |v * mult| < 2^62.
  const int64_t p = v * int64_t(mult);
  const uint64_t mag = p < 0 ? uint64_t(-(p + 1)) + 1 : uint64_t(p);
  const uint64_t half = uint64_t(1) << (shift - 1);
  const uint64_t q = (mag + half) >> shift;  // ties away from zero
  return sat_i32(p < 0 ? -int64_t(q) : int64_t(q));
}

constexpr int8_t clamp_i8(int64_t v, int lo = -128, int hi = 127) { return int8_t(std::clamp<int64_t>(v, lo, hi)); }

struct Multiplier {
  int32_t mult = 0;
  int shift = kMinShift;
};

/// Represents a positive real scale as mult / 2^shift with mult in
/// [2^30, 2^31). Returns false when the scale is not positive and finite or
/// needs a shift outside [kMinShift, kMaxShift].
inline bool quantize_multiplier(double real, Multiplier* out) {
  if (!(real > 0.0) || !std::isfinite(real)) return false;
  int e = 0;
  const double f = std::frexp(real, &e);  // real = f * 2^e, f in [0.5, 1)
  int64_t m = std::llround(f * double(int64_t(1) << 31));
  int shift = 31 - e;
  if (m == (int64_t(1) << 31)) {
    m >>= 1;
    --shift;
  }
  if (shift < kMinShift || shift > kMaxShift) return false;
  out->mult = int32_t(m);
  out->shift = shift;
  return true;
}

}  // namespace loom
