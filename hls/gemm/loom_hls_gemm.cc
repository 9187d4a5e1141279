// loom_hls_gemm (see loom_hls_gemm.h). Structure, per column tile of
// kGemmTileN output channels:
//   load_b   : the tile's channel parameters, then K weight rows (TN bytes each)
//   load_a   : every row of A (K bytes, contiguous: one burst per row)
//   compute  : holds the K x TN weight tile on chip; for each row of A, TN MAC
//              lanes at II=1 over K, then the post-op for the TN channels
//   store    : the row's valid channels to y
// connected by hls::stream under DATAFLOW. The latency model derived from
// these loops is in hls/README.md.
#include "loom_hls_gemm.h"

#ifdef LOOM_HLS_STANDIN
#include "loom_hls_standin/hls_stream.h"
#else
#include <hls_stream.h>
#endif

#include "loom_hls_quant.h"

namespace loom_hls {
namespace {

constexpr int TN = kGemmTileN;

// One weight row for all lanes; Vitis HLS packs a struct carried by an
// hls::stream into one wide word, so a row moves in one stream beat.
struct WRow {
  int8_t v[TN];
};

int col_tiles(int32_t n) { return (n + TN - 1) / TN; }

void load_b(const int8_t* b, const int32_t* params, int32_t n, int32_t k, hls::stream<ChannelParams>& ps,
            hls::stream<WRow>& ws) {
  const int tiles = col_tiles(n);
tile_loop:
  for (int t = 0; t < tiles; ++t) {
    const int j0 = t * TN;
  param_loop:
    for (int j = 0; j < TN; ++j) {
#pragma HLS PIPELINE II = 3
      ChannelParams p = {0, 0, 1};
      if (j0 + j < n) {
        p.bias = params[3 * (j0 + j)];
        p.mult = params[3 * (j0 + j) + 1];
        p.shift = params[3 * (j0 + j) + 2];
      }
      ps.write(p);
    }
  row_loop:
    for (int kk = 0; kk < k; ++kk) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
      WRow r;
    lane_loop:
      for (int j = 0; j < TN; ++j) {
#pragma HLS PIPELINE II = 1
        r.v[j] = j0 + j < n ? b[kk * n + j0 + j] : int8_t(0);
      }
      ws.write(r);
    }
  }
}

void load_a(const int8_t* a, int32_t m, int32_t n, int32_t k, hls::stream<int8_t>& as) {
  const int tiles = col_tiles(n);
tile_loop:
  for (int t = 0; t < tiles; ++t) {
  row_loop:
    for (int i = 0; i < m; ++i) {
    k_loop:
      for (int kk = 0; kk < k; ++kk) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
        as.write(a[i * k + kk]);
      }
    }
  }
}

void compute(hls::stream<int8_t>& as, hls::stream<ChannelParams>& ps, hls::stream<WRow>& ws,
             hls::stream<int8_t>& ys, int32_t m, int32_t n, int32_t k, int32_t a_zp, int32_t b_zp, int32_t y_zp,
             int32_t clip_lo, int32_t clip_hi) {
  static int8_t wbuf[kGemmMaxK][TN];
#pragma HLS ARRAY_PARTITION variable = wbuf dim = 2 complete
  ChannelParams par[TN];
#pragma HLS ARRAY_PARTITION variable = par complete
  uint32_t acc[TN];
#pragma HLS ARRAY_PARTITION variable = acc complete
  const int tiles = col_tiles(n);
tile_loop:
  for (int t = 0; t < tiles; ++t) {
  param_loop:
    for (int j = 0; j < TN; ++j) {
#pragma HLS PIPELINE II = 1
      par[j] = ps.read();
    }
  fill_loop:
    for (int kk = 0; kk < k; ++kk) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
      const WRow r = ws.read();
      for (int j = 0; j < TN; ++j) wbuf[kk][j] = r.v[j];
    }
  row_loop:
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < TN; ++j) {
#pragma HLS UNROLL
        acc[j] = 0;
      }
    mac_loop:
      for (int kk = 0; kk < k; ++kk) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
        const int32_t x = int32_t(as.read()) - a_zp;
        for (int j = 0; j < TN; ++j) {
#pragma HLS UNROLL
          // |x|, |w - b_zp| <= 255: the product fits int32; the sum wraps.
          acc[j] += uint32_t(x * (int32_t(wbuf[kk][j]) - b_zp));
        }
      }
    post_loop:
      for (int j = 0; j < TN; ++j) {
#pragma HLS PIPELINE II = 1
        const int32_t v = int32_t(acc[j] + uint32_t(par[j].bias));
        const int64_t q = int64_t(requantize(v, par[j].mult, par[j].shift)) + y_zp;
        ys.write(clamp_out(q, clip_lo, clip_hi));
      }
    }
  }
}

void store(int8_t* y, int32_t m, int32_t n, hls::stream<int8_t>& ys) {
  const int tiles = col_tiles(n);
tile_loop:
  for (int t = 0; t < tiles; ++t) {
    const int j0 = t * TN;
  row_loop:
    for (int i = 0; i < m; ++i) {
    lane_loop:
      for (int j = 0; j < TN; ++j) {
#pragma HLS PIPELINE II = 1
        const int8_t v = ys.read();
        if (j0 + j < n) y[i * n + j0 + j] = v;
      }
    }
  }
}

void gemm_dataflow(const int8_t* a, const int8_t* b, const int32_t* params, int8_t* y, int32_t m, int32_t n,
                   int32_t k, int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t clip_lo, int32_t clip_hi) {
#pragma HLS DATAFLOW
  hls::stream<int8_t> as("a_stream");
  hls::stream<ChannelParams> ps("param_stream");
  hls::stream<WRow> ws("w_stream");
  hls::stream<int8_t> ys("y_stream");
#pragma HLS STREAM variable = as depth = 64
#pragma HLS STREAM variable = ws depth = 4
#pragma HLS STREAM variable = ps depth = 32
#pragma HLS STREAM variable = ys depth = 64
  load_b(b, params, n, k, ps, ws);
  load_a(a, m, n, k, as);
  compute(as, ps, ws, ys, m, n, k, a_zp, b_zp, y_zp, clip_lo, clip_hi);
  store(y, m, n, ys);
}

}  // namespace
}  // namespace loom_hls

extern "C" int loom_hls_gemm(const int8_t* a, const int8_t* b, const int32_t* params, int8_t* y, int32_t m,
                             int32_t n, int32_t k, int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t clip_lo,
                             int32_t clip_hi) {
#pragma HLS INTERFACE m_axi port = a offset = slave bundle = gmem0 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = b offset = slave bundle = gmem1 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = params offset = slave bundle = gmem2 depth = 1024
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem3 depth = 65536 max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = a bundle = control
#pragma HLS INTERFACE s_axilite port = b bundle = control
#pragma HLS INTERFACE s_axilite port = params bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = m bundle = control
#pragma HLS INTERFACE s_axilite port = n bundle = control
#pragma HLS INTERFACE s_axilite port = k bundle = control
#pragma HLS INTERFACE s_axilite port = a_zp bundle = control
#pragma HLS INTERFACE s_axilite port = b_zp bundle = control
#pragma HLS INTERFACE s_axilite port = y_zp bundle = control
#pragma HLS INTERFACE s_axilite port = clip_lo bundle = control
#pragma HLS INTERFACE s_axilite port = clip_hi bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control
  using namespace loom_hls;
  if (m < 0 || n < 0 || k < 0) return kBadShape;
  if (k > kGemmMaxK) return kOverLimit;
  if (!clamp_ok(clip_lo, clip_hi)) return kBadClamp;
  if (!zp_ok(a_zp) || !zp_ok(b_zp) || !zp_ok(y_zp)) return kBadParam;
  // Every channel's shift is checked before any output is written.
  bool shifts_ok = true;  // no early exit, so the loop pipelines
shift_check:
  for (int j = 0; j < n; ++j) {
#pragma HLS PIPELINE II = 1
    shifts_ok = shift_ok(params[3 * j + 2]) && shifts_ok;
  }
  if (!shifts_ok) return kBadParam;
  if (m == 0 || n == 0) return kOk;
  gemm_dataflow(a, b, params, y, m, n, k, a_zp, b_zp, y_zp, clip_lo, clip_hi);
  return kOk;
}
