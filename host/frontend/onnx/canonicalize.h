// Export artifacts removed from an imported model before anything maps it:
// Identity nodes (the TorchScript exporter's shared initializers) are
// bypassed, and subgraphs of constants (Constant -> QuantizeLinear, Shape of
// a static shape -> Gather -> Unsqueeze -> Concat, ...) are computed once
// with the host ops' own semantics. The model computes exactly what it did.
#pragma once

#include <string>
#include <vector>

#include "frontend/onnx/model.h"

namespace loom::onnxfe {

struct Canonicalized {
  int identities = 0;       // Identity nodes bypassed
  int folded = 0;           // nodes computed at import
  int shapes_inferred = 0;  // outputs whose shape followed from constants folded here
  /// One line for the notes of every compile of the model (empty when nothing changed).
  std::string note() const;
};

/// Rewrites `m` in place. DequantizeLinear nodes of constants are kept (the
/// QDQ folds read a weight's quantization from them), and no fold makes a
/// constant larger than the constants it reads.
Canonicalized canonicalize(Model& m);

}  // namespace loom::onnxfe
