// `loom compile`: graph -> plan for a named configuration.
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"
#include "compiler/options.h"
#include "driver/compile.h"
#include "plan/program_file.h"

namespace loom::cli {

void register_compile(CLI::App& app) {
  struct Opts {
    std::string graph, config = "default", out;
    bool explain = false, json = false;
    CompileFlags compile;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("compile", "Compile a graph or an ONNX model into a plan for a hardware configuration");
  cmd->add_option("GRAPH", o->graph, "Graph (.json) or ONNX model (.onnx)")->required();
  cmd->add_option("--config", o->config, "Hardware configuration (see `loom info`)")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "Plan file to write")->required();
  add_compile_flags(cmd, o->compile);
  cmd->add_flag("--explain", o->explain, "Print every compiler decision with its predicted numbers");
  cmd->add_flag("--json", o->json, "Print a JSON summary");
  cmd->callback([o] {
    auto cfg = find_config(o->config);
    if (!cfg) throw CLI::RuntimeError(fail(cfg.error()));
    auto copt = compile_options(o->compile, **cfg);
    if (!copt) throw CLI::RuntimeError(fail(copt.error()));
    const compiler::CompileOptions& opt = *copt;
    if (input_kind(o->graph) == InputKind::Onnx) {
      auto shapes = shape_binding(o->compile);
      if (!shapes) throw CLI::RuntimeError(fail(shapes.error()));
      const int rc = compile_program_kind(o->graph, *shapes, **cfg, opt, o->out, o->explain, o->json);
      if (rc != 0) throw CLI::RuntimeError(rc);
      return;
    }
    if (Status s = refuse_shape_flags(o->compile, o->graph + ", a JSON graph,"); !s)
      throw CLI::RuntimeError(fail(s.error()));
    auto prog = driver::compile_program(driver::Source::graph_file(o->graph), **cfg, opt);
    if (!prog) throw CLI::RuntimeError(fail(prog.error()));
    // A program of one segment and no host steps, in the one file format.
    const plan::Segment* r = &prog->segments.at(0);
    Status s = plan::write_program(*prog, plan::info_of(r->plan), o->out);
    if (!s) throw CLI::RuntimeError(fail(s.error()));
    announce_written("compile", o->out);
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
                     {"compile_options", compiler::options_to_json(opt)},
                     {"fusion", compiler::fusion_name(opt.fusion)},
                     {"placement", p.placement},
                     {"tasks", p.tasks.size()},
                     {"hls", compiler::hls_name(opt.hls)},
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
        for (const auto& d : r->decisions) j["decisions"].push_back(compiler::decision_to_json(d));
      }
      std::cout << versioned("compile", j).dump(2) << "\n";
      return;
    }
    if (o->explain)
      for (const auto& d : r->decisions) std::cout << "[" << d.pass << "] " << d.node << ": " << d.text << "\n";
    std::cout << "wrote " << o->out << ": " << p.layers.size() << " layers, " << insns << " instructions on "
              << p.cores.size() << " cores, " << p.memory_bytes << " bytes of device memory (config " << p.config
              << ")\n";
    if (o->explain)
      std::cout << "predicted " << r->predicted_cycles << " cycles (fusion " << compiler::fusion_name(opt.fusion)
                << ", placement " << compiler::placement_name(opt.placement) << ")\n";
  });
}

}  // namespace loom::cli
