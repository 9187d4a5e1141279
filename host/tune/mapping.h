// Mappings of `loom tune` and the searches that pick them: a bucketed
// model's bucket set, a gemm chain's gang width, each from candidates costed
// by a caller-given cost per plan run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "serve/service.h"
#include "tune/placement.h"
#include "tune/tune.h"

namespace loom::tune {

/// A mapping: per model key, a choice per (seq, batch) and a fallback; a
/// bucketed model: its buckets (one choice each, by increasing length), a
/// batch running in the shortest that holds it, with the choice `shape`
/// gives for (that bucket's length, the batch's requests) when it has one
/// (pick_requests), else the bucket's.
struct ModelMap {
  Choice fallback;
  std::map<std::pair<int64_t, int>, Choice> shape;
  std::vector<Choice> buckets;
  int batch_cap = 0;  // the largest batch the server forms (0: the workload's max_batch; decide_caps)
  const Choice& at(int64_t seq, int batch) const {
    for (const auto& b : buckets)
      if (b.rows >= seq) {
        auto it = shape.find({b.rows, batch});
        return it == shape.end() ? b : it->second;
      }
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
using Mapping = std::map<std::string, ModelMap>;

/// The mapping as the serving simulator asks for it (serve::Mapper).
serve::Mapper mapper_of(Mapping m);
/// Its batch caps (serve::BatchCap).
serve::BatchCap cap_of(const Mapping& m);

/// The cost of one run of a choice (cycles), as a search weighs it.
using ChoiceCost = std::function<Expected<double>(const Choice&)>;

/// A length mix: sequence length -> weight.
using LengthMix = std::map<int64_t, double>;
/// A batch mix: (the batch's sequence length, its requests) -> weight.
using BatchMix = std::map<std::pair<int64_t, int>, double>;
/// Each length of `mix` as batches of one request.
BatchMix one_request_batches(const LengthMix& mix);

/// A bucketed model's mapping for a length mix, with what justifies it.
struct BucketPick {
  ModelMap map;
  double expected = 0;  // cost per request over the mix
  double padding = 0;   // padded positions / all positions run, over the mix
  int64_t sets_searched = 0;
  /// pick_placed: every gang width weighed (Placed::to_json).
  nlohmann::ordered_json placements = nlohmann::ordered_json::array();
};

/// A bucketed model's mapping for a length mix (seq -> weight): of every set
/// of at most `max_buckets` of the lengths `lens` (ascending) that holds the
/// longest one, each bucket with its cheapest candidate under `cost`, the set
/// of the lowest expected cycles per request; among the sets within 1 % of
/// it, the one of the fewest buckets (fewer plans to compile and keep).
Expected<BucketPick> pick_buckets(const LengthMix& mix, const std::vector<int64_t>& lens, const Candidates& cands,
                                  int max_buckets, const ChoiceCost& cost);

/// A bucketed model's batch size per bucket: for every bucket of `map` and
/// every batch of b = 1..`max_batch` requests, the requests r one run of the
/// bucket's program holds, of 1, 2, 4, ... and `max_batch`, that costs the
/// batch least: ceil(b / r) runs of the bucket's choice compiled for r
/// requests (the last padded), each run costed by `cost`; the fewer
/// requests a run on a tie. Each pick goes to `map.shape` at (the bucket's
/// length, b).
Status pick_requests(ModelMap& map, int max_batch, const ChoiceCost& cost);

/// What a bucketed model's mapping search weighs: the batches observed (by
/// length and requests), its bucket lengths, the most buckets and requests
/// a batch, and two costs of one run: `cost` of a candidate's costed choice
/// (pick_buckets) and `run_cost` of a mapped choice with other requests per
/// run (pick_requests; the same cost unless the candidates map other plans
/// than they cost).
struct BucketSearch {
  BatchMix batches;
  std::vector<int64_t> lens;
  int max_buckets = 3, max_batch = 1;
  ChoiceCost cost, run_cost;
};

/// For every gang width, pick_buckets over the requests' length mix and
/// pick_requests; the width by place(), its customers the batches of
/// `s.batches`, each costing ceil(b / requests) runs of its choice, arriving
/// at `requests`' rate (their inter-arrival variation the requests' over the
/// mean batch, as place_gemm).
Expected<BucketPick> pick_placed(const BucketSearch& s, const Candidates& cands, const Arrivals& requests,
                                 const Fabric& f);

/// A gemm chain's or batched model's width: per width, the cost of a batch
/// of `batches` (seq, b) run as ceil(seq * b / rows) runs of its best choice
/// of that width, its mean and variation over the mix; the queue's customers
/// are batches of the mix's mean requests, arriving at `requests`' rate over
/// it, their inter-arrival variation the requests' over it (a batch of b
/// requests of a renewal process).
Expected<Placed> place_gemm(const BatchMix& batches, const Candidates& cands, const ChoiceCost& cost,
                            const Arrivals& requests, const Fabric& f);

}  // namespace loom::tune
