// Shared pieces of the `loom` subcommands: loading graphs and plans, inputs,
// one-line errors.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "ir/graph.h"
#include "plan/plan.h"

namespace loom::cli {

using ordered_json = nlohmann::ordered_json;

/// Prints "loom: error: <message>" on one line to stderr; returns 1.
int fail(const Error& e);
int fail(const std::string& msg);

/// Checks, before any long work, that `path` (given with `flag`) can be
/// written: not a directory, in a folder that exists and is writable. So a
/// bad -o fails at once instead of after a simulation.
Status check_output_file(const std::string& flag, const std::string& path);
/// The same for a folder (--cache): created when missing, then written to.
Status check_output_dir(const std::string& flag, const std::string& path);

/// `run --outputs DIR`: writes every (file name, bytes) into DIR, creating
/// it when missing, all or nothing: when one write fails, the files written
/// before it (and DIR, if this call created it) are removed again. Returns
/// the paths written, in order.
Expected<std::vector<std::string>> write_output_files(const std::string& dir,
                                                      const std::vector<std::pair<std::string, std::string>>& files);

/// Reads and validates a graph file (.json).
Expected<ir::Graph> load_graph(const std::string& path);

/// Resolves --config: the named configuration or an error listing the names.
Expected<const spec::HwConfig*> find_config(const std::string& name);

/// Reads tensors from files (.pb/.npy) and binds them to the graph inputs in
/// order, or makes seeded random ones when `files` is empty.
Expected<std::map<std::string, Tensor>> load_inputs(const std::vector<std::string>& files,
                                                    const std::vector<plan::TensorBinding>& bindings, uint64_t seed);

uint64_t file_hash(const std::string& path);

/// ONNX models (.onnx) behind `loom run` / `loom compile` (cmd_onnx.cc).
struct OnnxRunArgs {
  std::string model, backend, config, outputs;
  std::vector<std::string> inputs;
  bool check = false, json = false;
  int cores = 0;
};
struct OnnxCompileArgs {
  std::string model, config, out;
  bool explain = false, json = false;
  int cores = 0;
  std::string placement = "static", hls = "off", fusion = "cost";  // parsed by compile_onnx
  int tasks_per_core = 1;
};
bool is_onnx_model(const std::string& path);
int run_onnx(const OnnxRunArgs& a);
int compile_onnx(const OnnxCompileArgs& a);

void register_info(CLI::App& app);
void register_compile(CLI::App& app);
void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_bringup(CLI::App& app);
void register_zoo(CLI::App& app);
void register_serve(CLI::App& app);
/// Exit code of a subcommand that failed after running SystemC (tlm): set
/// instead of throwing, since unwinding past SystemC's coroutine stacks trips
/// AddressSanitizer (google/sanitizers#189). main() returns it.
int& deferred_exit_code();
/// Sets deferred_exit_code() to a non-zero `rc` (the first one wins); the
/// callbacks of subcommands that can run tlm or cosim end with it.
void defer_exit(int rc);
void register_tune(CLI::App& app);
void register_report(CLI::App& app);
void register_experiment(CLI::App& app);
void register_builtin_backends();

}  // namespace loom::cli
