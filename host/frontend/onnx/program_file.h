// A compiled ONNX program as one file: the plan container (format version 2,
// docs/plan-format.md) holding every device segment's plan, the host steps as
// an ONNX graph of their nodes and constants, and the order they run in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "frontend/onnx/program.h"

namespace loom::onnxfe {

/// Where a program plan came from and how it was compiled.
struct ProgramPlanInfo {
  std::string config;                // named hardware configuration
  std::string compiler;              // "loom <version>"
  std::string source;                // the .onnx it was compiled from (for `loom run --check`)
  uint64_t source_hash = 0;          // FNV-1a-64 of that file's bytes
  compiler::CompileOptions options;  // how every segment was compiled (metadata "compile_options")
  ShapeBinding shapes;               // bound on the source at import (metadata "input_shapes")
};

/// Writes `p` atomically (temporary file + rename, with the checksum): on
/// error nothing is left.
Status write_program_plan(const plan::Program& p, const ProgramPlanInfo& info, const std::string& path);

struct ProgramPlan {
  ProgramPlanInfo info;
  /// Ready for run_program: its HostModel holds the host nodes (steps index
  /// them), the constants they and the segments read, the graph inputs with
  /// their types, the graph outputs and the boundary layouts; segments hold
  /// their plans but no graph (the reference for --check comes from
  /// `source`) and no compile record.
  plan::Program program;
};

/// Reads a program plan and checks it: container (magic, version, lengths,
/// checksum), metadata fields, every segment plan, host ops known to the host
/// fallback, step indices in range, every tensor produced before it is read.
/// Errors are one line naming the file and the field.
Expected<ProgramPlan> read_program_plan(const std::string& path);
/// The same checks on a program plan's bytes; `path` names them in errors.
Expected<ProgramPlan> decode_program_plan(std::string_view bytes, const std::string& path);

}  // namespace loom::onnxfe
