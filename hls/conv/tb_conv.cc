// C-simulation testbench of loom_hls_conv: bit-exact against the direct
// reference (ir::run_reference) on one-node conv2d graphs built with seeded
// weights: 1x1 and 3x3/5x5 kernels, strides, padding, grouped and depthwise
// convolutions, channel counts that are not multiples of the lane count,
// fused ReLU, saturating output scales and extreme input values. Also checks
// the status codes: a rejected call writes nothing.
#include <cstring>

#include "ir/op_quant.h"
#include "loom_hls_conv.h"
#include "loom_hls_quant.h"
#include "tb_common.h"

using namespace loom_hls_tb;

namespace {

struct ConvCase {
  int batch = 1, h = 1, w = 1, c = 1;
  loom::ir::ConvSpec spec;
  bool relu = false;
  double y_scale_factor = 1.0;  // < 1 saturates the outputs, > 1 squeezes them towards y_zp
  int input_fill = 0;           // 0: random, 1: all 127, -1: all -128
};

std::string describe(const ConvCase& k) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "n=%d h=%d w=%d c=%d m=%lld k=%lldx%lld stride=%lld pad=%lld groups=%lld relu=%d "
                "yscale*%g fill=%d", k.batch, k.h, k.w, k.c, (long long)k.spec.cout, (long long)k.spec.kh,
                (long long)k.spec.kw, (long long)k.spec.stride, (long long)k.spec.pad, (long long)k.spec.groups,
                int(k.relu), k.y_scale_factor, k.input_fill);
  return buf;
}

void check_conv(Tally& t, const ConvCase& k, uint64_t seed) {
  loom::ir::GraphBuilder gb("hls_conv", seed);
  const auto x = gb.input("x", {k.batch, k.h, k.w, k.c});
  const auto y = gb.conv("cv", x, k.spec);
  gb.output(y);
  auto& g = gb.graph();
  g.tensor(y).q.scale[0] *= k.y_scale_factor;
  if (k.relu) g.nodes[0].attrs.act.lo = g.tensor(y).q.zero_point;
  auto q = loom::ir::mac_quant(g, g.nodes[0]);
  if (!q) {
    t.fail(describe(k) + ": mac_quant: " + q.error().str());
    return;
  }
  const auto& ys = g.tensor(y).shape;
  const int m = int(k.spec.cout);
  Rng rng(seed ^ 0xC0DE);
  auto xv = random_i8(rng, size_t(k.batch) * k.h * k.w * k.c);
  if (k.input_fill != 0) std::fill(xv.begin(), xv.end(), int8_t(k.input_fill > 0 ? 127 : -128));
  const auto& wt = g.tensor("cv.w").data;
  std::vector<int32_t> params;
  for (int j = 0; j < m; ++j) {
    const int32_t bv = k.spec.bias ? g.tensor("cv.b").data.i32()[j] : 0;
    params.insert(params.end(), {bv, q->mult[size_t(j)].mult, q->mult[size_t(j)].shift});
  }
  std::vector<int8_t> out(size_t(ys[0] * ys[1] * ys[2] * ys[3]), int8_t(0x5A));
  const auto& a = g.nodes[0].attrs;
  reset_stream_counts();
  const int st = loom_hls_conv(xv.data(), wt.i8(), params.data(), out.data(), k.batch, k.h, k.w, k.c, m,
                               int(a.kernel_h), int(a.kernel_w), int(a.stride_h), int(a.stride_w), int(a.pad_top),
                               int(a.pad_left), int(ys[1]), int(ys[2]), int(a.groups), q->x_zp, q->w_zp, q->y_zp,
                               q->lo, q->hi);
  if (st != loom_hls::kOk) {
    t.fail(describe(k) + ": kernel status " + std::to_string(st));
    return;
  }
  if (kCountStreams) {
    const uint64_t counted = uint64_t(m) + 3 * stream_writes("param_stream") + 16 * stream_writes("w_stream") +
                             stream_writes("x_stream") + stream_writes("y_stream");
    t.check_model(describe(k),
                  loom_hls::conv_cycles(uint64_t(k.batch), uint64_t(ys[1]), uint64_t(ys[2]), uint64_t(k.c), uint64_t(m),
                                        uint64_t(a.kernel_h), uint64_t(a.kernel_w), uint64_t(a.groups)),
                  counted);
  }
  const auto want = reference_output(g, {{x, xv}});
  t.check(describe(k), out.data(), want.data(), want.size());
}

ConvCase make(int n, int h, int w, int c, int m, int kk, int stride, int pad, int groups) {
  ConvCase k;
  k.batch = n, k.h = h, k.w = w, k.c = c;
  k.spec.cout = m, k.spec.kh = k.spec.kw = kk, k.spec.stride = stride, k.spec.pad = pad, k.spec.groups = groups;
  return k;
}

void check_rejected(Tally& t, const char* what, int want, int c, int m, int kh, int groups, int stride, int clip_lo,
                    int shift) {
  std::vector<int8_t> x(size_t(4 * 4 * (c > 0 ? c : 1)), 1), w(size_t(kh * kh * (c > 0 ? c : 1) * (m > 0 ? m : 1)), 1);
  std::vector<int32_t> params;
  for (int j = 0; j < (m > 0 ? m : 1); ++j) params.insert(params.end(), {0, 1 << 30, shift});
  std::vector<int8_t> y(size_t(4 * 4 * (m > 0 ? m : 1)), int8_t(0x5A));
  const int st = loom_hls_conv(x.data(), w.data(), params.data(), y.data(), 1, 4, 4, c, m, kh, kh, stride, stride, 0,
                               0, 1, 1, groups, 0, 0, 0, clip_lo, 127);
  bool untouched = true;
  for (int8_t v : y) untouched = untouched && v == 0x5A;
  if (st != want || !untouched)
    t.fail(std::string(what) + ": status " + std::to_string(st) + " (want " + std::to_string(want) + ")" +
           (untouched ? "" : ", output written"));
  else
    t.pass_case();
}

}  // namespace

int main() {
  Tally t;
  uint64_t seed = 1;
  // Fixed edges: 1x1 pixel and kernel, one channel, depthwise, grouped,
  // channel counts around the lane count, stride > kernel, padding only taps.
  std::vector<ConvCase> cases = {
      make(1, 1, 1, 1, 1, 1, 1, 0, 1),   make(1, 1, 1, 3, 17, 1, 1, 0, 1),  make(1, 5, 5, 1, 1, 3, 1, 1, 1),
      make(2, 6, 7, 8, 16, 3, 1, 1, 1),  make(1, 7, 5, 5, 33, 3, 2, 1, 1),  make(1, 8, 8, 6, 6, 3, 1, 1, 6),
      make(1, 9, 9, 8, 12, 3, 2, 1, 4),  make(1, 6, 6, 4, 18, 5, 1, 2, 2),  make(1, 7, 7, 3, 5, 1, 3, 0, 1),
      make(1, 2, 2, 2, 4, 3, 1, 1, 1),   make(1, 4, 4, 32, 20, 3, 1, 1, 1), make(1, 1, 9, 16, 16, 1, 1, 0, 16),
  };
  for (const auto& k : cases) {
    check_conv(t, k, seed++);
    ConvCase relu = k;
    relu.relu = true;
    check_conv(t, relu, seed++);
  }
  // Saturation and extreme inputs.
  for (double f : {0.001, 0.05, 50.0}) {
    ConvCase k = make(1, 5, 5, 7, 19, 3, 1, 1, 1);
    k.y_scale_factor = f;
    check_conv(t, k, seed++);
    for (int fill : {1, -1}) {
      k.input_fill = fill;
      check_conv(t, k, seed++);
    }
  }
  ConvCase nobias = make(1, 6, 5, 9, 10, 3, 2, 1, 1);
  nobias.spec.bias = false;
  check_conv(t, nobias, seed++);
  // Random shapes.
  Rng rng(0xC0111);
  for (int i = 0; i < 30; ++i) {
    const int kk = int(rng.range(1, 3)) * 2 - 1, pad = int(rng.range(0, kk / 2)), stride = int(rng.range(1, 3));
    const int h = int(rng.range(kk, 10)), w = int(rng.range(kk, 10));
    int groups = int(rng.range(1, 3));
    const int c = groups * int(rng.range(1, 8)), m = groups * int(rng.range(1, 12));
    ConvCase k = make(int(rng.range(1, 2)), h, w, c, m, kk, stride, pad, groups);
    k.relu = rng.range(0, 1) == 1;
    check_conv(t, k, seed++);
  }
  // Rejected calls write nothing.
  check_rejected(t, "taps-over-limit", loom_hls::kOverLimit, 513, 1, 3, 1, 1, -128, 10);
  check_rejected(t, "groups-not-dividing-c", loom_hls::kBadShape, 6, 4, 1, 4, 1, -128, 10);
  check_rejected(t, "stride-0", loom_hls::kBadShape, 2, 2, 1, 1, 0, -128, 10);
  check_rejected(t, "clip-lo-below-int8", loom_hls::kBadClamp, 2, 2, 1, 1, 1, -129, 10);
  check_rejected(t, "shift-63", loom_hls::kBadParam, 2, 2, 1, 1, 1, -128, 63);
  return t.finish("hls.conv.csim");
}
