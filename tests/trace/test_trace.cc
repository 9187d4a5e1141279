// The trace recorder and the tlm backend's timelines in one process: the
// JSON is valid trace-event JSON, failed writes leave nothing, and a traced
// tlm run keeps its cycle count and reports disjoint intervals whose compute
// time equals the cores' cycles_compute counters.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "compiler/compiler.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "device/trace.h"
#include "tlm/tlm_device.h"

namespace loom {
namespace {

using runtime::TraceRecorder;
using runtime::TraceTrack;

std::string temp_dir() {
  const auto d = std::filesystem::temp_directory_path() / ("loom_trace_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(TraceRecorder, JsonIsTraceEventFormat) {
  TraceRecorder r;
  r.interval(1, TraceTrack::Gemm, "GEMM", 130, 150, "m=4 \"quoted\"\n");
  r.instant(0, "doorbell", 100);
  r.interval(0, TraceTrack::Load, "LOAD", 105, 125);
  r.interval(0, TraceTrack::Load, "empty", 126, 126);  // zero length: dropped
  EXPECT_EQ(r.events().size(), 3u);
  EXPECT_EQ(r.origin(), 100u);

  const auto j = nlohmann::json::parse(r.to_json("tlm", "tiny", 250, 2, 50));
  EXPECT_EQ(j["otherData"]["clock_mhz"], 250);
  EXPECT_EQ(j["otherData"]["cycles"], 50);
  int x = 0, inst = 0, names = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M") {
      ++names;
      continue;
    }
    if (ph == "i") {
      ++inst;
      EXPECT_EQ(e["ts"].get<double>(), 0.0);  // the doorbell is time zero
      continue;
    }
    ASSERT_EQ(ph, "X");
    ++x;
    if (e["name"] == "GEMM") {
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["tid"], int(TraceTrack::Gemm));
      EXPECT_EQ(e["args"]["begin_cycle"], 30);
      EXPECT_EQ(e["args"]["cycles"], 20);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 30.0 / 250);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 20.0 / 250);
      EXPECT_EQ(e["args"]["detail"], "m=4 \"quoted\"\n");
    }
  }
  EXPECT_EQ(x, 2);
  EXPECT_EQ(inst, 1);
  EXPECT_EQ(names, 2 * (1 + 2 * int(runtime::kNumTraceTracks + 1)));  // process + per-track name and order
}

TEST(TraceRecorder, FailedWriteLeavesNothing) {
  TraceRecorder r;
  r.instant(0, "doorbell", 0);
  const std::string dir = temp_dir();
  // A missing directory, and a path that is a directory.
  auto s = r.write_json(dir + "/missing/t.json", "tlm", "tiny", 250, 2, 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().str().find("cannot write the trace"), std::string::npos) << s.error().str();
  std::filesystem::create_directories(dir + "/adir");
  ASSERT_FALSE(r.write_json(dir + "/adir", "tlm", "tiny", 250, 2, 0));
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/adir"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // only adir: no temporary file left behind
  // A good path gets exactly to_json().
  ASSERT_TRUE(r.write_json(dir + "/t.json", "tlm", "tiny", 250, 2, 0));
  std::ifstream f(dir + "/t.json");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), r.to_json("tlm", "tiny", 250, 2, 0));
  std::filesystem::remove_all(dir);
}

Expected<runtime::RunResult> run_demo(const spec::HwConfig& cfg, TraceRecorder* rec) {
  auto g = ir::parse_graph_json(std::string(LOOM_SOURCE_DIR) + "/examples/demo_cnn.json");
  if (!g) return g.error();
  auto comp = compiler::compile(*g, cfg, compiler::CompileOptions{});
  if (!comp) return comp.error();
  auto dev = tlm::make_tlm_device(cfg);
  if (!dev) return dev.error();
  if (rec != nullptr && !(*dev)->set_trace(rec)) return make_error("tlm", "set_trace refused");
  auto res = runtime::execute(**dev, comp->plan, ir::random_inputs(*g, 1));
  (*dev)->set_trace(nullptr);
  return res;
}

TEST(TlmTrace, DemoTimelines) {
  for (const char* name : {"tiny", "default"}) {
    const spec::HwConfig& cfg = *spec::find_config(name);
    auto plain = run_demo(cfg, nullptr);
    ASSERT_TRUE(plain) << plain.error().str();
    TraceRecorder rec;
    auto traced = run_demo(cfg, &rec);
    ASSERT_TRUE(traced) << traced.error().str();
    EXPECT_EQ(traced->cycles, plain->cycles) << name << ": tracing changed the timing";

    const uint64_t t0 = rec.origin();
    std::map<std::pair<unsigned, int>, std::vector<std::pair<uint64_t, uint64_t>>> tracks;
    std::vector<uint64_t> compute(cfg.cores, 0);
    int doorbells = 0;
    for (const auto& e : rec.events()) {
      ASSERT_LT(e.core, cfg.cores);
      if (e.track < 0) {
        doorbells += e.name == "doorbell";
        continue;
      }
      ASSERT_GE(e.begin, t0);
      ASSERT_LE(e.end - t0, traced->cycles) << name << " " << e.name;
      tracks[{e.core, e.track}].push_back({e.begin, e.end});
      if (e.track == int(TraceTrack::Gemm) || e.track == int(TraceTrack::PostOp)) compute[e.core] += e.end - e.begin;
    }
    EXPECT_GE(doorbells, int(cfg.cores));
    for (auto& [key, v] : tracks) {
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i < v.size(); ++i)
        ASSERT_LE(v[i - 1].second, v[i].first) << name << ": overlap on core " << key.first << " track " << key.second;
    }
    for (unsigned c = 0; c < cfg.cores; ++c) {
      EXPECT_EQ(compute[c], traced->cores[c].counters[size_t(spec::Counter::CYCLES_COMPUTE)]) << name << " core " << c;
      EXPECT_TRUE(tracks.count({c, int(TraceTrack::Load)})) << name << " core " << c << " has no loads";
    }
  }
}

}  // namespace
}  // namespace loom
