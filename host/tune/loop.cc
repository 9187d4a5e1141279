// The phases of `loom tune`'s closed loop before its rounds: the checked
// setup, the initial mapping, the baseline run, the best mapping per shape
// and the offline re-map (docs/tuning.md); the rounds are in round.cc.
#include "tune/loop.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "tune/space.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

/// `v` in single quotes, for a message.
std::string quoted(int64_t v) {
  std::string q(1, '\'');
  q += std::to_string(v);
  q += '\'';
  return q;
}

/// Each bucketed model's bucket lengths (by model key), ascending: the ones
/// given, else the zoo's (zoo:bert), else the model's ladder from the bucket
/// of its shortest request to that of its longest (no other length can win);
/// the longest must hold every request.
Expected<std::map<std::string, std::vector<int64_t>>> bucket_lengths(const serve::Workload& w, const TuneOptions& o) {
  std::map<std::string, std::vector<int64_t>> out;
  std::vector<int64_t> given = o.bucket_lengths;
  std::sort(given.begin(), given.end());
  for (size_t k = 1; k < given.size(); ++k)
    if (given[k] == given[k - 1]) return make_error("--bucket-lengths", quoted(given[k]) + " is given twice");
  for (const auto& s : w.streams) {
    if (!s.model.bucketed()) continue;
    std::vector<int64_t> seqs = s.shapes.values;
    for (int64_t q : s.arrival.trace_seq)
      if (q > 0) seqs.push_back(q);
    const int64_t shortest = *std::min_element(seqs.begin(), seqs.end());
    const int64_t longest = *std::max_element(seqs.begin(), seqs.end());
    std::vector<int64_t> lens = given;
    for (int64_t len : given)
      if (!s.model.bucket_allowed(len)) {
        return make_error("--bucket-lengths",
                          quoted(len) + " is not a length of " + s.model.name + " (" + s.model.allowed_lengths() + ")");
      }
    if (lens.empty()) {
      lens = s.model.bucket_lengths();
      if (s.model.zoo_name.empty())
        lens.erase(std::remove_if(
                       lens.begin(), lens.end(),
                       [&](int64_t l) { return l < s.model.bucket_of(shortest) || l > s.model.bucket_of(longest); }),
                   lens.end());
    }
    if (lens.empty() || longest > lens.back())
      return make_error("--bucket-lengths", "the longest bucket (" + std::to_string(lens.empty() ? 0 : lens.back()) +
                                                ") is shorter than the longest request of stream '" + s.name + "' (" +
                                                std::to_string(longest) + ")");
    auto& have = out[serve::model_key(s.model)];
    have.insert(have.end(), lens.begin(), lens.end());
    std::sort(have.begin(), have.end());
    have.erase(std::unique(have.begin(), have.end()), have.end());
  }
  return out;
}

/// The models the streams serve, by model key: gemm chains and bucketed models only.
Expected<std::map<std::string, serve::ModelSpec>> models_of(const serve::Workload& w) {
  std::map<std::string, serve::ModelSpec> models;
  for (const auto& s : w.streams) {
    if (s.model.kind == serve::ModelSpec::Kind::Graph)
      return make_error(w.source + ": stream '" + s.name + "'",
                        "loom tune maps gemm_chain models and ONNX models (zoo or file: with a batch dimension, or "
                        "a symbolic dimension given a seq_len distribution); '" +
                            s.model.name + "' is a .json graph of one fixed shape");
    if (s.model.cores_per_batch > 1)
      return make_error(w.source + ": stream '" + s.name + "'",
                        "cores_per_batch is loom serve's; loom tune decides the cores per batch itself "
                        "(--max-cores-per-batch)");
    models[serve::model_key(s.model)] = s.model;
  }
  return models;
}

/// Every choice as its own candidate (mapped as costed).
Candidates plain(const std::vector<Choice>& v) {
  Candidates out;
  for (const auto& c : v) out.push_back({c, c});
  return out;
}

}  // namespace

Expected<Setup> check_setup(const serve::Workload& w_in, const TuneOptions& o) {
  Setup s;
  // Requests of a stream start in arrival order (deadline batching without
  // shape grouping), so the swap check's order test is about the swap alone.
  s.w = w_in;
  s.w.shape_grouping = false;
  const serve::Workload& w = s.w;
  s.cfg = spec::find_config(w.config);
  if (!s.cfg) return make_error(w.source + ": field 'config'", "unknown configuration '" + w.config + "'");
  const spec::HwConfig& cfg = *s.cfg;
  if (o.rounds < 1 || o.rounds > 10) return make_error("--rounds", "must be in 1..10");
  s.max_cores = o.max_cores_per_batch == -1 ? int(cfg.cores) : o.max_cores_per_batch;
  if (s.max_cores < 1 || s.max_cores > int(cfg.cores))
    return make_error("--max-cores-per-batch", "must be in 1.." + std::to_string(cfg.cores) + " (config '" + w.config +
                                                   "' has " + std::to_string(cfg.cores) + " cores)");
  if (o.max_buckets < 1 || o.max_buckets > kMaxBuckets)
    return make_error("--max-buckets", "must be in 1.." + std::to_string(kMaxBuckets));
  auto lens = bucket_lengths(w, o);
  if (!lens) return lens.error();
  s.lens = std::move(*lens);
  auto models = models_of(w);
  if (!models) return models.error();
  s.models = std::move(*models);
  s.fab = Fabric{int(cfg.cores), double(cfg.clock_mhz)};
  s.swap_ms = o.swap_at_ms;
  if (s.swap_ms < 0) {
    s.swap_ms = w.duration_ms / 2;
    for (const auto& st : w.streams) {
      if (!st.shapes.drift.empty()) s.swap_ms = std::min(s.swap_ms, st.shapes.drift.front().at_ms);
      if (!st.arrival.rate_drift.empty()) s.swap_ms = std::min(s.swap_ms, st.arrival.rate_drift.front().at_ms);
    }
  }
  if (s.swap_ms >= w.duration_ms)
    return make_error("--swap-at-ms",
                      "must be below the workload's duration_ms (" + std::to_string(w.duration_ms) + ")");
  s.swap_us = s.swap_ms * 1000.0;
  // Each model's arrival rate before the swap point (requests per us): the
  // initial mapping's placement queue (place()). Mappings for after the swap
  // take the arrivals observed after it (Loop::observed_arrivals).
  auto counts = serve::arrival_counts(w, 1.0, 0.0, s.swap_us);
  if (!counts) return counts.error();
  for (size_t i = 0; i < w.streams.size(); ++i)
    s.rate0[serve::model_key(w.streams[i].model)] += double((*counts)[i]) / std::max(s.swap_us, 1.0);
  return s;
}

Loop::Loop(Setup s, const TuneOptions& o)
    : s_(std::move(s)),
      o_(o),
      sm_(*s_.cfg, o.backend, o.cache_dir, o.device),
      lab_(sm_),
      stages_(4.0 + double(o.rounds)),
      base_cp_(compiler::CostParams::from(*s_.cfg)) {
  if (o_.zoo_builder) sm_.set_zoo_builder(o_.zoo_builder);
  // Each service time measured on the backend (a long simulation on rtl) is
  // shown within the phase that needs it.
  if (o_.on_progress)
    sm_.set_on_measure([this](const std::string& what, bool) {
      o_.on_progress(at_, phase_ + "; measuring on " + o_.backend + ": " + what);
    });
  for (const auto& [key, spec] : s_.models)
    spaces_[key] = decision_space(spec, lens_of(key), s_.max_cores, s_.w.max_batch);
  cfit_.params = base_cp_;
  runs_.reserve(size_t(o.rounds));
}

Status Loop::open_device() {
  if (auto d = sm_.device(); !d) return d.error();
  // An ONNX model that is not bucketed is mapped along its batch dimension:
  // one without (a fixed shape) leaves nothing to map.
  for (const auto& [key, spec] : s_.models) {
    if (spec.kind != serve::ModelSpec::Kind::Onnx || spec.bucketed()) continue;
    auto b = sm_.batchable(spec);
    if (!b) return b.error();
    if (!*b)
      return make_error(s_.w.source + ": model " + spec.name,
                        "has one fixed shape: no batch dimension (dimension 0 of every input 1 or symbolic) and no "
                        "seq_len over a symbolic dimension, so loom tune has nothing to map");
  }
  return Status::ok();
}

json Loop::header() const {
  const auto& space = spaces_.begin()->second;  // the report's list (the first model's)
  json j;
  j["kind"] = "tune";
  j["workload"] = s_.w.source;
  j["backend"] = o_.backend;
  j["config"] = s_.w.config;
  j["seed"] = s_.w.seed;
  j["rounds_requested"] = o_.rounds;
  j["swap_at_ms"] = s_.swap_ms;
  j["max_buckets"] = o_.max_buckets;
  j["max_cores_per_batch"] = s_.max_cores;
  j["batch_cap"] = o_.decide_batch_cap ? "decide" : "workload";
  if (!s_.lens.empty()) {  // every bucketed model's, ascending
    std::vector<int64_t> all;
    for (const auto& [key, lens] : s_.lens) all.insert(all.end(), lens.begin(), lens.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    j["bucket_lengths"] = all;
  }
  json ds = json::array();
  for (const auto& c : space) ds.push_back(c.tag());
  j["decision_space"] = ds;
  return j;
}

void Loop::progress(const std::string& phase) {
  ++stage_;
  phase_ = phase;
  if (o_.on_progress) o_.on_progress(at_ = stage_ / stages_, phase_);
}

Expected<Served> Loop::serve_with(const Epochs& epochs, const serve::Workload* w, double from, double to) {
  sm_.clear_mappings();
  for (auto [at, m] : epochs) sm_.swap_mapping(mapper_of(*m), at, cap_of(*m));
  Served s;
  serve::ServeOptions so;
  so.backend = o_.backend;
  so.requests = &s.reqs;
  so.spans = &s.spans;
  if (o_.on_progress && !w)  // a trial run (decide_caps) moves no progress bar back
    so.on_progress = [&](double f) { o_.on_progress(at_ = (stage_ + from + f * (to - from)) / stages_, phase_); };
  auto r = serve::run_serve(w ? *w : s_.w, so, sm_);
  if (!r) return r.error();
  s.result = std::move(*r);
  return s;
}

Expected<serve::LatencySummary> Loop::add_latency(json& j, const std::vector<serve::ServedRequest>& reqs,
                                                  const std::string& run) const {
  j["latency"] = latency_json(latency_of(reqs, [](const serve::ServedRequest&) { return true; }));
  serve::LatencySummary after =
      latency_of(reqs, [&](const serve::ServedRequest& r) { return r.arrival_us >= s_.swap_us; });
  j["after_swap"] = latency_json(after);
  // Where the latency after the swap point went, per stream (the tail's causes before and after each change).
  json attribution = json::array();
  for (size_t si = 0; si < s_.w.streams.size(); ++si) {
    std::vector<serve::LatencyParts> parts;
    for (const auto& r : reqs)
      if (size_t(r.stream) == si && r.arrival_us >= s_.swap_us && !r.dropped && r.done_us >= 0)
        parts.push_back(r.parts);
    attribution.push_back(
        {{"stream", s_.w.streams[si].name}, {"attribution", serve::LatencyAttribution::of(parts).to_json()}});
  }
  j["after_swap_attribution"] = attribution;
  if (!after.count) {
    // Every comparison of the loop is after the swap point: refused, never a 0 or null in the result.
    char at[32];
    std::snprintf(at, sizeof at, "%.3g ms", s_.swap_us / 1000.0);
    return make_error("--swap-at-ms", "no request of the " + run + " completes after the swap point (" + at +
                                          "), so there is nothing to compare; swap earlier or run longer");
  }
  return after;
}

std::function<Expected<BatchLayers>(const serve::BatchSpan&)> Loop::layers_with(const Mapping& after) {
  return [this, &after](const serve::BatchSpan& b) -> Expected<BatchLayers> {
    const serve::ModelSpec& spec = s_.w.streams[size_t(b.stream)].model;
    const Mapping& mp = b.start_us >= s_.swap_us ? after : m0_;
    const Choice& c = mp.at(serve::model_key(spec)).at(b.seq, b.requests);
    auto steps = lab_.run_layers(spec, c);
    if (!steps) return steps.error();
    const int64_t runs = spec.bucketed() ? cdiv(b.requests, std::max(c.requests, 1)) : cdiv(b.seq * b.requests, c.rows);
    return std::pair{std::move(*steps), runs};
  };
}

LengthMix Loop::initial_mix(const std::string& key) const {
  // The weights at time 0, or for a trace that gives lengths, the lengths of
  // its arrivals before the swap point (scaled to the same total weight).
  LengthMix mix;
  for (const auto& s : s_.w.streams) {
    if (serve::model_key(s.model) != key) continue;
    double total = 0;
    for (double x : s.shapes.weights) total += x;
    std::map<int64_t, double> early;
    double n = 0;
    for (size_t i = 0; i < s.arrival.trace_seq.size() && i < s.arrival.trace_ms.size(); ++i)
      if (s.arrival.trace_seq[i] > 0 && s.arrival.trace_ms[i] < s_.swap_ms) early[s.arrival.trace_seq[i]] += 1, n += 1;
    if (n > 0)
      for (auto [seq, c] : early) mix[seq] += c / n * total;
    else
      for (size_t k = 0; k < s.shapes.values.size(); ++k) mix[s.shapes.values[k]] += s.shapes.weights[k];
  }
  return mix;
}

std::set<int64_t> Loop::observed_seqs(const Served& run, const std::string& key) const {
  std::set<int64_t> seqs;
  for (const auto& r : run.reqs)
    if (r.arrival_us >= s_.swap_us && serve::model_key(s_.w.streams[size_t(r.stream)].model) == key) seqs.insert(r.seq);
  return seqs;
}

BatchMix Loop::observed_batches(const Served& run, const std::string& key, const std::set<int64_t>& seqs) const {
  BatchMix m;
  for (const auto& b : run.spans)
    if (b.member == 0 && b.start_us >= s_.swap_us && serve::model_key(s_.w.streams[size_t(b.stream)].model) == key)
      m[{b.seq, b.requests}] += 1;
  if (m.empty())
    for (int64_t seq : seqs) m[{seq, 1}] = 1;
  return m;
}

Arrivals Loop::observed_arrivals(const Served& run, const std::string& key) const {
  std::vector<double> t;
  for (const auto& r : run.reqs)
    if (r.arrival_us >= s_.swap_us && serve::model_key(s_.w.streams[size_t(r.stream)].model) == key)
      t.push_back(r.arrival_us);
  Arrivals a;
  a.requests_per_us = double(t.size()) / std::max(s_.w.duration_ms * 1000.0 - s_.swap_us, 1.0);
  if (t.size() < 3) return a;
  std::sort(t.begin(), t.end());
  double m = 0, m2 = 0;
  for (size_t i = 1; i < t.size(); ++i) m += t[i] - t[i - 1], m2 += (t[i] - t[i - 1]) * (t[i] - t[i - 1]);
  const double n = double(t.size() - 1);
  m /= n, m2 /= n;
  if (m > 0) a.scv = std::max(0.0, m2 / (m * m) - 1);
  return a;
}

std::set<int64_t> Loop::workload_seqs(const std::string& key) const {
  std::set<int64_t> seqs;
  for (const auto& s : s_.w.streams)
    if (serve::model_key(s.model) == key) seqs.insert(s.shapes.values.begin(), s.shapes.values.end());
  return seqs;
}

Expected<json> Loop::bucket_json(const serve::ModelSpec& spec, const BucketPick& bp) {
  // Each bucket's programs: one per number of requests a run holds.
  double compile_ms = 0;
  std::set<std::string> plans;
  json bs = json::array();
  for (const auto& c : bp.map.buckets) {
    json per_run = json::array();
    for (int b = 1; b <= s_.w.max_batch; ++b) {
      const Choice& cb = bp.map.at(c.rows, b);
      per_run.push_back(cb.requests);
      if (!plans.insert(cb.tag()).second) continue;
      auto cr = lab_.compiled(spec, cb);
      if (!cr) return cr.error();
      compile_ms += lab_.compile_ms(spec, cb);
    }
    bs.push_back({{"seq", c.rows}, {"choice", c.tag()}, {"requests_per_run", per_run}});
  }
  return json{{"buckets", bs},
              {"cores", bp.map.buckets.empty() ? 1 : bp.map.buckets.front().cores},
              {"placements", bp.placements},
              {"plans", plans.size()},
              {"padding", bp.padding},
              {"expected_cycles_per_request", bp.expected},
              {"compile_ms", compile_ms},
              {"bucket_sets_searched", bp.sets_searched}};
}

Expected<json> Loop::initial_mapping() {
  // One plan per model, chosen by the uncorrected cost model for the shape
  // mix at time 0 (batch 1).
  json init = json::object();
  const Calibration identity;
  for (const auto& [key, spec] : s_.models) {
    const LengthMix mix = initial_mix(key);
    const ChoiceCost predicted = [&, &sp = spec](const Choice& c) { return lab_.predict(sp, c, identity); };
    if (spec.bucketed()) {
      const BucketSearch search{one_request_batches(mix), lens_of(key), o_.max_buckets,
                                s_.w.max_batch,           predicted,    predicted};
      auto bp = pick_placed(search, plain(spaces_[key]), Arrivals{s_.rate0[key], 1, 1}, s_.fab);
      if (!bp) return bp.error();
      m0_[key] = bp->map;
      auto bj = bucket_json(spec, *bp);
      if (!bj) return bj.error();
      json ij = {{"choice", "buckets=" + bp->map.bucket_list()},
                 {"why",
                  "lowest predicted (uncorrected cost model) cycles per request over the initial length mix, "
                  "at most " +
                      std::to_string(o_.max_buckets) + " buckets, the longest (" + std::to_string(lens_of(key).back()) +
                      ") always in; per bucket and batch size, the requests per run of the lowest predicted "
                      "cycles a batch"}};
      ij.update(*bj);
      init[key] = ij;
      continue;
    }
    auto pl =
        place_gemm(one_request_batches(mix), plain(spaces_[key]), predicted, Arrivals{s_.rate0[key], 1, 1}, s_.fab);
    if (!pl) return pl.error();
    double best = 0;
    const Choice* pick = nullptr;
    for (const auto& c : spaces_[key]) {
      if (c.cores != pl->pick) continue;
      auto pc = lab_.predict(spec, c, identity);
      if (!pc) return pc.error();
      double e = 0;
      for (auto [seq, wt] : mix) e += wt * double(cdiv(seq, c.rows)) * *pc;
      if (!pick || e < best) best = e, pick = &c;
    }
    m0_[key].fallback = *pick;
    init[key] = {{"choice", pick->tag()},
                 {"why",
                  "lowest predicted (uncorrected cost model) cycles over the initial shape mix at batch 1, "
                  "on the cores of the lowest modelled latency"},
                 {"predicted_weighted_cycles", best},
                 {"placements", pl->to_json()}};
  }
  prev_ = m0_;
  return init;
}

Expected<json> Loop::serve_baseline() {
  progress("serving with the initial mapping");
  auto base = serve_with({{0.0, &m0_}});
  if (!base) return base.error();
  base_ = std::move(*base);
  last_ = &base_;
  json jb;
  auto l0 = add_latency(jb, base_.reqs, "run with the initial mapping");
  if (!l0) return l0.error();
  l0_ = std::move(*l0);
  jb["throughput_rps"] = base_.result.throughput_rps;
  // Per-core timelines over a window from the first batch at or after the
  // swap point: 5 ms, or 8 mean batches of the initial mapping if longer.
  double mean_batch_us = 0;
  for (const auto& b : base_.spans) mean_batch_us += (b.end_us - b.start_us) / double(base_.spans.size());  // per core
  tl_len_ = std::max(5000.0, 8 * mean_batch_us);
  auto tl0 = timeline_json(base_.spans, s_.swap_us, tl_len_, layers_with(m0_));
  if (!tl0) return tl0.error();
  jb["timeline"] = *tl0;
  return jb;
}

Expected<double> Loop::measured_cost(const serve::ModelSpec& spec, const Choice& c) {
  auto t = lab_.measure(spec, c);
  if (!t) return t.error();
  auto cr = lab_.compiled(spec, c);
  if (!cr) return cr.error();
  return double((*t)->measured + lab_.host_cycles(**cr));
}

Status Loop::decide(const Served& seen, const SeqsOf& seqs_of, const Cost& cost, Mapping& out, json& buckets) {
  // A bucketed model: its buckets for the length mix observed, and the
  // requests per run for each bucket and batch size; a gemm chain
  // or batched model: a choice per (seq, batch) for every seq of
  // `seqs_of(key)` and batch 1..max_batch (the fallback kept).
  for (const auto& [key, spec] : s_.models) {
    const serve::ModelSpec& sp = spec;
    const ChoiceCost cost_of = [&](const Choice& c) { return cost(sp, c); };
    if (spec.bucketed()) {
      const BucketSearch search{
          observed_batches(seen, key, {}), lens_of(key), o_.max_buckets, s_.w.max_batch, cost_of, cost_of};
      auto bp = pick_placed(search, plain(spaces_[key]), observed_arrivals(seen, key), s_.fab);
      if (!bp) return bp.error();
      out[key] = bp->map;
      auto bj = bucket_json(spec, *bp);
      if (!bj) return bj.error();
      buckets[key] = *bj;
      continue;
    }
    out[key].fallback = m0_[key].fallback;
    auto pl = place_gemm(observed_batches(seen, key, seqs_of(key)), plain(spaces_[key]), cost_of,
                         observed_arrivals(seen, key), s_.fab);
    if (!pl) return pl.error();
    buckets[key] = {{"placements", pl->to_json()}};
    for (int64_t seq : seqs_of(key))
      for (int b = 1; b <= s_.w.max_batch; ++b) {
        double best = 0;
        const Choice* pick = nullptr;
        for (const auto& c : spaces_[key]) {
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
}

Expected<json> Loop::search_best_per_shape() {
  // Exhaustive search over the decision space on measured cycles, for every
  // shape of the workload (a bucketed model: every bucket set with each
  // bucket's best choice, for the lengths that arrived after the swap point).
  progress("exhaustive search over " + std::to_string(spaces_.begin()->second.size()) + " choices per model");
  // The phase advances with the choices measured (compiled and run on the
  // backend, or read from the cache), of all models' choices.
  size_t total = 0;
  for (const auto& [key, space] : spaces_) total += space.size();
  std::set<std::string> seen;
  const auto searched_cost = [&](const serve::ModelSpec& spec, const Choice& c) -> Expected<double> {
    auto r = measured_cost(spec, c);
    if (r && seen.insert(key_of(spec, c)).second && o_.on_progress)
      o_.on_progress(at_ = (stage_ + double(seen.size()) / double(std::max<size_t>(total, 1))) / stages_,
                     phase_ + ": " + std::to_string(seen.size()) + " of " + std::to_string(total) + " measured");
    return r;
  };
  Mapping mbest;
  json best_buckets = json::object();
  LOOM_TRY(decide(
      base_, [&](const std::string& key) { return workload_seqs(key); }, searched_cost, mbest, best_buckets));
  LOOM_TRY(cap_mapping(mbest, best_buckets, nullptr));
  progress("serving with the best plan per shape");
  auto bestrun = serve_with({{0.0, &m0_}, {s_.swap_us, &mbest}});
  if (!bestrun) return bestrun.error();
  json jbest;
  auto lbest = add_latency(jbest, bestrun->reqs, "run with the best plan per shape");
  if (!lbest) return lbest.error();
  lbest_ = std::move(*lbest);
  if (!best_buckets.empty()) jbest["mapping"] = best_buckets;
  // What the exhaustive search measured: every choice's cycles per run
  // (device parts and host ops), per model, in decision-space order.
  json searched = json::object();
  for (const auto& [key, spec] : s_.models) {
    json a = json::array();
    for (const auto& c : spaces_[key]) {
      auto mc = measured_cost(spec, c);
      if (!mc) return mc.error();
      a.push_back({{"choice", c.tag()}, {"cycles", *mc}});
    }
    searched[key] = a;
  }
  jbest["measured"] = searched;
  return jbest;
}

Expected<json> Loop::recompile_offline() {
  // Attribution, part (a): re-compiling for the shapes observed after the
  // swap point with the offline (uncorrected) cost model, no telemetry. The
  // rounds' gain beyond it is the refit's, part (b).
  progress("re-mapping for the observed shapes with the offline cost model");
  Mapping moff;
  json off_buckets = json::object();
  const Calibration identity;
  LOOM_TRY(decide(
      base_, [&](const std::string& key) { return observed_seqs(base_, key); },
      [&](const serve::ModelSpec& spec, const Choice& c) { return lab_.predict(spec, c, identity); }, moff,
      off_buckets));
  const double half = o_.decide_batch_cap ? 0.5 : 1.0;  // the phase's share of the first run
  auto offrun = serve_with({{0.0, &m0_}, {s_.swap_us, &moff}}, nullptr, 0, half);
  if (!offrun) return offrun.error();
  json joff;
  joff["what"] = "re-compiled for the shapes observed after the swap point with the offline (uncorrected) cost model";
  auto loff = add_latency(joff, offrun->reqs, "offline re-mapped run");
  if (!loff) return loff.error();
  loff_ = std::move(*loff);
  joff["gap_recovered_mean"] = json_of(gap_recovered(l0_.mean, lbest_.mean, loff_.mean));
  joff["gap_recovered_p99"] = json_of(gap_recovered(l0_.p99, lbest_.p99, loff_.p99));
  // Part (b): the same mapping under the batch caps the loop decides.
  lcap_ = loff_;
  LOOM_TRY(cap_mapping(moff, off_buckets, nullptr));
  if (o_.decide_batch_cap) {
    auto caprun = serve_with({{0.0, &m0_}, {s_.swap_us, &moff}}, nullptr, half, 1);
    if (!caprun) return caprun.error();
    json jcap;
    auto lcap = add_latency(jcap, caprun->reqs, "offline re-mapped run under the batch caps");
    if (!lcap) return lcap.error();
    lcap_ = std::move(*lcap);
    jcap["gap_recovered_mean"] = json_of(gap_recovered(l0_.mean, lbest_.mean, lcap_.mean));
    jcap["gap_recovered_p99"] = json_of(gap_recovered(l0_.p99, lbest_.p99, lcap_.p99));
    joff["with_batch_cap"] = jcap;
  }
  if (!off_buckets.empty()) joff["mapping"] = off_buckets;
  return joff;
}

json Loop::cost_params_file() const {
  json fit;
  fit["workload"] = s_.w.source;
  fit["backend"] = o_.backend;
  fit["rounds"] = o_.rounds;
  fit["layer_samples"] = cfit_.points;
  fit["rms_residual_before_cycles"] = cfit_.rms_before;
  fit["rms_residual_after_cycles"] = cfit_.rms_after;
  return json::parse(compiler::cost_params_text(cfit_.params, *s_.cfg, fit.dump()));
}

TuneResult Loop::figures() const {
  TuneResult r;
  r.swap_at_ms = s_.swap_ms;
  r.rounds_requested = o_.rounds;
  r.baseline_us = l0_.mean;
  r.best_per_shape_us = lbest_.mean;
  r.offline_mean_us = loff_.mean;
  r.offline_capped_mean_us = lcap_.mean;
  r.offline_gap_recovered_mean = gap_recovered(l0_.mean, lbest_.mean, loff_.mean);
  r.target_met = recovered_last_ && *recovered_last_ >= 0.8;
  r.rounds = rounds_;
  return r;
}

json Loop::target() const {
  json t;
  t["metric"] = "mean latency of requests arriving after the swap point";
  t["baseline_us"] = json_of(l0_.mean);
  t["best_per_shape_us"] = json_of(lbest_.mean);
  t["gap_us"] = minus(l0_.mean, lbest_.mean);
  t["recovered_after_last_round"] = json_of(recovered_last_);
  t["target"] = 0.8;
  t["met"] = recovered_last_ && *recovered_last_ >= 0.8;
  return t;
}

}  // namespace loom::tune
