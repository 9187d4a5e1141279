// Fixed-point requantization shared by the golden model, the direct reference
// ops and the compiler, so that every path rounds identically.
//
// rq(v, mult, shift) = round_half_away_from_zero(v * mult / 2^shift), computed
// exactly in 64-bit arithmetic (|v * mult| < 2^63 for int32 operands) and
// saturated to int32. 1 <= shift <= 62. A requantizing add rounds once:
// requantize_sum puts both operands on one grid and rounds their sum.
// Average pooling rounds ties to even instead (requantize_even), as ONNX's
// QuantizeLinear rounds the float average: with equal input and output
// scales, every sum of a 2x2 window that is 2 mod 4 is a tie.
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

/// sat_i32(round_half_away_from_zero(p / 2^shift)) for 1 <= shift <= 62.
constexpr int32_t round_shift(int64_t p, int shift) {
  const uint64_t mag = p < 0 ? uint64_t(-(p + 1)) + 1 : uint64_t(p);
  const uint64_t half = uint64_t(1) << (shift - 1);
  const uint64_t q = (mag + half) >> shift;  // ties away from zero
  return sat_i32(p < 0 ? -int64_t(q) : int64_t(q));
}

/// sat_i32(round_half_to_even(p / 2^shift)) for 1 <= shift <= 62: the floor
/// q = p >> shift, plus one when the remainder is above half, or exactly half
/// and q is odd.
constexpr int32_t round_shift_even(int64_t p, int shift) {
  const int64_t q = p >> shift;  // floor (arithmetic shift)
  const uint64_t rem = uint64_t(p) & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  return sat_i32(q + ((rem > half || (rem == half && (q & 1) != 0)) ? 1 : 0));
}

constexpr int32_t requantize(int64_t v, int32_t mult, int shift) {
  // v is an int32 (or a sum that the callers keep within int32), so the
  // product fits in int64: |v * mult| < 2^62.
  return round_shift(v * int64_t(mult), shift);
}

/// rq with ties to even: sat_i32(round_half_to_even(v * mult / 2^shift)),
/// the rounding of POOL's average mode. Preconditions as requantize.
constexpr int32_t requantize_even(int64_t v, int32_t mult, int shift) {
  return round_shift_even(v * int64_t(mult), shift);
}

/// A requantizing add, rounded once: sat_i32(round_half_away_from_zero((a *
/// ma + b * mb) / 2^shift)), exact in 64-bit arithmetic. The two terms share
/// one fixed-point grid (one shift; ir::elt_quant puts the multipliers on
/// it), so the sum is formed exactly and rounded at the end, as ONNX's
/// QLinearAdd computes round((a * sa + b * sb) / sy) once. Callers keep |a|,
/// |b| < 2^16 (int8 operands minus zero points are within 255), so the sum
/// stays below 2^48.
constexpr int32_t requantize_sum(int64_t a, int32_t ma, int64_t b, int32_t mb, int shift) {
  return round_shift(a * int64_t(ma) + b * int64_t(mb), shift);
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
