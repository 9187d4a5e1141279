// `loom run`: execute a plan (or a graph, compiled on the fly) on a backend,
// optionally checking every output bit for bit against the direct reference.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/cli_common.h"
#include "common/tensor_io.h"
#include "compiler/compiler.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/trace.h"

namespace loom::cli {

Expected<compiler::CompileResult> compile_graph(const std::string& path, const spec::HwConfig& cfg, int cores);
Expected<compiler::CompileResult> compile_graph(const std::string& path, const spec::HwConfig& cfg,
                                                const compiler::CompileOptions& opt);

namespace {

struct Opts {
  std::string model, backend = "ref", config, outputs, format = "pb", graph, wave, trace;
  std::vector<std::string> inputs;
  bool check = false, json = false;
  uint64_t seed = 1;
  int cores = 0;
  std::string placement = "static";  // graphs compiled on the fly
  std::string hls = "off";           // graphs compiled on the fly
};

ordered_json tensor_json(const std::string& name, const Tensor& t) {
  return ordered_json{{"name", name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
}

// The waveform is written to a temporary file beside --wave and renamed when
// the run succeeds; SIGINT or SIGTERM remove it (unlink is async-signal-safe).
// The FST writer also keeps its hierarchy in FILE.hier until it closes.
std::string g_wave_tmp, g_wave_hier;

extern "C" void remove_wave_and_exit(int sig) {
  if (!g_wave_tmp.empty()) ::unlink(g_wave_tmp.c_str());
  if (!g_wave_hier.empty()) ::unlink(g_wave_hier.c_str());
  static const char msg[] = "loom: error: interrupted; no waveform written\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(128 + sig);
}

int run(const Opts& o);

/// `--wave FILE`: FST (the only format the Verilated fabric writes), checked
/// before the run, never left half-written.
int run_with_wave(const Opts& o) {
  const std::string& w = o.wave;
  if (w.size() < 5 || w.compare(w.size() - 4, 4, ".fst") != 0)
    return fail("--wave " + w + ": waveforms are written as FST; name the file *.fst");
  if (Status s = check_output_file("--wave", w); !s) return fail(s.error());
  g_wave_tmp = w + ".tmp." + std::to_string(::getpid());
  g_wave_hier = g_wave_tmp + ".hier";
  struct sigaction sa {};
  sa.sa_handler = remove_wave_and_exit;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  const int rc = run(o);  // the rtl device, and with it the FST writer, is closed on return
  std::error_code ec;
  if (rc == 0 && std::filesystem::exists(g_wave_tmp, ec)) {
    std::filesystem::rename(g_wave_tmp, w, ec);
    if (ec) {
      std::filesystem::remove(g_wave_tmp, ec);
      return fail("--wave " + w + ": cannot write the file: " + ec.message());
    }
  } else {
    std::filesystem::remove(g_wave_tmp, ec);
  }
  std::filesystem::remove(g_wave_hier, ec);
  return rc;
}

int run(const Opts& o) {
  if (is_onnx_model(o.model) || plan::plan_format_version(o.model) == plan::kProgramFormatVersion) {
    for (const auto& [flag, value] : {std::pair{"--trace", &o.trace}, {"--wave", &o.wave}, {"--graph", &o.graph}})
      if (!value->empty()) return fail(std::string(flag) + ": not available for ONNX models and program plans (" + o.model + ")");
    return run_onnx(OnnxRunArgs{o.model, o.backend, o.config, o.outputs, o.inputs, o.check, o.json, o.cores});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const bool is_plan = plan::looks_like_plan(o.model);
  plan::Plan p;
  std::string graph_path = o.graph;
  if (is_plan) {
    auto r = plan::read_plan(o.model);
    if (!r) return fail(r.error());
    p = std::move(*r);
    if (!o.config.empty() && o.config != p.config)
      return fail("--config: plan " + o.model + " was compiled for '" + p.config + "', not '" + o.config + "'");
    if (graph_path.empty() && o.check) {
      if (p.graph_source.empty() || file_hash(p.graph_source) != p.graph_hash)
        return fail("--check: the graph " + (p.graph_source.empty() ? std::string("of the plan") : p.graph_source) +
                    " is missing or changed since compilation; pass --graph FILE");
      graph_path = p.graph_source;
    }
  } else {
    auto cfg = find_config(o.config.empty() ? "default" : o.config);
    if (!cfg) return fail(cfg.error());
    auto placement = compiler::parse_placement(o.placement);
    if (!placement) return fail(placement.error());
    auto hls = compiler::parse_hls(o.hls);
    if (!hls) return fail(hls.error());
    compiler::CompileOptions copt;
    copt.num_cores = o.cores;
    copt.placement = *placement;
    copt.hls = *hls;
    auto r = compile_graph(o.model, **cfg, copt);
    if (!r) return fail(r.error());
    p = std::move(r->plan);
    graph_path = o.model;
  }
  const auto* cfg = spec::find_config(p.config);

  auto inputs = load_inputs(o.inputs, p.inputs, o.seed);
  if (!inputs) return fail(inputs.error());

  if (!o.wave.empty()) {
    if (o.backend != "rtl") return fail("--wave: waveforms come from the rtl backend, not '" + o.backend + "'");
    ::setenv("LOOM_RTL_TRACE", g_wave_tmp.c_str(), 1);  // renamed to --wave when the run succeeds
  }
  auto dev = runtime::make_device(o.backend, *cfg);
  if (!dev) return fail(dev.error());
  runtime::TraceRecorder trace;
  if (!o.trace.empty() && !(*dev)->set_trace(&trace))
    return fail("--trace: the " + o.backend + " backend records no timelines (use tlm or rtl)");
  auto res = runtime::execute(**dev, p, *inputs);
  (*dev)->set_trace(nullptr);
  // A failed run still gets its trace (its error instants show where it stopped).
  if (!o.trace.empty())
    if (Status s = trace.write_json(o.trace, o.backend, p.config, cfg->clock_mhz, cfg->cores,
                                    res ? res->cycles : (*dev)->cycles() - trace.origin());
        !s)
      return fail(s.error());
  if (!res) return fail(res.error());

  ordered_json j;
  j["model"] = o.model;
  j["kind"] = is_plan ? "plan" : "graph";
  j["backend"] = o.backend;
  j["config"] = p.config;
  if (o.inputs.empty()) j["seed"] = o.seed;

  bool exact = true;
  if (o.check) {
    auto g = load_graph(graph_path);
    if (!g) return fail(g.error());
    auto ref = ir::run_reference(*g, *inputs);
    if (!ref) return fail(ref.error());
    ordered_json mism = ordered_json::array();
    for (const auto& [name, t] : res->outputs) {
      auto it = ref->find(name);
      if (it == ref->end()) return fail("--check: reference produced no output '" + name + "'");
      const Tensor& r = it->second;
      int64_t diff = 0, maxd = 0;
      if (r.dtype != t.dtype || r.shape != t.shape) {
        diff = t.numel();
      } else {
        for (int64_t i = 0; i < t.numel(); ++i) {
          const int64_t a = t.dtype == DType::I32 ? t.i32()[i] : t.i8()[i];
          const int64_t b = r.dtype == DType::I32 ? r.i32()[i] : r.i8()[i];
          if (a != b) {
            ++diff;
            maxd = std::max<int64_t>(maxd, std::llabs(a - b));
          }
        }
      }
      if (diff) {
        exact = false;
        mism.push_back(ordered_json{{"output", name}, {"mismatched_elements", diff}, {"max_abs_diff", maxd}});
      }
    }
    j["bit_exact"] = exact;
    if (!exact) j["mismatches"] = mism;
  }

  // Outputs are written only after a successful run whose check (if asked
  // for) passed, all of them or none.
  if (o.check && !exact) {
    std::cerr << "loom: error: outputs differ from the direct reference"
              << (o.outputs.empty() ? "" : "; nothing written to --outputs " + o.outputs) << "\n";
    if (o.json) std::cout << j.dump(2) << "\n";
    return 1;
  }
  ordered_json outs = ordered_json::array();
  std::vector<std::pair<std::string, std::string>> files;
  for (size_t i = 0; i < res->outputs.size(); ++i) {
    const auto& [name, t] = res->outputs[i];
    outs.push_back(tensor_json(name, t));
    if (o.outputs.empty()) continue;
    const std::string file = "output_" + std::to_string(i) + "." + o.format;
    files.emplace_back(file, o.format == "npy" ? encode_npy(t) : encode_onnx_tensor(t, name));
  }
  if (!o.outputs.empty()) {
    auto written = write_output_files(o.outputs, files);
    if (!written) return fail(written.error());
    for (size_t i = 0; i < written->size(); ++i) outs[i]["file"] = (*written)[i];
  }
  j["outputs"] = outs;

  uint64_t insns = 0;
  ordered_json cores = ordered_json::array();
  for (size_t c = 0; c < res->cores.size(); ++c) {
    const auto& cr = res->cores[c];
    insns += cr.instructions;
    ordered_json ctr;
    for (unsigned k = 0; k < spec::kNumCounters; ++k) ctr[std::string(spec::kCounterNames[k])] = cr.counters[k];
    ordered_json cj{{"core", c}, {"instructions", cr.instructions}};
    cj["cycles"] = res->has_time ? ordered_json(cr.counters[size_t(spec::Counter::CYCLES_BUSY)]) : ordered_json(nullptr);
    cj["counters"] = ctr;
    cores.push_back(cj);
  }
  j["has_time"] = res->has_time;
  j["cycles"] = res->has_time ? ordered_json(res->cycles) : ordered_json(nullptr);
  j["instructions"] = insns;
  j["ring_refills"] = res->ring_refills;
  j["cores"] = cores;
  j["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "ran " << o.model << " on " << o.backend << " (config " << p.config << "): " << insns
              << " instructions on " << res->cores.size() << " cores";
    if (res->has_time) std::cout << ", " << res->cycles << " cycles";
    std::cout << "\n";
    for (const auto& oj : outs) {
      std::cout << "  output " << oj["name"].get<std::string>() << " " << oj["dtype"].get<std::string>() << " "
                << oj["shape"].dump();
      if (oj.contains("file")) std::cout << " -> " << oj["file"].get<std::string>();
      std::cout << "\n";
    }
    if (o.check) std::cout << "  check against the direct reference: " << (exact ? "bit-exact" : "MISMATCH") << "\n";
  }
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("run", "Run a plan or a graph on a backend");
  cmd->add_option("MODEL", o->model, "Plan file, or a graph (.json) compiled on the fly")->required();
  cmd->add_option("--backend", o->backend, "Backend (see `loom info`)")->capture_default_str();
  cmd->add_option("--config", o->config, "Hardware configuration (graphs: default 'default'; plans: must match)");
  cmd->add_option("--inputs", o->inputs, "Input tensors (.pb or .npy), in graph input order")->expected(1, -1);
  cmd->add_option("--outputs", o->outputs, "Directory for output_0.<fmt>, output_1.<fmt>, ... in graph output order");
  cmd->add_option("--output-format", o->format, "Output file format")
      ->check(CLI::IsMember({"pb", "npy"}))
      ->capture_default_str();
  cmd->add_flag("--check", o->check, "Compare every output with the direct reference implementation");
  cmd->add_option("--graph", o->graph, "Graph to check a plan against (default: the one it was compiled from)");
  cmd->add_option("--seed", o->seed, "Seed for random inputs when --inputs is not given")->capture_default_str();
  cmd->add_option("--cores", o->cores, "Cores to compile a graph for (0: all)")->check(CLI::Range(0, 64));
  cmd->add_option("--placement", o->placement, "Placement of a graph compiled on the fly: static, pipeline or dynamic")
      ->capture_default_str();
  cmd->add_option("--hls", o->hls, "HLS compute units for a graph compiled on the fly: off or auto")
      ->capture_default_str();
  cmd->add_option("--wave", o->wave, "Write an FST waveform of the run (rtl backend)");
  cmd->add_option("--trace", o->trace, "Write per-core timelines as Chrome trace JSON (tlm, rtl; docs/trace.md)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    const int rc = o->wave.empty() ? run(*o) : run_with_wave(*o);
    if (rc != 0) return defer_exit(rc);
  });
}

}  // namespace loom::cli
