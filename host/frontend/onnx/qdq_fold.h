// QDQ folding (docs/onnx.md): DequantizeLinear -> op -> QuantizeLinear groups
// become the quantized ops the device mapping reads (QLinearConv, QLinearAdd,
// ..., loom.QLinearLookup for elementwise regions, loom.QLinearSoftmax and
// QLinearLayerNorm for row normalizations); value-moving ops between equal
// Q/DQ parameters run on the integers.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"

namespace loom::onnxfe {

/// The value of a constant tensor (an initializer, a folded constant or a
/// bound input), or null for a tensor computed at run time.
using Known = std::function<const Value*(const std::string&)>;

/// Who produces and who reads every tensor of a model (node indices).
struct Uses {
  std::map<std::string, std::vector<size_t>> consumers;
  std::map<std::string, size_t> producer;
};
Uses uses_of(const Model& m);

/// Whether `v` holds integers, all equal (a per-channel zero point that is
/// one per tensor in fact).
bool scalar_int_equal(const Value& v);

/// Folds the QDQ groups of `m` in place; returns how many ops it folded.
/// `unfolded` gets, for each quantized-looking node left in float, why its
/// group did not fold. With `exact_host` the row normalizations stay float.
int fold_qdq(Model& m, const Known& known, bool exact_host, std::map<std::string, std::string>* unfolded);

}  // namespace loom::onnxfe
