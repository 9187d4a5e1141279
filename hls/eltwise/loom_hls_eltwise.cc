// loom_hls_eltwise (see loom_hls_eltwise.h):
//   load_a, load_b : one element a cycle from two AXI masters (load_b emits
//                    b_zp without reading memory when has_b = 0)
//   compute        : one requantizing add (two products, one rounding) and
//                    the clamp, II=1
//   store          : one element a cycle
// connected by hls::stream under DATAFLOW. Latency model: hls/README.md.
#include "loom_hls_eltwise.h"

#ifdef LOOM_HLS_STANDIN
#include "loom_hls_standin/hls_stream.h"
#else
#include <hls_stream.h>
#endif

#include "loom_hls_quant.h"

namespace loom_hls {
namespace {

void load_a(const int8_t* a, int32_t count, hls::stream<int8_t>& as) {
read_loop:
  for (int i = 0; i < count; ++i) {
#pragma HLS PIPELINE II = 1
    as.write(a[i]);
  }
}

void load_b(const int8_t* b, int32_t count, int32_t has_b, int32_t b_zp, hls::stream<int8_t>& bs) {
read_loop:
  for (int i = 0; i < count; ++i) {
#pragma HLS PIPELINE II = 1
    bs.write(has_b ? b[i] : int8_t(b_zp));  // b_zp - b_zp = 0: its term is 0
  }
}

void compute(hls::stream<int8_t>& as, hls::stream<int8_t>& bs, hls::stream<int8_t>& ys, int32_t count,
             int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t a_mult, int32_t a_shift, int32_t b_mult,
             int32_t clip_lo, int32_t clip_hi) {
elt_loop:
  for (int i = 0; i < count; ++i) {
#pragma HLS PIPELINE II = 1
    const int64_t av = int64_t(as.read()) - a_zp;
    const int64_t bv = int64_t(bs.read()) - b_zp;
    // One rounding of the exact sum, at a_shift (|av|, |bv| <= 255).
    const int64_t v = int64_t(requantize_sum(av, a_mult, bv, b_mult, a_shift)) + y_zp;
    ys.write(clamp_out(v, clip_lo, clip_hi));
  }
}

void store(int8_t* y, int32_t count, hls::stream<int8_t>& ys) {
write_loop:
  for (int i = 0; i < count; ++i) {
#pragma HLS PIPELINE II = 1
    y[i] = ys.read();
  }
}

void eltwise_dataflow(const int8_t* a, const int8_t* b, int8_t* y, int32_t count, int32_t has_b, int32_t a_zp,
                      int32_t b_zp, int32_t y_zp, int32_t a_mult, int32_t a_shift, int32_t b_mult, int32_t clip_lo,
                      int32_t clip_hi) {
#pragma HLS DATAFLOW
  hls::stream<int8_t> as("a_stream");
  hls::stream<int8_t> bs("b_stream");
  hls::stream<int8_t> ys("y_stream");
#pragma HLS STREAM variable = as depth = 64
#pragma HLS STREAM variable = bs depth = 64
#pragma HLS STREAM variable = ys depth = 64
  load_a(a, count, as);
  load_b(b, count, has_b, b_zp, bs);
  compute(as, bs, ys, count, a_zp, b_zp, y_zp, a_mult, a_shift, b_mult, clip_lo, clip_hi);
  store(y, count, ys);
}

}  // namespace
}  // namespace loom_hls

extern "C" int loom_hls_eltwise(const int8_t* a, const int8_t* b, int8_t* y, int32_t count, int32_t has_b,
                                int32_t a_zp, int32_t b_zp, int32_t y_zp, int32_t a_mult, int32_t a_shift,
                                int32_t b_mult, int32_t b_shift, int32_t clip_lo, int32_t clip_hi) {
#pragma HLS INTERFACE m_axi port = a offset = slave bundle = gmem0 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = b offset = slave bundle = gmem1 depth = 65536 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = y offset = slave bundle = gmem2 depth = 65536 max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = a bundle = control
#pragma HLS INTERFACE s_axilite port = b bundle = control
#pragma HLS INTERFACE s_axilite port = y bundle = control
#pragma HLS INTERFACE s_axilite port = count bundle = control
#pragma HLS INTERFACE s_axilite port = has_b bundle = control
#pragma HLS INTERFACE s_axilite port = a_zp bundle = control
#pragma HLS INTERFACE s_axilite port = b_zp bundle = control
#pragma HLS INTERFACE s_axilite port = y_zp bundle = control
#pragma HLS INTERFACE s_axilite port = a_mult bundle = control
#pragma HLS INTERFACE s_axilite port = a_shift bundle = control
#pragma HLS INTERFACE s_axilite port = b_mult bundle = control
#pragma HLS INTERFACE s_axilite port = b_shift bundle = control
#pragma HLS INTERFACE s_axilite port = clip_lo bundle = control
#pragma HLS INTERFACE s_axilite port = clip_hi bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control
  using namespace loom_hls;
  if (count < 0) return kBadShape;
  if (!clamp_ok(clip_lo, clip_hi)) return kBadClamp;
  // Both shifts are checked, even b_shift, which the add does not use (one
  // rounding at a_shift), and even in the unary form, as the golden model does.
  if (!zp_ok(a_zp) || !zp_ok(b_zp) || !zp_ok(y_zp) || !shift_ok(a_shift) || !shift_ok(b_shift)) return kBadParam;
  if (count == 0) return kOk;
  eltwise_dataflow(a, b, y, count, has_b, a_zp, b_zp, y_zp, a_mult, a_shift, b_mult, clip_lo, clip_hi);
  return kOk;
}
