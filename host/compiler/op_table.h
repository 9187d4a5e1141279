// Operator properties the passes consult, kept as one data table instead of
// switches scattered through the passes.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace loom::compiler {

/// How a layer is lowered.
enum class LayerKind : uint8_t {
  Mac,      // implicit GEMM + POSTOP (conv2d, gemm)
  Eltwise,  // ELTWISE over chunks (add, relu, clip; transpose: gathered by DMA; softmax, layernorm: ROWNORM over whole
            // rows)
  Pool,     // gathered windows + POOL
  Alias,    // no instructions: the output aliases the input buffer
};

struct OpProps {
  ir::OpKind op;
  const char* name;
  LayerKind kind;
  bool takes_activation;  // an activation (relu/clip) may fold into it
  bool is_activation;     // relu/clip: may fold into its producer
  bool pool_avg;          // pool: average (else max)
};

/// Properties of `op`, or nullptr when the fabric does not run it.
const OpProps* op_props(ir::OpKind op);

}  // namespace loom::compiler
