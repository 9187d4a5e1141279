// Seeded constrained-random multi-core command streams, packaged as plans so
// that runtime::execute can run the same program on any backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "loom/spec_gen.h"
#include "plan/plan.h"

namespace loom::random_streams {

/// Knobs of the generator; the defaults keep a stream to a few thousand
/// fabric cycles on `tiny`.
struct GenOptions {
  unsigned min_jobs = 3;  // load/compute/store jobs per core
  unsigned max_jobs = 8;
  unsigned max_barriers = 3;  // cross-core SEM_SIGNAL/SEM_WAIT barriers
  bool control_noise = true;  // FENCE, NOP (with ignored flags), lone SEM_SIGNAL/SEM_WAIT
  /// LOADs whose scratchpad rows overlap (sp_stride < cols): later rows win.
  bool overlapping_load_rows = true;
};

/// A generated program: the plan (one stream per core, device addresses
/// relative to the plan base) and the input tensors it expects.
struct Program {
  uint64_t seed = 0;
  plan::Plan plan;
  std::map<std::string, Tensor> inputs;
};

/// Deterministic in (seed, cfg, opt).
Program generate(uint64_t seed, const spec::HwConfig& cfg, const GenOptions& opt = {});

/// Static legality: every field fits (invalid_field()), control instructions
/// carry no token flags, every pop follows a push of its queue in program
/// order and every queue is empty at END, END closes every stream, semaphore
/// ids are below the configuration's count. Empty when legal.
std::string check_program(const Program& p, const spec::HwConfig& cfg);

/// One line: opcode name and every field with its value.
std::string disassemble(const spec::Insn& in);
/// The whole program, one instruction a line, grouped by core.
std::string disassemble(const plan::Plan& p);

}  // namespace loom::random_streams
