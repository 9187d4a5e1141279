// Compile speed: a ResNet-50-shaped graph (all 53 convolutions at 224x224,
// v1.5 strides, residual adds, relus, pools and the classifier) built with
// GraphBuilder and compiled through every pass, per configuration and fusion
// policy, each compile cold (no tile search remembered). Target: under
// one second.
#include <benchmark/benchmark.h>

#include <string>

#include "compiler/compiler.h"
#include "compiler/pass.h"
#include "ir/builder.h"

namespace {

using loom::ir::GraphBuilder;
using loom::ir::OpKind;

const loom::ir::Graph& resnet50() {
  static loom::ir::Graph g = [] {
    GraphBuilder b("resnet50");
    auto x = b.input("x", {1, 224, 224, 3});
    x = b.unary("conv1.relu", OpKind::Relu, b.conv("conv1", x, {64, 7, 7, 2, 3, 1}));
    x = b.pool("pool1", OpKind::MaxPool, x, 3, 2, 1);
    const int64_t blocks[] = {3, 4, 6, 3}, mids[] = {64, 128, 256, 512};
    int64_t cin = 64;
    for (int st = 0; st < 4; ++st)
      for (int64_t i = 0; i < blocks[st]; ++i) {
        const std::string p = "res" + std::to_string(st + 2) + "_" + std::to_string(i);
        const int64_t mid = mids[st], out = 4 * mid, stride = (i == 0 && st > 0) ? 2 : 1;
        auto y = b.unary(p + ".relu1", OpKind::Relu, b.conv(p + ".conv1", x, {mid, 1, 1, 1, 0, 1}));
        y = b.unary(p + ".relu2", OpKind::Relu, b.conv(p + ".conv2", y, {mid, 3, 3, stride, 1, 1}));
        y = b.conv(p + ".conv3", y, {out, 1, 1, 1, 0, 1});
        const auto sc = i == 0 ? b.conv(p + ".down", x, {out, 1, 1, stride, 0, 1}) : x;
        x = b.unary(p + ".relu3", OpKind::Relu, b.add(p + ".add", y, sc));
        cin = out;
      }
    (void)cin;
    x = b.flatten("flat", b.pool("gap", OpKind::GlobalAvgPool, x, 7, 1, 0));
    b.output(b.gemm("fc", x, 1000));
    auto& g = b.graph();
    if (!loom::ir::validate(g)) std::abort();
    return std::move(g);
  }();
  return g;
}

void BM_CompileResNet50(benchmark::State& st, const char* config, loom::compiler::Fusion f) {
  const auto* cfg = loom::spec::find_config(config);
  loom::compiler::CompileOptions opt;
  opt.fusion = f;
  int64_t convs = 0;
  for (const auto& n : resnet50().nodes) convs += n.op == OpKind::Conv2d;
  for (auto _ : st) {
    // A cold compile, as `loom compile` runs one: the tile searches of the
    // iteration before are forgotten.
    st.PauseTiming();
    loom::compiler::set_tile_search_memo(true);
    st.ResumeTiming();
    auto r = loom::compiler::compile(resnet50(), *cfg, opt);
    if (!r) {
      st.SkipWithError(r.error().str().c_str());
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  st.counters["convs"] = double(convs);
}

}  // namespace

BENCHMARK_CAPTURE(BM_CompileResNet50, tiny_cost, "tiny", loom::compiler::Fusion::Cost)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileResNet50, default_cost, "default", loom::compiler::Fusion::Cost)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileResNet50, default_none, "default", loom::compiler::Fusion::None)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileResNet50, default_greedy, "default", loom::compiler::Fusion::Greedy)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
