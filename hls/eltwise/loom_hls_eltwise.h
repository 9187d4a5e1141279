// loom_hls_eltwise: requantized elementwise add of two int8 tensors, rounded
// once, or the unary form (has_b = 0: relu / clip / requantize of a alone):
//
//   y[i] = clamp(rqs(a[i] - a_zp, a_mult, has_b ? b[i] - b_zp : 0, b_mult, a_shift) + y_zp, clip_lo, clip_hi)
//
// with rqs(a, ma, b, mb, s) = sat32(round_half_away((a * ma + b * mb) / 2^s)):
// both terms on one grid (one shift, a_shift), summed exactly and rounded
// once, as the golden model's ELTWISE and the reference's add / relu / clip.
// b_shift is checked (1..62) but not used; the unary form is rq(a[i] - a_zp,
// a_mult, a_shift).
#pragma once

#include <stdint.h>

/// Returns a loom_hls::KernelStatus; on a non-zero status y is not written.
/// With has_b = 0, b is not read (it may be any address).
extern "C" int loom_hls_eltwise(const int8_t* a, const int8_t* b, int8_t* y, int32_t count, int32_t has_b,
                                int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t a_mult, int32_t a_shift,
                                int32_t b_mult, int32_t b_shift, int32_t clip_lo, int32_t clip_hi);
