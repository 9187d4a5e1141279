// Mappings of `loom tune` and the searches that pick them (docs/tuning.md,
// "BERT: sequence-length buckets" and "Placement: cores per batch").
#include "tune/mapping.h"

#include <algorithm>
#include <tuple>

#include "tune/space.h"

namespace loom::tune {

namespace {

/// A batch's service over a weighted mix: from the weighted sums of the
/// cycles (e) and their squares (e2) and the total weight, the mean and the
/// squared coefficient of variation.
Service service_of(double e, double e2, double wsum) {
  const double mean = wsum > 0 ? e / wsum : 0;
  return Service{mean, mean > 0 ? std::max(0.0, e2 / wsum / (mean * mean) - 1) : 0};
}

}  // namespace

serve::Mapper mapper_of(Mapping m) {
  return [m = std::move(m)](const serve::ModelSpec& spec, int64_t seq, int batch) {
    serve::MappedRun r;
    auto it = m.find(serve::model_key(spec));
    if (it == m.end()) return r;
    const Choice& c = it->second.at(seq, batch);
    r.rows = c.rows;
    r.options = options_of(c);
    r.tag = c.tag();
    r.requests = c.requests;
    return r;
  };
}

serve::BatchCap cap_of(const Mapping& m) {
  std::map<std::string, int> caps;
  for (const auto& [key, mm] : m) caps[key] = mm.batch_cap;
  return [caps = std::move(caps)](const serve::ModelSpec& spec) {
    auto it = caps.find(serve::model_key(spec));
    return it == caps.end() ? 0 : it->second;
  };
}

Expected<BucketPick> pick_buckets(const LengthMix& mix, const std::vector<int64_t>& lens, const Candidates& cands,
                                  int max_buckets, const ChoiceCost& cost) {
  std::map<int64_t, std::pair<double, const Choice*>> best;  // per length: cost, the choice mapped
  for (const auto& cc : cands) {
    auto c = cost(cc.second);
    if (!c) return c.error();
    auto it = best.find(cc.second.rows);
    if (it == best.end() || *c < it->second.first) best[cc.second.rows] = {*c, &cc.first};
  }
  double total_w = 0;
  for (auto [seq, w] : mix) total_w += w;
  if (total_w <= 0) total_w = 1;
  BucketPick out;
  std::vector<std::tuple<double, int, uint32_t>> sets;  // expected, buckets, mask over lens
  const size_t n = lens.size();
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (!(mask >> (n - 1) & 1) || __builtin_popcount(mask) > max_buckets) continue;  // the longest is always in
    double e = 0;
    bool ok = true;
    for (auto [seq, w] : mix) {
      size_t k = 0;
      while (k < n && !((mask >> k & 1) && lens[k] >= seq)) ++k;
      auto b = k < n ? best.find(lens[k]) : best.end();
      if (b == best.end()) {
        ok = false;
        break;
      }
      e += w * b->second.first;
    }
    if (!ok) continue;
    sets.emplace_back(e / total_w, __builtin_popcount(mask), mask);
  }
  if (sets.empty()) return make_error("loom tune", "no bucket set holds every sequence length");
  out.sets_searched = int64_t(sets.size());
  double lo = std::get<0>(sets[0]);
  for (const auto& x : sets) lo = std::min(lo, std::get<0>(x));
  const std::tuple<double, int, uint32_t>* pick = nullptr;
  for (const auto& x : sets)
    if (std::get<0>(x) <= lo * 1.01 && (!pick || std::get<1>(x) < std::get<1>(*pick) ||
                                        (std::get<1>(x) == std::get<1>(*pick) && std::get<0>(x) < std::get<0>(*pick))))
      pick = &x;
  const uint32_t mask = std::get<2>(*pick);
  out.expected = std::get<0>(*pick);
  for (size_t k = 0; k < n; ++k)
    if (mask >> k & 1) out.map.buckets.push_back(*best[lens[k]].second);
  out.map.fallback = out.map.buckets.back();
  double padded = 0, run = 0;
  for (auto [seq, w] : mix) {
    const int64_t b = out.map.at(seq, 1).rows;
    padded += w * double(b - seq), run += w * double(b);
  }
  out.padding = run > 0 ? padded / run : 0;
  return out;
}

Status pick_requests(ModelMap& map, int max_batch, const ChoiceCost& cost) {
  const std::vector<int> per_run = doubling_to(max_batch);
  for (const Choice& bucket : map.buckets) {
    std::vector<double> run_cost;
    for (int r : per_run) {
      Choice c = bucket;
      c.requests = r;
      auto x = cost(c);
      if (!x) return x.error();
      run_cost.push_back(*x);
    }
    for (int b = 1; b <= max_batch; ++b) {
      size_t pick = 0;
      for (size_t k = 1; k < per_run.size(); ++k)
        if (double(cdiv(b, per_run[k])) * run_cost[k] < double(cdiv(b, per_run[pick])) * run_cost[pick]) pick = k;
      Choice c = bucket;
      c.requests = per_run[pick];
      map.shape[{bucket.rows, b}] = c;
    }
  }
  return Status::ok();
}

Expected<BucketPick> pick_placed(const BucketSearch& s, const Candidates& cands, const Arrivals& requests,
                                 const Fabric& f) {
  LengthMix mix;
  double reqs = 0, wsum = 0;
  for (const auto& [sb, wt] : s.batches)
    mix[sb.first] += wt * double(sb.second), reqs += wt * double(sb.second), wsum += wt;
  const double per_batch = wsum > 0 ? std::max(1.0, reqs / wsum) : 1.0;
  std::map<int, BucketPick> by;
  std::map<int, Service> service;
  for (int k : widths_of(cands)) {
    auto bp = pick_buckets(mix, s.lens, of_width(cands, k), s.max_buckets, s.cost);
    if (!bp) return bp.error();
    LOOM_TRY(pick_requests(bp->map, s.max_batch, s.run_cost));
    double e = 0, e2 = 0;
    for (const auto& [sb, wt] : s.batches) {
      const Choice& c = bp->map.at(sb.first, sb.second);
      auto x = s.run_cost(c);
      if (!x) return x.error();
      const double v = double(cdiv(sb.second, std::max(c.requests, 1))) * *x;
      e += wt * v, e2 += wt * v * v;
    }
    service[k] = service_of(e, e2, wsum);
    by[k] = std::move(*bp);
  }
  const Placed pl = place(service, Arrivals{requests.requests_per_us, per_batch, requests.scv / per_batch}, f);
  BucketPick out = std::move(by.at(pl.pick));
  out.placements = pl.to_json();
  return out;
}

BatchMix one_request_batches(const LengthMix& mix) {
  BatchMix b;
  for (auto [seq, wt] : mix) b[{seq, 1}] += wt;
  return b;
}

Expected<Placed> place_gemm(const BatchMix& batches, const Candidates& cands, const ChoiceCost& cost,
                            const Arrivals& requests, const Fabric& f) {
  double reqs = 0, wsum = 0;
  for (const auto& [sb, wt] : batches) reqs += wt * double(sb.second), wsum += wt;
  const double per_batch = wsum > 0 ? std::max(1.0, reqs / wsum) : 1.0;
  std::map<int, Service> service;
  for (int k : widths_of(cands)) {
    double e = 0, e2 = 0;
    for (const auto& [sb, wt] : batches) {
      double best = -1;
      for (const auto& cc : cands) {
        if (cc.second.cores != k) continue;
        auto c = cost(cc.second);
        if (!c) return c.error();
        const double v = double(cdiv(sb.first * sb.second, cc.second.rows)) * *c;
        if (best < 0 || v < best) best = v;
      }
      e += wt * best, e2 += wt * best * best;
    }
    service[k] = service_of(e, e2, wsum);
  }
  return place(service, Arrivals{requests.requests_per_us, per_batch, requests.scv / per_batch}, f);
}

}  // namespace loom::tune
