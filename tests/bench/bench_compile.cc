// Benchmarks of the host side: compiling the demo graph and running the plan
// on the golden model, per named configuration.
#include <benchmark/benchmark.h>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace {

const loom::ir::Graph& demo() {
  static loom::ir::Graph g = [] {
    auto r = loom::ir::parse_graph_json(LOOM_ROOT_DIR "/examples/demo_cnn.json");
    if (!r) std::abort();
    return std::move(*r);
  }();
  return g;
}

void BM_CompileDemo(benchmark::State& st, const char* config) {
  const auto* cfg = loom::spec::find_config(config);
  for (auto _ : st) {
    auto r = loom::compiler::compile(demo(), *cfg, {});
    if (!r) st.SkipWithError(r.error().str().c_str());
    benchmark::DoNotOptimize(r);
  }
}

void BM_RunDemoOnRef(benchmark::State& st, const char* config) {
  const auto* cfg = loom::spec::find_config(config);
  auto r = loom::compiler::compile(demo(), *cfg, {});
  if (!r) {
    st.SkipWithError(r.error().str().c_str());
    return;
  }
  const auto inputs = loom::ir::random_inputs(demo(), 1);
  uint64_t insns = 0;
  for (const auto& c : r->plan.cores) insns += c.size();
  for (auto _ : st) {
    auto dev = loom::ref::make_ref_device(*cfg);
    auto res = loom::runtime::execute(**dev, r->plan, inputs);
    if (!res) st.SkipWithError(res.error().str().c_str());
    benchmark::DoNotOptimize(res);
  }
  st.counters["insns_per_s"] = benchmark::Counter(double(insns), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(BM_CompileDemo, tiny, "tiny")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CompileDemo, default, "default")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RunDemoOnRef, tiny, "tiny")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunDemoOnRef, default, "default")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
