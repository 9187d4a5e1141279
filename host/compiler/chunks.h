// Chunks of element-wise and row layers: how many elements (or whole rows)
// one tile of a copy, transpose, slice, lookup, add, mul, concat part,
// softmax or layer normalization holds. The tiling pass decides them; the
// passes that weigh such a layer against its removal (fuse-activation,
// fuse-residual's and the concat rescale's separate layers) cost it with the
// same choice.
#pragma once

#include <cstdint>

#include "compiler/cost_model.h"
#include "compiler/pass.h"

namespace loom::compiler {

/// The elements a chunk of element-wise layer `l` holds: as many as the
/// scratchpads take, or about `cap` (never below one whole unit: a DMA run,
/// a broadcast period, a row of a concat slice), rounded down to whole units.
int64_t eltwise_chunk(const CompileState& s, const Layer& l, int64_t cap = kField16);

/// The chunks weighed for a layer, and the largest one's prediction.
struct ChunkChoice {
  int64_t largest = 0;
  uint64_t largest_cycles = 0;
  int candidates = 0;
};

/// The chunk (l.tiling.tm, elements) of element-wise layer `l` the cost
/// model predicts fastest: the largest one (fewest instructions), or one
/// that spreads the layer over k x cores tiles, k = 1, 2, 4 (a move is
/// load-bound on one core; its tiles run on all of them). Sets l.tiling.tm
/// and l.cost.
ChunkChoice best_eltwise_chunk(const CompileState& s, Layer& l);

/// The same for a row layer (softmax, layer normalization) of l.row
/// elements a row, at most `max_rows` rows a chunk.
ChunkChoice best_row_chunk(const CompileState& s, Layer& l, int64_t max_rows);

}  // namespace loom::compiler
