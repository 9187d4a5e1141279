// The placement decision of `loom tune`: the M/M/c queue model and the gang
// width it picks (docs/tuning.md, "Placement: cores per batch").
#include "tune/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::tune {

using json = nlohmann::ordered_json;

double mmc_latency(int c, double lambda, double s) {
  if (c < 1 || s <= 0) return std::numeric_limits<double>::infinity();
  if (lambda <= 0) return s;
  const double a = lambda * s, rho = a / double(c);
  if (rho >= 1) return std::numeric_limits<double>::infinity();
  double b = 1;
  for (int k = 1; k <= c; ++k) b = a * b / (double(k) + a * b);
  const double wait = b / (1 - rho * (1 - b));
  return s + wait * s / (double(c) * (1 - rho));
}

json Placed::to_json() const {
  json a = json::array();
  for (const auto& x : widths)
    a.push_back({{"cores", x.cores},
                 {"servers", x.servers},
                 {"service_us", x.service_us},
                 {"modelled_latency_us", std::isfinite(x.latency_us) ? json(x.latency_us) : json("overloaded")},
                 {"chosen", x.cores == pick}});
  return a;
}

Placed place(const std::map<int, double>& service_cycles, double lambda_per_us, const Fabric& f) {
  Placed p;
  double lo = std::numeric_limits<double>::infinity(), best_tp = 0;
  for (auto [k, cyc] : service_cycles) {
    Placed::Width x;
    x.cores = k, x.servers = std::max(1, f.cores / k), x.service_us = cyc / f.mhz;
    x.latency_us = mmc_latency(x.servers, lambda_per_us, x.service_us);
    p.widths.push_back(x);
    lo = std::min(lo, x.latency_us);
  }
  if (std::isfinite(lo)) {
    // Within 1 % of the lowest latency, the fewest cores per batch: a gang
    // must earn the servers it costs (headroom if the load or the shapes grow).
    for (const auto& x : p.widths)
      if (x.latency_us <= lo * 1.01) {
        p.pick = x.cores;
        break;
      }
    return p;
  }
  for (const auto& x : p.widths) {  // every width overloaded: the most requests per core-us
    const double per_core = x.service_us * double(x.cores);
    if (best_tp == 0 || per_core < best_tp) best_tp = per_core, p.pick = x.cores;
  }
  return p;
}

std::set<int> widths_of(const Candidates& cands) {
  std::set<int> ks;
  for (const auto& cc : cands) ks.insert(cc.second.cores);
  return ks;
}

Candidates of_width(const Candidates& cands, int k) {
  Candidates out;
  for (const auto& cc : cands)
    if (cc.second.cores == k) out.push_back(cc);
  return out;
}

}  // namespace loom::tune
