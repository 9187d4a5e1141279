// The serve result document (result.h): each part writes its own fields, in
// the order of docs/schema/serve.schema.json.
#include "serve/result.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;

json num(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

template <typename T>
json array_of(const std::vector<T>& v) {
  json a = json::array();
  for (const auto& x : v) a.push_back(x.to_json());
  return a;
}

/// An injected fault: when it took effect and was lifted, or why it never did.
json fault_json(const FaultApplied& f) {
  const bool applied = f.applied_ms >= 0;
  return {{"fault", f.event.text},
          {"kind", f.event.kind},
          {"core", f.event.core},
          {"at_ms", f.event.at_ms},
          {"for_ms", f.event.for_ms},
          {"applied_ms", applied ? json(f.applied_ms) : json(nullptr)},
          {"not_applied", applied ? json(nullptr) : json(f.not_applied())},
          {"lifted_ms", f.ended_ms >= 0 ? json(f.ended_ms) : json(nullptr)}};
}

}  // namespace

json SchedulingChoice::to_json() const {
  return {{"requested", requested}, {"used", used}, {"reason", reason ? json(*reason) : json(nullptr)}};
}

json ServeSettings::to_json() const {
  json j;
  j["kind"] = "serve";
  j["workload"] = workload;
  j["backend"] = backend;
  j["mode"] = mode;
  j["config"] = config;
  j["seed"] = seed;
  j["load_scale"] = load_scale;
  j["batching"] = batching;
  j["max_batch"] = max_batch;
  j["max_queue_delay_ms"] = max_queue_delay_ms;
  j["slack_margin"] = slack_margin;
  j["shape_grouping"] = shape_grouping;
  j["scheduling"] = scheduling.to_json();
  j["admission"] = admission;
  j["duration_ms"] = duration_ms;
  return j;
}

json OnnxStreamInfo::to_json() const {
  return {{"segments", segments},
          {"fallback_ops", fallback_ops},
          {"fallback_op_names", fallback_op_names},
          {"host_us_per_request", host_us_per_request}};
}

json WaitBin::to_json() const { return {{"lo_us", lo_us}, {"hi_us", num(hi_us)}, {"count", count}}; }

json QueueWait::to_json() const {
  json j = summary.to_json();
  j["histogram"] = array_of(histogram);
  return j;
}

json LatencyWindow::to_json() const {
  return {{"start_ms", start_ms},
          {"end_ms", end_ms},
          {"completed", completed},
          {"p50_us", num(p50_us)},
          {"p99_us", num(p99_us)}};
}

json StreamResult::to_json() const {
  json j;
  j["name"] = name;
  j["model"] = model;
  if (onnx) j.update(onnx->to_json());
  j["priority"] = priority;
  j["slo_ms"] = slo_ms;
  j["submitted"] = submitted;
  j["completed"] = completed;
  j["dropped"] = dropped;
  j["failed"] = failed;
  j["throughput_rps"] = throughput_rps;
  j["latency"] = latency.to_json();
  j["queue_wait"] = queue_wait.to_json();
  j["latency_attribution"] = latency_attribution.to_json();
  j["slo_attainment"] = slo_attainment;
  j["isolated_mean_latency_us"] = isolated_mean_latency_us;
  j["slowdown"] = slowdown;
  j["latency_cdf_us"] = latency.cdf;
  j["latency_over_time"] = array_of(latency_over_time);
  return j;
}

json OutOfService::to_json() const { return {{"out_of_service", times}, {"out_of_service_us", us}}; }

json CoreResult::to_json() const {
  json j = {{"core", core}, {"port", port}, {"busy_us", busy_us}, {"utilization", utilization}, {"batches", batches}};
  if (out_of_service) j.update(out_of_service->to_json());
  return j;
}

json Fairness::to_json() const { return {{"jain", jain}, {"antt", antt}, {"stp", stp}}; }

json ServiceTime::to_json() const {
  return {{"model", model}, {"seq", seq}, {"batch", batch}, {"cycles", cycles}, {"us", us}};
}

json PortStretch::to_json() const {
  json w = json::array();
  for (const auto& [wm, ws, wb] : with) w.push_back({{"model", wm}, {"seq", ws}, {"batch", wb}});
  return {{"model", model},
          {"seq", seq},
          {"batch", batch},
          {"with", w},
          {"port_cores", with.size() + 1},
          {"stretch", stretch},
          {"alone_cycles", alone_cycles},
          {"phase_cycles", phase_cycles}};
}

json ServiceTimes::to_json() const {
  return {{"backend", backend},
          {"clock_mhz", clock_mhz},
          {"table", array_of(table)},
          {"port_stretch", array_of(port_stretch)}};
}

json BatchFailure::to_json() const {
  return {{"reason", reason}, {"batches", batches}, {"requests_failed", requests_failed}};
}

json RssSample::to_json() const { return {{"requests", requests}, {"mib", mib}}; }

json LiveResult::to_json() const {
  json faults = json::array();
  for (const auto& f : faults_injected) faults.push_back(fault_json(f));
  return {{"completion", completion == runtime::Completion::Interrupt ? "interrupt" : "poll"},
          {"faults_injected", faults},
          {"rss_mib", array_of(rss)},
          {"device_runs", counters.device_runs},
          {"checked_runs", counters.checked},
          {"output_mismatches", counters.mismatches},
          {"device_errors", counters.device_errors},
          {"host_timeouts", counters.timeouts},
          {"max_retries", max_retries},
          {"retried_requests", retried_requests},
          {"failures", array_of(failures)}};
}

json ServeResult::to_json() const {
  json j = {{"kind", "serve"}, {"memo", memo.to_json()}};
  j.update(settings.to_json());
  j["makespan_ms"] = makespan_ms;
  j["submitted"] = submitted;
  j["completed"] = completed;
  j["failed"] = failed;
  j["dropped"] = dropped;
  j["throughput_rps"] = throughput_rps;
  j["latency"] = latency.to_json();
  j["latency_attribution"] = latency_attribution.to_json();
  j["streams"] = array_of(streams);
  json bh = json::object();
  for (const auto& [n, c] : batch_sizes) bh[std::to_string(n)] = c;
  j["batch_sizes"] = bh;
  j["cores"] = array_of(cores);
  j["core_imbalance"] = core_imbalance;
  j["fairness"] = fairness.to_json();
  j["fallbacks"] = {{"deadline_infeasible", fallbacks}};
  j["steals"] = steals;
  j["port_limit_waits"] = port_limit_waits;
  j["gang_batches"] = gang_batches;
  j["port_contention"] = port_contention ? json(*port_contention) : json("measured");
  j["max_per_port"] = max_per_port;
  j["service_times"] = service_times.to_json();
  if (live) j["live"] = live->to_json();
  if (trace) j["trace"] = *trace;
  return j;
}

}  // namespace loom::serve
