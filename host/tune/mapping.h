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

/// pick_buckets for every gang width, the width by place().
Expected<BucketPick> pick_placed(const LengthMix& mix, const std::vector<int64_t>& lens, const Candidates& cands,
                                 int max_buckets, const ChoiceCost& cost, double lambda_per_us, const Fabric& f);

/// A gemm chain's width: per width, the cost of a request of each length of
/// `mix` alone (batch 1) with its best choice of that width.
Expected<Placed> place_gemm(const LengthMix& mix, const Candidates& cands, const ChoiceCost& cost, double lambda_per_us,
                            const Fabric& f);

}  // namespace loom::tune
