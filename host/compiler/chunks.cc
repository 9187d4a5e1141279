// Chunks of element-wise and row layers (see chunks.h).
#include "compiler/chunks.h"

#include <algorithm>
#include <vector>

namespace loom::compiler {
namespace {

/// The largest chunk and those of about k x cores tiles, k = 1, 2, 4
/// (`chunk_for(t)` is the chunk of about t tiles), costed; the fastest wins,
/// the largest among equals.
template <class ChunkFor>
ChunkChoice best_chunk(const CompileState& s, Layer& l, int64_t largest, ChunkFor chunk_for) {
  const CostParams cp = s.cost();
  std::vector<int64_t> cands{largest};
  for (int64_t k : {1, 2, 4}) {
    const int64_t c = chunk_for(k * s.cores);
    if (c >= 1 && c < largest && std::find(cands.begin(), cands.end(), c) == cands.end()) cands.push_back(c);
  }
  ChunkChoice choice;
  choice.largest = largest;
  choice.candidates = int(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    Layer trial = l;
    trial.tiling.tm = cands[i];
    const Cost c = estimate(cp, trial, s.cores, s.budget.slots);
    if (i == 0) choice.largest_cycles = c.cycles;
    if (i == 0 || c.cycles < l.cost.cycles) l.tiling.tm = cands[i], l.cost = c;
  }
  return choice;
}

}  // namespace

int64_t eltwise_chunk(const CompileState& s, const Layer& l, int64_t cap) {
  const Budget& b = s.budget;
  const int64_t operands = l.operands();
  int64_t chunk = std::max<int64_t>(std::min({b.in / operands, b.out, kField16, l.elems}), 1);
  // A lookup's table sits after the chunk in IN.
  if (s.node(l).op == ir::OpKind::Lut) chunk = std::max<int64_t>(std::min<int64_t>(chunk, b.in - 256), 1);
  int64_t unit = 1;
  if (l.permute.on() && l.permute.run() <= chunk) unit = std::max(unit, l.permute.run());
  if (l.repeat && l.repeat <= chunk) unit = std::max(unit, l.repeat);
  if (l.part.on && l.part.width <= chunk) unit = std::max(unit, l.part.width);
  chunk = std::min(chunk, std::max(cap, unit));
  // A transpose's chunks hold whole runs (DMA rows) where one fits.
  if (l.permute.on() && l.permute.run() <= chunk) chunk = chunk / l.permute.run() * l.permute.run();
  // A broadcast operand's chunks hold whole periods (one LOAD of repeated rows).
  if (l.repeat && l.repeat <= chunk) chunk = chunk / l.repeat * l.repeat;
  // A concat part's chunks hold whole rows of its slice (one strided STORE).
  if (l.part.on && l.part.width <= chunk) chunk = std::min(chunk / l.part.width, kField16) * l.part.width;
  return chunk;
}

ChunkChoice best_eltwise_chunk(const CompileState& s, Layer& l) {
  return best_chunk(s, l, eltwise_chunk(s, l),
                    [&](int64_t tiles) { return eltwise_chunk(s, l, ceil_div(l.elems, tiles)); });
}

ChunkChoice best_row_chunk(const CompileState& s, Layer& l, int64_t max_rows) {
  const int64_t rows = l.elems / l.row;
  return best_chunk(s, l, max_rows * l.row,
                    [&](int64_t tiles) { return std::min(max_rows, ceil_div(rows, tiles)) * l.row; });
}

}  // namespace loom::compiler
