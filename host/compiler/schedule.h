// Streams of the pipeline and dynamic placements (placement.cc decides who
// runs which tile; these emit the instructions and the synchronisation).
#pragma once

#include <vector>

#include "compiler/emitter.h"

namespace loom::compiler {

/// Pipeline: per stage core, per unit: wait for the previous stage's unit,
/// the stage's layers with a barrier (several cores) or FENCE (one) after
/// each, then signal the unit done. Semaphores 2k (barrier of stage k) and
/// 2k+1 (units stage k finished). Fills s.plan.layers and semaphores_used.
Status emit_pipeline(CompileState& s, std::vector<std::vector<AnyInsn>>& streams);

/// Dynamic: every task's instructions (ending with FENCE) into streams[0] in
/// layer order, s.plan.tasks with the dependencies derived from the byte
/// ranges each task reads and writes (read after write, write after read,
/// write after write); the other streams stay empty. Fills s.plan.layers and
/// semaphores_used (one per core, for the runtime's completion counts).
Status emit_tasks(CompileState& s, std::vector<std::vector<AnyInsn>>& streams);

}  // namespace loom::compiler
