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
using Mapping = std::map<std::string, ModelMap>;

/// The mapping as the serving simulator asks for it (serve::Mapper).
serve::Mapper mapper_of(Mapping m);

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

/// pick_buckets for every gang width, the width by place(): one request a
/// customer, its service's variation unknown (as exponential); `requests`
/// gives the rate and the inter-arrival variation.
Expected<BucketPick> pick_placed(const LengthMix& mix, const std::vector<int64_t>& lens, const Candidates& cands,
                                 int max_buckets, const ChoiceCost& cost, const Arrivals& requests, const Fabric& f);

/// A gemm chain's or batched model's width: per width, the cost of a batch
/// of `batches` (seq, b) run as ceil(seq * b / rows) runs of its best choice
/// of that width, its mean and variation over the mix; the queue's customers
/// are batches of the mix's mean requests, arriving at `requests`' rate over
/// it, their inter-arrival variation the requests' over it (a batch of b
/// requests of a renewal process).
Expected<Placed> place_gemm(const BatchMix& batches, const Candidates& cands, const ChoiceCost& cost,
                            const Arrivals& requests, const Fabric& f);

}  // namespace loom::tune
