// Graphs for the residual-fusion tests: a conv whose output is added to a
// residual with the conv's own output scale (so the add requantizes it by the
// identity) and small weights (so an interval bound proves the conv's clamp
// never binds, which makes folding the add into POSTOP bit-exact).
#pragma once

#include <string>

#include "ir/builder.h"

namespace loom::compiler::test {

/// Sets the conv's weights to {-1, 0, 1} (zero point 0).
inline void small_weights(ir::Graph& g, const std::string& conv, uint64_t seed = 5) {
  ir::TensorInfo& w = g.tensor(conv + ".w");
  w.q.zero_point = 0;
  ir::Rng rng(seed);
  for (int64_t i = 0; i < w.data.numel(); ++i) w.data.i8()[i] = int8_t(rng.range(-1, 1));
}

/// x[1,hw,hw,c] -> conv(k x k, c -> c) -> add(., x) [-> relu]; `small`
/// makes the fold provably exact.
inline void residual_block(ir::GraphBuilder& b, int64_t hw, int64_t c, int64_t k, bool small, bool relu = false) {
  const auto x = b.input("x", {1, hw, hw, c});
  const auto y = b.conv("conv", x, {c, k, k, 1, k / 2, 1});
  if (small) small_weights(b.graph(), "conv");
  const auto& yt = b.graph().tensor(y);
  auto out = b.add("add", y, x, yt.q.scale[0], yt.q.zero_point);
  if (relu) out = b.unary("relu", ir::OpKind::Relu, out);
  b.output(out);
}

/// A residual block whose add has its own output scale (as in ONNX QDQ
/// models): the conv's result is requantized by the add, so only POSTOP's
/// rescale form can fold it.
inline void rescaled_residual_block(ir::GraphBuilder& b, int64_t hw, int64_t c, int64_t k, bool relu) {
  const auto x = b.input("x", {1, hw, hw, c});
  const auto y = b.conv("conv", x, {c, k, k, 1, k / 2, 1});
  auto out = b.add("add", y, x);
  if (relu) out = b.unary("relu", ir::OpKind::Relu, out);
  b.output(out);
}

}  // namespace loom::compiler::test
