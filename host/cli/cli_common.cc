// Shared helpers of the `loom` subcommands.
#include "cli/cli_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/hash.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/tensor_io.h"
#include "compiler/options.h"
#include "frontend/onnx/model.h"
#include "plan/program_file.h"

namespace loom::cli {

int fail(const Error& e) { return fail(e.str()); }

namespace {
/// Whether a file can be created in `dir` (root passes access(2) checks, so
/// try it: read-only file systems and special folders say no).
std::string probe_dir(const std::filesystem::path& dir) {
  const std::string probe = (dir / (".loom-write-probe." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}
}  // namespace

namespace {
constexpr const char* kNumberCheck = "loom-number";

/// The strict check of one number option's text (check_option_values).
CLI::Validator number_check(bool integer, bool non_negative, bool time, std::string description) {
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        const std::string got = "got '" + excerpt(text) + "'";
        if (integer) {
          const auto n = parse_int64(text);
          if (!n || (non_negative && *n < 0))
            return std::string(non_negative ? "expected a whole number >= 0, " : "expected a whole number, ") + got;
          return "";
        }
        const auto d = parse_double(text);
        if (!d || (non_negative && std::signbit(*d)))  // "-0" is not >= 0 as text
          return std::string(time           ? "expected a time in ms >= 0, "
                             : non_negative ? "expected a finite number >= 0, "
                                            : "expected a finite number, ") +
                 got;
        return "";
      },
      std::move(description), kNumberCheck);
  return v;
}

bool has_number_check(CLI::Option* o) {
  try {
    (void)o->get_validator(kNumberCheck);
    return true;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}
}  // namespace

CLI::Validator non_negative_number() { return number_check(false, true, false, "NONNEGATIVE"); }

void check_option_values(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type.empty()) continue;  // a flag: it takes no value
    o->check(CLI::Validator(
        [](std::string& text) {
          return text.empty() ? std::string("an empty value (leave the option out for its default)") : std::string();
        },
        "", "loom-non-empty"));
    if (has_number_check(o)) continue;
    const auto is = [&](const char* t) {
      return type.rfind(t, 0) == 0 &&
             (type.size() == std::strlen(t) || type[std::strlen(t)] == ':' || type[std::strlen(t)] == ' ');
    };
    if (is("FLOAT")) {
      bool time = false;  // --...-ms
      for (const std::string& n : o->get_lnames())
        time = time || (n.size() > 3 && n.compare(n.size() - 3, 3, "-ms") == 0);
      o->check(number_check(false, time, time, time ? "NONNEGATIVE" : ""));
    } else if (is("INT") || is("UINT")) {
      o->check(number_check(true, is("UINT"), false, ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_option_values(*sub);
}

Status check_output_file(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string what = flag + " " + path;
  if (path.empty()) return make_error(flag, "expected a file name");
  if (fs::is_directory(path, ec)) return make_error(what, "is a directory");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    return Status::ok();  // /dev/null, a FIFO: written in place
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return make_error(what, "folder '" + dir.string() + "' does not exist");
  if (std::string e = probe_dir(dir); !e.empty())
    return make_error(what, "cannot write in folder '" + dir.string() + "': " + e);
  return Status::ok();
}

Status check_output_dir(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string what = flag + " " + path;
  if (path.empty()) return make_error(flag, "expected a folder name");
  if (fs::exists(path, ec) && !fs::is_directory(path, ec)) return make_error(what, "is not a folder");
  fs::create_directories(path, ec);
  if (ec) return make_error(what, "cannot create the folder: " + ec.message());
  if (std::string e = probe_dir(path); !e.empty()) return make_error(what, "cannot write in the folder: " + e);
  return Status::ok();
}

Expected<std::vector<std::string>> write_output_files(const std::string& dir,
                                                      const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool created = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return make_error("--outputs " + dir, "cannot create the folder: " + ec.message());
  std::vector<std::string> written;
  for (const auto& [name, bytes] : files) {
    const std::string file = (fs::path(dir) / name).string();
    if (Status s = write_file_atomic(file, bytes); !s) {
      for (const auto& w : written) fs::remove(w, ec);
      if (created) fs::remove(dir, ec);
      return s.error();
    }
    written.push_back(file);
  }
  return written;
}

void announce_written(const std::string& command, const std::string& path) {
  std::cerr << "loom " << command << ": wrote " << one_line(path, limits::kMaxErrorBytes) << "\n";
}

int fail(const std::string& msg) {
  std::cerr << "loom: error: " << one_line(msg, limits::kMaxErrorBytes) << "\n";
  return 1;
}

Expected<ir::Graph> load_graph(const std::string& path) {
  const auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") return make_error(path, "ONNX import is not available in this build of loom; use a .json graph");
  if (ext != ".json") return make_error(path, "unknown model format '" + ext + "' (expected a .json graph or a plan)");
  auto g = ir::parse_graph_json(path);
  if (!g) return g.error();
  Status s = ir::validate(*g);
  if (!s) return s.error();
  return g;
}

Expected<const spec::HwConfig*> find_config(const std::string& name) {
  if (const auto* c = spec::find_config(name)) return c;
  std::string known;
  for (const auto& c : spec::kConfigs) known += (known.empty() ? "" : ", ") + std::string(c.name);
  return make_error("--config", "unknown configuration '" + name + "' (available: " + known + ")");
}

Expected<std::map<std::string, Tensor>> load_inputs(const std::vector<std::string>& files,
                                                    const std::vector<plan::TensorBinding>& bindings, uint64_t seed) {
  std::map<std::string, Tensor> in;
  if (files.empty()) {
    // Deterministic seeded inputs (same generator as ir::random_inputs).
    ir::Graph g;
    for (const auto& b : bindings) {
      ir::TensorInfo t;
      t.name = b.name;
      t.dtype = b.dtype;
      t.shape = b.shape;
      g.tensors[b.name] = t;
      g.inputs.push_back(b.name);
    }
    return ir::random_inputs(g, seed);
  }
  if (files.size() != bindings.size())
    return make_error("--inputs", "the model has " + std::to_string(bindings.size()) + " inputs, got " +
                                      std::to_string(files.size()) + " files");
  for (size_t i = 0; i < files.size(); ++i) {
    auto t = read_tensor(files[i]);
    if (!t) return t.error();
    const auto& b = bindings[i];
    if (t->dtype != b.dtype || t->shape != b.shape) {
      // Accept a tensor whose element count matches when only the rank differs (e.g. NCHW-free flat data)?
      // No: shapes must match exactly, so a wrong file is caught early.
      return make_error(files[i], "input '" + b.name + "' expects " + std::string(dtype_name(b.dtype)) + " " +
                                      shape_str(b.shape) + ", file holds " + std::string(dtype_name(t->dtype)) + " " +
                                      shape_str(t->shape));
    }
    in[b.name] = std::move(*t);
  }
  return in;
}

uint64_t file_hash(const std::string& path) {
  auto b = read_file_bytes(path);
  return b ? fnv1a64(b->data(), b->size()) : 0;
}

void add_compile_flags(CLI::App* cmd, CompileFlags& f) {
  f.given.emplace_back("--cores",
                       cmd->add_option("--cores", f.cores, "Cores to compile for (0: all of the configuration)")
                           ->check(CLI::Range(0, 64)));
  f.given.emplace_back("--fusion",
                       cmd->add_option("--fusion", f.fusion, "Fusion policy: none, greedy (every legal group) or cost")
                           ->capture_default_str());
  f.given.emplace_back("--placement",
                       cmd->add_option("--placement", f.placement,
                                       "Placement: static (data-parallel), pipeline (layer stages on core groups) or "
                                       "dynamic (tile tasks dispatched by the runtime)")
                           ->capture_default_str());
  f.given.emplace_back("--tasks-per-core", cmd->add_option("--tasks-per-core", f.tasks_per_core,
                                                           "Dynamic placement: tile tasks per core and layer")
                                               ->check(CLI::Range(1, 64))
                                               ->capture_default_str());
  f.given.emplace_back("--hls",
                       cmd->add_option("--hls", f.hls,
                                       "HLS compute units: off, or auto (layers or parts of them on units when "
                                       "predicted faster)")
                           ->capture_default_str());
  f.given.emplace_back("--depthwise",
                       cmd->add_option("--depthwise", f.depthwise,
                                       "Depthwise convolutions on the cores' depthwise unit (DWCONV) or on the array: "
                                       "auto (the cost model picks per layer), off (the array) or on (the unit)")
                           ->check(CLI::IsMember({"auto", "off", "on"}))
                           ->capture_default_str());
  f.given.emplace_back("--batch-fold",
                       cmd->add_option("--batch-fold", f.batch_fold,
                                       "Convolutions of a batch: auto (the cost model picks per layer between tiles "
                                       "of one image and tiles spanning images that share their weight loads), off "
                                       "(image by image) or on (spanning images wherever they fit)")
                           ->check(CLI::IsMember({"auto", "off", "on"}))
                           ->capture_default_str());
  f.given.emplace_back("--cost-params",
                       cmd->add_option("--cost-params", f.cost_params,
                                       "Cost-model parameters (JSON, e.g. refitted by `loom tune --cost-params-out`) "
                                       "the fusion and tiling passes decide with"));
  f.given.emplace_back("--exact-host",
                       cmd->add_flag("--exact-host", f.exact_host,
                                     "ONNX: keep Softmax, LayerNormalization and linear Resize on the host in float, "
                                     "exact against ONNX Runtime, instead of the fabric's integer row normalizations "
                                     "(ROWNORM) and integer interpolation"));
  cmd->add_option("--input-shape", f.input_shapes,
                  "ONNX: bind graph input NAME to shape D0,D1,... (repeatable; symbolic and fixed dimensions alike)")
      ->type_name("NAME=D0,D1,...")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  cmd->add_option("--dim", f.dims, "ONNX: bind symbolic dimension SYMBOL of the graph inputs to N (repeatable)")
      ->type_name("SYMBOL=N")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  cmd->add_option("--batch", f.batch,
                  "ONNX: dimension 0 of every graph input is N, also where the model fixes it (re-batching a "
                  "batch-1 export)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
}

Expected<onnxfe::ShapeBinding> shape_binding(const CompileFlags& f) {
  onnxfe::ShapeBinding b;
  for (const auto& s : f.input_shapes) LOOM_TRY(onnxfe::parse_input_shape(s, b));
  for (const auto& s : f.dims) LOOM_TRY(onnxfe::parse_dim(s, b));
  b.batch = f.batch;
  return b;
}

Status refuse_shape_flags(const CompileFlags& f, const std::string& what) {
  const char* flag = !f.input_shapes.empty() ? "--input-shape"
                     : !f.dims.empty()       ? "--dim"
                     : f.batch               ? "--batch"
                                             : nullptr;
  if (!flag) return {};
  return make_error(flag, "binds the shapes of an ONNX model; " + what + " has fixed shapes");
}

Expected<compiler::CompileOptions> compile_options(const CompileFlags& f, const spec::HwConfig& cfg) {
  compiler::CompileOptions o;
  if (f.cores < 0 || uint32_t(f.cores) > cfg.cores)
    return make_error("--cores", std::to_string(f.cores) + " is outside [0, " + std::to_string(cfg.cores) +
                                     "] for configuration '" + std::string(cfg.name) + "'");
  o.num_cores = f.cores;
  o.tasks_per_core = f.tasks_per_core;
  auto fusion = compiler::parse_fusion(f.fusion);
  if (!fusion) return fusion.error();
  o.fusion = *fusion;
  auto placement = compiler::parse_placement(f.placement);
  if (!placement) return placement.error();
  o.placement = *placement;
  auto hls = compiler::parse_hls(f.hls);
  if (!hls) return hls.error();
  o.hls = *hls;
  o.exact_host = f.exact_host;
  using D = compiler::CompileOptions::Depthwise;
  for (D d : {D::Auto, D::Off, D::On})
    if (f.depthwise == compiler::depthwise_name(d)) o.depthwise = d;
  using F = compiler::CompileOptions::BatchFold;
  for (F b : {F::Auto, F::Off, F::On})
    if (f.batch_fold == compiler::batch_fold_name(b)) o.batch_fold = b;
  if (!f.cost_params.empty()) {
    auto cp = compiler::read_cost_params(f.cost_params, cfg);
    if (!cp) return cp.error();
    o.cost_params = *cp;
  }
  return o;
}

Status check_plan_flags(const CompileFlags& f, const spec::HwConfig& cfg, const compiler::CompileOptions* recorded,
                        const std::string& plan) {
  std::vector<std::string> given;
  for (const auto& [flag, opt] : f.given)
    if (opt->count() > 0) given.push_back(flag);
  if (given.empty()) return {};
  if (!recorded)
    return make_error(given[0], "plan " + plan + " records no compile options to check it against; recompile it");
  auto want = compile_options(f, cfg);
  if (!want) return want.error();
  const auto rec = compiler::options_to_json(*recorded), asked = compiler::options_to_json(*want);
  for (const auto& flag : given) {
    std::string key = flag.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    // Both built here from typed options; field() all the same, so a flag
    // without a key of its own compares null with null instead of reading
    // past the object.
    const auto &was = field(rec, key), &now = field(asked, key);
    if (was != now)
      return make_error(flag, "plan " + plan + " was compiled with " + key + " " + was.dump() + ", not " + now.dump() +
                                  "; recompile it, or leave the flag out");
  }
  return {};
}

InputKind input_kind(const std::string& path) {
  // A program file with host steps runs with its frontend's values.
  if (plan::looks_like_plan(path)) return plan::host_codec_of(path).empty() ? InputKind::Plan : InputKind::ProgramPlan;
  if (onnxfe::is_onnx_path(path)) return InputKind::Onnx;
  return InputKind::Graph;
}

int& deferred_exit_code() {
  static int code = 0;
  return code;
}

void defer_exit(int rc) {
  if (rc != 0 && deferred_exit_code() == 0) deferred_exit_code() = rc;
}

ordered_json versioned(std::string_view result, const ordered_json& j) {
  ordered_json out{{"schema_version", kSchemaVersion}, {"result", std::string(result)}};
  for (const auto& [k, v] : j.items()) out[k] = v;
  return out;
}

}  // namespace loom::cli
