// Workloads shared by the tlm tests: the benchmark graphs of `loom bench`
// (GEMM and ResNet-50 convolutions) and a helper that compiles and runs a
// graph on a device.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "compiler/compiler.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "device/device.h"
#include "runtime/executor.h"

namespace loom::tlm_test {

inline ir::Graph gemm_graph(int64_t m, int64_t n, int64_t k, uint64_t seed = 1) {
  ir::GraphBuilder b("gemm", seed);
  const auto a = b.input("a", {m, k});
  b.output(b.gemm("fc", a, n));
  return b.graph();
}

struct ConvShape {
  const char* name;
  int64_t hw, cin, cout, k, stride, pad;
};

inline ir::Graph conv_graph(const ConvShape& s, uint64_t seed = 1) {
  ir::GraphBuilder b("conv", seed);
  const auto x = b.input("x", {1, s.hw, s.hw, s.cin});
  ir::ConvSpec cs;
  cs.cout = s.cout, cs.kh = cs.kw = s.k, cs.stride = s.stride, cs.pad = s.pad;
  b.output(b.conv("conv", x, cs));
  return b.graph();
}

struct Run {
  runtime::RunResult result;
  double wall_seconds = 0;
};

/// Validates, compiles for `cfg` and executes `g` on `dev` with seeded inputs.
inline Expected<Run> compile_and_run(ir::Graph g, runtime::Device& dev, uint64_t seed = 1) {
  if (Status s = ir::validate(g); !s) return s.error();
  auto comp = compiler::compile(g, dev.config(), compiler::CompileOptions{});
  if (!comp) return comp.error();
  const auto inputs = ir::random_inputs(g, seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto res = runtime::execute(dev, comp->plan, inputs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!res) return res.error();
  return Run{std::move(*res), wall};
}

}  // namespace loom::tlm_test
