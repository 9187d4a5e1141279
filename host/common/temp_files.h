// The one place that knows which temporary files, folders and child processes
// loom has in flight, so an interrupt (SIGINT, SIGTERM) leaves nothing behind:
// the handler signals the children, waits for them briefly, removes every
// registered path and re-raises the signal (docs/security.md).
#pragma once

#include <sys/types.h>

#include <string>

namespace loom {

/// Installs the SIGINT and SIGTERM handlers (once; later calls do nothing).
/// The handler is async-signal-safe: unlink, rmdir, getdents, kill, waitpid.
void install_interrupt_cleanup();

/// A temporary file or folder being written, removed by the interrupt
/// handler while this object lives. Its destructor only forgets the path:
/// the writer renames or removes it as it always did. A path that does not
/// fit the registry (too long, too many at once) is still written, only not
/// cleaned on an interrupt.
class TempPath {
 public:
  enum Kind { File, Folder };
  TempPath() = default;
  explicit TempPath(const std::string& path, Kind kind = File);
  ~TempPath();
  TempPath(TempPath&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  TempPath& operator=(TempPath&& o) noexcept;
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  /// Forgets the path now (it was renamed into place or removed).
  void release();

 private:
  int slot_ = -1;
};

/// A child process whose run is part of loom's work (a Python script, a
/// `loom serve` point): an interrupt is passed on to it, so it can remove
/// what it writes, before loom removes its own files.
void register_child(pid_t pid);
void unregister_child(pid_t pid);

}  // namespace loom
