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
#include "driver/family.h"
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

/// A program plan of an ONNX model, checked against the flags given; with
/// --check its segments get their reference graphs.
Expected<plan::ProgramFile> read_onnx_plan(const RunArgs& a, compiler::CompileOptions& options) {
  auto pp = plan::read_program(a.model, &onnxfe::host_codec());
  if (!pp) return pp.error();
  if (!a.config.empty() && a.config != pp->info.config)
    return error_of("--config: plan " + a.model + " was compiled for '" + pp->info.config + "', not '" + a.config +
                    "'");
  auto cfg = find_config(pp->info.config);
  if (!cfg) return cfg.error();
  auto recorded = recorded_options(pp->info, **cfg, a.model);
  if (!recorded) return recorded.error();
  LOOM_TRY(check_plan_flags(a.compile, **cfg, &*recorded, a.model));
  auto shapes = recorded_shapes(pp->info, a.model);
  if (!shapes) return shapes.error();
  LOOM_TRY(check_plan_shapes(a.compile, *shapes, a.model));
  options = *recorded;
  if (a.check) LOOM_TRY(attach_reference_graphs(*pp, a.model));
  return pp;
}

/// The model with the flags' shapes, then the input files' for dimensions
/// the flags left open; every dimension bound.
Status bind_model(onnxfe::Model& m, const std::vector<std::string>& input_files) {
  if (!m.unbound.empty() && !input_files.empty()) {
    auto bound = bind_to_inputs(std::move(m), input_files);
    if (!bound) return bound.error();
    m = std::move(*bound);
  }
  return onnxfe::check_bound(m);
}

std::vector<RunOutput> run_outputs(std::vector<std::pair<std::string, onnxfe::Value>> outs) {
  std::vector<RunOutput> r;
  for (auto& [name, value] : outs) {
    auto vp = std::make_shared<const onnxfe::Value>(std::move(value));
    const std::string n = name;
    r.push_back(RunOutput{name, onnxfe::elem_name(vp->type), vp->shape, vp->numel(),
                          [vp](int64_t k) { return vp->at(k); },
                          [vp, n](const std::string& format) -> Expected<std::string> {
                            if (format != "npy") return onnxfe::to_proto_bytes(*vp, n);
                            auto t = onnxfe::to_tensor(*vp);
                            if (!t) return t.error();
                            return encode_npy(*t);
                          },
                          ""});
  }
  return r;
}

/// The inputs for a run of `model`: --inputs, else the test data beside the
/// model, else none (seeded); their paths.
std::vector<std::string> input_files_of(const RunArgs& a, const onnxfe::Model& model) {
  const std::string exp_dir = expected_dir(a);
  std::vector<std::string> files = a.inputs;
  if (files.empty() && has_reference_inputs(exp_dir))
    for (size_t k = 0; k < model.inputs.size(); ++k) files.push_back(exp_dir + "/input_" + std::to_string(k) + ".pb");
  return files;
}

/// A model with symbolic dimensions run as a family of programs (--bucket):
/// the input files' shapes pick the bucket, or the runs of a batch above the
/// largest bucket (driver::ProgramFamily::split); each run's rows are padded
/// up to its bucket, its program comes from memory, the --cache folder or a
/// compile, and the runs' outputs are joined along the batch.
class FamilyRuns {
 public:
  static Expected<std::shared_ptr<FamilyRuns>> open(const RunArgs& a, const spec::HwConfig& cfg,
                                                    const compiler::CompileOptions& options,
                                                    const onnxfe::Model& source,
                                                    std::map<std::string, onnxfe::Value> inputs) {
    if (!a.compile.input_shapes.empty() || !a.compile.dims.empty() || a.compile.batch != 0)
      return make_error("--bucket",
                        "the input tensors' shapes pick the bucket; leave out --input-shape, --dim and --batch");
    driver::Buckets buckets;
    for (const auto& b : a.buckets) LOOM_TRY(driver::parse_bucket(b, buckets));
    auto fam = driver::ProgramFamily::open(a.model, cfg, options, buckets, a.cache);
    if (!fam) return fam.error();
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& name : source.inputs) shapes[name] = inputs.at(name).shape;
    auto runs = fam->split(shapes);
    if (!runs) return runs.error();
    auto f = std::make_shared<FamilyRuns>();
    f->check_ = a.check;
    f->fam_ = std::move(*fam);
    f->runs_ = std::move(*runs);
    f->inputs_ = std::move(inputs);
    return f;
  }

  size_t size() const { return runs_.size(); }
  /// Run k's program and values into `l` (k in order from 0); run k - 1's
  /// outputs are kept for outputs().
  Status load(size_t k, LoadedRun& l) {
    if (l.values) LOOM_TRY(take_outputs());
    l.values.reset();  // it refers to the program replaced below
    const driver::FamilyRun& r = runs_[k];
    auto member = fam_.member(r.shape);
    if (!member) return member.error();
    if (member->from_disk && check_) LOOM_TRY(attach_reference_graphs(member->file, member->cache_file));
    runs_json_.push_back(ordered_json{
        {"rows", ordered_json::array({r.first, r.first + r.shape.batch})},
        {"bucket", r.shape.text()},
        {"program", member->from_disk ? "read from the cache" : "compiled"},
        {"cache_file", member->cache_file.empty() ? ordered_json(nullptr) : ordered_json(member->cache_file)}});
    if (k == 0) input_shapes_ = nlohmann::json::parse(member->file.info.input_shapes, nullptr, false);
    l.prog = std::move(member->file.program);
    std::map<std::string, onnxfe::Value> in;
    for (const auto& [name, v] : inputs_)
      in[name] = runs_.size() == 1 ? v : driver::slice_batch(v, r.first, r.shape.batch);
    if (r.shape.padded_batch > r.shape.batch)
      for (auto& [name, v] : in) v = driver::pad_batch(v, r.shape.padded_batch);
    auto values = onnxfe::ProgramValues::bind(l.prog, in);
    if (!values) return values.error();
    values_ = values->get();
    l.values = std::move(*values);
    return {};
  }
  /// The graph outputs of every run, joined along the batch; after the last run.
  Expected<std::vector<std::pair<std::string, onnxfe::Value>>> outputs() {
    LOOM_TRY(take_outputs());
    if (done_.size() == 1) return done_[0];
    std::vector<std::pair<std::string, onnxfe::Value>> joined;
    for (size_t o = 0; o < done_[0].size(); ++o) {
      std::vector<onnxfe::Value> parts;
      for (const auto& run : done_) parts.push_back(run[o].second);
      auto j = driver::join_batch(parts);
      if (!j) return Status(j.error()).context("output '" + done_[0][o].first + "'").error();
      joined.emplace_back(done_[0][o].first, std::move(*j));
    }
    return joined;
  }
  /// The report's "family" fields: the bucket (or the split) and each run's program.
  ordered_json json() const {
    const driver::FamilyRun& r = runs_.back();
    ordered_json j{{"bucket", driver::runs_text(runs_)},
                   {"input_shapes", input_shapes_},
                   {"padded_batch", r.shape.padded_batch > r.shape.batch},
                   {"program", runs_json_[0]["program"]},
                   {"cache_file", runs_json_[0]["cache_file"]}};
    if (runs_.size() > 1) j["runs"] = runs_json_;
    return j;
  }

 private:
  /// The current run's outputs, its padding rows dropped.
  Status take_outputs() {
    if (values_ == nullptr) return {};
    auto outs = values_->outputs();
    if (!outs) return outs.error();
    const driver::FamilyShape& s = runs_[done_.size()].shape;
    if (s.padded_batch > s.batch)
      for (auto& [name, v] : *outs) v = driver::slice_batch(v, 0, s.batch);
    done_.push_back(std::move(*outs));
    values_ = nullptr;
    return {};
  }

  bool check_ = false;
  driver::ProgramFamily fam_;
  std::vector<driver::FamilyRun> runs_;
  std::map<std::string, onnxfe::Value> inputs_;  // the whole batch
  onnxfe::ProgramValues* values_ = nullptr;      // the current run's (owned by the LoadedRun)
  std::vector<std::vector<std::pair<std::string, onnxfe::Value>>> done_;
  ordered_json runs_json_ = ordered_json::array();
  ordered_json input_shapes_;
};

}  // namespace

Expected<std::unique_ptr<LoadedRun>> load_onnx_run(const RunArgs& a) {
  const bool from_plan = input_kind(a.model) == InputKind::ProgramPlan;
  if (from_plan && (!a.buckets.empty() || !a.cache.empty()))
    return make_error(!a.buckets.empty() ? "--bucket" : "--cache",
                      "a program plan is one compiled shape; give the .onnx model to run it as a family of programs");
  if (!from_plan && !a.cache.empty() && a.buckets.empty())
    return make_error("--cache", "caches a family's programs; give --bucket SYMBOL=A,B,... with it");
  auto l = std::make_unique<LoadedRun>();
  l->kind = from_plan ? "onnx_plan" : "onnx";
  l->name_segments = true;
  compiler::CompileOptions options;
  onnxfe::Model source;                  // the model to compile (not from a plan)
  const onnxfe::Model* model = &source;  // its inputs and outputs
  if (from_plan) {
    auto pp = read_onnx_plan(a, options);
    if (!pp) return pp.error();
    l->cfg = spec::find_config(pp->info.config);
    l->prog = std::move(pp->program);
    auto h = onnxfe::host_model(l->prog, a.model);
    if (!h) return h.error();
    model = &(*h)->model;
  } else {
    auto cfg = find_config(a.config.empty() ? "default" : a.config);
    if (!cfg) return cfg.error();
    l->cfg = *cfg;
    auto copt = compile_options(a.compile, **cfg);
    if (!copt) return copt.error();
    options = *copt;
    auto shapes = shape_binding(a.compile);
    if (!shapes) return shapes.error();
    auto m = onnxfe::load_model(a.model, *shapes);
    if (!m) return m.error();
    source = std::move(*m);
  }
  const std::vector<std::string> input_files = input_files_of(a, *model);
  const bool family = !from_plan && !a.buckets.empty();
  if (family && input_files.empty())
    return make_error("--bucket", "the input tensors' shapes pick the bucket; give --inputs");
  if (!from_plan && !family) LOOM_TRY(bind_model(source, input_files));
  auto inputs = input_files.empty() ? onnxfe::random_inputs(*model, a.seed) : onnxfe::read_inputs(*model, input_files);
  if (!inputs) return inputs.error();
  l->seeded = input_files.empty();
  std::shared_ptr<FamilyRuns> fr;  // null: one program
  if (family) {
    auto runs = FamilyRuns::open(a, *l->cfg, options, source, std::move(*inputs));
    if (!runs) return runs.error();
    std::shared_ptr<FamilyRuns> f = fr = std::move(*runs);
    LOOM_TRY(f->load(0, *l));
    l->runs = f->size();
    l->next = [f, lp = l.get()](size_t k) { return f->load(k, *lp); };
    l->outputs = [f]() -> Expected<std::vector<RunOutput>> {
      auto outs = f->outputs();
      if (!outs) return outs.error();
      return run_outputs(std::move(*outs));
    };
  } else {
    if (!from_plan) {
      auto built = driver::compile_program(driver::Source::onnx_model(std::move(source)), *l->cfg, options, *inputs);
      if (!built) return built.error();
      l->prog = std::move(*built);
    }
    auto host = onnxfe::ProgramValues::bind(l->prog, *inputs);
    if (!host) return host.error();
    onnxfe::ProgramValues* values = host->get();
    l->values = std::move(*host);
    l->outputs = [values]() -> Expected<std::vector<RunOutput>> {
      auto outs = values->outputs();
      if (!outs) return outs.error();
      return run_outputs(std::move(*outs));
    };
  }
  l->compile_options = compiler::options_to_json(options);
  LOOM_TRY(onnxfe::host_model(l->prog, a.model).status());
  l->describe = [lp = l.get(), where = a.model, fr](const runtime::ProgramRun& run) {
    ordered_json j;
    add_program_json(j, lp->prog, **onnxfe::host_model(lp->prog, where));
    for (const auto& sr : run.segments) {
      auto& sj = j["segments"][size_t(sr.segment)];
      const uint64_t before = sj.contains("cycles") && sj["cycles"].is_number() ? sj["cycles"].get<uint64_t>() : 0;
      sj["cycles"] = sr.result.has_time ? ordered_json(before + sr.result.cycles) : ordered_json(nullptr);
    }
    if (fr) j["family"] = fr->json();
    return j;
  };
  return l;
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
