// `loom run`: execute a plan (or a graph, compiled on the fly) on a backend,
// optionally checking every output bit for bit against the direct reference.
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/cli_common.h"
#include "cli/progress.h"
#include "common/temp_files.h"
#include "common/tensor_io.h"
#include "compiler/compiler.h"
#include "compiler/options.h"
#include "device/device.h"
#include "device/trace.h"
#include "driver/compile.h"
#include "frontend/onnx/value.h"
#include "plan/program_file.h"
#include "runtime/executor.h"

namespace loom::cli {

namespace {

using Opts = RunArgs;

double tensor_at(const Tensor& t, int64_t k) {
  switch (t.dtype) {
    case DType::I8:
      return t.i8()[k];
    case DType::U8:
      return t.data[size_t(k)];
    case DType::I32:
      return t.i32()[k];
    case DType::F32: {
      float f = 0;
      std::memcpy(&f, t.data.data() + 4 * size_t(k), 4);
      return f;
    }
  }
  return 0;
}

// The waveform is written to a temporary file beside --wave and renamed when
// the run succeeds; an interrupt removes it (common/temp_files.h). The FST
// writer also keeps its hierarchy in FILE.hier until it closes.
std::string g_wave_tmp;

int run(const Opts& o);

/// `--wave FILE`: FST (the only format the Verilated fabric writes), checked
/// before the run, never left half-written.
int run_with_wave(const Opts& o) {
  const std::string& w = o.device.wave;
  if (w.size() < 5 || w.compare(w.size() - 4, 4, ".fst") != 0)
    return fail("--wave " + w + ": waveforms are written as FST; name the file *.fst");
  if (Status s = check_output_file("--wave", w); !s) return fail(s.error());
  g_wave_tmp = w + ".tmp." + std::to_string(::getpid());
  const std::string hier = g_wave_tmp + ".hier";
  const TempPath wave_in_flight(g_wave_tmp), hier_in_flight(hier);
  const int rc = run(o);  // the rtl device, and with it the FST writer, is closed on return
  std::error_code ec;
  // A run that fails once the device ran (an assertion, a timeout, a device
  // error) keeps its waves too: they are what the failure is debugged from.
  if (std::filesystem::exists(g_wave_tmp, ec)) {
    std::filesystem::rename(g_wave_tmp, w, ec);
    if (ec) {
      std::filesystem::remove(g_wave_tmp, ec);
      return fail("--wave " + w + ": cannot write the file: " + ec.message());
    }
    announce_written("run", w);
  } else {
    std::filesystem::remove(g_wave_tmp, ec);
  }
  std::filesystem::remove(hier, ec);
  return rc;
}

/// A plan of a JSON graph as its file holds it: the plan, its recorded
/// fields, and the graph --check compares against.
Expected<plan::ProgramFile> read_graph_plan(const Opts& o, std::string& graph_path) {
  auto r = plan::read_program(o.model);  // any format; one segment, no host steps
  if (!r) return r.error();
  if (r->program.segments.size() != 1 || r->program.steps.size() != 1)
    return make_error(o.model + ": metadata: field 'segments'",
                      std::to_string(r->program.segments.size()) +
                          " segments without host steps; a plan without host steps runs one segment");
  const plan::ProgramInfo& info = r->info;
  if (!o.config.empty() && o.config != info.config)
    return error_of("--config: plan " + o.model + " was compiled for '" + info.config + "', not '" + o.config + "'");
  const auto* pc = spec::find_config(info.config);
  if (!pc) return make_error(o.model + ": metadata: field 'config'", "unknown configuration '" + info.config + "'");
  std::optional<compiler::CompileOptions> recorded;
  if (!info.compile_options.empty()) {
    auto ro = compiler::options_from_json(nlohmann::json::parse(info.compile_options, nullptr, false), *pc,
                                          o.model + ": metadata");
    if (!ro) return ro.error();
    recorded = *ro;
  }
  LOOM_TRY(check_plan_flags(o.compile, *pc, recorded ? &*recorded : nullptr, o.model));
  if (graph_path.empty() && o.check) {
    if (info.source.empty() || file_hash(info.source) != info.source_hash)
      return error_of("--check: the graph " + (info.source.empty() ? std::string("of the plan") : info.source) +
                      " is missing or changed since compilation; pass --graph FILE");
    graph_path = info.source;
  }
  return r;
}

/// A JSON graph (compiled here) or its plan, as a program of one segment
/// whose values are device tensors.
Expected<std::unique_ptr<LoadedRun>> load_graph_run(const Opts& o) {
  const bool is_plan = input_kind(o.model) == InputKind::Plan;
  LOOM_TRY(refuse_shape_flags(o.compile, (is_plan ? "plan " : "") + o.model + (is_plan ? "" : ", a JSON graph,")));
  auto l = std::make_unique<LoadedRun>();
  l->kind = is_plan ? "plan" : "graph";
  std::string graph_path = o.graph;
  plan::ProgramInfo info;  // the file's (a plan's own fields for a graph)
  if (is_plan) {
    auto r = read_graph_plan(o, graph_path);
    if (!r) return r.error();
    l->prog = std::move(r->program);
    info = std::move(r->info);
  } else {
    if (!o.graph.empty())
      return error_of("--graph: only a plan is checked against another graph; " + o.model + " is one");
    auto cfg = find_config(o.config.empty() ? "default" : o.config);
    if (!cfg) return cfg.error();
    auto copt = compile_options(o.compile, **cfg);
    if (!copt) return copt.error();
    auto r = driver::compile_program(driver::Source::graph_file(o.model), **cfg, *copt);
    if (!r) return r.error();
    l->prog = plan::single_segment(std::move(r->segments.at(0).plan));
    info = plan::info_of(l->prog.segments[0].plan);
    graph_path = o.model;
  }
  const plan::Plan& p = l->prog.segments[0].plan;
  l->cfg = spec::find_config(p.config);
  l->compile_options = info.compile_options.empty() ? ordered_json(nullptr) : ordered_json::parse(info.compile_options);
  if (o.check) {
    auto g = load_graph(graph_path);
    if (!g) return g.error();
    l->prog.segments[0].graph = std::move(*g);
  }
  const std::string exp_dir = expected_dir(o);
  std::vector<std::string> input_files = o.inputs;
  if (input_files.empty() && has_reference_inputs(exp_dir)) {
    // test_data_set_0 beside the model: its inputs with its outputs.
    for (size_t k = 0; k < p.inputs.size(); ++k) input_files.push_back(exp_dir + "/input_" + std::to_string(k) + ".pb");
  }
  auto inputs = load_inputs(input_files, p.inputs, o.seed);
  if (!inputs) return inputs.error();
  l->seeded = input_files.empty();
  auto* values = new runtime::DeviceValues(std::move(*inputs));
  l->values.reset(values);
  l->outputs = [values, &p, model = o.model]() -> Expected<std::vector<RunOutput>> {
    std::vector<RunOutput> outs;
    for (const auto& b : p.outputs) {
      auto it = values->values().find(b.name);
      if (it == values->values().end()) return make_error(model, "output '" + b.name + "' was not computed");
      const Tensor* t = &it->second;
      const std::string n = b.name;
      outs.push_back(RunOutput{n, std::string(dtype_name(t->dtype)), t->shape, t->numel(),
                               [t](int64_t k) { return tensor_at(*t, k); },
                               [t, n](const std::string& format) -> Expected<std::string> {
                                 return format == "npy" ? encode_npy(*t) : encode_onnx_tensor(*t, n);
                               },
                               ""});
    }
    return outs;
  };
  return l;
}

ordered_json layers_json(const plan::Plan& p, const runtime::RunResult& r, const spec::HwConfig& cfg, int segment);

/// "ran MODEL on BACKEND (config C): ..." whatever the input kind; `layers`
/// of one run of the program.
std::string run_summary(const Opts& o, const LoadedRun& l, const runtime::ProgramRun& run, size_t layers) {
  std::string s = "ran " + o.model + " on " + o.backend + " (config " + std::string(l.cfg->name) +
                  "): " + std::to_string(l.prog.segments.size()) + " device segment" +
                  (l.prog.segments.size() == 1 ? "" : "s") + " (" + std::to_string(layers) + " layers, " +
                  std::to_string(run.instructions) + " instructions on " + std::to_string(l.cfg->cores) + " cores), " +
                  std::to_string(l.prog.host_ops.size()) + " host ops";
  if (run.has_time) s += ", " + std::to_string(run.cycles) + " device cycles";
  return s;
}

/// The one run driver: every input kind loads into a program and its
/// values, runs on one device, and reports the same way.
int run(const Opts& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const InputKind kind = input_kind(o.model);
  const bool onnx = kind == InputKind::Onnx || kind == InputKind::ProgramPlan;
  if (onnx && !o.graph.empty())
    return fail("--graph: a plan of a JSON graph is checked against a graph; " + o.model + " is not one");
  if (!onnx && (!o.buckets.empty() || !o.cache.empty()))
    return fail(std::string(o.buckets.empty() ? "--cache" : "--bucket") + ": " + o.model +
                " has fixed shapes; a family of programs is an ONNX model's");
  auto loaded = onnx ? load_onnx_run(o) : load_graph_run(o);
  if (!loaded) return fail(loaded.error());
  LoadedRun& l = **loaded;
  ordered_json layers = ordered_json::array();
  size_t layer_count = 0;
  auto res = run_on_device(o, l, [&](size_t k, const runtime::ProgramRun& run) {
    for (const auto& sr : run.segments)
      for (auto& lj : layers_json(l.prog.segments[size_t(sr.segment)].plan, sr.result, *l.cfg,
                                  l.name_segments ? sr.segment : -1)) {
        if (l.runs > 1) lj["run"] = k;
        layers.push_back(std::move(lj));
      }
    if (k == 0)
      for (const auto& s : l.prog.segments) layer_count += s.plan.layers.size();
  });
  if (!res) return fail(res.error());

  RunReport rep;
  rep.model = o.model;
  rep.kind = l.kind;
  rep.backend = o.backend;
  rep.config = std::string(l.cfg->name);
  rep.compile_options = l.compile_options;
  if (l.seeded) rep.seed = o.seed;
  if (l.describe) rep.program = l.describe(*res);
  rep.check = o.check;
  rep.checked_segments = res->checked_segments;
  rep.mismatches = res->mismatches;
  auto outputs = l.outputs();
  if (!outputs) return fail(outputs.error());
  rep.outputs = std::move(*outputs);
  rep.layers = std::move(layers);
  rep.summary = run_summary(o, l, *res, layer_count);
  if (const auto f = rep.program.find("family"); f != rep.program.end()) {
    rep.summary += "\n  family of programs: " + (*f)["bucket"].get<std::string>();
    if (l.runs > 1)
      rep.summary += ", " + std::to_string(l.runs) + " runs";
    else
      rep.summary += ", the bucket's program " + (*f)["program"].get<std::string>();
    if (!(*f)["cache_file"].is_null()) rep.summary += " (" + (*f)["cache_file"].get<std::string>() + ")";
  }
  return finish_run(o, rep, l.prog.host_ops.size(), *res, expected_dir(o), t0);
}

}  // namespace

// ---- what every input kind's run shares -----------------------------------

namespace {

ordered_json cores_json(const std::vector<const runtime::RunResult*>& runs) {
  ordered_json cores = ordered_json::array();
  size_t n = 0;
  bool timed = false;
  for (const auto* r : runs) n = std::max(n, r->cores.size()), timed = timed || r->has_time;
  for (size_t c = 0; c < n; ++c) {
    std::array<uint64_t, spec::kNumCounters> sum{};
    uint64_t insns = 0;
    for (const auto* r : runs) {
      if (c >= r->cores.size()) continue;
      for (unsigned k = 0; k < spec::kNumCounters; ++k) sum[k] += r->cores[c].counters[k];
      insns += r->cores[c].instructions;
    }
    ordered_json ctr;
    for (unsigned k = 0; k < spec::kNumCounters; ++k) ctr[std::string(spec::kCounterNames[k])] = sum[k];
    ordered_json cj{{"core", c}, {"instructions", insns}};
    cj["cycles"] = timed ? ordered_json(sum[size_t(spec::Counter::CYCLES_BUSY)]) : ordered_json(nullptr);
    cj["counters"] = ctr;
    cores.push_back(cj);
  }
  return cores;
}

ordered_json layers_json(const plan::Plan& p, const runtime::RunResult& r, const spec::HwConfig& cfg, int segment) {
  ordered_json out = ordered_json::array();
  const bool timed = r.layer_cycles.size() == p.layers.size();
  const double peak =
      double(cfg.array_rows) * double(cfg.array_cols) * double(cfg.cores);  // MACs per cycle of the fabric
  for (size_t k = 0; k < p.layers.size(); ++k) {
    const auto& l = p.layers[k];
    ordered_json lj;
    if (segment >= 0) lj["segment"] = segment;
    lj["name"] = l.name;
    lj["op"] = l.op;
    lj["macs"] = l.macs;
    lj["cycles"] = timed ? ordered_json(r.layer_cycles[k]) : ordered_json(nullptr);
    lj["mac_utilization"] = timed && r.layer_cycles[k] > 0 && peak > 0
                                ? ordered_json(double(l.macs) / (double(r.layer_cycles[k]) * peak))
                                : ordered_json(nullptr);
    out.push_back(lj);
  }
  return out;
}

void print_expected(const ordered_json& e) {
  double maxd = 0, cosmin = 1;
  int64_t bad = 0;
  for (const auto& x : e["outputs"]) {
    maxd = std::max(maxd, x["max_abs_diff"].get<double>());
    cosmin = std::min(cosmin, x["cosine_similarity"].get<double>());
    bad += x["mismatched_elements"].get<int64_t>();
  }
  std::cout << "  reference outputs in " << e["dir"].get<std::string>() << ": max |diff| " << maxd
            << ", cosine similarity " << cosmin << ", " << bad
            << " elements outside |diff| <= " << e["atol"].get<double>() << " + " << e["rtol"].get<double>()
            << " * |ref|" << (e["required"].get<bool>() ? "" : " (reported; --expected DIR requires it)") << "\n";
}

Expected<ordered_json> compare_expected(const std::string& dir, const std::vector<RunOutput>& outs, double atol,
                                        double rtol, bool* ok) {
  *ok = true;
  ordered_json j{{"dir", dir}, {"atol", atol}, {"rtol", rtol}};
  ordered_json per = ordered_json::array();
  for (size_t k = 0; k < outs.size(); ++k) {
    const RunOutput& o = outs[k];
    const std::string base = dir + "/output_" + std::to_string(k);
    std::error_code ec;
    const bool npy = !std::filesystem::exists(base + ".pb", ec) && std::filesystem::exists(base + ".npy", ec);
    const std::string file = base + (npy ? ".npy" : ".pb");
    std::vector<int64_t> shape;
    std::function<double(int64_t)> want;
    onnxfe::Value v;
    Tensor t;
    if (npy) {
      auto r = read_tensor(file);
      if (!r) return Error(r.error());
      t = std::move(*r);
      shape = t.shape;
      want = [&t](int64_t i) { return tensor_at(t, i); };
    } else {
      auto r = onnxfe::read_value(file);
      if (!r) return Error(r.error());
      v = std::move(*r);
      shape = v.shape;
      want = [&v](int64_t i) { return v.at(i); };
    }
    if (shape != o.shape)
      return make_error("--expected " + file,
                        "has shape " + shape_str(shape) + "; output '" + o.name + "' has " + shape_str(o.shape));
    int64_t bad = 0;
    double max_abs = 0, sum_abs = 0, dot = 0, na = 0, nb = 0;
    for (int64_t i = 0; i < o.numel; ++i) {
      const double g = o.at(i), w = want(i), d = std::fabs(g - w);
      if (!(d <= atol + rtol * std::fabs(w))) ++bad;
      max_abs = std::max(max_abs, d);
      sum_abs += d;
      dot += g * w, na += g * g, nb += w * w;
    }
    const double cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
    per.push_back(ordered_json{{"output", o.name},
                               {"file", file},
                               {"mismatched_elements", bad},
                               {"max_abs_diff", max_abs},
                               {"mean_abs_diff", o.numel ? sum_abs / double(o.numel) : 0.0},
                               {"cosine_similarity", cosine}});
    if (bad) *ok = false;
  }
  j["outputs"] = per;
  j["within_tolerance"] = *ok;
  return j;
}

std::vector<runtime::TraceRecorder::LayerSpan> layer_spans(const plan::Plan& p, const runtime::RunResult& r,
                                                           const std::string& prefix = "") {
  std::vector<runtime::TraceRecorder::LayerSpan> spans;
  if (r.layer_cycles.size() != p.layers.size() || r.layer_start.size() != p.layers.size()) return spans;
  for (size_t k = 0; k < p.layers.size(); ++k)
    spans.push_back({prefix + p.layers[k].name + " (" + p.layers[k].op + ")", r.layer_start[k],
                     r.layer_start[k] + r.layer_cycles[k]});
  return spans;
}

Status write_trace(runtime::TraceRecorder& trace, const RunArgs& a, const runtime::Device& dev, uint64_t cycles,
                   const std::vector<runtime::TraceRecorder::LayerSpan>& spans) {
  const auto& cfg = dev.config();
  trace.label_layers(spans, cfg.cores);
  LOOM_TRY(trace.write_json(a.trace, a.backend, cfg.name, cfg.clock_mhz, cfg.cores, cycles));
  announce_written("run", a.trace);
  return Status::ok();
}

Expected<std::unique_ptr<runtime::Device>> open_device(const RunArgs& a, const spec::HwConfig& cfg,
                                                       runtime::TraceRecorder* trace) {
  DeviceFlags flags = a.device;
  if (!flags.wave.empty()) flags.wave = g_wave_tmp;  // renamed to --wave when the run ends
  auto dev = open_backend(a.backend, cfg, flags);
  if (!dev) return dev.error();
  if (trace && !(*dev)->set_trace(trace))
    return make_error("--trace", "the " + a.backend + " backend records no timelines (use tlm or rtl)");
  return dev;
}

}  // namespace

bool has_reference_inputs(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::is_regular_file(std::filesystem::path(dir) / "input_0.pb", ec);
}

std::string expected_dir(const RunArgs& a) {
  if (!a.expected.empty()) return a.expected;
  if (!a.inputs.empty()) return "";
  std::error_code ec;
  const auto dir = std::filesystem::path(a.model).parent_path() / "test_data_set_0";
  if (std::filesystem::is_regular_file(dir / "input_0.pb", ec) &&
      std::filesystem::is_regular_file(dir / "output_0.pb", ec))
    return dir.string();
  return "";
}

namespace {

/// Run `k` of `runs` added to `into`: its segments after `into`'s, its
/// counts summed, its mismatches named by the run when there are several.
void add_run(runtime::ProgramRun& into, runtime::ProgramRun from, size_t k, size_t runs) {
  into.has_time = k == 0 ? from.has_time : into.has_time && from.has_time;
  into.cycles += from.cycles;
  into.instructions += from.instructions;
  into.ring_refills += from.ring_refills;
  into.checked_segments += from.checked_segments;
  for (auto& m : from.mismatches) {
    if (runs > 1) m.output = "run " + std::to_string(k) + " " + m.output;
    into.mismatches.push_back(std::move(m));
  }
  for (auto& sr : from.segments) into.segments.push_back(std::move(sr));
}

}  // namespace

Expected<runtime::ProgramRun> run_on_device(const RunArgs& a, LoadedRun& l,
                                            const std::function<void(size_t, const runtime::ProgramRun&)>& each) {
  runtime::TraceRecorder trace;
  auto dev = open_device(a, *l.cfg, a.trace.empty() ? nullptr : &trace);
  if (!dev) return dev.error();
  runtime::RunOptions ro;
  ro.layer_cycles = a.layer_cycles || !a.trace.empty();
  ro.check = a.check;
  Progress progress("run " + a.model + " on " + a.backend);
  runtime::ProgramRun total;
  std::vector<runtime::TraceRecorder::LayerSpan> spans;
  Expected<runtime::ProgramRun> res = total;
  for (size_t k = 0; k < l.runs && res; ++k) {
    if (k > 0) {
      if (Status s = l.next(k); !s) {
        res = s.error();
        break;
      }
    }
    ro.progress = [&](uint64_t done, uint64_t n) {
      progress.update((double(k) + (n ? double(done) / double(n) : 0.0)) / double(l.runs));
    };
    res = runtime::run_program(**dev, l.prog, *l.values, ro);
    if (!res) break;
    each(k, *res);
    if (!a.trace.empty())
      for (const auto& sr : res->segments) {
        std::string prefix = l.runs > 1 ? "run " + std::to_string(k) + " " : "";
        if (l.name_segments) prefix += "segment " + std::to_string(sr.segment) + " ";
        for (auto& sp : layer_spans(l.prog.segments[size_t(sr.segment)].plan, sr.result, prefix))
          spans.push_back(std::move(sp));
      }
    add_run(total, std::move(*res), k, l.runs);
    res = total;
  }
  progress.finish();
  (*dev)->set_trace(nullptr);
  // A failed run still gets its trace (its error instants show where it stopped).
  if (!a.trace.empty()) {
    // One segment run once and nothing else: the run's own cycles; else the
    // device's clock over the whole program (host steps take no device time).
    const uint64_t cycles =
        res && l.runs == 1 && l.prog.steps.size() == 1 ? res->cycles : (*dev)->cycles() - trace.origin();
    LOOM_TRY(write_trace(trace, a, **dev, cycles, spans));
  }
  return res;
}

std::string RunReport::check_line(size_t host_ops) const {
  if (checked_segments == 0)
    return "check: nothing ran on the device (0 device segments, " + std::to_string(host_ops) +
           " host ops; see --explain), so nothing was compared against the direct reference";
  return "check of " + std::to_string(checked_segments) + " device segment" + (checked_segments == 1 ? "" : "s") +
         " against the direct reference: " + (exact() ? "bit-exact" : "MISMATCH");
}

ordered_json RunReport::to_json() const {
  ordered_json j;
  j["model"] = model;
  j["kind"] = kind;
  j["backend"] = backend;
  j["config"] = config;
  j["compile_options"] = compile_options;
  if (seed) j["seed"] = *seed;
  for (const auto& [k, v] : program.items()) j[k] = v;
  if (check) {
    j["checked_segments"] = checked_segments;
    // Nothing ran on the device: nothing was compared, so no claim either way.
    j["bit_exact"] = checked_segments == 0 ? ordered_json(nullptr) : ordered_json(exact());
    if (!mismatches.empty()) {
      ordered_json mism = ordered_json::array();
      for (const auto& m : mismatches)
        mism.push_back(
            ordered_json{{"output", m.output}, {"mismatched_elements", m.elements}, {"max_abs_diff", m.max_abs_diff}});
      j["mismatches"] = mism;
    }
  }
  if (!expected.is_null()) j["expected"] = expected;
  if (!run) return j;
  ordered_json outs = ordered_json::array();
  for (const RunOutput& o : outputs) {
    outs.push_back(ordered_json{{"name", o.name}, {"dtype", o.dtype}, {"shape", o.shape}});
    if (!o.file.empty()) outs.back()["file"] = o.file;
  }
  j["outputs"] = outs;
  j["has_time"] = run->has_time;
  j["cycles"] = run->has_time ? ordered_json(run->cycles) : ordered_json(nullptr);
  j["instructions"] = run->instructions;
  j["ring_refills"] = run->ring_refills;
  j["cores"] = cores;
  j["layers"] = layers;
  j["wall_seconds"] = wall_seconds;
  return j;
}

int finish_run(const RunArgs& a, RunReport& r, size_t host_ops, const runtime::ProgramRun& run,
               const std::string& exp_dir, std::chrono::steady_clock::time_point t0) {
  bool within = true;
  if (!exp_dir.empty()) {
    auto cmp = compare_expected(exp_dir, r.outputs, a.atol, a.rtol, &within);
    if (!cmp) return fail(cmp.error());
    // test_data_set_0 found beside the model is reported; only --expected
    // DIR makes the tolerance a condition of success.
    (*cmp)["required"] = !a.expected.empty();
    if (a.expected.empty()) within = true;
    r.expected = *cmp;
  }
  // Outputs are written only after a successful run whose checks (if any)
  // passed, all of them or none.
  if ((r.check && !r.exact()) || !within) {
    std::cerr << "loom: error: "
              << (!r.exact() ? "device outputs differ from the direct reference"
                             : "outputs differ from the reference outputs in " + exp_dir)
              << (a.outputs.empty() ? "" : "; nothing written to --outputs " + a.outputs) << "\n";
    if (a.json) std::cout << versioned("run", r.to_json()).dump(2) << "\n";
    return 1;
  }
  if (!a.outputs.empty()) {
    std::vector<std::pair<std::string, std::string>> files;
    for (size_t k = 0; k < r.outputs.size(); ++k) {
      auto bytes = r.outputs[k].encode(a.format);
      if (!bytes)
        return fail(Status(bytes.error())
                        .context("--output-format " + a.format + ": output '" + r.outputs[k].name + "'")
                        .error());
      files.emplace_back("output_" + std::to_string(k) + "." + a.format, std::move(*bytes));
    }
    auto written = write_output_files(a.outputs, files);
    if (!written) return fail(written.error());
    for (size_t k = 0; k < written->size(); ++k) {
      r.outputs[k].file = (*written)[k];
      announce_written("run", (*written)[k]);
    }
  }
  std::vector<const runtime::RunResult*> runs;
  for (const auto& sr : run.segments) runs.push_back(&sr.result);
  r.run = &run;
  r.cores = cores_json(runs);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.json) {
    std::cout << versioned("run", r.to_json()).dump(2) << "\n";
    return 0;
  }
  std::cout << r.summary << "\n";
  for (const RunOutput& o : r.outputs) {
    std::cout << "  output " << o.name << " " << o.dtype << " " << ordered_json(o.shape).dump();
    if (!o.file.empty()) std::cout << " -> " << o.file;
    std::cout << "\n";
  }
  if (r.check) std::cout << "  " << r.check_line(host_ops) << "\n";
  if (!exp_dir.empty()) print_expected(r.expected);
  return 0;
}

void register_run(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("run", "Run a graph, an ONNX model or a plan on a backend");
  cmd->add_option("MODEL", o->model,
                  "Graph (.json) or ONNX model (.onnx), compiled on the fly, or a plan or program plan")
      ->required();
  cmd->add_option("--backend", o->backend, "Backend (see `loom info`)")->capture_default_str();
  cmd->add_option("--config", o->config, "Hardware configuration (models: default 'default'; plans: must match)");
  cmd->add_option("--inputs", o->inputs, "Input tensors (.pb or .npy), in graph input order")->expected(1, -1);
  cmd->add_option("--bucket", o->buckets,
                  "ONNX: run as a family of programs, SYMBOL's buckets A,B,... (repeatable; the inputs' shapes pick "
                  "the bucket, a batch is padded up to it, or split into runs of the largest; docs/onnx.md)")
      ->type_name("SYMBOL=A,B,...");
  cmd->add_option("--cache", o->cache, "ONNX with --bucket: folder keeping the family's compiled programs");
  cmd->add_option("--outputs", o->outputs, "Directory for output_0.<fmt>, output_1.<fmt>, ... in graph output order");
  cmd->add_option("--output-format", o->format, "Output file format")
      ->check(CLI::IsMember({"pb", "npy"}))
      ->capture_default_str();
  cmd->add_flag("--check", o->check, "Compare every device output bit for bit with loom's direct reference");
  cmd->add_option("--expected", o->expected,
                  "Folder of reference outputs (output_K.pb or .npy) to compare with; default: test_data_set_0 "
                  "beside the model when --inputs is not given");
  cmd->add_option("--atol", o->atol, "Absolute tolerance of --expected")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--rtol", o->rtol, "Relative tolerance of --expected")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--graph", o->graph, "Graph to check a plan against (default: the one it was compiled from)");
  cmd->add_option("--seed", o->seed, "Seed for random inputs when neither --inputs nor test data are given")
      ->capture_default_str();
  add_compile_flags(cmd, o->compile);
  cmd->add_flag("--layer-cycles", o->layer_cycles,
                "Measure every layer's cycles (timed backends, static plans): the streams are released one layer at "
                "a time, which costs about one ring fetch per layer boundary (docs/trace.md); implied by --trace");
  cmd->add_option("--wave", o->device.wave, "Write an FST waveform of the fabric's signals (rtl, cosim)");
  add_device_flags(cmd, o->device);
  cmd->add_option("--trace", o->trace,
                  "Write per-core timelines, slices named by layer, as Chrome trace JSON (tlm, rtl; docs/trace.md)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    const int rc = o->device.wave.empty() ? run(*o) : run_with_wave(*o);
    if (rc != 0) return defer_exit(rc);
  });
}

}  // namespace loom::cli
