// `loom compile`: graph -> plan for a named configuration.
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"
#include "compiler/options.h"
#include "driver/compile.h"
#include "driver/family.h"
#include "plan/program_file.h"

namespace loom::cli {

namespace {

struct CompileOpts {
  std::string graph, config = "default", out;
  bool explain = false, json = false;
  CompileFlags compile;
  std::vector<std::string> buckets;
};

/// `loom compile MODEL.onnx --bucket SYMBOL=A,B,... -o DIR`: the program of
/// every bucket into DIR, the folder `loom run --bucket ... --cache DIR`
/// reads (driver::ProgramFamily).
int compile_family(const CompileOpts& o, const spec::HwConfig& cfg, const compiler::CompileOptions& opt) {
  if (input_kind(o.graph) != InputKind::Onnx)
    return fail("--bucket: " + o.graph + " has fixed shapes; a family of programs is an ONNX model's");
  if (!o.compile.input_shapes.empty() || !o.compile.dims.empty() || o.compile.batch != 0)
    return fail("--bucket: the buckets bind every symbolic dimension; leave out --input-shape, --dim and --batch");
  driver::Buckets buckets;
  for (const auto& b : o.buckets)
    if (Status s = driver::parse_bucket(b, buckets); !s) return fail(s.error());
  auto fam = driver::ProgramFamily::open(o.graph, cfg, opt, buckets, o.out);
  if (!fam) return fail(fam.error());
  auto shapes = fam->every_bucket();
  if (!shapes) return fail(shapes.error());
  ordered_json programs = ordered_json::array();
  for (const auto& s : *shapes) {
    auto m = fam->member(s);
    if (!m) return fail(Status(m.error()).context(o.graph + " at " + s.text()).error());
    const plan::Program& p = m->file.program;
    programs.push_back({{"bucket", s.text()},
                        {"file", m->cache_file},
                        {"program", m->from_disk ? "read from the folder" : "compiled"},
                        {"segments", p.segments.size()},
                        {"host_ops", p.host_ops.size()},
                        {"predicted_cycles", p.predicted_cycles()}});
    if (!o.json)
      std::cout << s.text() << ": " << m->cache_file << " (" << (m->from_disk ? "already there" : "compiled") << ", "
                << p.segments.size() << " device segment" << (p.segments.size() == 1 ? "" : "s") << ", "
                << p.host_ops.size() << " host ops)\n";
  }
  if (o.json)
    std::cout << versioned("compile", {{"family", o.graph}, {"folder", o.out}, {"programs", programs}}).dump(2) << "\n";
  else
    std::cout << "wrote the family of " << o.graph << " into " << o.out << ": " << programs.size()
              << " programs; run it with loom run " << o.graph << " --bucket ... --cache " << o.out << "\n";
  return 0;
}

}  // namespace

void register_compile(CLI::App& app) {
  auto o = std::make_shared<CompileOpts>();
  auto* cmd =
      app.add_subcommand("compile", "Compile a graph or an ONNX model into a plan for a hardware configuration");
  cmd->add_option("GRAPH", o->graph, "Graph (.json) or ONNX model (.onnx)")->required();
  cmd->add_option("--config", o->config, "Hardware configuration (see `loom info`)")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "Plan file to write (with --bucket: the folder of the family's programs)")
      ->required();
  add_compile_flags(cmd, o->compile);
  cmd->add_option("--bucket", o->buckets,
                  "ONNX: compile the family of programs, one per combination of buckets, SYMBOL's buckets A,B,... "
                  "(repeatable; every symbolic dimension) into the folder -o, which loom run --bucket ... --cache "
                  "reads");
  cmd->add_flag("--explain", o->explain, "Print every compiler decision with its predicted numbers");
  cmd->add_flag("--json", o->json, "Print a JSON summary");
  cmd->callback([o] {
    auto cfg = find_config(o->config);
    if (!cfg) throw CLI::RuntimeError(fail(cfg.error()));
    auto copt = compile_options(o->compile, **cfg);
    if (!copt) throw CLI::RuntimeError(fail(copt.error()));
    const compiler::CompileOptions& opt = *copt;
    if (!o->buckets.empty()) {
      if (const int rc = compile_family(*o, **cfg, opt); rc != 0) throw CLI::RuntimeError(rc);
      return;
    }
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
