#include "serve/live.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::serve {

namespace {

runtime::JobOptions job_options(const LiveOptions& o) {
  runtime::JobOptions j;
  j.completion = o.completion;
  j.poll_cycles = o.poll_cycles;
  return j;
}

bool same_outputs(const std::vector<std::pair<std::string, Tensor>>& a,
                  const std::vector<std::pair<std::string, Tensor>>& b, std::string& which) {
  if (a.size() != b.size()) return which = "output count", false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].second.data != b[i].second.data) return which = a[i].first, false;
  return true;
}

}  // namespace

LiveEngine::LiveEngine(runtime::Device& dev, const LiveOptions& o)
    : dev_(dev), o_(o), jobs_(dev, job_options(o)), c0_(dev.cycles()),
      mhz_(double(std::max(1u, dev.config().clock_mhz))), cores_(dev.config().cores) {}

LiveEngine::~LiveEngine() = default;

uint64_t LiveEngine::to_cycles(double us) const { return c0_ + uint64_t(std::llround(std::max(0.0, us) * mhz_)); }
double LiveEngine::to_us(uint64_t c) const { return double(c - std::min(c, c0_)) / mhz_; }
double LiveEngine::now_us() const { return to_us(dev_.cycles()); }
bool LiveEngine::busy(int core) const { return core >= 0 && size_t(core) < cores_.size() && cores_[size_t(core)].busy; }

size_t LiveEngine::running() const {
  size_t n = 0;
  for (const auto& c : cores_) n += c.busy;
  return n;
}

Status LiveEngine::start(int core, LiveWork work, uint64_t id, double predicted_us) {
  if (busy(core) || core < 0 || size_t(core) >= cores_.size())
    return make_error("live: core " + std::to_string(core), "not free for batch " + std::to_string(id));
  Core& c = cores_[size_t(core)];
  c = Core{};
  c.busy = true;
  c.id = id;
  c.work = std::move(work);
  const uint64_t now = dev_.cycles();
  const double limit = std::max(predicted_us * o_.timeout_factor, predicted_us + 10000.0 / mhz_);
  c.started = now;
  c.deadline = predicted_us > 0 ? now + uint64_t(std::llround(limit * mhz_)) : std::numeric_limits<uint64_t>::max();
  std::vector<LiveEnd> none;
  LOOM_TRY(step(core, now, none));
  return Status::ok();
}

Status LiveEngine::step(int ci, uint64_t now, std::vector<LiveEnd>& out) {
  Core& c = cores_[size_t(ci)];
  if (c.finishing) {  // host work after the last run: the batch ends when it is done
    if (now < c.resume_at) return Status::ok();
    out.push_back({ci, c.id, to_us(c.resume_at), Status::ok()});
    c.busy = false;
    return Status::ok();
  }
  if (c.next >= c.work.parts.size()) {
    c.finishing = true;
    c.resume_at = now + c.work.host_cycles_after;
    return step(ci, now, out);
  }
  const LivePart& p = c.work.parts[c.next];
  if (c.resume_at == 0 && p.host_cycles > 0) {  // host work first
    c.resume_at = now + p.host_cycles;
    return Status::ok();
  }
  if (c.resume_at > now) return Status::ok();
  c.resume_at = 0;
  ++c.next;
  ++stats_.device_runs;
  return jobs_.start(uint32_t(ci), *p.plan, *p.inputs, c.id);
}

Expected<std::vector<LiveEnd>> LiveEngine::advance(double until_us) {
  std::vector<LiveEnd> out;
  const bool forever = !std::isfinite(until_us);
  const uint64_t target = forever ? std::numeric_limits<uint64_t>::max() : to_cycles(until_us);
  for (;;) {
    uint64_t now = dev_.cycles();
    // Host work that is over: start the next run, or end the batch.
    for (size_t ci = 0; ci < cores_.size(); ++ci)
      if (cores_[ci].busy && !jobs_.busy(uint32_t(ci)) && cores_[ci].resume_at != 0 && cores_[ci].resume_at <= now)
        LOOM_TRY(step(int(ci), now, out));
    // The host-side timeout.
    for (size_t ci = 0; ci < cores_.size(); ++ci) {
      Core& c = cores_[ci];
      if (!c.busy || now < c.deadline) continue;
      if (jobs_.busy(uint32_t(ci))) jobs_.abort(uint32_t(ci), "host-side timeout");
      ++stats_.timeouts;
      out.push_back({int(ci), c.id, to_us(now),
                     make_error("live: core " + std::to_string(ci),
                                "batch still running after " + std::to_string(now - c.started) +
                                    " cycles (the host-side timeout); core reset")});
      c.busy = false;
    }
    if (!out.empty()) return out;
    if (now >= target) return out;
    // Wake at the target, the earliest end of host work, or the earliest timeout.
    uint64_t wake = target;
    bool any = false;
    for (size_t ci = 0; ci < cores_.size(); ++ci) {
      const Core& c = cores_[ci];
      if (!c.busy) continue;
      any = true;
      wake = std::min(wake, c.deadline);
      if (!jobs_.busy(uint32_t(ci)) && c.resume_at != 0) wake = std::min(wake, c.resume_at);
    }
    if (forever && !any) return out;  // nothing runs and nothing arrives: nothing to wait for
    const uint64_t span = wake > now ? wake - now : 0;
    if (jobs_.running() == 0) {
      if (span > 0) {
        auto r = dev_.run_for(span, false);
        if (!r) return r.error();
      }
      continue;
    }
    auto ends = jobs_.wait(span);
    if (!ends) return ends.error();
    for (auto& e : *ends) {
      const int ci = int(e.core);
      Core& c = cores_[size_t(ci)];
      if (!c.busy || c.id != e.id) continue;  // aborted meanwhile
      if (!e.status) {
        ++stats_.device_errors;
        out.push_back({ci, c.id, to_us(e.end_cycles), e.status});
        c.busy = false;
        continue;
      }
      const LivePart& p = c.work.parts[c.next - 1];
      if (p.expected) {
        ++stats_.checked;
        std::string which;
        if (!same_outputs(e.outputs, *p.expected, which)) {
          ++stats_.mismatches;
          out.push_back({ci, c.id, to_us(e.end_cycles),
                         make_error("live: core " + std::to_string(ci),
                                    "output '" + which + "' of plan '" + p.plan->graph_name +
                                        "' differs from the golden model")});
          c.busy = false;
          continue;
        }
      }
      LOOM_TRY(step(ci, e.end_cycles, out));
    }
    // Runs whose next part starts at once were started by step(); batches
    // that ended are in `out`.
    if (!out.empty()) return out;
  }
}

}  // namespace loom::serve
