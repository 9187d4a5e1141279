// Checks the generated contract header: encode/decode round trips, field
// ranges, opcode table and register map invariants.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "loom/spec_gen.h"

using namespace loom::spec;

TEST(Spec, LoadRoundTripsEveryField) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) {
    LoadInsn l;
    l.pop_prev = 0;
    l.pop_next = rng() & 1;
    l.push_next = rng() & 1;
    l.buf = rng() % 5;
    l.pad_value = int64_t(rng() % 256) - 128;
    l.sp_addr = rng() & 0xFFFFFF;
    l.dram_addr = rng() & ((uint64_t(1) << 48) - 1);
    l.rows = rng() & 0xFFFF;
    l.cols = rng() & 0xFFFF;
    l.pad_lo = rng() & 0xFFFF;
    l.pad_hi = rng() & 0xFFFF;
    l.dram_stride = rng() & 0xFFFFFFFF;
    l.sp_stride = rng() & 0xFFFFFF;
    ASSERT_TRUE(l.invalid_field().empty());
    const Insn in = l.encode();
    EXPECT_EQ(get_bits(in, 0, 6), uint64_t(Opcode::LOAD));
    const LoadInsn d = LoadInsn::decode(in);
    EXPECT_EQ(d.encode(), in);
    EXPECT_EQ(d.pad_value, l.pad_value);
    EXPECT_EQ(d.dram_addr, l.dram_addr);
    EXPECT_EQ(d.sp_stride, l.sp_stride);
  }
}

TEST(Spec, SignedFieldsSignExtend) {
  PostopInsn p;
  p.out_zp = -128;
  p.clip_hi = 127;
  p.res_mult = -2147483648LL;
  const auto d = PostopInsn::decode(p.encode());
  EXPECT_EQ(d.out_zp, -128);
  EXPECT_EQ(d.clip_hi, 127);
  EXPECT_EQ(d.res_mult, -2147483648LL);
}

TEST(Spec, InvalidFieldIsNamed) {
  GemmInsn g;
  g.m = 70000;
  EXPECT_EQ(g.invalid_field(), "m");
  g.m = 1;
  g.a_zp = 200;
  EXPECT_EQ(g.invalid_field(), "a_zp");
}

TEST(Spec, OpcodesAreUniqueAndLookedUp) {
  std::set<int> seen;
  for (const auto& o : kOpcodes) {
    EXPECT_TRUE(seen.insert(int(o.op)).second) << o.name;
    EXPECT_EQ(opcode_info(uint64_t(o.op)), &o);
  }
  EXPECT_EQ(opcode_info(63), nullptr);
}

TEST(Spec, RegisterBlocksDoNotOverlap) {
  EXPECT_LT(reg::SEM_VALUE + 4 * reg::SEM_VALUE_COUNT, kCoreBase + 1);
  EXPECT_LT(counter_offset(Counter::QUEUE_HWM) + 8, core_reg::CTR_CLEAR + 1);
  EXPECT_LE(core_reg_addr(kMaxCores - 1, core_reg::CTR_CLEAR) + 4, 1u << kCsrAddrBits);
}

TEST(Spec, NamedConfigsExist) {
  for (const char* n : {"tiny", "small", "default"}) ASSERT_NE(find_config(n), nullptr) << n;
  EXPECT_EQ(find_config("tiny")->cores, 2u);
  EXPECT_EQ(find_config("tiny")->array_rows, 4u);
  EXPECT_EQ(find_config("small")->array_cols, 8u);
  EXPECT_EQ(find_config("default")->array_rows, 16u);
  EXPECT_EQ(find_config("nope"), nullptr);
}
