// `loom compare MODEL.onnx`: where loom and ONNX Runtime part on a quantized
// (QDQ) model, layer by layer (docs/onnx.md). loom makes the inputs as
// `loom run` does (--inputs read, else seeded with --seed) and writes them
// for both sides; scripts/compare.py marks every quantized tensor as a graph
// output, runs ONNX Runtime and `loom run --backend ref` on the same inputs
// and compares them in integer LSBs. With --json, the script's document is
// printed here as the "compare" result.
//
// LOOM_PYTHON overrides the interpreter (default python3 on PATH) and
// LOOM_COMPARE_SCRIPT the script (default: the source tree's
// scripts/compare.py).
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli_common.h"
#include "cli/process.h"
#include "common/json_read.h"
#include "common/temp_files.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "frontend/onnx/value.h"

namespace loom::cli {

namespace {

namespace fs = std::filesystem;

struct CompareOpts {
  std::string model, against = "onnxruntime", floor_cpu;
  std::vector<std::string> inputs;
  bool layers = false, json = false, local = false;
  double min_cosine = 0;
  CLI::Option* min_cosine_opt = nullptr;
  int64_t seed = 1;
};

/// A new folder under the system's temporary folder, removed with what is in
/// it when this goes away: nothing of a comparison stays behind.
class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    std::string t = (fs::temp_directory_path(ec) / "loom_compare_XXXXXX").string();
    if (!ec && ::mkdtemp(t.data())) {
      path_ = t;
      in_flight_ = TempPath(t, TempPath::Folder);  // an interrupt removes it too
    }
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  TempPath in_flight_;
};

Status check_opts(const CompareOpts& o) {
  std::error_code ec;
  if (fs::is_directory(o.model, ec)) return make_error(o.model, "is a folder, not an ONNX model");
  if (!fs::is_regular_file(o.model, ec)) return make_error(o.model, "no such file");
  if (o.seed < 0) return make_error("--seed", "must be >= 0, not " + std::to_string(o.seed));
  if (o.min_cosine_opt->count() > 0 && !std::isfinite(o.min_cosine))
    return make_error("--min-cosine", "must be a finite number");
  // A qemu CPU model name (Nehalem, Haswell, Skylake-Client-v4, ...), passed to qemu as one argument.
  const bool name_ok = std::all_of(o.floor_cpu.begin(), o.floor_cpu.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
  if (!name_ok || o.floor_cpu.size() > 64 || (!o.floor_cpu.empty() && o.floor_cpu[0] == '-'))
    return make_error("--floor-cpu", "'" + o.floor_cpu.substr(0, 64) +
                                         "' is not a CPU model name (letters, digits, '-', '_', '.'; e.g. Nehalem)");
  return {};
}

/// The inputs of the comparison, as loom reads or seeds them, written as
/// DIR/input_K.pb (named by their graph inputs): both sides read these.
Expected<std::vector<std::string>> write_inputs(const CompareOpts& o, const std::string& dir) {
  auto m = onnxfe::load_model(o.model);
  if (!m) return m.error();
  auto in = o.inputs.empty() ? onnxfe::random_inputs(*m, uint64_t(o.seed)) : onnxfe::read_inputs(*m, o.inputs);
  if (!in) return in.error();
  std::vector<std::string> files;
  for (size_t k = 0; k < m->inputs.size(); ++k) {
    const std::string& name = m->inputs[k];
    auto bytes = onnxfe::to_proto_bytes(in->at(name), name);
    const std::string f = dir + "/input_" + std::to_string(k) + ".pb";
    std::ofstream out(f, std::ios::binary);
    if (!(out << bytes) || !out.flush()) return make_error(f, "cannot write the input file");
    files.push_back(f);
  }
  return files;
}

std::vector<std::string> script_args(const CompareOpts& o, const std::string& dir,
                                     const std::vector<std::string>& files) {
  std::vector<std::string> a{o.model, "--loom", self_exe(), "--work", dir, "--inputs"};
  a.insert(a.end(), files.begin(), files.end());
  if (o.inputs.empty()) {
    a.insert(a.end(), {"--seed", std::to_string(o.seed)});
  } else {
    a.push_back("--given");
    a.insert(a.end(), o.inputs.begin(), o.inputs.end());
  }
  if (o.layers) a.push_back("--layers");
  if (o.local) a.push_back("--local");
  if (!o.floor_cpu.empty()) a.insert(a.end(), {"--floor-cpu", o.floor_cpu});
  if (o.json) a.insert(a.end(), {"--json-out", dir + "/result.json"});
  if (o.min_cosine_opt->count() > 0) {
    char text[32];  // the shortest text that reads back as the same double
    const auto r = std::to_chars(text, text + sizeof text, o.min_cosine);
    a.insert(a.end(), {"--min-cosine", std::string(text, r.ptr)});
  }
  return a;
}

int compare(const CompareOpts& o) {
  if (Status s = check_opts(o); !s) return fail(s.error());
  if (self_exe().empty()) return fail("compare: cannot find the loom binary (/proc/self/exe)");
  ScratchDir dir;
  if (dir.path().empty()) return fail("compare: cannot create a temporary folder");
  auto files = write_inputs(o, dir.path());
  if (!files) return fail(files.error());
  const int rc = run_python_script(
      {"compare", "LOOM_COMPARE_SCRIPT", LOOM_COMPARE_SCRIPT, "numpy, onnx, onnxruntime", "numpy, onnx or onnxruntime"},
      script_args(o, dir.path(), *files));
  // The script writes its document only when the comparison finished (also
  // when a layer is under --min-cosine: printed, then the exit code).
  const std::string result = dir.path() + "/result.json";
  std::error_code ec;
  if (o.json && fs::is_regular_file(result, ec)) {
    auto doc = read_json_file(result, uint64_t(1) << 30);
    if (!doc) return fail(doc.error());
    std::cout << versioned("compare", *doc).dump(2) << "\n";
  }
  return rc;
}

}  // namespace

void register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOpts>();
  auto* c = app.add_subcommand("compare",
                               "Compare loom with ONNX Runtime on a quantized ONNX model, layer by layer "
                               "(every quantized tensor, in integer LSBs)");
  c->add_option("MODEL", o->model, "Quantized ONNX model (QDQ: QuantizeLinear/DequantizeLinear, or QLinear* ops)")
      ->required();
  c->add_option("--inputs", o->inputs, "Input tensors (.pb or .npy), in graph input order, as `loom run` takes them")
      ->expected(1, -1);
  c->add_option("--against", o->against, "The runtime compared with")
      ->check(CLI::IsMember({"onnxruntime"}))
      ->capture_default_str();
  c->add_flag("--layers", o->layers,
              "Print every quantized tensor (default: the outputs and the first layer that "
              "drops below the threshold)");
  c->add_flag("--local", o->local,
              "Also run each quantized tensor's op alone, on ONNX Runtime's own codes of what it reads: "
              "the rounding the op adds itself, apart from what it inherits upstream");
  c->add_flag("--json", o->json, "Print JSON");
  o->min_cosine_opt = c->add_option("--min-cosine", o->min_cosine,
                                    "Exit 1, naming the layer, when a layer's cosine similarity with ONNX Runtime is "
                                    "below X (also the threshold of the first layer that drops; default 0.999)");
  c->add_option("--floor-cpu", o->floor_cpu,
                "Also run ONNX Runtime at ORT_DISABLE_ALL under `qemu-x86_64 -cpu CPU` (e.g. Nehalem: SSE "
                "kernels only) and compare it with the reference: ONNX Runtime against itself on another "
                "CPU, a second floor beside ORT_ENABLE_ALL")
      ->type_name("CPU");
  c->add_option("--seed", o->seed,
                "Seed of the random inputs when --inputs is not given, seeded as `loom run --seed` "
                "seeds them (test data beside the model is not read: give it with --inputs)")
      ->capture_default_str();
  c->callback([o] {
    if (int rc = compare(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace loom::cli
