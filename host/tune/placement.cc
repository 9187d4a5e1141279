// The placement decision of `loom tune`: the M/M/c queue model and the gang
// width it picks (docs/tuning.md, "Placement: cores per batch").
#include "tune/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::tune {

using json = nlohmann::ordered_json;

double ggc_latency(int c, double lambda, double s, double ca2, double cs2) {
  if (c < 1 || s <= 0) return std::numeric_limits<double>::infinity();
  if (lambda <= 0) return s;
  const double a = lambda * s, rho = a / double(c);
  if (rho >= 1) return std::numeric_limits<double>::infinity();
  double b = 1;
  for (int k = 1; k <= c; ++k) b = a * b / (double(k) + a * b);
  const double wait = b / (1 - rho * (1 - b));
  return s + (ca2 + cs2) / 2 * wait * s / (double(c) * (1 - rho));
}

json Placed::to_json() const {
  json a = json::array();
  for (const auto& x : widths)
    a.push_back({{"cores", x.cores},
                 {"servers", x.servers},
                 {"service_us", x.service_us},
                 {"requests_per_batch", requests_per_batch},
                 {"arrival_scv", arrival_scv},
                 {"service_scv", x.service_scv},
                 {"modelled_latency_us", std::isfinite(x.latency_us) ? json(x.latency_us) : json("overloaded")},
                 {"chosen", x.cores == pick}});
  return a;
}

Placed place(const std::map<int, Service>& service, const Arrivals& in, const Fabric& f) {
  Placed p;
  p.requests_per_batch = in.requests_per_batch, p.arrival_scv = in.scv;
  const double lambda = in.requests_per_us / std::max(in.requests_per_batch, 1.0);  // batches per us
  double lo = std::numeric_limits<double>::infinity(), best_tp = 0;
  for (const auto& [k, sv] : service) {
    Placed::Width x;
    x.cores = k, x.servers = std::max(1, f.cores / k), x.service_us = sv.cycles / f.mhz, x.service_scv = sv.scv;
    x.latency_us = ggc_latency(x.servers, lambda, x.service_us, in.scv, sv.scv);
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
