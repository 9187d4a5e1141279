// `loom compile`: graph -> plan for a named configuration.
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"

namespace loom::cli {

/// Compiles `path` for `cfg` with `opt`.
Expected<compiler::CompileResult> compile_graph(const std::string& path, const spec::HwConfig& cfg,
                                                const compiler::CompileOptions& opt) {
  auto g = load_graph(path);
  if (!g) return g.error();
  auto r = compiler::compile(*g, cfg, opt);
  if (!r) return r.error();
  r->plan.graph_source = path;
  r->plan.graph_hash = file_hash(path);
  return r;
}

/// Compiles `path` for `cfg` with default options; shared with `loom run GRAPH`.
Expected<compiler::CompileResult> compile_graph(const std::string& path, const spec::HwConfig& cfg, int cores) {
  compiler::CompileOptions opt;
  opt.num_cores = cores;
  return compile_graph(path, cfg, opt);
}

void register_compile(CLI::App& app) {
  struct Opts {
    std::string graph, config = "default", out, fusion = "cost", placement = "static", hls = "off";
    std::string cost_params;
    bool explain = false, json = false;
    int cores = 0;
    int tasks_per_core = 1;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("compile", "Compile a graph into a plan for a hardware configuration");
  cmd->add_option("GRAPH", o->graph, "Graph (.json) or ONNX model (.onnx)")->required();
  cmd->add_option("--config", o->config, "Hardware configuration (see `loom info`)")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "Plan file to write")->required();
  cmd->add_option("--cores", o->cores, "Cores to use (0: all of the configuration)")->check(CLI::Range(0, 64));
  cmd->add_option("--fusion", o->fusion, "Fusion policy: none, greedy (every legal group) or cost")
      ->capture_default_str();
  cmd->add_option("--placement", o->placement,
                  "Placement: static (data-parallel), pipeline (layer stages on core groups) or dynamic (tile "
                  "tasks dispatched by the runtime)")
      ->capture_default_str();
  cmd->add_option("--hls", o->hls, "HLS compute units: off, or auto (layers or parts of them on units when predicted faster)")
      ->capture_default_str();
  cmd->add_option("--tasks-per-core", o->tasks_per_core, "Dynamic placement: tile tasks per core and layer")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--cost-params", o->cost_params,
                  "Cost-model parameters (JSON, e.g. refitted by `loom tune --cost-params-out`) the fusion and "
                  "tiling passes decide with");
  cmd->add_flag("--explain", o->explain, "Print every compiler decision with its predicted numbers");
  cmd->add_flag("--json", o->json, "Print a JSON summary");
  cmd->callback([o] {
    if (is_onnx_model(o->graph)) {
      if (!o->cost_params.empty())
        throw CLI::RuntimeError(fail("--cost-params: ONNX models compile with the configuration's cost model only (docs/compiler.md)"));
      const int rc = compile_onnx(OnnxCompileArgs{o->graph, o->config, o->out, o->explain, o->json, o->cores,
                                                  o->placement, o->hls, o->fusion, o->tasks_per_core});
      if (rc != 0) throw CLI::RuntimeError(rc);
      return;
    }
    auto cfg = find_config(o->config);
    if (!cfg) throw CLI::RuntimeError(fail(cfg.error()));
    auto fusion = compiler::parse_fusion(o->fusion);
    if (!fusion) throw CLI::RuntimeError(fail(fusion.error()));
    auto placement = compiler::parse_placement(o->placement);
    if (!placement) throw CLI::RuntimeError(fail(placement.error()));
    compiler::CompileOptions opt;
    opt.num_cores = o->cores;
    opt.fusion = *fusion;
    opt.placement = *placement;
    opt.tasks_per_core = o->tasks_per_core;
    if (!o->cost_params.empty()) {
      auto cp = compiler::read_cost_params(o->cost_params, **cfg);
      if (!cp) throw CLI::RuntimeError(fail(cp.error()));
      opt.cost_params = *cp;
    }
    auto hls = compiler::parse_hls(o->hls);
    if (!hls) throw CLI::RuntimeError(fail(hls.error()));
    opt.hls = *hls;
    auto r = compile_graph(o->graph, **cfg, opt);
    if (!r) throw CLI::RuntimeError(fail(r.error()));
    Status s = plan::write_plan(r->plan, o->out);
    if (!s) throw CLI::RuntimeError(fail(s.error()));
    const auto& p = r->plan;
    size_t insns = 0;
    for (const auto& c : p.cores) insns += c.size();
    if (o->json) {
      ordered_json j{{"plan", o->out},
                     {"config", p.config},
                     {"graph", p.graph_name},
                     {"cores", p.cores.size()},
                     {"instructions", insns},
                     {"layers", p.layers.size()},
                     {"memory_bytes", p.memory_bytes},
                     {"constants_bytes", p.constants.size()},
                     {"fusion", o->fusion},
                     {"placement", p.placement},
                     {"tasks", p.tasks.size()},
                     {"hls", o->hls},
                     {"unit_calls", p.unit_calls.size()},
                     {"predicted_cycles", r->predicted_cycles}};
      j["stats"] = ordered_json::object();
      for (const auto& [k, v] : r->stats) j["stats"][k] = v;
      j["predicted"] = ordered_json::array();
      for (const auto& l : r->predicted)
        j["predicted"].push_back(ordered_json{{"layer", l.name},
                                              {"cycles", l.cycles},
                                              {"dram_read", l.dram_read},
                                              {"dram_written", l.dram_written},
                                              {"insns", l.insns}});
      if (o->explain) {
        j["decisions"] = ordered_json::array();
        for (const auto& d : r->decisions)
          j["decisions"].push_back(ordered_json{{"node", d.node}, {"pass", d.pass}, {"decision", d.text}});
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    if (o->explain)
      for (const auto& d : r->decisions) std::cout << "[" << d.pass << "] " << d.node << ": " << d.text << "\n";
    std::cout << "wrote " << o->out << ": " << p.layers.size() << " layers, " << insns << " instructions on "
              << p.cores.size() << " cores, " << p.memory_bytes << " bytes of device memory (config " << p.config
              << ")\n";
    if (o->explain) std::cout << "predicted " << r->predicted_cycles << " cycles (fusion " << o->fusion << ", placement "
                            << o->placement << ")\n";
  });
}

}  // namespace loom::cli
