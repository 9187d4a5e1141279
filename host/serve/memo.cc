#include "serve/memo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/json_read.h"
#include "serve/result.h"
#include "serve/workload.h"

namespace loom::serve {

using json = nlohmann::ordered_json;

namespace {

/// P(B >= k) for B ~ Binomial(n, q): exact up to 20,000 trials, the normal
/// law with a continuity correction beyond.
double binomial_at_least(int64_t n, double q, int64_t k) {
  if (k <= 0 || q >= 1) return 1.0;
  if (k > n || q <= 0) return 0.0;
  if (n > 20000) {
    const double sd = std::sqrt(double(n) * q * (1 - q));
    return 0.5 * std::erfc((double(k) - 0.5 - double(n) * q) / sd / std::sqrt(2.0));
  }
  const double lq = std::log(q), l1q = std::log1p(-q), lgn = std::lgamma(double(n) + 1);
  double sum = 0;
  for (int64_t i = k; i <= n; ++i)
    sum += std::exp(lgn - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) + double(i) * lq +
                    double(n - i) * l1q);
  return std::min(1.0, sum);
}

/// The smallest order statistic j (1-based) at which the bootstrap k-th
/// order statistic's distribution reaches `level`: P(X*_(k) <= X_(j)) =
/// P(Binomial(n, j/n) >= k), increasing in j.
int64_t bootstrap_rank(int64_t n, int64_t k, double level) {
  int64_t lo = 1, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (binomial_at_least(n, double(mid) / double(n), k) >= level)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

json opt(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

}  // namespace

std::string format_figure(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string format_ms(std::optional<double> us) { return us ? format_figure("%.3f ms", *us / 1000.0) : "none"; }

PercentileEstimate PercentileEstimate::of(const std::vector<double>& sorted, double p) {
  PercentileEstimate e;
  e.p = p;
  e.requests = int64_t(sorted.size());
  if (sorted.empty()) return e;
  const int64_t n = e.requests;
  const int64_t k = std::clamp<int64_t>(int64_t(std::ceil(p / 100.0 * double(n) - 1e-9)), 1, n);
  e.value_us = sorted[size_t(k - 1)];
  e.lo_us = sorted[size_t(bootstrap_rank(n, k, 0.025) - 1)];
  e.hi_us = sorted[size_t(bootstrap_rank(n, k, 0.975) - 1)];
  e.enough = double(n) * (1.0 - p / 100.0) >= kTailSamples - 1e-9;
  return e;
}

json PercentileEstimate::to_json() const {
  return {{"p", p},
          {"value_us", opt(value_us)},
          {"ci95_lo_us", opt(lo_us)},
          {"ci95_hi_us", opt(hi_us)},
          {"requests", requests},
          {"enough_samples", enough}};
}

TailEstimate TailEstimate::of(std::vector<double> sample) {
  std::sort(sample.begin(), sample.end());
  TailEstimate t;
  t.requests = int64_t(sample.size());
  t.p50 = PercentileEstimate::of(sample, 50), t.p95 = PercentileEstimate::of(sample, 95);
  t.p99 = PercentileEstimate::of(sample, 99), t.p999 = PercentileEstimate::of(sample, 99.9);
  return t;
}

json TailEstimate::to_json() const {
  return {{"requests", requests},
          {"p50", p50.to_json()},
          {"p95", p95.to_json()},
          {"p99", p99.to_json()},
          {"p999", p999.to_json()}};
}

json StreamTail::to_json() const {
  return {{"stream", name}, {"slo_ms", slo_ms}, {"slo_attainment", slo_attainment}, {"tail", tail.to_json()}};
}

json RuleCheck::to_json() const {
  return {{"clause", clause}, {"holds", holds}, {"detail", detail}, {"if_not", if_not}};
}

std::string decide(const std::vector<RuleCheck>& checks) {
  static const char* const kSeverity[] = {"roll back", "escalate", "bounded rollout"};
  for (const char* d : kSeverity)
    for (const auto& c : checks)
      if (!c.holds && c.if_not == d) return d;
  return "ship";
}

json Memo::to_json() const {
  json models = json::array(), tl = json::array(), ck = json::array();
  for (const auto& m : slice.models) models.push_back(m);
  for (const auto& t : tails) tl.push_back(t.to_json());
  for (const auto& c : checks) ck.push_back(c.to_json());
  return {{"question", question},
          {"slice",
           {{"workload", slice.workload},
            {"models", models},
            {"load", slice.load},
            {"seed", slice.seed},
            {"config", slice.config},
            {"backend", slice.backend},
            {"mode", slice.mode},
            {"loom_version", slice.loom_version}}},
          {"primary_metric",
           {{"name", primary.name},
            {"unit", primary.unit},
            {"before", opt(primary.before)},
            {"after", opt(primary.after)},
            {"trend", primary.trend}}},
          {"tail", tl},
          {"fairness", fairness},
          {"mechanism", mechanism},
          {"evidence", evidence},
          {"owner_action", owner_action},
          {"decision", decision},
          {"rule", rule},
          {"checks", ck}};
}

std::string action_for(const std::string& part) {
  if (part == "queueing") return "add capacity for the stream (more cores, a larger configuration) or admit less load";
  if (part == "batching")
    return "shorten the batching wait (max_queue_delay_ms, or deadline batching that dispatches when cores idle)";
  if (part == "imbalance") return "let every core serve every stream (dynamic scheduling) or re-partition the cores";
  if (part == "service") return "make the batch faster: another mapping (loom tune), fusion or a larger array";
  if (part == "host") return "map the host ops onto the fabric (loom compile --explain names each and why)";
  if (part == "stretch") return "relieve memory-port contention (max_per_port, or spread the streams over the ports)";
  return "look at the evidence";
}

std::string shares_text(const LatencyAttribution::Band& b) {
  std::vector<std::pair<double, const char*>> parts;
  for (size_t i = 0; i < LatencyParts::kCount; ++i)
    if (b.latency_us > 0) parts.emplace_back(b.mean[i] / b.latency_us, LatencyParts::kNames[i]);
  std::sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string s;
  for (const auto& [share, name] : parts)
    if (share >= 0.01) s += (s.empty() ? "" : ", ") + format_figure("%.0f %%", 100.0 * share) + " " + name;
  return s.empty() ? "no completed request" : s;
}

Memo::Slice slice_of(const Workload& w, const ServeResult& r) {
  Memo::Slice s;
  s.workload = r.settings.workload, s.config = r.settings.config, s.backend = r.settings.backend;
  s.mode = r.settings.mode, s.seed = r.settings.seed, s.loom_version = LOOM_VERSION;
  for (size_t i = 0; i < r.streams.size() && i < w.streams.size(); ++i) {
    // Sequence lengths where requests have them (a gemm chain, a bucketed model).
    const ModelSpec& m = w.streams[i].model;
    const auto& v = w.streams[i].shapes.values;
    std::string shapes = std::to_string(*std::min_element(v.begin(), v.end()));
    if (v.size() > 1) shapes += ".." + std::to_string(*std::max_element(v.begin(), v.end()));
    const bool seq = m.kind == ModelSpec::Kind::GemmChain || m.bucketed();
    s.models.push_back(r.streams[i].name + ": " + r.streams[i].model + (seq ? " (seq " + shapes + ")" : ""));
  }
  const double secs = r.settings.duration_ms / 1000.0;
  s.load = "load scale " + format_figure("%g", r.settings.load_scale) + ": " + std::to_string(r.submitted) +
           " requests over " + format_figure("%g", r.settings.duration_ms) + " ms (" +
           format_figure("%.0f", secs > 0 ? double(r.submitted) / secs : 0.0) + " req/s offered)";
  return s;
}

namespace {

/// The stream whose p99 is the largest fraction of its SLO (0 when none completed).
size_t worst_stream(const ServeResult& r) {
  size_t worst = 0;
  double most = -1;
  for (size_t i = 0; i < r.streams.size(); ++i) {
    const auto& s = r.streams[i];
    const double x = s.latency.p99 && s.slo_ms > 0 ? *s.latency.p99 / (s.slo_ms * 1000.0) : -1;
    if (x > most) most = x, worst = i;
  }
  return worst;
}

/// The mean p99 of the first and the second half of a stream's windows.
std::pair<std::optional<double>, std::optional<double>> halves(const StreamResult& s) {
  double a = 0, b = 0;
  int na = 0, nb = 0;
  const size_t n = s.latency_over_time.size();
  for (size_t k = 0; k < n; ++k) {
    const auto& p = s.latency_over_time[k].p99_us;
    if (!p) continue;
    (k < n / 2 ? a : b) += *p;
    ++(k < n / 2 ? na : nb);
  }
  return {na ? std::optional<double>(a / na) : std::nullopt, nb ? std::optional<double>(b / nb) : std::nullopt};
}

std::string trend_of(const StreamResult& s) {
  const auto [a, b] = halves(s);
  if (!a || !b || *a <= 0) return "no trend: too few windows with requests";
  const double f = *b / *a;
  const std::string how = f > 1.2 ? "rising" : f < 1 / 1.2 ? "falling" : "steady";
  return how + ": the second half's window p99 is " + format_figure("%.2f", f) + "x the first half's (" + format_ms(a) +
         " -> " + format_ms(b) + ")";
}

}  // namespace

size_t dominant_part(const LatencyAttribution::Band& b) {
  size_t best = 0;
  for (size_t i = 1; i < LatencyParts::kCount; ++i)
    if (b.mean[i] > b.mean[best]) best = i;
  return best;
}

namespace {

std::vector<RuleCheck> serve_checks(const ServeResult& r, const std::vector<StreamTail>& tails) {
  RuleCheck within{"every stream's p99 within its SLO", true, "", "escalate"},
      ci{"every p99's 95 % interval within its SLO", true, "", "bounded rollout"};
  RuleCheck enough{"every p99 rests on enough requests (10 or more beyond it)", true, "", "bounded rollout"};
  RuleCheck met{"every stream's SLO attainment at least 99 % (dropped requests count as misses)", true, "", "escalate"};
  for (const auto& t : tails) {
    const double slo = t.slo_ms * 1000.0;
    const auto& p = t.tail.p99;
    const std::string sep = within.detail.empty() ? "" : "; ";
    within.holds = within.holds && p.value_us && *p.value_us <= slo;
    within.detail += sep + t.name + " " + format_ms(p.value_us) + " vs " + format_figure("%.2f ms", t.slo_ms);
    ci.holds = ci.holds && p.hi_us && *p.hi_us <= slo;
    ci.detail += sep + t.name + " [" + format_ms(p.lo_us) + ", " + format_ms(p.hi_us) + "]";
    enough.holds = enough.holds && p.enough;
    enough.detail += sep + t.name + " " + std::to_string(p.requests) + " requests";
    met.holds = met.holds && t.slo_attainment >= 0.99;
    met.detail += sep + t.name + " " + format_figure("%.1f %%", 100.0 * t.slo_attainment);
  }
  RuleCheck sound{"no request failed and no output differed from the golden model", r.failed == 0, "", "escalate"};
  sound.detail = std::to_string(r.failed) + " failed";
  if (r.live) {
    sound.holds = sound.holds && r.live->counters.mismatches == 0;
    sound.detail += ", " + std::to_string(r.live->counters.mismatches) + " of " +
                    std::to_string(r.live->counters.checked) + " checked runs differed";
  }
  return {within, ci, enough, met, sound};
}

}  // namespace

Memo serve_memo(const Workload& w, const ServeResult& r, const std::vector<std::vector<double>>& latencies) {
  Memo m;
  m.slice = slice_of(w, r);
  m.question = "Does " + r.settings.workload + " meet every stream's SLO at p99 on " + r.settings.config + " (" +
               r.settings.backend + ", " + (r.settings.mode == "live" ? "live" : "simulated") + ")?";
  for (size_t i = 0; i < r.streams.size(); ++i)
    m.tails.push_back({r.streams[i].name, r.streams[i].slo_ms, r.streams[i].slo_attainment,
                       TailEstimate::of(i < latencies.size() ? latencies[i] : std::vector<double>{})});
  const size_t worst = worst_stream(r);
  m.primary.name = "p99 / SLO of the worst stream";
  m.primary.unit = "ratio";
  if (!r.streams.empty()) {
    const auto& s = r.streams[worst];
    if (s.latency.p99 && s.slo_ms > 0) m.primary.after = *s.latency.p99 / (s.slo_ms * 1000.0);
    m.primary.name += " (" + s.name + ")";
    m.primary.trend = trend_of(s);
    const auto& tail = s.latency_attribution.p99;
    const char* part = LatencyParts::kNames[dominant_part(tail)];
    m.mechanism = s.name + "'s p99 tail (" + std::to_string(tail.requests) + " requests, mean " +
                  format_ms(tail.latency_us) + ") is " + shares_text(tail) + "; its largest part is " + part + ".";
    m.owner_action = action_for(part);
    m.evidence.push_back("streams[" + s.name + "].latency_attribution.p99: " + shares_text(tail) +
                         " (the body, p50: " + shares_text(s.latency_attribution.p50) + ")");
    m.evidence.push_back("streams[" + s.name + "].latency_over_time: " + m.primary.trend);
  }
  std::string util;
  for (const auto& c : r.cores) util += (util.empty() ? "" : "/") + format_figure("%.0f", 100.0 * c.utilization);
  m.evidence.push_back("cores: utilization " + util + " % (core_imbalance " + format_figure("%.2f", r.core_imbalance) +
                       ")");
  m.fairness = "Jain " + format_figure("%.3f", r.fairness.jain) + " over the streams' slowdowns, ANTT " +
               format_figure("%.3f", r.fairness.antt) + ", STP " + format_figure("%.3f", r.fairness.stp);
  m.checks = serve_checks(r, m.tails);
  m.rule =
      "ship: every check holds; bounded rollout: every p99 and attainment within its SLO, but an interval crosses "
      "the SLO or a p99 rests on too few requests; escalate: a p99 or an attainment misses its SLO, or a request "
      "failed or differed. (roll back is for a change: loom tune.)";
  m.decision = decide(m.checks);
  if (m.decision == "ship") m.owner_action = "none needed; for more headroom: " + m.owner_action;
  return m;
}

}  // namespace loom::serve

// ---- The sweep's memo -------------------------------------------------------

namespace loom::serve {

namespace {

/// One setting of a sweep over its loads: the points' decisions and p99s.
struct SettingRun {
  std::string name;
  std::map<double, std::vector<size_t>> points;  // load -> indices into the rows
};

/// The setting's name: its settings columns as "k=v, ...".
std::string setting_name(const json& row, const json& settings) {
  std::string n;
  for (const auto& k : settings) {
    if (!k.is_string()) continue;
    const json& v = field(row, k.get<std::string>());
    n += (n.empty() ? "" : ", ") + k.get<std::string>() + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return n;
}

std::string decision_of_point(const std::vector<json>& results, size_t i) {
  const json& d = i < results.size() ? field(field(results[i], "memo"), "decision") : json(nullptr);
  return d.is_string() ? d.get<std::string>() : "none";
}

double p99_of(const json& rows, size_t i) {
  const json& p = field(rows[i], "p99_us");
  return p.is_number() ? p.get<double>() : 1e300;
}

/// The highest load up to which every point decides `want` (-1: none), and
/// the mean p99 there.
std::pair<double, double> highest(const SettingRun& s, const json& rows, const std::vector<json>& results,
                                  const std::string& want) {
  std::pair<double, double> best{-1, 0};
  for (const auto& [load, pts] : s.points) {
    bool all = !pts.empty();
    double p99 = 0;
    for (size_t i : pts) all = all && decision_of_point(results, i) == want, p99 += p99_of(rows, i);
    if (!all) break;  // up to the first load at which a seed does not
    best = {load, p99 / double(pts.size())};
  }
  return best;
}

std::vector<SettingRun> settings_of(const json& rows, const json& settings) {
  std::vector<SettingRun> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string n = setting_name(rows[i], settings);
    auto it = std::find_if(out.begin(), out.end(), [&](const SettingRun& s) { return s.name == n; });
    if (it == out.end()) it = out.insert(out.end(), SettingRun{n, {}});
    const json& load = field(rows[i], "load_scale");
    it->points[load.is_number() ? load.get<double>() : 0.0].push_back(i);
  }
  return out;
}

}  // namespace

json sweep_memo(const json& rows, const std::vector<json>& results, const json& settings) {
  json m = json::object();
  if (!rows.is_array() || rows.empty() || results.empty()) return m;
  const std::vector<SettingRun> runs = settings_of(rows, settings);
  std::string decision = "escalate", why;
  const SettingRun* best = nullptr;
  std::pair<double, double> at{-1, 0};
  json evidence = json::array();
  for (const char* want : {"ship", "bounded rollout"}) {
    for (const auto& s : runs) {
      const auto h = highest(s, rows, results, want);
      if (std::string(want) == "ship")
        evidence.push_back(s.name + ": every seed ships up to load scale " +
                           (h.first < 0 ? "none" : format_figure("%g", h.first)));
      if (h.first > at.first || (h.first == at.first && h.first >= 0 && h.second < at.second)) at = h, best = &s;
    }
    if (best) {
      decision = want;
      break;
    }
  }
  // The best point at its load (its first seed) gives the tail and the slice.
  const size_t pi = best ? best->points.at(at.first).front() : 0;
  const json& pm = field(results[pi], "memo");
  m["question"] = "Which setting of the sweep ships at the highest load, on every seed?";
  m["slice"] = field(pm, "slice");
  m["primary_metric"] = {
      {"name", "highest load scale at which every seed of the best setting decides " + decision},
      {"unit", "load scale"},
      {"before", nullptr},
      {"after", best ? json(at.first) : json(nullptr)},
      {"trend", best ? "mean p99 there " + format_ms(at.second) : std::string("no setting qualifies")}};
  m["tail"] = field(pm, "tail").is_array() ? field(pm, "tail") : json::array();
  m["fairness"] = field(pm, "fairness").is_string() ? field(pm, "fairness") : json("");
  m["mechanism"] = field(pm, "mechanism").is_string() ? field(pm, "mechanism") : json("");
  m["evidence"] = evidence;
  m["owner_action"] = best ? "deploy " + best->name + " up to load scale " + format_figure("%g", at.first)
                           : std::string("no setting ships at any load: add capacity or lower the load");
  m["rule"] =
      "a setting qualifies up to a load when every seed's point at it and below decides ship (else bounded rollout); "
      "the "
      "decision is the best qualifying level, for the setting that qualifies up to the highest load (ties: the lowest "
      "mean p99); "
      "escalate when none qualifies";
  const std::string who = best ? best->name : std::string("none");
  const std::vector<RuleCheck> checks{
      {"a setting ships at some load on every seed", decision == "ship", who, "bounded rollout"},
      {"a setting ships or rolls out bounded at some load on every seed", decision != "escalate", who, "escalate"}};
  m["checks"] = json::array();
  for (const auto& c : checks) m["checks"].push_back(c.to_json());
  m["decision"] = decide(checks);
  return m;
}

}  // namespace loom::serve
