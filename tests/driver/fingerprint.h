// Helpers of the compile driver's tests, shared with the ONNX frontend's.
#pragma once

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "plan/program.h"

namespace loom::driver {

/// Everything a run and a report read from a program, as bytes.
std::string fingerprint(const plan::Program& p);
/// Option sets that change every pass's choices.
std::vector<compiler::CompileOptions> option_sets();

}  // namespace loom::driver
