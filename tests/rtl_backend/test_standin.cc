// RtlDevice on the stand-in fabric: AXI4-Lite register access, backdoor memory,
// burst traffic through the memory model and checker, idle detection,
// timeouts, AXI error responses and FST tracing.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/rtl/rtl_device.h"
#include "standin_models.h"

namespace loom::rtl {
namespace {

namespace cr = spec::core_reg;

std::unique_ptr<RtlDevice> make(const char* cfg_name, RtlOptions opt = {}) {
  const spec::HwConfig& cfg = *spec::find_config(cfg_name);
  return std::make_unique<RtlDevice>(
      cfg, [&](bool tracing) { return test::make_standin(cfg_name, tracing); }, opt);
}

/// Writes `n` 32-byte records at the ring and lets the stand-in's copy engine
/// move them to the window base.
void copy(RtlDevice& d, uint64_t ring, uint64_t dst, uint32_t n, uint32_t ring_size = 64) {
  d.write_reg(spec::core_reg_addr(0, cr::RING_BASE_LO), uint32_t(ring));
  d.write_reg(spec::core_reg_addr(0, cr::RING_BASE_HI), uint32_t(ring >> 32));
  d.write_reg(spec::core_reg_addr(0, cr::RING_SIZE), ring_size);
  d.write_reg(spec::core_reg_addr(0, cr::WIN_BASE_LO), uint32_t(dst));
  d.write_reg(spec::core_reg_addr(0, cr::WIN_BASE_HI), uint32_t(dst >> 32));
  d.write_reg(spec::core_reg_addr(0, cr::RING_TAIL), n);
  d.write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1);
}

class Standin : public ::testing::TestWithParam<const char*> {};

TEST_P(Standin, RegistersOverAxiLite) {
  auto d = make(GetParam());
  const spec::HwConfig& cfg = d->config();
  EXPECT_EQ(d->read_reg(spec::reg::ID), spec::kIdValue);
  EXPECT_EQ(d->read_reg(spec::reg::VERSION), spec::kVersion);
  EXPECT_EQ(d->read_reg(spec::reg::HWCFG),
            cfg.cores | cfg.array_rows << 8 | cfg.array_cols << 16 | cfg.mem_ports << 24);
  const uint64_t before = d->cycles();
  d->write_reg(spec::reg::SCRATCH, 0xC0FFEE11u);
  EXPECT_EQ(d->read_reg(spec::reg::SCRATCH), 0xC0FFEE11u);
  EXPECT_GT(d->cycles(), before);  // register accesses clock the fabric
  EXPECT_TRUE(d->has_time());
  EXPECT_TRUE(d->health().is_ok()) << d->health().str();
}

TEST_P(Standin, CopyEngineThroughMemoryModel) {
  RtlOptions opt;
  opt.mem.read_latency = 13;
  opt.mem.write_latency = 5;
  opt.mem.stall_prob = 0.25;
  opt.mem.seed = 42;
  std::printf("memory seed %llu\n", static_cast<unsigned long long>(opt.mem.seed));
  auto d = make(GetParam(), opt);
  const uint64_t ring = *d->alloc(64 * 32);
  const uint64_t dst = *d->alloc(64 * 32);
  std::vector<uint8_t> src(20 * 32);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 13 + 1);
  ASSERT_TRUE(d->write(ring, src).is_ok());
  copy(*d, ring, dst, 20);
  const Status s = d->run_until_idle(1'000'000);
  ASSERT_TRUE(s.is_ok()) << s.str();
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::STATUS)) & 7u, 2u);  // done, not busy, no error
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::RING_HEAD)), 20u);
  std::vector<uint8_t> got(src.size());
  ASSERT_TRUE(d->read(dst, got).is_ok());
  EXPECT_EQ(got, src);
  EXPECT_EQ(d->memory_port(0).stats().read_bursts, 20u);
  EXPECT_EQ(d->memory_port(0).stats().write_bursts, 20u);
  EXPECT_EQ(d->checker(0).violations(), 0u);
  EXPECT_GT(d->checker(0).cycles(), 20u * 13u);
}

TEST_P(Standin, AxiErrorsReachTheCore) {
  auto d = make(GetParam());
  const uint64_t ring = *d->alloc(64 * 32);
  const uint64_t dst = *d->alloc(64 * 32);
  d->inject_fault(ring + 3 * 32, 4, hw::FaultKind::SlvErr);
  copy(*d, ring, dst, 8);
  ASSERT_TRUE(d->run_until_idle(100'000).is_ok());
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::ERR_CAUSE)), spec::err::AXI_SLVERR);
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::RING_HEAD)), 3u);
  // Writing into unallocated memory answers DECERR.
  d->clear_faults();
  d->write_reg(spec::reg::SOFT_RESET, 1);
  copy(*d, ring, 0x7000'0000ull, 2);
  ASSERT_TRUE(d->run_until_idle(100'000).is_ok());
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::ERR_CAUSE)), spec::err::AXI_DECERR);
  EXPECT_TRUE(d->health().is_ok()) << d->health().str();
}

TEST_P(Standin, TimeoutIsAnError) {
  RtlOptions opt;
  opt.mem.read_latency = 500;
  auto d = make(GetParam(), opt);
  const uint64_t ring = *d->alloc(64 * 32);
  const uint64_t dst = *d->alloc(64 * 32);
  copy(*d, ring, dst, 4);
  const Status s = d->run_until_idle(300);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.str().find("timeout"), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("busy cores: 0"), std::string::npos) << s.str();
  // The run can be continued.
  EXPECT_TRUE(d->run_until_idle(100'000).is_ok());
  EXPECT_EQ(d->read_reg(spec::core_reg_addr(0, cr::RING_HEAD)), 4u);
}

TEST_P(Standin, TracesToFst) {
  const std::string path = std::string(::testing::TempDir()) + "rtl_standin_" + GetParam() + ".fst";
  std::filesystem::remove(path);
  {
    RtlOptions opt;
    opt.trace_path = path;
    auto d = make(GetParam(), opt);
    d->write_reg(spec::reg::SCRATCH, 1);
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_GT(std::filesystem::file_size(path), 100u);
}

INSTANTIATE_TEST_SUITE_P(Configs, Standin, ::testing::Values("tiny", "small"));

}  // namespace
}  // namespace loom::rtl
