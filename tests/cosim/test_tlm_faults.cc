// The tlm backend's memory faults: an address-range SLVERR or DECERR on a
// LOAD or STORE is reported through the error registers exactly as the rtl
// backend (or, without a verilated model, the ref backend) reports it, and the
// core recovers; stalls only add cycles; burst-number faults and malformed
// variables are refused with one line.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "fault_rig.h"
#include "tlm/tlm_device.h"

namespace loom::cosim_test {
namespace {

using tlm::FaultPlan;

bool rtl_built() {
  for (auto n : rtl::rtl_configs())
    if (n == "tiny") return true;
  return false;
}

/// The report of the backend the tlm one must match: rtl when built, else ref.
CoreReport reference_report(const FaultCase& c) {
  if (rtl_built()) {
    rtl::RtlOptions opt;
    opt.mem.read_latency = opt.mem.write_latency = tiny().mem_latency_cycles;
    auto d = rtl::make_rtl_device(tiny(), opt);
    EXPECT_TRUE(d.is_ok());
    if (!d.is_ok()) return {};
    rtl::RtlDevice* raw = d->get();
    Rig r(std::move(*d));
    auto rep = run_fault_case(
        r, c, [&](uint64_t a, uint64_t n, hw::FaultKind k) { raw->inject_fault(a, n, k); },
        [&] { raw->clear_faults(); });
    EXPECT_TRUE(raw->health().is_ok()) << raw->health().str();
    return rep;
  }
  auto d = std::make_unique<ref::RefDevice>(tiny());
  ref::RefDevice* raw = d.get();
  Rig r(std::move(d));
  return run_fault_case(
      r, c, [&](uint64_t a, uint64_t n, hw::FaultKind k) { raw->inject_fault(a, n, k); },
      [&] { raw->clear_faults(); });
}

TEST(TlmFaults, AddressRangeFaultsReportLikeRtlAndRecover) {
  for (const FaultCase& c : kFaultCases) {
    SCOPED_TRACE(c.what);
    const CoreReport want = reference_report(c);
    auto d = tlm::make_tlm_device(tiny());
    ASSERT_TRUE(d.is_ok()) << d.error().str();
    runtime::Device* raw = d->get();
    Rig r(std::move(*d));
    FaultPlan plan;
    const CoreReport got = run_fault_case(
        r, c,
        [&](uint64_t a, uint64_t n, hw::FaultKind k) {
          plan.ranges.push_back({a, n, k});
          EXPECT_TRUE(tlm::set_faults(*raw, plan).is_ok());
        },
        [&] {
          plan = FaultPlan{};
          EXPECT_TRUE(tlm::set_faults(*raw, plan).is_ok());
        });
    EXPECT_EQ(got, want);
  }
}

TEST(TlmFaults, OptionRangeFaultReachesTheDevice) {
  // The first allocation of a fresh device is at DeviceMemory::kBase: the
  // ring (64 entries), then the pattern, 64-byte aligned after it.
  const uint64_t src = hw::DeviceMemory::kBase + 64 * spec::kInsnBytes;
  const std::string v = "decerr@" + std::to_string(src + 100) + "+1";
  runtime::DeviceOptions o;
  o.mem_faults = v;
  auto d = tlm::make_tlm_device(tiny(), o);
  ASSERT_TRUE(d.is_ok()) << d.error().str();
  Rig r(std::move(*d));
  const Bufs b = make_bufs(r);
  ASSERT_EQ(b.src, src);
  ASSERT_TRUE(r.run(copy_stream(b)).is_ok());
  EXPECT_EQ(r.creg(cr::ERR_CAUSE), spec::err::AXI_DECERR);
  EXPECT_EQ(r.creg(cr::ERR_PC), 1u);
}

TEST(TlmFaults, StallsAddCyclesAndKeepResults) {
  uint64_t plain = 0;
  for (uint32_t stall : {0u, 200u}) {
    auto d = tlm::make_tlm_device(tiny());
    ASSERT_TRUE(d.is_ok()) << d.error().str();
    runtime::Device* raw = d->get();
    FaultPlan plan;
    plan.stall_cycles = stall;
    ASSERT_TRUE(tlm::set_faults(*raw, plan).is_ok());
    Rig r(std::move(*d));
    const Bufs b = make_bufs(r);
    const uint64_t t0 = r.dev().cycles();
    ASSERT_TRUE(r.run(copy_stream(b)).is_ok());
    EXPECT_EQ(r.get(b.dst, 256), copy_want(b));
    const uint64_t took = r.dev().cycles() - t0;
    if (stall == 0)
      plain = took;
    else
      EXPECT_GE(took, plain + 2 * stall) << "plain " << plain;  // fetch, load and store bursts wait in turn
  }
}

TEST(TlmFaults, BurstNumberFaultsAndBadOptionsAreRefused) {
  runtime::DeviceOptions nth_opt;
  nth_opt.mem_faults = "slverr#3";
  auto d = tlm::make_tlm_device(tiny(), nth_opt);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.error().str().find("cosim only"), std::string::npos) << d.error().str();
  runtime::DeviceOptions stall;
  stall.mem_stall = "lots";
  stall.source["mem_stall"] = "LOOM_SIM_STALL";
  auto e = tlm::make_tlm_device(tiny(), stall);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.error().str().rfind("LOOM_SIM_STALL: ", 0), 0u) << e.error().str();
  EXPECT_EQ(e.error().str().find('\n'), std::string::npos);
  runtime::DeviceOptions wave;
  wave.wave = "x.fst";
  wave.source["wave"] = "--wave";
  auto w = tlm::make_tlm_device(tiny(), wave);
  ASSERT_FALSE(w.is_ok());
  EXPECT_EQ(w.error().str().rfind("--wave: the tlm backend does not take this option", 0), 0u) << w.error().str();
  auto ok = tlm::make_tlm_device(tiny());
  ASSERT_TRUE(ok.is_ok()) << ok.error().str();
  FaultPlan nth;
  nth.nth_burst = 2;
  EXPECT_FALSE(tlm::set_faults(**ok, nth).is_ok());
}

}  // namespace
}  // namespace loom::cosim_test
