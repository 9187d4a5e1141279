// Summary statistics of a serving run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace loom::serve {

/// Nearest-rank percentile: the ceil(p/100 * n)-th smallest value (p in
/// (0, 100]); nullopt for an empty sample. `sorted` must be ascending.
std::optional<double> percentile(const std::vector<double>& sorted, double p);

/// The one latency summary of a sample (microseconds), for serve, sweep and
/// tune results alike. An empty sample has count 0 and no statistics: null
/// in JSON, never 0.
struct LatencySummary {
  int64_t count = 0;
  std::optional<double> mean, p50, p95, p99, p999, max;
  std::vector<double> cdf;  // the values at p0.001, p1, ..., p100 (101 points); empty for an empty sample

  static LatencySummary of(std::vector<double> sample);
  /// {"requests", "p50_us", "p95_us", "p99_us", "p999_us", "mean_us", "max_us"}.
  nlohmann::ordered_json to_json() const;
};

/// Where one completed request's latency went, in microseconds; the parts
/// sum to its latency (done - arrival). Its wait (arrival to start) is split
/// by what held its stream's queue meanwhile: queueing (every core busy or
/// out of service), batching (a core its stream may use was free: the
/// batching policy filling or holding the batch, or a gang gathering its
/// cores) and imbalance (a core was free that its stream may not use:
/// another stream's home core under static scheduling, or a port at its
/// max_per_port limit). Its run (start to done) is split into service (the
/// batch's measured service time alone, without host ops), host (the host
/// ops of the batch, the ops that fell back from the fabric) and stretch
/// (the time beyond the measured service time: memory-port contention with
/// the batches on the other cores of its port).
struct LatencyParts {
  double queueing = 0, batching = 0, imbalance = 0, service = 0, host = 0, stretch = 0;
  static constexpr const char* kNames[] = {"queueing", "batching", "imbalance", "service", "host", "stretch"};
  static constexpr size_t kCount = 6;
  double operator[](size_t i) const;
  double total() const;
};

/// The latency attribution of a stream (or a run): the mean of each part
/// over all its completed requests, over the body (latency at or below
/// p50) and over the tail (at or above p99), with the requests each rests on.
struct LatencyAttribution {
  struct Band {
    int64_t requests = 0;
    double latency_us = 0;  // their mean latency (the sum of `mean`)
    LatencyParts mean;
  };
  Band all, p50, p99;
  static LatencyAttribution of(const std::vector<LatencyParts>& sample);
  /// {"parts": [names], "all"|"p50"|"p99": {"requests", "latency_us",
  /// "<part>_us"..., "<part>_share"...}}; a band with no request has null
  /// shares.
  nlohmann::ordered_json to_json() const;
};

/// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n
/// when one value holds everything. Empty or all-zero input gives 1.
double jain_index(const std::vector<double>& x);

}  // namespace loom::serve
