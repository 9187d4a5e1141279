// loom_hls_conv: 2-D convolution, NHWC int8, weights [KH][KW][C/groups][M]
// (HWIO), with the same fused post-op as loom_hls_gemm:
//
//   y[n][oh][ow][m] = clamp(rq(int32(sum_{r,s,ci} (x[n][ih][iw][g*cpg+ci]-x_zp)
//                                     * (w[r][s][ci][m]-w_zp) + bias[m]),
//                              mult[m], shift[m]) + y_zp, clip_lo, clip_hi)
//
// with ih = oh*stride_h - pad_top + r, iw = ow*stride_w - pad_left + s; taps
// in the padding contribute zero (docs/graph-format.md). The caller gives
// the output size (oh, ow), so bottom/right padding may differ from top/left.
// params holds M entries of (bias, mult, shift) as int32.
#pragma once

#include <stdint.h>

namespace loom_hls {

/// Output channels computed in parallel (MAC lanes).
constexpr int kConvTileM = 16;
/// Largest reduction KH * KW * C/groups: the weight tile is held on chip.
constexpr int kConvMaxR = 4608;

}  // namespace loom_hls

/// Returns a loom_hls::KernelStatus; on a non-zero status y is not written.
extern "C" int loom_hls_conv(const int8_t* x, const int8_t* w, const int32_t* params, int8_t* y, int32_t batch,
                             int32_t h, int32_t wd, int32_t c, int32_t m, int32_t kh, int32_t kw, int32_t stride_h,
                             int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t oh, int32_t ow,
                             int32_t groups, int32_t x_zp, int32_t w_zp, int32_t y_zp, int32_t clip_lo,
                             int32_t clip_hi);
