// Measures the placements on the device segments of an ONNX model (a zoo
// slice): each segment's graph compiled with --placement static, pipeline
// and dynamic, run on a timed backend with seeded inputs and compared bit
// for bit with the direct reference (docs/compiler.md, "Placement").
//
//   loom_placement_zoo MODEL.onnx CONFIG BACKEND [TASKS_PER_CORE]
//
// Prints one line per segment and placement: cycles, per-core utilization
// (cycles_compute / cycles), bit-exact; exits non-zero on any mismatch.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "frontend/onnx/program.h"
#include "runtime/executor.h"
#ifdef LOOM_HAVE_TLM
#include "tlm/tlm_device.h"
#endif

using namespace loom;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.onnx CONFIG ref|tlm [TASKS_PER_CORE]\n", argv[0]);
    return 2;
  }
  const int tasks_per_core = argc == 5 ? std::atoi(argv[4]) : 1;
  if (tasks_per_core < 1) {
    std::fprintf(stderr, "loom_placement_zoo: TASKS_PER_CORE must be a positive integer, got '%s'\n", argv[4]);
    return 2;
  }
  const std::string backend = argv[3];
  const spec::HwConfig* cfg = spec::find_config(argv[2]);
  if (cfg == nullptr) {
    std::fprintf(stderr, "loom_placement_zoo: unknown config '%s'\n", argv[2]);
    return 2;
  }
  auto m = onnxfe::load_model(argv[1]);
  if (!m) {
    std::fprintf(stderr, "loom_placement_zoo: %s\n", m.error().str().c_str());
    return 1;
  }
  auto prog = onnxfe::build_program(std::move(*m), {}, *cfg, {});
  if (!prog) {
    std::fprintf(stderr, "loom_placement_zoo: %s\n", prog.error().str().c_str());
    return 1;
  }
  bool exact = true;
  for (size_t k = 0; k < prog->segments.size(); ++k) {
    const ir::Graph& g = prog->segments[k].graph;
    const auto inputs = ir::random_inputs(g, 1);
    auto want = ir::run_reference(g, inputs);
    if (!want) {
      std::fprintf(stderr, "loom_placement_zoo: %s\n", want.error().str().c_str());
      return 1;
    }
    for (auto pl : {compiler::Placement::Static, compiler::Placement::Pipeline, compiler::Placement::Dynamic}) {
      compiler::CompileOptions o;
      o.placement = pl;
      o.tasks_per_core = tasks_per_core;
      auto r = compiler::compile(g, *cfg, o);
      if (!r) {
        std::fprintf(stderr, "loom_placement_zoo: %s\n", r.error().str().c_str());
        return 1;
      }
      Expected<std::unique_ptr<runtime::Device>> dev = make_error("backend", "unknown backend '" + backend + "'");
      if (backend == "ref") dev = ref::make_ref_device(*cfg);
#ifdef LOOM_HAVE_TLM
      if (backend == "tlm") dev = loom::tlm::make_tlm_device(*cfg);
#endif
      if (!dev) {
        std::fprintf(stderr, "loom_placement_zoo: %s\n", dev.error().str().c_str());
        return 1;
      }
      auto res = runtime::execute(**dev, r->plan, inputs);
      if (!res) {
        std::fprintf(stderr, "loom_placement_zoo: %s\n", res.error().str().c_str());
        return 1;
      }
      bool same = true;
      for (const auto& [name, t] : res->outputs) same = same && want->at(name).data == t.data;
      exact = exact && same;
      std::string util;
      for (const auto& c : res->cores)
        util.append(util.empty() ? "" : "/")
            .append(std::to_string(res->cycles ? double(c.counters[size_t(spec::Counter::CYCLES_COMPUTE)]) /
                                                     double(res->cycles)
                                               : 0.0)
                        .substr(0, 4));
      int64_t stages = 0, units = 0;
      for (const auto& [key, v] : r->stats) {
        if (key == "placement.stages") stages = v;
        if (key == "placement.units") units = v;
      }
      std::printf("segment %zu (%zu layers) %s %s: %llu cycles, utilization %s, tasks %zu, stages %lld x units %lld, %s\n",
                  k, r->plan.layers.size(), cfg->name.data(), compiler::placement_name(pl),
                  (unsigned long long)res->cycles, util.c_str(), r->plan.tasks.size(), (long long)stages,
                  (long long)units, same ? "bit-exact" : "DIFFERS");
    }
  }
  return exact ? 0 : 1;
}
