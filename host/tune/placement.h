// The placement decision of `loom tune`: how many cores a batch runs on,
// each gang width weighed by the mean latency of a G/G/c queue of batches
// (ggc_latency in tune.h).
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
/// time per batch (its best choices over the batch mix) is weighed by the
/// mean latency of a G/G/c queue (ggc_latency) whose customers are batches.
/// The lowest wins, and among widths within 1 % of it the fewest cores (when
/// every width is overloaded: the most requests per core-cycle). The other
/// models sharing the fabric are not in the queue (each model as if alone).
struct Placed {
  struct Width {
    int cores = 1, servers = 1;
    double service_us = 0, service_scv = 1, latency_us = 0;
  };
  std::vector<Width> widths;
  double requests_per_batch = 1, arrival_scv = 1;
  int pick = 1;
  /// Every width weighed, the chosen one marked.
  nlohmann::ordered_json to_json() const;
};

/// One width's service of a batch: its mean cycles and their squared
/// coefficient of variation over the batch mix (1: unknown, as exponential).
struct Service {
  double cycles = 0, scv = 1;
};
/// A model's arrivals: requests per us, requests per batch, and the squared
/// coefficient of variation of the batches' inter-arrival times.
struct Arrivals {
  double requests_per_us = 0, requests_per_batch = 1, scv = 1;
};
/// The width of the lowest modelled latency for `service` (per width) and `in`.
Placed place(const std::map<int, Service>& service, const Arrivals& in, const Fabric& f);

/// Candidates of a mapping search: (the choice mapped, the choice costed).
using Candidates = std::vector<std::pair<Choice, Choice>>;

/// The widths the candidates offer.
std::set<int> widths_of(const Candidates& cands);

/// The candidates of width `k`.
Candidates of_width(const Candidates& cands, int k);

}  // namespace loom::tune
