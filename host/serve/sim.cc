// The serving scheduler's discrete-event loop (sim.h): a run's set-up, its
// event loop, the batching and core decisions, and the live engine's glue.
#include "serve/sim.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/limits.h"
#include "ir/builder.h"

namespace loom::serve::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxRequests = limits::kMaxRequestsPerStream;
constexpr size_t kMaxLiveProfiles = size_t(limits::kMaxLiveProfiles);

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

/// Resident memory of this process in MiB (Linux /proc/self/statm); 0 when unknown.
double resident_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, rss = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &rss);
  std::fclose(f);
  return n == 2 ? double(rss) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
}

}  // namespace

uint64_t stream_state(uint64_t seed, int idx) {
  // Hashed, not linear: a state of seed x the generator's own increment
  // made seed k + 2 replay seed k's sequence two draws later.
  ir::Rng by_seed(seed);
  ir::Rng by_stream(by_seed.next() ^ (uint64_t(idx) * 0x632BE59BD9B4E019ull));
  return by_stream.next();
}

std::vector<Req> arrivals(const Stream& s, int idx, uint64_t seed, double duration_us, double scale) {
  ir::Rng rng(stream_state(seed, idx));
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
    // The rate in force until the next change; a gap that crosses a change
    // restarts there (memorylessness keeps this exact).
    double rate = a.rate * scale / 1e6;
    size_t next = 0;
    while (!full() && t < duration_us) {
      const double change = next < a.rate_drift.size() ? a.rate_drift[next].at_ms * 1000.0 : kInf;
      const double gap = rate > 0 ? expo(rng, rate) : kInf;
      if (t + gap >= change) {
        if (next >= a.rate_drift.size()) break;  // a rate of 0 with no change after it
        t = change;
        rate = a.rate_drift[next++].rate * scale / 1e6;
        continue;
      }
      t += gap;
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

std::vector<int> StreamQueue::take(const BatchDecision& dec) {
  std::vector<int> batch;
  if (dec.idx.empty()) {
    for (int k = 0; k < dec.n; ++k) {
      batch.push_back(ids.front());
      ids.pop_front();
      view.pop_front();
    }
  } else {  // shape-grouped: members picked out of the queue (positions ascending)
    for (int k : dec.idx) batch.push_back(ids[size_t(k)]);
    for (size_t k = dec.idx.size(); k-- > 0;) {
      ids.erase(ids.begin() + dec.idx[k]);
      view.erase(view.begin() + dec.idx[k]);
    }
  }
  return batch;
}

Sim::Sim(const Workload& w, const std::vector<int>& active, Sched sched, const spec::HwConfig& cfg, ServiceModel& sm,
         const ServeOptions& o, std::function<void(size_t arrived, size_t total)> tick)
    : w_(w),
      active_(active),
      sched_(sched),
      cfg_(cfg),
      sm_(sm),
      o_(o),
      tick_(std::move(tick)),
      ports_(w_, active_, cfg_, sm_, ev_, err_),
      breaker_(int(cfg.cores)) {}

Expected<SimOut> Sim::run(Batching batching) {
  LOOM_TRY(partition());
  LOOM_TRY(check_budget(w_, o_.load_scale));
  LOOM_TRY(generate_arrivals());
  init_run(batching);
  for (size_t i = 0; i < out_.reqs.size(); ++i) ev_.push(out_.reqs[i].arrival, SimEvent::kArrival, int(i));
  LOOM_TRY(start_live());
  // However the run ends, the service model may measure again, then the
  // engine lets go of the device.
  struct EndOfRun {
    Sim& sim;
    ~EndOfRun() {
      sim.sm_.freeze(false);
      sim.live_.reset();
    }
  } end_of_run{*this};
  LOOM_TRY(event_loop());
  if (live_) out_.live = live_->stats(), out_.faults = live_->faults();
  return std::move(out_);
}

// ---- Set-up ----------------------------------------------------------------

Status Sim::partition() {
  const int cores = int(cfg_.cores);
  const int ns = int(active_.size());
  count_.assign(size_t(ns), 0);
  int fixed = 0, flexible = 0;
  for (int i = 0; i < ns; ++i) {
    const int c = active_.size() == 1 ? 0 : w_.streams[size_t(active_[size_t(i)])].cores;
    count_[size_t(i)] = c;
    fixed += c;
    if (c == 0) ++flexible;
  }
  if (fixed > cores)
    return make_error(w_.source, "static partition: streams ask for " + std::to_string(fixed) + " cores, config '" +
                                     std::string(cfg_.name) + "' has " + std::to_string(cores));
  int rest = cores - fixed;
  for (int i = 0; i < ns && flexible; ++i)
    if (count_[size_t(i)] == 0) {
      count_[size_t(i)] = rest / flexible + (rest % flexible ? 1 : 0);
      rest -= count_[size_t(i)];
      --flexible;
    }
  home_.assign(size_t(cores), -1);
  int c = 0;
  for (int i = 0; i < ns; ++i)
    for (int k = 0; k < count_[size_t(i)]; ++k) home_[size_t(c++)] = i;
  for (int i = 0; i < ns; ++i)
    if (count_[size_t(i)] == 0 && sched_ == Sched::Static)
      return make_error(w_.source, "static partition: stream '" + w_.streams[size_t(active_[size_t(i)])].name +
                                       "' gets no core (" + std::to_string(cores) + " cores for " + std::to_string(ns) +
                                       " streams)");
  // A stream's own gangs (cores_per_batch, no mapping) must fit its share:
  // refused before the run, in stream order, whatever arrives first.
  for (int i = 0; i < ns && sched_ == Sched::Static; ++i) {
    const Stream& s = w_.streams[size_t(active_[size_t(i)])];
    const int k = unmapped_options(s.model).num_cores;
    if (k > count_[size_t(i)])
      return make_error(
          w_.source + ": stream '" + s.name + "'",
          "a batch is mapped onto " + std::to_string(k) + " cores; it can use " + std::to_string(count_[size_t(i)]));
  }
  // Dynamic: cores left without a home (fixed counts below the total) serve everyone.
  return {};
}

Status Sim::generate_arrivals() {
  const double dur = w_.duration_ms * 1000.0;
  for (size_t i = 0; i < active_.size(); ++i) {
    auto a = arrivals(w_.streams[size_t(active_[i])], active_[i], w_.seed, dur, o_.load_scale);
    if (int64_t(a.size()) > kMaxRequests)
      return make_error(w_.source + ": stream '" + w_.streams[size_t(active_[i])].name + "'",
                        "more than " + std::to_string(kMaxRequests) +
                            " requests in duration_ms (docs/security.md); shorten the run or lower the rate");
    for (auto& r : a) r.stream = int(i);
    out_.reqs.insert(out_.reqs.end(), a.begin(), a.end());
  }
  std::stable_sort(out_.reqs.begin(), out_.reqs.end(),
                   [](const Req& a, const Req& b) { return a.arrival < b.arrival; });
  return {};
}

void Sim::init_run(Batching batching) {
  batching_ = batching;
  const size_t cores = size_t(cfg_.cores);
  out_.core_busy.assign(cores, 0);
  out_.core_batches.assign(cores, 0);
  out_.quarantines.assign(cores, 0);
  out_.quarantine_us.assign(cores, 0);
  batch_reqs_.assign(cores, std::vector<int>{});
  batch_host_us_.assign(cores, 0);

  const size_t ns = active_.size();
  queue_.assign(ns, StreamQueue{});
  held_.assign(ns, {});
  home_free_.assign(ns, 0);
  wake_.assign(ns, kInf);
  bp_.assign(ns, BatchParams{});
  for (size_t i = 0; i < ns; ++i) {
    const Stream& s = w_.streams[size_t(active_[i])];
    bp_[i].policy = batching;
    bp_[i].max_batch = w_.max_batch;
    bp_[i].max_delay_us = w_.max_queue_delay_ms * 1000.0;
    bp_[i].slack_margin = w_.slack_margin;
    bp_[i].max_seq = *std::max_element(s.shapes.values.begin(), s.shapes.values.end());
    bp_[i].group_shapes = w_.shape_grouping;
  }
  next_report_ = out_.reqs.size() / 100 + 1;
}

Status Sim::start_live() {
  if (o_.mode != "live") return {};
  // Bounded: each (stream, shape, batch size) is a run on the device and a
  // compile before the live run starts.
  const size_t ns = active_.size();
  size_t combos = 0;
  for (size_t si = 0; si < ns; ++si) combos += w_.streams[size_t(active_[si])].shapes.values.size();
  combos *= size_t(std::max(1, w_.max_batch));
  if (combos > kMaxLiveProfiles)
    return make_error(w_.source,
                      "--mode live measures every (stream, sequence length, batch size) before it "
                      "starts: " +
                          std::to_string(combos) + " here, at most " + std::to_string(kMaxLiveProfiles) +
                          "; lower max_batch or the shapes");
  for (size_t si = 0; si < ns; ++si) {
    const Stream& s = w_.streams[size_t(active_[si])];
    for (int64_t seq : s.shapes.values)
      for (int n = 1; n <= w_.max_batch; ++n) {
        service_us(si, seq, n);
        if (!err_) return err_;
        auto lw = sm_.live_work(s.model, seq, n);
        if (!lw) return lw.error();
      }
  }
  auto dev = sm_.device();
  if (!dev) return dev.error();
  sm_.freeze(true);
  live_ = std::make_unique<LiveEngine>(**dev, o_.live);
  return {};
}

// ---- The event loop --------------------------------------------------------

Status Sim::event_loop() {
  for (;;) {
    if (live_) {
      if (ev_.empty() && live_->running() == 0) break;
      auto ended = finish_live_ends();
      if (!ended) return ended.error();
      if (*ended) {
        if (!err_) return err_;
        continue;
      }
    }
    if (ev_.empty()) break;
    const SimEvent e = ev_.pop();
    const double now = e.t;
    advance(now);
    if (e.kind == SimEvent::kArrival) {
      arrive(e.idx, now);
    } else if (e.kind == SimEvent::kDone) {
      if (!ports_.current(e.idx, e.gen)) continue;  // rescheduled since
      finish(e.idx, now, Status::ok());
    } else if (e.kind == SimEvent::kWake) {
      if (wake_[size_t(e.idx)] == now) wake_[size_t(e.idx)] = kInf;
    }  // kInService: the decisions below see the core
    schedule(now);
    if (!err_) return err_;
  }
  return {};
}

Expected<bool> Sim::finish_live_ends() {
  // The device runs until the next arrival or wake-up, or until batches end
  // first: those are handled at their end times.
  const double t_next = ev_.empty() ? kInf : ev_.top().t;
  auto ends = live_->advance(t_next);
  if (!ends) return ends.error();
  if (ends->empty()) return false;
  double at = 0;
  for (const LiveEnd& le : *ends) {
    advance(le.end_us);
    finish(le.core, le.end_us, le.status, le.failed_core);
    at = std::max(at, le.end_us);
  }
  advance(std::max(at, live_->now_us()));
  schedule(std::max(at, live_->now_us()));
  return true;
}

void Sim::arrive(int idx, double now) {
  Req& r = out_.reqs[size_t(idx)];
  const size_t si = size_t(r.stream);
  bool drop = false;
  if (w_.admission) {
    // Predicted completion: the queue ahead drains one request at a time
    // on the cores that can serve this stream.
    const int serving = sched_ == Sched::Static ? count_[si] : ports_.cores();
    sm_.set_now(now);
    const double s1 = service_us(si, r.seq, 1);
    const double pred = now + s1 * (1.0 + double(queue_[si].size()) / double(std::max(1, serving)));
    drop = pred > r.deadline;
  }
  if (drop) {
    r.dropped = true;
  } else {
    r.held_at = held_[si];
    queue_[si].push_back(idx, r);
  }
  if (++arrived_ >= next_report_) {
    if (tick_) tick_(arrived_, out_.reqs.size());
    if (live_) out_.rss.emplace_back(int64_t(arrived_), resident_mib());
    next_report_ += out_.reqs.size() / 100 + 1;
  }
}

void Sim::schedule(double now) {
  sm_.set_now(now);
  const size_t ns = active_.size();
  for (;;) {
    if (!err_) return;
    std::vector<BatchDecision> dec(ns);
    if (!decide_batches(now, dec)) return;
    int core = -1;
    size_t pick = ns;
    if (sched_ == Sched::Static) {
      std::tie(core, pick) = choose_static(now, dec);
    } else {
      core = choose_dynamic_core(now);
      if (core < 0) return;
      pick = choose_dynamic_stream(core, dec);
    }
    if (core < 0 || pick == ns) return;
    const std::vector<int> gang = gather_gang(core, pick, dec[pick], now);
    if (gang.empty()) return;
    if (dec[pick].fallback) ++out_.fallbacks;
    dispatch(gang, pick, dec[pick], now);
  }
}

// ---- Scheduling decisions --------------------------------------------------

double Sim::service_us(size_t si, int64_t seq, int n) {
  auto c = sm_.cycles(w_.streams[size_t(active_[si])].model, seq, n);
  if (!c) {
    keep_first(err_, c.error());
    return kInf;
  }
  return sm_.cycles_to_us(*c);
}

bool Sim::usable(int core, double now) const { return !ports_.busy(core) && breaker_.in_service(core, now); }

bool Sim::decide_batches(double now, std::vector<BatchDecision>& dec) {
  const size_t ns = active_.size();
  // Idle cores each stream could use now.
  std::vector<int> idle(ns, 0);
  int idle_all = 0;
  for (int c = 0; c < ports_.cores(); ++c) {
    if (!usable(c, now)) continue;
    if (sched_ == Sched::Static) {
      if (home_[size_t(c)] >= 0) ++idle[size_t(home_[size_t(c)])];
    } else if (w_.max_per_port == 0 || ports_.port_load(ports_.port_of(c)) < w_.max_per_port) {
      ++idle_all;
    }
  }
  bool any = false;
  for (size_t si = 0; si < ns; ++si) {
    if (queue_[si].empty()) continue;
    BatchParams bp = bp_[si];  // under a mapping's batch cap (loom tune) from its swap on
    if (const int cap = sm_.batch_cap(w_.streams[size_t(active_[si])].model); cap > 0)
      bp.max_batch = std::min(bp.max_batch, cap);
    dec[si] = decide_batch(
        bp, queue_[si].view, now, [&](int64_t s, int n) { return service_us(si, s, n); },
        sched_ == Sched::Static ? idle[si] : idle_all);
    if (dec[si].n > 0)
      any = true;
    else if (dec[si].wake_us < wake_[si] || wake_[si] <= now) {
      wake_[si] = dec[si].wake_us;
      if (std::isfinite(dec[si].wake_us)) ev_.push(dec[si].wake_us, SimEvent::kWake, int(si));
    }
  }
  return any;
}

std::pair<int, size_t> Sim::choose_static(double now, const std::vector<BatchDecision>& dec) const {
  for (int c = 0; c < ports_.cores(); ++c)
    if (usable(c, now) && home_[size_t(c)] >= 0 && dec[size_t(home_[size_t(c)])].n > 0)
      return {c, size_t(home_[size_t(c)])};
  return {-1, active_.size()};
}

int Sim::choose_dynamic_core(double now) {
  // Topology-aware: the idle core on the least busy memory port, within the limit.
  int core = -1;
  int best_load = 1 << 30;
  bool limited = false;
  for (int c = 0; c < ports_.cores(); ++c) {
    if (!usable(c, now)) continue;
    const int load = ports_.port_load(ports_.port_of(c));
    if (w_.max_per_port > 0 && load >= w_.max_per_port) {
      limited = true;
      continue;
    }
    if (load < best_load) best_load = load, core = c;
  }
  if (core < 0 && limited) ++out_.port_limit_waits;
  return core;
}

size_t Sim::choose_dynamic_stream(int core, const std::vector<BatchDecision>& dec) const {
  // Priority, then the core's home streams, then earliest deadline (EDF).
  const size_t ns = active_.size();
  size_t pick = ns;
  for (size_t si = 0; si < ns; ++si) {
    if (dec[si].n == 0) continue;
    if (pick == ns) {
      pick = si;
      continue;
    }
    const auto& a = w_.streams[size_t(active_[si])];
    const auto& b = w_.streams[size_t(active_[pick])];
    const bool ha = home_[size_t(core)] == int(si), hb = home_[size_t(core)] == int(pick);
    const double da = queue_[si].view.front().deadline_us, db = queue_[pick].view.front().deadline_us;
    if (batching_ == Batching::Deadline) {
      // Deadline-aware: the least slack first (a late batch has
      // negative slack), then priority.
      const BatchDecision &x = dec[si], &y = dec[pick];
      if (x.slack_us != y.slack_us ? x.slack_us < y.slack_us : a.priority > b.priority) pick = si;
      continue;
    }
    if (a.priority != b.priority ? a.priority > b.priority : ha != hb ? ha : da < db) pick = si;
  }
  return pick;
}

int64_t Sim::batch_seq(size_t si, const BatchDecision& dec) const {
  const std::deque<int>& q = queue_[si].ids;
  int64_t seq = 1;
  if (dec.idx.empty())
    for (int k = 0; k < dec.n && k < int(q.size()); ++k) seq = std::max(seq, out_.reqs[size_t(q[size_t(k)])].seq);
  else
    for (int k : dec.idx) seq = std::max(seq, out_.reqs[size_t(q[size_t(k)])].seq);
  return seq;
}

std::vector<int> Sim::gather_gang(int core, size_t pick, const BatchDecision& dec, double now) {
  // A batch mapped onto k cores waits until k are free (no other stream's
  // batch overtakes it meanwhile).
  std::vector<int> gang{core};
  const int64_t seq = batch_seq(pick, dec);
  const int k = sm_.width(w_.streams[size_t(active_[pick])].model, seq, dec.n);
  if (k <= 1) return gang;
  const int cores = ports_.cores();
  const int avail = sched_ == Sched::Static ? count_[pick]
                    : w_.max_per_port > 0   ? std::min(cores, ports_.ports() * w_.max_per_port)
                                            : cores;
  if (k > avail) {
    keep_first(err_, make_error(w_.source + ": stream '" + w_.streams[size_t(active_[pick])].name + "'",
                                "a batch is mapped onto " + std::to_string(k) + " cores; it can use " +
                                    std::to_string(avail)));
    return {};
  }
  std::vector<int> more;
  for (int c = 0; c < cores; ++c) {
    if (c == core || !usable(c, now)) continue;
    if (sched_ == Sched::Static ? home_[size_t(c)] != int(pick)
                                : w_.max_per_port > 0 && ports_.port_load(ports_.port_of(c)) >= w_.max_per_port)
      continue;
    more.push_back(c);
  }
  if (int(more.size()) < k - 1) return {};
  std::stable_sort(more.begin(), more.end(), [&](int a, int b) {
    return ports_.port_load(ports_.port_of(a)) < ports_.port_load(ports_.port_of(b));
  });
  gang.insert(gang.end(), more.begin(), more.begin() + (k - 1));
  return gang;
}

// ---- Batches ---------------------------------------------------------------

void Sim::dispatch(const std::vector<int>& gang, size_t si, const BatchDecision& dec, double now) {
  const int core = gang.front();
  const int n = dec.n;
  std::vector<int> batch = queue_[si].take(dec);
  int64_t seq = 1;
  for (int ri : batch) {
    Req& q = out_.reqs[size_t(ri)];
    q.start = now;
    seq = std::max(seq, q.seq);
    q.parts.queueing += held_[si][kHeldQueueing] - q.held_at[kHeldQueueing];
    q.parts.batching += held_[si][kHeldBatching] - q.held_at[kHeldBatching];
    q.parts.imbalance += held_[si][kHeldImbalance] - q.held_at[kHeldImbalance];
  }
  const double alone = service_us(si, seq, n);
  auto host = sm_.host_cycles(w_.streams[size_t(active_[si])].model, seq, n);
  if (!host) keep_first(err_, host.error());
  batch_host_us_[size_t(core)] = host ? sm_.cycles_to_us(*host) : 0.0;
  const RunningBatch& r = ports_.occupy(RunningBatch{si, seq, n, alone, alone, now, now, out_.spans.size(), 1.0, gang});
  batch_reqs_[size_t(core)] = std::move(batch);
  ++out_.batch_hist[n];
  if (gang.size() > 1) ++out_.gang_batches;
  for (size_t k = 0; k < gang.size(); ++k) {
    const int c = gang[k];
    ++out_.core_batches[size_t(c)];
    // The batch's span on each of its cores (end set when it finishes),
    // kept only when asked for (--trace, loom tune): a long run's memory
    // stays flat without it.
    if (o_.spans) out_.spans.push_back({c, active_[si], n, seq, now, now + r.alone, int(gang.size()), int(k)});
  }
  if (sched_ == Sched::Dynamic && home_[size_t(core)] >= 0 && home_[size_t(core)] != int(si)) ++out_.steals;
  if (live_) {  // the device runs it; its end comes from the engine
    auto lw = sm_.live_work(w_.streams[size_t(active_[si])].model, seq, n);
    if (!lw) {
      keep_first(err_, lw.error());
      return;
    }
    if (Status st = live_->start(gang, std::move(*lw), next_batch_++, r.alone); !st) keep_first(err_, st.error());
    return;
  }
  ports_.repace_ports_of(core, now);
}

void Sim::finish(int core, double now, const Status& st, int failed_core) {
  const RunningBatch& r = ports_.batch(core);
  if (st) {
    attribute(core, now);
    for (int c : r.gang) breaker_.succeeded(c);
  } else {
    fail_batch(core, failed_core >= 0 ? failed_core : core, r.si, now, st);
  }
  batch_reqs_[size_t(core)].clear();
  for (size_t k = 0; k < r.gang.size(); ++k) {
    const int c = r.gang[k];
    ports_.release(c);
    out_.core_busy[size_t(c)] += now - r.start;
    if (o_.spans) out_.spans[r.span + k].end_us = now;
  }
  if (!live_) ports_.repace_ports_of(core, now);
  out_.makespan = std::max(out_.makespan, now);
}

void Sim::advance(double now) {
  const double dt = now - clock_;
  if (!(dt > 0)) return;
  // Which cores were free over [clock_, now): nothing changes between events.
  bool any_free = false, shared_free = false;
  std::fill(home_free_.begin(), home_free_.end(), 0);
  for (int c = 0; c < ports_.cores(); ++c) {
    if (!usable(c, clock_)) continue;
    any_free = true;
    if (sched_ == Sched::Static) {
      if (home_[size_t(c)] >= 0) home_free_[size_t(home_[size_t(c)])] = 1;
    } else if (w_.max_per_port == 0 || ports_.port_load(ports_.port_of(c)) < w_.max_per_port) {
      shared_free = true;
    }
  }
  for (size_t si = 0; si < queue_.size(); ++si) {
    if (queue_[si].empty()) continue;
    const bool mine = sched_ == Sched::Static ? home_free_[si] != 0 : shared_free;
    held_[si][mine ? kHeldBatching : any_free ? kHeldImbalance : kHeldQueueing] += dt;
  }
  clock_ = now;
}

namespace {

/// Live: a retried request's earlier attempts, and batch ends the device
/// reports between events, are time its queue's counters did not see. Its
/// wait parts are fitted to its wait (start - arrival): scaled down where
/// they counted more, the rest queueing.
void fit_wait(Req& q) {
  LatencyParts& p = q.parts;
  const double wait = q.start - q.arrival, counted = p.queueing + p.batching + p.imbalance;
  if (counted > wait && counted > 0) {
    const double f = std::max(0.0, wait) / counted;
    p.queueing *= f, p.batching *= f, p.imbalance *= f;
  }
  p.queueing = std::max(0.0, wait - p.batching - p.imbalance);
}

}  // namespace

void Sim::attribute(int core, double now) {
  const RunningBatch& r = ports_.batch(core);
  const double ran = now - r.start, alone = std::min(r.alone, ran);
  const double host = std::min(batch_host_us_[size_t(core)], alone);
  for (int ri : batch_reqs_[size_t(core)]) {
    Req& q = out_.reqs[size_t(ri)];
    q.done = now;
    q.parts.host = host;
    q.parts.service = alone - host;
    q.parts.stretch = ran - alone;
    if (live_) fit_wait(q);
  }
}

void Sim::fail_batch(int core, int failed_core, size_t si, double now, const Status& st) {
  const double backoff = breaker_.failed(failed_core, now);
  out_.quarantine_us[size_t(failed_core)] += backoff;
  ++out_.quarantines[size_t(failed_core)];
  ev_.push(now + backoff, SimEvent::kInService, failed_core);  // the core is back: decide again
  const std::string why = st.str();
  auto it = std::find(out_.fail_reasons.begin(), out_.fail_reasons.end(), why);
  const int reason = int(it - out_.fail_reasons.begin());
  if (it == out_.fail_reasons.end()) out_.fail_reasons.push_back(why);
  ++out_.failed_batches[reason];
  const auto& members = batch_reqs_[size_t(core)];
  for (size_t k = members.size(); k-- > 0;) {
    Req& q = out_.reqs[size_t(members[k])];
    if (++q.attempts <= o_.max_retries) {
      q.start = -1;
      q.held_at = held_[si];
      queue_[si].push_front(members[k], q);
      ++out_.retried;
    } else {
      q.failed = true;
      q.reason = reason;
      q.done = now;
    }
  }
}

}  // namespace loom::serve::detail
