// The placement decision of `loom tune`: how many cores a batch runs on,
// each gang width weighed by the mean latency of an M/M/c queue
// (mmc_latency in tune.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "tune/tune.h"

namespace loom::tune {

/// The fabric the placement shares out: its cores and clock.
struct Fabric {
  int cores = 1;
  double mhz = 1;
};

/// A placement weighed: a gang of k cores turns the fabric's N cores into
/// N / k servers of the k-core service time; each width's expected service
/// time per request (its best choices, cycles per request over the mix) is
/// weighed by the mean latency of an M/M/c queue at the model's arrival rate.
/// The lowest wins, and among widths within 1 % of it the fewest cores (when
/// every width is overloaded: the most requests per core-cycle). The other
/// models sharing the fabric are not in the queue (each model as if alone).
struct Placed {
  struct Width {
    int cores = 1, servers = 1;
    double service_us = 0, latency_us = 0;
  };
  std::vector<Width> widths;
  int pick = 1;
  /// Every width weighed, the chosen one marked.
  nlohmann::ordered_json to_json() const;
};

/// The width of the lowest modelled latency for `service_cycles` (per width:
/// cycles per request) at `lambda_per_us` requests per us.
Placed place(const std::map<int, double>& service_cycles, double lambda_per_us, const Fabric& f);

/// Candidates of a mapping search: (the choice mapped, the choice costed).
using Candidates = std::vector<std::pair<Choice, Choice>>;

/// The widths the candidates offer.
std::set<int> widths_of(const Candidates& cands);

/// The candidates of width `k`.
Candidates of_width(const Candidates& cands, int k);

}  // namespace loom::tune
