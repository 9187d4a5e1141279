// Hand-computed vectors for quantize_multiplier() and requantize(): rounding
// ties, int32 saturation and the int8 clamp with zero points.
#include "common/quant.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace loom {
namespace {

constexpr int32_t kHalf = int32_t(1) << 30;  // with shift 31: 0.5

TEST(QuantizeMultiplier, ExactPowersAndFractions) {
  Multiplier m;
  ASSERT_TRUE(quantize_multiplier(0.5, &m));
  EXPECT_EQ(m.mult, kHalf);
  EXPECT_EQ(m.shift, 31);
  ASSERT_TRUE(quantize_multiplier(1.0, &m));
  EXPECT_EQ(m.mult, kHalf);
  EXPECT_EQ(m.shift, 30);
  ASSERT_TRUE(quantize_multiplier(0.75, &m));
  EXPECT_EQ(m.mult, 1610612736);  // 0.75 * 2^31
  EXPECT_EQ(m.shift, 31);
  ASSERT_TRUE(quantize_multiplier(0.25, &m));
  EXPECT_EQ(m.mult, kHalf);
  EXPECT_EQ(m.shift, 32);
  ASSERT_TRUE(quantize_multiplier(3.0, &m));  // 0.75 * 2^2
  EXPECT_EQ(m.mult, 1610612736);
  EXPECT_EQ(m.shift, 29);
}

TEST(QuantizeMultiplier, MantissaRoundingUpRenormalizes) {
  // 1 - 2^-40 rounds to a mantissa of 2^31, which must become 2^30 with one
  // less shift (the value 1.0) rather than overflow int32.
  Multiplier m;
  ASSERT_TRUE(quantize_multiplier(1.0 - 0x1p-40, &m));
  EXPECT_EQ(m.mult, kHalf);
  EXPECT_EQ(m.shift, 30);
}

TEST(QuantizeMultiplier, RejectsUnrepresentableScales) {
  Multiplier m;
  EXPECT_FALSE(quantize_multiplier(0.0, &m));
  EXPECT_FALSE(quantize_multiplier(-0.5, &m));
  EXPECT_FALSE(quantize_multiplier(std::numeric_limits<double>::infinity(), &m));
  EXPECT_FALSE(quantize_multiplier(std::numeric_limits<double>::quiet_NaN(), &m));
  EXPECT_FALSE(quantize_multiplier(0x1p-40, &m));  // needs shift 71
  EXPECT_FALSE(quantize_multiplier(0x1p31, &m));   // needs shift -1
  EXPECT_TRUE(quantize_multiplier(0x1p-32, &m));   // shift 62, the largest allowed
  EXPECT_EQ(m.shift, 62);
  EXPECT_FALSE(quantize_multiplier(0x1p-33, &m));  // shift 63
  EXPECT_TRUE(quantize_multiplier(0x1p29, &m));    // shift 1, the smallest allowed
  EXPECT_EQ(m.shift, 1);
}

struct RqVector {
  int64_t v;
  int32_t mult;
  int shift;
  int32_t want;
};

// Ties go away from zero: +-0.5 -> +-1, +-1.5 -> +-2, +-2.5 -> +-3.
TEST(Requantize, TiesAwayFromZero) {
  const RqVector vs[] = {
      {1, kHalf, 31, 1},       {-1, kHalf, 31, -1},        // +-0.5
      {3, kHalf, 31, 2},       {-3, kHalf, 31, -2},        // +-1.5
      {5, kHalf, 31, 3},       {-5, kHalf, 31, -3},        // +-2.5
      {2, kHalf, 31, 1},       {-2, kHalf, 31, -1},        // exact
      {10, 1610612736, 31, 8}, {-10, 1610612736, 31, -8},  // 0.75 * 10 = 7.5
      {1, kHalf, 32, 0},       {-1, kHalf, 32, 0},         // +-0.25 rounds to 0
      {3, kHalf, 32, 1},       {-3, kHalf, 32, -1},        // +-0.75
      {0, kHalf, 31, 0},
  };
  for (const auto& t : vs) {
    EXPECT_EQ(requantize(t.v, t.mult, t.shift), t.want) << "v=" << t.v << " mult=" << t.mult << " shift=" << t.shift;
  }
}

// requantize_even (POOL's average) sends ties to the even neighbour:
// +-0.5 -> 0, +-1.5 -> +-2, +-2.5 -> +-2, +-3.5 -> +-4; everything else
// as requantize.
TEST(Requantize, EvenTiesToEven) {
  const RqVector vs[] = {
      {1, kHalf, 31, 0},       {-1, kHalf, 31, 0},         // +-0.5
      {3, kHalf, 31, 2},       {-3, kHalf, 31, -2},        // +-1.5
      {5, kHalf, 31, 2},       {-5, kHalf, 31, -2},        // +-2.5
      {7, kHalf, 31, 4},       {-7, kHalf, 31, -4},        // +-3.5
      {2, kHalf, 31, 1},       {-2, kHalf, 31, -1},        // exact
      {10, 1610612736, 31, 8}, {-10, 1610612736, 31, -8},  // 7.5
      {3, kHalf, 32, 1},       {-3, kHalf, 32, -1},        // +-0.75
      {5, kHalf, 32, 1},       {-5, kHalf, 32, -1},        // +-1.25
  };
  for (const auto& t : vs) {
    EXPECT_EQ(requantize_even(t.v, t.mult, t.shift), t.want)
        << "v=" << t.v << " mult=" << t.mult << " shift=" << t.shift;
  }
  const int32_t max = std::numeric_limits<int32_t>::max();
  const int32_t min = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(requantize_even(max, max, 1), max);
  EXPECT_EQ(requantize_even(min, max, 1), min);
  EXPECT_EQ(requantize_even(min, kHalf, 30), min);
  // Off the ties both rules agree, over every shift.
  for (int shift = 1; shift <= 62; ++shift)
    for (int64_t v : {int64_t(12345), int64_t(-98765), int64_t(max), int64_t(min)}) {
      const int64_t p = v * int64_t(kHalf);
      const bool tie = (uint64_t(p) & ((uint64_t(1) << shift) - 1)) == (uint64_t(1) << (shift - 1));
      if (!tie) {
        EXPECT_EQ(requantize_even(v, kHalf, shift), requantize(v, kHalf, shift)) << v << " " << shift;
      }
    }
}

TEST(Requantize, SaturatesToInt32) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  const int32_t min = std::numeric_limits<int32_t>::min();
  // (2^31 - 1) * (2^31 - 1) / 2 is far above int32.
  EXPECT_EQ(requantize(max, max, 1), max);
  EXPECT_EQ(requantize(min, max, 1), min);
  // x * 1.0 stays exact at both ends.
  EXPECT_EQ(requantize(max, kHalf, 30), max);
  EXPECT_EQ(requantize(min, kHalf, 30), min);
  // x * 2 (mult 2^30, shift 29) overflows int32 by one step.
  EXPECT_EQ(requantize(int64_t(1) << 30, kHalf, 29), max);
  EXPECT_EQ(requantize(-(int64_t(1) << 30), kHalf, 29), min);
  EXPECT_EQ(requantize(-(int64_t(1) << 30) + 1, kHalf, 29), min + 2);
}

// The whole output stage of an op: clamp(rq(v) + zp, -128, 127).
TEST(Requantize, ClampToInt8WithZeroPoints) {
  auto out = [](int64_t v, int32_t mult, int shift, int32_t zp) {
    return int(clamp_i8(int64_t(requantize(v, mult, shift)) + zp));
  };
  EXPECT_EQ(out(300, kHalf, 31, -3), 127);    // 150 - 3
  EXPECT_EQ(out(-300, kHalf, 31, 10), -128);  // -150 + 10
  EXPECT_EQ(out(259, kHalf, 31, -3), 127);    // 129.5 -> 130, -3 = 127: exactly the top
  EXPECT_EQ(out(261, kHalf, 31, -3), 127);    // 130.5 -> 131 - 3 = 128 -> 127
  EXPECT_EQ(out(-251, kHalf, 31, -3), -128);  // -125.5 -> -126 - 3 = -129 -> -128
  EXPECT_EQ(out(-249, kHalf, 31, -3), -128);  // -124.5 -> -125 - 3 = -128: exactly the bottom
  EXPECT_EQ(out(-247, kHalf, 31, -3), -127);  // -123.5 -> -124 - 3
  EXPECT_EQ(out(5, kHalf, 31, -3), 0);        // 2.5 -> 3 - 3
  EXPECT_EQ(out(-5, kHalf, 31, 3), 0);        // -2.5 -> -3 + 3
  EXPECT_EQ(out(-1, kHalf, 31, 0), -1);       // -0.5 -> -1
  EXPECT_EQ(clamp_i8(50, 3, 20), 20);         // a fused activation range
  EXPECT_EQ(clamp_i8(-50, 3, 20), 3);
}

}  // namespace
}  // namespace loom
