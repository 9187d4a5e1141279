// C-simulation testbench of loom_hls_gemm: bit-exact against the golden
// model's GEMM + POSTOP instructions (the ref backend's exec_gemm /
// exec_postop) with raw integer parameters, and against the direct reference
// (ir::run_reference) on one-node gemm graphs. Also checks the status codes:
// a rejected call writes nothing.
#include <algorithm>
#include <climits>
#include <cstring>

#include "hw/golden.h"
#include "ir/op_quant.h"
#include "loom_hls_gemm.h"
#include "loom_hls_quant.h"
#include "tb_common.h"

using namespace loom_hls_tb;
using loom::spec::Buffer;

namespace {

struct Case {
  int m = 1, n = 1, k = 1;
  int a_zp = 0, b_zp = 0, y_zp = 0, lo = -128, hi = 127;
  std::vector<int8_t> a, b;
  std::vector<int32_t> params;  // (bias, mult, shift) per channel
};

void put32(std::vector<uint8_t>& buf, size_t at, int32_t v) { std::memcpy(&buf[at], &v, 4); }

/// The golden model's result: GEMM into ACC, then POSTOP into OUT.
std::vector<int8_t> golden(const Case& c) {
  loom::hw::CoreState s;
  const size_t mk = size_t(c.m) * c.k, kn = size_t(c.k) * c.n, mn = size_t(c.m) * c.n;
  s.buf(Buffer::IN).assign(mk ? mk : 1, 0);
  s.buf(Buffer::WGT).assign(kn ? kn : 1, 0);
  s.buf(Buffer::ACC).assign(4 * mn, 0);
  s.buf(Buffer::OUT).assign(mn, 0);
  s.buf(Buffer::PARAM).assign(12 * size_t(c.n), 0);
  std::copy(c.a.begin(), c.a.end(), s.buf(Buffer::IN).begin());
  std::copy(c.b.begin(), c.b.end(), s.buf(Buffer::WGT).begin());
  for (size_t i = 0; i < c.params.size(); ++i) put32(s.buf(Buffer::PARAM), 4 * i, c.params[i]);
  loom::spec::GemmInsn g;
  g.m = uint64_t(c.m), g.n = uint64_t(c.n), g.k_len = uint64_t(c.k);
  g.a_zp = c.a_zp, g.b_zp = c.b_zp;
  g.lda = uint64_t(c.k), g.ldb = uint64_t(c.n), g.ldc = 4 * uint64_t(c.n);
  loom::spec::PostopInsn p;
  p.m = uint64_t(c.m), p.n = uint64_t(c.n);
  p.out_zp = c.y_zp, p.clip_lo = c.lo, p.clip_hi = c.hi;
  if (loom::hw::exec_gemm(s, g) != 0 || loom::hw::exec_postop(s, p) != 0) {
    std::fprintf(stderr, "golden model rejected a valid case (m=%d n=%d k=%d)\n", c.m, c.n, c.k);
    std::exit(2);
  }
  const auto& out = s.buf(Buffer::OUT);
  return std::vector<int8_t>(out.begin(), out.end());
}

int run_kernel(const Case& c, std::vector<int8_t>& y) {
  return loom_hls_gemm(c.a.data(), c.b.data(), c.params.data(), y.data(), c.m, c.n, c.k, c.a_zp, c.b_zp, c.y_zp,
                       c.lo, c.hi);
}

std::string describe(const Case& c, const char* tag) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s m=%d n=%d k=%d zp=(%d,%d,%d) clip=[%d,%d]", tag, c.m, c.n, c.k, c.a_zp, c.b_zp,
                c.y_zp, c.lo, c.hi);
  return buf;
}

/// Random integer parameters; `edges` mixes in extreme biases, multipliers
/// and shifts (int32 wrap of acc + bias, requantize saturation, shift 1/62).
Case random_case(Rng& rng, int m, int n, int k, bool edges) {
  Case c;
  c.m = m, c.n = n, c.k = k;
  c.a_zp = int(rng.range(-128, 127)), c.b_zp = int(rng.range(-128, 127)), c.y_zp = int(rng.range(-128, 127));
  if (rng.range(0, 3) == 0) {
    c.lo = c.y_zp, c.hi = 127;  // fused ReLU
  } else {
    c.lo = int(rng.range(-128, 127)), c.hi = int(rng.range(c.lo, 127));
  }
  c.a = random_i8(rng, size_t(m) * k);
  c.b = random_i8(rng, size_t(k) * n);
  for (int j = 0; j < n; ++j) {
    int32_t bias = int32_t(rng.range(-100000, 100000));
    int32_t mult = int32_t(rng.range(1 << 30, INT32_MAX));
    int32_t shift = int32_t(rng.range(20, 40));
    if (edges) {
      switch (rng.range(0, 7)) {
        case 0: bias = rng.range(0, 1) ? INT32_MAX : INT32_MIN; break;
        case 1: mult = rng.range(0, 1) ? INT32_MAX : INT32_MIN; shift = int32_t(rng.range(1, 4)); break;
        case 2: shift = rng.range(0, 1) ? 1 : 62; break;
        case 3: mult = int32_t(rng.range(INT32_MIN, INT32_MAX)); shift = int32_t(rng.range(1, 62)); break;
        case 4: mult = 0; break;
        default: break;
      }
    }
    c.params.insert(c.params.end(), {bias, mult, shift});
  }
  if (edges && rng.range(0, 2) == 0) {  // saturating operands: all -128 or 127
    const int8_t av = rng.range(0, 1) ? 127 : -128, bv = rng.range(0, 1) ? 127 : -128;
    std::fill(c.a.begin(), c.a.end(), av);
    std::fill(c.b.begin(), c.b.end(), bv);
  }
  return c;
}

void check_case(Tally& t, const Case& c, const char* tag) {
  std::vector<int8_t> y(size_t(c.m) * c.n, int8_t(0x5A));
  reset_stream_counts();
  const int st = run_kernel(c, y);
  if (st != loom_hls::kOk) {
    t.fail(describe(c, tag) + ": kernel status " + std::to_string(st));
    return;
  }
  if (kCountStreams && c.m > 0 && c.n > 0) {
    // shift check (N) + param loop at II=3 + weight fill (16 lane reads per
    // row) + MAC loop + post-op loop.
    const uint64_t counted = uint64_t(c.n) + 3 * stream_writes("param_stream") + 16 * stream_writes("w_stream") +
                             stream_writes("a_stream") + stream_writes("y_stream");
    t.check_model(describe(c, tag), loom_hls::gemm_cycles(uint64_t(c.m), uint64_t(c.n), uint64_t(c.k)), counted);
  }
  const auto want = golden(c);
  t.check(describe(c, tag), y.data(), want.data(), want.size());
}

/// A rejected call returns `want_status` and leaves y untouched.
void check_rejected(Tally& t, const Case& c, int want_status, const char* tag) {
  std::vector<int8_t> y(size_t(c.m > 0 ? c.m : 1) * size_t(c.n > 0 ? c.n : 1), int8_t(0x5A));
  const int st = run_kernel(c, y);
  bool untouched = true;
  for (int8_t v : y) untouched = untouched && v == 0x5A;
  if (st != want_status || !untouched)
    t.fail(describe(c, tag) + ": status " + std::to_string(st) + " (want " + std::to_string(want_status) + ")" +
           (untouched ? "" : ", output written"));
  else
    t.pass_case();
}

/// One-node gemm graph (optionally with a fused ReLU) through run_reference.
void check_graph(Tally& t, uint64_t seed, int m, int n, int k, bool relu, bool bias) {
  loom::ir::GraphBuilder gb("hls_gemm", seed);
  const auto a = gb.input("a", {m, k});
  const auto y = gb.gemm("fc", a, n, bias);
  gb.output(y);
  auto& g = gb.graph();
  if (relu) g.nodes[0].attrs.act.lo = g.tensor(y).q.zero_point;
  auto q = loom::ir::mac_quant(g, g.nodes[0]);
  if (!q) {
    t.fail("mac_quant: " + q.error().str());
    return;
  }
  Case c;
  c.m = m, c.n = n, c.k = k;
  c.a_zp = q->x_zp, c.b_zp = q->w_zp, c.y_zp = q->y_zp, c.lo = q->lo, c.hi = q->hi;
  Rng rng(seed * 7 + 1);
  c.a = random_i8(rng, size_t(m) * k);
  const auto& wt = g.tensor("fc.w").data;
  c.b.assign(wt.i8(), wt.i8() + wt.numel());
  for (int j = 0; j < n; ++j) {
    const int32_t bv = bias ? g.tensor("fc.b").data.i32()[j] : 0;
    c.params.insert(c.params.end(), {bv, q->mult[size_t(j)].mult, q->mult[size_t(j)].shift});
  }
  std::vector<int8_t> out(size_t(m) * n, 0);
  const int st = run_kernel(c, out);
  if (st != loom_hls::kOk) {
    t.fail(describe(c, "graph") + ": kernel status " + std::to_string(st));
    return;
  }
  const auto want = reference_output(g, {{a, c.a}});
  t.check(describe(c, "graph"), out.data(), want.data(), want.size());
}

}  // namespace

int main() {
  Tally t;
  Rng rng(0x6E6D6D);
  // Fixed edge shapes: 1x1x1, K = 0 (bias only), K not a multiple of the
  // lane count, N not a multiple of the tile, one tile exactly, K at the limit.
  const int shapes[][3] = {{1, 1, 1}, {1, 1, 0}, {3, 5, 0}, {1, 16, 17}, {2, 17, 33}, {16, 16, 16},
                           {7, 31, 100}, {5, 33, 15}, {1, 1, loom_hls::kGemmMaxK}, {2, 3, loom_hls::kGemmMaxK}};
  for (const auto& s : shapes) {
    check_case(t, random_case(rng, s[0], s[1], s[2], false), "edge-shape");
    check_case(t, random_case(rng, s[0], s[1], s[2], true), "edge-shape+edge-values");
  }
  for (int i = 0; i < 60; ++i) {
    const int m = int(rng.range(1, 24)), n = int(rng.range(1, 40)), k = int(rng.range(1, 300));
    check_case(t, random_case(rng, m, n, k, i % 2 == 1), "random");
  }
  for (uint64_t seed = 1; seed <= 6; ++seed)
    check_graph(t, seed, int(rng.range(1, 12)), int(rng.range(1, 40)), int(rng.range(1, 200)), seed % 2 == 0,
                seed != 3);

  // Rejected calls.
  Case ok = random_case(rng, 2, 3, 4, false);
  Case c = ok;
  c.k = loom_hls::kGemmMaxK + 1;
  c.a.resize(size_t(c.m) * c.k);
  c.b.resize(size_t(c.k) * c.n);
  check_rejected(t, c, loom_hls::kOverLimit, "k-over-limit");
  c = ok, c.m = -1;
  check_rejected(t, c, loom_hls::kBadShape, "negative-m");
  c = ok, c.lo = 10, c.hi = 9;
  check_rejected(t, c, loom_hls::kBadClamp, "empty-clamp");
  c = ok, c.b_zp = 200;
  check_rejected(t, c, loom_hls::kBadParam, "zp-out-of-int8");
  c = ok, c.params[3 * 2 + 2] = 63;
  check_rejected(t, c, loom_hls::kBadParam, "shift-63-last-channel");
  c = ok, c.params[2] = 0;
  check_rejected(t, c, loom_hls::kBadParam, "shift-0");
  return t.finish("hls.gemm.csim");
}
