// loom_hls_gemm: tile GEMM int8 x int8 -> int32 with the fused post-op
// (bias, per-channel requantization, output zero point, clamp to int8).
//
//   y[i][j] = clamp(rq(int32(sum_k (a[i][k]-a_zp)(b[k][j]-b_zp) + bias[j]),
//                      mult[j], shift[j]) + y_zp, clip_lo, clip_hi)
//
// a is M x K row-major, b is K x N row-major, y is M x N row-major; params
// holds N entries of (bias, mult, shift) as int32, the spec's PARAM layout.
// The sum wraps modulo 2^32 like the fabric's int32 accumulators.
#pragma once

#include <stdint.h>

namespace loom_hls {

/// Output channels computed in parallel (MAC lanes).
constexpr int kGemmTileN = 16;
/// Largest K: the weight tile (K x kGemmTileN int8) is held on chip.
constexpr int kGemmMaxK = 4096;

}  // namespace loom_hls

/// Returns a loom_hls::KernelStatus; on a non-zero status y is not written.
extern "C" int loom_hls_gemm(const int8_t* a, const int8_t* b, const int32_t* params, int8_t* y, int32_t m,
                             int32_t n, int32_t k, int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t clip_lo,
                             int32_t clip_hi);
