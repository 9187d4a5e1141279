// The cosim backend: bit-exact with ref on compiled graphs, cycle counts next
// to the rtl backend's, the one-live-device rule, the fault plan's parser,
// and injected faults (address ranges, the n-th burst, stalls) reported
// through the error registers exactly as the rtl backend reports them.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "cosim/cosim_device.h"
#include "fault_rig.h"
#include "tlm/tlm_device.h"
#include "tlm/workloads.h"

namespace loom::cosim_test {
namespace {

using tlm::FaultPlan;

bool built(std::string_view cfg) {
  for (auto n : cosim::cosim_configs())
    if (n == cfg) return true;
  return false;
}

std::unique_ptr<runtime::Device> make_cosim(const FaultPlan& plan = {}) {
  cosim::CosimOptions opt;
  opt.faults = plan;
  auto d = cosim::make_cosim_device(tiny(), opt);
  EXPECT_TRUE(d.is_ok()) << (d.is_ok() ? "" : d.error().str());
  return d.is_ok() ? std::move(*d) : nullptr;
}

std::unique_ptr<rtl::RtlDevice> make_rtl() {
  rtl::RtlOptions opt;
  opt.mem.read_latency = opt.mem.write_latency = tiny().mem_latency_cycles;
  auto d = rtl::make_rtl_device(tiny(), opt);
  EXPECT_TRUE(d.is_ok()) << (d.is_ok() ? "" : d.error().str());
  return d.is_ok() ? std::move(*d) : nullptr;
}

class Cosim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!built("tiny")) GTEST_SKIP() << "tiny loom_fabric not verilated into this build";
  }
};

TEST_F(Cosim, GemmBitExactWithRefAndTimedLikeRtl) {
  const ir::Graph g = tlm_test::gemm_graph(37, 29, 53);
  auto refdev = ref::make_ref_device(tiny());
  ASSERT_TRUE(refdev);
  auto want = tlm_test::compile_and_run(g, **refdev);
  ASSERT_TRUE(want) << want.error().str();
  // One Verilated model alive at a time: Verilator unregisters a model's
  // scopes through the thread's current context (the last model built).
  Expected<tlm_test::Run> on_rtl = make_error("", "not run");
  {
    auto rtldev = make_rtl();
    ASSERT_NE(rtldev, nullptr);
    on_rtl = tlm_test::compile_and_run(g, *rtldev);
    ASSERT_TRUE(on_rtl) << on_rtl.error().str();
  }
  auto dev = make_cosim();
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->backend(), "cosim");
  EXPECT_TRUE(dev->has_time());
  auto got = tlm_test::compile_and_run(g, *dev);
  ASSERT_TRUE(got) << got.error().str();
  ASSERT_EQ(got->result.outputs.size(), want->result.outputs.size());
  for (size_t i = 0; i < want->result.outputs.size(); ++i)
    EXPECT_TRUE(got->result.outputs[i].second == want->result.outputs[i].second) << "output " << i << " differs from ref";
  for (spec::Counter k : {spec::Counter::MACS, spec::Counter::BYTES_RD, spec::Counter::BYTES_WR,
                          spec::Counter::INSN_LOAD, spec::Counter::INSN_COMPUTE, spec::Counter::INSN_STORE})
    EXPECT_EQ(got->result.cores[0].counters[size_t(k)], want->result.cores[0].counters[size_t(k)])
        << spec::kCounterNames[size_t(k)];
  // Same RTL, same memory latency; the memory channel arbitrates per burst
  // where the rtl backend's memory model arbitrates per beat, so cycles
  // agree closely but not exactly.
  const double rc = double(on_rtl->result.cycles), cc = double(got->result.cycles);
  std::cout << "[ cosim    ] gemm 37x29x53 on tiny: rtl " << rc << " cycles (" << on_rtl->wall_seconds << " s), cosim "
            << cc << " cycles (" << got->wall_seconds << " s)\n";
  EXPECT_NEAR(cc / rc, 1.0, 0.05);
  EXPECT_TRUE(cosim::health(*cosim::as_cosim(*dev)).is_ok());
}

TEST_F(Cosim, SecondLiveDeviceIsAOneLineError) {
  auto first = make_cosim();
  ASSERT_NE(first, nullptr);
  auto second = cosim::make_cosim_device(tiny());
  ASSERT_FALSE(second.is_ok());
  EXPECT_NE(second.error().str().find("another cosim device is alive"), std::string::npos) << second.error().str();
  EXPECT_EQ(second.error().str().find('\n'), std::string::npos);
  first.reset();
  auto third = cosim::make_cosim_device(tiny());
  EXPECT_TRUE(third.is_ok()) << (third.is_ok() ? "" : third.error().str());
}

// SystemC elaborates one platform per process: tlm after cosim is refused in
// one line (cosim after tlm likewise, by the cosim factory).
TEST_F(Cosim, TlmAfterCosimIsAOneLineError) {
  auto first = make_cosim();
  ASSERT_NE(first, nullptr);
  first.reset();
  auto t = tlm::make_tlm_device(tiny());
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.error().str().find("SystemC was already elaborated"), std::string::npos) << t.error().str();
  EXPECT_EQ(t.error().str().find('\n'), std::string::npos);
}

TEST_F(Cosim, UnbuiltConfigIsAOneLineError) {
  for (const char* n : {"small", "default"}) {
    if (built(n)) continue;
    auto d = cosim::make_cosim_device(*spec::find_config(n));
    ASSERT_FALSE(d.is_ok());
    EXPECT_NE(d.error().str().find("was not verilated into this build"), std::string::npos) << d.error().str();
  }
}

runtime::DeviceOptions mem_options(const char* faults, const char* stall) {
  runtime::DeviceOptions o;
  o.mem_faults = faults;
  o.mem_stall = stall;
  return o;
}

TEST(FaultPlanParse, AcceptsRangesBurstsAndStalls) {
  runtime::DeviceOptions o = mem_options("slverr@0x10000040+64,decerr@268435456+1,decerr#7", "30:0.5");
  o.seed = 9;
  auto p = FaultPlan::from_options(o);
  ASSERT_TRUE(p) << p.error().str();
  ASSERT_EQ(p->ranges.size(), 2u);
  EXPECT_EQ(p->ranges[0].addr, 0x10000040u);
  EXPECT_EQ(p->ranges[0].len, 64u);
  EXPECT_EQ(p->ranges[0].kind, hw::FaultKind::SlvErr);
  EXPECT_EQ(p->ranges[1].addr, 268435456u);
  EXPECT_EQ(p->ranges[1].kind, hw::FaultKind::DecErr);
  EXPECT_EQ(p->nth_burst, 7u);
  EXPECT_EQ(p->nth_kind, hw::FaultKind::DecErr);
  EXPECT_EQ(p->stall_cycles, 30u);
  EXPECT_DOUBLE_EQ(p->stall_prob, 0.5);
  EXPECT_EQ(p->seed, 9u);
  // The last byte of the address space is a range of its own.
  auto last = FaultPlan::from_options(mem_options("slverr@0xffffffffffffffff+1", ""));
  ASSERT_TRUE(last) << last.error().str();
  EXPECT_EQ(last->ranges.at(0).addr, ~uint64_t(0));
  auto none = FaultPlan::from_options({});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->any());
}

TEST(FaultPlanParse, RejectsMalformedValuesWithOneLine) {
  struct Bad {
    const char *fault, *stall, *names;
  };
  const Bad bad[] = {
      {"slverr", "", "mem_faults"},     {"oops@1+2", "", "mem_faults"},          {"slverr@1+0", "", "mem_faults"},
      {"decerr#0", "", "mem_faults"},   {"decerr#x", "", "mem_faults"},          {"slverr#1,decerr#2", "", "mem_faults"},
      {"slverr@-1+4", "", "mem_faults"}, {"", "ten", "mem_stall"},               {"", "10:2", "mem_stall"},
      {"", "10:", "mem_stall"},
      // Empty items and trailing separators, numbers that are not plain, ranges past 2^64.
      {"slverr@0x100+16,", "", "mem_faults"}, {",slverr@1+2", "", "mem_faults"},
      {"slverr@1+2,,decerr@3+4", "", "mem_faults"}, {"slverr@0xffffffffffffffff+16", "", "mem_faults"},
      {"slverr@ 5+1", "", "mem_faults"},      {"slverr@010+1", "", "mem_faults"},
      {"slverr@+5+1", "", "mem_faults"},      {"slverr@0x+1", "", "mem_faults"},
      {"", "10: 0.5", "mem_stall"},           {"", "10:1e-400", "mem_stall"},
  };
  for (const Bad& b : bad) {
    auto p = FaultPlan::from_options(mem_options(b.fault, b.stall));
    ASSERT_FALSE(p.is_ok()) << b.fault << " / " << b.stall;
    EXPECT_EQ(p.error().str().rfind(b.names, 0), 0u) << p.error().str();
    EXPECT_EQ(p.error().str().find('\n'), std::string::npos);
  }
  // Errors name where an option came from (the CLI's flag or variable).
  runtime::DeviceOptions o = mem_options("slverr", "");
  o.source["mem_faults"] = "LOOM_SIM_FAULT";
  auto p = FaultPlan::from_options(o);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.error().str().rfind("LOOM_SIM_FAULT: 'slverr'", 0), 0u) << p.error().str();
}

TEST_F(Cosim, MalformedOrForeignOptionsFailTheFactory) {
  runtime::DeviceOptions o;
  o.mem_faults = "slverr@nowhere";
  o.source["mem_faults"] = "--mem-faults";
  auto d = cosim::make_cosim_device(tiny(), o);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.error().str().rfind("--mem-faults: ", 0), 0u) << d.error().str();
  runtime::DeviceOptions x;
  x.xclbin = "a.xclbin";
  auto e = cosim::make_cosim_device(tiny(), x);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.error().str().rfind("xclbin: the cosim backend does not take this option", 0), 0u) << e.error().str();
}

TEST_F(Cosim, AddressRangeFaultsReportLikeRtlAndRecover) {
  for (const FaultCase& c : kFaultCases) {
    SCOPED_TRACE(c.what);
    CoreReport on_rtl, on_cosim;
    {
      auto d = make_rtl();
      ASSERT_NE(d, nullptr);
      rtl::RtlDevice* raw = d.get();
      Rig r(std::move(d));
      on_rtl = run_fault_case(
          r, c, [&](uint64_t a, uint64_t n, hw::FaultKind k) { raw->inject_fault(a, n, k); },
          [&] { raw->clear_faults(); });
      EXPECT_TRUE(raw->health().is_ok()) << raw->health().str();
    }
    {
      auto d = make_cosim();
      ASSERT_NE(d, nullptr);
      cosim::CosimDevice* cd = cosim::as_cosim(*d);
      ASSERT_NE(cd, nullptr);
      Rig r(std::move(d));
      on_cosim = run_fault_case(
          r, c, [&](uint64_t a, uint64_t n, hw::FaultKind k) { cosim::inject_fault(*cd, a, n, k); },
          [&] { cosim::clear_faults(*cd); });
      EXPECT_TRUE(cosim::health(*cd).is_ok()) << cosim::health(*cd).str();
    }
    EXPECT_EQ(on_cosim, on_rtl);
  }
}

TEST_F(Cosim, EveryBurstCanFailAndTheCoreRecovers) {
  // Count the bursts of the fault-free stream, then fail each in turn.
  uint64_t total = 0;
  {
    auto d = make_cosim();
    ASSERT_NE(d, nullptr);
    cosim::CosimDevice* cd = cosim::as_cosim(*d);
    Rig r(std::move(d));
    const Bufs b = make_bufs(r);
    ASSERT_TRUE(r.run(copy_stream(b)).is_ok());
    EXPECT_EQ(r.get(b.dst, 256), copy_want(b));
    total = cosim::bursts(*cd);
  }
  ASSERT_GE(total, 3u);  // fetch, load, store at least
  for (hw::FaultKind kind : {hw::FaultKind::SlvErr, hw::FaultKind::DecErr}) {
    for (uint64_t n = 1; n <= total; ++n) {
      SCOPED_TRACE("burst " + std::to_string(n) + (kind == hw::FaultKind::SlvErr ? " SLVERR" : " DECERR"));
      FaultPlan plan;
      plan.nth_burst = n;
      plan.nth_kind = kind;
      auto d = make_cosim(plan);
      ASSERT_NE(d, nullptr);
      cosim::CosimDevice* cd = cosim::as_cosim(*d);
      Rig r(std::move(d));
      const Bufs b = make_bufs(r);
      ASSERT_TRUE(r.run(copy_stream(b)).is_ok());
      EXPECT_EQ(cosim::injected(*cd), 1u);
      EXPECT_EQ(r.creg(cr::ERR_CAUSE), cause_of(kind));
      EXPECT_EQ(r.creg(cr::STATUS), kError);
      EXPECT_NE(r.dev().read_reg(spec::reg::STATUS) & (1u << 8), 0u) << "global error bit";
      EXPECT_TRUE(cosim::health(*cd).is_ok()) << cosim::health(*cd).str();
      cosim::clear_faults(*cd);
      r.soft_reset();
      ASSERT_TRUE(r.run(copy_stream(b)).is_ok());
      EXPECT_EQ(r.creg(cr::STATUS), kDone);
      EXPECT_EQ(r.get(b.dst, 256), copy_want(b));
    }
  }
}

TEST_F(Cosim, StallsAddLatencyNotErrors) {
  const ir::Graph g = tlm_test::gemm_graph(16, 16, 32);
  uint64_t plain = 0;
  decltype(runtime::RunResult::outputs) out;
  {
    auto d = make_cosim();
    ASSERT_NE(d, nullptr);
    auto run = tlm_test::compile_and_run(g, *d);
    ASSERT_TRUE(run) << run.error().str();
    plain = run->result.cycles;
    out = run->result.outputs;
  }
  FaultPlan plan;
  plan.stall_cycles = 100;
  auto d = make_cosim(plan);
  ASSERT_NE(d, nullptr);
  auto run = tlm_test::compile_and_run(g, *d);
  ASSERT_TRUE(run) << run.error().str();
  ASSERT_EQ(run->result.outputs.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(run->result.outputs[i].second == out[i].second);
  // Every burst waits 100 more cycles; the fetch and DMA bursts are serial
  // enough that at least a few of those show.
  EXPECT_GT(run->result.cycles, plain + 300) << "plain " << plain;
}

}  // namespace
}  // namespace loom::cosim_test
