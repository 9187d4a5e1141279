// The serving scheduler's entry points: a run of the workload (its main run
// and each stream's isolated run, sim.h) and its typed result (result.h).
#include "serve/server.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "serve/metrics.h"
#include "serve/policy.h"
#include "serve/sim.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;
using detail::Req;
using detail::Sched;
using detail::Sim;
using detail::SimOut;
constexpr double kInf = std::numeric_limits<double>::infinity();

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
      rate = a.mean_rate(w.duration_ms);
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
  return AutoChoice{
      dyn ? Sched::Dynamic : Sched::Static,
      (dyn ? "dynamic: a measure exceeds its limit: " : "static: every measure within its limit: ") + why.str()};
}

/// Resolves the workload's scheduling policy ("auto": chosen from measured
/// service times and the arrivals; the reason is empty otherwise).
Expected<AutoChoice> resolve_scheduling(const Workload& w, const spec::HwConfig& cfg, ServiceModel& sm, double scale) {
  if (w.scheduling == "static") return AutoChoice{Sched::Static, ""};
  if (w.scheduling == "dynamic") return AutoChoice{Sched::Dynamic, ""};
  if (w.scheduling == "auto") return choose_auto(w, cfg, sm, scale);
  return make_error("--scheduling", "unknown scheduling policy '" + w.scheduling + "' (static, dynamic, auto)");
}

/// Fails if a stream's SLO is below the service time of a single smallest
/// request: it could never be met.
Status check_slos(const Workload& w, ServiceModel& sm) {
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
  return {};
}

/// The main run: every stream at once, its requests and spans recorded when
/// the options ask for them. Progress: the first half of the work.
Expected<SimOut> main_run(const Workload& w, const ServeOptions& o, Sched sched, const spec::HwConfig& cfg,
                          ServiceModel& sm, Batching batching) {
  std::vector<int> all;
  for (int i = 0; i < int(w.streams.size()); ++i) all.push_back(i);
  std::function<void(size_t, size_t)> tick;
  if (o.on_progress)
    tick = [&o](size_t a, size_t n) { o.on_progress(0.5 * double(a) / double(std::max<size_t>(n, 1))); };
  Sim sim(w, all, sched, cfg, sm, o, tick);
  auto res = sim.run(batching);
  if (!res) return res.error();
  if (o.requests)
    for (const Req& q : res->reqs)
      o.requests->push_back({q.stream, q.arrival, q.start, q.done, q.seq, q.dropped, q.parts});
  if (o.spans) *o.spans = res->spans;
  return res;
}

/// Isolated runs (each stream alone on the whole fabric, same policies) for
/// ANTT and STP: each stream's mean latency alone. Progress: the second half
/// of the work, as many arrivals as the main run's `total`.
Expected<std::vector<double>> isolated_latencies(const Workload& w, const ServeOptions& o, Sched sched,
                                                 const spec::HwConfig& cfg, ServiceModel& sm, Batching batching,
                                                 size_t total) {
  std::vector<double> alone;
  size_t alone_done = 0;
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
    Sim one(w, {i}, sched, cfg, sm, quiet, t1);
    auto ro = one.run(batching);
    if (!ro) return ro.error();
    alone.push_back(mean_latency(*ro, 0));
    alone_done += ro->reqs.size();
  }
  return alone;
}

/// The run's settings, as the result's first fields.
ServeSettings settings_of(const Workload& w, const ServeOptions& o, const AutoChoice& policy) {
  ServeSettings st;
  st.workload = w.source;
  st.backend = o.backend;
  st.mode = o.mode;
  st.config = w.config;
  st.seed = w.seed;
  st.load_scale = o.load_scale;
  st.batching = w.batching;
  st.max_batch = w.max_batch;
  st.max_queue_delay_ms = w.max_queue_delay_ms;
  st.slack_margin = w.slack_margin;
  st.shape_grouping = w.shape_grouping;
  st.scheduling.requested = w.scheduling;
  st.scheduling.used = policy.sched == Sched::Static ? "static" : "dynamic";
  if (!policy.reason.empty()) st.scheduling.reason = policy.reason;
  st.admission = w.admission;
  st.duration_ms = w.duration_ms;
  return st;
}

/// Latency over time: the requests arriving in each of kWindows equal
/// windows of the run (bursts and drift show up here, not in the whole-run
/// percentiles).
constexpr size_t kWindows = 50;

/// One stream's requests in the main run, counted and measured.
struct StreamTally {
  int64_t submitted = 0, completed = 0, dropped = 0, failed = 0, met = 0;
  std::vector<double> lat, wait;             // of the completed requests
  std::vector<LatencyParts> parts;           // of the completed requests: where their latency went
  std::vector<std::vector<double>> windows;  // latencies by arrival window
};

StreamTally tally_stream(const SimOut& r, size_t si, const Stream& s) {
  StreamTally t;
  const double span = std::max(r.makespan, 1.0);
  t.windows.resize(kWindows);
  for (const auto& q : r.reqs) {
    if (q.stream != int(si)) continue;
    ++t.submitted;
    if (q.dropped) {
      ++t.dropped;
      continue;
    }
    if (q.failed) {
      ++t.failed;
      continue;
    }
    if (q.done < 0) continue;  // would be an accounting error, caught in result_of
    ++t.completed;
    t.lat.push_back(q.done - q.arrival);
    t.wait.push_back(q.start - q.arrival);
    t.parts.push_back(q.parts);
    t.windows[std::min(kWindows - 1, size_t(std::max(0.0, q.arrival) / span * double(kWindows)))].push_back(q.done -
                                                                                                            q.arrival);
    if (q.done - q.arrival <= s.slo_ms * 1000.0) ++t.met;
  }
  return t;
}

/// Queue-wait percentiles and histogram.
QueueWait queue_wait_of(const std::vector<double>& wait) {
  const std::vector<double> edges{0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
  QueueWait qw;
  qw.summary = LatencySummary::of(wait);
  for (size_t k = 0; k < edges.size(); ++k) {
    WaitBin b;
    b.lo_us = edges[k];
    if (k + 1 < edges.size()) b.hi_us = edges[k + 1];
    for (double x : wait) b.count += x >= b.lo_us && (!b.hi_us || x < *b.hi_us);
    qw.histogram.push_back(b);
  }
  return qw;
}

std::vector<LatencyWindow> latency_over_time(const std::vector<std::vector<double>>& windows, double makespan) {
  const double span = std::max(makespan, 1.0);
  std::vector<LatencyWindow> over;
  for (size_t k = 0; k < kWindows; ++k) {
    const LatencySummary ls = LatencySummary::of(windows[k]);
    over.push_back({double(k) * span / double(kWindows) / 1000.0, double(k + 1) * span / double(kWindows) / 1000.0,
                    int64_t(windows[k].size()), ls.p50, ls.p99});
  }
  return over;
}

/// An ONNX stream's program (a bucketed model: its longest bucket's; the
/// segments and host ops are the same at every length, the host time is the
/// longest's).
Expected<OnnxStreamInfo> onnx_info(const Stream& s, ServiceModel& sm) {
  auto prog = sm.onnx_program(s.model, *std::max_element(s.shapes.values.begin(), s.shapes.values.end()));
  if (!prog) return prog.error();
  return OnnxStreamInfo{(*prog)->segments.size(), (*prog)->host_ops.size(), (*prog)->fallback_ops(),
                        sm.host_cost(**prog).host_us};
}

/// One stream's result: its counts, latencies, queue waits and slowdown `slow`
/// over its isolated mean latency `alone`.
Expected<StreamResult> stream_result(const Stream& s, const StreamTally& t, double makespan, double alone, double slow,
                                     ServiceModel& sm) {
  StreamResult sr;
  sr.name = s.name;
  sr.model = model_key(s.model);
  if (s.model.kind == ModelSpec::Kind::Onnx) {
    auto info = onnx_info(s, sm);
    if (!info) return info.error();
    sr.onnx = std::move(*info);
  }
  sr.priority = s.priority;
  sr.slo_ms = s.slo_ms;
  sr.submitted = t.submitted;
  sr.completed = t.completed;
  sr.dropped = t.dropped;
  sr.failed = t.failed;
  sr.throughput_rps = makespan > 0 ? double(t.completed) / makespan * 1e6 : 0.0;
  sr.latency = LatencySummary::of(t.lat);
  sr.queue_wait = queue_wait_of(t.wait);
  sr.latency_attribution = LatencyAttribution::of(t.parts);
  sr.slo_attainment = t.submitted ? double(t.met) / double(t.submitted) : 1.0;
  sr.isolated_mean_latency_us = alone;
  sr.slowdown = slow;
  sr.latency_over_time = latency_over_time(t.windows, makespan);
  return sr;
}

/// Every stream's result and the totals over them.
struct StreamResults {
  std::vector<StreamResult> streams;
  int64_t completed = 0, dropped = 0, failed = 0;
  std::vector<double> all_lat;                     // latencies of every completed request
  std::vector<LatencyParts> all_parts;             // and where each went
  std::vector<std::vector<double>> lat_by_stream;  // latencies of each stream's completed requests
  std::vector<double> inv_slowdown;                // per stream
  double antt = 0;                                 // sum of the slowdowns
};

Expected<StreamResults> stream_results(const Workload& w, const SimOut& r, const std::vector<double>& alone,
                                       ServiceModel& sm) {
  StreamResults out;
  for (size_t si = 0; si < w.streams.size(); ++si) {
    const Stream& s = w.streams[si];
    const StreamTally t = tally_stream(r, si, s);
    out.completed += t.completed, out.dropped += t.dropped, out.failed += t.failed;
    out.all_lat.insert(out.all_lat.end(), t.lat.begin(), t.lat.end());
    out.all_parts.insert(out.all_parts.end(), t.parts.begin(), t.parts.end());
    out.lat_by_stream.push_back(t.lat);
    const double shared = mean_latency(r, int(si));
    const double slow = alone[si] > 0 && shared > 0 ? shared / alone[si] : 1.0;
    auto sr = stream_result(s, t, r.makespan, alone[si], slow, sm);
    if (!sr) return sr.error();
    out.antt += slow;
    out.inv_slowdown.push_back(1.0 / slow);
    out.streams.push_back(std::move(*sr));
  }
  return out;
}

/// Per-core busy time, utilization and batches (live: times out of service),
/// and the imbalance of the utilizations.
void add_cores(ServeResult& res, const SimOut& r, const spec::HwConfig& cfg, const ServeOptions& o) {
  double umax = 0, usum = 0;
  for (size_t c = 0; c < r.core_busy.size(); ++c) {
    CoreResult cr;
    cr.core = int64_t(c);
    cr.port = spec::mem_port_of(cfg, unsigned(c));
    cr.busy_us = r.core_busy[c];
    cr.utilization = r.makespan > 0 ? r.core_busy[c] / r.makespan : 0;
    cr.batches = r.core_batches[c];
    if (o.mode == "live") cr.out_of_service = OutOfService{r.quarantines[c], r.quarantine_us[c]};
    umax = std::max(umax, cr.utilization), usum += cr.utilization;
    res.cores.push_back(std::move(cr));
  }
  const double umean = usum / double(std::max<size_t>(1, r.core_busy.size()));
  res.core_imbalance = umean > 0 ? umax / umean - 1.0 : 0.0;
}

/// The service times and port stretches the run used, as measured.
ServiceTimes service_times_of(const ServiceModel& sm, const spec::HwConfig& cfg) {
  ServiceTimes st;
  st.backend = sm.backend();
  st.clock_mhz = cfg.clock_mhz;
  for (const auto& m : sm.measurements())
    st.table.push_back({m.model, m.seq, m.batch, m.cycles, sm.cycles_to_us(m.cycles)});
  for (const auto& m : sm.stretches())
    st.port_stretch.push_back({m.model, m.seq, m.batch, m.with, m.stretch, m.alone, m.phases});
  return st;
}

/// Live: what the device did, and every reason a batch failed (the requests
/// of a failed batch are queued again up to max_retries times, then fail).
LiveResult live_of(const SimOut& r, const ServeOptions& o) {
  LiveResult l;
  l.completion = o.live.completion;
  l.faults_injected = r.faults;
  for (const auto& [n, mib] : r.rss) l.rss.push_back({n, mib});
  l.counters = r.live;
  l.max_retries = o.max_retries;
  l.retried_requests = r.retried;
  for (const auto& [k, n] : r.failed_batches) {
    int64_t reqs = 0;
    for (const auto& q : r.reqs) reqs += q.failed && q.reason == k;
    l.failures.push_back({r.fail_reasons[size_t(k)], n, reqs});
  }
  return l;
}

/// The result of the main run `r`, given each stream's isolated mean
/// latency. Fails if any request is unaccounted for.
Expected<ServeResult> result_of(const Workload& w, const ServeOptions& o, const spec::HwConfig& cfg, ServiceModel& sm,
                                const AutoChoice& policy, const SimOut& r, const std::vector<double>& alone) {
  ServeResult res;
  res.settings = settings_of(w, o, policy);
  res.makespan_ms = r.makespan / 1000.0;
  auto sr = stream_results(w, r, alone, sm);
  if (!sr) return sr.error();
  res.submitted = int64_t(r.reqs.size());
  if (res.submitted != sr->completed + sr->failed + sr->dropped)
    return make_error("loom serve", "accounting error: submitted " + std::to_string(res.submitted) + " != completed " +
                                        std::to_string(sr->completed) + " + failed " + std::to_string(sr->failed) +
                                        " + dropped " + std::to_string(sr->dropped));
  res.completed = sr->completed, res.failed = sr->failed, res.dropped = sr->dropped;
  res.throughput_rps = r.makespan > 0 ? double(sr->completed) / r.makespan * 1e6 : 0.0;
  res.latency = LatencySummary::of(sr->all_lat);
  res.latency_attribution = LatencyAttribution::of(sr->all_parts);
  res.streams = std::move(sr->streams);
  res.batch_sizes = r.batch_hist;
  add_cores(res, r, cfg, o);
  double stp = 0;
  for (double x : sr->inv_slowdown) stp += x;
  res.fairness = {jain_index(sr->inv_slowdown), sr->antt / double(w.streams.size()), stp};
  res.fallbacks = r.fallbacks, res.steals = r.steals;
  res.port_limit_waits = r.port_limit_waits, res.gang_batches = r.gang_batches;
  if (w.port_contention >= 0) res.port_contention = w.port_contention;
  res.max_per_port = w.max_per_port;
  res.service_times = service_times_of(sm, cfg);
  if (o.mode == "live") res.live = live_of(r, o);
  res.memo = serve_memo(w, res, sr->lat_by_stream);
  return res;
}

}  // namespace

Expected<std::vector<int64_t>> arrival_counts(const Workload& w, double load_scale, double from_us, double to_us) {
  LOOM_TRY(check_budget(w, load_scale));
  std::vector<int64_t> n;
  for (size_t i = 0; i < w.streams.size(); ++i) {
    const auto reqs = detail::arrivals(w.streams[i], int(i), w.seed, w.duration_ms * 1000.0, load_scale);
    n.push_back(std::count_if(reqs.begin(), reqs.end(),
                              [&](const detail::Req& r) { return r.arrival >= from_us && r.arrival < to_us; }));
  }
  return n;
}

Expected<ServeResult> run_serve(const Workload& w, const ServeOptions& o, ServiceModel& sm) {
  sm.allow_wall_clock(o.mode == "live");
  const spec::HwConfig* cfg = spec::find_config(w.config);
  if (!cfg) return make_error(w.source + ": field 'config'", "unknown configuration '" + w.config + "'");
  for (const auto& s : w.streams)
    if (s.model.cores_per_batch > int(cfg->cores))
      return make_error(w.source + ": stream '" + s.name + "': field 'cores_per_batch'",
                        std::to_string(s.model.cores_per_batch) + " is more than the " + std::to_string(cfg->cores) +
                            " cores of configuration '" + w.config + "'");
  Batching batching;
  if (!parse_batching(w.batching, batching))
    return make_error("--batching", "unknown batching policy '" + w.batching + "' (none, fixed, deadline)");
  auto policy = resolve_scheduling(w, *cfg, sm, o.load_scale);
  if (!policy) return policy.error();
  LOOM_TRY(check_slos(w, sm));
  auto r = main_run(w, o, policy->sched, *cfg, sm, batching);
  if (!r) return r.error();
  auto alone = isolated_latencies(w, o, policy->sched, *cfg, sm, batching, r->reqs.size());
  if (!alone) return alone.error();
  return result_of(w, o, *cfg, sm, *policy, *r, *alone);
}

std::string batches_trace_json(const Workload& w, const std::vector<BatchSpan>& spans) {
  json ev = json::array();
  int cores = 0;
  for (const auto& b : spans) cores = std::max(cores, b.core + 1);
  for (int c = 0; c < cores; ++c) {
    ev.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", c}, {"args", {{"name", "core " + std::to_string(c)}}}});
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
  json j = {
      {"traceEvents", ev}, {"displayTimeUnit", "ms"}, {"otherData", {{"source", "loom serve"}, {"config", w.config}}}};
  return j.dump() + "\n";
}

}  // namespace loom::serve
