// Integer row normalizations (softmax and layer normalization over the last
// axis), exactly as the ROWNORM instruction defines them in
// docs/spec/isa.yaml, and the derivation of their parameters from float
// scales. Shared by the golden model, the graph reference and the compiler,
// so every path computes the same bits.
//
// Softmax: the row maximum makes every exponent non-positive, so
// exp(s * (x - max)) is one entry of a 256-entry table of 2^15-scaled values;
// the row's sum gives one reciprocal (a division a row) and each output is a
// multiply and a requantization. Layer normalization: the row's sum and sum
// of squares give n^2 times the variance exactly; one integer square root
// of it scaled into [2^60, 2^62) and one division a row give a reciprocal to
// 31 significant bits, and each output is a normalized value rounded to
// units of 2^-16 put through the channel's affine (gamma, beta) with one
// rounding: within 2^-16 of exact, so the output rounds as float does
// except within a few 2^-16 of its rounding boundary. The approach follows I-BERT's integer-only kernels
// (Kim et al., 2021), with the exponential tabulated instead of approximated
// by a polynomial, since an int8 input has only 256 distances to its maximum.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/quant.h"

namespace loom {

/// The softmax table's entry for distance 0 (exp(0) = 1.0 in units of 2^-15).
inline constexpr uint32_t kSoftmaxOne = 1u << 15;
/// Fraction bits of the layer normalization's normalized value z.
inline constexpr int kLayerNormZBits = 16;

struct SoftmaxParams {
  std::array<uint16_t, 256> table{};  // table[d] = round(2^15 * exp(-scale_in * d))
  int32_t mult = 0;                   // p (units of 2^-16) to output units
  int shift = kMinShift;
};

/// One layer normalization channel: t = round((z * g + b) / 2^sh).
struct LayerNormChannel {
  int32_t b = 0;
  int32_t g = 0;
  int32_t sh = kMinShift;
};

/// floor(sqrt(v)) exactly, bit by bit (as the hardware computes it).
constexpr uint64_t isqrt_u64(uint64_t v) {
  uint64_t root = 0;
  uint64_t bit = uint64_t(1) << 62;
  while (bit > v) bit >>= 2;
  while (bit != 0) {
    if (v >= root + bit) {
      v -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return root;
}

/// Softmax of one row of n int8 values (the ROWNORM softmax semantics).
inline void softmax_row(const int8_t* x, uint64_t n, const uint16_t* table, int32_t mult, int shift, int32_t out_zp,
                        int32_t lo, int32_t hi, int8_t* y) {
  if (n == 0) return;
  int32_t mx = -128;
  for (uint64_t j = 0; j < n; ++j) mx = std::max<int32_t>(mx, x[j]);
  uint64_t sum = 0;  // n < 2^16 entries below 2^16: below 2^32
  for (uint64_t j = 0; j < n; ++j) sum += table[mx - x[j]];
  const uint64_t r = sum == 0 ? 0 : (uint64_t(0xFFFFFFFFu)) / sum;
  for (uint64_t j = 0; j < n; ++j) {
    const int64_t p = int64_t((uint64_t(table[mx - x[j]]) * r) >> 16);
    y[j] = clamp_i8(int64_t(requantize(p, mult, shift)) + out_zp, lo, hi);
  }
}

/// The layer normalization's reciprocal of sqrt(V) in units of 2^-48 (the
/// ROWNORM ln semantics): V (1 when 0) shifted up by the even count 2e that
/// puts it in [2^60, 2^62), q = floor(sqrt(V 4^e)) (31 bits), Q =
/// floor(2^72 / q) (43 bits) and r = Q 2^(e - 24), floored when e < 24.
/// V < 2^49 gives 6 <= e <= 30 and 2^23 < r <= 2^48.
inline uint64_t layernorm_recip(uint64_t v) {
  v = std::max<uint64_t>(v, 1);
  const int e = (62 - int(std::bit_width(v))) / 2;
  const uint64_t q = isqrt_u64(v << (2 * e));
  const uint64_t big_q = uint64_t(((unsigned __int128)1 << 72) / q);
  return e >= 24 ? big_q << (e - 24) : big_q >> (24 - e);
}

/// Layer normalization of one row of n int8 values with n channel triples
/// (the ROWNORM ln semantics).
inline void layernorm_row(const int8_t* x, uint64_t n, int32_t in_zp, uint32_t eps, const LayerNormChannel* ch,
                          int32_t out_zp, int32_t lo, int32_t hi, int8_t* y) {
  if (n == 0) return;
  int64_t s1 = 0;
  uint64_t s2 = 0;
  for (uint64_t j = 0; j < n; ++j) {
    const int64_t d = int64_t(x[j]) - in_zp;
    s1 += d;
    s2 += uint64_t(d * d);
  }
  // n * s2 - s1^2 is n^2 times the variance: non-negative, below 2^48.
  const int64_t r = int64_t(layernorm_recip(n * s2 - uint64_t(s1 * s1) + eps));
  for (uint64_t j = 0; j < n; ++j) {
    const int64_t c = int64_t(n) * (int64_t(x[j]) - in_zp) - s1;
    // |c| <= sqrt((n - 1) V) and r <= 2^48 / sqrt(V) (1 + 2^-29), so
    // |c * r| < 2^48 sqrt(n - 1) (1 + 2^-29) < 2^57, |z| < 2^25 and
    // z * g + b stays below 2^57: all exact in int64.
    const int64_t z = (c * r + (int64_t(1) << (47 - kLayerNormZBits))) >> (48 - kLayerNormZBits);  // round half up
    const int64_t a = z * ch[j].g + ch[j].b;
    const uint64_t mag = a < 0 ? uint64_t(-(a + 1)) + 1 : uint64_t(a);
    const uint64_t t = (mag + (uint64_t(1) << (ch[j].sh - 1))) >> ch[j].sh;  // ties away from zero
    y[j] = clamp_i8(int64_t(sat_i32(a < 0 ? -int64_t(t) : int64_t(t))) + out_zp, lo, hi);
  }
}

/// The softmax table and output multiplier for an input scale and an output
/// scale; false (with a reason) when they cannot be represented.
inline bool softmax_params(double scale_in, double scale_out, SoftmaxParams* out, std::string* why) {
  if (!(scale_in > 0.0) || !std::isfinite(scale_in) || !(scale_out > 0.0) || !std::isfinite(scale_out)) {
    *why = "scales must be positive and finite";
    return false;
  }
  for (int d = 0; d < 256; ++d)
    out->table[size_t(d)] = uint16_t(std::llround(double(kSoftmaxOne) * std::exp(-scale_in * d)));
  Multiplier m;
  if (!quantize_multiplier(1.0 / (65536.0 * scale_out), &m)) {
    *why = "output scale " + std::to_string(scale_out) + " needs a multiplier outside the requantizer's range";
    return false;
  }
  out->mult = m.mult;
  out->shift = m.shift;
  return true;
}

/// The eps field for a layer normalization of n channels: n^2 * epsilon /
/// scale_in^2 (epsilon in real units); false when it exceeds 32 bits.
inline bool layernorm_eps(double epsilon, double scale_in, uint64_t n, uint32_t* out, std::string* why) {
  const double e = double(n) * double(n) * epsilon / (scale_in * scale_in);
  if (!(e >= 0.0) || !(e < 4294967295.0)) {
    *why = "epsilon " + std::to_string(epsilon) + " is too large for input scale " + std::to_string(scale_in);
    return false;
  }
  *out = uint32_t(std::llround(e));
  return true;
}

/// The channel triples for gamma, beta (real) and an output scale: the
/// largest shift at which both g and b fit 31 bits; false when even the
/// smallest does not.
inline bool layernorm_channels(const std::vector<float>& gamma, const std::vector<float>& beta, double scale_out,
                               std::vector<LayerNormChannel>* out, std::string* why) {
  if (!(scale_out > 0.0) || !std::isfinite(scale_out)) {
    *why = "output scale must be positive and finite";
    return false;
  }
  out->assign(gamma.size(), {});
  constexpr double kLimit = 2147483647.0;
  for (size_t j = 0; j < gamma.size(); ++j) {
    const double g = double(gamma[j]) / (double(1 << kLayerNormZBits) * scale_out);
    const double b = double(beta[j]) / scale_out;
    if (!std::isfinite(g) || !std::isfinite(b)) {
      *why = "channel " + std::to_string(j) + ": gamma or beta is not finite";
      return false;
    }
    int sh = kMaxShift;
    while (sh >= kMinShift && (std::abs(std::ldexp(g, sh)) >= kLimit || std::abs(std::ldexp(b, sh)) >= kLimit)) --sh;
    if (sh < kMinShift) {
      *why =
          "channel " + std::to_string(j) + ": gamma or beta is too large for output scale " + std::to_string(scale_out);
      return false;
    }
    (*out)[j] = {int32_t(std::llround(std::ldexp(b, sh))), int32_t(std::llround(std::ldexp(g, sh))), sh};
  }
  return true;
}

}  // namespace loom
