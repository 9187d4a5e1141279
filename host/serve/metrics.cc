#include "serve/metrics.h"

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

double jain_index(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) s += v, s2 += v * v;
  if (x.empty() || s2 == 0) return 1.0;
  return s * s / (double(x.size()) * s2);
}

}  // namespace loom::serve
