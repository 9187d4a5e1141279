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

/// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n
/// when one value holds everything. Empty or all-zero input gives 1.
double jain_index(const std::vector<double>& x);

}  // namespace loom::serve
