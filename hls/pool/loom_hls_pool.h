// loom_hls_pool: max and average pooling, NHWC int8 (docs/graph-format.md):
//
//   max: y = clamp(max over the window's taps inside the input (at least
//        -128), clip_lo, clip_hi)
//   avg: y = clamp(rqe(sum over taps inside the input of (x - x_zp), mult,
//        shift) + y_zp, clip_lo, clip_hi)
//
// rqe is rq with ties rounded to even (requantize_even), as POOL's average.
//
// Padding taps are skipped (for avg they add x_zp - x_zp = 0, the
// count_include_pad semantics: the window size is folded into mult/shift).
// Global average pooling is kh = h, kw = w, stride 1, no padding.
#pragma once

#include <stdint.h>

namespace loom_hls {

/// Largest channel count: per-channel max/sum registers are held on chip.
constexpr int kPoolMaxC = 4096;
/// Largest window (kh * kw): |sum| <= 255 * 65535 keeps within int32.
constexpr int kPoolMaxWindow = 65535;
/// The channel loop runs at least this many iterations, so the same
/// channel's accumulator is never updated within one pipeline depth.
constexpr int kPoolMinPass = 8;

}  // namespace loom_hls

/// Returns a loom_hls::KernelStatus; on a non-zero status y is not written.
extern "C" int loom_hls_pool(const int8_t* x, int8_t* y, int32_t batch, int32_t h, int32_t wd, int32_t c,
                             int32_t kh, int32_t kw, int32_t stride_h, int32_t stride_w, int32_t pad_top,
                             int32_t pad_left, int32_t oh, int32_t ow, int32_t is_avg, int32_t x_zp, int32_t y_zp,
                             int32_t mult, int32_t shift, int32_t clip_lo, int32_t clip_hi);
