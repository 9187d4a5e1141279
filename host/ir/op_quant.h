// Integer parameters of each op, derived once from the graph's float scales.
// The direct reference (ir/reference.cc) and the compiler's code generator
// both call these, which is what makes compiled plans bit-exact with the
// reference by construction of the contract (and checked by tests).
#pragma once

#include <vector>

#include "common/quant.h"
#include "common/rownorm.h"
#include "common/status.h"
#include "ir/graph.h"

namespace loom::ir {

/// conv2d / gemm: y = clamp(rq(sum (x-x_zp)(w-w_zp) + bias, m[c]) + y_zp, lo, hi)
/// with m[c] = quantize_multiplier(x_scale * w_scale[c] / y_scale).
struct MacQuant {
  int32_t x_zp = 0, w_zp = 0, y_zp = 0;
  std::vector<Multiplier> mult;  // one per output channel (replicated when per-tensor)
  int32_t lo = -128, hi = 127;
  bool even = false;  // rqe instead of rq (Attrs::round_even; POSTOP `even`)
};

/// add (two inputs) and the unary relu/clip (b absent: b.mult == 0):
/// y = clamp(rqs(a-a_zp, ma, b-b_zp, mb) + y_zp, lo, hi), the sum rounded
/// once (requantize_sum): ma and mb share one shift (a.shift == b.shift);
/// mul: y = clamp(rq((a-a_zp)(b-b_zp), ma) + y_zp, lo, hi), ma from
/// a_scale*b_scale/y_scale.
struct EltQuant {
  int32_t a_zp = 0, b_zp = 0, y_zp = 0;
  Multiplier a, b;  // b = {0, 1} for unary ops and mul
  bool mul = false;
  int32_t lo = -128, hi = 127;
};

/// maxpool: y = clamp(max x, lo, hi) (input and output quantization must be
/// equal); avgpool / globalavgpool:
/// y = clamp(rq(sum (x - x_zp), avg) + y_zp, lo, hi), avg = x_scale / (y_scale * window).
struct PoolQuant {
  int32_t x_zp = 0, y_zp = 0;
  int64_t window = 1;
  Multiplier avg;
  int32_t lo = -128, hi = 127;
};

/// softmax / layernorm over the last axis of `n` elements (ROWNORM):
/// softmax's table and multiplier come from x_scale and y_scale
/// (softmax_params in common/rownorm.h); layernorm's channel triples are its
/// params constant and eps its attribute.
struct RowQuant {
  bool ln = false;
  int64_t n = 0;     // row length (the last dimension)
  int64_t rows = 0;  // numel / n
  int32_t x_zp = 0, y_zp = 0;
  SoftmaxParams softmax;
  std::vector<LayerNormChannel> channels;
  uint32_t eps = 0;
  int32_t lo = -128, hi = 127;
};

Expected<MacQuant> mac_quant(const Graph& g, const Node& n);
Expected<RowQuant> row_quant(const Graph& g, const Node& n);
Expected<EltQuant> elt_quant(const Graph& g, const Node& n);
/// Concat's input `k` requantized to the output's quantization (an ELTWISE
/// copy: rq(x - x_zp, x_scale/y_scale) + y_zp, one rounding).
Expected<EltQuant> concat_quant(const Graph& g, const Node& n, size_t k);
Expected<PoolQuant> pool_quant(const Graph& g, const Node& n);

}  // namespace loom::ir
