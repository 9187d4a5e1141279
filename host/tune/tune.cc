// The closed loop of `loom tune` (see tune.h and docs/tuning.md).
#include "tune/tune.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "serve/metrics.h"
#include "serve/server.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string key_of(const serve::ModelSpec& m, const Choice& c) { return serve::model_key(m) + "|" + c.tag(); }

compiler::CompileOptions options_of(const Choice& c) {
  compiler::CompileOptions co;
  co.num_cores = c.cores;
  co.placement = c.placement;
  co.tasks_per_core = c.tasks_per_core;
  co.fusion = c.fusion;
  co.double_buffer = c.double_buffer;
  co.cost_params = c.params;
  return co;
}

/// Latency statistics of the requests that pass `keep`.
template <class F>
json latency_json(const std::vector<serve::ServedRequest>& reqs, F&& keep) {
  std::vector<double> v;
  for (const auto& r : reqs)
    if (!r.dropped && r.done_us >= 0 && keep(r)) v.push_back(r.done_us - r.arrival_us);
  std::sort(v.begin(), v.end());
  json j;
  j["requests"] = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  j["mean_us"] = v.empty() ? 0.0 : sum / double(v.size());
  for (auto [name, p] : {std::pair{"p50_us", 50.0}, std::pair{"p95_us", 95.0}, std::pair{"p99_us", 99.0},
                         std::pair{"p999_us", 99.9}})
    j[name] = v.empty() ? 0.0 : *serve::percentile(v, p);
  json cdf = json::array();
  if (!v.empty())
    for (int i = 0; i <= 100; ++i) cdf.push_back(*serve::percentile(v, std::max(0.001, double(i))));
  j["cdf_us"] = cdf;
  return j;
}

/// A mapping: per model key, a choice per (seq, batch) and a fallback; a
/// bucketed model: its buckets (one choice each, by increasing length), a
/// batch running in the shortest that holds it.
struct ModelMap {
  Choice fallback;
  std::map<std::pair<int64_t, int>, Choice> shape;
  std::vector<Choice> buckets;
  const Choice& at(int64_t seq, int batch) const {
    for (const auto& b : buckets)
      if (b.rows >= seq) return b;
    auto it = shape.find({seq, batch});
    return it == shape.end() ? fallback : it->second;
  }
  /// Every choice the mapping can run.
  std::vector<Choice> plans() const {
    std::vector<Choice> v{fallback};
    for (const auto& [sb, c] : shape) v.push_back(c);
    v.insert(v.end(), buckets.begin(), buckets.end());
    return v;
  }
  std::string bucket_list() const {
    std::string t;
    for (const auto& b : buckets) {
      if (!t.empty()) t.push_back(',');
      t.append(std::to_string(b.rows));
    }
    return t;
  }
};

/// A bucketed model's mapping for a length mix (seq -> weight): of every set
/// of at most `max_buckets` of the lengths `lens` (ascending) that holds the
/// longest one, each
/// bucket with its cheapest candidate under `cost`, the set of the lowest
/// expected cycles per request; among the sets within 1 % of it, the one of
/// the fewest buckets (fewer plans to compile and keep). A candidate is
/// (the choice mapped, the choice costed).
struct BucketPick {
  ModelMap map;
  double expected = 0;    // cost per request over the mix
  double padding = 0;     // padded positions / all positions run, over the mix
  int64_t sets_searched = 0;
  json placements = json::array();  // pick_placed: every gang width weighed (Placed::to_json)
};
template <class F>
Expected<BucketPick> pick_buckets(const std::map<int64_t, double>& mix, const std::vector<int64_t>& lens,
                                  const std::vector<std::pair<Choice, Choice>>& cands, int max_buckets, F&& cost) {
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
    if (std::get<0>(x) <= lo * 1.01 &&
        (!pick || std::get<1>(x) < std::get<1>(*pick) ||
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
using Mapping = std::map<std::string, ModelMap>;

}  // namespace

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

namespace {

/// The placement decision: how many cores a batch runs on. A gang of k
/// cores turns the fabric's N cores into N / k servers of the k-core
/// service time; each width's expected service time per request (its best
/// choices, cycles per request over the mix) is weighed by the mean latency
/// of an M/M/c queue at the model's arrival rate. The lowest wins, and among
/// widths within 1 % of it the fewest cores (when every width is overloaded:
/// the most requests per core-cycle). The other models sharing the fabric
/// are not in the queue (each model as if alone).
struct Placed {
  struct Width {
    int cores = 1, servers = 1;
    double service_us = 0, latency_us = 0;
  };
  std::vector<Width> widths;
  int pick = 1;
  json to_json() const {
    json a = json::array();
    for (const auto& x : widths)
      a.push_back({{"cores", x.cores},
                   {"servers", x.servers},
                   {"service_us", x.service_us},
                   {"modelled_latency_us", std::isfinite(x.latency_us) ? json(x.latency_us) : json("overloaded")},
                   {"chosen", x.cores == pick}});
    return a;
  }
};
struct Fabric {
  int cores = 1;
  double mhz = 1;
};
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
/// The widths the candidates offer.
std::set<int> widths_of(const std::vector<std::pair<Choice, Choice>>& cands) {
  std::set<int> ks;
  for (const auto& cc : cands) ks.insert(cc.second.cores);
  return ks;
}
std::vector<std::pair<Choice, Choice>> of_width(const std::vector<std::pair<Choice, Choice>>& cands, int k) {
  std::vector<std::pair<Choice, Choice>> out;
  for (const auto& cc : cands)
    if (cc.second.cores == k) out.push_back(cc);
  return out;
}
/// pick_buckets for every gang width, the width by place().
template <class F>
Expected<BucketPick> pick_placed(const std::map<int64_t, double>& mix, const std::vector<int64_t>& lens,
                                 const std::vector<std::pair<Choice, Choice>>& cands, int max_buckets, F&& cost,
                                 double lambda_per_us, const Fabric& f) {
  std::map<int, BucketPick> by;
  std::map<int, double> service;
  for (int k : widths_of(cands)) {
    auto bp = pick_buckets(mix, lens, of_width(cands, k), max_buckets, cost);
    if (!bp) return bp.error();
    service[k] = bp->expected;
    by[k] = std::move(*bp);
  }
  const Placed pl = place(service, lambda_per_us, f);
  BucketPick out = std::move(by.at(pl.pick));
  out.placements = pl.to_json();
  return out;
}
/// A gemm chain's width: per width, the cost of a request of each length of
/// `mix` alone (batch 1) with its best choice of that width.
template <class F>
Expected<Placed> place_gemm(const std::map<int64_t, double>& mix,
                            const std::vector<std::pair<Choice, Choice>>& cands, F&& cost, double lambda_per_us,
                            const Fabric& f) {
  std::map<int, double> service;
  for (int k : widths_of(cands)) {
    double e = 0, wsum = 0;
    for (auto [seq, wt] : mix) {
      double best = -1;
      for (const auto& cc : cands) {
        if (cc.second.cores != k) continue;
        auto c = cost(cc.second);
        if (!c) return c.error();
        const double v = double(cdiv(seq, cc.second.rows)) * *c;
        if (best < 0 || v < best) best = v;
      }
      e += wt * best, wsum += wt;
    }
    service[k] = wsum > 0 ? e / wsum : 0;
  }
  return place(service, lambda_per_us, f);
}

/// The name of part `k` of a compiled choice when it is measured whole (a
/// pipeline or dynamic plan overlaps its layers): its first and last layer.
std::string whole_part_name(const Compiled& cr, size_t k) {
  const auto& layers = cr.parts[k].plan.layers;
  std::string name = layers.empty() ? "segment " + std::to_string(k) : layers.front().name;
  if (layers.size() > 1) name += " .. " + layers.back().name;
  return name;
}

serve::Mapper mapper_of(Mapping m) {
  return [m = std::move(m)](const serve::ModelSpec& spec, int64_t seq, int batch) {
    serve::MappedRun r;
    auto it = m.find(serve::model_key(spec));
    if (it == m.end()) return r;
    const Choice& c = it->second.at(seq, batch);
    r.rows = c.rows;
    r.options = options_of(c);
    r.tag = c.tag();
    return r;
  };
}

struct Served {
  json result;
  std::vector<serve::ServedRequest> reqs;
  std::vector<serve::BatchSpan> spans;
};

// The batches per core in a window of `len_us` of simulated time (the
// per-core timeline of the closed-loop report) that opens with the first
// batch running at or after `from_us` (so an idle stretch after the swap
// point does not leave it empty), each with the layers it ran: the runs of
// its mapped choice (`layers_of`: the named stretches of one run and the
// number of runs), scaled to the batch's span. Past kMaxTimelineLayers
// stretches in all, batches carry no layers.
constexpr size_t kMaxTimelineLayers = 4000;
template <class F>
Expected<json> timeline_json(const std::vector<serve::BatchSpan>& spans, double from_us, double len_us, F&& layers_of) {
  json a = json::array();
  size_t stretches = 0;
  double open = std::numeric_limits<double>::infinity();
  for (const auto& b : spans)
    if (b.end_us > from_us) open = std::min(open, std::max(b.start_us, from_us));
  if (!std::isfinite(open)) return a;
  from_us = open;
  const double to_us = open + len_us;
  for (const auto& b : spans) {
    if (!(b.end_us > from_us && b.start_us < to_us)) continue;
    json e = {{"core", b.core}, {"stream", b.stream}, {"start_us", b.start_us}, {"end_us", b.end_us},
              {"requests", b.requests}, {"seq", b.seq}, {"cores", b.cores}};
    auto run = layers_of(b);
    if (!run) return run.error();
    const auto& [steps, runs] = *run;
    double total = 0;
    for (const auto& st : steps) total += st.second;
    total *= double(runs);
    if (total > 0 && stretches + steps.size() * size_t(runs) <= kMaxTimelineLayers) {
      json ls = json::array();
      double t = b.start_us;
      const double k = (b.end_us - b.start_us) / total;
      for (int64_t r = 0; r < runs; ++r)
        for (const auto& [name, cyc] : steps) {
          ls.push_back(json::array({name, t, t + cyc * k}));
          t += cyc * k;
        }
      stretches += ls.size();
      e["layers"] = ls;
    }
    a.push_back(e);
  }
  return a;
}

// Every measured plan's counters beside the compiler's predictions of them.
json counters_json(const std::vector<PlanTelemetry>& tel) {
  json a = json::array();
  const auto rel = [](uint64_t pred, uint64_t meas) {
    return meas ? (double(pred) - double(meas)) / double(meas) : (pred ? 1.0 : 0.0);
  };
  for (const auto& t : tel) {
    json m = json::object();
    m["cycles"] = t.measured;  // the whole run's device cycles
    for (size_t k = 0; k < spec::kNumCounters; ++k) m[std::string(spec::kCounterNames[k])] = t.counters[k];
    const auto& ctr = t.counters;
    const uint64_t busy = ctr[size_t(spec::Counter::CYCLES_BUSY)];
    a.push_back({{"model", t.model},
                 {"choice", t.choice},
                 {"rows", t.rows},
                 {"measured", m},
                 {"predicted", {{"macs", t.predicted_macs},
                                {"bytes_rd", t.predicted_bytes_rd},
                                {"bytes_wr", t.predicted_bytes_wr},
                                {"cycles", t.predicted}}},
                 {"error", {{"macs", rel(t.predicted_macs, ctr[size_t(spec::Counter::MACS)])},
                            {"bytes_rd", rel(t.predicted_bytes_rd, ctr[size_t(spec::Counter::BYTES_RD)])},
                            {"bytes_wr", rel(t.predicted_bytes_wr, ctr[size_t(spec::Counter::BYTES_WR)])},
                            {"cycles", rel(t.predicted, t.measured)}}},
                 {"compute_share", busy ? double(ctr[size_t(spec::Counter::CYCLES_COMPUTE)]) / double(busy) : 0.0},
                 {"stall_mem_share", busy ? double(ctr[size_t(spec::Counter::CYCLES_STALL_MEM)]) / double(busy) : 0.0}});
  }
  return a;
}

}  // namespace

json swap_check(const std::vector<serve::ServedRequest>& reqs, double swap_us, size_t streams, bool& ok) {
  int64_t submitted = 0, completed = 0, dropped = 0, lost = 0, reordered = 0, after = 0;
  std::vector<double> last_start(streams, -1.0);
  for (const auto& r : reqs) {
    ++submitted;
    if (r.dropped) {
      ++dropped;
      continue;
    }
    if (r.done_us < 0 || r.start_us < 0 || r.done_us < r.start_us) {
      ++lost;
      continue;
    }
    ++completed;
    if (r.start_us >= swap_us) ++after;
    double& ls = last_start[size_t(r.stream)];
    if (r.start_us < ls) ++reordered;
    ls = std::max(ls, r.start_us);
  }
  ok = lost == 0 && reordered == 0 && submitted == completed + dropped;
  json j;
  j["at_ms"] = swap_us / 1000.0;
  j["submitted"] = submitted;
  j["completed"] = completed;
  j["dropped"] = dropped;
  j["lost"] = lost;
  j["reordered_within_stream"] = reordered;
  j["dispatched_after_swap"] = after;
  j["ok"] = ok;
  return j;
}

std::string Choice::tag() const {
  std::string t = "rows=" + std::to_string(rows) + ",fusion=" + compiler::fusion_name(fusion) +
                  ",db=" + (double_buffer ? "on" : "off");
  if (cores > 1) {
    t += ",cores=" + std::to_string(cores) + ",placement=" + compiler::placement_name(placement);
    if (placement == compiler::Placement::Dynamic) t += ",tpc=" + std::to_string(tasks_per_core);
  }
  return t + (params ? ",cost=r" + std::to_string(params_round) : "");
}

std::string Choice::placement_tag() const {
  if (cores <= 1) return "1 core";
  std::string t = std::to_string(cores) + " cores " + compiler::placement_name(placement);
  if (placement == compiler::Placement::Dynamic) t += " x" + std::to_string(tasks_per_core);
  return t;
}

std::vector<Choice> decision_space(const serve::ModelSpec& m, const std::vector<int64_t>& lengths, int max_cores) {
  std::vector<Choice> out;
  std::vector<int64_t> rows_of;
  if (m.bucketed() && !lengths.empty())
    rows_of = lengths;
  else if (m.bucketed())
    rows_of.assign(std::begin(serve::kZooBertSeqs), std::end(serve::kZooBertSeqs));
  else
    for (int64_t rows = 32; rows <= 1024; rows *= 2) rows_of.push_back(rows);
  // Placements: (cores, placement, tasks per core).
  std::vector<std::tuple<int, compiler::Placement, int>> places{{1, compiler::Placement::Static, 1}};
  for (int k = 2; k <= max_cores; k *= 2)
    for (auto pl : {std::tuple{k, compiler::Placement::Static, 1}, std::tuple{k, compiler::Placement::Pipeline, 1},
                    std::tuple{k, compiler::Placement::Dynamic, 1}, std::tuple{k, compiler::Placement::Dynamic, 2}})
      places.push_back(pl);
  for (const auto& [k, pl, tpc] : places)
    for (int64_t rows : rows_of)
      for (auto f : {compiler::Fusion::None, compiler::Fusion::Cost})
        for (bool db : {true, false}) {
          Choice c;
          c.rows = rows, c.fusion = f, c.double_buffer = db;
          c.cores = k, c.placement = pl, c.tasks_per_core = tpc;
          out.push_back(c);
        }
  return out;
}

namespace {

/// Ordinary least squares y ~ slope * x + offset. With fewer than two
/// distinct x only the means are identifiable (`identifiable` false, slope 0).
struct LeastSquares {
  double mean_x = 0, mean_y = 0, slope = 0, offset = 0;
  bool identifiable = false;
};

LeastSquares least_squares(const std::vector<std::pair<double, double>>& pts) {
  LeastSquares f;
  if (pts.empty()) return f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : pts) sx += x, sy += y, sxx += x * x, sxy += x * y;
  const double n = double(pts.size());
  const double den = n * sxx - sx * sx;
  f.mean_x = sx / n;
  f.mean_y = sy / n;
  f.identifiable = pts.size() >= 2 && std::fabs(den) > 1e-9 * std::max(1.0, n * sxx);
  if (f.identifiable) f.slope = (n * sxy - sx * sy) / den;
  f.offset = (sy - f.slope * sx) / n;
  return f;
}

}  // namespace

LinearFit fit_linear(const std::vector<std::pair<double, double>>& pts) {
  LinearFit f;
  f.n = int(pts.size());
  if (pts.empty()) return f;
  const LeastSquares ls = least_squares(pts);
  if (!ls.identifiable) {
    f.a = 1.0;  // one shape: only the offset is identifiable
    f.b = ls.mean_y - ls.mean_x;
    return f;
  }
  f.a = ls.slope;
  f.b = ls.offset;
  return f;
}

json Calibration::to_json() const {
  json j;
  json k = json::object();
  for (const auto& [name, f] : per_kind) k[name] = {{"a", f.a}, {"b", f.b}, {"points", f.n}};
  j["per_kind"] = k;
  j["plan_overhead_cycles"] = overhead;
  return j;
}

CostFit fit_cost_params(const std::vector<PlanTelemetry>& telemetry, const compiler::CostParams& base) {
  std::vector<std::pair<double, double>> pts;  // (insns, measured - predicted)
  for (const auto& t : telemetry)
    for (const auto& l : t.layers) pts.push_back({double(l.insns), double(l.measured) - double(l.predicted)});
  CostFit f;
  f.params = base;
  f.params.layer_cycles = 0;
  f.params.insn_cycles = 0;
  f.points = int(pts.size());
  if (pts.empty()) return f;
  const LeastSquares ls = least_squares(pts);
  const double n = double(pts.size());
  if (ls.slope > 0) {
    f.params.insn_cycles = ls.slope;
    f.params.layer_cycles = ls.offset;
  } else {
    // One instruction count (only the offset is identifiable), or a
    // negative slope: an instruction cannot save cycles, so the constrained
    // least squares keeps insn_cycles at 0 and fits the offset alone.
    f.params.layer_cycles = ls.mean_y;
    f.unconstrained_insn_cycles = ls.slope;
  }
  double e0 = 0, e1 = 0;
  for (auto [x, y] : pts) {
    const double r = y - f.params.correction(x);
    e0 += y * y, e1 += r * r;
  }
  f.rms_before = std::sqrt(e0 / n);
  f.rms_after = std::sqrt(e1 / n);
  return f;
}

namespace {

/// What a decision chose, without the numbers that justify it: the text up
/// to its first ';' (tiling: the tile; fusion: folded or kept separate), cut
/// before " predicts" (the residual weighing's "fused predicts N cycles").
std::string choice_of(const std::string& text) {
  std::string k = text.substr(0, text.find(';'));
  const size_t p = k.find(" predicts");
  return p == std::string::npos ? k : k.substr(0, p);
}

bool compared_pass(const std::string& pass) {
  return pass == "fuse-activation" || pass == "fuse-residual" || pass == "tiling";
}

}  // namespace

std::vector<DecisionChange> diff_decisions(const std::vector<compiler::Decision>& a,
                                           const std::vector<compiler::Decision>& b) {
  std::vector<DecisionChange> out;
  const auto find = [](const std::vector<compiler::Decision>& v, const compiler::Decision& d) {
    for (const auto& x : v)
      if (x.pass == d.pass && x.node == d.node) return &x;
    return static_cast<const compiler::Decision*>(nullptr);
  };
  for (const auto& d : a) {
    if (!compared_pass(d.pass)) continue;
    const compiler::Decision* o = find(b, d);
    if (!o) out.push_back({d.pass, d.node, d.text, ""});
    else if (choice_of(d.text) != choice_of(o->text)) out.push_back({d.pass, d.node, d.text, o->text});
  }
  for (const auto& d : b)
    if (compared_pass(d.pass) && !find(a, d)) out.push_back({d.pass, d.node, "", d.text});
  return out;
}

std::string layer_kind(const std::string& op, const std::string& name) {
  return name.find('+') != std::string::npos ? op + "+fused" : op;
}

Calibration refit(const std::vector<PlanTelemetry>& telemetry) {
  std::map<std::string, std::vector<std::pair<double, double>>> pts;
  double over = 0;
  int plans = 0;
  for (const auto& t : telemetry) {
    uint64_t sum = 0;
    for (const auto& l : t.layers) {
      pts[l.kind].push_back({double(l.predicted), double(l.measured)});
      sum += l.measured;
    }
    over += double(t.measured) - double(sum);
    ++plans;
  }
  Calibration c;
  for (const auto& [k, v] : pts) c.per_kind[k] = fit_linear(v);
  c.overhead = plans ? over / plans : 0;
  return c;
}

uint64_t Compiled::predicted_cycles() const {
  uint64_t sum = host_cycles;
  for (const auto& p : parts) sum += p.predicted_cycles;
  return sum;
}

std::vector<compiler::Decision> Compiled::decisions() const {
  std::vector<compiler::Decision> out;
  for (const auto& p : parts) out.insert(out.end(), p.decisions.begin(), p.decisions.end());
  return out;
}

Expected<const Compiled*> Lab::compiled(const serve::ModelSpec& m, const Choice& c) {
  const std::string key = key_of(m, c);
  auto it = compiled_.find(key);
  if (it != compiled_.end()) return &it->second;
  auto out = build(m, c);
  if (!out) return out.error();
  // Kept for its predictions, decisions and layer names only: the
  // instruction streams, constants and inputs of every choice of every
  // round would not fit in memory (measure() compiles again to run).
  for (auto& part : out->parts) {
    std::vector<uint8_t>().swap(part.plan.constants);
    std::vector<std::vector<spec::Insn>>().swap(part.plan.cores);
    std::vector<plan::Task>().swap(part.plan.tasks);
  }
  std::vector<std::map<std::string, Tensor>>().swap(out->inputs);
  return &compiled_.emplace(key, std::move(*out)).first->second;
}

Expected<Compiled> Lab::build(const serve::ModelSpec& m, const Choice& c) {
  std::vector<ir::Graph> graphs;
  Compiled out;
  if (m.bucketed()) {
    // The program of the bucket's length: its segments compile with the
    // choice's options, as ServiceModel compiles them when it serves.
    serve::ModelSpec len = m;
    len.zoo_seq = c.rows;
    len.name = m.name + ":seq=" + std::to_string(c.rows);
    auto info = sm_.onnx_info(len);
    if (!info) return info.error();
    graphs = (*info)->graphs;
    out.host_cycles = (*info)->host_cycles;
    out.order = (*info)->order;
    out.host_after = (*info)->host_after;
  } else {
    graphs.push_back(serve::gemm_chain(m, c.rows));
    out.order = {{0, 0}};
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& g : graphs) {
    if (Status s = ir::validate(g); !s) return s.error();
    auto cr = compiler::compile(g, cfg_, options_of(c));
    if (!cr) return cr.error();
    out.parts.push_back(std::move(*cr));
    out.inputs.push_back(ir::random_inputs(g, 1));
  }
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

Expected<const PlanTelemetry*> Lab::measure(const serve::ModelSpec& m, const Choice& c) {
  const std::string key = key_of(m, c);
  auto it = measured_.find(key);
  if (it != measured_.end()) return &it->second;
  auto full = build(m, c);  // runnable (compiled() keeps no streams); compiling is deterministic
  if (!full) return full.error();
  const Compiled* cr = &*full;
  auto dev = sm_.device();
  if (!dev) return dev.error();
  PlanTelemetry t;
  t.model = serve::model_key(m);
  t.choice = c.tag();
  t.rows = c.rows;
  runtime::RunOptions ro;
  ro.layer_cycles = true;
  for (size_t k = 0; k < cr->parts.size(); ++k) {
    const compiler::CompileResult& part = cr->parts[k];
    const plan::Plan& p = part.plan;
    // The whole part as it serves, then layer by layer (released one layer
    // at a time, so the layers do not overlap: their sum can exceed the
    // whole; the difference is the plan overhead the refit sees). Pipeline
    // and dynamic plans overlap their layers: measured whole only.
    const bool per_layer = p.placement == "static" && p.tasks.empty() && p.unit_calls.empty();
    auto whole = runtime::execute(**dev, p, cr->inputs[k]);
    if (!whole) return whole.error();
    ++runs_;
    t.measured += whole->cycles;
    t.part_cycles.push_back(whole->cycles);
    t.part_layers.push_back(per_layer ? p.layers.size() : 0);
    for (const auto& core : whole->cores)
      for (size_t n = 0; n < spec::kNumCounters; ++n) t.counters[n] += core.counters[n];
    for (size_t li = 0; li < p.layers.size(); ++li) {
      t.predicted_macs += p.layers[li].macs;
      if (li < part.predicted.size())
        t.predicted_bytes_rd += part.predicted[li].dram_read, t.predicted_bytes_wr += part.predicted[li].dram_written;
    }
    if (!per_layer) {
      // The uncorrected prediction of the whole part (the correction is per layer).
      double pred = double(part.predicted_cycles);
      if (c.params)
        for (const auto& lp : part.predicted) pred -= c.params->correction(double(lp.core_insns));
      t.part_predicted.push_back(uint64_t(std::max(0.0, std::round(pred))));
      t.predicted += t.part_predicted.back();
      continue;
    }
    auto r = runtime::execute(**dev, p, cr->inputs[k], ro);
    if (!r) return r.error();
    ++runs_;
    if (r->layer_cycles.size() != p.layers.size())
      return make_error("loom tune", "the backend gave no per-layer cycles for " + key);
    t.part_predicted.push_back(0);
    for (size_t li = 0; li < p.layers.size(); ++li) {
      const auto& L = p.layers[li];
      LayerSample ls;
      ls.name = L.name;
      ls.kind = layer_kind(L.op, L.name);
      ls.rows = c.rows;
      if (li < part.predicted.size()) {
        const auto& lp = part.predicted[li];
        ls.insns = lp.core_insns;
        // The uncorrected model's prediction of this plan's layer: the
        // compiler added the choice's correction for the busiest core's
        // instructions.
        const double corr = c.params ? c.params->correction(double(lp.core_insns)) : 0.0;
        ls.predicted = uint64_t(std::max(0.0, std::round(double(lp.cycles) - corr)));
      }
      ls.measured = r->layer_cycles[li];
      t.predicted += ls.predicted;
      t.part_predicted.back() += ls.predicted;
      t.layers.push_back(ls);
    }
  }
  return &measured_.emplace(key, std::move(t)).first->second;
}

Expected<std::vector<std::pair<std::string, double>>> Lab::run_layers(const serve::ModelSpec& m, const Choice& c) {
  auto cr = compiled(m, c);
  if (!cr) return cr.error();
  auto t = measure(m, c);
  if (!t) return t.error();
  std::vector<size_t> first(1, 0);  // each part's first layer in the telemetry
  for (size_t n : (*t)->part_layers) first.push_back(first.back() + n);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [part, host] : (*cr)->order) {
    if (host > 0) out.push_back({"host ops", double(host)});
    if (part >= (*cr)->parts.size()) continue;
    const auto& layers = (*cr)->parts[part].plan.layers;
    if ((*t)->part_layers[part] == 0) {  // measured whole: one stretch
      out.push_back({whole_part_name(**cr, part) + " (" + c.placement_tag() + ")", double((*t)->part_cycles[part])});
      continue;
    }
    for (size_t li = 0; li < layers.size(); ++li)
      out.push_back({layers[li].name, double((*t)->layers[first[part] + li].measured)});
  }
  if ((*cr)->host_after > 0) out.push_back({"host ops", double((*cr)->host_after)});
  return out;
}

Expected<double> Lab::predict(const serve::ModelSpec& m, const Choice& c, const Calibration& cal) {
  auto cr = compiled(m, c);
  if (!cr) return cr.error();
  double sum = cal.overhead + double((*cr)->host_cycles);
  for (const auto& part : (*cr)->parts) {
    const plan::Plan& p = part.plan;
    for (size_t li = 0; li < p.layers.size() && li < part.predicted.size(); ++li) {
      const double x = double(part.predicted[li].cycles);
      auto f = cal.per_kind.find(layer_kind(p.layers[li].op, p.layers[li].name));
      sum += f == cal.per_kind.end() ? x : f->second.apply(x);
    }
  }
  return sum;
}

Expected<double> Lab::predict_compiled(const serve::ModelSpec& m, const Choice& c, double overhead) {
  auto cr = compiled(m, c);
  if (!cr) return cr.error();
  return double((*cr)->predicted_cycles()) + overhead;
}

Expected<json> run_tune(const serve::Workload& w_in, const TuneOptions& o) {
  // Requests of a stream start in arrival order (deadline batching without
  // shape grouping), so the swap check's order test is about the swap alone.
  serve::Workload w = w_in;
  w.shape_grouping = false;
  const spec::HwConfig* cfg = spec::find_config(w.config);
  if (!cfg) return make_error(w.source + ": field 'config'", "unknown configuration '" + w.config + "'");
  if (o.rounds < 1 || o.rounds > 10) return make_error("--rounds", "must be in 1..10");
  const int max_cores = o.max_cores_per_batch == -1 ? int(cfg->cores) : o.max_cores_per_batch;
  if (max_cores < 1 || max_cores > int(cfg->cores))
    return make_error("--max-cores-per-batch", "must be in 1.." + std::to_string(cfg->cores) + " (config '" +
                                                   w.config + "' has " + std::to_string(cfg->cores) + " cores)");
  if (o.max_buckets < 1 || o.max_buckets > int(std::size(serve::kZooBertSeqs)))
    return make_error("--max-buckets", "must be in 1.." + std::to_string(std::size(serve::kZooBertSeqs)));
  // The bucket lengths of bucketed models: the zoo's, or the ones given.
  std::vector<int64_t> lens(std::begin(serve::kZooBertSeqs), std::end(serve::kZooBertSeqs));
  if (!o.bucket_lengths.empty()) {
    lens = o.bucket_lengths;
    std::sort(lens.begin(), lens.end());
    for (size_t k = 0; k < lens.size(); ++k)
      if (serve::zoo_bert_bucket(lens[k]) != lens[k] || (k > 0 && lens[k] == lens[k - 1]))
        return make_error("--bucket-lengths", "'" + std::to_string(lens[k]) +
                                                  "' is not a zoo BERT length (32, 64, 128, 256, 384, 512) or is "
                                                  "given twice");
  }
  for (const auto& s : w.streams) {
    if (!s.model.bucketed()) continue;
    int64_t longest = *std::max_element(s.shapes.values.begin(), s.shapes.values.end());
    for (int64_t q : s.arrival.trace_seq) longest = std::max(longest, q);
    if (longest > lens.back())
      return make_error("--bucket-lengths", "the longest bucket (" + std::to_string(lens.back()) +
                                                ") is shorter than the longest request of stream '" + s.name + "' (" +
                                                std::to_string(longest) + ")");
  }
  std::map<std::string, serve::ModelSpec> models;
  for (const auto& s : w.streams) {
    if (s.model.kind != serve::ModelSpec::Kind::GemmChain && !s.model.bucketed())
      return make_error(w.source + ": stream '" + s.name + "'",
                        "loom tune maps gemm_chain models and zoo:bert with a seq_len distribution (padded to "
                        "buckets); '" + s.model.name + "' has one fixed shape");
    models[serve::model_key(s.model)] = s.model;
  }
  // Each model's arrival rate over the run (requests per us): the placement
  // decision's queue (place()).
  auto counts = serve::arrival_counts(w, 1.0);
  if (!counts) return counts.error();
  std::map<std::string, double> rate;
  for (size_t i = 0; i < w.streams.size(); ++i)
    rate[serve::model_key(w.streams[i].model)] += double((*counts)[i]) / (w.duration_ms * 1000.0);
  const Fabric fab{int(cfg->cores), double(cfg->clock_mhz)};
  double swap_ms = o.swap_at_ms;
  if (swap_ms < 0) {
    swap_ms = w.duration_ms / 2;
    for (const auto& s : w.streams)
      if (!s.shapes.drift.empty()) swap_ms = std::min(swap_ms, s.shapes.drift.front().at_ms);
  }
  if (swap_ms >= w.duration_ms)
    return make_error("--swap-at-ms", "must be below the workload's duration_ms (" + std::to_string(w.duration_ms) + ")");
  const double swap_us = swap_ms * 1000.0;
  // Progress: the serve runs (baseline, best per shape, one per round) and
  // the exhaustive search are equal stages.
  const double stages = 4.0 + double(o.rounds);
  double stage = -1;
  std::string phase;
  auto progress = [&](const std::string& s) {
    ++stage;
    phase = s;
    if (o.on_progress) o.on_progress(stage / stages, phase);
  };

  serve::ServiceModel sm(*cfg, o.backend, o.cache_dir, o.device);
  if (o.zoo_builder) sm.set_zoo_builder(o.zoo_builder);
  // The backend first: an untimed one fails here, before the choices compile.
  if (auto d = sm.device(); !d) return d.error();
  Lab lab(*cfg, sm);
  std::map<std::string, std::vector<Choice>> spaces;
  for (const auto& [key, spec] : models) spaces[key] = decision_space(spec, lens, max_cores);
  const auto& space = spaces.begin()->second;  // the report's list (the first model's)
  json j;
  j["kind"] = "tune";
  j["workload"] = w.source;
  j["backend"] = o.backend;
  j["config"] = w.config;
  j["seed"] = w.seed;
  j["rounds_requested"] = o.rounds;
  j["swap_at_ms"] = swap_ms;
  j["max_buckets"] = o.max_buckets;
  j["max_cores_per_batch"] = max_cores;
  if (std::any_of(models.begin(), models.end(), [](const auto& kv) { return kv.second.bucketed(); }))
    j["bucket_lengths"] = lens;
  {
    json ds = json::array();
    for (const auto& c : space) ds.push_back(c.tag());
    j["decision_space"] = ds;
  }
  // A bucketed model's mapping record: its buckets, the padding and the plans' compile time.
  const auto bucket_json = [&](const serve::ModelSpec& spec, const BucketPick& bp) -> Expected<json> {
    double compile_ms = 0;
    json bs = json::array();
    for (const auto& c : bp.map.buckets) {
      auto cr = lab.compiled(spec, c);
      if (!cr) return cr.error();
      compile_ms += (*cr)->compile_ms;
      bs.push_back({{"seq", c.rows}, {"choice", c.tag()}});
    }
    return json{{"buckets", bs},
                {"cores", bp.map.buckets.empty() ? 1 : bp.map.buckets.front().cores},
                {"placements", bp.placements},
                {"plans", bp.map.buckets.size()},
                {"padding", bp.padding},
                {"expected_cycles_per_request", bp.expected},
                {"compile_ms", compile_ms},
                {"bucket_sets_searched", bp.sets_searched}};
  };
  const auto plain = [](const std::vector<Choice>& v) {
    std::vector<std::pair<Choice, Choice>> out;
    for (const auto& c : v) out.push_back({c, c});
    return out;
  };

  // Initial mapping: one plan per model, chosen by the uncorrected cost
  // model for the shape mix at time 0 (batch 1).
  Mapping m0;
  json init = json::object();
  const Calibration identity;
  for (const auto& [key, spec] : models) {
    // The mix at deployment: the weights at time 0, or for a trace that
    // gives lengths, the lengths of its arrivals before the swap point
    // (scaled to the same total weight).
    std::map<int64_t, double> mix;
    for (const auto& s : w.streams) {
      if (serve::model_key(s.model) != key) continue;
      double total = 0;
      for (double x : s.shapes.weights) total += x;
      std::map<int64_t, double> early;
      double n = 0;
      for (size_t i = 0; i < s.arrival.trace_seq.size() && i < s.arrival.trace_ms.size(); ++i)
        if (s.arrival.trace_seq[i] > 0 && s.arrival.trace_ms[i] < swap_ms) early[s.arrival.trace_seq[i]] += 1, n += 1;
      if (n > 0)
        for (auto [seq, c] : early) mix[seq] += c / n * total;
      else
        for (size_t k = 0; k < s.shapes.values.size(); ++k) mix[s.shapes.values[k]] += s.shapes.weights[k];
    }
    if (spec.bucketed()) {
      auto bp = pick_placed(mix, lens, plain(spaces[key]), o.max_buckets,
                            [&, &sp = spec](const Choice& c) { return lab.predict(sp, c, identity); }, rate[key], fab);
      if (!bp) return bp.error();
      m0[key] = bp->map;
      auto bj = bucket_json(spec, *bp);
      if (!bj) return bj.error();
      json ij = {{"choice", "buckets=" + bp->map.bucket_list()},
                 {"why", "lowest predicted (uncorrected cost model) cycles per request over the initial length mix, "
                         "at most " + std::to_string(o.max_buckets) + " buckets, the longest (" +
                         std::to_string(lens.back()) + ") always in"}};
      ij.update(*bj);
      init[key] = ij;
      continue;
    }
    auto pl = place_gemm(mix, plain(spaces[key]),
                         [&, &sp = spec](const Choice& c) { return lab.predict(sp, c, identity); }, rate[key], fab);
    if (!pl) return pl.error();
    double best = 0;
    const Choice* pick = nullptr;
    for (const auto& c : spaces[key]) {
      if (c.cores != pl->pick) continue;
      auto pc = lab.predict(spec, c, identity);
      if (!pc) return pc.error();
      double e = 0;
      for (auto [seq, wt] : mix) e += wt * double(cdiv(seq, c.rows)) * *pc;
      if (!pick || e < best) best = e, pick = &c;
    }
    m0[key].fallback = *pick;
    init[key] = {{"choice", pick->tag()},
                 {"why", "lowest predicted (uncorrected cost model) cycles over the initial shape mix at batch 1, "
                         "on the cores of the lowest modelled latency"},
                 {"predicted_weighted_cycles", best},
                 {"placements", pl->to_json()}};
  }
  j["initial_mapping"] = init;

  auto serve_with = [&](const std::vector<std::pair<double, const Mapping*>>& epochs) -> Expected<Served> {
    sm.clear_mappings();
    for (auto [at, m] : epochs) sm.swap_mapping(mapper_of(*m), at);
    Served s;
    serve::ServeOptions so;
    so.backend = o.backend;
    so.requests = &s.reqs;
    so.spans = &s.spans;
    if (o.on_progress) so.on_progress = [&](double f) { o.on_progress((stage + f) / stages, phase); };
    auto r = serve::run_serve(w, so, sm);
    if (!r) return r.error();
    s.result = std::move(*r);
    return s;
  };
  auto after_swap = [&](const serve::ServedRequest& r) { return r.arrival_us >= swap_us; };
  auto all = [](const serve::ServedRequest&) { return true; };

  progress("serving with the initial mapping");
  auto base = serve_with({{0.0, &m0}});
  if (!base) return base.error();
  json jb;
  jb["latency"] = latency_json(base->reqs, all);
  jb["after_swap"] = latency_json(base->reqs, after_swap);
  jb["throughput_rps"] = base->result["throughput_rps"];
  // Per-core timelines over a window from the first batch at or after the
  // swap point: 5 ms, or 8 mean batches of the initial mapping if longer.
  double mean_batch_us = 0;
  for (const auto& b : base->spans) mean_batch_us += (b.end_us - b.start_us) / double(base->spans.size());  // per core
  const double tl_len = std::max(5000.0, 8 * mean_batch_us);
  // The layers of a batch under the mapping `after` in force from the swap point (`m0` before it).
  const auto layers_with = [&](const Mapping& after) {
    return [&](const serve::BatchSpan& b) -> Expected<std::pair<std::vector<std::pair<std::string, double>>, int64_t>> {
      const serve::ModelSpec& spec = w.streams[size_t(b.stream)].model;
      const Mapping& mp = b.start_us >= swap_us ? after : m0;
      const Choice& c = mp.at(serve::model_key(spec)).at(b.seq, b.requests);
      auto steps = lab.run_layers(spec, c);
      if (!steps) return steps.error();
      const int64_t runs = spec.bucketed() ? b.requests : cdiv(b.seq * b.requests, c.rows);
      return std::pair{std::move(*steps), runs};
    };
  };
  auto tl0 = timeline_json(base->spans, swap_us, tl_len, layers_with(m0));
  if (!tl0) return tl0.error();
  jb["timeline"] = *tl0;
  const double l0 = jb["after_swap"]["mean_us"].get<double>();
  const double l0_p99 = jb["after_swap"]["p99_us"].get<double>();
  j["baseline"] = jb;

  // Best mapping per shape: exhaustive search over the decision space on
  // measured cycles, for every shape of the workload.
  progress("exhaustive search over " + std::to_string(space.size()) + " choices per model");
  // A bucketed model's length mix after the swap point in a run: each batch's
  // requests at the batch's length (its longest request, which picks the bucket).
  const auto observed_mix = [&](const Served& run, const std::string& key) {
    std::map<int64_t, double> mix;
    for (const auto& b : run.spans)
      if (b.member == 0 && b.start_us >= swap_us && serve::model_key(w.streams[size_t(b.stream)].model) == key)
        mix[b.seq] += double(b.requests);
    return mix;
  };
  // The measured cost of one run of a choice: device parts plus host ops.
  const auto measured_cost = [&](const serve::ModelSpec& spec, const Choice& c) -> Expected<double> {
    auto t = lab.measure(spec, c);
    if (!t) return t.error();
    auto cr = lab.compiled(spec, c);
    if (!cr) return cr.error();
    return double((*t)->measured + (*cr)->host_cycles);
  };
  // A mapping of every model for the shapes after the swap point, each
  // choice costed per run by `cost`: a bucketed model's buckets for the
  // length mix `mix_of(key)`, a gemm chain's choice per (seq, batch) for
  // every seq of `seqs_of(key)` and batch 1..max_batch (the fallback kept).
  using Cost = std::function<Expected<double>(const serve::ModelSpec&, const Choice&)>;
  const auto decide = [&](const std::function<std::map<int64_t, double>(const std::string&)>& mix_of,
                          const std::function<std::set<int64_t>(const std::string&)>& seqs_of, const Cost& cost,
                          Mapping& out, json& buckets) -> Status {
    for (const auto& [key, spec] : models) {
      const serve::ModelSpec& sp = spec;
      if (spec.bucketed()) {
        auto bp = pick_placed(mix_of(key), lens, plain(spaces[key]), o.max_buckets,
                              [&](const Choice& c) { return cost(sp, c); }, rate[key], fab);
        if (!bp) return bp.error();
        out[key] = bp->map;
        auto bj = bucket_json(spec, *bp);
        if (!bj) return bj.error();
        buckets[key] = *bj;
        continue;
      }
      out[key].fallback = m0[key].fallback;
      // The width for the lengths observed (requests per batch length), or
      // every length decided for, equally weighted.
      std::map<int64_t, double> mix = mix_of(key);
      if (mix.empty())
        for (int64_t seq : seqs_of(key)) mix[seq] = 1;
      auto pl = place_gemm(mix, plain(spaces[key]), [&](const Choice& c) { return cost(sp, c); }, rate[key], fab);
      if (!pl) return pl.error();
      buckets[key] = {{"placements", pl->to_json()}};
      for (int64_t seq : seqs_of(key))
        for (int b = 1; b <= w.max_batch; ++b) {
          double best = 0;
          const Choice* pick = nullptr;
          for (const auto& c : spaces[key]) {
            if (c.cores != pl->pick) continue;
            auto pc = cost(spec, c);
            if (!pc) return pc.error();
            const double e = double(cdiv(seq * b, c.rows)) * *pc;
            if (!pick || e < best) best = e, pick = &c;
          }
          out[key].shape[{seq, b}] = *pick;
        }
    }
    return Status::ok();
  };
  const auto base_mix = [&](const std::string& key) { return observed_mix(*base, key); };
  // The oracle: exhaustive search over the decision space on measured
  // cycles, for every shape of the workload (a bucketed model: every bucket
  // set with each bucket's best choice, for the lengths that arrived after
  // the swap point).
  Mapping mbest;
  json best_buckets = json::object();
  LOOM_TRY(decide(
      base_mix,
      [&](const std::string& key) {
        std::set<int64_t> seqs;
        for (const auto& s : w.streams)
          if (serve::model_key(s.model) == key) seqs.insert(s.shapes.values.begin(), s.shapes.values.end());
        return seqs;
      },
      measured_cost, mbest, best_buckets));
  progress("serving with the best plan per shape");
  auto bestrun = serve_with({{0.0, &m0}, {swap_us, &mbest}});
  if (!bestrun) return bestrun.error();
  json jbest;
  jbest["latency"] = latency_json(bestrun->reqs, all);
  jbest["after_swap"] = latency_json(bestrun->reqs, after_swap);
  const double lbest = jbest["after_swap"]["mean_us"].get<double>();
  const double lbest_p99 = jbest["after_swap"]["p99_us"].get<double>();
  if (!best_buckets.empty()) jbest["mapping"] = best_buckets;
  // What the exhaustive search measured: every choice's cycles per run
  // (device parts and host ops), per model, in decision-space order.
  json searched = json::object();
  for (const auto& [key, spec] : models) {
    json a = json::array();
    for (const auto& c : spaces[key]) {
      auto mc = measured_cost(spec, c);
      if (!mc) return mc.error();
      a.push_back({{"choice", c.tag()}, {"cycles", *mc}});
    }
    searched[key] = a;
  }
  jbest["measured"] = searched;
  j["best_per_shape"] = jbest;

  // Attribution, part (a): re-compiling for the shapes observed after the
  // swap point with the offline (uncorrected) cost model, no telemetry. The
  // rounds' gain beyond it is the refit's, part (b).
  progress("re-mapping for the observed shapes with the offline cost model");
  Mapping moff;
  json off_buckets = json::object();
  LOOM_TRY(decide(
      base_mix,
      [&](const std::string& key) {
        std::set<int64_t> seqs;
        for (const auto& r : base->reqs)
          if (after_swap(r) && serve::model_key(w.streams[size_t(r.stream)].model) == key) seqs.insert(r.seq);
        return seqs;
      },
      [&](const serve::ModelSpec& spec, const Choice& c) { return lab.predict(spec, c, identity); }, moff,
      off_buckets));
  auto offrun = serve_with({{0.0, &m0}, {swap_us, &moff}});
  if (!offrun) return offrun.error();
  json joff;
  joff["what"] = "re-compiled for the shapes observed after the swap point with the offline (uncorrected) cost model";
  joff["latency"] = latency_json(offrun->reqs, all);
  joff["after_swap"] = latency_json(offrun->reqs, after_swap);
  if (!off_buckets.empty()) joff["mapping"] = off_buckets;
  const double loff = joff["after_swap"]["mean_us"].get<double>();
  const double loff_p99 = joff["after_swap"]["p99_us"].get<double>();
  joff["gap_recovered_mean"] = l0 - lbest > 0 ? (l0 - loff) / (l0 - lbest) : 1.0;
  joff["gap_recovered_p99"] = l0_p99 - lbest_p99 > 0 ? (l0_p99 - loff_p99) / (l0_p99 - lbest_p99) : 1.0;
  j["offline_recompile"] = joff;

  // The loop.
  std::vector<PlanTelemetry> tel;
  std::set<std::string> measured_tags;
  Calibration cal;  // identity before the first refit
  const compiler::CostParams base_cp = compiler::CostParams::from(*cfg);
  CostFit cfit;  // the compiler's cost parameters: uncorrected before the first refit
  cfit.params = base_cp;
  Mapping prev = m0;
  const Served* last = &*base;
  std::vector<Served> runs;
  runs.reserve(size_t(o.rounds));
  json rounds = json::array();
  bool all_ok = true;
  double recovered_last = 0;
  // The per-layer correction of compiler parameters `cp` summed over a plan.
  const auto corrected = [](const PlanTelemetry& t, const compiler::CostParams& cp, double overhead) {
    double sum = overhead;
    for (const auto& l : t.layers) sum += std::max(0.0, double(l.predicted) + cp.correction(double(l.insns)));
    return sum;
  };
  for (int round = 1; round <= o.rounds; ++round) {
    progress("round " + std::to_string(round) + " of " + std::to_string(o.rounds) +
             ": measure, refit, re-decide, swap, serve");
    // 1. Telemetry of every plan the last run used.
    double new_raw = 0, new_fit = 0;
    int new_plans = 0;
    for (const auto& [key, spec] : models) {
      for (const auto& c : prev[key].plans()) {
        if (measured_tags.count(key + "|" + c.tag())) continue;
        auto t = lab.measure(spec, c);
        if (!t) return t.error();
        // Out of sample: the fit so far predicting a plan it has not seen.
        const double meas = double(std::max<uint64_t>((*t)->measured, 1));
        new_raw += std::fabs(double((*t)->predicted) - meas) / meas;
        new_fit += std::fabs(corrected(**t, cfit.params, cal.overhead) - meas) / meas;
        ++new_plans;
        tel.push_back(**t);
        measured_tags.insert(key + "|" + c.tag());
      }
    }
    // 2. Refit: the compiler's cost parameters (they decide) and, for
    // comparison, a line per layer kind; prediction error per (kind, shape
    // bucket) before (uncorrected) and after.
    const Calibration before = cal;
    cal = refit(tel);
    cfit = fit_cost_params(tel, base_cp);
    const compiler::CostParams& cp = cfit.params;
    std::map<std::pair<std::string, int64_t>, std::array<double, 4>> err;  // n, sum|raw|, sum|params|, sum|line|
    double plan_raw = 0, plan_fit = 0, plan_line = 0;
    for (const auto& t : tel) {
      double line = cal.overhead;
      for (const auto& l : t.layers) {
        auto& e = err[{l.kind, l.rows}];
        const double meas = double(std::max<uint64_t>(l.measured, 1));
        auto f = cal.per_kind.find(l.kind);
        const double fl = f == cal.per_kind.end() ? double(l.predicted) : f->second.apply(double(l.predicted));
        const double fp = std::max(0.0, double(l.predicted) + cp.correction(double(l.insns)));
        e[0] += 1;
        e[1] += std::fabs(double(l.predicted) - meas) / meas;
        e[2] += std::fabs(fp - meas) / meas;
        e[3] += std::fabs(fl - meas) / meas;
        line += fl;
      }
      const double meas = double(std::max<uint64_t>(t.measured, 1));
      plan_raw += std::fabs(double(t.predicted) - meas) / meas;
      plan_fit += std::fabs(corrected(t, cp, cal.overhead) - meas) / meas;
      plan_line += std::fabs(line - meas) / meas;
    }
    json pe = json::array();
    for (const auto& [k, e] : err)
      pe.push_back({{"kind", k.first},
                    {"rows", k.second},
                    {"layers", int64_t(e[0])},
                    {"error_before", e[1] / e[0]},
                    {"error_after", e[2] / e[0]},
                    {"error_after_per_kind_line", e[3] / e[0]}});
    // 3. Re-decide through the compiler: every choice compiled with the
    // refitted parameters; the compiler's own prediction (plus the plan
    // overhead) ranks them. Where the refitted parameters change a decision
    // of the fusion or tiling passes, the plan compiled with them is the
    // candidate (and the change is listed); otherwise the plan is the
    // uncorrected one.
    Mapping next = prev;
    json changed = json::array();
    json recompiled = json::array();  // same rows/fusion/db, the plan compiled with other parameters
    json cchanged = json::array();
    json mapping_now = json::object();  // bucketed models: the buckets deployed
    int compared = 0, plans_changed = 0;
    std::ostringstream cps;
    cps.precision(1);
    cps << std::fixed << "refitted cost parameters (round " << round << ": layer_cycles " << cp.layer_cycles
        << ", insn_cycles ";
    cps.precision(3);
    cps << cp.insn_cycles << ")";
    for (const auto& [key, spec] : models) {
      std::vector<std::pair<Choice, Choice>> cands;  // (mapped choice, choice with the refitted parameters)
      for (const auto& c0 : spaces[key]) {
        Choice c = c0;
        c.params = cp;
        c.params_round = round;
        auto a = lab.compiled(spec, c0);
        if (!a) return a.error();
        auto b = lab.compiled(spec, c);
        if (!b) return b.error();
        const auto d = diff_decisions((*a)->decisions(), (*b)->decisions());
        ++compared;
        cands.push_back({d.empty() ? c0 : c, c});
        if (d.empty()) continue;
        ++plans_changed;
        for (const auto& x : d)
          cchanged.push_back({{"model", key},
                              {"choice", c0.tag()},
                              {"pass", x.pass},
                              {"node", x.node},
                              {"before", x.before},
                              {"after", x.after},
                              {"why", cps.str() + ": the " + x.pass + " pass decides with the corrected predictions"}});
      }
      if (spec.bucketed()) {
        // The buckets re-chosen for the lengths observed after the swap
        // point, each bucket's plan by the compiler's corrected prediction.
        auto bp = pick_placed(observed_mix(*last, key), lens, cands, o.max_buckets,
                              [&, &sp = spec](const Choice& c) { return lab.predict_compiled(sp, c, cal.overhead); },
                              rate[key], fab);
        if (!bp) return bp.error();
        next[key] = bp->map;
        auto bj = bucket_json(spec, *bp);
        if (!bj) return bj.error();
        mapping_now[key] = *bj;
        for (auto [seq, n] : observed_mix(*last, key)) {
          const Choice old = prev[key].at(seq, 1), now = next[key].at(seq, 1);
          if (old == now) continue;
          Choice old_c = old;
          old_c.params = cp;
          old_c.params_round = round;
          auto po = lab.predict_compiled(spec, old_c, cal.overhead);
          auto pb = lab.predict_compiled(spec, old, before.overhead);
          auto pn = lab.predict_compiled(spec, now, cal.overhead);
          if (!po) return po.error();
          if (!pb) return pb.error();
          if (!pn) return pn.error();
          std::ostringstream why;
          why.precision(0);
          why << std::fixed << "buckets " << prev[key].bucket_list() << " -> " << next[key].bucket_list()
              << " for the lengths observed after the swap (padding " << std::setprecision(1) << 100 * bp->padding
              << " %), compiler with the " << cps.str() << std::setprecision(0) << ": " << *po << " cycles with "
              << old.tag() << ", " << *pn << " with " << now.tag();
          changed.push_back({{"model", key},
                             {"seq", seq},
                             {"batch", 1},
                             {"requests", n},
                             {"from", old.tag()},
                             {"to", now.tag()},
                             {"predicted_from_cycles_before_refit", *pb},
                             {"predicted_from_cycles", *po},
                             {"predicted_to_cycles", *pn},
                             {"why", why.str()}});
        }
        continue;
      }
      std::set<int64_t> seqs;
      for (const auto& r : last->reqs)
        if (after_swap(r) && serve::model_key(w.streams[size_t(r.stream)].model) == key) seqs.insert(r.seq);
      std::map<int64_t, double> smix = observed_mix(*last, key);
      if (smix.empty())
        for (int64_t seq : seqs) smix[seq] = 1;
      auto pl = place_gemm(
          smix, cands, [&, &sp = spec](const Choice& c) { return lab.predict_compiled(sp, c, cal.overhead); },
          rate[key], fab);
      if (!pl) return pl.error();
      mapping_now[key] = {{"placements", pl->to_json()}};
      for (int64_t seq : seqs)
        for (int b = 1; b <= w.max_batch; ++b) {
          double best = 0;
          const std::pair<Choice, Choice>* pick = nullptr;
          for (const auto& cc : cands) {
            if (cc.second.cores != pl->pick) continue;
            auto pc = lab.predict_compiled(spec, cc.second, cal.overhead);
            if (!pc) return pc.error();
            const double e = double(cdiv(seq * b, cc.second.rows)) * *pc;
            if (!pick || e < best) best = e, pick = &cc;
          }
          const Choice old = prev[key].at(seq, b);
          next[key].shape[{seq, b}] = pick->first;
          if (old.same_decision(pick->first)) {
            if (!(old == pick->first))
              recompiled.push_back(
                  {{"model", key},
                   {"seq", seq},
                   {"batch", b},
                   {"from", old.tag()},
                   {"to", pick->first.tag()},
                   {"why", pick->first.params
                               ? "same rows, fusion and double buffering; the " + cps.str() +
                                     " change this plan's fusion/tiling decisions (compiler_decisions_changed)"
                               : "same rows, fusion and double buffering; with the " + cps.str() +
                                     " the compiler decides this plan as the uncorrected model does, so the "
                                     "uncorrected plan is used"}});
            continue;
          }
          Choice old_now_c = old;
          old_now_c.params = cp;
          old_now_c.params_round = round;
          auto po = lab.predict_compiled(spec, old_now_c, cal.overhead);
          auto pb = lab.predict_compiled(spec, old, before.overhead);
          if (!po) return po.error();
          if (!pb) return pb.error();
          const int64_t n_old = cdiv(seq * b, old.rows), n_new = cdiv(seq * b, pick->first.rows);
          const double old_now = double(n_old) * *po;
          std::ostringstream why;
          why.precision(0);
          why << std::fixed << "compiler with the " << cps.str() << ": " << n_old << " x " << *po << " = " << old_now
              << " cycles with " << old.tag() << ", " << n_new << " x " << best / double(n_new) << " = " << best
              << " cycles with " << pick->first.tag();
          changed.push_back({{"model", key},
                             {"seq", seq},
                             {"batch", b},
                             {"from", old.tag()},
                             {"to", pick->first.tag()},
                             {"predicted_from_cycles_before_refit", double(n_old) * *pb},
                             {"predicted_from_cycles", old_now},
                             {"predicted_to_cycles", best},
                             {"why", why.str()}});
        }
    }
    // 4. Hot swap into a run that starts with the initial mapping.
    auto r = serve_with({{0.0, &m0}, {swap_us, &next}});
    if (!r) return r.error();
    runs.push_back(std::move(*r));
    const Served& cur = runs.back();
    bool ok = false;
    json sw = swap_check(cur.reqs, swap_us, w.streams.size(), ok);
    all_ok = all_ok && ok;
    json jr;
    jr["round"] = round;
    jr["cost_params"] = {{"layer_cycles", cp.layer_cycles},
                         {"insn_cycles", cp.insn_cycles},
                         {"points", cfit.points},
                         {"insn_cycles_unconstrained", cfit.unconstrained_insn_cycles},
                         {"rms_residual_before_cycles", cfit.rms_before},
                         {"rms_residual_after_cycles", cfit.rms_after}};
    jr["calibration"] = cal.to_json();
    jr["plans_measured"] = tel.size();
    jr["prediction_error"] = pe;
    jr["counters"] = counters_json(tel);
    jr["plan_error_before"] = tel.empty() ? 0.0 : plan_raw / double(tel.size());
    jr["plan_error_after"] = tel.empty() ? 0.0 : plan_fit / double(tel.size());
    jr["plan_error_after_per_kind_line"] = tel.empty() ? 0.0 : plan_line / double(tel.size());
    jr["new_plans"] = new_plans;
    jr["new_plans_error_cost_model"] = new_plans ? new_raw / new_plans : 0.0;
    jr["new_plans_error_previous_fit"] = new_plans ? new_fit / new_plans : 0.0;
    jr["decisions_changed"] = changed;
    if (!mapping_now.empty()) jr["mapping"] = mapping_now;
    jr["plans_recompiled"] = recompiled;
    jr["compiler_plans_compared"] = compared;
    jr["compiler_plans_changed"] = plans_changed;
    jr["compiler_decisions_changed"] = cchanged;
    jr["swap"] = sw;
    jr["latency"] = latency_json(cur.reqs, all);
    jr["after_swap"] = latency_json(cur.reqs, after_swap);
    // The compile profile of the deployed plans beside their telemetry:
    // per layer the offline (uncorrected) prediction and the measured cycles.
    json profile = json::array();
    for (const auto& [key, spec] : models) {
      std::set<std::string> seen;
      for (const auto& c : next[key].plans()) {
        if (!seen.insert(c.tag()).second) continue;
        auto t = lab.measure(spec, c);
        if (!t) return t.error();
        json ls = json::array();
        auto cr = lab.compiled(spec, c);
        if (!cr) return cr.error();
        size_t first = 0;
        for (size_t k = 0; k < (*t)->part_layers.size(); ++k) {
          for (size_t li = first; li < first + (*t)->part_layers[k]; ++li) {
            const auto& l = (*t)->layers[li];
            ls.push_back({{"name", l.name}, {"kind", l.kind}, {"predicted", l.predicted}, {"measured", l.measured}});
          }
          first += (*t)->part_layers[k];
          if ((*t)->part_layers[k] > 0) continue;
          // A pipeline or dynamic part overlaps its layers: measured whole.
          ls.push_back({{"name", whole_part_name(**cr, k)},
                        {"kind", std::string("whole (") + c.placement_tag() + ")"},
                        {"predicted", (*t)->part_predicted[k]},
                        {"measured", (*t)->part_cycles[k]}});
        }
        profile.push_back({{"model", key}, {"choice", c.tag()}, {"layers", ls}});
      }
    }
    jr["profile"] = profile;
    auto tl = timeline_json(cur.spans, swap_us, tl_len, layers_with(next));
    if (!tl) return tl.error();
    jr["timeline"] = *tl;
    const double lk = jr["after_swap"]["mean_us"].get<double>();
    const double lk_p99 = jr["after_swap"]["p99_us"].get<double>();
    recovered_last = l0 - lbest > 0 ? (l0 - lk) / (l0 - lbest) : 1.0;
    // The gain split: (a) re-compiling with the offline model, (b) the refit's
    // parameters and plan overhead on top of (a) (negative: the refit lost).
    jr["attribution"] = {{"gain_us", l0 - lk},
                         {"offline_recompile_us", l0 - loff},
                         {"refit_us", loff - lk},
                         {"gain_p99_us", l0_p99 - lk_p99},
                         {"offline_recompile_p99_us", l0_p99 - loff_p99},
                         {"refit_p99_us", loff_p99 - lk_p99}};
    jr["gap_recovered_mean"] = recovered_last;
    jr["gap_recovered_p99"] = l0_p99 - lbest_p99 > 0 ? (l0_p99 - lk_p99) / (l0_p99 - lbest_p99) : 1.0;
    rounds.push_back(jr);
    prev = std::move(next);
    last = &runs.back();
  }
  j["rounds"] = rounds;
  {
    json fit;
    fit["workload"] = w.source;
    fit["backend"] = o.backend;
    fit["rounds"] = o.rounds;
    fit["layer_samples"] = cfit.points;
    fit["rms_residual_before_cycles"] = cfit.rms_before;
    fit["rms_residual_after_cycles"] = cfit.rms_after;
    j["cost_params"] = json::parse(compiler::cost_params_text(cfit.params, *cfg, fit.dump()));
  }
  json t;
  t["metric"] = "mean latency of requests arriving after the swap point";
  t["baseline_us"] = l0;
  t["best_per_shape_us"] = lbest;
  t["gap_us"] = l0 - lbest;
  t["recovered_after_last_round"] = recovered_last;
  t["target"] = 0.8;
  t["met"] = recovered_last >= 0.8;
  j["target"] = t;
  j["swap_ok"] = all_ok;
  j["backend_runs"] = lab.backend_runs() + sm.backend_runs();
  if (!all_ok) return make_error("loom tune", "a plan swap lost or reordered requests (see the swap check)");
  return j;
}

}  // namespace loom::tune
