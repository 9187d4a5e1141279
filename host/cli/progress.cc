#include "cli/progress.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace loom::cli {
namespace {

constexpr double kQuietSeconds = 2.0;  // nothing before this
constexpr double kLineSeconds = 5.0;   // non-terminal: one line this often
constexpr double kBarSeconds = 0.2;    // terminal: redraw at most this often
constexpr int kBarWidth = 30;

/// LOOM_PROGRESS_INTERVAL=S (documented in docs/cli.md): the quiet time and
/// the line interval, in seconds; 0 shows every update (what the tests use).
double interval(double dflt) {
  const char* e = std::getenv("LOOM_PROGRESS_INTERVAL");
  if (!e || !*e) return dflt;
  char* end = nullptr;
  const double v = std::strtod(e, &end);
  return end && *end == '\0' && v >= 0 && v < 1e6 ? v * dflt / kLineSeconds : dflt;
}

}  // namespace

std::string duration_text(double s) {
  char buf[64];
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%d min %02d s", int(s / 60), int(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%d h %02d min", int(s / 3600), int(s / 60) % 60);
  return buf;
}

Progress::Progress(std::string what, bool enabled, bool at_once)
    : what_(std::move(what)),
      enabled_(enabled),
      at_once_(at_once),
      tty_(::isatty(2) == 1),
      start_(Clock::now()),
      last_(start_) {
  if (!enabled_) return;
  // The heartbeat thread never takes SIGINT or SIGTERM: the main thread does
  // (common/temp_files.h), as it would without this thread.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  heartbeat_ = std::thread([this] { beat(); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

Progress::~Progress() { finish(); }

void Progress::update(double f, const std::string& phase) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  fraction_ = std::clamp(std::isfinite(f) ? f : 0.0, 0.0, 1.0);
  phase_ = phase;
  show(Clock::now(), false);
}

void Progress::beat() {
  // At least a second apart (LOOM_PROGRESS_INTERVAL=0 shows every update,
  // not a line every instant).
  const double period = tty_ ? 1.0 : std::max(1.0, interval(kLineSeconds));
  std::unique_lock<std::mutex> lock(mu_);
  while (!finished_) {
    wake_.wait_for(lock, std::chrono::duration<double>(period / 4));
    if (finished_) break;
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_).count() >= period) show(now, true);
  }
}

void Progress::show(Clock::time_point now, bool heartbeat) {
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (!at_once_ && elapsed < interval(kQuietSeconds)) return;
  if (!heartbeat && shown_ && since < interval(tty_ ? kBarSeconds : kLineSeconds)) return;
  if (!at_once_ && !tty_ && !shown_ && elapsed < interval(kLineSeconds)) return;
  const double f = fraction_;
  const std::string& phase = phase_;
  const std::string eta = f > 0.01 ? duration_text(elapsed * (1 - f) / f) : "?";
  if (tty_) {
    const int fill = int(std::lround(f * kBarWidth));
    std::fprintf(stderr, "\r\033[K%s [%s%s] %3.0f%%  %s, ETA %s%s%s", what_.c_str(),
                 std::string(size_t(fill), '#').c_str(), std::string(size_t(kBarWidth - fill), '.').c_str(), 100 * f,
                 duration_text(elapsed).c_str(), eta.c_str(), phase.empty() ? "" : "  ", phase.c_str());
  } else {
    const std::string in = phase.empty() ? "" : " (" + phase + ")";
    std::fprintf(stderr, "loom: %s: %.0f%% after %s, about %s left%s\n", what_.c_str(), 100 * f,
                 duration_text(elapsed).c_str(), eta.c_str(), in.c_str());
  }
  std::fflush(stderr);
  shown_ = true;
  last_ = now;
}

void Progress::finish() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (!shown_) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  if (tty_)
    std::fprintf(stderr, "\r\033[K");
  else
    std::fprintf(stderr, "loom: %s: done after %s\n", what_.c_str(), duration_text(elapsed).c_str());
  std::fflush(stderr);
}

}  // namespace loom::cli
