// runtime::CoreJobs: one-core plans started on chosen cores while others run,
// and multi-core plans as one job on a gang of chosen cores, bit-exact with
// the plan executor, ends seen by interrupt or by polling, device errors and
// aborts recovered on the cores that had them.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "device/device.h"
#include "runtime/executor.h"
#include "runtime/jobs.h"

#include "backends/ref/ref_device.h"
#ifdef LOOM_HAVE_TLM
#include "tlm/tlm_device.h"
#endif

namespace loom::runtime {
namespace {

struct Model {
  ir::Graph g;
  plan::Plan p;
  std::map<std::string, Tensor> in;
};

Model chain(const char* config, int64_t rows, int layers, uint64_t seed, int cores = 1,
            compiler::Placement placement = compiler::Placement::Static) {
  ir::GraphBuilder b("chain", seed);
  std::string x = b.input("x", {rows, 64});
  for (int l = 0; l < layers; ++l) x = b.gemm(std::string("g").append(std::to_string(l)), x, 64);
  b.output(x);
  Model m;
  m.g = b.graph();
  compiler::CompileOptions co;
  co.num_cores = cores;
  co.placement = placement;
  auto r = compiler::compile(m.g, *spec::find_config(config), co);
  EXPECT_TRUE(r) << r.error().str();
  if (r) m.p = std::move(r->plan);
  m.in = ir::random_inputs(m.g, seed);
  return m;
}

std::unique_ptr<Device> device(const std::string& backend, const char* config) {
  const spec::HwConfig& cfg = *spec::find_config(config);
#ifdef LOOM_HAVE_TLM
  auto d = backend == "tlm" ? tlm::make_tlm_device(cfg) : ref::make_ref_device(cfg);
#else
  auto d = ref::make_ref_device(cfg);
#endif
  EXPECT_TRUE(d) << d.error().str();
  return d ? std::move(*d) : nullptr;
}

std::vector<std::pair<std::string, Tensor>> expected(const Model& m, const char* config) {
  auto ref = device("ref", config);
  auto r = execute(*ref, m.p, m.in);
  EXPECT_TRUE(r) << r.error().str();
  return r ? r->outputs : std::vector<std::pair<std::string, Tensor>>{};
}

void expect_same(const std::vector<std::pair<std::string, Tensor>>& a,
                 const std::vector<std::pair<std::string, Tensor>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.data, b[i].second.data) << "output " << a[i].first << " differs";
  }
}

/// Waits until `n` jobs have ended (bounded), collecting them.
std::vector<JobEnd> wait_for(CoreJobs& jobs, size_t n) {
  std::vector<JobEnd> all;
  for (int k = 0; k < 10000 && all.size() < n; ++k) {
    auto r = jobs.wait(1'000'000);
    EXPECT_TRUE(r) << r.error().str();
    if (!r) break;
    for (auto& e : *r) all.push_back(std::move(e));
  }
  return all;
}

/// Runs one job alone on `core` and expects it to end well with `want`.
void expect_run_ok(CoreJobs& jobs, uint32_t core, const Model& m, uint64_t id,
                   const std::vector<std::pair<std::string, Tensor>>& want) {
  ASSERT_TRUE(jobs.start(core, m.p, m.in, id));
  auto ends = wait_for(jobs, 1);
  ASSERT_EQ(ends.size(), 1u);
  ASSERT_TRUE(ends[0].status) << ends[0].status.str();
  EXPECT_EQ(ends[0].id, id);
  expect_same(ends[0].outputs, want);
}

class Jobs : public ::testing::TestWithParam<std::string> {};

TEST_P(Jobs, SideBySideBitExactWithStaggeredStarts) {
  const Model a = chain("small", 32, 3, 1), b = chain("small", 16, 2, 2);
  const auto ea = expected(a, "small"), eb = expected(b, "small");
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  ASSERT_TRUE(jobs.start(0, a.p, a.in, 10));
  // Core 2 starts while core 0 runs (timed backends: 500 cycles later).
  auto early = jobs.wait(dev->has_time() ? 500 : 0);
  ASSERT_TRUE(early);
  if (dev->has_time()) {
    EXPECT_TRUE(early->empty());
  }
  ASSERT_TRUE(jobs.start(2, b.p, b.in, 20));
  if (early->empty()) {
    EXPECT_TRUE(jobs.busy(0));
  }
  EXPECT_TRUE(jobs.busy(2));
  auto ends = early->empty() ? wait_for(jobs, 2) : *early;
  if (!early->empty()) {
    auto more = wait_for(jobs, 1);
    ends.insert(ends.end(), more.begin(), more.end());
  }
  ASSERT_EQ(ends.size(), 2u);
  for (const auto& e : ends) {
    ASSERT_TRUE(e.status) << e.status.str();
    expect_same(e.outputs, e.id == 10 ? ea : eb);
    EXPECT_EQ(e.core, e.id == 10 ? 0u : 2u);
    if (dev->has_time()) {
      EXPECT_GT(e.end_cycles, e.start_cycles);
      EXPECT_LE(e.end_cycles, dev->cycles());
    }
  }
  EXPECT_EQ(jobs.running(), 0u);
  // The image is reused: a second run of `a` on core 0 gives the same outputs.
  expect_run_ok(jobs, 0, a, 11, ea);
}

TEST_P(Jobs, AloneTakesTheExecutorsCycles) {
  const Model a = chain("small", 32, 3, 1);
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  if (!dev->has_time()) GTEST_SKIP() << "untimed backend";
  uint64_t exec_cycles = 0;
  {
    auto r = execute(*dev, a.p, a.in);
    ASSERT_TRUE(r) << r.error().str();
    exec_cycles = r->cycles;
  }
  for (Completion mode : {Completion::Interrupt, Completion::Poll}) {
    JobOptions o;
    o.completion = mode;
    o.poll_cycles = 1000;
    CoreJobs jobs(*dev, o);
    ASSERT_TRUE(jobs.start(1, a.p, a.in, 1));
    auto ends = wait_for(jobs, 1);
    ASSERT_EQ(ends.size(), 1u);
    ASSERT_TRUE(ends[0].status) << ends[0].status.str();
    const uint64_t took = ends[0].end_cycles - ends[0].start_cycles;
    // Interrupt: the end as the core saw it; polling: up to one poll late.
    EXPECT_GE(took + 8, exec_cycles) << (mode == Completion::Poll ? "poll" : "irq");
    EXPECT_LE(took, exec_cycles + (mode == Completion::Poll ? o.poll_cycles : 8) + 8)
        << (mode == Completion::Poll ? "poll" : "irq");
  }
}

TEST_P(Jobs, StreamLongerThanTheRingIsRefilled) {
  // tiny's rings hold 256 instructions; 40 layers of GEMM need more.
  const Model a = chain("tiny", 16, 40, 3);
  ASSERT_GT(a.p.cores[0].size(), 256u);
  const auto ea = expected(a, "tiny");
  auto dev = device(GetParam(), "tiny");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  expect_run_ok(jobs, 1, a, 7, ea);
}

/// `p` with the first LOAD of core stream `core` reading past the plan's
/// memory window: the device faults with WINDOW on the core that runs it.
plan::Plan loading_past_window(plan::Plan p, size_t core) {
  for (auto& in : p.cores[core])
    if (spec::Opcode(spec::get_bits(in, 0, 6)) == spec::Opcode::LOAD) {
      auto l = spec::LoadInsn::decode(in);
      l.dram_addr = p.memory_bytes + 4096;
      in = l.encode();
      break;
    }
  return p;
}

TEST_P(Jobs, DeviceErrorEndsOnlyThatJobAndTheCoreRecovers) {
  const Model a = chain("small", 32, 3, 1), b = chain("small", 32, 3, 1);
  const auto ea = expected(a, "small");
  // `bad` loads from past its window: WINDOW on its core.
  const plan::Plan bad = loading_past_window(a.p, 0);
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  ASSERT_TRUE(jobs.start(0, b.p, b.in, 1));
  ASSERT_TRUE(jobs.start(1, bad, a.in, 2));
  auto ends = wait_for(jobs, 2);
  ASSERT_EQ(ends.size(), 2u);
  for (const auto& e : ends) {
    if (e.id == 1) {
      ASSERT_TRUE(e.status) << e.status.str();
      expect_same(e.outputs, ea);
    } else {
      ASSERT_FALSE(e.status);
      EXPECT_NE(e.status.str().find("window"), std::string::npos) << e.status.str();
      EXPECT_NE(e.status.str().find("core 1"), std::string::npos) << e.status.str();
      EXPECT_NE(e.err_cause, 0u);
    }
  }
  // The same core runs a good job next.
  expect_run_ok(jobs, 1, a, 3, ea);
}

TEST_P(Jobs, AbortResetsTheCore) {
  const Model a = chain("small", 32, 3, 1);
  const auto ea = expected(a, "small");
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  ASSERT_TRUE(jobs.start(3, a.p, a.in, 1));
  JobEnd e = jobs.abort(3, "host-side timeout");
  EXPECT_FALSE(e.status);
  EXPECT_EQ(e.id, 1u);
  EXPECT_FALSE(jobs.busy(3));
  ASSERT_TRUE(jobs.start(3, a.p, a.in, 2));
  EXPECT_FALSE(jobs.start(3, a.p, a.in, 4));  // busy
  auto ends = wait_for(jobs, 1);
  ASSERT_EQ(ends.size(), 1u);
  ASSERT_TRUE(ends[0].status) << ends[0].status.str();
  expect_same(ends[0].outputs, ea);
}

TEST_P(Jobs, RefusesWhatIsNotOneCoreJob) {
  const Model a = chain("small", 32, 3, 1);
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  EXPECT_FALSE(jobs.start(9, a.p, a.in, 1));
  plan::Plan two = a.p;
  two.cores.push_back(two.cores[0]);
  EXPECT_FALSE(jobs.start(0, two, a.in, 1));
  auto wrong = a.in;
  wrong.begin()->second = Tensor(DType::I8, {1, 1});
  EXPECT_FALSE(jobs.start(0, a.p, wrong, 1));
  EXPECT_FALSE(jobs.busy(0));
}

TEST_P(Jobs, GangRunsAMultiCorePlanOnChosenCoresBesideAnotherJob) {
  // A 2-core static plan (a semaphore barrier between layers) and a 2-stage
  // pipeline plan, each as one job on cores 3 and 1, while core 0 runs a
  // one-core job: the gang's semaphores are moved into cores 3's and 1's ranges.
  for (auto placement : {compiler::Placement::Static, compiler::Placement::Pipeline}) {
    SCOPED_TRACE(compiler::placement_name(placement));
    const Model g = chain("small", 64, 3, 4, 2, placement), a = chain("small", 32, 3, 1);
    ASSERT_EQ(g.p.cores.size(), 2u);
    ASSERT_GT(g.p.semaphores_used, 0u);
    const auto eg = expected(g, "small"), ea = expected(a, "small");
    auto dev = device(GetParam(), "small");
    ASSERT_TRUE(dev);
    uint64_t exec_cycles = 0;
    if (dev->has_time()) {
      auto r = execute(*dev, g.p, g.in);
      ASSERT_TRUE(r) << r.error().str();
      exec_cycles = r->cycles;
    }
    CoreJobs jobs(*dev);
    ASSERT_TRUE(jobs.start(std::vector<uint32_t>{3, 1}, g.p, g.in, 5));
    EXPECT_TRUE(jobs.busy(3));
    EXPECT_TRUE(jobs.busy(1));
    EXPECT_FALSE(jobs.busy(0));
    EXPECT_EQ(jobs.running(), 1u);
    EXPECT_FALSE(jobs.start(1, a.p, a.in, 9));  // a gang's core is busy
    ASSERT_TRUE(jobs.start(0, a.p, a.in, 6));
    auto ends = wait_for(jobs, 2);
    ASSERT_EQ(ends.size(), 2u);
    for (const auto& e : ends) {
      ASSERT_TRUE(e.status) << e.status.str();
      if (e.id == 5) {
        EXPECT_EQ(e.core, 3u);
        EXPECT_EQ(e.cores, (std::vector<uint32_t>{3, 1}));
        expect_same(e.outputs, eg);
      } else {
        expect_same(e.outputs, ea);
      }
    }
    EXPECT_FALSE(jobs.busy(1));
    // Alone, the gang takes the executor's cycles (which runs it on cores 0 and 1).
    ASSERT_TRUE(jobs.start(std::vector<uint32_t>{2, 3}, g.p, g.in, 7));
    ends = wait_for(jobs, 1);
    ASSERT_EQ(ends.size(), 1u);
    ASSERT_TRUE(ends[0].status) << ends[0].status.str();
    expect_same(ends[0].outputs, eg);
    if (dev->has_time()) {
      const uint64_t took = ends[0].end_cycles - ends[0].start_cycles;
      EXPECT_GE(took + 8, exec_cycles);
      EXPECT_LE(took, exec_cycles + 8);
    }
  }
}

TEST_P(Jobs, AnErrorOnOneCoreOfAGangEndsTheJobAndResetsEveryCore) {
  const Model g = chain("small", 64, 3, 4, 2);
  const auto eg = expected(g, "small");
  const plan::Plan bad = loading_past_window(g.p, 1);  // core stream 1 loads from past its window
  auto dev = device(GetParam(), "small");
  ASSERT_TRUE(dev);
  CoreJobs jobs(*dev);
  ASSERT_TRUE(jobs.start(std::vector<uint32_t>{0, 2}, bad, g.in, 1));
  auto ends = wait_for(jobs, 1);
  ASSERT_EQ(ends.size(), 1u);
  ASSERT_FALSE(ends[0].status);
  EXPECT_NE(ends[0].status.str().find("window"), std::string::npos) << ends[0].status.str();
  EXPECT_EQ(ends[0].failed_core, 2u);
  EXPECT_FALSE(jobs.busy(0));
  EXPECT_FALSE(jobs.busy(2));
  // Both cores serve again, and an abort ends a gang whole.
  ASSERT_TRUE(jobs.start(std::vector<uint32_t>{2, 0}, g.p, g.in, 2));
  ends = wait_for(jobs, 1);
  ASSERT_EQ(ends.size(), 1u);
  ASSERT_TRUE(ends[0].status) << ends[0].status.str();
  expect_same(ends[0].outputs, eg);
  ASSERT_TRUE(jobs.start(std::vector<uint32_t>{1, 3}, g.p, g.in, 3));
  JobEnd e = jobs.abort(3, "host-side timeout");
  EXPECT_EQ(e.id, 3u);
  EXPECT_FALSE(jobs.busy(1));
  EXPECT_FALSE(jobs.busy(3));
  // A gang is as many cores as the plan has streams, each given once.
  EXPECT_FALSE(jobs.start(std::vector<uint32_t>{1}, g.p, g.in, 4));
  EXPECT_FALSE(jobs.start(std::vector<uint32_t>{1, 1}, g.p, g.in, 4));
  EXPECT_FALSE(jobs.start(std::vector<uint32_t>{1, 2, 3}, g.p, g.in, 4));
  EXPECT_EQ(jobs.running(), 0u);
}

std::vector<std::string> backends() {
#ifdef LOOM_HAVE_TLM
  return {"ref", "tlm"};
#else
  return {"ref"};
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, Jobs, ::testing::ValuesIn(backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom::runtime
