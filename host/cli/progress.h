// Progress of a long command on stderr, never on stdout (so --json output
// stays clean): after 2 s a bar with the fraction, elapsed time and ETA on
// a terminal, or one line every 5 s otherwise (logs, CI). Short commands
// print nothing. A phase that calls no update for a while (one long
// simulation) still shows: the last state is shown again, with the time
// elapsed, every 5 s (a terminal: every second).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace loom::cli {

class Progress {
 public:
  /// `what` names the work ("run m.onnx on rtl"); `enabled` false: silent;
  /// `at_once`: no quiet time (a command's --progress flag).
  explicit Progress(std::string what, bool enabled = true, bool at_once = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// The fraction done, in [0, 1], and optionally the phase the work is in
  /// (shown after the bar or line).
  void update(double fraction, const std::string& phase = {});
  /// Clears the bar (a terminal) or says how long it took (after a line).
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  /// Shows (fraction_, phase_) when it is due; `heartbeat`: shown again
  /// without an update. Called with mu_ held.
  void show(Clock::time_point now, bool heartbeat);
  void beat();  // the heartbeat thread's loop
  std::string what_;
  bool enabled_, at_once_, tty_, shown_ = false, finished_ = false;
  Clock::time_point start_, last_;
  double fraction_ = 0;
  std::string phase_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread heartbeat_;
};

/// "12 s", "3 min 05 s", "1 h 02 min".
std::string duration_text(double seconds);

}  // namespace loom::cli
