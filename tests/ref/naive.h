// Naive arithmetic the ref tests compare against, written independently of
// the model and of common/quant.h (128-bit division instead of shifts).
#pragma once

#include <algorithm>
#include <cstdint>

namespace loom::ref::test {

/// round_half_away_from_zero(p / 2^shift) saturated to int32, in 128 bits.
inline int64_t naive_round_shift(__int128 p, int shift) {
  const __int128 d = __int128(1) << shift;
  __int128 q = p / d;  // truncates toward zero
  const __int128 r = p - q * d;
  const __int128 twice = r < 0 ? -2 * r : 2 * r;
  if (twice >= d) q += p < 0 ? -1 : 1;
  if (q > INT32_MAX) return INT32_MAX;
  if (q < INT32_MIN) return INT32_MIN;
  return int64_t(q);
}

inline int64_t naive_rq(int64_t v, int64_t mult, int shift) { return naive_round_shift(__int128(v) * mult, shift); }

/// round_half_to_even(v * mult / 2^shift) saturated to int32 (POOL's average),
/// from the truncated quotient and twice the remainder.
inline int64_t naive_rq_even(int64_t v, int64_t mult, int shift) {
  const __int128 p = __int128(v) * mult, d = __int128(1) << shift;
  __int128 q = p / d;
  const __int128 r = p - q * d;
  const __int128 twice = r < 0 ? -2 * r : 2 * r;
  if (twice > d || (twice == d && q % 2 != 0)) q += p < 0 ? -1 : 1;
  return int64_t(std::clamp<__int128>(q, INT32_MIN, INT32_MAX));
}

/// The requantizing add, rounded once: (a * ma + b * mb) / 2^shift.
inline int64_t naive_rqs(int64_t a, int64_t ma, int64_t b, int64_t mb, int shift) {
  return naive_round_shift(__int128(a) * ma + __int128(b) * mb, shift);
}

inline int8_t naive_clamp(int64_t y, int64_t lo, int64_t hi) { return int8_t(std::min(std::max(y, lo), hi)); }

/// Two's-complement wrap of an arbitrary integer to int32.
inline int32_t wrap32(int64_t v) {
  uint64_t u = uint64_t(v) & 0xFFFFFFFFu;
  return u >= 0x80000000u ? int32_t(int64_t(u) - (int64_t(1) << 32)) : int32_t(u);
}

}  // namespace loom::ref::test
