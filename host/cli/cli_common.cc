// Shared helpers of the `loom` subcommands.
#include "cli/cli_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/hash.h"
#include "common/limits.h"
#include "common/tensor_io.h"

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

Status check_output_file(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string what = flag + " " + path;
  if (path.empty()) return make_error(flag, "expected a file name");
  if (fs::is_directory(path, ec)) return make_error(what, "is a directory");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) return Status::ok();  // /dev/null, a FIFO: written in place
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

int fail(const std::string& msg) {
  std::cerr << "loom: error: " << one_line(msg, limits::kMaxErrorBytes) << "\n";
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
