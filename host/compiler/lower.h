// Lowering of one layer's tiles (those placed on one core) to instructions.
#pragma once

#include <vector>

#include "compiler/emitter.h"

namespace loom::compiler {

/// Appends the instructions of core `core`'s tiles of layer `l` to `out`,
/// token flags included (balanced within the layer).
Status lower_layer(const CompileState& s, const Layer& l, int core, std::vector<AnyInsn>& out);

}  // namespace loom::compiler
