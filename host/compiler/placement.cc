// Placement: static data parallelism. Each layer's output tiles go to the
// cores round-robin; a semaphore barrier separates layers.
#include <algorithm>
#include <string>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

class PlacementPass final : public Pass {
 public:
  std::string_view name() const override { return "placement"; }

  Status run(CompileState& s) override {
    int64_t barriers = -1;  // one between consecutive instruction-emitting layers
    for (auto& l : s.layers) {
      l.tiles.clear();
      switch (l.props->kind) {
        case LayerKind::Mac:
          mac_tiles(l);
          break;
        case LayerKind::Pool:
          pool_tiles(l);
          break;
        case LayerKind::Eltwise:
          for (int64_t e = 0; e < l.elems; e += l.tiling.tm)
            l.tiles.push_back({0, 0, e, std::min(l.tiling.tm, l.elems - e), 0, 0});
          break;
        case LayerKind::Alias:
          continue;
      }
      ++barriers;
      std::vector<int64_t> per_core(size_t(s.cores), 0);
      l.core_of_tile.resize(l.tiles.size());
      for (size_t i = 0; i < l.tiles.size(); ++i) {
        l.core_of_tile[i] = int(i % size_t(s.cores));
        ++per_core[size_t(l.core_of_tile[i])];
      }
      std::string counts;
      for (auto c : per_core) counts += (counts.empty() ? "" : "/") + std::to_string(c);
      s.decide(l.name, name(),
               std::to_string(l.tiles.size()) + " tiles round-robin over " + std::to_string(s.cores) + " cores (" +
                   counts + ")");
      bump("tiles", int64_t(l.tiles.size()));
      const int64_t mx = *std::max_element(per_core.begin(), per_core.end());
      const int64_t mn = *std::min_element(per_core.begin(), per_core.end());
      bump("imbalance_tiles", mx - mn);
    }
    set("barriers", std::max<int64_t>(barriers, 0));
    set("cores", s.cores);
    return Status::ok();
  }

 private:
  static void mac_tiles(Layer& l) {
    const MacGeom& g = l.mac;
    const Tiling& t = l.tiling;
    for (int64_t img = 0; img < g.batch; ++img)
      for (int64_t grp = 0; grp < g.groups; ++grp)
        for (int64_t m0 = 0; m0 < g.M(); m0 += t.tm)
          for (int64_t n0 = 0; n0 < g.Ng; n0 += t.tn)
            l.tiles.push_back({img, grp, m0, std::min(t.tm, g.M() - m0), n0, std::min(t.tn, g.Ng - n0)});
  }
  static void pool_tiles(Layer& l) {
    const PoolGeom& g = l.pool;
    const Tiling& t = l.tiling;
    const int64_t M = g.OH * g.OW;
    for (int64_t img = 0; img < g.batch; ++img)
      for (int64_t m0 = 0; m0 < M; m0 += t.tm)
        for (int64_t c0 = 0; c0 < g.C; c0 += t.tn)
          l.tiles.push_back({img, 0, m0, std::min(t.tm, M - m0), c0, std::min(t.tn, g.C - c0)});
  }
};

}  // namespace

std::unique_ptr<Pass> make_placement_pass() { return std::make_unique<PlacementPass>(); }

}  // namespace loom::compiler
