// loom_hls_conv (see loom_hls_conv.h). A weight-stationary direct
// convolution: for each group and tile of kConvTileM output channels,
//   load_w   : the tile's channel parameters, then R = KH*KW*C/groups weight
//              rows (TM bytes each)
//   load_x   : for every output pixel, its R input taps (x_zp for padding, so
//              a padded tap adds (x_zp - x_zp) * w = 0)
//   compute  : holds the R x TM weight tile on chip; per pixel, TM MAC lanes
//              at II=1 over R, then the post-op for the TM channels
//   store    : the pixel's valid channels to y
// connected by hls::stream under DATAFLOW. Latency model: hls/README.md.
#include "loom_hls_conv.h"

#ifdef LOOM_HLS_STANDIN
#include "loom_hls_standin/hls_stream.h"
#else
#include <hls_stream.h>
#endif

#include "loom_hls_quant.h"

namespace loom_hls {
namespace {

constexpr int TM = kConvTileM;

// One weight row for all lanes; Vitis HLS packs a struct carried by an
// hls::stream into one wide word, so a row moves in one stream beat.
struct WRow {
  int8_t v[TM];
};

/// The shape of one call, shared by every stage.
struct Shape {
  int32_t batch, h, wd, c, m, kh, kw, stride_h, stride_w, pad_top, pad_left, oh, ow, groups;
  int32_t cpg() const { return c / groups; }
  int32_t mpg() const { return m / groups; }
  int32_t taps() const { return kh * kw * cpg(); }
  int32_t tiles_per_group() const { return (mpg() + TM - 1) / TM; }
  int32_t pixels() const { return batch * oh * ow; }
};

void load_w(const int8_t* w, const int32_t* params, Shape s, hls::stream<ChannelParams>& ps,
            hls::stream<WRow>& ws) {
  const int32_t mpg = s.mpg(), cpg = s.cpg(), tiles = s.tiles_per_group();
group_loop:
  for (int g = 0; g < s.groups; ++g) {
  tile_loop:
    for (int t = 0; t < tiles; ++t) {
      const int m0 = g * mpg + t * TM;
      const int lanes = mpg - t * TM;  // valid lanes: min(lanes, TM)
    param_loop:
      for (int j = 0; j < TM; ++j) {
#pragma HLS PIPELINE II = 3
        ChannelParams p = {0, 0, 1};
        if (j < lanes) {
          p.bias = params[3 * (m0 + j)];
          p.mult = params[3 * (m0 + j) + 1];
          p.shift = params[3 * (m0 + j) + 2];
        }
        ps.write(p);
      }
    tap_loop:
      for (int r = 0; r < s.kh * s.kw * cpg; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4608
        WRow row;
      lane_loop:
        for (int j = 0; j < TM; ++j) {
#pragma HLS PIPELINE II = 1
          row.v[j] = j < lanes ? w[r * s.m + m0 + j] : int8_t(0);
        }
        ws.write(row);
      }
    }
  }
}

void load_x(const int8_t* x, Shape s, int32_t x_zp, hls::stream<int8_t>& xs) {
  const int32_t cpg = s.cpg(), tiles = s.tiles_per_group();
group_loop:
  for (int g = 0; g < s.groups; ++g) {
  tile_loop:
    for (int t = 0; t < tiles; ++t) {
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
            const int base = ((n * s.h + ih) * s.wd + iw) * s.c + g * cpg;
          ci_loop:
            for (int ci = 0; ci < cpg; ++ci) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 512
              xs.write(inside ? x[base + ci] : int8_t(x_zp));
            }
          }
        }
      }
    }
  }
}

void compute(hls::stream<int8_t>& xs, hls::stream<ChannelParams>& ps, hls::stream<WRow>& ws,
             hls::stream<int8_t>& ys, Shape s, int32_t x_zp, int32_t w_zp, int32_t y_zp, int32_t clip_lo,
             int32_t clip_hi) {
  static int8_t wbuf[kConvMaxR][TM];
#pragma HLS ARRAY_PARTITION variable = wbuf dim = 2 complete
  ChannelParams par[TM];
#pragma HLS ARRAY_PARTITION variable = par complete
  uint32_t acc[TM];
#pragma HLS ARRAY_PARTITION variable = acc complete
  const int32_t taps = s.taps(), tiles = s.groups * s.tiles_per_group();
tile_loop:
  for (int t = 0; t < tiles; ++t) {
  param_loop:
    for (int j = 0; j < TM; ++j) {
#pragma HLS PIPELINE II = 1
      par[j] = ps.read();
    }
  fill_loop:
    for (int r = 0; r < taps; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4608
      const WRow row = ws.read();
      for (int j = 0; j < TM; ++j) wbuf[r][j] = row.v[j];
    }
  pixel_loop:
    for (int p = 0; p < s.pixels(); ++p) {
      for (int j = 0; j < TM; ++j) {
#pragma HLS UNROLL
        acc[j] = 0;
      }
    mac_loop:
      for (int r = 0; r < taps; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4608
        const int32_t xv = int32_t(xs.read()) - x_zp;
        for (int j = 0; j < TM; ++j) {
#pragma HLS UNROLL
          acc[j] += uint32_t(xv * (int32_t(wbuf[r][j]) - w_zp));  // wraps modulo 2^32
        }
      }
    post_loop:
      for (int j = 0; j < TM; ++j) {
#pragma HLS PIPELINE II = 1
        const int32_t v = int32_t(acc[j] + uint32_t(par[j].bias));
        const int64_t q = int64_t(requantize(v, par[j].mult, par[j].shift)) + y_zp;
        ys.write(clamp_out(q, clip_lo, clip_hi));
      }
    }
  }
}

void store(int8_t* y, Shape s, hls::stream<int8_t>& ys) {
  const int32_t mpg = s.mpg(), tiles = s.tiles_per_group();
group_loop:
  for (int g = 0; g < s.groups; ++g) {
  tile_loop:
    for (int t = 0; t < tiles; ++t) {
      const int m0 = g * mpg + t * TM;
      const int lanes = mpg - t * TM;
    pixel_loop:
      for (int p = 0; p < s.pixels(); ++p) {
      lane_loop:
        for (int j = 0; j < TM; ++j) {
#pragma HLS PIPELINE II = 1
          const int8_t v = ys.read();
          if (j < lanes) y[p * s.m + m0 + j] = v;
        }
      }
    }
  }
}

void conv_dataflow(const int8_t* x, const int8_t* w, const int32_t* params, int8_t* y, Shape s, int32_t x_zp,
                   int32_t w_zp, int32_t y_zp, int32_t clip_lo, int32_t clip_hi) {
#pragma HLS DATAFLOW
  hls::stream<int8_t> xs("x_stream");
  hls::stream<ChannelParams> ps("param_stream");
  hls::stream<WRow> ws("w_stream");
  hls::stream<int8_t> ys("y_stream");
#pragma HLS STREAM variable = xs depth = 64
#pragma HLS STREAM variable = ws depth = 4
#pragma HLS STREAM variable = ps depth = 32
#pragma HLS STREAM variable = ys depth = 64
  load_w(w, params, s, ps, ws);
  load_x(x, s, x_zp, xs);
  compute(xs, ps, ws, ys, s, x_zp, w_zp, y_zp, clip_lo, clip_hi);
  store(y, s, ys);
}

}  // namespace
}  // namespace loom_hls

extern "C" int loom_hls_conv(const int8_t* x, const int8_t* w, const int32_t* params, int8_t* y, int32_t batch,
                             int32_t h, int32_t wd, int32_t c, int32_t m, int32_t kh, int32_t kw, int32_t stride_h,
                             int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t oh, int32_t ow,
                             int32_t groups, int32_t x_zp, int32_t w_zp, int32_t y_zp, int32_t clip_lo,
                             int32_t clip_hi) {
#pragma HLS INTERFACE m_axi port = x offset = slave bundle = gmem0 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = w offset = slave bundle = gmem1 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = params offset = slave bundle = gmem2 depth = 1024
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem3 depth = 65536 max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = x bundle = control
#pragma HLS INTERFACE s_axilite port = w bundle = control
#pragma HLS INTERFACE s_axilite port = params bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = batch bundle = control
#pragma HLS INTERFACE s_axilite port = h bundle = control
#pragma HLS INTERFACE s_axilite port = wd bundle = control
#pragma HLS INTERFACE s_axilite port = c bundle = control
#pragma HLS INTERFACE s_axilite port = m bundle = control
#pragma HLS INTERFACE s_axilite port = kh bundle = control
#pragma HLS INTERFACE s_axilite port = kw bundle = control
#pragma HLS INTERFACE s_axilite port = stride_h bundle = control
#pragma HLS INTERFACE s_axilite port = stride_w bundle = control
#pragma HLS INTERFACE s_axilite port = pad_top bundle = control
#pragma HLS INTERFACE s_axilite port = pad_left bundle = control
#pragma HLS INTERFACE s_axilite port = oh bundle = control
#pragma HLS INTERFACE s_axilite port = ow bundle = control
#pragma HLS INTERFACE s_axilite port = groups bundle = control
#pragma HLS INTERFACE s_axilite port = x_zp bundle = control
#pragma HLS INTERFACE s_axilite port = w_zp bundle = control
#pragma HLS INTERFACE s_axilite port = y_zp bundle = control
#pragma HLS INTERFACE s_axilite port = clip_lo bundle = control
#pragma HLS INTERFACE s_axilite port = clip_hi bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control
  using namespace loom_hls;
  if (batch < 0 || h < 0 || wd < 0 || c < 0 || m < 0 || oh < 0 || ow < 0 || pad_top < 0 || pad_left < 0 ||
      kh < 1 || kw < 1 || stride_h < 1 || stride_w < 1 || groups < 1 || c % groups != 0 || m % groups != 0)
    return kBadShape;
  if (int64_t(kh) * kw * (c / groups) > kConvMaxR) return kOverLimit;
  if (!clamp_ok(clip_lo, clip_hi)) return kBadClamp;
  if (!zp_ok(x_zp) || !zp_ok(w_zp) || !zp_ok(y_zp)) return kBadParam;
  bool shifts_ok = true;  // no early exit, so the loop pipelines
shift_check:
  for (int j = 0; j < m; ++j) {
#pragma HLS PIPELINE II = 1
    shifts_ok = shift_ok(params[3 * j + 2]) && shifts_ok;
  }
  if (!shifts_ok) return kBadParam;
  if (batch == 0 || oh == 0 || ow == 0 || m == 0) return kOk;
  const Shape s = {batch, h, wd, c, m, kh, kw, stride_h, stride_w, pad_top, pad_left, oh, ow, groups};
  conv_dataflow(x, w, params, y, s, x_zp, w_zp, y_zp, clip_lo, clip_hi);
  return kOk;
}
