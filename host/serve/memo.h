// The review memo that leads every serving result and report: the question,
// the workload slice, one primary metric and its trend, the tail with its
// confidence intervals, fairness, the mechanism and its evidence, the owner
// action and the decision, by a stated rule (docs/serving.md, "The memo").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/metrics.h"

namespace loom::serve {

struct ServeResult;
struct Workload;

/// A nearest-rank percentile with its 95 % confidence interval: the exact
/// bootstrap percentile interval (the bootstrap distribution of the k-th
/// order statistic, computed from the binomial law rather than resampled,
/// so the same sample gives the same interval). `enough`: at least
/// kTailSamples requests lie beyond the percentile (1,000 requests for a
/// p99); below that the percentile is the few slowest requests, not a tail.
struct PercentileEstimate {
  double p = 0;
  std::optional<double> value_us, lo_us, hi_us;  // null: no sample
  int64_t requests = 0;
  bool enough = false;
  static constexpr double kTailSamples = 10;
  static PercentileEstimate of(const std::vector<double>& sorted, double p);
  nlohmann::ordered_json to_json() const;
};

/// p50, p95, p99 and p99.9 of one sample, each with its interval.
struct TailEstimate {
  int64_t requests = 0;
  PercentileEstimate p50, p95, p99, p999;
  static TailEstimate of(std::vector<double> sample);
  nlohmann::ordered_json to_json() const;
};

/// One stream's tail in the memo.
struct StreamTail {
  std::string name;
  double slo_ms = 0;
  double slo_attainment = 1;
  TailEstimate tail;
  nlohmann::ordered_json to_json() const;
};

/// One clause of the decision rule, evaluated.
struct RuleCheck {
  std::string clause;
  bool holds = false;
  std::string detail;  // the figures it was decided on
  /// The decision when the clause does not hold: "bounded rollout",
  /// "escalate" or "roll back".
  std::string if_not = "bounded rollout";
  nlohmann::ordered_json to_json() const;
};

/// The decision a rule's evaluated checks give: the most severe `if_not`
/// of the clauses that do not hold (roll back, then escalate, then bounded
/// rollout), or ship when every clause holds.
std::string decide(const std::vector<RuleCheck>& checks);

/// The memo. `decision` is one of ship, bounded rollout, roll back or
/// escalate, and follows `rule` over `checks`.
struct Memo {
  std::string question;
  /// The workload slice: what ran where.
  struct Slice {
    std::string workload, config, backend, mode, loom_version, load;
    uint64_t seed = 0;
    std::vector<std::string> models;  // "stream: model (shapes)"
  } slice;
  /// The primary metric (before: the change's baseline; null for a single run).
  struct Metric {
    std::string name, unit;
    std::optional<double> before, after;
    std::string trend;  // over the run: rising, steady or falling (and by how much)
  } primary;
  std::vector<StreamTail> tails;
  std::string fairness;
  std::string mechanism;
  std::vector<std::string> evidence;
  std::string owner_action;
  std::string decision, rule;
  std::vector<RuleCheck> checks;
  nlohmann::ordered_json to_json() const;
};

/// The memo of a serving run (simulated or live): does the workload meet
/// every stream's SLO at p99? `latencies` holds each stream's completed
/// requests' latencies (us), in the result's stream order.
Memo serve_memo(const Workload& w, const ServeResult& r, const std::vector<std::vector<double>>& latencies);

/// The memo of a sweep (`loom experiment`'s results.json), in the same
/// fields: which setting ships at the highest load? `rows` are the sweep's
/// rows, `results` each point's serve result (read back: untrusted, every
/// field looked up with json_read's field), `settings` the columns that tell
/// settings apart. A setting ships up to a load when every seed's point at
/// it and at every lower load decides ship; the best ships up to the highest
/// load (ties: the lowest mean p99 there).
nlohmann::ordered_json sweep_memo(const nlohmann::ordered_json& rows,
                                  const std::vector<nlohmann::ordered_json>& results,
                                  const nlohmann::ordered_json& settings);

/// The workload slice of a serving run.
Memo::Slice slice_of(const Workload& w, const ServeResult& r);

/// The index of the band's largest part (LatencyParts order).
size_t dominant_part(const LatencyAttribution::Band& b);

/// What an owner does about a tail dominated by `part` (a LatencyParts name).
std::string action_for(const std::string& part);

/// A figure as the memos print it: printf's `f` applied to `x`.
std::string format_figure(const char* f, double x);
/// A latency in us as the memos print it: "1.234 ms" ("none": no value).
std::string format_ms(std::optional<double> us);

/// The largest parts of a band as "98 % imbalance, 2 % service" (those of 1 % or more).
std::string shares_text(const LatencyAttribution::Band& b);

}  // namespace loom::serve
