#include "serve/server.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <queue>
#include <sstream>

#include "common/limits.h"
#include "ir/builder.h"
#include "serve/live.h"
#include "serve/metrics.h"
#include "serve/policy.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxRequests = limits::kMaxRequestsPerStream;
constexpr size_t kMaxLiveProfiles = size_t(limits::kMaxLiveProfiles);

struct Req {
  int stream = 0;
  double arrival = 0, deadline = 0;
  int64_t seq = 1;
  double start = -1, done = -1;
  bool dropped = false;
  bool failed = false;  // live: its batch failed more often than max_retries allows
  int attempts = 0;     // live: batches it was part of that failed
  int reason = -1;      // live, failed: index into SimOut::fail_reasons
};

double uniform(ir::Rng& r) { return double(r.next() >> 11) * 0x1.0p-53; }
double expo(ir::Rng& r, double rate_per_us) { return -std::log(1.0 - uniform(r)) / rate_per_us; }

const std::vector<double>& weights_at(const ShapeDist& d, double t_us) {
  const std::vector<double>* w = &d.weights;
  for (const auto& dr : d.drift)
    if (t_us >= dr.at_ms * 1000.0) w = &dr.weights;
  return *w;
}

int64_t draw_seq(const ShapeDist& d, double t_us, ir::Rng& r) {
  const auto& w = weights_at(d, t_us);
  double sum = 0;
  for (double x : w) sum += x;
  double u = uniform(r) * sum;
  for (size_t i = 0; i < w.size(); ++i) {
    if (u < w[i]) return d.values[i];
    u -= w[i];
  }
  for (size_t i = w.size(); i-- > 0;)
    if (w[i] > 0) return d.values[i];
  return d.values.back();
}

// Arrivals of one stream, seeded by (workload seed, stream index) only, so a
// stream sees the same requests alone and in any mix.
std::vector<Req> arrivals(const Stream& s, int idx, uint64_t seed, double duration_us, double scale) {
  ir::Rng rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(idx) * 0x632BE59BD9B4E019ull + 1);
  std::vector<Req> out;
  auto push = [&](double t, int64_t seq) {
    Req r;
    r.stream = idx;
    r.arrival = t;
    r.deadline = t + s.slo_ms * 1000.0;
    r.seq = seq > 0 ? seq : draw_seq(s.shapes, t, rng);
    out.push_back(r);
  };
  const auto& a = s.arrival;
  auto full = [&] {
    return (s.requests > 0 && int64_t(out.size()) >= s.requests) || int64_t(out.size()) > kMaxRequests;
  };
  if (a.kind == Arrival::Kind::Trace) {
    for (size_t i = 0; i < a.trace_ms.size() && !full(); ++i) {
      const double t = a.trace_ms[i] * 1000.0 / scale;
      if (t >= duration_us) break;
      push(t, a.trace_seq[i]);
    }
    return out;
  }
  double t = 0;
  if (a.kind == Arrival::Kind::Poisson) {
    const double rate = a.rate * scale / 1e6;
    while (!full()) {
      t += expo(rng, rate);
      if (t >= duration_us) break;
      push(t, 0);
    }
    return out;
  }
  // Bursty: on/off periods of fixed length, Poisson within each at its rate;
  // an exponential gap that crosses a period boundary restarts at the
  // boundary (memorylessness keeps this exact).
  const double on = a.on_ms * 1000.0, off = a.off_ms * 1000.0, period = on + off;
  while (!full() && t < duration_us) {
    const double ph = std::fmod(t, period);
    const bool is_on = ph < on;
    const double end = t - ph + (is_on ? on : period);
    const double rate = (is_on ? a.on_rate : a.off_rate) * scale / 1e6;
    const double gap = rate > 0 ? expo(rng, rate) : kInf;
    if (t + gap >= end) {
      t = end;
      continue;
    }
    t += gap;
    if (t >= duration_us) break;
    push(t, 0);
  }
  return out;
}

enum class Sched { Static, Dynamic };

struct SimOut {
  std::vector<Req> reqs;
  std::vector<double> core_busy;
  std::vector<int64_t> core_batches;
  std::map<int, int64_t> batch_hist;
  std::vector<BatchSpan> spans;
  int64_t fallbacks = 0, steals = 0, port_limit_waits = 0;
  int64_t gang_batches = 0;  // batches run on several cores at once
  double makespan = 0;
  // Live mode.
  std::vector<std::string> fail_reasons;  // distinct reasons a batch failed, first seen first
  std::map<int, int64_t> failed_batches;  // reason index -> batches
  int64_t retried = 0;                    // requests queued again after their batch failed
  std::vector<int64_t> quarantines;       // per core: times taken out of service after a failure
  std::vector<double> quarantine_us;      // per core: back-off time, summed
  LiveStats live;
  std::vector<FaultApplied> faults;
  std::vector<std::pair<int64_t, double>> rss;  // live: (requests arrived, resident MiB), 100 samples
};

/// Resident memory of this process in MiB (Linux /proc/self/statm); 0 when unknown.
double resident_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, rss = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &rss);
  std::fclose(f);
  return n == 2 ? double(rss) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
}

class Sim {
 public:
  Sim(const Workload& w, const std::vector<int>& active, Sched sched, const spec::HwConfig& cfg, ServiceModel& sm,
      const ServeOptions& o, std::function<void(size_t arrived, size_t total)> tick = {})
      : w_(w), active_(active), sched_(sched), cfg_(cfg), sm_(sm), o_(o), tick_(std::move(tick)) {}

  Status partition(std::vector<int>& home, std::vector<int>& count) const {
    const int cores = int(cfg_.cores);
    const int ns = int(active_.size());
    count.assign(size_t(ns), 0);
    int fixed = 0, flexible = 0;
    for (int i = 0; i < ns; ++i) {
      const int c = active_.size() == 1 ? 0 : w_.streams[size_t(active_[size_t(i)])].cores;
      count[size_t(i)] = c;
      fixed += c;
      if (c == 0) ++flexible;
    }
    if (fixed > cores)
      return make_error(w_.source, "static partition: streams ask for " + std::to_string(fixed) + " cores, config '" +
                                       std::string(cfg_.name) + "' has " + std::to_string(cores));
    int rest = cores - fixed;
    for (int i = 0; i < ns && flexible; ++i)
      if (count[size_t(i)] == 0) {
        count[size_t(i)] = rest / flexible + (rest % flexible ? 1 : 0);
        rest -= count[size_t(i)];
        --flexible;
      }
    home.assign(size_t(cores), -1);
    int c = 0;
    for (int i = 0; i < ns; ++i)
      for (int k = 0; k < count[size_t(i)]; ++k) home[size_t(c++)] = i;
    for (int i = 0; i < ns; ++i)
      if (count[size_t(i)] == 0 && sched_ == Sched::Static)
        return make_error(w_.source, "static partition: stream '" + w_.streams[size_t(active_[size_t(i)])].name +
                                         "' gets no core (" + std::to_string(cores) + " cores for " +
                                         std::to_string(ns) + " streams)");
    // Dynamic: cores left without a home (fixed counts below the total) serve everyone.
    return {};
  }

  Expected<SimOut> run(Batching batching) {
    const int cores = int(cfg_.cores);
    const int ports = int(std::max(1u, cfg_.mem_ports));
    std::vector<int> home, count;
    if (Status s = partition(home, count); !s) return s.error();
    SimOut out;
    LOOM_TRY(check_budget(w_, o_.load_scale));
    const double dur = w_.duration_ms * 1000.0;
    for (size_t i = 0; i < active_.size(); ++i) {
      auto a = arrivals(w_.streams[size_t(active_[i])], active_[i], w_.seed, dur, o_.load_scale);
      if (int64_t(a.size()) > kMaxRequests)
        return make_error(w_.source + ": stream '" + w_.streams[size_t(active_[i])].name + "'",
                          "more than " + std::to_string(kMaxRequests) +
                              " requests in duration_ms (docs/security.md); shorten the run or lower the rate");
      for (auto& r : a) r.stream = int(i);
      out.reqs.insert(out.reqs.end(), a.begin(), a.end());
    }
    std::stable_sort(out.reqs.begin(), out.reqs.end(), [](const Req& a, const Req& b) { return a.arrival < b.arrival; });
    out.core_busy.assign(size_t(cores), 0);
    out.core_batches.assign(size_t(cores), 0);
    out.quarantines.assign(size_t(cores), 0);
    out.quarantine_us.assign(size_t(cores), 0);

    const size_t ns = active_.size();
    std::vector<std::deque<int>> queue(ns);
    std::vector<std::deque<QueuedReq>> qview(ns);
    std::vector<BatchParams> bp(ns);
    for (size_t i = 0; i < ns; ++i) {
      const Stream& s = w_.streams[size_t(active_[i])];
      bp[i].policy = batching;
      bp[i].max_batch = w_.max_batch;
      bp[i].max_delay_us = w_.max_queue_delay_ms * 1000.0;
      bp[i].slack_margin = w_.slack_margin;
      bp[i].max_seq = *std::max_element(s.shapes.values.begin(), s.shapes.values.end());
      bp[i].group_shapes = w_.shape_grouping;
    }
    Status err;
    auto svc = [&](size_t si, int64_t seq, int n) -> double {
      auto c = sm_.cycles(w_.streams[size_t(active_[si])].model, seq, n);
      if (!c) {
        if (err) err = c.error();
        return kInf;
      }
      return sm_.cycles_to_us(*c);
    };

    struct Ev {
      double t;
      int64_t order;
      int kind;  // 0 done, 1 arrival, 2 wake, 3 a core back in service (live)
      int idx;
      int64_t gen = 0;  // done: the core's batch generation (a rescheduled finish makes older events stale)
      bool operator>(const Ev& o) const { return t != o.t ? t > o.t : order > o.order; }
    };
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> ev;
    int64_t order = 0;
    for (size_t i = 0; i < out.reqs.size(); ++i) ev.push({out.reqs[i].arrival, order++, 1, int(i), 0});
    std::vector<bool> busy(size_t(cores), false);
    std::vector<int> port_busy(size_t(ports), 0);
    std::vector<std::vector<int>> running(static_cast<size_t>(cores), std::vector<int>{});
    std::vector<double> wake(ns, kInf);
    auto port_of = [&](int c) { return int(spec::mem_port_of(cfg_, unsigned(c))); };

    // Live mode: every service time the scheduler may ask for is measured
    // first (the device is the live runtime's from then on), and every plan
    // compiled, with its golden outputs; then the engine owns the device.
    std::unique_ptr<LiveEngine> live;
    if (o_.mode == "live") {
      // Bounded: each (stream, shape, batch size) is a run on the device and a
      // compile before the live run starts.
      size_t combos = 0;
      for (size_t si = 0; si < ns; ++si) combos += w_.streams[size_t(active_[si])].shapes.values.size();
      combos *= size_t(std::max(1, w_.max_batch));
      if (combos > kMaxLiveProfiles)
        return make_error(w_.source, "--mode live measures every (stream, sequence length, batch size) before it "
                                     "starts: " + std::to_string(combos) + " here, at most " +
                                     std::to_string(kMaxLiveProfiles) + "; lower max_batch or the shapes");
      for (size_t si = 0; si < ns; ++si) {
        const Stream& s = w_.streams[size_t(active_[si])];
        for (int64_t seq : s.shapes.values)
          for (int n = 1; n <= w_.max_batch; ++n) {
            svc(si, seq, n);
            if (!err) return err.error();
            auto lw = sm_.live_work(s.model, seq, n);
            if (!lw) return lw.error();
          }
      }
      auto dev = sm_.device();
      if (!dev) return dev.error();
      sm_.freeze(true);
      live = std::make_unique<LiveEngine>(**dev, o_.live);
    }
    struct Unfreeze {
      ServiceModel& sm;
      ~Unfreeze() { sm.freeze(false); }
    } unfreeze{sm_};
    uint64_t next_batch = 1;
    // Live: a core whose batch failed on the device is out of service for a
    // back-off (0.5 ms, doubling with each failure in a row, at most 8 ms; a
    // success resets it), so retried requests go to the other cores, as a
    // circuit breaker does.
    std::vector<double> out_until(size_t(cores), -kInf);
    std::vector<int> fails_in_row(size_t(cores), 0);
    auto usable = [&](int c, double now) { return !busy[size_t(c)] && now >= out_until[size_t(c)]; };

    // Port contention as progress rates: a batch needs `alone` us of service
    // by itself; while other batches run on its port it progresses at
    // 1 / stretch, the stretch measured for it with exactly those batches on
    // the port's other cores (ServiceModel::stretch), or 1 + port_contention
    // x (k - 1) for k busy cores when the workload gives it. Whenever a
    // port's batches change, the finish of every batch on it is recomputed.
    //
    // A batch mapped onto several cores (ServiceModel::width, set by `loom
    // tune`) runs as a gang: it starts when that many cores are free, holds
    // them all until it ends, and its state lives with its first core (the
    // lead). Stretches are measured for one-core batches: a gang is stretched
    // only by the workload's port_contention, and stretches no one-core
    // batch otherwise.
    struct Running {
      size_t si = 0;
      int64_t seq = 1;
      int n = 0;
      double alone = 0, remaining = 0, last = 0, start = 0;
      size_t span = 0;  // the first of its spans, one per core of the gang
      double rate = 1;  // the stretch in force since `last`
      std::vector<int> gang;  // its cores, the lead first
    };
    std::vector<Running> run(static_cast<size_t>(cores));
    std::vector<int> lead_of(size_t(cores), -1);  // busy cores: the lead core of the batch they run
    std::vector<int64_t> gen(size_t(cores), 0);
    auto on_port = [&](const Running& r, int p) {
      return std::any_of(r.gang.begin(), r.gang.end(), [&](int c) { return port_of(c) == p; });
    };
    auto stretch = [&](int core) -> double {
      const Running& r = run[size_t(core)];
      std::vector<BatchShape> with;
      int others = 0;
      for (int c = 0; c < cores; ++c) {
        if (!busy[size_t(c)] || lead_of[size_t(c)] == core || !on_port(r, port_of(c))) continue;
        ++others;
        const Running& o = run[size_t(lead_of[size_t(c)])];
        if (o.gang.size() == 1) with.push_back({&w_.streams[size_t(active_[o.si])].model, o.seq, o.n});
      }
      if (others == 0) return 1.0;
      if (w_.port_contention >= 0) return 1.0 + w_.port_contention * double(others);
      if (r.gang.size() > 1 || with.empty()) return 1.0;
      sm_.set_now(r.start);  // the mapping the batch was dispatched under
      auto s = sm_.stretch({&w_.streams[size_t(active_[r.si])].model, r.seq, r.n}, with);
      if (!s) {
        if (err) err = s.error();
        return 1.0;
      }
      return *s;
    };
    auto repace = [&](int p, double now) {
      for (int c = 0; c < cores; ++c) {
        if (!busy[size_t(c)] || lead_of[size_t(c)] != c || !on_port(run[size_t(c)], p)) continue;
        Running& r = run[size_t(c)];
        if (now > r.last) r.remaining = std::max(0.0, r.remaining - (now - r.last) / r.rate);
        r.last = now;
        r.rate = stretch(c);
        ev.push({now + r.remaining * r.rate, order++, 0, c, ++gen[size_t(c)]});
      }
      sm_.set_now(now);
    };

    // The padded length of the batch `dec` would take from stream si's queue.
    auto batch_seq = [&](size_t si, const BatchDecision& dec) {
      int64_t seq = 1;
      if (dec.idx.empty())
        for (int k = 0; k < dec.n && k < int(queue[si].size()); ++k)
          seq = std::max(seq, out.reqs[size_t(queue[si][size_t(k)])].seq);
      else
        for (int k : dec.idx) seq = std::max(seq, out.reqs[size_t(queue[si][size_t(k)])].seq);
      return seq;
    };
    auto dispatch = [&](const std::vector<int>& gang, size_t si, const BatchDecision& dec, double now) {
      const int core = gang.front();
      const int n = dec.n;
      int64_t seq = 1;
      std::vector<int> batch;
      auto take = [&](int ri) {
        out.reqs[size_t(ri)].start = now;
        seq = std::max(seq, out.reqs[size_t(ri)].seq);
        batch.push_back(ri);
      };
      if (dec.idx.empty()) {
        for (int k = 0; k < n; ++k) {
          take(queue[si].front());
          queue[si].pop_front();
          qview[si].pop_front();
        }
      } else {  // shape-grouped: members picked out of the queue (positions ascending)
        for (int k : dec.idx) take(queue[si][size_t(k)]);
        for (size_t k = dec.idx.size(); k-- > 0;) {
          queue[si].erase(queue[si].begin() + dec.idx[k]);
          qview[si].erase(qview[si].begin() + dec.idx[k]);
        }
      }
      Running& r = run[size_t(core)];
      r = Running{si, seq, n, svc(si, seq, n), 0, now, now, out.spans.size(), 1.0, gang};
      r.remaining = r.alone;
      running[size_t(core)] = std::move(batch);
      ++out.batch_hist[n];
      if (gang.size() > 1) ++out.gang_batches;
      for (size_t k = 0; k < gang.size(); ++k) {
        const int c = gang[k];
        busy[size_t(c)] = true;
        lead_of[size_t(c)] = core;
        ++out.core_batches[size_t(c)];
        ++port_busy[size_t(port_of(c))];
        // The batch's span on each of its cores (end set when it finishes),
        // kept only when asked for (--trace, loom tune): a long run's memory
        // stays flat without it.
        if (o_.spans)
          out.spans.push_back({c, active_[si], n, seq, now, now + r.alone, int(gang.size()), int(k)});
      }
      if (sched_ == Sched::Dynamic && home[size_t(core)] >= 0 && home[size_t(core)] != int(si)) ++out.steals;
      if (live) {  // the device runs it; its end comes from the engine
        auto lw = sm_.live_work(w_.streams[size_t(active_[si])].model, seq, n);
        if (!lw) {
          if (err) err = lw.error();
          return;
        }
        if (Status st = live->start(core, std::move(*lw), next_batch++, r.alone); !st && err) err = st;
        return;
      }
      for (int q = 0; q < ports; ++q)
        if (on_port(r, q)) repace(q, now);
    };

    // A batch ended on `core` at `now`: its requests are done, or (live, a
    // failed batch) queued again at the front of their stream's queue, or
    // failed with the reason once they have been retried max_retries times.
    auto finish = [&](int core, double now, const Status& st) {
      const Running& r = run[size_t(core)];
      if (st) {
        for (int ri : running[size_t(core)]) out.reqs[size_t(ri)].done = now;
        fails_in_row[size_t(core)] = 0;
      } else {
        const int n = std::min(++fails_in_row[size_t(core)], 5);
        const double backoff = 500.0 * double(1 << (n - 1));
        out_until[size_t(core)] = now + backoff;
        out.quarantine_us[size_t(core)] += backoff;
        ++out.quarantines[size_t(core)];
        ev.push({now + backoff, order++, 3, core, 0});  // the core is back: decide again
        const std::string why = st.str();
        auto it = std::find(out.fail_reasons.begin(), out.fail_reasons.end(), why);
        const int reason = int(it - out.fail_reasons.begin());
        if (it == out.fail_reasons.end()) out.fail_reasons.push_back(why);
        ++out.failed_batches[reason];
        const auto& members = running[size_t(core)];
        for (size_t k = members.size(); k-- > 0;) {
          Req& q = out.reqs[size_t(members[k])];
          if (++q.attempts <= o_.max_retries) {
            q.start = -1;
            queue[r.si].push_front(members[k]);
            qview[r.si].push_front({q.arrival, q.deadline, q.seq});
            ++out.retried;
          } else {
            q.failed = true;
            q.reason = reason;
            q.done = now;
          }
        }
      }
      running[size_t(core)].clear();
      for (size_t k = 0; k < r.gang.size(); ++k) {
        const int c = r.gang[k];
        busy[size_t(c)] = false;
        lead_of[size_t(c)] = -1;
        out.core_busy[size_t(c)] += now - r.start;
        if (o_.spans) out.spans[r.span + k].end_us = now;
        --port_busy[size_t(port_of(c))];
      }
      if (!live)
        for (int q = 0; q < ports; ++q)
          if (on_port(r, q)) repace(q, now);
      out.makespan = std::max(out.makespan, now);
    };

    auto schedule = [&](double now) {
      sm_.set_now(now);
      for (;;) {
        if (!err) return;
        // Decisions of every stream with waiting requests.
        std::vector<BatchDecision> dec(ns);
        bool any = false;
        // Idle cores each stream could use now.
        std::vector<int> idle(ns, 0);
        int idle_all = 0;
        for (int c = 0; c < cores; ++c) {
          if (!usable(c, now)) continue;
          if (sched_ == Sched::Static) {
            if (home[size_t(c)] >= 0) ++idle[size_t(home[size_t(c)])];
          } else if (w_.max_per_port == 0 || port_busy[size_t(port_of(c))] < w_.max_per_port) {
            ++idle_all;
          }
        }
        for (size_t si = 0; si < ns; ++si) {
          if (queue[si].empty()) continue;
          dec[si] = decide_batch(bp[si], qview[si], now, [&](int64_t s, int n) { return svc(si, s, n); },
                                 sched_ == Sched::Static ? idle[si] : idle_all);
          if (dec[si].n > 0) any = true;
          else if (dec[si].wake_us < wake[si] || wake[si] <= now) {
            wake[si] = dec[si].wake_us;
            if (std::isfinite(dec[si].wake_us)) ev.push({dec[si].wake_us, order++, 2, int(si), 0});
          }
        }
        if (!any) return;
        int core = -1;
        size_t pick = ns;
        if (sched_ == Sched::Static) {
          for (int c = 0; c < cores && core < 0; ++c)
            if (usable(c, now) && home[size_t(c)] >= 0 && dec[size_t(home[size_t(c)])].n > 0)
              core = c, pick = size_t(home[size_t(c)]);
        } else {
          // Topology-aware: the idle core on the least busy memory port, within the limit.
          int best_load = 1 << 30;
          bool limited = false;
          for (int c = 0; c < cores; ++c) {
            if (!usable(c, now)) continue;
            const int load = port_busy[size_t(port_of(c))];
            if (w_.max_per_port > 0 && load >= w_.max_per_port) {
              limited = true;
              continue;
            }
            if (load < best_load) best_load = load, core = c;
          }
          if (core < 0) {
            if (limited) ++out.port_limit_waits;
            return;
          }
          // Priority, then the core's home streams, then earliest deadline (EDF).
          for (size_t si = 0; si < ns; ++si) {
            if (dec[si].n == 0) continue;
            if (pick == ns) {
              pick = si;
              continue;
            }
            const auto& a = w_.streams[size_t(active_[si])];
            const auto& b = w_.streams[size_t(active_[pick])];
            const bool ha = home[size_t(core)] == int(si), hb = home[size_t(core)] == int(pick);
            const double da = qview[si].front().deadline_us, db = qview[pick].front().deadline_us;
            if (batching == Batching::Deadline) {
              // Deadline-aware: the least slack first (a late batch has
              // negative slack), then priority.
              const BatchDecision &x = dec[si], &y = dec[pick];
              if (x.slack_us != y.slack_us ? x.slack_us < y.slack_us : a.priority > b.priority) pick = si;
              continue;
            }
            if (a.priority != b.priority ? a.priority > b.priority : ha != hb ? ha : da < db) pick = si;
          }
        }
        if (core < 0 || pick == ns) return;
        // A batch mapped onto k cores waits until k are free (no other
        // stream's batch overtakes it meanwhile).
        std::vector<int> gang{core};
        const int64_t seq = batch_seq(pick, dec[pick]);
        const int k = sm_.width(w_.streams[size_t(active_[pick])].model, seq, dec[pick].n);
        if (k > 1) {
          const int avail = sched_ == Sched::Static ? count[pick]
                            : w_.max_per_port > 0     ? std::min(cores, ports * w_.max_per_port)
                                                      : cores;
          if (k > avail) {
            if (err)
              err = make_error(w_.source + ": stream '" + w_.streams[size_t(active_[pick])].name + "'",
                               "a batch is mapped onto " + std::to_string(k) + " cores; it can use " +
                                   std::to_string(avail));
            return;
          }
          std::vector<int> more;
          for (int c = 0; c < cores; ++c) {
            if (c == core || !usable(c, now)) continue;
            if (sched_ == Sched::Static ? home[size_t(c)] != int(pick)
                                        : w_.max_per_port > 0 && port_busy[size_t(port_of(c))] >= w_.max_per_port)
              continue;
            more.push_back(c);
          }
          if (int(more.size()) < k - 1) return;
          std::stable_sort(more.begin(), more.end(), [&](int a, int b) {
            return port_busy[size_t(port_of(a))] < port_busy[size_t(port_of(b))];
          });
          gang.insert(gang.end(), more.begin(), more.begin() + (k - 1));
        }
        if (dec[pick].fallback) ++out.fallbacks;
        dispatch(gang, pick, dec[pick], now);
      }
    };

    size_t arrived = 0, next_report = out.reqs.size() / 100 + 1;
    for (;;) {
      if (live) {
        // The device runs until the next arrival or wake-up, or until
        // batches end first: those are handled at their end times.
        const double t_next = ev.empty() ? kInf : ev.top().t;
        if (ev.empty() && live->running() == 0) break;
        auto ends = live->advance(t_next);
        if (!ends) return ends.error();
        if (!ends->empty()) {
          double at = 0;
          for (const LiveEnd& le : *ends) {
            finish(le.core, le.end_us, le.status);
            at = std::max(at, le.end_us);
          }
          schedule(std::max(at, live->now_us()));
          if (!err) return err.error();
          continue;
        }
      }
      if (ev.empty()) break;
      const Ev e = ev.top();
      ev.pop();
      const double now = e.t;
      if (e.kind == 1) {
        Req& r = out.reqs[size_t(e.idx)];
        const size_t si = size_t(r.stream);
        bool drop = false;
        if (w_.admission) {
          // Predicted completion: the queue ahead drains one request at a time
          // on the cores that can serve this stream.
          const int serving = sched_ == Sched::Static ? count[si] : cores;
          sm_.set_now(now);
          const double s1 = svc(si, r.seq, 1);
          const double pred = now + s1 * (1.0 + double(queue[si].size()) / double(std::max(1, serving)));
          drop = pred > r.deadline;
        }
        if (drop) {
          r.dropped = true;
        } else {
          queue[si].push_back(e.idx);
          qview[si].push_back({r.arrival, r.deadline, r.seq});
        }
        if (++arrived >= next_report) {
          if (tick_) tick_(arrived, out.reqs.size());
          if (live) out.rss.emplace_back(int64_t(arrived), resident_mib());
          next_report += out.reqs.size() / 100 + 1;
        }
      } else if (e.kind == 0) {
        if (e.gen != gen[size_t(e.idx)]) continue;  // rescheduled since
        finish(e.idx, now, Status::ok());
      } else if (e.kind == 2) {
        if (wake[size_t(e.idx)] == now) wake[size_t(e.idx)] = kInf;
      }  // kind 3: a core back in service; the decisions below see it
      schedule(now);
      if (!err) return err.error();
    }
    if (live) out.live = live->stats(), out.faults = live->faults();
    return out;
  }

 private:
  const Workload& w_;
  std::vector<int> active_;
  Sched sched_;
  const spec::HwConfig& cfg_;
  ServiceModel& sm_;
  const ServeOptions& o_;
  std::function<void(size_t, size_t)> tick_;
};

json pct_json(std::vector<double> v, const char* suffix = "_us") {
  std::sort(v.begin(), v.end());
  json j;
  const std::pair<const char*, double> ps[] = {{"p50", 50}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}};
  for (auto [name, p] : ps) {
    auto x = percentile(v, p);
    j[std::string(name) + suffix] = x ? json(*x) : json(nullptr);
  }
  double s = 0;
  for (double x : v) s += x;
  j[std::string("mean") + suffix] = v.empty() ? json(nullptr) : json(s / double(v.size()));
  j[std::string("max") + suffix] = v.empty() ? json(nullptr) : json(v.back());
  return j;
}

json cdf_points(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  json a = json::array();
  if (v.empty()) return a;
  for (int i = 0; i <= 100; ++i) a.push_back(*percentile(v, std::max(0.001, double(i))));
  return a;
}

double mean_latency(const SimOut& s, int stream) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& r : s.reqs)
    if (r.stream == stream && !r.dropped && !r.failed) sum += r.done - r.arrival, ++n;
  return n ? sum / double(n) : 0;
}

struct AutoChoice {
  Sched sched;
  std::string reason;
};

Expected<AutoChoice> choose_auto(const Workload& w, const spec::HwConfig& cfg, ServiceModel& sm, double scale) {
  // Measured service-time variance per stream (batch 1 over its shapes, first
  // weights), burstiness of its arrivals, and the load each stream would put
  // on an equal static share of the cores.
  std::ostringstream why;
  double max_cv = 0, max_burst = 0;
  std::vector<double> rho;
  const int ns = int(w.streams.size());
  for (int i = 0; i < ns; ++i) {
    const Stream& s = w.streams[size_t(i)];
    double sw = 0, m1 = 0, m2 = 0;
    for (size_t k = 0; k < s.shapes.values.size(); ++k) {
      auto c = sm.cycles(s.model, s.shapes.values[k], 1);
      if (!c) return c.error();
      const double us = sm.cycles_to_us(*c), wt = s.shapes.weights[k];
      sw += wt, m1 += wt * us, m2 += wt * us * us;
    }
    m1 /= sw, m2 /= sw;
    const double cv = std::sqrt(std::max(0.0, m2 - m1 * m1)) / m1;
    double rate = 0, burst = 1;
    const auto& a = s.arrival;
    if (a.kind == Arrival::Kind::Poisson) {
      rate = a.rate;
    } else if (a.kind == Arrival::Kind::Bursty) {
      rate = (a.on_rate * a.on_ms + a.off_rate * a.off_ms) / (a.on_ms + a.off_ms);
      burst = rate > 0 ? a.on_rate / rate : 1;
    } else {
      const size_t n = a.trace_ms.size();
      const double span = n > 1 ? a.trace_ms.back() - a.trace_ms.front() : 0;
      rate = span > 0 ? double(n - 1) / span * 1000.0 : 0;
      double g1 = 0, g2 = 0;
      for (size_t k = 1; k < n; ++k) {
        const double g = a.trace_ms[k] - a.trace_ms[k - 1];
        g1 += g, g2 += g * g;
      }
      if (n > 2 && g1 > 0) {
        g1 /= double(n - 1), g2 /= double(n - 1);
        burst = std::sqrt(std::max(0.0, g2 - g1 * g1)) / g1;  // CV of the gaps: 1 for Poisson
      }
    }
    const double share = std::max(1.0, double(cfg.cores) / double(ns));
    rho.push_back(rate * scale * m1 / 1e6 / share);
    max_cv = std::max(max_cv, cv);
    max_burst = std::max(max_burst, burst);
  }
  const double rmax = *std::max_element(rho.begin(), rho.end()), rmin = *std::min_element(rho.begin(), rho.end());
  const double imbalance = rmin > 0 ? rmax / rmin : (rmax > 0 ? kInf : 1);
  why.setf(std::ios::fixed);
  why.precision(2);
  why << "service-time CV " << max_cv << " (limit 0.50), arrival burstiness " << max_burst
      << " (limit 1.50), static-share load imbalance " << imbalance << " (limit 1.25)";
  const bool dyn = ns > 1 && (max_cv > 0.5 || max_burst > 1.5 || imbalance > 1.25);
  if (ns == 1) return AutoChoice{Sched::Static, "one stream: static and dynamic coincide; " + why.str()};
  return AutoChoice{dyn ? Sched::Dynamic : Sched::Static,
                    (dyn ? "dynamic: a measure exceeds its limit: " : "static: every measure within its limit: ") +
                        why.str()};
}

}  // namespace

Expected<std::vector<int64_t>> arrival_counts(const Workload& w, double load_scale) {
  LOOM_TRY(check_budget(w, load_scale));
  std::vector<int64_t> n;
  for (size_t i = 0; i < w.streams.size(); ++i)
    n.push_back(int64_t(arrivals(w.streams[i], int(i), w.seed, w.duration_ms * 1000.0, load_scale).size()));
  return n;
}

Expected<json> run_serve(const Workload& w, const ServeOptions& o, ServiceModel& sm) {
  sm.allow_wall_clock(o.mode == "live");
  const spec::HwConfig* cfg = spec::find_config(w.config);
  if (!cfg) return make_error(w.source + ": field 'config'", "unknown configuration '" + w.config + "'");
  Batching batching;
  if (!parse_batching(w.batching, batching))
    return make_error("--batching", "unknown batching policy '" + w.batching + "' (none, fixed, deadline)");
  Sched sched = Sched::Dynamic;
  std::string reason;
  if (w.scheduling == "static") sched = Sched::Static;
  else if (w.scheduling == "dynamic") sched = Sched::Dynamic;
  else if (w.scheduling == "auto") {
    auto c = choose_auto(w, *cfg, sm, o.load_scale);
    if (!c) return c.error();
    sched = c->sched;
    reason = c->reason;
  } else {
    return make_error("--scheduling", "unknown scheduling policy '" + w.scheduling + "' (static, dynamic, auto)");
  }

  // An SLO below the service time of a single smallest request can never be met.
  for (const auto& s : w.streams) {
    const int64_t smin = *std::min_element(s.shapes.values.begin(), s.shapes.values.end());
    auto c = sm.cycles(s.model, smin, 1);
    if (!c) return c.error();
    const double us = sm.cycles_to_us(*c);
    if (s.slo_ms * 1000.0 < us) {
      std::ostringstream m;
      m << "slo_ms " << s.slo_ms << " is below the service time of one request (" << us / 1000.0 << " ms measured on "
        << sm.backend() << ")";
      return make_error(w.source + ": stream '" + s.name + "'", m.str());
    }
  }

  std::vector<int> all;
  for (int i = 0; i < int(w.streams.size()); ++i) all.push_back(i);
  // Progress: the main run is the first half of the work, the isolated
  // runs (as many arrivals again) the second.
  std::function<void(size_t, size_t)> tick;
  if (o.on_progress) tick = [&o](size_t a, size_t n) { o.on_progress(0.5 * double(a) / double(std::max<size_t>(n, 1))); };
  Sim sim(w, all, sched, *cfg, sm, o, tick);
  auto res = sim.run(batching);
  if (!res) return res.error();
  const SimOut& r = *res;
  if (o.requests)
    for (const Req& q : r.reqs) o.requests->push_back({q.stream, q.arrival, q.start, q.done, q.seq, q.dropped});
  if (o.spans) *o.spans = r.spans;

  // Isolated runs (each stream alone on the whole fabric, same policies) for
  // ANTT and STP.
  std::vector<double> alone;
  size_t alone_done = 0;
  const size_t total = r.reqs.size();
  ServeOptions quiet = o;  // the isolated runs: no faults injected, nothing recorded
  quiet.live.faults.clear();
  quiet.spans = nullptr;
  quiet.requests = nullptr;
  for (int i = 0; i < int(w.streams.size()); ++i) {
    std::function<void(size_t, size_t)> t1;
    if (o.on_progress)
      t1 = [&](size_t a, size_t) {
        o.on_progress(0.5 + 0.5 * std::min(1.0, double(alone_done + a) / double(std::max<size_t>(total, 1))));
      };
    Sim one(w, {i}, sched, *cfg, sm, quiet, t1);
    auto ro = one.run(batching);
    if (!ro) return ro.error();
    alone.push_back(mean_latency(*ro, 0));
    alone_done += ro->reqs.size();
  }

  json j;
  j["kind"] = "serve";
  j["workload"] = w.source;
  j["backend"] = o.backend;
  j["mode"] = o.mode;
  j["config"] = w.config;
  j["seed"] = w.seed;
  j["load_scale"] = o.load_scale;
  j["batching"] = w.batching;
  j["max_batch"] = w.max_batch;
  j["max_queue_delay_ms"] = w.max_queue_delay_ms;
  j["slack_margin"] = w.slack_margin;
  j["shape_grouping"] = w.shape_grouping;
  j["scheduling"] = {{"requested", w.scheduling},
                     {"used", sched == Sched::Static ? "static" : "dynamic"},
                     {"reason", reason.empty() ? json(nullptr) : json(reason)}};
  j["admission"] = w.admission;
  j["duration_ms"] = w.duration_ms;
  j["makespan_ms"] = r.makespan / 1000.0;

  int64_t submitted = int64_t(r.reqs.size()), completed = 0, dropped = 0, failed = 0;
  std::vector<double> all_lat;
  json streams = json::array();
  std::vector<double> inv_slowdown;
  double antt = 0;
  const std::vector<double> edges{0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
  for (size_t si = 0; si < w.streams.size(); ++si) {
    const Stream& s = w.streams[si];
    std::vector<double> lat, wait;
    // Latency over time: the requests arriving in each of kWindows equal
    // windows of the run (bursts and drift show up here, not in the
    // whole-run percentiles).
    constexpr size_t kWindows = 50;
    const double span = std::max(r.makespan, 1.0);
    std::vector<std::vector<double>> win(kWindows);
    int64_t sub = 0, comp = 0, drop = 0, fail = 0, met = 0;
    for (const auto& q : r.reqs) {
      if (q.stream != int(si)) continue;
      ++sub;
      if (q.dropped) {
        ++drop;
        continue;
      }
      if (q.failed) {
        ++fail;
        continue;
      }
      if (q.done < 0) continue;  // would be an accounting error, caught below
      ++comp;
      lat.push_back(q.done - q.arrival);
      wait.push_back(q.start - q.arrival);
      win[std::min(kWindows - 1, size_t(std::max(0.0, q.arrival) / span * double(kWindows)))].push_back(q.done - q.arrival);
      if (q.done - q.arrival <= s.slo_ms * 1000.0) ++met;
    }
    completed += comp, dropped += drop, failed += fail;
    all_lat.insert(all_lat.end(), lat.begin(), lat.end());
    json sj;
    sj["name"] = s.name;
    sj["model"] = model_key(s.model);
    if (s.model.kind == ModelSpec::Kind::Onnx) {
      // A bucketed model: its longest bucket's program (the segments and host
      // ops are the same at every length; the host time is the longest's).
      auto oi = sm.onnx_info(s.model, *std::max_element(s.shapes.values.begin(), s.shapes.values.end()));
      if (!oi) return oi.error();
      sj["segments"] = (*oi)->segments;
      sj["fallback_ops"] = (*oi)->fallback_ops.size();
      sj["fallback_op_names"] = (*oi)->fallback_ops;
      sj["host_us_per_request"] = (*oi)->host_us;
    }
    sj["priority"] = s.priority;
    sj["slo_ms"] = s.slo_ms;
    sj["submitted"] = sub;
    sj["completed"] = comp;
    sj["dropped"] = drop;
    sj["failed"] = fail;
    sj["throughput_rps"] = r.makespan > 0 ? double(comp) / r.makespan * 1e6 : 0.0;
    sj["latency"] = pct_json(lat);
    json qw = pct_json(wait);
    json hist = json::array();
    for (size_t k = 0; k < edges.size(); ++k) {
      const double lo = edges[k], hi = k + 1 < edges.size() ? edges[k + 1] : kInf;
      int64_t n = 0;
      for (double x : wait) n += x >= lo && x < hi;
      hist.push_back({{"lo_us", lo}, {"hi_us", std::isfinite(hi) ? json(hi) : json(nullptr)}, {"count", n}});
    }
    qw["histogram"] = hist;
    sj["queue_wait"] = qw;
    sj["slo_attainment"] = sub ? double(met) / double(sub) : 1.0;
    const double shared = mean_latency(r, int(si));
    const double slow = alone[si] > 0 && shared > 0 ? shared / alone[si] : 1.0;
    sj["isolated_mean_latency_us"] = alone[si];
    sj["slowdown"] = slow;
    antt += slow;
    inv_slowdown.push_back(1.0 / slow);
    sj["latency_cdf_us"] = cdf_points(lat);
    json over = json::array();
    for (size_t k = 0; k < kWindows; ++k) {
      const json pj = pct_json(win[k]);
      over.push_back({{"start_ms", double(k) * span / double(kWindows) / 1000.0},
                      {"end_ms", double(k + 1) * span / double(kWindows) / 1000.0},
                      {"completed", win[k].size()},
                      {"p50_us", pj["p50_us"]},
                      {"p99_us", pj["p99_us"]}});
    }
    sj["latency_over_time"] = over;
    streams.push_back(sj);
  }
  if (submitted != completed + failed + dropped)
    return make_error("loom serve", "accounting error: submitted " + std::to_string(submitted) + " != completed " +
                                        std::to_string(completed) + " + failed " + std::to_string(failed) +
                                        " + dropped " + std::to_string(dropped));
  j["submitted"] = submitted;
  j["completed"] = completed;
  j["failed"] = failed;
  j["dropped"] = dropped;
  j["throughput_rps"] = r.makespan > 0 ? double(completed) / r.makespan * 1e6 : 0.0;
  j["latency"] = pct_json(all_lat);
  j["streams"] = streams;
  json bh = json::object();
  for (const auto& [n, c] : r.batch_hist) bh[std::to_string(n)] = c;
  j["batch_sizes"] = bh;
  json cores = json::array();
  double umax = 0, usum = 0;
  for (size_t c = 0; c < r.core_busy.size(); ++c) {
    const double u = r.makespan > 0 ? r.core_busy[c] / r.makespan : 0;
    umax = std::max(umax, u), usum += u;
    cores.push_back({{"core", c},
                     {"port", spec::mem_port_of(*cfg, unsigned(c))},
                     {"busy_us", r.core_busy[c]},
                     {"utilization", u},
                     {"batches", r.core_batches[c]}});
    if (o.mode == "live") {
      cores.back()["out_of_service"] = r.quarantines[c];
      cores.back()["out_of_service_us"] = r.quarantine_us[c];
    }
  }
  j["cores"] = cores;
  const double umean = usum / double(std::max<size_t>(1, r.core_busy.size()));
  j["core_imbalance"] = umean > 0 ? umax / umean - 1.0 : 0.0;
  j["fairness"] = {{"jain", jain_index(inv_slowdown)},
                   {"antt", antt / double(w.streams.size())},
                   {"stp", [&] {
                      double s = 0;
                      for (double x : inv_slowdown) s += x;
                      return s;
                    }()}};
  j["fallbacks"] = {{"deadline_infeasible", r.fallbacks}};
  j["steals"] = r.steals;
  j["port_limit_waits"] = r.port_limit_waits;
  j["gang_batches"] = r.gang_batches;
  j["port_contention"] = w.port_contention >= 0 ? json(w.port_contention) : json("measured");
  j["max_per_port"] = w.max_per_port;
  json tab = json::array(), stretch = json::array();
  for (const auto& m : sm.measurements())
    tab.push_back({{"model", m.model}, {"seq", m.seq}, {"batch", m.batch}, {"cycles", m.cycles},
                   {"us", sm.cycles_to_us(m.cycles)}});
  for (const auto& m : sm.stretches()) {
    json with = json::array();
    for (const auto& [wm, ws, wb] : m.with) with.push_back({{"model", wm}, {"seq", ws}, {"batch", wb}});
    stretch.push_back({{"model", m.model}, {"seq", m.seq}, {"batch", m.batch}, {"with", with},
                       {"port_cores", m.with.size() + 1}, {"stretch", m.stretch}, {"alone_cycles", m.alone},
                       {"phase_cycles", m.phases}});
  }
  j["service_times"] = {{"backend", sm.backend()}, {"clock_mhz", cfg->clock_mhz}, {"table", tab},
                        {"port_stretch", stretch}};
  if (o.mode == "live") {
    // What the device did, and every reason a batch failed (the requests of
    // a failed batch are queued again up to max_retries times, then fail).
    json reasons = json::array();
    for (const auto& [k, n] : r.failed_batches) {
      int64_t reqs = 0;
      for (const auto& q : r.reqs) reqs += q.failed && q.reason == k;
      reasons.push_back({{"reason", r.fail_reasons[size_t(k)]}, {"batches", n}, {"requests_failed", reqs}});
    }
    json faults = json::array();
    for (const auto& f : r.faults)
      faults.push_back({{"fault", f.event.text}, {"kind", f.event.kind}, {"core", f.event.core},
                        {"at_ms", f.event.at_ms}, {"for_ms", f.event.for_ms},
                        {"applied_ms", f.applied_ms >= 0 ? json(f.applied_ms) : json(nullptr)},
                        {"lifted_ms", f.ended_ms >= 0 ? json(f.ended_ms) : json(nullptr)}});
    j["live"] = {{"completion", o.live.completion == runtime::Completion::Interrupt ? "interrupt" : "poll"},
                 {"faults_injected", faults},
                 {"rss_mib", [&] {
                    json v = json::array();
                    for (const auto& [n, mib] : r.rss) v.push_back({{"requests", n}, {"mib", mib}});
                    return v;
                  }()},
                 {"device_runs", r.live.device_runs},
                 {"checked_runs", r.live.checked},
                 {"output_mismatches", r.live.mismatches},
                 {"device_errors", r.live.device_errors},
                 {"host_timeouts", r.live.timeouts},
                 {"max_retries", o.max_retries},
                 {"retried_requests", r.retried},
                 {"failures", reasons}};
  }
  return j;
}

std::string batches_trace_json(const Workload& w, const std::vector<BatchSpan>& spans) {
  json ev = json::array();
  int cores = 0;
  for (const auto& b : spans) cores = std::max(cores, b.core + 1);
  for (int c = 0; c < cores; ++c) {
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", c}, {"args", {{"name", "core " + std::to_string(c)}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", c}, {"tid", 0}, {"args", {{"name", "batches"}}}});
  }
  for (const auto& b : spans) {
    const std::string name =
        b.stream >= 0 && size_t(b.stream) < w.streams.size() ? w.streams[size_t(b.stream)].name : "stream";
    ev.push_back({{"name", name},
                  {"cat", "batch"},
                  {"ph", "X"},
                  {"pid", b.core},
                  {"tid", 0},
                  {"ts", b.start_us},
                  {"dur", b.end_us - b.start_us},
                  {"args", {{"requests", b.requests}, {"seq", b.seq}}}});
  }
  json j = {{"traceEvents", ev}, {"displayTimeUnit", "ms"}, {"otherData", {{"source", "loom serve"}, {"config", w.config}}}};
  return j.dump() + "\n";
}

}  // namespace loom::serve
