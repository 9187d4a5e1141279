// Accuracy and speed report of the tlm backend: cycles per GEMM/convolution
// shape against RTL cycles (mean and worst relative error), and simulated
// cycles per wall second on the demo network. RTL cycles come from
// docs/performance.md, or are measured live when LOOM_TLM_RTL_LOOM names a
// `loom` binary with the rtl backend (run as a separate process, so Verilator
// and SystemC never share one). Printed only; a functional mismatch with ref
// fails, an inaccuracy does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "backends/ref/ref_device.h"
#include "tlm/tlm_device.h"
#include "workloads.h"

namespace loom::tlm_test {
namespace {

struct RtlRow {
  const char* config;
  const char* kind;  // "gemm" or a conv layer name
  int64_t m, n, k;   // GEMM shape (unused for conv)
  uint64_t rtl_cycles;
};

// docs/performance.md, "RTL cycles against the roofline" (RTL of 7ee7833).
constexpr RtlRow kRtl[] = {
    {"tiny", "gemm", 64, 64, 64, 13324},
    {"tiny", "gemm", 128, 128, 128, 80380},
    {"tiny", "gemm", 256, 256, 256, 574656},
    {"tiny", "gemm", 512, 512, 512, 4452134},
    {"tiny", "gemm", 1024, 64, 256, 574656},
    {"tiny", "gemm", 49, 2048, 512, 1871578},
    {"tiny", "res2_3x3_64", 0, 0, 0, 3923576},
    {"tiny", "res3_1x1_128_512", 0, 0, 0, 1850640},
    {"tiny", "res4_3x3_256", 0, 0, 0, 4060050},
    {"tiny", "res5_3x3_512", 0, 0, 0, 4443826},
    {"tiny", "res5_1x1_2048_512", 0, 0, 0, 1984792},
    {"small", "gemm", 64, 64, 64, 4490},
    {"small", "gemm", 128, 128, 128, 17810},
    {"small", "gemm", 256, 256, 256, 93506},
    {"small", "gemm", 512, 512, 512, 609806},
    {"small", "gemm", 1024, 64, 256, 93508},
    {"small", "gemm", 49, 2048, 512, 317856},
    {"small", "res2_3x3_64", 0, 0, 0, 567738},
    {"small", "res3_1x1_128_512", 0, 0, 0, 347286},
    {"small", "res4_3x3_256", 0, 0, 0, 628060},
    {"small", "res5_3x3_512", 0, 0, 0, 543652},
    {"small", "res5_1x1_2048_512", 0, 0, 0, 248612},
    {"default", "gemm", 64, 64, 64, 4708},
    {"default", "gemm", 128, 128, 128, 12630},
    {"default", "gemm", 256, 256, 256, 45628},
    {"default", "gemm", 512, 512, 512, 214576},
    {"default", "gemm", 1024, 64, 256, 53922},
    {"default", "gemm", 49, 2048, 512, 99284},
    {"default", "res2_3x3_64", 0, 0, 0, 283372},
    {"default", "res3_1x1_128_512", 0, 0, 0, 199936},
    {"default", "res4_3x3_256", 0, 0, 0, 194416},
    {"default", "res5_3x3_512", 0, 0, 0, 175208},
    {"default", "res5_1x1_2048_512", 0, 0, 0, 91286},
    // examples/demo_cnn.json (docs/performance.md summary: demo on rtl).
    {"tiny", "demo", 0, 0, 0, 194210},
    {"small", "demo", 0, 0, 0, 115072},
    {"default", "demo", 0, 0, 0, 148732},
};

// The ResNet-50 shapes of `loom bench conv` used above.
constexpr ConvShape kConvs[] = {
    {"res2_3x3_64", 56, 64, 64, 3, 1, 1},        {"res3_1x1_128_512", 28, 128, 512, 1, 1, 0},
    {"res4_3x3_256", 14, 256, 256, 3, 1, 1},     {"res5_3x3_512", 7, 512, 512, 3, 1, 1},
    {"res5_1x1_2048_512", 7, 2048, 512, 1, 1, 0},
};

/// The `loom bench` arguments that build the row's workload.
std::string bench_args(const RtlRow& r) {
  if (std::string(r.kind) == "gemm")
    return "gemm --m " + std::to_string(r.m) + " --n " + std::to_string(r.n) + " --k " + std::to_string(r.k);
  return std::string("conv --layer ") + r.kind;
}

/// The `loom` command (after the binary) that runs the row on the RTL.
std::string rtl_args(const RtlRow& r) {
  const std::string tail = std::string(" --config ") + r.config + " --backend rtl --json";
  if (std::string(r.kind) == "demo") return "run " + std::string(LOOM_SOURCE_DIR) + "/examples/demo_cnn.json" + tail;
  return "bench " + bench_args(r) + tail;
}

/// RTL cycles measured by `loom bench ... --backend rtl --json` in a child
/// process; 0 when the run fails.
uint64_t measure_rtl(const std::string& loom, const RtlRow& r) {
  const std::string cmd = loom + " " + rtl_args(r) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return 0;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p.get())) > 0;) out.append(buf, n);
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("\"cycles\": ([0-9]+)"))) return 0;
  return std::stoull(m[1].str());
}

ir::Graph graph_for(const RtlRow& r) {
  if (std::string(r.kind) == "gemm") return gemm_graph(r.m, r.n, r.k);
  if (std::string(r.kind) == "demo") {
    auto g = ir::parse_graph_json(std::string(LOOM_SOURCE_DIR) + "/examples/demo_cnn.json");
    if (!g) throw std::runtime_error(g.error().str());
    return std::move(*g);
  }
  for (const auto& c : kConvs)
    if (std::string(r.kind) == c.name) return conv_graph(c);
  throw std::runtime_error("unknown workload");
}

TEST(TlmAccuracy, CyclesAgainstRtl) {
  // Live RTL runs cost real time (20-400 k cycles/s): rows above
  // LOOM_TLM_RTL_MAX_CYCLES (default 1 M, by the documented count) are skipped then.
  // LOOM_TLM_ACCURACY_CONFIGS (comma-separated) restricts the configurations.
  const char* live = std::getenv("LOOM_TLM_RTL_LOOM");
  const char* max_env = std::getenv("LOOM_TLM_RTL_MAX_CYCLES");
  const char* configs = std::getenv("LOOM_TLM_ACCURACY_CONFIGS");
  const uint64_t limit = live == nullptr ? ~uint64_t(0) : max_env ? std::strtoull(max_env, nullptr, 0) : 1'000'000;
  std::printf("\nRTL cycles: %s\n", live ? "measured live" : "docs/performance.md (RTL of commit 7ee7833)");
  std::printf("\n%-8s %-20s %10s %10s %8s %12s\n", "config", "workload", "rtl", "tlm", "error", "tlm cyc/s");
  struct Stats {
    double sum = 0, worst = 0;
    std::string worst_name;
    int n = 0;
    void add(double err, const std::string& name) {
      sum += std::fabs(err);
      if (std::fabs(err) > worst) worst = std::fabs(err), worst_name = name;
      ++n;
    }
    double mean() const { return n ? sum / n : 0; }
  };
  std::map<std::string, Stats> per_config;
  Stats all;
  int failed = 0;
  for (const RtlRow& r : kRtl) {
    if (r.rtl_cycles > limit) continue;
    if (configs != nullptr && (std::string(",") + configs + ",").find(std::string(",") + r.config + ",") == std::string::npos)
      continue;
    const uint64_t rtl_cycles = live ? measure_rtl(live, r) : r.rtl_cycles;
    if (rtl_cycles == 0) {
      std::printf("%-8s %-20s rtl run failed: %s %s\n", r.config, r.kind, live, rtl_args(r).c_str());
      ++failed;
      continue;
    }
    const spec::HwConfig* cfg = spec::find_config(r.config);
    ASSERT_NE(cfg, nullptr);
    const std::string name = std::string(r.kind) == "gemm" ? "gemm " + std::to_string(r.m) + "x" +
                                                                 std::to_string(r.n) + "x" + std::to_string(r.k)
                                                           : std::string(r.kind);
    auto dev = tlm::make_tlm_device(*cfg);
    ASSERT_TRUE(dev) << dev.error().str();
    auto run = compile_and_run(graph_for(r), **dev);
    ASSERT_TRUE(run) << name << ": " << run.error().str();
    const double tlm = double(run->result.cycles);
    const double err = (tlm - double(rtl_cycles)) / double(rtl_cycles);
    std::printf("%-8s %-20s %10llu %10.0f %+7.1f%% %12.0f\n", r.config, name.c_str(),
                (unsigned long long)rtl_cycles, tlm, 100 * err, tlm / std::max(run->wall_seconds, 1e-9));
    per_config[r.config].add(err, name);
    all.add(err, std::string(r.config) + " " + name);
  }
  ASSERT_GT(all.n, 0);
  for (const auto& [c, st] : per_config)
    std::printf("%-8s %2d workloads: mean |error| %.1f%%, worst %.1f%% (%s)\n", c.c_str(), st.n, 100 * st.mean(),
                100 * st.worst, st.worst_name.c_str());
  std::printf("tlm vs rtl over %d workloads: mean |error| %.1f%%, worst %.1f%% (%s)\n\n", all.n, 100 * all.mean(),
              100 * all.worst, all.worst_name.c_str());
  // The gate of issue 4 applies when both sides are measured now; against
  // the documented table it is a report (a compiler change moves both).
  if (live != nullptr) {
    EXPECT_EQ(failed, 0) << "rtl runs failed";
    for (const auto& [c, st] : per_config) {
      EXPECT_LE(st.mean(), 0.03) << c << ": mean |error| over " << st.n << " workloads";
      EXPECT_LE(st.worst, 0.10) << c << ": worst |error| (" << st.worst_name << ")";
    }
  }
}

TEST(TlmSpeed, DemoSimulatedCyclesPerSecond) {
  auto g = ir::parse_graph_json(std::string(LOOM_SOURCE_DIR) + "/examples/demo_cnn.json");
  ASSERT_TRUE(g) << g.error().str();
  for (auto name : {"tiny", "small", "default"}) {
    auto dev = tlm::make_tlm_device(*spec::find_config(name));
    ASSERT_TRUE(dev) << dev.error().str();
    auto run = compile_and_run(*g, **dev);
    ASSERT_TRUE(run) << run.error().str();
    std::printf("demo_cnn on tlm/%s: %llu cycles in %.3f s wall = %.0f simulated cycles/s\n", name,
                (unsigned long long)run->result.cycles, run->wall_seconds,
                double(run->result.cycles) / std::max(run->wall_seconds, 1e-9));
  }
}

}  // namespace
}  // namespace loom::tlm_test
