// loom_hls_eltwise: requantized elementwise add of two int8 tensors, or the
// unary form (has_b = 0: relu / clip / requantize of a alone):
//
//   y[i] = clamp(rq(a[i] - a_zp, a_mult, a_shift)
//                + (has_b ? rq(b[i] - b_zp, b_mult, b_shift) : 0) + y_zp, clip_lo, clip_hi)
//
// as the golden model's ELTWISE and the reference's add / relu / clip.
#pragma once

#include <stdint.h>

/// Returns a loom_hls::KernelStatus; on a non-zero status y is not written.
/// With has_b = 0, b is not read (it may be any address).
extern "C" int loom_hls_eltwise(const int8_t* a, const int8_t* b, int8_t* y, int32_t count, int32_t has_b,
                                int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t a_mult, int32_t a_shift,
                                int32_t b_mult, int32_t b_shift, int32_t clip_lo, int32_t clip_hi);
