// loom_hls_pool (see loom_hls_pool.h). Per output pixel:
//   load     : the window's taps, channel-innermost (contiguous C bytes per
//              tap), each with an inside/padding flag
//   compute  : per-channel running max and sum in on-chip arrays, II=1 over
//              channels; then the pixel's C outputs
//   store    : the pixel's C bytes to y
// connected by hls::stream under DATAFLOW. Latency model: hls/README.md.
#include "loom_hls_pool.h"

#ifdef LOOM_HLS_STANDIN
#include "loom_hls_standin/hls_stream.h"
#else
#include <hls_stream.h>
#endif

#include "loom_hls_quant.h"

namespace loom_hls {
namespace {

struct Tap {
  int8_t v;
  bool inside;
};

struct Shape {
  int32_t batch, h, wd, c, kh, kw, stride_h, stride_w, pad_top, pad_left, oh, ow;
  int32_t pixels() const { return batch * oh * ow; }
};

void load(const int8_t* x, Shape s, hls::stream<Tap>& xs) {
pixel_loop:
  for (int p = 0; p < s.pixels(); ++p) {
    const int n = p / (s.oh * s.ow), o = p % (s.oh * s.ow);
    const int oh = o / s.ow, ow = o % s.ow;
  kh_loop:
    for (int r = 0; r < s.kh; ++r) {
    kw_loop:
      for (int q = 0; q < s.kw; ++q) {
        const int ih = oh * s.stride_h - s.pad_top + r, iw = ow * s.stride_w - s.pad_left + q;
        const bool inside = ih >= 0 && ih < s.h && iw >= 0 && iw < s.wd;
        const int base = ((n * s.h + ih) * s.wd + iw) * s.c;
      ch_loop:
        for (int ch = 0; ch < s.c; ++ch) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 512
          Tap t;
          t.v = inside ? x[base + ch] : int8_t(0);
          t.inside = inside;
          xs.write(t);
        }
      }
    }
  }
}

void compute(hls::stream<Tap>& xs, hls::stream<int8_t>& ys, Shape s, int32_t is_avg, int32_t x_zp, int32_t y_zp,
             int32_t mult, int32_t shift, int32_t clip_lo, int32_t clip_hi) {
  static int32_t mx[kPoolMaxC];
  static int32_t sum[kPoolMaxC];
  const int pass = s.c > kPoolMinPass ? s.c : kPoolMinPass;
reset_loop:
  for (int ch = 0; ch < s.c; ++ch) {
#pragma HLS PIPELINE II = 1
    mx[ch] = -128;
    sum[ch] = 0;
  }
pixel_loop:
  for (int p = 0; p < s.pixels(); ++p) {
  tap_loop:
    for (int t = 0; t < s.kh * s.kw; ++t) {
    ch_loop:
      for (int ch = 0; ch < pass; ++ch) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 8 max = 512
// Safe: a channel's accumulator is touched once every `pass` >= kPoolMinPass
// iterations, more than the read-modify-write depth.
#pragma HLS DEPENDENCE variable = mx inter false
#pragma HLS DEPENDENCE variable = sum inter false
        if (ch < s.c) {
          const Tap tap = xs.read();
          if (tap.inside) {
            if (tap.v > mx[ch]) mx[ch] = tap.v;
            sum[ch] += int32_t(tap.v) - x_zp;
          }
        }
      }
    }
  out_loop:
    for (int ch = 0; ch < s.c; ++ch) {
#pragma HLS PIPELINE II = 1
      const int64_t v = is_avg ? int64_t(requantize_even(sum[ch], mult, shift)) + y_zp : int64_t(mx[ch]);
      ys.write(clamp_out(v, clip_lo, clip_hi));
      mx[ch] = -128;  // ready for the next pixel
      sum[ch] = 0;
    }
  }
}

void store(int8_t* y, Shape s, hls::stream<int8_t>& ys) {
out_loop:
  for (int i = 0; i < s.pixels() * s.c; ++i) {
#pragma HLS PIPELINE II = 1
    y[i] = ys.read();
  }
}

void pool_dataflow(const int8_t* x, int8_t* y, Shape s, int32_t is_avg, int32_t x_zp, int32_t y_zp, int32_t mult,
                   int32_t shift, int32_t clip_lo, int32_t clip_hi) {
#pragma HLS DATAFLOW
  hls::stream<Tap> xs("tap_stream");
  hls::stream<int8_t> ys("y_stream");
#pragma HLS STREAM variable = xs depth = 64
#pragma HLS STREAM variable = ys depth = 64
  load(x, s, xs);
  compute(xs, ys, s, is_avg, x_zp, y_zp, mult, shift, clip_lo, clip_hi);
  store(y, s, ys);
}

}  // namespace
}  // namespace loom_hls

extern "C" int loom_hls_pool(const int8_t* x, int8_t* y, int32_t batch, int32_t h, int32_t wd, int32_t c,
                             int32_t kh, int32_t kw, int32_t stride_h, int32_t stride_w, int32_t pad_top,
                             int32_t pad_left, int32_t oh, int32_t ow, int32_t is_avg, int32_t x_zp, int32_t y_zp,
                             int32_t mult, int32_t shift, int32_t clip_lo, int32_t clip_hi) {
#pragma HLS INTERFACE m_axi port = x offset = slave bundle = gmem0 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem1 depth = 65536 max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = x bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = batch bundle = control
#pragma HLS INTERFACE s_axilite port = h bundle = control
#pragma HLS INTERFACE s_axilite port = wd bundle = control
#pragma HLS INTERFACE s_axilite port = c bundle = control
#pragma HLS INTERFACE s_axilite port = kh bundle = control
#pragma HLS INTERFACE s_axilite port = kw bundle = control
#pragma HLS INTERFACE s_axilite port = stride_h bundle = control
#pragma HLS INTERFACE s_axilite port = stride_w bundle = control
#pragma HLS INTERFACE s_axilite port = pad_top bundle = control
#pragma HLS INTERFACE s_axilite port = pad_left bundle = control
#pragma HLS INTERFACE s_axilite port = oh bundle = control
#pragma HLS INTERFACE s_axilite port = ow bundle = control
#pragma HLS INTERFACE s_axilite port = is_avg bundle = control
#pragma HLS INTERFACE s_axilite port = x_zp bundle = control
#pragma HLS INTERFACE s_axilite port = y_zp bundle = control
#pragma HLS INTERFACE s_axilite port = mult bundle = control
#pragma HLS INTERFACE s_axilite port = shift bundle = control
#pragma HLS INTERFACE s_axilite port = clip_lo bundle = control
#pragma HLS INTERFACE s_axilite port = clip_hi bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control
  using namespace loom_hls;
  if (batch < 0 || h < 0 || wd < 0 || c < 0 || oh < 0 || ow < 0 || pad_top < 0 || pad_left < 0 || kh < 1 ||
      kw < 1 || stride_h < 1 || stride_w < 1)
    return kBadShape;
  if (c > kPoolMaxC || int64_t(kh) * kw > kPoolMaxWindow) return kOverLimit;
  if (!clamp_ok(clip_lo, clip_hi)) return kBadClamp;
  if (!zp_ok(x_zp) || !zp_ok(y_zp) || (is_avg && !shift_ok(shift))) return kBadParam;
  if (batch == 0 || oh == 0 || ow == 0 || c == 0) return kOk;
  const Shape s = {batch, h, wd, c, kh, kw, stride_h, stride_w, pad_top, pad_left, oh, ow};
  pool_dataflow(x, y, s, is_avg, x_zp, y_zp, mult, shift, clip_lo, clip_hi);
  return kOk;
}
