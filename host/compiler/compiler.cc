// The compiler driver: builds the pass pipeline and runs it, collecting
// decisions and statistics.
#include "compiler/compiler.h"

#include <memory>
#include <string>
#include <vector>

#include "compiler/options.h"
#include "compiler/pass.h"

namespace loom::compiler {

const char* fusion_name(Fusion f) {
  switch (f) {
    case Fusion::None:
      return "none";
    case Fusion::Greedy:
      return "greedy";
    case Fusion::Cost:
      return "cost";
  }
  return "?";
}

Expected<Fusion> parse_fusion(const std::string& s) {
  for (Fusion f : {Fusion::None, Fusion::Greedy, Fusion::Cost})
    if (s == fusion_name(f)) return f;
  return make_error("--fusion", "unknown policy '" + s + "' (none, greedy or cost)");
}

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::Static:
      return "static";
    case Placement::Pipeline:
      return "pipeline";
    case Placement::Dynamic:
      return "dynamic";
  }
  return "?";
}

Expected<Placement> parse_placement(const std::string& s) {
  for (Placement p : {Placement::Static, Placement::Pipeline, Placement::Dynamic})
    if (s == placement_name(p)) return p;
  return make_error("--placement", "unknown placement '" + s + "' (static, pipeline or dynamic)");
}

Budget make_budget(const spec::HwConfig& cfg, bool double_buffer) {
  Budget b;
  b.slots = double_buffer ? 2 : 1;
  // IN/WGT/PARAM are shared by load and compute, OUT by compute and store:
  // each double-buffered slot gets half. ACC never leaves the in-order
  // compute unit, so it stays whole.
  b.in = int64_t(cfg.in_kib) * 1024 / b.slots;
  b.wgt = int64_t(cfg.wgt_kib) * 1024 / b.slots;
  b.out = int64_t(cfg.out_kib) * 1024 / b.slots;
  b.param = int64_t(cfg.param_kib) * 1024 / b.slots;
  b.acc = int64_t(cfg.acc_kib) * 1024;
  return b;
}

Expected<CompileState> make_state(const ir::Graph& g, const spec::HwConfig& cfg, const CompileOptions& opt) {
  if (opt.num_cores < 0 || uint32_t(opt.num_cores) > cfg.cores)
    return make_error("compile", "num_cores " + std::to_string(opt.num_cores) + " is outside [0, " +
                                     std::to_string(cfg.cores) + "] for config '" + std::string(cfg.name) + "'");
  CompileState s;
  s.graph = g;
  s.cfg = &cfg;
  s.opt_ = opt;
  s.cores = opt.num_cores == 0 ? int(cfg.cores) : opt.num_cores;
  s.budget = make_budget(cfg, opt.double_buffer);
  s.plan.config = std::string(cfg.name);
  s.plan.graph_name = g.name;
  s.plan.compiler = std::string("loom ") + LOOM_VERSION;
  return s;
}

plan::Segment segment_of(CompileResult r, ir::Graph g) {
  plan::Segment s;
  for (const auto& b : r.plan.inputs) s.inputs.push_back(b.name);
  for (const auto& b : r.plan.outputs) s.outputs.push_back(b.name);
  s.plan = std::move(r.plan);
  s.graph = std::move(g);
  s.predicted = std::move(r.predicted);
  s.predicted_cycles = r.predicted_cycles;
  s.decisions = std::move(r.decisions);
  s.stats = std::move(r.stats);
  return s;
}

namespace {

/// The pipeline, in order. fold-transpose finds Kᵀ before fold-layout
/// composes it with other transposes.
std::vector<std::unique_ptr<Pass>> make_pipeline() {
  std::vector<std::unique_ptr<Pass>> p;
  for (auto make : {make_fold_transpose_pass, make_fold_channels_pass, make_fold_layout_pass, make_fold_pointwise_pass,
                    make_legalize_pass, make_fuse_activation_pass, make_fuse_residual_pass, make_concat_in_place_pass,
                    make_tiling_pass, make_placement_pass, make_hls_placement_pass, make_memory_plan_pass,
                    make_codegen_pass, make_hls_calls_pass})
    p.push_back(make());
  return p;
}

}  // namespace

std::vector<PassInfo> pipeline_passes() {
  std::vector<PassInfo> out;
  for (const auto& p : make_pipeline()) out.push_back(p->info());
  return out;
}

Expected<CompileResult> compile(const ir::Graph& g, const spec::HwConfig& cfg, const CompileOptions& opt) {
  auto st = make_state(g, cfg, opt);
  if (!st) return st.error();
  CompileState& s = *st;
  const auto passes = make_pipeline();
  CompileResult r;
  for (auto& p : passes) {
    Status ps = s.run_pass(*p);
    if (!ps) {
      if (!g.source.empty()) ps.context(g.source);
      return ps.error();
    }
    for (const auto& [k, v] : p->statistics()) r.stats.emplace_back(std::string(p->name()) + "." + k, v);
  }
  for (const auto& l : s.layers) {
    if (l.props->kind == LayerKind::Alias) continue;
    r.predicted.push_back(
        {l.name, l.cost.cycles, l.cost.dram_read, l.cost.dram_written, l.cost.insns, l.cost.core_insns});
    r.predicted_cycles += l.cost.cycles;
  }
  // A pipeline's layers overlap across images: its own prediction.
  if (s.pipeline_cycles) r.predicted_cycles = *s.pipeline_cycles;
  r.plan = std::move(s.plan);
  r.plan.compile_options = options_to_json(opt).dump();
  r.decisions = std::move(s.decisions);
  return r;
}

}  // namespace loom::compiler
