// The ONNX frontend's codec for the host steps of a program file
// (plan::HostCodec, docs/plan-format.md "Program files"): what host/plan
// cannot read of an ONNX model's program. Callers pass it to
// plan::write_program and plan::read_program.
#pragma once

#include "plan/program_file.h"

namespace loom::onnxfe {

/// The codec of onnxfe::HostModel ("onnx"): the host nodes in step order,
/// the constants they and the segments read, the graph inputs with their
/// types and the graph outputs as an ONNX ModelProto; each segment's
/// boundary layouts and the report counters as metadata. Decoding checks
/// the host model (opsets, initializers, ops the host fallback runs, their
/// arity), the layouts, the step order and the shapes the host steps give
/// the segments.
const plan::HostCodec& host_codec();

}  // namespace loom::onnxfe
