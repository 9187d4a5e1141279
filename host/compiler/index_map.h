// Index maps of data moves, for the graph folds that compose them
// (fold_layout.cc, fold_channels.cc): after a chain of transposes, slices and
// reshapes, element i of the result is element f[i] of the chain's input.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace loom::compiler {

/// f after node `n` (a transpose or slice; a reshape or flatten keeps the
/// order), given f for its input: element i of n's output is f'[i].
inline std::vector<int32_t> after_move(const ir::Graph& g, const ir::Node& n, const std::vector<int32_t>& f) {
  if (n.op != ir::OpKind::Transpose && n.op != ir::OpKind::Slice) return f;
  const auto& x = g.tensor(n.inputs[0]).shape;
  const auto& y = g.tensor(n.outputs[0]).shape;
  std::vector<int64_t> xs(x.size(), 1);
  for (size_t d = x.size(); d-- > 1;) xs[d - 1] = xs[d] * x[d];
  const size_t r = y.size();
  int64_t total = 1;
  for (auto d : y) total *= d;
  std::vector<int64_t> idx(r, 0);
  std::vector<int32_t> out(static_cast<size_t>(total));
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d)
      src +=
          n.op == ir::OpKind::Transpose ? idx[d] * xs[size_t(n.attrs.perm[d])] : (idx[d] + n.attrs.starts[d]) * xs[d];
    out[o] = f[size_t(src)];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < y[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace loom::compiler
