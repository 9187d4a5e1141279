// C-simulation testbench of loom_hls_eltwise: bit-exact against the golden
// model's ELTWISE instruction (exec_eltwise: the add rounds once, at a_shift)
// with raw integer parameters (edge multipliers and shifts, saturation,
// multiplier pairs on one grid with exact ties, b_shift not used), and
// against the direct reference (ir::run_reference) on one-node add / relu /
// clip graphs. Also checks the status codes: a rejected call writes nothing.
#include <climits>
#include <cstring>

#include "hw/golden.h"
#include "ir/op_quant.h"
#include "loom_hls_eltwise.h"
#include "loom_hls_quant.h"
#include "tb_common.h"

using namespace loom_hls_tb;
using loom::ir::OpKind;
using loom::spec::Buffer;

namespace {

struct Case {
  int count = 1;
  int a_zp = 0, b_zp = 0, y_zp = 0, a_mult = 0, a_shift = 1, b_mult = 0, b_shift = 1, lo = -128, hi = 127;
  std::vector<int8_t> a, b;
};

std::string describe(const Case& c, const char* tag) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s count=%d zp=(%d,%d,%d) a=(%d>>%d) b=(%d>>%d) clip=[%d,%d]", tag, c.count, c.a_zp,
                c.b_zp, c.y_zp, c.a_mult, c.a_shift, c.b_mult, c.b_shift, c.lo, c.hi);
  return buf;
}

std::vector<int8_t> golden(const Case& c) {
  loom::hw::CoreState s;
  const size_t n = size_t(c.count);
  s.buf(Buffer::IN).assign(2 * n, 0);
  s.buf(Buffer::OUT).assign(n, 0);
  std::memcpy(s.buf(Buffer::IN).data(), c.a.data(), n);
  std::memcpy(s.buf(Buffer::IN).data() + n, c.b.data(), n);
  loom::spec::EltwiseInsn e;
  e.a_addr = 0, e.b_addr = n, e.out_addr = 0, e.count = n;
  e.a_zp = c.a_zp, e.b_zp = c.b_zp, e.out_zp = c.y_zp, e.clip_lo = c.lo, e.clip_hi = c.hi;
  e.a_mult = c.a_mult, e.b_mult = c.b_mult, e.a_shift = uint64_t(c.a_shift), e.b_shift = uint64_t(c.b_shift);
  if (loom::hw::exec_eltwise(s, e) != 0) {
    std::fprintf(stderr, "golden model rejected a valid case\n");
    std::exit(2);
  }
  const auto& out = s.buf(Buffer::OUT);
  return std::vector<int8_t>(out.begin(), out.end());
}

int run(const Case& c, int has_b, std::vector<int8_t>& y) {
  return loom_hls_eltwise(c.a.data(), has_b ? c.b.data() : nullptr, y.data(), c.count, has_b, c.a_zp, c.b_zp, c.y_zp,
                          c.a_mult, c.a_shift, c.b_mult, c.b_shift, c.lo, c.hi);
}

void check_golden(Tally& t, const Case& c, const char* tag) {
  std::vector<int8_t> y(size_t(c.count), int8_t(0x5A));
  reset_stream_counts();
  const int st = run(c, 1, y);
  if (st != loom_hls::kOk) {
    t.fail(describe(c, tag) + ": kernel status " + std::to_string(st));
    return;
  }
  if (kCountStreams) t.check_model(describe(c, tag), loom_hls::eltwise_cycles(uint64_t(c.count)), stream_writes("y_stream"));
  const auto want = golden(c);
  t.check(describe(c, tag), y.data(), want.data(), want.size());
}

Case random_case(Rng& rng, int count, bool edges) {
  Case c;
  c.count = count;
  c.a_zp = int(rng.range(-128, 127)), c.b_zp = int(rng.range(-128, 127)), c.y_zp = int(rng.range(-128, 127));
  c.a_mult = int(rng.range(1 << 30, INT32_MAX)), c.b_mult = int(rng.range(1 << 30, INT32_MAX));
  c.a_shift = int(rng.range(28, 34)), c.b_shift = int(rng.range(28, 34));
  c.lo = int(rng.range(-128, 0)), c.hi = int(rng.range(c.lo, 127));
  if (edges) {
    const int which = int(rng.range(0, 4));
    if (which == 0) c.a_mult = INT32_MAX, c.a_shift = 1, c.b_mult = INT32_MIN, c.b_shift = 1;  // int32 saturation
    if (which == 1) c.a_shift = 62, c.b_shift = 62;                                               // rounds to 0
    if (which == 2) c.a_mult = int32_t(rng.range(INT32_MIN, INT32_MAX)), c.b_mult = 0;          // negative, unary
    if (which == 3) c.a_shift = int(rng.range(1, 62)), c.b_shift = int(rng.range(1, 62));
    if (which == 4) c.lo = c.hi = int(rng.range(-128, 127));                                     // constant output
  }
  c.a = random_i8(rng, size_t(count));
  c.b = random_i8(rng, size_t(count));
  if (edges && rng.range(0, 1)) {
    std::fill(c.a.begin(), c.a.end(), int8_t(rng.range(0, 1) ? 127 : -128));
    std::fill(c.b.begin(), c.b.end(), int8_t(rng.range(0, 1) ? 127 : -128));
  }
  return c;
}

/// One-node add (two inputs) or relu / clip (one) graph through run_reference.
void check_graph(Tally& t, uint64_t seed, OpKind op, int count) {
  loom::ir::GraphBuilder gb("hls_eltwise", seed);
  Rng rng(seed * 31 + 7);
  const int32_t zpa = int32_t(rng.range(-20, 20)), zpb = int32_t(rng.range(-20, 20));
  const auto a = gb.input("a", {1, count}, 0.03 + 0.01 * double(seed % 5), zpa);
  std::string y;
  std::string b;
  if (op == OpKind::Add) {
    b = gb.input("b", {1, count}, 0.05, zpb);
    y = gb.add("add", a, b, 0.04 + 0.02 * double(seed % 3), int32_t(rng.range(-10, 10)));
  } else {
    y = gb.unary("act", op, a, -1.0, 2.0);
  }
  gb.output(y);
  auto& g = gb.graph();
  auto q = loom::ir::elt_quant(g, g.nodes[0]);
  if (!q) {
    t.fail(std::string("elt_quant: ") + q.error().str());
    return;
  }
  Case c;
  c.count = count;
  c.a_zp = q->a_zp, c.b_zp = q->b_zp, c.y_zp = q->y_zp, c.lo = q->lo, c.hi = q->hi;
  c.a_mult = q->a.mult, c.a_shift = q->a.shift, c.b_mult = q->b.mult, c.b_shift = q->b.shift;
  c.a = random_i8(rng, size_t(count));
  c.b = random_i8(rng, size_t(count));
  std::vector<int8_t> out(size_t(count), int8_t(0x5A));
  const bool binary = op == OpKind::Add;
  const int st = run(c, binary ? 1 : 0, out);
  const std::string what = describe(c, loom::ir::op_name(op));
  if (st != loom_hls::kOk) {
    t.fail(what + ": kernel status " + std::to_string(st));
    return;
  }
  std::map<std::string, std::vector<int8_t>> in{{a, c.a}};
  if (binary) in[b] = c.b;
  const auto want = reference_output(g, in);
  t.check(what, out.data(), want.data(), want.size());
}

void check_rejected(Tally& t, Case c, int want, const char* tag) {
  std::vector<int8_t> y(size_t(c.count > 0 ? c.count : 1), int8_t(0x5A));
  const int st = run(c, 1, y);
  bool untouched = true;
  for (int8_t v : y) untouched = untouched && v == 0x5A;
  if (st != want || !untouched)
    t.fail(describe(c, tag) + ": status " + std::to_string(st) + (untouched ? "" : ", output written"));
  else
    t.pass_case();
}

}  // namespace

int main() {
  Tally t;
  Rng rng(0xE17);
  for (int count : {1, 2, 7, 64, 1000}) {
    check_golden(t, random_case(rng, count, false), "sizes");
    check_golden(t, random_case(rng, count, true), "sizes+edges");
  }
  for (int i = 0; i < 80; ++i) check_golden(t, random_case(rng, int(rng.range(1, 500)), i % 2 == 1), "random");
  // Multipliers on one grid (the larger in [2^30, 2^31), the other below it, one
  // shift), as the compiler gives an add; round ones (powers of two) make exact
  // ties of the sum, which one rounding resolves differently from two.
  for (int i = 0; i < 30; ++i) {
    Case c = random_case(rng, int(rng.range(1, 300)), false);
    const int32_t big = int32_t(rng.range(1 << 30, INT32_MAX));
    const int32_t other = int32_t(rng.range(0, big));
    const bool a_big = rng.range(0, 1) == 1;
    c.a_mult = a_big ? big : other, c.b_mult = a_big ? other : big;
    c.a_shift = int(rng.range(26, 40));
    if (i % 3 == 2) {
      c.a_mult = int32_t(1) << rng.range(0, 30);
      c.b_mult = int32_t(1) << rng.range(0, 30);
      c.a_shift = int(rng.range(1, 32));
    }
    c.b_shift = int(rng.range(1, 62));  // checked, not used
    check_golden(t, c, i % 3 == 2 ? "grid-round" : "grid");
  }
  // b_shift does not change the output of an add.
  for (int i = 0; i < 5; ++i) {
    Case c = random_case(rng, int(rng.range(1, 100)), false);
    std::vector<int8_t> y1(size_t(c.count), int8_t(0x5A)), y2(size_t(c.count), int8_t(0x5A));
    c.b_shift = 1;
    const int st1 = run(c, 1, y1);
    c.b_shift = 62;
    const int st2 = run(c, 1, y2);
    if (st1 != loom_hls::kOk || st2 != loom_hls::kOk)
      t.fail(describe(c, "b-shift-unused") + ": kernel status " + std::to_string(st1) + ", " + std::to_string(st2));
    else
      t.check(describe(c, "b-shift-unused"), y2.data(), y1.data(), y1.size());
  }
  // Unary form with a non-zero b multiplier: b is not read and its term is 0,
  // as in the golden model with b_mult = 0.
  for (int i = 0; i < 10; ++i) {
    Case c = random_case(rng, int(rng.range(1, 200)), i % 2 == 1);
    c.b_mult = int(rng.range(1 << 30, INT32_MAX));
    c.b_zp = int(rng.range(-128, 127));
    std::vector<int8_t> y(size_t(c.count), int8_t(0x5A));
    const int st = run(c, 0, y);
    Case ref = c;
    ref.b_mult = 0;
    const auto want = golden(ref);
    if (st != loom_hls::kOk)
      t.fail(describe(c, "unary-nonzero-b-mult") + ": kernel status " + std::to_string(st));
    else
      t.check(describe(c, "unary-nonzero-b-mult"), y.data(), want.data(), want.size());
  }
  uint64_t seed = 1;
  for (OpKind op : {OpKind::Add, OpKind::Relu, OpKind::Clip})
    for (int count : {1, 5, 300}) check_graph(t, seed++, op, count);

  Case ok = random_case(rng, 8, false);
  Case c = ok;
  c.count = -1;
  check_rejected(t, c, loom_hls::kBadShape, "negative-count");
  c = ok, c.b_shift = 0;
  check_rejected(t, c, loom_hls::kBadParam, "b-shift-0");
  c = ok, c.a_shift = 63;
  check_rejected(t, c, loom_hls::kBadParam, "a-shift-63");
  c = ok, c.y_zp = -129;
  check_rejected(t, c, loom_hls::kBadParam, "y-zp-out-of-int8");
  c = ok, c.lo = 5, c.hi = 4;
  check_rejected(t, c, loom_hls::kBadClamp, "empty-clamp");
  return t.finish("hls.eltwise.csim");
}
