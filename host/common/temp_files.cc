// Temporary paths and child processes removed or stopped on an interrupt
// (temp_files.h). The registry is fixed-size static storage so the handler
// touches no allocator and no lock: only atomics and system calls.
#include "common/temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

namespace loom {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
constexpr int kMaxDepth = 32;  // folders deeper than this are left (no loom output nests so deep)

enum : int { kFree = 0, kFilling = 1, kArmed = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  bool folder = false;
  char path[kPathMax] = {};
};

Slot g_slots[kSlots];
std::atomic<pid_t> g_children[kSlots];
std::atomic<pid_t> g_owner{0};  // the process that installed the handler (a fork()ed child does nothing)

// Removes everything inside the open folder `fd`, then closes it. Entries
// are unlinked while the folder is read, so it is read again until a pass
// finds nothing left to remove.
void remove_inside(int fd, int depth) {
  alignas(8) char buf[2048];
  for (int pass = 0; pass < 8; ++pass) {
    bool removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const unsigned char type = static_cast<unsigned char>(buf[off + 18]);
        const char* name = buf + off + 19;
        off += reclen;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
        if (::unlinkat(fd, name, 0) == 0) {
          removed = true;
          continue;
        }
        if ((type == DT_DIR || type == DT_UNKNOWN) && depth < kMaxDepth) {
          const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0) remove_inside(sub, depth + 1);
          if (::unlinkat(fd, name, AT_REMOVEDIR) == 0) removed = true;
        }
      }
    }
    if (!removed) break;
  }
  ::close(fd);
}

void remove_path(const char* path, bool folder) {
  if (!folder) {
    ::unlink(path);
    return;
  }
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    ::unlink(path);  // not (or no longer) a folder
    return;
  }
  remove_inside(fd, 0);
  ::rmdir(path);
}

// Children get the signal when it was sent to loom alone (kill, a batch
// system); a Ctrl-C on a terminal reaches the whole process group already.
// Then each gets up to 5 s to remove what it writes.
void stop_children(int sig, const siginfo_t* info) {
  const bool to_group = info != nullptr && info->si_code == SI_KERNEL;
  bool any = false;
  for (auto& c : g_children) {
    const pid_t pid = c.load();
    if (pid <= 0) continue;
    any = true;
    if (!to_group) ::kill(pid, sig);
  }
  if (!any) return;
  const timespec tick{0, 20 * 1000 * 1000};
  for (int t = 0; t < 250; ++t) {
    bool running = false;
    for (auto& c : g_children) {
      const pid_t pid = c.load();
      if (pid <= 0) continue;
      int status = 0;
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == 0) {
        running = true;
      } else {
        c.store(0);  // ended (or not ours to wait for)
      }
    }
    if (!running) return;
    ::nanosleep(&tick, nullptr);
  }
}

extern "C" void on_interrupt(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  if (::getpid() == g_owner.load()) {
    stop_children(sig, info);
    bool any = false;
    for (auto& s : g_slots) {
      if (s.state.load() != kArmed) continue;
      remove_path(s.path, s.folder);
      any = true;
    }
    static const char msg[] = "loom: error: interrupted; the files being written were removed\n";
    static const char bare[] = "loom: error: interrupted\n";
    if (any) {
      (void)!::write(2, msg, sizeof msg - 1);
    } else {
      (void)!::write(2, bare, sizeof bare - 1);
    }
  }
  // SA_RESETHAND restored the default action: the raised signal ends the
  // process once the handler returns (it is blocked until then), so the
  // parent sees death by this signal, as without a handler.
  ::raise(sig);
  errno = saved_errno;
}

}  // namespace

void install_interrupt_cleanup() {
  pid_t expected = 0;
  if (!g_owner.compare_exchange_strong(expected, ::getpid())) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_interrupt;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

TempPath::TempPath(const std::string& path, Kind kind) {
  if (path.empty() || path.size() >= kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].folder = kind == Folder;
    g_slots[i].state.store(kArmed);
    slot_ = i;
    return;
  }
}

TempPath::~TempPath() { release(); }

TempPath& TempPath::operator=(TempPath&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void TempPath::release() {
  if (slot_ >= 0) g_slots[slot_].state.store(kFree);
  slot_ = -1;
}

void register_child(pid_t pid) {
  if (pid <= 0) return;
  for (auto& c : g_children) {
    pid_t expected = 0;
    if (c.compare_exchange_strong(expected, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  if (pid <= 0) return;
  for (auto& c : g_children) {
    pid_t expected = pid;
    if (c.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace loom
