// Child processes and environment defaults for the subcommands that drive
// other programs (report and zoo run Python scripts, experiment runs
// `loom serve`).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace loom::cli {

/// Starts `args` (looked up on PATH) with stdout and stderr sent to the given
/// files ("" keeps them); returns the pid, or -1 when it could not start.
pid_t spawn_process(const std::vector<std::string>& args, const std::string& out, const std::string& err);

/// Exit code of `pid`, 128+signal when killed, -1 on a wait error.
int wait_process(pid_t pid);

/// Runs `args` to completion (output discarded when `quiet`): its exit code,
/// -1 when it could not be started, 128+signal when killed.
int run_process(const std::vector<std::string>& args, bool quiet);

/// The environment variable `name`, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

}  // namespace loom::cli
