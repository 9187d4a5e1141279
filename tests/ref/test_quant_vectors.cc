// Hand-computed rounding-tie, wrap and saturation vectors through POSTOP
// (plain, residual and rescale) and ELTWISE: expected outputs are literals,
// not computed.
#include <gtest/gtest.h>

#include "harness.h"

namespace loom::ref::test {
namespace {

struct PostopVec {
  const char* what;
  int32_t acc, bias, mult, shift;
  int out_zp, clip_lo, clip_hi;
  bool residual;
  int res, res_zp;
  int32_t res_mult;
  int res_shift;
  int expected;
};

constexpr int32_t kMax = INT32_MAX;

const PostopVec kPostopVecs[] = {
    {"+0.5 rounds away to +1", 1, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, 1},
    {"-0.5 rounds away to -1", -1, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, -1},
    {"+1.5 rounds to +2", 3, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, 2},
    {"-1.5 rounds to -2", -3, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, -2},
    {"+2.5 rounds to +3 (not to even)", 5, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, 3},
    {"-2.5 rounds to -3 (not to even)", -5, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, -3},
    {"+1.25 rounds down", 5, 0, 1, 2, 0, -128, 127, false, 0, 0, 0, 1, 1},
    {"-1.75 rounds to -2", -7, 0, 1, 2, 0, -128, 127, false, 0, 0, 0, 1, -2},
    {"tie with a Q31 multiplier", 3, 0, 1 << 30, 31, 0, -128, 127, false, 0, 0, 0, 1, 2},
    {"bias is added before rounding", 2, 1, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, 2},
    {"acc + bias wraps in int32", kMax, 1, 1, 31, 0, -128, 127, false, 0, 0, 0, 1, -1},
    {"both terms saturate to int32 before the sum", kMax, 0, kMax, 1, 0, -128, 127, true, -128, 127, kMax, 1, -1},
    {"clamp at 127 after the zero point", 254, 0, 1, 1, 1, -128, 127, false, 0, 0, 0, 1, 127},
    {"clamp at -128 after the zero point", -256, 0, 1, 1, -1, -128, 127, false, 0, 0, 0, 1, -128},
    {"exactly 127 passes", 254, 0, 1, 1, 0, -128, 127, false, 0, 0, 0, 1, 127},
    {"ReLU clamps at the zero point", -100, 0, 1, 1, 5, 5, 127, false, 0, 0, 0, 1, 5},
    {"residual +1.5 rounds to +2", 0, 0, 1, 1, 0, -128, 127, true, 3, 0, 1, 1, 2},
    {"residual -1.5 rounds to -2 after its zero point", 0, 0, 1, 1, 0, -128, 127, true, 0, 3, 1, 1, -2},
};

TEST(RefQuantVectors, Postop) {
  for (const PostopVec& v : kPostopVecs) {
    SCOPED_TRACE(v.what);
    Harness h;
    hw::CoreState& s = h.core(0);
    const auto acc = le32({v.acc}), par = le32({v.bias, v.mult, v.shift});
    std::copy(acc.begin(), acc.end(), s.buf(Buffer::ACC).begin());
    std::copy(par.begin(), par.end(), s.buf(Buffer::PARAM).begin());
    s.buf(Buffer::IN)[0] = uint8_t(int8_t(v.res));
    spec::PostopInsn p;
    p.m = 1;
    p.n = 1;
    p.out_zp = v.out_zp;
    p.clip_lo = v.clip_lo;
    p.clip_hi = v.clip_hi;
    p.residual = v.residual;
    p.res_zp = v.res_zp;
    p.res_mult = v.res_mult;
    p.res_shift = v.res_shift;
    h.run(0, {p.encode(), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    EXPECT_EQ(int(int8_t(s.buf(Buffer::OUT)[0])), v.expected);
  }
}

// POSTOP rescale: x = clamp(rq(acc, mult, shift) + out_zp, clip_lo, clip_hi),
// y = rqs(x - a_zp, a_mult, res - res_zp, res_mult, a_shift) + add_zp (the sum
// rounded once; res_shift is not used), out = clamp(y, add_lo, add_hi). Bias
// is 0 throughout.
struct RescaleVec {
  const char* what;
  int32_t acc, mult, shift;
  int out_zp, clip_lo, clip_hi;
  int a_zp;
  int32_t a_mult;
  int a_shift;
  int res, res_zp;
  int32_t res_mult;
  int res_shift;
  int add_zp, add_lo, add_hi;
  int expected;
};

constexpr int32_t kMin = INT32_MIN;

const RescaleVec kRescaleVecs[] = {
    // 1000/2 = 500 clamps to x = 127 first; 127/2 = 63.5 rounds away to 64.
    {"x is clamped to int8 before the add", 1000, 1, 1, 0, -128, 127, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, 64},
    // 20/2 + 5 = 15 = x; (15 - 5)/2 = 5.
    {"out_zp before the clamp, a_zp after it", 20, 1, 1, 5, -128, 127, 5, 1, 1, 0, 0, 0, 1, 0, -128, 127, 5},
    // x = 3: (3 + 1)/2 = 2 (rounding each term, 1.5 -> 2 and 0.5 -> 1, would give 3).
    {"the sum rounds once", 6, 1, 1, 0, -128, 127, 0, 1, 1, 1, 0, 1, 1, 0, -128, 127, 2},
    // x = 3: (3 - 3)/2 = 0.
    {"opposite terms cancel before the rounding", 6, 1, 1, 0, -128, 127, 0, 1, 1, -3, 0, 1, 1, 0, -128, 127, 0},
    // x = 3, residual 1 with res_shift 62: the sum still rounds at a_shift, (3 + 1)/2 = 2.
    {"res_shift is not used", 6, 1, 1, 0, -128, 127, 0, 1, 1, 1, 0, 1, 62, 0, -128, 127, 2},
    // x = -3: -3/2 = -1.5 -> -2.
    {"-1.5 rounds away to -2 in the add", -6, 1, 1, 0, -128, 127, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, -2},
    // x = 100; (100 + 28) * 2^30 / 2^30 = 128; + 10 = 138 -> add_hi 120.
    {"add_zp then the add's upper clamp", 200, 1, 1, 0, -128, 127, -28, 1 << 30, 30, 0, 0, 0, 1, 10, -50, 120, 120},
    // -100/2 = -50 -> ReLU x = 0; (0 - 20) = -20 passes the full add clamp.
    {"clip_lo bounds x, not the output", -100, 1, 1, 0, 0, 127, 20, 1 << 30, 30, 0, 0, 0, 1, 0, -128, 127, -20},
    // x = clamp(50, .., 10) = 10; + residual 100 = 110 > clip_hi.
    {"clip_hi bounds x, not the output", 100, 1, 1, 0, -128, 10, 0, 1 << 30, 30, 100, 0, 1 << 30, 30, 0, -128, 127,
     110},
    // x = -50 + 0 = -50, add clamp lo = add_zp = 7: ReLU after the add.
    {"ReLU after the add through add_lo = add_zp", -100, 1, 1, 0, -128, 127, 0, 1 << 30, 30, 0, 0, 0, 1, 7, 7, 127,
     7},
    // x = 10; -2^30 * 10 / 2^31 = -5.
    {"negative a_mult", 20, 1, 1, 0, -128, 127, 0, -(1 << 30), 31, 0, 0, 0, 1, 0, -128, 127, -5},
    // x = 127: 255 * kMax and (-128 - 127) * kMax cancel exactly in the sum.
    {"full-range opposite terms cancel in the exact sum", kMax, kMax, 1, 0, -128, 127, -128, kMax, 1, -128, 127,
     kMax, 1, 0, -128, 127, 0},
    // x = -128: (-255 - 255) * kMax / 2 saturates to kMin and clamps to -128.
    {"the sum saturates to int32 and clamps at -128", kMin, kMax, 1, 0, -128, 127, 127, kMax, 1, -128, 127, kMax, 1,
     0, -128, 127, -128},
    // x = 127, (127 - 0) * 2^30 / 2^62 = 2^-25 rounds to 0; + add_zp -3.
    {"shift 62 in the add rounds x away", 254, 1, 1, 0, -128, 127, 0, 1 << 30, 62, 0, 0, 0, 1, -3, -128, 127, -3},
};

TEST(RefQuantVectors, PostopRescale) {
  for (const RescaleVec& v : kRescaleVecs) {
    SCOPED_TRACE(v.what);
    Harness h;
    hw::CoreState& s = h.core(0);
    const auto acc = le32({v.acc}), par = le32({0, v.mult, v.shift, v.a_mult, v.a_shift});
    std::copy(acc.begin(), acc.end(), s.buf(Buffer::ACC).begin());
    std::copy(par.begin(), par.end(), s.buf(Buffer::PARAM).begin());
    s.buf(Buffer::IN)[0] = uint8_t(int8_t(v.res));
    spec::PostopInsn p;
    p.m = 1;
    p.n = 1;
    p.out_zp = v.out_zp;
    p.clip_lo = v.clip_lo;
    p.clip_hi = v.clip_hi;
    p.residual = 1;
    p.rescale = 1;
    p.res_zp = v.res_zp;
    p.res_mult = v.res_mult;
    p.res_shift = v.res_shift;
    p.a_zp = v.a_zp;
    p.add_zp = v.add_zp;
    p.add_lo = v.add_lo;
    p.add_hi = v.add_hi;
    h.run(0, {p.encode(), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    EXPECT_EQ(int(int8_t(s.buf(Buffer::OUT)[0])), v.expected);
  }
}

struct EltVec {
  const char* what;
  int a, a_zp;
  int32_t a_mult;
  int a_shift;
  int b, b_zp;
  int32_t b_mult;
  int b_shift;
  int out_zp, clip_lo, clip_hi;
  int expected;
};

const EltVec kEltVecs[] = {
    {"+0.5 rounds away to +1", 1, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, 1},
    {"-0.5 rounds away to -1", -1, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, -1},
    {"+1.5 rounds to +2", 3, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, 2},
    {"-1.5 rounds to -2", -3, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, -2},
    {"+2.5 rounds to +3", 5, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, 3},
    {"-2.5 rounds to -3", -5, 0, 1, 1, 0, 0, 0, 1, 0, -128, 127, -3},
    {"the sum rounds once (0.5 + 0.5 = 1, not 1 + 1)", 1, 0, 1, 1, 1, 0, 1, 1, 0, -128, 127, 1},
    {"b_shift is not used: (1 + 3) / 2^a_shift", 1, 0, 1, 1, 3, 0, 1, 62, 0, -128, 127, 2},
    {"opposite ties cancel", 1, 0, 1, 1, -1, 0, 1, 1, 0, -128, 127, 0},
    {"zero point is subtracted before scaling", 0, -3, 1, 1, 0, 0, 0, 1, 0, -128, 127, 2},
    {"full-range opposite terms cancel in the exact sum", 127, -128, kMax, 1, -128, 127, kMax, 1, 0, -128, 127, 0},
    {"the sum saturates to int32", 127, -128, kMax, 1, 127, -128, kMax, 1, 0, -128, 127, 127},
    {"clamp at 127 with a zero point", 127, -128, 1 << 30, 30, 0, 0, 0, 1, -10, -128, 127, 127},
    {"clamp at -128 with a zero point", -128, 127, 1 << 30, 30, 0, 0, 0, 1, 5, -128, 127, -128},
    {"unary ReLU through clip_lo = out_zp", -50, 0, 1 << 30, 30, 0, 0, 0, 1, 3, 3, 127, 3},
    {"a zero multiplier ignores its input", 10, 0, 1 << 30, 30, 127, 0, 0, 1, 0, -128, 127, 10},
};

TEST(RefQuantVectors, Eltwise) {
  for (const EltVec& v : kEltVecs) {
    SCOPED_TRACE(v.what);
    Harness h;
    hw::CoreState& s = h.core(0);
    s.buf(Buffer::IN)[0] = uint8_t(int8_t(v.a));
    s.buf(Buffer::IN)[1] = uint8_t(int8_t(v.b));
    spec::EltwiseInsn e;
    e.count = 1;
    e.a_addr = 0;
    e.b_addr = 1;
    e.a_zp = v.a_zp;
    e.a_mult = v.a_mult;
    e.a_shift = v.a_shift;
    e.b_zp = v.b_zp;
    e.b_mult = v.b_mult;
    e.b_shift = v.b_shift;
    e.out_zp = v.out_zp;
    e.clip_lo = v.clip_lo;
    e.clip_hi = v.clip_hi;
    h.run(0, {e.encode(), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    EXPECT_EQ(int(int8_t(s.buf(Buffer::OUT)[0])), v.expected);
  }
}

TEST(RefQuantVectors, PoolAvgTiesRoundToEven) {
  // Windows of two elements, mult/2^shift = 1/2, so every odd sum is a tie:
  // {1, 2} = 1.5 -> 2, {-1, -2} = -1.5 -> -2, {2, 3} = 2.5 -> 2, {-2, -3} =
  // -2.5 -> -2, {0, 1} = 0.5 -> 0, {0, -1} = -0.5 -> 0 (away from zero would
  // give 3, -3, 1 and -1 for the last four).
  Harness h;
  hw::CoreState& s = h.core(0);
  const int8_t x[] = {1, -1, 2, -2, 0, 0, 2, -2, 3, -3, 1, -1};  // window element w, channel ch at w * 6 + ch
  for (int i = 0; i < 12; ++i) s.buf(Buffer::IN)[i] = uint8_t(x[i]);
  spec::PoolInsn p;
  p.avg = 1;
  p.p = 1;
  p.win = 2;
  p.c = 6;
  p.mult = 1;
  p.shift = 1;
  p.clip_lo = -128;
  p.clip_hi = 127;
  h.run(0, {p.encode(), end_insn()});
  ASSERT_EQ(h.err(0), 0u);
  const int want[] = {2, -2, 2, -2, 0, 0};
  for (int ch = 0; ch < 6; ++ch) EXPECT_EQ(int8_t(s.buf(Buffer::OUT)[ch]), want[ch]) << "channel " << ch;
}

}  // namespace
}  // namespace loom::ref::test
