// Child processes for the subcommands that drive other programs.
#include "cli/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "cli/cli_common.h"
#include "common/temp_files.h"

extern char** environ;

namespace loom::cli {

pid_t spawn_process(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!out.empty()) posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!err.empty()) posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  register_child(pid);  // an interrupt is passed on to it (common/temp_files.h)
  return pid;
}

int wait_process(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      unregister_child(pid);
      return -1;
    }
  unregister_child(pid);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int run_process(const std::vector<std::string>& args, bool quiet) {
  const pid_t pid = quiet ? spawn_process(args, "/dev/null", "/dev/null") : spawn_process(args, "", "");
  return pid < 0 ? -1 : wait_process(pid);
}

std::string self_exe() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = '\0';
  return self;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

int run_python_script(const PythonScript& s, const std::vector<std::string>& args) {
  const std::string python = env_or("LOOM_PYTHON", "python3");
  const std::string script = env_or(s.script_env, s.script);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec))
    return fail(s.what + ": script " + script + " not found (set " + s.script_env + " to scripts/" +
                std::filesystem::path(s.script).filename().string() + " of a loom checkout)");
  const int probe = run_process({python, "-c", "import " + s.imports}, true);
  if (probe == -1) return fail(s.what + ": cannot run '" + python + "' (install Python 3 or set LOOM_PYTHON)");
  if (probe != 0) return fail(s.what + ": " + python + " lacks " + s.packages + " (run scripts/setup.sh)");
  std::vector<std::string> argv{python, script};
  argv.insert(argv.end(), args.begin(), args.end());
  const int rc = run_process(argv, false);
  if (rc == -1) return fail(s.what + ": cannot run '" + python + "'");
  if (rc > 128) return fail(s.what + ": " + script + " was killed by signal " + std::to_string(rc - 128));
  return rc;
}

}  // namespace loom::cli
