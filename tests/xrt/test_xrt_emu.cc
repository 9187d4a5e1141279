// XrtDevice on the XRT emulation: device memory on BO arenas, syncs, register
// access and errors, below the CLI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <set>

#include "backends/ref/ref_device.h"
#include "backends/xrt/hls_cus.h"
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

// ---- HLS compute units ------------------------------------------------------

/// A gemm unit call on device memory: a (M x K), b (K x N), params (N
/// channels), y (M x N), seeded operands; y starts filled with 0x5A.
struct GemmCall {
  static constexpr int32_t M = 24, N = 32, K = 40;
  uint64_t a = 0, b = 0, p = 0, y = 0;
  std::vector<uint8_t> ab, bb, pb;

  explicit GemmCall(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> i8(-128, 127), bias(-2000, 2000);
    ab.resize(M * K);
    bb.resize(K * N);
    for (auto& v : ab) v = uint8_t(i8(rng));
    for (auto& v : bb) v = uint8_t(i8(rng));
    std::vector<int32_t> prm;
    for (int j = 0; j < N; ++j) prm.insert(prm.end(), {bias(rng), int32_t(1u << 30) + j * 4096, 38});
    pb.resize(prm.size() * 4);
    std::memcpy(pb.data(), prm.data(), pb.size());
  }
  /// Allocates and writes the operands on `d`.
  void place(runtime::Device& d) {
    auto base = d.alloc(1 << 16, 4096);
    ASSERT_TRUE(base.is_ok()) << base.error().str();
    a = *base;
    b = a + 4096;
    p = a + 3 * 4096;
    y = a + 4 * 4096;
    ASSERT_TRUE(d.write(a, ab).is_ok());
    ASSERT_TRUE(d.write(b, bb).is_ok());
    ASSERT_TRUE(d.write(p, pb).is_ok());
    ASSERT_TRUE(d.write(y, std::vector<uint8_t>(M * N, 0x5A)).is_ok());
  }
  runtime::UnitCall call() const {
    return {"loom_hls_gemm", 0, {int64_t(a), int64_t(b), int64_t(p), int64_t(y), M, N, K, 3, -2, 5, -128, 127}};
  }
  std::vector<uint8_t> result(runtime::Device& d) const {
    std::vector<uint8_t> out(M * N);
    EXPECT_TRUE(d.read(y, out).is_ok());
    return out;
  }
};

/// The same call on the golden model's device.
std::vector<uint8_t> on_ref(const GemmCall& g0) {
  auto ref = ref::make_ref_device(tiny());
  EXPECT_TRUE(ref.is_ok());
  GemmCall g = g0;
  g.place(**ref);
  auto h = (*ref)->start_unit(g.call());
  EXPECT_TRUE(h.is_ok()) << h.error().str();
  EXPECT_TRUE((*ref)->wait_unit(*h, 0).is_ok());
  return g.result(**ref);
}

TEST(XrtEmuHls, GemmUnitCallIsBitExactWithRef) {
  auto d = open_tiny();
  ASSERT_EQ(d->hls_units_present().size(), xrt_cus::of_config(tiny()).size());
  GemmCall g(7);
  g.place(*d);
  auto h = d->start_unit(g.call());
  ASSERT_TRUE(h.is_ok()) << h.error().str();
  // Started, not waited for: the outputs are not there yet.
  EXPECT_EQ(g.result(*d), std::vector<uint8_t>(GemmCall::M * GemmCall::N, 0x5A));
  Status s = d->wait_unit(*h, 1'000'000);
  ASSERT_TRUE(s.is_ok()) << s.str();
  const auto got = g.result(*d);
  EXPECT_EQ(got, on_ref(g));
  EXPECT_NE(got, std::vector<uint8_t>(GemmCall::M * GemmCall::N, 0x5A));
  // The handle is gone once waited for.
  Status again = d->wait_unit(*h, 0);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.str().find("no HLS unit call"), std::string::npos) << again.str();
}

TEST(XrtEmuHls, HungUnitTimesOutIsAbortedAndTheDeviceRunsTheNextCall) {
  ASSERT_EQ(setenv("LOOM_XRT_EMU_FAULT", "unit-hang", 1), 0);
  XrtOptions o;
  o.arena_bytes = 1 << 20;
  o.timeout_ms = 1000;  // the second call must finish within it even on a slow (sanitized) build
  auto d = std::make_unique<XrtDevice>(tiny(), o);
  const bool opened = d->open_device().is_ok();  // the emulated card reads its fault here
  unsetenv("LOOM_XRT_EMU_FAULT");
  ASSERT_TRUE(opened);
  ASSERT_TRUE(d->load_xclbin().is_ok());
  GemmCall g(11);
  g.place(*d);
  auto h = d->start_unit(g.call());
  ASSERT_TRUE(h.is_ok()) << h.error().str();
  Status s = d->wait_unit(*h, 1000);
  ASSERT_FALSE(s.is_ok());
  const std::string m = s.str();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("compute unit loom_hls_gemm:{loom_hls_gemm_1}"), std::string::npos) << m;
  EXPECT_NE(m.find("did not complete within 1000 ms"), std::string::npos) << m;
  EXPECT_NE(m.find("aborted (state ABORT)"), std::string::npos) << m;
  // The aborted run wrote nothing.
  EXPECT_EQ(g.result(*d), std::vector<uint8_t>(GemmCall::M * GemmCall::N, 0x5A));
  // The unit takes the next call, and the cores still answer.
  auto h2 = d->start_unit(g.call());
  ASSERT_TRUE(h2.is_ok()) << h2.error().str();
  Status s2 = d->wait_unit(*h2, 1000);
  ASSERT_TRUE(s2.is_ok()) << s2.str();
  EXPECT_EQ(g.result(*d), on_ref(g));
  EXPECT_TRUE(d->check_identity().is_ok());
}

TEST(XrtEmuHls, BadCallsAreOneLineErrorsThatWriteNothing) {
  auto d = open_tiny();
  GemmCall g(3);
  g.place(*d);
  // A unit the configuration does not have.
  runtime::UnitCall c = g.call();
  c.unit = 1;
  auto h = d->start_unit(c);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.error().str().find("has 1 gemm unit"), std::string::npos) << h.error().str();
  // A kernel status: shift 0 is kBadParam; the run ends in ERROR.
  std::vector<int32_t> prm(GemmCall::N * 3, 0);
  std::vector<uint8_t> bad(prm.size() * 4);
  std::memcpy(bad.data(), prm.data(), bad.size());
  ASSERT_TRUE(d->write(g.p, bad).is_ok());
  auto hb = d->start_unit(g.call());
  ASSERT_TRUE(hb.is_ok()) << hb.error().str();
  Status s = d->wait_unit(*hb, 1000);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.str().find("loom_hls_gemm:{loom_hls_gemm_1}: run ended in state ERROR"), std::string::npos) << s.str();
  EXPECT_EQ(s.str().find('\n'), std::string::npos);
  EXPECT_EQ(g.result(*d), std::vector<uint8_t>(GemmCall::M * GemmCall::N, 0x5A));
  // A pointer outside every allocation.
  c = g.call();
  c.args[1] = int64_t(g.a) + (1 << 20) * 64;
  h = d->start_unit(c);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.error().str().find("argument 1"), std::string::npos) << h.error().str();
  EXPECT_NE(h.error().str().find("outside every allocation"), std::string::npos) << h.error().str();
  // Two calls on one unit without a wait between them.
  ASSERT_TRUE(d->write(g.p, g.pb).is_ok());
  auto h1 = d->start_unit(g.call());
  ASSERT_TRUE(h1.is_ok());
  auto h2 = d->start_unit(g.call());
  ASSERT_FALSE(h2.is_ok());
  EXPECT_NE(h2.error().str().find("busy"), std::string::npos) << h2.error().str();
  ASSERT_TRUE(d->wait_unit(*h1, 1000).is_ok());
  EXPECT_EQ(g.result(*d), on_ref(g));
}

TEST(XrtEmuHls, XclbinWithoutTheUnitSaysSo) {
  const std::string path = ::testing::TempDir() + "/loom_no_hls.xclbin";
  {
    std::ofstream f(path);
    f << "format: loom-emu-xclbin 1\nconfig: tiny\nip: loom_top:loom_top_1\nmem: 0 DDR[0]\n"
         "uuid: 01234567-89ab-cdef-0123-456789abcdef\n";
  }
  XrtOptions o;
  o.xclbin = path;
  XrtDevice d(tiny(), o);
  ASSERT_TRUE(d.open_device().is_ok());
  ASSERT_TRUE(d.load_xclbin().is_ok());
  EXPECT_TRUE(d.hls_units_present().empty());
  GemmCall g(5);
  g.place(d);
  auto h = d.start_unit(g.call());
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.error().str().find("compute unit loom_hls_gemm:{loom_hls_gemm_1}: not in xclbin"), std::string::npos)
      << h.error().str();
  std::remove(path.c_str());
}

TEST(XrtEmuHls, EmulatedXclbinsListTheSpecsUnitsByTheirLinkNames) {
  for (const char* name : {"tiny", "small", "default"}) {
    const auto* cfg = spec::find_config(name);
    ASSERT_NE(cfg, nullptr);
    const xrt::xclbin xb(std::string(LOOM_XRT_EMU_XCLBIN_DIR) + "/loom_" + name + ".xclbin");
    std::set<std::string> have, want;
    for (const auto& ip : xb.get_ips()) {
      const std::string n = ip.get_name();
      if (n.rfind("loom_top", 0) == 0) continue;
      have.insert(n.substr(0, n.find(':')) + ":{" + n.substr(n.find(':') + 1) + "}");
    }
    for (const auto& cu : xrt_cus::of_config(*cfg)) want.insert(cu.name);
    EXPECT_FALSE(want.empty()) << name;
    EXPECT_EQ(have, want) << name;
  }
}

}  // namespace
}  // namespace loom::xrt_emu
