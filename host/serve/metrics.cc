#include "serve/metrics.h"

#include <algorithm>
#include <cmath>

namespace loom::serve {

std::optional<double> percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  const double n = double(sorted.size());
  auto rank = int64_t(std::ceil(p / 100.0 * n - 1e-9));
  if (rank < 1) rank = 1;
  if (rank > int64_t(sorted.size())) rank = int64_t(sorted.size());
  return sorted[size_t(rank - 1)];
}

LatencySummary LatencySummary::of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  LatencySummary s;
  s.count = int64_t(v.size());
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  s.p50 = percentile(v, 50), s.p95 = percentile(v, 95), s.p99 = percentile(v, 99), s.p999 = percentile(v, 99.9);
  s.max = v.back();
  for (int i = 0; i <= 100; ++i) s.cdf.push_back(*percentile(v, std::max(0.001, double(i))));
  return s;
}

nlohmann::ordered_json LatencySummary::to_json() const {
  const auto num = [](const std::optional<double>& x) { return x ? nlohmann::ordered_json(*x) : nullptr; };
  return {{"requests", count},    {"p50_us", num(p50)},   {"p95_us", num(p95)}, {"p99_us", num(p99)},
          {"p999_us", num(p999)}, {"mean_us", num(mean)}, {"max_us", num(max)}};
}

double jain_index(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) s += v, s2 += v * v;
  if (x.empty() || s2 == 0) return 1.0;
  return s * s / (double(x.size()) * s2);
}

}  // namespace loom::serve
