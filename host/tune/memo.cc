// loom tune's review memo: the last round's mapping against the deployed one
// on the requests that arrive after the swap point, decided by a stated rule
// (docs/tuning.md, "The memo").
#include <algorithm>
#include <cstdio>

#include "tune/loop.h"

namespace loom::tune {

namespace {

using serve::format_figure;
using serve::format_ms;

/// One run's requests that arrive after the swap point: every stream's
/// latencies and SLO attainment (dropped requests count as misses), and the
/// latency parts of all of them.
struct AfterSwap {
  std::vector<std::vector<double>> lat;
  std::vector<double> attainment;
  std::vector<double> all;
  std::vector<serve::LatencyParts> parts;
};

AfterSwap after_swap(const Served& run, const serve::Workload& w, double swap_us) {
  AfterSwap a;
  const size_t n = w.streams.size();
  a.lat.resize(n);
  std::vector<int64_t> submitted(n, 0), met(n, 0);
  for (const auto& q : run.reqs) {
    if (q.arrival_us < swap_us || size_t(q.stream) >= n) continue;
    const size_t si = size_t(q.stream);
    ++submitted[si];
    if (q.dropped || q.done_us < 0) continue;
    const double lat = q.done_us - q.arrival_us;
    a.lat[si].push_back(lat), a.all.push_back(lat), a.parts.push_back(q.parts);
    met[si] += lat <= w.streams[si].slo_ms * 1000.0;
  }
  for (size_t si = 0; si < n; ++si)
    a.attainment.push_back(submitted[si] ? double(met[si]) / double(submitted[si]) : 1.0);
  return a;
}

std::vector<serve::RuleCheck> checks_of(const serve::TailEstimate& b, const serve::TailEstimate& a,
                                        const AfterSwap& before, const AfterSwap& after,
                                        const std::vector<serve::Stream>& streams, double jain0, double jain1,
                                        const TuneRound* last) {
  serve::RuleCheck worse{"p99 after the swap point not worse beyond its 95 % interval", true, "", "roll back"};
  worse.holds = !(a.p99.lo_us && b.p99.hi_us && *a.p99.lo_us > *b.p99.hi_us);
  serve::RuleCheck better{"p99 after the swap point better beyond its 95 % interval", false, "", "bounded rollout"};
  better.holds = a.p99.hi_us && b.p99.lo_us && *a.p99.hi_us < *b.p99.lo_us;
  better.detail = "deployed " + format_ms(b.p99.value_us) + " [" + format_ms(b.p99.lo_us) + ", " +
                  format_ms(b.p99.hi_us) + "], tuned " + format_ms(a.p99.value_us) + " [" + format_ms(a.p99.lo_us) +
                  ", " + format_ms(a.p99.hi_us) + "]";
  worse.detail = better.detail;
  serve::RuleCheck enough{"both p99s rest on enough requests (10 or more beyond them)", b.p99.enough && a.p99.enough,
                          std::to_string(b.requests) + " and " + std::to_string(a.requests) + " requests",
                          "bounded rollout"};
  serve::RuleCheck slo{"no stream's SLO attainment after the swap point worse", true, "", "roll back"};
  for (size_t i = 0; i < streams.size(); ++i) {
    slo.holds = slo.holds && after.attainment[i] >= before.attainment[i] - 1e-9;
    slo.detail += (slo.detail.empty() ? "" : "; ") + streams[i].name + " " +
                  format_figure("%.1f %%", 100 * before.attainment[i]) + " -> " +
                  format_figure("%.1f %%", 100 * after.attainment[i]);
  }
  serve::RuleCheck fair{"fairness not worse (Jain's index within 0.005)", jain1 >= jain0 - 0.005,
                        format_figure("%.3f", jain0) + " -> " + format_figure("%.3f", jain1), "escalate"};
  serve::RuleCheck refit{"the last round's refit validated on held-out plans", last && last->refit.accepted,
                         last ? last->refit.reason : "no round ran", "bounded rollout"};
  return {better, enough, slo, fair, refit, worse};
}

std::string action_of(const std::string& decision, const std::string& part) {
  if (decision == "ship") return "deploy the tuned mapping with the last round's cost parameters (cost_params)";
  if (decision == "bounded rollout")
    return "deploy the tuned mapping on part of the traffic and keep measuring until the p99 interval clears, or the "
           "refit validates";
  if (decision == "roll back") return "keep the deployed mapping; the tuned one's tail is mostly " + part;
  return "a person decides: the tuned mapping trades fairness across streams for the tail";
}

}  // namespace

serve::Memo Loop::memo() const {
  serve::Memo m;
  const Served& tuned = last_ ? *last_ : base_;
  m.slice = serve::slice_of(s_.w, base_.result);
  m.question = "Should the mapping tuned over " + std::to_string(rounds_.size()) +
               " round(s) replace the deployed one " + "for the requests that arrive after the drift at " +
               format_figure("%g", s_.swap_ms) + " ms?";
  const AfterSwap before = after_swap(base_, s_.w, s_.swap_us), after = after_swap(tuned, s_.w, s_.swap_us);
  const auto tb = serve::TailEstimate::of(before.all), ta = serve::TailEstimate::of(after.all);
  m.primary = {"p99 latency of the requests after the swap point", "us", tb.p99.value_us, ta.p99.value_us, ""};
  if (tb.p99.value_us && ta.p99.value_us && *tb.p99.value_us > 0)
    m.primary.trend = "deployed " + format_ms(tb.p99.value_us) + " -> tuned " + format_ms(ta.p99.value_us) + " (" +
                      format_figure("%+.1f %%", 100.0 * (*ta.p99.value_us / *tb.p99.value_us - 1)) + ")";
  for (size_t i = 0; i < s_.w.streams.size(); ++i) {
    const auto& st = s_.w.streams[i];
    m.tails.push_back(
        {st.name + " (deployed)", st.slo_ms, before.attainment[i], serve::TailEstimate::of(before.lat[i])});
    m.tails.push_back({st.name + " (tuned)", st.slo_ms, after.attainment[i], serve::TailEstimate::of(after.lat[i])});
  }
  const double j0 = base_.result.fairness.jain, j1 = tuned.result.fairness.jain;
  m.fairness =
      "Jain " + format_figure("%.3f", j0) + " deployed, " + format_figure("%.3f", j1) + " tuned (over the whole runs)";
  const auto a0 = serve::LatencyAttribution::of(before.parts), a1 = serve::LatencyAttribution::of(after.parts);
  const char* part = serve::LatencyParts::kNames[serve::dominant_part(a1.p99)];
  m.mechanism = "after the swap point the p99 tail is " + serve::shares_text(a0.p99) + " (mean " +
                format_ms(a0.p99.latency_us) + ") deployed and " + serve::shares_text(a1.p99) + " (mean " +
                format_ms(a1.p99.latency_us) + ") tuned.";
  m.evidence.push_back("service parts of the tail: " + format_ms(a0.p99.mean.service) + " deployed, " +
                       format_ms(a1.p99.mean.service) + " tuned; queueing " + format_ms(a0.p99.mean.queueing) + " -> " +
                       format_ms(a1.p99.mean.queueing));
  for (const auto& r : rounds_)
    m.evidence.push_back("round " + std::to_string(r.round) + ": refit " +
                         (r.refit.accepted ? "accepted" : "rejected") + " (" + r.refit.reason + ")");
  m.checks = checks_of(tb, ta, before, after, s_.w.streams, j0, j1, rounds_.empty() ? nullptr : &rounds_.back());
  m.rule =
      "roll back: the tuned p99 worse beyond its interval, or a stream's SLO attainment worse; escalate: fairness "
      "worse; ship: the p99 better beyond its interval on enough requests, no attainment worse, fairness not worse "
      "and the refit validated; bounded rollout: otherwise.";
  m.decision = serve::decide(m.checks);
  m.owner_action = action_of(m.decision, part);
  return m;
}

}  // namespace loom::tune
