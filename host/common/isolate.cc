#include "common/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace loom {

namespace {

// Child side: one tag byte ('O' bytes, 'E' error text) and the payload.
[[noreturn]] void answer(int fd, char tag, const std::string& body) {
  std::string msg(1, tag);
  msg += body;
  size_t done = 0;
  while (done < msg.size()) {
    const ssize_t w = ::write(fd, msg.data() + done, msg.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += size_t(w);
  }
  ::_exit(0);  // no atexit handlers, no destructors of the parent's state
}

}  // namespace

Expected<std::string> run_isolated(const std::string& what, const std::function<Expected<std::string>()>& work,
                                   int timeout_ms, uint64_t max_bytes) {
  int fds[2];
  if (::pipe(fds) != 0) return make_error(what, std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(what, std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash report of the child (a sanitizer's, the library's) is not the
    // user's business: the parent reports the crash in one line.
    if (const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
      ::dup2(null, STDERR_FILENO);
      ::dup2(null, STDOUT_FILENO);
    }
    try {
      auto r = work();
      if (r) answer(fds[1], 'O', *r);
      answer(fds[1], 'E', r.error().str());
    } catch (const std::exception& e) {
      answer(fds[1], 'E', exception_text(e.what()));
    } catch (...) {
      answer(fds[1], 'E', "unknown exception");
    }
  }
  ::close(fds[1]);
  std::string got;
  bool too_big = false, timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[1 << 16];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, int(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;  // the deadline check above ends the wait
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // the child closed its end: done
    if (got.size() + size_t(r) > max_bytes + 1) {
      too_big = true;
      break;
    }
    got.append(buf, size_t(r));
  }
  ::close(fds[0]);
  if (timed_out || too_big) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return make_error(what, "did not finish within " + std::to_string(timeout_ms / 1000) + " s");
  if (too_big) return make_error(what, "answered more than " + std::to_string(max_bytes) + " bytes");
  if (WIFSIGNALED(status)) return make_error(what, std::string("crashed (") + strsignal(WTERMSIG(status)) + ")");
  if (got.empty())
    return make_error(
        what, "crashed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ", no answer)");
  if (got[0] == 'E') return make_error(what, got.substr(1));
  return got.substr(1);
}

}  // namespace loom
