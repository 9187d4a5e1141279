// The decision space of `loom tune`: the choices a mapping picks from, and
// what each stands for when compiled.
#include "tune/space.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <vector>

namespace loom::tune {

std::vector<int> doubling_to(int n) {
  std::vector<int> v;
  for (int x = 1; x < n; x *= 2) v.push_back(x);
  v.push_back(std::max(1, n));
  return v;
}

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

std::string Choice::tag() const {
  std::string t = "rows=" + std::to_string(rows) + ",fusion=" + compiler::fusion_name(fusion) +
                  ",db=" + (double_buffer ? "on" : "off");
  if (cores > 1) {
    t += ",cores=" + std::to_string(cores) + ",placement=" + compiler::placement_name(placement);
    if (placement == compiler::Placement::Dynamic) t += ",tpc=" + std::to_string(tasks_per_core);
  }
  if (requests > 1) t += ",req=" + std::to_string(requests);
  return t + (params ? ",cost=r" + std::to_string(params_round) : "");
}

std::string Choice::placement_tag() const {
  if (cores <= 1) return "1 core";
  std::string t = std::to_string(cores) + " cores " + compiler::placement_name(placement);
  if (placement == compiler::Placement::Dynamic) t += " x" + std::to_string(tasks_per_core);
  return t;
}

std::vector<Choice> decision_space(const serve::ModelSpec& m, const std::vector<int64_t>& lengths, int max_cores,
                                   int max_batch) {
  std::vector<Choice> out;
  std::vector<int64_t> rows_of;
  if (m.bucketed() && !lengths.empty()) {
    rows_of = lengths;
  } else if (m.bucketed()) {
    rows_of = m.bucket_lengths();
  } else if (m.kind == serve::ModelSpec::Kind::Onnx) {  // requests per run: powers of two and max_batch
    for (int r : doubling_to(max_batch)) rows_of.push_back(r);
  } else {
    for (int64_t rows = 32; rows <= 1024; rows *= 2) rows_of.push_back(rows);
  }
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
          c.requests = m.bucketed() ? 1 : 0;
          out.push_back(c);
        }
  return out;
}

}  // namespace loom::tune
