// Child processes and environment defaults for the subcommands that drive
// other programs (report, zoo and compare run Python scripts, experiment
// runs `loom serve`).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace loom::cli {

/// Starts `args` (looked up on PATH) with stdout and stderr sent to the given
/// files ("" keeps them); returns the pid, or -1 when it could not start.
/// The child is registered (common/temp_files.h): an interrupt sent to loom
/// is passed on to it; whoever reaps it other than wait_process unregisters it.
pid_t spawn_process(const std::vector<std::string>& args, const std::string& out, const std::string& err);

/// Exit code of `pid`, 128+signal when killed, -1 on a wait error.
int wait_process(pid_t pid);

/// Runs `args` to completion (output discarded when `quiet`): its exit code,
/// -1 when it could not be started, 128+signal when killed.
int run_process(const std::vector<std::string>& args, bool quiet);

/// This loom binary's path (/proc/self/exe); empty when unknown.
std::string self_exe();

/// The environment variable `name`, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

/// A Python script of the source tree behind a subcommand (zoo, compare).
struct PythonScript {
  std::string what;        // the subcommand, first word of its error lines
  const char* script_env;  // variable naming another script
  std::string script;      // the source tree's script
  std::string imports;     // modules probed before it runs: "numpy, onnx, onnxruntime"
  std::string packages;    // how an error names them: "numpy, onnx or onnxruntime"
};
/// Runs `s` with `args` under LOOM_PYTHON (default python3 on PATH): one
/// error line and 1 when the interpreter, the script or a package is
/// missing; else the script's exit code (it prints its own one-line error).
int run_python_script(const PythonScript& s, const std::vector<std::string>& args);

}  // namespace loom::cli
