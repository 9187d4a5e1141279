// `loom run model.onnx` and `loom compile model.onnx`: the ONNX frontend
// behind the usual commands (docs/onnx.md).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/cli_common.h"
#include "common/json_read.h"
#include "common/tensor_io.h"
#include "compiler/options.h"
#include "driver/compile.h"
#include "frontend/onnx/host_codec.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "frontend/onnx/value.h"

namespace loom::cli {

namespace {

void add_program_json(ordered_json& j, const plan::Program& p, const onnxfe::HostModel& h) {
  j["onnx_nodes"] = h.onnx_nodes;
  j["folded_qdq"] = h.folded_qdq;
  ordered_json segs = ordered_json::array();
  size_t dev_ops = 0;
  for (const plan::Segment& ps : p.segments) {
    size_t insns = 0;
    for (const auto& c : ps.plan.cores) insns += c.size();
    dev_ops += ps.ops.size();
    segs.push_back(ordered_json{{"nodes", ps.ops},
                                {"inputs", ps.inputs},
                                {"outputs", ps.outputs},
                                {"layers", ps.plan.layers.size()},
                                {"instructions", insns},
                                {"memory_bytes", ps.plan.memory_bytes},
                                {"unit_calls", ps.plan.unit_calls.size()},
                                {"tasks", ps.plan.tasks.size()}});
  }
  j["device_ops"] = dev_ops;
  j["segments"] = segs;
  j["fallback_op_count"] = p.host_ops.size();
  j["fallback_ops"] = p.fallback_ops();
  ordered_json host = ordered_json::array();
  for (const auto& h : p.host_ops) host.push_back(ordered_json{{"node", h.node}, {"op", h.op}, {"why", h.why}});
  j["host_ops"] = host;
  j["notes"] = p.notes;
}

void print_explain(const plan::Program& p) {
  for (size_t k = 0; k < p.segments.size(); ++k) {
    const auto& s = p.segments[k];
    std::cout << "[onnx] segment " << k << " on the fabric: " << s.ops.size() << " ops\n";
    for (const auto& d : s.decisions) std::cout << "[" << d.pass << "] " << d.node << ": " << d.text << "\n";
  }
  for (const auto& n : p.notes) std::cout << "[onnx] " << n << "\n";
  std::cout << "[onnx] fallback_ops (" << p.host_ops.size() << "):";
  for (const auto& f : p.fallback_ops()) std::cout << " " << f;
  std::cout << "\n";
  for (const auto& h : p.host_ops) std::cout << "[onnx] host: " << h.node << " (" << h.op << "): " << h.why << "\n";
}

/// The shapes a program file records as bound on its source.
Expected<onnxfe::ShapeBinding> recorded_shapes(const plan::ProgramInfo& info, const std::string& path) {
  if (info.input_shapes.empty()) return onnxfe::ShapeBinding{};
  return onnxfe::shapes_from_json(info.input_shapes, path + ": metadata: field 'input_shapes'");
}

// --check of a program plan: the segment graphs (the reference) are rebuilt
// from the .onnx the plan was compiled from, which must be unchanged, for
// exactly the plan's segments; nothing is compiled again.
Status attach_reference_graphs(plan::ProgramFile& pp, const std::string& plan_path) {
  const auto& info = pp.info;
  if (info.source.empty() || file_hash(info.source) != info.source_hash)
    return make_error("--check", "the model " + (info.source.empty() ? std::string("of the plan") : info.source) +
                                     " that " + plan_path +
                                     " was compiled from is missing or changed since compilation");
  auto shapes = recorded_shapes(info, plan_path);
  if (!shapes) return shapes.error();
  auto m = onnxfe::load_model(info.source, *shapes);
  if (!m) return m.error();
  auto& segs = pp.program.segments;
  const auto& plans = segs;
  std::vector<std::vector<std::string>> nodes;
  for (const auto& s : segs) nodes.push_back(s.ops);
  bool exact_host = false;
  if (!plans.empty()) {
    // From the plan's metadata (a file): read through field().
    const auto o = parse_json(plans[0].plan.compile_options, "compile_options");
    exact_host = o && field(*o, "exact_host") == true;
  }
  auto ref = onnxfe::segment_graphs(std::move(*m), nodes, exact_host);
  if (!ref) return Status(ref.error()).context("--check");
  for (size_t k = 0; k < segs.size(); ++k) {
    // The same boundary tensors, whatever order the plan binds them in.
    const ir::Graph& g = (*ref)[k].graph;
    const std::set<std::string> gi(g.inputs.begin(), g.inputs.end()), go(g.outputs.begin(), g.outputs.end());
    if (gi != std::set<std::string>(plans[k].inputs.begin(), plans[k].inputs.end()) ||
        go != std::set<std::string>(plans[k].outputs.begin(), plans[k].outputs.end()))
      return make_error("--check", info.source + " now gives another device segment " + std::to_string(k) + " than " +
                                       plan_path + " holds");
    segs[k].graph = g;
  }
  return {};
}

// The shapes of `files` bound on the graph inputs of `m` whose dimensions
// the flags left open: the model loaded again with them.
Expected<onnxfe::Model> bind_to_inputs(onnxfe::Model m, const std::vector<std::string>& files) {
  auto in = onnxfe::read_inputs(m, files);
  if (!in) return in.error();
  onnxfe::ShapeBinding b = m.bound;
  for (const auto& name : m.inputs) {
    auto t = m.types.find(name);
    if (t != m.types.end() && t->second.has_shape) continue;  // bound already
    std::string text = name + "=";
    for (int64_t d : in->at(name).shape) text += std::to_string(d) + ",";
    text.pop_back();
    b.inputs.erase(name);
    if (Status s = onnxfe::parse_input_shape(text, b); !s) return Status(s.error()).context("--inputs");
  }
  return onnxfe::load_model(m.path, b);
}

// On a program plan, --input-shape, --dim and --batch must be what it was
// compiled with.
Status check_plan_shapes(const CompileFlags& f, const onnxfe::ShapeBinding& recorded, const std::string& plan) {
  if (f.input_shapes.empty() && f.dims.empty() && f.batch == 0) return {};
  auto asked = shape_binding(f);
  if (!asked) return asked.error();
  if (*asked == recorded) return {};
  const std::string was = recorded.empty() ? std::string("no shapes bound") : "'" + recorded.text() + "'";
  return make_error(!f.input_shapes.empty() ? "--input-shape"
                    : !f.dims.empty()       ? "--dim"
                                            : "--batch",
                    "plan " + plan + " was compiled with " + was + ", not '" + asked->text() +
                        "'; recompile it, or leave the flags out");
}

/// The options a program file records, checked field by field for `cfg`.
Expected<compiler::CompileOptions> recorded_options(const plan::ProgramInfo& info, const spec::HwConfig& cfg,
                                                    const std::string& path) {
  if (info.compile_options.empty()) return make_error(path + ": metadata", "missing field 'compile_options'");
  return compiler::options_from_json(nlohmann::json::parse(info.compile_options, nullptr, false), cfg,
                                     path + ": metadata");
}

}  // namespace

int run_program_kind(const RunArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool from_plan = input_kind(a.model) == InputKind::ProgramPlan;
  const spec::HwConfig* cfgp = nullptr;
  plan::Program prog;
  onnxfe::Model source;                  // the model to compile (not from a plan)
  const onnxfe::Model* model = &source;  // its inputs and outputs
  compiler::CompileOptions options;
  const std::string exp_dir = expected_dir(a);
  std::vector<std::string> input_files = a.inputs;
  if (from_plan) {
    auto pp = plan::read_program(a.model, &onnxfe::host_codec());
    if (!pp) return fail(pp.error());
    if (!a.config.empty() && a.config != pp->info.config)
      return fail("--config: plan " + a.model + " was compiled for '" + pp->info.config + "', not '" + a.config + "'");
    auto cfg = find_config(pp->info.config);
    if (!cfg) return fail(cfg.error());
    cfgp = *cfg;
    auto recorded = recorded_options(pp->info, *cfgp, a.model);
    if (!recorded) return fail(recorded.error());
    if (Status s = check_plan_flags(a.compile, *cfgp, &*recorded, a.model); !s) return fail(s.error());
    auto shapes = recorded_shapes(pp->info, a.model);
    if (!shapes) return fail(shapes.error());
    if (Status s = check_plan_shapes(a.compile, *shapes, a.model); !s) return fail(s.error());
    options = *recorded;
    if (a.check)
      if (Status s = attach_reference_graphs(*pp, a.model); !s) return fail(s.error());
    prog = std::move(pp->program);
    auto h = onnxfe::host_model(prog, a.model);
    if (!h) return fail(h.error());
    model = &(*h)->model;
  } else {
    auto cfg = find_config(a.config.empty() ? "default" : a.config);
    if (!cfg) return fail(cfg.error());
    cfgp = *cfg;
    auto copt = compile_options(a.compile, *cfgp);
    if (!copt) return fail(copt.error());
    options = *copt;
    auto shapes = shape_binding(a.compile);
    if (!shapes) return fail(shapes.error());
    auto m = onnxfe::load_model(a.model, *shapes);
    if (!m) return fail(m.error());
    source = std::move(*m);
  }
  // Inputs: --inputs, else the test data beside the model, else seeded.
  if (input_files.empty() && has_reference_inputs(exp_dir))
    for (size_t k = 0; k < model->inputs.size(); ++k)
      input_files.push_back(exp_dir + "/input_" + std::to_string(k) + ".pb");
  if (!from_plan && !source.unbound.empty() && !input_files.empty()) {
    // Symbolic dimensions the flags left open take the input files' shapes.
    auto bound = bind_to_inputs(std::move(source), input_files);
    if (!bound) return fail(bound.error());
    source = std::move(*bound);
  }
  if (!from_plan)
    if (Status s = onnxfe::check_bound(source); !s) return fail(s.error());
  std::map<std::string, onnxfe::Value> inputs;
  if (input_files.empty()) {
    auto in = onnxfe::random_inputs(*model, a.seed);
    if (!in) return fail(in.error());
    inputs = std::move(*in);
  } else {
    auto in = onnxfe::read_inputs(*model, input_files);
    if (!in) return fail(in.error());
    inputs = std::move(*in);
  }
  if (!from_plan) {
    auto built = driver::compile_program(driver::Source::onnx_model(std::move(source)), *cfgp, options, inputs);
    if (!built) return fail(built.error());
    prog = std::move(*built);
  }
  auto hm = onnxfe::host_model(prog, a.model);
  if (!hm) return fail(hm.error());

  auto host = onnxfe::ProgramValues::bind(prog, inputs, a.check);
  if (!host) return fail(host.error());
  auto res = run_on_device(a, *cfgp, prog, **host, /*name_segments=*/true);
  if (!res) return fail(res.error());
  auto outputs = (*host)->outputs();
  if (!outputs) return fail(outputs.error());

  RunReport rep;
  ordered_json& j = rep.j;
  j["model"] = a.model;
  j["kind"] = from_plan ? "onnx_plan" : "onnx";
  j["backend"] = a.backend;
  j["config"] = cfgp->name;
  j["compile_options"] = compiler::options_to_json(options);
  if (input_files.empty()) j["seed"] = a.seed;
  add_program_json(j, prog, **hm);
  for (const auto& sr : res->segments) {
    auto& sj = j["segments"][size_t(sr.segment)];
    sj["cycles"] = sr.result.has_time ? ordered_json(sr.result.cycles) : ordered_json(nullptr);
  }

  // --check: each device segment against loom's direct reference on the
  // same inputs (host ops are the same code either way).
  const auto& mismatches = (*host)->mismatches();
  if (a.check && prog.segments.empty()) {
    // Nothing ran on the device: nothing was compared, so no claim either way.
    rep.check = true;
    j["bit_exact"] = nullptr;
    j["checked_segments"] = 0;
    rep.check_line = "check: nothing ran on the device (0 device segments, " + std::to_string(prog.host_ops.size()) +
                     " host ops; see --explain), so nothing was compared against the direct reference";
  } else if (a.check) {
    j["checked_segments"] = prog.segments.size();
    rep.check = true;
    rep.exact = mismatches.empty();
    j["bit_exact"] = rep.exact;
    if (!rep.exact) {
      ordered_json mism = ordered_json::array();
      for (const auto& [what, n] : mismatches)
        mism.push_back(ordered_json{{"output", what}, {"mismatched_elements", n}});
      j["mismatches"] = mism;
    }
    rep.check_line = "check of " + std::to_string(prog.segments.size()) +
                     " device segments against the direct reference: " + (rep.exact ? "bit-exact" : "MISMATCH");
  }
  for (const auto& [name, v] : *outputs) {
    const onnxfe::Value* vp = &v;
    const std::string n = name;
    rep.outputs.push_back(RunOutput{name, onnxfe::elem_name(v.type), v.shape, v.numel(),
                                    [vp](int64_t k) { return vp->at(k); },
                                    [vp, n](const std::string& format) -> Expected<std::string> {
                                      if (format != "npy") return onnxfe::to_proto_bytes(*vp, n);
                                      auto t = onnxfe::to_tensor(*vp);
                                      if (!t) return t.error();
                                      return encode_npy(*t);
                                    }});
  }
  rep.summary = "ran " + a.model + " on " + a.backend + " (config " + std::string(cfgp->name) +
                "): " + std::to_string(j["device_ops"].get<size_t>()) + " ops in " +
                std::to_string(prog.segments.size()) + " device segments, " + std::to_string(prog.host_ops.size()) +
                " host fallback ops" +
                (res->has_time ? ", " + std::to_string(res->cycles) + " device cycles" : std::string());
  return finish_run(a, rep, prog, *res, *cfgp, /*name_segments=*/true, exp_dir, t0);
}

int compile_program_kind(const std::string& model, const onnxfe::ShapeBinding& shapes, const spec::HwConfig& cfg,
                         const compiler::CompileOptions& opt, const std::string& out, bool explain, bool json) {
  {
    // The plan is renamed into place: a device or directory there would be replaced.
    std::error_code ec;
    const auto st = std::filesystem::status(out, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      return fail("-o " + out + ": not a regular file; a plan is written to a new or regular file");
  }
  auto prog = driver::compile_program(driver::Source::onnx_file(model, shapes), cfg, opt);
  if (!prog) return fail(prog.error());
  ordered_json j{{"model", model},
                 {"config", cfg.name},
                 {"compile_options", compiler::options_to_json(opt)},
                 {"placement", compiler::placement_name(opt.placement)},
                 {"hls", compiler::hls_name(opt.hls)},
                 {"fusion", compiler::fusion_name(opt.fusion)}};
  add_program_json(j, *prog, **onnxfe::host_model(*prog, model));
  if (explain && !json) print_explain(*prog);
  // The whole model goes into one program file (docs/plan-format.md):
  // segment plans, host steps (through the ONNX codec) and their order.
  plan::ProgramInfo info;
  info.config = cfg.name;
  info.compiler = std::string("loom ") + LOOM_VERSION;
  std::error_code ec;  // absolute, so --check finds it from any working directory
  const auto abs = std::filesystem::absolute(model, ec);
  info.source = ec ? model : abs.lexically_normal().string();
  info.source_hash = file_hash(model);
  info.compile_options = compiler::options_to_json(opt).dump();
  info.input_shapes = onnxfe::shapes_json(shapes);
  Status s = plan::write_program(*prog, info, out, &onnxfe::host_codec());
  if (!s) return fail(s.error());
  announce_written("compile", out);
  j["plan"] = out;
  j["format_version"] = plan::kProgramFormatVersion;
  j["steps"] = prog->steps.size();
  if (json) {
    if (explain) {
      j["decisions"] = ordered_json::array();
      for (size_t k = 0; k < prog->segments.size(); ++k)
        for (const auto& d : prog->segments[k].decisions) {
          ordered_json x{{"segment", k}};
          x.update(compiler::decision_to_json(d));
          j["decisions"].push_back(std::move(x));
        }
    }
    std::cout << versioned("compile", j).dump(2) << "\n";
    return 0;
  }
  std::cout << "wrote " << out << ": " << prog->segments.size() << " device segments (" << j["device_ops"].get<size_t>()
            << " ops) and " << prog->host_ops.size() << " host fallback ops in " << prog->steps.size()
            << " steps (config " << cfg.name << ")\n";
  return 0;
}

}  // namespace loom::cli
