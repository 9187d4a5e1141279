#include "serve/live.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <thread>

#include "common/parse.h"

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

constexpr uint32_t kWatchdogCycles = 20000;  // the "watchdog" fault's WATCHDOG value
constexpr const char* kStall = "1000:0.5";   // the "mem-stall" fault: 1000 cycles on half the bursts

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& fault_kinds() {
  static const std::vector<std::pair<std::string, std::string>> k{
      {"slverr-read", "reads of the core's weights answer SLVERR (for FOR_MS)"},
      {"decerr-read", "reads of the core's weights answer DECERR (for FOR_MS)"},
      {"slverr-write", "writes of the core's outputs answer SLVERR (for FOR_MS)"},
      {"decerr-write", "writes of the core's outputs answer DECERR (for FOR_MS)"},
      {"mem-stall", "1000 cycles added to half of all memory bursts (for FOR_MS)"},
      {"watchdog", "the core's next run hangs on a semaphore; the WATCHDOG register (20,000 cycles) raises TIMEOUT"},
      {"host-timeout", "the core's next run hangs on a semaphore with the watchdog off; the host-side timeout ends it"},
      {"illegal-insn", "the core's next run has an unknown opcode (ILLEGAL_INSN)"},
      {"window", "the core's next run loads from past its window (WINDOW)"},
      {"core-reset", "the core is soft-reset in the middle of a run"},
      {"lost-irq", "the core's interrupts are masked (for FOR_MS): its ends are seen by the STATUS check"},
      {"corrupt-output", "one bit of the core's next outputs flips on the way back (silent data corruption)"},
  };
  return k;
}

bool fault_lasts(const std::string& kind) {
  return kind.find("err-") != std::string::npos || kind == "mem-stall" || kind == "lost-irq";
}

// KIND@AT_MS[+FOR_MS][/CORE], read left to right: each field given is
// checked (never an empty one, a second separator, a number that is not
// plain decimal), and FOR_MS only where the fault lasts.
Expected<FaultEvent> parse_fault(const std::string& text) {
  const std::string where = "--fault " + excerpt(text), grammar = " (expected KIND@AT_MS[+FOR_MS][/CORE])";
  FaultEvent f;
  f.text = text;
  const size_t at = text.find('@');
  if (at == std::string::npos) return make_error(where, "no '@'" + grammar);
  f.kind = text.substr(0, at);
  if (f.kind.empty()) return make_error(where, "KIND is empty" + grammar);
  bool known = false;
  std::string names;
  for (const auto& [k, what] : fault_kinds()) {
    known = known || k == f.kind;
    names += (names.empty() ? "" : ", ") + k;
  }
  if (!known) return make_error(where, "unknown fault kind '" + excerpt(f.kind) + "' (" + names + ")");
  // The fields after '@', each up to the next separator.
  const std::string rest = text.substr(at + 1);
  const size_t plus = rest.find_first_of("+/");
  const size_t slash = rest.find('/', plus == std::string::npos ? rest.size() : plus);
  const std::string at_ms = rest.substr(0, plus);
  const bool has_dur = plus != std::string::npos && rest[plus] == '+', has_core = slash != std::string::npos;
  const std::string dur = has_dur ? rest.substr(plus + 1, (has_core ? slash : rest.size()) - plus - 1) : "";
  const std::string core = has_core ? rest.substr(slash + 1) : "";
  const auto ms = [&](const std::string& t, const char* what, bool zero, double& out) -> Status {
    if (t.empty()) return make_error(where, std::string(what) + " is empty" + grammar);
    const auto v = parse_double(t);
    if (!v || std::signbit(*v) || !(zero || *v > 0) || *v > 1e6)
      return make_error(where, std::string(what) + " '" + excerpt(t) + "' is not a number of ms in " +
                                   (zero ? "[0, 1e6]" : "(0, 1e6]"));
    out = *v;
    return Status::ok();
  };
  LOOM_TRY(ms(at_ms, "AT_MS", true, f.at_ms));
  if (has_dur) {
    if (!fault_lasts(f.kind))
      return make_error(where, "FOR_MS given, but a " + f.kind +
                                   " fault does not last (only slverr-/decerr- faults, mem-stall and lost-irq do)");
    LOOM_TRY(ms(dur, "FOR_MS", false, f.for_ms));
  }
  if (has_core) {
    if (core.empty()) return make_error(where, "CORE is empty" + grammar);
    const auto c = parse_int64(core);  // digits only: no sign, not even "-0"
    if (!c || core.find_first_not_of("0123456789") != std::string::npos || *c >= spec::kMaxCores)
      return make_error(
          where, "CORE '" + excerpt(core) + "' is not a core index in 0.." + std::to_string(spec::kMaxCores - 1));
    f.core = int(*c);
  }
  return f;
}

LiveEngine::LiveEngine(runtime::Device& dev, const LiveOptions& o)
    : dev_(dev),
      o_(o),
      pending_break_(dev.config().cores),
      corrupt_next_(dev.config().cores, false),
      jobs_(dev, job_options(o)),
      timed_(dev.has_time()),
      wall0_(std::chrono::steady_clock::now()),
      c0_(timed_ ? dev.cycles() : 0),
      mhz_(double(std::max(1u, dev.config().clock_mhz))),
      cores_(dev.config().cores) {
  for (const auto& f : o_.faults) faults_.push_back({f});
}

LiveEngine::~LiveEngine() {
  // Injected faults end with the run.
  if (!active_mem_.empty() || !active_stall_.empty()) (void)dev_.set_memory_faults("", "");
  for (uint32_t c = 0; c < cores_.size(); ++c) jobs_.mask_irq(c, false);
}

uint64_t LiveEngine::to_cycles(double us) const { return c0_ + uint64_t(std::llround(std::max(0.0, us) * mhz_)); }
double LiveEngine::to_us(uint64_t c) const { return double(c - std::min(c, c0_)) / mhz_; }
uint64_t LiveEngine::clock() const {
  if (timed_) return dev_.cycles();
  // An untimed backend (a card): wall time since the engine started, in
  // cycles of the configuration's clock.
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - wall0_).count();
  return uint64_t(us * mhz_);
}

double LiveEngine::now_us() const { return to_us(clock()); }
bool LiveEngine::busy(int core) const { return core >= 0 && size_t(core) < cores_.size() && cores_[size_t(core)].busy; }

size_t LiveEngine::running() const {
  size_t n = 0;
  for (size_t c = 0; c < cores_.size(); ++c) n += leads(c);
  return n;
}

Status LiveEngine::start(const std::vector<int>& gang, LiveWork work, uint64_t id, double predicted_us) {
  if (gang.empty()) return make_error("live", "batch " + std::to_string(id) + " has no core");
  for (int core : gang)
    if (core < 0 || size_t(core) >= cores_.size() || busy(core) || std::count(gang.begin(), gang.end(), core) > 1)
      return make_error("live: core " + std::to_string(core), "not free for batch " + std::to_string(id));
  const int lead = gang.front();
  for (int core : gang) {
    cores_[size_t(core)] = Core{};
    cores_[size_t(core)].busy = true;
    cores_[size_t(core)].lead = lead;
  }
  Core& c = cores_[size_t(lead)];
  c.gang = gang;
  c.id = id;
  c.work = std::move(work);
  const uint64_t now = clock();
  const double limit = std::max(predicted_us * o_.timeout_factor, predicted_us + 10000.0 / mhz_);
  c.started = now;
  c.deadline = predicted_us > 0 ? now + uint64_t(std::llround(limit * mhz_)) : std::numeric_limits<uint64_t>::max();
  std::vector<LiveEnd> none;
  LOOM_TRY(step(lead, now, none));
  return Status::ok();
}

void LiveEngine::release(int ci) {
  const std::vector<int> gang = cores_[size_t(ci)].gang;
  for (int g : gang) cores_[size_t(g)].busy = false, cores_[size_t(g)].lead = -1;
  cores_[size_t(ci)].busy = false;
}

Status LiveEngine::step(int ci, uint64_t now, std::vector<LiveEnd>& out) {
  Core& c = cores_[size_t(ci)];
  if (c.finishing) {  // host work after the last run: the batch ends when it is done
    if (now < c.resume_at) return Status::ok();
    out.push_back({ci, c.id, to_us(c.resume_at), Status::ok()});
    release(ci);
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
  std::vector<uint32_t> cores(c.gang.begin(), c.gang.end());
  return jobs_.start(cores, plan_for(c.gang, *p.plan), *p.inputs, c.id);
}

const plan::Plan& LiveEngine::plan_for(const std::vector<int>& gang, const plan::Plan& p) {
  size_t m = 0;
  while (m < gang.size() && pending_break_[size_t(gang[m])].empty()) ++m;
  if (m == gang.size() || m >= p.cores.size() || p.cores[m].empty()) return p;
  std::string& kind = pending_break_[size_t(gang[m])];
  plan::Plan b = p;
  auto& st = b.cores[m];
  if (kind == "watchdog" || kind == "host-timeout") {
    // A wait for a count nothing signals, on the first semaphore of the
    // core's range (cleared at every start).
    const auto& cfg = dev_.config();
    const uint32_t per_core = cfg.cores ? cfg.semaphores / cfg.cores : 0;
    spec::SemWaitInsn w;
    w.sem_id = uint64_t(m) * per_core;
    w.count = 0xFFFFFFFFu;
    st.insert(st.begin(), w.encode());
    b.semaphores_used = std::max<uint32_t>(b.semaphores_used, uint32_t(w.sem_id) + 1);
  } else if (kind == "illegal-insn") {
    unsigned op = 63;
    while (op > 0 && spec::opcode_info(op) != nullptr) --op;
    spec::set_bits(st[std::min<size_t>(2, st.size() - 1)], 0, 6, op);
  } else if (kind == "window") {
    for (auto& in : st)
      if (spec::Opcode(spec::get_bits(in, 0, 6)) == spec::Opcode::LOAD) {
        auto l = spec::LoadInsn::decode(in);
        l.dram_addr = b.memory_bytes + 4096;
        in = l.encode();
        break;
      }
  }
  b.graph_name += " (broken: " + kind + ")";
  kind.clear();
  broken_.push_back(std::move(b));
  return broken_.back();
}

Status LiveEngine::set_memory_faults() {
  std::string text;
  for (const auto& t : active_mem_) text += (text.empty() ? "" : ",") + t;
  return dev_.set_memory_faults(text, active_stall_);
}

namespace {

std::string ms_text(double ms) {
  std::ostringstream o;
  o << ms << " ms";
  return o.str();
}

}  // namespace

std::string FaultApplied::not_applied() const {
  return waiting.empty() ? "the run ended before " + ms_text(event.at_ms) : waiting;
}

Expected<uint64_t> LiveEngine::inject(uint64_t now) {
  uint64_t next = std::numeric_limits<uint64_t>::max();
  bool mem_changed = false;
  for (auto& f : faults_) {
    const FaultEvent& e = f.event;
    const uint64_t at = to_cycles(e.at_ms * 1000.0), until = to_cycles((e.at_ms + e.for_ms) * 1000.0);
    const int c = e.core;
    if (c < 0 || size_t(c) >= cores_.size()) {
      continue;  // a core this configuration lacks: never applied (reported)
    }
    if (f.applied_ms < 0) {
      if (now < at) {
        next = std::min(next, at);
        continue;
      }
      const std::string& k = e.kind;
      bool applied = true;
      if (k == "slverr-read" || k == "decerr-read" || k == "slverr-write" || k == "decerr-write") {
        const bool read = k.find("read") != std::string::npos;
        auto ranges = jobs_.regions(uint32_t(c),
                                    read ? runtime::CoreJobs::Region::Constants : runtime::CoreJobs::Region::Outputs);
        if (ranges.empty()) {
          applied = false;  // nothing loaded on the core yet: at its first run
          f.waiting = "core " + std::to_string(c) + " had no " + (read ? "constants" : "outputs") +
                      " in device memory before the run ended";
        } else {
          for (const auto& [a, n] : ranges) active_mem_.push_back(k.substr(0, 6) + "@" + hex(a) + "+" + hex(n));
          mem_changed = true;
        }
      } else if (k == "mem-stall") {
        active_stall_ = kStall;
        mem_changed = true;
      } else if (k == "watchdog" || k == "host-timeout") {
        dev_.write_reg(spec::reg::WATCHDOG, k == "watchdog" ? kWatchdogCycles : 0);
        pending_break_[size_t(c)] = k;
      } else if (k == "illegal-insn" || k == "window") {
        pending_break_[size_t(c)] = k;
      } else if (k == "core-reset") {
        if (jobs_.busy(uint32_t(c)))
          dev_.write_reg(spec::reg::SOFT_RESET, 1u << c);
        else
          applied = false, f.waiting = "core " + std::to_string(c) + " ran no batch after " +
                                       ms_text(e.at_ms);  // idle: when it runs next
      } else if (k == "lost-irq") {
        jobs_.mask_irq(uint32_t(c), true);
      } else if (k == "corrupt-output") {
        corrupt_next_[size_t(c)] = true;
      }
      if (!applied) {
        next = std::min(next, now + 1000);  // look again soon
        continue;
      }
      f.applied_ms = to_us(now) / 1000.0;
    }
    // Lifting what lasts.
    if (!fault_lasts(e.kind) || f.ended_ms >= 0) continue;
    if (now < until) {
      next = std::min(next, until);
      continue;
    }
    if (e.kind == "mem-stall") {
      active_stall_.clear();
      mem_changed = true;
    } else if (e.kind == "lost-irq") {
      jobs_.mask_irq(uint32_t(c), false);
    } else {
      const std::string prefix = e.kind.substr(0, 6) + "@";
      auto ranges =
          jobs_.regions(uint32_t(c), e.kind.find("read") != std::string::npos ? runtime::CoreJobs::Region::Constants
                                                                              : runtime::CoreJobs::Region::Outputs);
      for (const auto& [a, n] : ranges) {
        auto it = std::find(active_mem_.begin(), active_mem_.end(), prefix + hex(a) + "+" + hex(n));
        if (it != active_mem_.end()) active_mem_.erase(it);
      }
      mem_changed = true;
    }
    f.ended_ms = to_us(now) / 1000.0;
  }
  if (mem_changed) LOOM_TRY(set_memory_faults());
  return next;
}

Expected<std::vector<LiveEnd>> LiveEngine::advance(double until_us) {
  std::vector<LiveEnd> out;
  const bool forever = !std::isfinite(until_us);
  const uint64_t target = forever ? std::numeric_limits<uint64_t>::max() : to_cycles(until_us);
  for (;;) {
    uint64_t now = clock();
    auto due = inject(now);
    if (!due) return due.error();
    // Host work that is over: start the next run, or end the batch.
    for (size_t ci = 0; ci < cores_.size(); ++ci)
      if (leads(ci) && !jobs_.busy(uint32_t(ci)) && cores_[ci].resume_at != 0 && cores_[ci].resume_at <= now)
        LOOM_TRY(step(int(ci), now, out));
    // The host-side timeout.
    for (size_t ci = 0; ci < cores_.size(); ++ci) {
      Core& c = cores_[ci];
      if (!leads(ci) || now < c.deadline) continue;
      if (jobs_.busy(uint32_t(ci))) jobs_.abort(uint32_t(ci), "host-side timeout");
      ++stats_.timeouts;
      out.push_back(
          {int(ci), c.id, to_us(now),
           make_error("live: core " + std::to_string(ci),
                      "batch still running after " + std::to_string(now - c.started) +
                          " cycles (the host-side timeout); " + (c.gang.size() > 1 ? "its cores reset" : "core reset")),
           int(ci)});
      release(int(ci));
    }
    if (!out.empty()) return out;
    if (now >= target) return out;
    // Wake at the target, the earliest end of host work, the earliest
    // timeout, or the next fault.
    uint64_t wake = std::min(target, *due);
    bool any = false;
    for (size_t ci = 0; ci < cores_.size(); ++ci) {
      const Core& c = cores_[ci];
      if (!leads(ci)) continue;
      any = true;
      wake = std::min(wake, c.deadline);
      if (!jobs_.busy(uint32_t(ci)) && c.resume_at != 0) wake = std::min(wake, c.resume_at);
    }
    if (forever && !any) return out;  // nothing runs and nothing arrives: nothing to wait for
    const uint64_t span = wake > now ? wake - now : 0;
    if (jobs_.running() == 0) {
      if (span > 0) {
        if (timed_) {
          auto r = dev_.run_for(span, false);
          if (!r) return r.error();
        } else {  // nothing runs: the host sleeps until then
          std::this_thread::sleep_for(std::chrono::microseconds(uint64_t(double(span) / mhz_)));
        }
      }
      continue;
    }
    auto ends = jobs_.wait(span);
    if (!ends) return ends.error();
    for (auto& e : *ends) {
      if (!timed_) e.end_cycles = clock();  // the card's clock is not visible: when the host saw it
      const int ci = int(e.core);
      Core& c = cores_[size_t(ci)];
      if (!leads(size_t(ci)) || c.id != e.id) continue;  // aborted meanwhile
      if (!e.status) {
        ++stats_.device_errors;
        out.push_back({ci, c.id, to_us(e.end_cycles), e.status, int(e.failed_core)});
        release(ci);
        continue;
      }
      const LivePart& p = c.work.parts[c.next - 1];
      for (int g : c.gang)
        if (corrupt_next_[size_t(g)] && !e.outputs.empty() && !e.outputs[0].second.data.empty()) {
          e.outputs[0].second.data[0] ^= 0x10;  // the injected corruption
          corrupt_next_[size_t(g)] = false;
          break;
        }
      if (p.expected) {
        ++stats_.checked;
        std::string which;
        if (!same_outputs(e.outputs, *p.expected, which)) {
          ++stats_.mismatches;
          out.push_back(
              {ci, c.id, to_us(e.end_cycles),
               make_error("live: core " + std::to_string(ci), "output '" + which + "' of plan '" + p.plan->graph_name +
                                                                  "' differs from the golden model")});
          release(ci);
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
