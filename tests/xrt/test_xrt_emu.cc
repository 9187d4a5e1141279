// XrtDevice on the XRT emulation: device memory on BO arenas, syncs, register
// access and errors, below the CLI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <set>

#include "backends/xrt/xrt_device.h"

namespace loom::xrt_emu {
namespace {

const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

std::unique_ptr<XrtDevice> open_tiny(uint64_t arena_mib = 1) {
  XrtOptions o;
  o.arena_bytes = arena_mib << 20;
  auto d = std::make_unique<XrtDevice>(tiny(), o);
  EXPECT_TRUE(d->open_device().is_ok());
  auto u = d->load_xclbin();
  EXPECT_TRUE(u.is_ok()) << u.error().str();
  return d;
}

TEST(XrtEmu, RegistersReachTheRtl) {
  auto d = open_tiny();
  EXPECT_EQ(d->read_reg(spec::reg::ID), spec::kIdValue);
  EXPECT_TRUE(d->check_identity().is_ok());
  d->write_reg(spec::reg::SCRATCH, 0x12345678u);
  EXPECT_EQ(d->read_reg(spec::reg::SCRATCH), 0x12345678u);
}

TEST(XrtEmu, SubAllocatorReusesFreedSpaceAndGrowsArenas) {
  auto d = open_tiny(1);
  std::set<uint64_t> seen;
  std::vector<uint64_t> a;
  for (int i = 0; i < 8; ++i) {
    auto x = d->alloc(100'000, 4096);
    ASSERT_TRUE(x.is_ok());
    EXPECT_EQ(*x % 4096, 0u);
    EXPECT_TRUE(seen.insert(*x).second);
    a.push_back(*x);
  }
  // Disjoint: each block keeps its own bytes.
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<uint8_t> v(100'000, uint8_t(i + 1));
    ASSERT_TRUE(d->write(a[i], v).is_ok());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<uint8_t> v(100'000);
    ASSERT_TRUE(d->read(a[i], v).is_ok());
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), uint64_t(0)), uint64_t(i + 1) * 100'000) << i;
  }
  d->free(a[3]);
  auto again = d->alloc(100'000, 4096);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, a[3]);
  // Larger than an arena: its own arena.
  auto big = d->alloc(3 << 20, 4096);
  ASSERT_TRUE(big.is_ok());
  std::vector<uint8_t> v(3 << 20, 7), back(3 << 20);
  ASSERT_TRUE(d->write(*big, v).is_ok());
  ASSERT_TRUE(d->read(*big, back).is_ok());
  EXPECT_EQ(v, back);
}

TEST(XrtEmu, AccessOutsideAllocationsIsOneError) {
  auto d = open_tiny();
  auto a = d->alloc(4096, 4096);
  ASSERT_TRUE(a.is_ok());
  std::vector<uint8_t> v(4097);
  Status s = d->write(*a, v);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.str().find("outside every allocation"), std::string::npos) << s.str();
  d->free(*a);
  std::vector<uint8_t> one(1);
  EXPECT_FALSE(d->read(*a, one).is_ok());
}

TEST(XrtEmu, NoXclbinNoRegisters) {
  XrtDevice d(tiny(), XrtOptions{});
  ASSERT_TRUE(d.open_device().is_ok());
  EXPECT_EQ(d.read_reg(spec::reg::ID), 0xFFFFFFFFu);
  Status s = d.run_until_idle(100);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.str().find("before an xclbin was loaded"), std::string::npos) << s.str();
}

TEST(XrtEmu, NoSuchDevice) {
  XrtOptions o;
  o.device_index = 1;
  XrtDevice d(tiny(), o);
  Status s = d.open_device();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.str().find("no device with index 1"), std::string::npos) << s.str();
}

}  // namespace
}  // namespace loom::xrt_emu
