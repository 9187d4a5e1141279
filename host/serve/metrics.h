// Summary statistics of a serving run.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace loom::serve {

/// Nearest-rank percentile: the ceil(p/100 * n)-th smallest value (p in
/// (0, 100]); nullopt for an empty sample. `sorted` must be ascending.
std::optional<double> percentile(const std::vector<double>& sorted, double p);

/// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n
/// when one value holds everything. Empty or all-zero input gives 1.
double jain_index(const std::vector<double>& x);

}  // namespace loom::serve
