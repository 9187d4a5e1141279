// C-simulation testbench of loom_hls_pool: bit-exact against the direct
// reference (ir::run_reference) on one-node maxpool / avgpool /
// globalavgpool graphs: 1x1 windows, strides, padding (count_include_pad),
// one channel and more channels than the pass minimum, extreme inputs and
// clamps. Also checks the status codes: a rejected call writes nothing.
#include "ir/op_quant.h"
#include "loom_hls_pool.h"
#include "loom_hls_quant.h"
#include "tb_common.h"

using namespace loom_hls_tb;
using loom::ir::OpKind;

namespace {

struct PoolCase {
  OpKind op = OpKind::MaxPool;
  int batch = 1, h = 1, w = 1, c = 1, k = 1, stride = 1, pad = 0;
  int input_fill = 0;  // 0: random, 1: all 127, -1: all -128
  bool clamp = false;  // fused clamp to [y_zp, 40] (max: the input's zero point)
};

std::string describe(const PoolCase& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s n=%d h=%d w=%d c=%d k=%d stride=%d pad=%d fill=%d clamp=%d",
                loom::ir::op_name(p.op), p.batch, p.h, p.w, p.c, p.k, p.stride, p.pad, p.input_fill, int(p.clamp));
  return buf;
}

void check_pool(Tally& t, const PoolCase& p, uint64_t seed) {
  loom::ir::GraphBuilder gb("hls_pool", seed);
  const auto x = gb.input("x", {p.batch, p.h, p.w, p.c}, 0.05, int32_t(int(seed % 7) - 3));
  const auto y = gb.pool("pl", p.op, x, p.k, p.stride, p.pad);
  gb.output(y);
  auto& g = gb.graph();
  if (p.clamp) g.nodes[0].attrs.act = {g.tensor(y).q.zero_point, 40};
  auto q = loom::ir::pool_quant(g, g.nodes[0]);
  if (!q) {
    t.fail(describe(p) + ": pool_quant: " + q.error().str());
    return;
  }
  const auto& ys = g.tensor(y).shape;
  const auto& a = g.nodes[0].attrs;
  const bool global = p.op == OpKind::GlobalAvgPool;
  Rng rng(seed ^ 0x9001);
  auto xv = random_i8(rng, size_t(p.batch) * p.h * p.w * p.c);
  if (p.input_fill != 0) std::fill(xv.begin(), xv.end(), int8_t(p.input_fill > 0 ? 127 : -128));
  std::vector<int8_t> out(size_t(ys[0] * ys[1] * ys[2] * ys[3]), int8_t(0x5A));
  reset_stream_counts();
  const int st = loom_hls_pool(xv.data(), out.data(), p.batch, p.h, p.w, p.c, global ? p.h : int(a.kernel_h),
                               global ? p.w : int(a.kernel_w), global ? 1 : int(a.stride_h),
                               global ? 1 : int(a.stride_w), global ? 0 : int(a.pad_top),
                               global ? 0 : int(a.pad_left), int(ys[1]), int(ys[2]), p.op != OpKind::MaxPool,
                               q->x_zp, q->y_zp, q->avg.mult, q->avg.shift, q->lo, q->hi);
  if (st != loom_hls::kOk) {
    t.fail(describe(p) + ": kernel status " + std::to_string(st));
    return;
  }
  if (kCountStreams) {
    // Every tap of every pixel passes through the channel loop, which runs
    // at least kPoolMinPass slots.
    const uint64_t c = uint64_t(p.c), pass = c > loom_hls::kPoolMinPass ? c : loom_hls::kPoolMinPass;
    const uint64_t counted = c + stream_writes("tap_stream") / c * pass + stream_writes("y_stream");
    const uint64_t kh = global ? uint64_t(p.h) : uint64_t(a.kernel_h), kw = global ? uint64_t(p.w) : uint64_t(a.kernel_w);
    t.check_model(describe(p), loom_hls::pool_cycles(uint64_t(p.batch), uint64_t(ys[1]), uint64_t(ys[2]), c, kh, kw),
                  counted);
  }
  const auto want = reference_output(g, {{x, xv}});
  t.check(describe(p), out.data(), want.data(), want.size());
}

void check_rejected(Tally& t, const char* what, int want, int c, int k, int stride, int is_avg, int shift, int lo) {
  std::vector<int8_t> x(size_t(16 * (c > 0 ? c : 1)), 3), y(size_t(16 * (c > 0 ? c : 1)), int8_t(0x5A));
  const int st = loom_hls_pool(x.data(), y.data(), 1, 4, 4, c, k, k, stride, stride, 0, 0, 1, 1, is_avg, 0, 0,
                               1 << 30, shift, lo, 127);
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
  std::vector<PoolCase> fixed;
  for (OpKind op : {OpKind::MaxPool, OpKind::AvgPool}) {
    // 1x1 window, one channel, channels around kPoolMinPass, padding taps, stride > kernel.
    fixed.push_back({op, 1, 1, 1, 1, 1, 1, 0});
    fixed.push_back({op, 1, 4, 4, 1, 2, 2, 0});
    fixed.push_back({op, 1, 5, 5, 7, 3, 1, 1});
    fixed.push_back({op, 2, 6, 7, 9, 3, 2, 1});
    fixed.push_back({op, 1, 7, 7, 16, 2, 3, 0});
    fixed.push_back({op, 1, 3, 3, 3, 3, 1, 2});
    fixed.push_back({op, 1, 8, 8, 33, 5, 2, 2});
  }
  fixed.push_back({OpKind::GlobalAvgPool, 1, 1, 1, 1, 1, 1, 0});
  fixed.push_back({OpKind::GlobalAvgPool, 2, 7, 7, 20, 1, 1, 0});
  fixed.push_back({OpKind::GlobalAvgPool, 1, 16, 16, 5, 1, 1, 0});
  for (const auto& p : fixed) {
    check_pool(t, p, seed++);
    for (int fill : {1, -1}) {
      PoolCase e = p;
      e.input_fill = fill;
      check_pool(t, e, seed++);
    }
    PoolCase cl = p;
    cl.clamp = true;
    check_pool(t, cl, seed++);
  }
  Rng rng(0x9009);
  const OpKind ops[] = {OpKind::MaxPool, OpKind::AvgPool, OpKind::GlobalAvgPool};
  for (int i = 0; i < 40; ++i) {
    PoolCase p;
    p.op = ops[rng.range(0, 2)];
    p.k = int(rng.range(1, 4));
    p.pad = int(rng.range(0, p.k - 1));
    p.stride = int(rng.range(1, 3));
    p.h = int(rng.range(p.k, 9)), p.w = int(rng.range(p.k, 9)), p.c = int(rng.range(1, 24));
    p.batch = int(rng.range(1, 2));
    check_pool(t, p, seed++);
  }
  check_rejected(t, "channels-over-limit", loom_hls::kOverLimit, loom_hls::kPoolMaxC + 1, 2, 1, 0, 1, -128);
  check_rejected(t, "kernel-0", loom_hls::kBadShape, 2, 0, 1, 0, 1, -128);
  check_rejected(t, "avg-shift-0", loom_hls::kBadParam, 2, 2, 1, 1, 0, -128);
  check_rejected(t, "clip-lo-over-hi", loom_hls::kBadClamp, 2, 2, 1, 0, 1, 127 + 1);
  // Max pooling ignores the shift, as the golden model's POOL does.
  {
    std::vector<int8_t> x(16, 9), y(16, 0);
    const int st = loom_hls_pool(x.data(), y.data(), 1, 4, 4, 1, 2, 2, 2, 2, 0, 0, 2, 2, 0, 0, 0, 0, 0, -128, 127);
    if (st != loom_hls::kOk || y[0] != 9 || y[3] != 9)
      t.fail("max pooling with shift 0 must run: status " + std::to_string(st));
    else
      t.pass_case();
  }
  return t.finish("hls.pool.csim");
}
