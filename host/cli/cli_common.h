// Shared pieces of the `loom` subcommands: loading graphs and plans, inputs,
// one-line errors.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "device/trace.h"
#include "frontend/onnx/shapes.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/program.h"
#include "runtime/executor.h"
#include "runtime/program.h"

namespace loom::cli {

using ordered_json = nlohmann::ordered_json;

/// Prints "loom: error: <message>" on one line to stderr; returns 1.
int fail(const Error& e);
int fail(const std::string& msg);
/// An error that is its message alone (the message names the flag or file).
inline Error error_of(std::string msg) { return Error{"", std::move(msg)}; }

/// Names a file a command wrote, one line on stderr ("loom serve: wrote
/// r.json"), so stdout stays the result.
void announce_written(const std::string& command, const std::string& path);

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

/// The compile flags of `loom compile` and `loom run`, on every input kind:
/// parsed once into the one compiler::CompileOptions. On a plan, a flag that
/// is given must agree with the options the plan records.
struct CompileFlags {
  int cores = 0, tasks_per_core = 1;
  std::string fusion = "cost", placement = "static", hls = "off", depthwise = "auto", batch_fold = "auto", cost_params;
  bool exact_host = false;
  std::vector<std::pair<std::string, CLI::Option*>> given;  // flag -> option, to tell which were given
  // ONNX models: --input-shape, --dim, --batch (onnxfe::ShapeBinding).
  std::vector<std::string> input_shapes, dims;
  int64_t batch = 0;
};
/// Adds --cores, --fusion, --placement, --tasks-per-core, --hls, --depthwise, --batch-fold,
/// --cost-params, --exact-host, --input-shape, --dim and --batch to `cmd`.
void add_compile_flags(CLI::App* cmd, CompileFlags& f);
/// The shapes --input-shape, --dim and --batch bind on an ONNX model.
Expected<onnxfe::ShapeBinding> shape_binding(const CompileFlags& f);
/// On an input that is not an ONNX model (`what`: "a JSON graph", "plan
/// P"), whose shapes are fixed: a shape flag given is an error naming it.
Status refuse_shape_flags(const CompileFlags& f, const std::string& what);
/// The options the flags name, for `cfg` (--cost-params read and checked).
Expected<compiler::CompileOptions> compile_options(const CompileFlags& f, const spec::HwConfig& cfg);
/// On a plan that records `recorded` (JSON text of compile_options; empty:
/// none): every flag given must agree with it. Errors name the flag.
Status check_plan_flags(const CompileFlags& f, const spec::HwConfig& cfg, const compiler::CompileOptions* recorded,
                        const std::string& plan);

/// The device options of the commands that open a device (run, bench, serve,
/// tune, bringup), docs/backends.md "Device options": each flag, else the
/// environment variable that stands for it on the chosen backend. Kept as the
/// text given, parsed strictly by device_options().
struct DeviceFlags {
  std::string wave, mem_faults, mem_stall, axi_stall, rtl_model, seed, xclbin, device_index, timeout_ms, arena_mib;
};
/// Adds --mem-faults, --mem-stall, --axi-stall, --rtl-model, --device-seed, --xclbin,
/// --device, --device-timeout-ms and --arena-mib to `cmd` (`run` adds --wave
/// itself: it writes the file when the run ends, never when interrupted).
void add_device_flags(CLI::App* cmd, DeviceFlags& f);
/// The options for `backend`: the flags given, then the environment
/// variables of that backend for the rest. Errors name the flag or variable.
Expected<runtime::DeviceOptions> device_options(const DeviceFlags& f, std::string_view backend);
/// runtime::make_device with the options `f` gives for `backend`.
Expected<std::unique_ptr<runtime::Device>> open_backend(const std::string& backend, const spec::HwConfig& cfg,
                                                        const DeviceFlags& f);

/// Option values are validated, never defaulted: after every subcommand is
/// registered, each option of `app` and of its subcommands that takes a value
/// gets more checks of its text, whatever CLI11 itself would accept. No value
/// may be empty (an empty --config or --mem-stall is not "not given"). A FLOAT
/// option must be a finite number in plain decimal (common/parse.h: no "nan",
/// "inf", hex or blanks), and a time (a FLOAT option named --...-ms) must
/// also be >= 0; an INT or UINT option must be a whole decimal number (UINT:
/// >= 0). The error names the flag: "--swap-at-ms: expected a time in ms >=
/// 0, got 'nan'".
void check_option_values(CLI::App& app);
/// The check of a FLOAT option that must be >= 0 (a tolerance, a time),
/// described as NONNEGATIVE in the help.
CLI::Validator non_negative_number();

/// What `loom run` and `loom compile` are given (by content, then extension):
/// a plan file is a Plan when it has no host steps (a JSON graph's), a
/// ProgramPlan when it has (an ONNX model's).
enum class InputKind { Graph, Plan, Onnx, ProgramPlan };
InputKind input_kind(const std::string& path);

/// The flags of `loom run`, whatever the input kind.
struct RunArgs {
  std::string model, backend = "ref", config, outputs, format = "pb", graph, trace, expected;
  std::vector<std::string> inputs;
  /// --bucket SYMBOL=A,B,... (an ONNX model run as a family of programs,
  /// driver/family.h) and --cache DIR (where the family's programs are kept).
  std::vector<std::string> buckets;
  std::string cache;
  bool check = false, json = false;
  bool layer_cycles = false;  // --layer-cycles (implied by --trace)
  uint64_t seed = 1;
  double atol = 1e-5, rtol = 1e-3;  // --expected: |got - want| <= atol + rtol * |want|
  CompileFlags compile;
  DeviceFlags device;  // device.wave: --wave
};

/// What every input kind's run shares (cmd_run.cc): one device, one
/// executor (runtime::run_program), one report.
struct LoadedRun;
/// Opens the device of --backend for `l`'s configuration (with --wave and
/// --trace), runs each of `l`'s runs on it in turn (`each(k, run)` after
/// run k, its program still loaded), and writes --trace (slices named by
/// layer and op, with "run K" and "segment N" where there are several), a
/// failed run's too. Returns the runs added up: their segments in order,
/// their counts summed, their mismatches named by run.
Expected<runtime::ProgramRun> run_on_device(const RunArgs& a, LoadedRun& l,
                                            const std::function<void(size_t, const runtime::ProgramRun&)>& each);
/// One output of a run, as the report, the reference comparison and the
/// output files see it.
struct RunOutput {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::function<double(int64_t)> at;
  /// The file bytes for --output-format `format` ("pb" or "npy").
  std::function<Expected<std::string>(const std::string& format)> encode;
  std::string file;  // where --outputs wrote it (empty: not written)
};
/// What a run needs of its input, whatever its kind (cmd_run.cc: JSON graphs
/// and their plans; cmd_onnx.cc: ONNX models and program plans): the program
/// and its configuration, the values it runs on, and how its outputs and its
/// kind's own report fields are read once it ran. Held by pointer: `values`
/// and `outputs` refer to `prog`.
struct LoadedRun {
  std::string kind;  // "graph", "plan", "onnx", "onnx_plan"
  const spec::HwConfig* cfg = nullptr;
  plan::Program prog;            // with --check: every segment with its graph
  ordered_json compile_options;  // null: none recorded
  bool seeded = false;           // the inputs were drawn from --seed
  bool name_segments = false;    // layers and trace slices carry "segment N"
  std::unique_ptr<runtime::HostSteps> values;
  /// The runs the inputs take: more than one for a batch above its family's
  /// largest bucket (docs/onnx.md). `prog` and `values` hold run 0; next(k)
  /// puts run k in their place, keeping run k - 1's outputs for outputs().
  size_t runs = 1;
  std::function<Status(size_t k)> next;
  /// After the runs: the graph outputs in graph output order.
  std::function<Expected<std::vector<RunOutput>>()> outputs;
  /// The kind's own report fields (an ONNX program's segments and host ops).
  std::function<ordered_json(const runtime::ProgramRun& run)> describe;
};
/// An ONNX model (bound, compiled) or a program plan, with its inputs.
Expected<std::unique_ptr<LoadedRun>> load_onnx_run(const RunArgs& a);

/// What `loom run` reports (docs/schema/run.schema.json), whatever the
/// input kind: filled by the run driver, written by one to_json.
struct RunReport {
  std::string model, kind, backend, config;
  ordered_json compile_options;  // null: none recorded
  std::optional<uint64_t> seed;  // the inputs were drawn from it
  ordered_json program;          // the kind's own fields (an ONNX program's segments and host ops), in order
  // --check: every device segment against loom's direct reference.
  bool check = false;
  int checked_segments = 0;
  std::vector<runtime::Mismatch> mismatches;
  /// No mismatch (with checked_segments 0: nothing compared).
  bool exact() const { return mismatches.empty(); }
  ordered_json expected;  // --expected DIR or test_data_set_0 (null: none)
  std::vector<RunOutput> outputs;
  // The run itself; set once the checks passed.
  const runtime::ProgramRun* run = nullptr;
  ordered_json cores, layers;
  double wall_seconds = 0;
  std::string summary;  // first text line: "ran MODEL on BACKEND (config C): ..."

  /// The text line of --check.
  std::string check_line(size_t host_ops) const;
  /// The JSON result (without its version header); a run whose checks
  /// failed has no output or run fields.
  ordered_json to_json() const;
};
/// Finishes every run the same way: --expected DIR (or test_data_set_0)
/// compared within --atol/--rtol; on a failed check nothing written and exit
/// 1; else --outputs written (all files or none), then per-core counters,
/// per-layer cycles (with their segment when `name_segments`), totals and
/// the text or --json report. Returns the exit code.
int finish_run(const RunArgs& a, RunReport& r, size_t host_ops, const runtime::ProgramRun& run,
               const std::string& exp_dir, std::chrono::steady_clock::time_point t0);
/// Whether the reference folder `dir` holds inputs (input_0.pb, ...): a run
/// without --inputs then reads them from it.
bool has_reference_inputs(const std::string& dir);
/// The reference folder of a model: --expected, else test_data_set_0 beside
/// it when no --inputs are given (empty: none).
std::string expected_dir(const RunArgs& a);
int compile_program_kind(const std::string& model, const onnxfe::ShapeBinding& shapes, const spec::HwConfig& cfg,
                         const compiler::CompileOptions& opt, const std::string& out, bool explain, bool json);

/// Version of the JSON results (docs/schema/*.schema.json); raise it when a
/// field changes meaning or goes away.
inline constexpr int kSchemaVersion = 1;
/// `j` as a JSON result of kind `result` ("run", "compile", "serve", ...):
/// "schema_version" and "result" first, then j's fields in their order.
ordered_json versioned(std::string_view result, const ordered_json& j);

/// docs/cli.md: every subcommand, argument and option of `app` as Markdown
/// (`loom --cli-reference`, reference.cc).
std::string cli_reference(const CLI::App& app);

void register_info(CLI::App& app);
void register_compile(CLI::App& app);
void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_bringup(CLI::App& app);
void register_zoo(CLI::App& app);
void register_compare(CLI::App& app);
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
