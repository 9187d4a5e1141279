// Kernel-side requantization for the loom HLS kernels: the same integer
// arithmetic as host/common/quant.h (requantize: round half away from zero of
// v * mult / 2^shift, saturated to int32; requantize_even: the same with ties
// to even, POOL's average; requantize_sum: a requantizing add,
// both products summed exactly and rounded once; the int8 output clamp),
// written in the C++ subset Vitis HLS synthesizes (no std::clamp, no C++17
// inline variables). hls/common/tb_quant.cc checks they equal
// loom::requantize and loom::requantize_sum over every shift and edge and
// random operands.
#pragma once

#include <stdint.h>

namespace loom_hls {

/// Saturates a 64-bit value to int32.
inline int32_t sat_i32(int64_t v) {
  return v < int64_t(INT32_MIN) ? INT32_MIN : (v > int64_t(INT32_MAX) ? INT32_MAX : int32_t(v));
}

/// round_half_away_from_zero(p / 2^shift) saturated to int32, 1 <= shift <= 62.
inline int32_t round_shift(int64_t p, int shift) {
  // |p| as unsigned without negating INT64_MIN (|p| < 2^63 - 2^61 for the callers).
  const uint64_t mag = p < 0 ? uint64_t(-(p + 1)) + 1 : uint64_t(p);
  const uint64_t half = uint64_t(1) << (shift - 1);
  const uint64_t q = (mag + half) >> shift;
  return sat_i32(p < 0 ? -int64_t(q) : int64_t(q));
}

/// round_half_to_even(p / 2^shift) saturated to int32, 1 <= shift <= 62: the
/// floor, plus one above half or at exactly half with an odd floor.
inline int32_t round_shift_even(int64_t p, int shift) {
  const int64_t q = p >> shift;
  const uint64_t rem = uint64_t(p) & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  return sat_i32(q + ((rem > half || (rem == half && (q & 1) != 0)) ? 1 : 0));
}

/// round_half_away_from_zero(v * mult / 2^shift) saturated to int32.
/// Preconditions (as in loom::requantize): v fits int32, 1 <= shift <= 62.
inline int32_t requantize(int64_t v, int32_t mult, int shift) { return round_shift(v * int64_t(mult), shift); }

/// round_half_to_even(v * mult / 2^shift) saturated to int32 (POOL's average).
inline int32_t requantize_even(int64_t v, int32_t mult, int shift) { return round_shift_even(v * int64_t(mult), shift); }

/// A requantizing add, rounded once: round_half_away_from_zero((a * ma + b *
/// mb) / 2^shift) saturated to int32, the sum exact in 64 bits.
/// Preconditions (as in loom::requantize_sum): |a|, |b| < 2^16 (int8 values
/// minus zero points), 1 <= shift <= 62.
inline int32_t requantize_sum(int64_t a, int32_t ma, int64_t b, int32_t mb, int shift) {
  return round_shift(a * int64_t(ma) + b * int64_t(mb), shift);
}

/// Clamps to [lo, hi] (lo <= hi, both within int8) and narrows to int8.
inline int8_t clamp_out(int64_t v, int32_t lo, int32_t hi) {
  return int8_t(v < lo ? lo : (v > hi ? hi : v));
}

/// One output channel's post-op parameters, laid out as the spec's PARAM
/// table entry (kParamBytesPerChannel = 12: bias, mult, shift as int32).
struct ChannelParams {
  int32_t bias;
  int32_t mult;
  int32_t shift;
};

/// Status the kernel tops return (ap_return): 0 when the call ran, else the
/// first violated limit. A non-zero status means nothing was written.
enum KernelStatus {
  kOk = 0,
  kBadShape = 1,     // a dimension is negative, or the stride/kernel is < 1
  kOverLimit = 2,    // a dimension exceeds the kernel's local buffers (see hls/README.md)
  kBadClamp = 3,     // clip lo > hi or outside [-128, 127]
  kBadParam = 4,     // a zero point outside int8, or a shift outside [1, 62]
};

/// True when a requantization shift is in the range requantize() accepts.
inline bool shift_ok(int32_t shift) { return shift >= 1 && shift <= 62; }

/// True when a zero point is an int8 value.
inline bool zp_ok(int32_t zp) { return zp >= -128 && zp <= 127; }

/// True when [lo, hi] is a non-empty int8 clamp range.
inline bool clamp_ok(int32_t lo, int32_t hi) { return lo >= -128 && hi <= 127 && lo <= hi; }

}  // namespace loom_hls
