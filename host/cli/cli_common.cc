// Shared helpers of the `loom` subcommands.
#include "cli/cli_common.h"

#include <filesystem>
#include <iostream>

#include "common/hash.h"
#include "common/tensor_io.h"

namespace loom::cli {

int fail(const Error& e) { return fail(e.str()); }

int fail(const std::string& msg) {
  std::string one = msg;
  for (auto& ch : one)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::cerr << "loom: error: " << one << "\n";
  return 1;
}

Expected<ir::Graph> load_graph(const std::string& path) {
  const auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx")
    return make_error(path, "ONNX import is not available in this build of loom; use a .json graph");
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
                                                    const std::vector<plan::TensorBinding>& bindings,
                                                    uint64_t seed) {
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

int& deferred_exit_code() {
  static int code = 0;
  return code;
}

void defer_exit(int rc) {
  if (rc != 0 && deferred_exit_code() == 0) deferred_exit_code() = rc;
}

}  // namespace loom::cli
