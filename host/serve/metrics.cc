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

double LatencyParts::operator[](size_t i) const {
  const double v[kCount] = {queueing, batching, imbalance, service, host, stretch};
  return i < kCount ? v[i] : 0.0;
}

double LatencyParts::total() const { return queueing + batching + imbalance + service + host + stretch; }

namespace {

LatencyAttribution::Band band_of(const std::vector<const LatencyParts*>& reqs) {
  LatencyAttribution::Band b;
  b.requests = int64_t(reqs.size());
  if (reqs.empty()) return b;
  for (const LatencyParts* p : reqs) {
    b.mean.queueing += p->queueing, b.mean.batching += p->batching, b.mean.imbalance += p->imbalance;
    b.mean.service += p->service, b.mean.host += p->host, b.mean.stretch += p->stretch;
  }
  const double n = double(reqs.size());
  b.mean.queueing /= n, b.mean.batching /= n, b.mean.imbalance /= n;
  b.mean.service /= n, b.mean.host /= n, b.mean.stretch /= n;
  b.latency_us = b.mean.total();
  return b;
}

nlohmann::ordered_json band_json(const LatencyAttribution::Band& b) {
  nlohmann::ordered_json j = {{"requests", b.requests},
                              {"latency_us", b.requests ? nlohmann::ordered_json(b.latency_us) : nullptr}};
  for (size_t i = 0; i < LatencyParts::kCount; ++i)
    j[std::string(LatencyParts::kNames[i]) + "_us"] = b.requests ? nlohmann::ordered_json(b.mean[i]) : nullptr;
  for (size_t i = 0; i < LatencyParts::kCount; ++i)
    j[std::string(LatencyParts::kNames[i]) + "_share"] =
        b.requests && b.latency_us > 0 ? nlohmann::ordered_json(b.mean[i] / b.latency_us) : nullptr;
  return j;
}

}  // namespace

LatencyAttribution LatencyAttribution::of(const std::vector<LatencyParts>& sample) {
  LatencyAttribution a;
  if (sample.empty()) return a;
  std::vector<double> lat;
  lat.reserve(sample.size());
  for (const auto& p : sample) lat.push_back(p.total());
  std::sort(lat.begin(), lat.end());
  std::vector<const LatencyParts*> all, body, tail;
  const auto p50 = percentile(lat, 50), p99 = percentile(lat, 99);
  for (const auto& p : sample) {
    all.push_back(&p);
    if (p.total() <= *p50) body.push_back(&p);
    if (p.total() >= *p99) tail.push_back(&p);
  }
  a.all = band_of(all), a.p50 = band_of(body), a.p99 = band_of(tail);
  return a;
}

nlohmann::ordered_json LatencyAttribution::to_json() const {
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (const char* n : LatencyParts::kNames) names.push_back(n);
  return {{"parts", names}, {"all", band_json(all)}, {"p50", band_json(p50)}, {"p99", band_json(p99)}};
}

double jain_index(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) s += v, s2 += v * v;
  if (x.empty() || s2 == 0) return 1.0;
  return s * s / (double(x.size()) * s2);
}

}  // namespace loom::serve
