// The serving scheduler's entry points: a run of the workload (its main run
// and each stream's isolated run, sim.h) and its result document.
#include "serve/server.h"

#include <algorithm>
#include <cmath>
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
    for (const Req& q : res->reqs) o.requests->push_back({q.stream, q.arrival, q.start, q.done, q.seq, q.dropped});
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
json settings_json(const Workload& w, const ServeOptions& o, const AutoChoice& policy) {
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
                     {"used", policy.sched == Sched::Static ? "static" : "dynamic"},
                     {"reason", policy.reason.empty() ? json(nullptr) : json(policy.reason)}};
  j["admission"] = w.admission;
  j["duration_ms"] = w.duration_ms;
  return j;
}

/// Latency over time: the requests arriving in each of kWindows equal
/// windows of the run (bursts and drift show up here, not in the whole-run
/// percentiles).
constexpr size_t kWindows = 50;

/// One stream's requests in the main run, counted and measured.
struct StreamTally {
  int64_t submitted = 0, completed = 0, dropped = 0, failed = 0, met = 0;
  std::vector<double> lat, wait;             // of the completed requests
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
    if (q.done < 0) continue;  // would be an accounting error, caught in result_json
    ++t.completed;
    t.lat.push_back(q.done - q.arrival);
    t.wait.push_back(q.start - q.arrival);
    t.windows[std::min(kWindows - 1, size_t(std::max(0.0, q.arrival) / span * double(kWindows)))].push_back(q.done -
                                                                                                            q.arrival);
    if (q.done - q.arrival <= s.slo_ms * 1000.0) ++t.met;
  }
  return t;
}

/// Queue-wait percentiles and histogram.
json queue_wait_json(const std::vector<double>& wait) {
  const std::vector<double> edges{0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
  json qw = LatencySummary::of(wait).to_json();
  json hist = json::array();
  for (size_t k = 0; k < edges.size(); ++k) {
    const double lo = edges[k], hi = k + 1 < edges.size() ? edges[k + 1] : kInf;
    int64_t n = 0;
    for (double x : wait) n += x >= lo && x < hi;
    hist.push_back({{"lo_us", lo}, {"hi_us", std::isfinite(hi) ? json(hi) : json(nullptr)}, {"count", n}});
  }
  qw["histogram"] = hist;
  return qw;
}

json latency_over_time_json(const std::vector<std::vector<double>>& windows, double makespan) {
  const double span = std::max(makespan, 1.0);
  json over = json::array();
  for (size_t k = 0; k < kWindows; ++k) {
    const json pj = LatencySummary::of(windows[k]).to_json();
    over.push_back({{"start_ms", double(k) * span / double(kWindows) / 1000.0},
                    {"end_ms", double(k + 1) * span / double(kWindows) / 1000.0},
                    {"completed", windows[k].size()},
                    {"p50_us", pj["p50_us"]},
                    {"p99_us", pj["p99_us"]}});
  }
  return over;
}

/// One stream's result: its counts, latencies, queue waits and slowdown `slow`
/// over its isolated mean latency `alone`.
Expected<json> stream_json(const Stream& s, const StreamTally& t, double makespan, double alone, double slow,
                           ServiceModel& sm) {
  json sj;
  sj["name"] = s.name;
  sj["model"] = model_key(s.model);
  if (s.model.kind == ModelSpec::Kind::Onnx) {
    // A bucketed model: its longest bucket's program (the segments and host
    // ops are the same at every length; the host time is the longest's).
    auto prog = sm.onnx_program(s.model, *std::max_element(s.shapes.values.begin(), s.shapes.values.end()));
    if (!prog) return prog.error();
    sj["segments"] = (*prog)->segments.size();
    sj["fallback_ops"] = (*prog)->host_ops.size();
    sj["fallback_op_names"] = (*prog)->fallback_ops();
    sj["host_us_per_request"] = sm.host_cost(**prog).host_us;
  }
  sj["priority"] = s.priority;
  sj["slo_ms"] = s.slo_ms;
  sj["submitted"] = t.submitted;
  sj["completed"] = t.completed;
  sj["dropped"] = t.dropped;
  sj["failed"] = t.failed;
  sj["throughput_rps"] = makespan > 0 ? double(t.completed) / makespan * 1e6 : 0.0;
  const LatencySummary lat = LatencySummary::of(t.lat);
  sj["latency"] = lat.to_json();
  sj["queue_wait"] = queue_wait_json(t.wait);
  sj["slo_attainment"] = t.submitted ? double(t.met) / double(t.submitted) : 1.0;
  sj["isolated_mean_latency_us"] = alone;
  sj["slowdown"] = slow;
  sj["latency_cdf_us"] = lat.cdf;
  sj["latency_over_time"] = latency_over_time_json(t.windows, makespan);
  return sj;
}

/// Every stream's result and the totals over them.
struct StreamResults {
  json streams = json::array();
  int64_t completed = 0, dropped = 0, failed = 0;
  std::vector<double> all_lat;       // latencies of every completed request
  std::vector<double> inv_slowdown;  // per stream
  double antt = 0;                   // sum of the slowdowns
};

Expected<StreamResults> stream_results(const Workload& w, const SimOut& r, const std::vector<double>& alone,
                                       ServiceModel& sm) {
  StreamResults out;
  for (size_t si = 0; si < w.streams.size(); ++si) {
    const Stream& s = w.streams[si];
    const StreamTally t = tally_stream(r, si, s);
    out.completed += t.completed, out.dropped += t.dropped, out.failed += t.failed;
    out.all_lat.insert(out.all_lat.end(), t.lat.begin(), t.lat.end());
    const double shared = mean_latency(r, int(si));
    const double slow = alone[si] > 0 && shared > 0 ? shared / alone[si] : 1.0;
    auto sj = stream_json(s, t, r.makespan, alone[si], slow, sm);
    if (!sj) return sj.error();
    out.antt += slow;
    out.inv_slowdown.push_back(1.0 / slow);
    out.streams.push_back(std::move(*sj));
  }
  return out;
}

/// Per-core busy time, utilization and batches (live: times out of service),
/// and the imbalance of the utilizations.
void add_cores(json& j, const SimOut& r, const spec::HwConfig& cfg, const ServeOptions& o) {
  json cores = json::array();
  double umax = 0, usum = 0;
  for (size_t c = 0; c < r.core_busy.size(); ++c) {
    const double u = r.makespan > 0 ? r.core_busy[c] / r.makespan : 0;
    umax = std::max(umax, u), usum += u;
    cores.push_back({{"core", c},
                     {"port", spec::mem_port_of(cfg, unsigned(c))},
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
}

/// The service times and port stretches the run used, as measured.
json service_times_json(const ServiceModel& sm, const spec::HwConfig& cfg) {
  json tab = json::array(), stretch = json::array();
  for (const auto& m : sm.measurements())
    tab.push_back({{"model", m.model},
                   {"seq", m.seq},
                   {"batch", m.batch},
                   {"cycles", m.cycles},
                   {"us", sm.cycles_to_us(m.cycles)}});
  for (const auto& m : sm.stretches()) {
    json with = json::array();
    for (const auto& [wm, ws, wb] : m.with) with.push_back({{"model", wm}, {"seq", ws}, {"batch", wb}});
    stretch.push_back({{"model", m.model},
                       {"seq", m.seq},
                       {"batch", m.batch},
                       {"with", with},
                       {"port_cores", m.with.size() + 1},
                       {"stretch", m.stretch},
                       {"alone_cycles", m.alone},
                       {"phase_cycles", m.phases}});
  }
  return {{"backend", sm.backend()}, {"clock_mhz", cfg.clock_mhz}, {"table", tab}, {"port_stretch", stretch}};
}

/// Live: what the device did, and every reason a batch failed (the requests
/// of a failed batch are queued again up to max_retries times, then fail).
json live_json(const SimOut& r, const ServeOptions& o) {
  json reasons = json::array();
  for (const auto& [k, n] : r.failed_batches) {
    int64_t reqs = 0;
    for (const auto& q : r.reqs) reqs += q.failed && q.reason == k;
    reasons.push_back({{"reason", r.fail_reasons[size_t(k)]}, {"batches", n}, {"requests_failed", reqs}});
  }
  json faults = json::array();
  for (const auto& f : r.faults)
    faults.push_back({{"fault", f.event.text},
                      {"kind", f.event.kind},
                      {"core", f.event.core},
                      {"at_ms", f.event.at_ms},
                      {"for_ms", f.event.for_ms},
                      {"applied_ms", f.applied_ms >= 0 ? json(f.applied_ms) : json(nullptr)},
                      {"not_applied", f.applied_ms >= 0 ? json(nullptr) : json(f.not_applied())},
                      {"lifted_ms", f.ended_ms >= 0 ? json(f.ended_ms) : json(nullptr)}});
  json rss = json::array();
  for (const auto& [n, mib] : r.rss) rss.push_back({{"requests", n}, {"mib", mib}});
  return {{"completion", o.live.completion == runtime::Completion::Interrupt ? "interrupt" : "poll"},
          {"faults_injected", faults},
          {"rss_mib", rss},
          {"device_runs", r.live.device_runs},
          {"checked_runs", r.live.checked},
          {"output_mismatches", r.live.mismatches},
          {"device_errors", r.live.device_errors},
          {"host_timeouts", r.live.timeouts},
          {"max_retries", o.max_retries},
          {"retried_requests", r.retried},
          {"failures", reasons}};
}

/// The result document of the main run `r`, given each stream's isolated
/// mean latency. Fails if any request is unaccounted for.
Expected<json> result_json(const Workload& w, const ServeOptions& o, const spec::HwConfig& cfg, ServiceModel& sm,
                           const AutoChoice& policy, const SimOut& r, const std::vector<double>& alone) {
  json j = settings_json(w, o, policy);
  j["makespan_ms"] = r.makespan / 1000.0;
  auto sr = stream_results(w, r, alone, sm);
  if (!sr) return sr.error();
  const int64_t submitted = int64_t(r.reqs.size());
  if (submitted != sr->completed + sr->failed + sr->dropped)
    return make_error("loom serve", "accounting error: submitted " + std::to_string(submitted) + " != completed " +
                                        std::to_string(sr->completed) + " + failed " + std::to_string(sr->failed) +
                                        " + dropped " + std::to_string(sr->dropped));
  j["submitted"] = submitted;
  j["completed"] = sr->completed;
  j["failed"] = sr->failed;
  j["dropped"] = sr->dropped;
  j["throughput_rps"] = r.makespan > 0 ? double(sr->completed) / r.makespan * 1e6 : 0.0;
  j["latency"] = LatencySummary::of(sr->all_lat).to_json();
  j["streams"] = sr->streams;
  json bh = json::object();
  for (const auto& [n, c] : r.batch_hist) bh[std::to_string(n)] = c;
  j["batch_sizes"] = bh;
  add_cores(j, r, cfg, o);
  double stp = 0;
  for (double x : sr->inv_slowdown) stp += x;
  j["fairness"] = {{"jain", jain_index(sr->inv_slowdown)}, {"antt", sr->antt / double(w.streams.size())}, {"stp", stp}};
  j["fallbacks"] = {{"deadline_infeasible", r.fallbacks}};
  j["steals"] = r.steals;
  j["port_limit_waits"] = r.port_limit_waits;
  j["gang_batches"] = r.gang_batches;
  j["port_contention"] = w.port_contention >= 0 ? json(w.port_contention) : json("measured");
  j["max_per_port"] = w.max_per_port;
  j["service_times"] = service_times_json(sm, cfg);
  if (o.mode == "live") j["live"] = live_json(r, o);
  return j;
}

}  // namespace

Expected<std::vector<int64_t>> arrival_counts(const Workload& w, double load_scale) {
  LOOM_TRY(check_budget(w, load_scale));
  std::vector<int64_t> n;
  for (size_t i = 0; i < w.streams.size(); ++i)
    n.push_back(int64_t(detail::arrivals(w.streams[i], int(i), w.seed, w.duration_ms * 1000.0, load_scale).size()));
  return n;
}

Expected<json> run_serve(const Workload& w, const ServeOptions& o, ServiceModel& sm) {
  sm.allow_wall_clock(o.mode == "live");
  const spec::HwConfig* cfg = spec::find_config(w.config);
  if (!cfg) return make_error(w.source + ": field 'config'", "unknown configuration '" + w.config + "'");
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
  return result_json(w, o, *cfg, sm, *policy, *r, *alone);
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
