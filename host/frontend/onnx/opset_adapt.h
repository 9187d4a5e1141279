// Models written at ONNX opsets newer than the ONNX library loom links
// (opsets 18-21, IR versions 9-10, as current PyTorch exporters write them)
// rewritten into their opset-17 form before the checker, shape inference and
// the importer see them. Each op whose schema changed after opset 17 has one
// adapter; an op or attribute value with no opset-17 form is refused in one
// line naming the node.
#pragma once

#include <string>

#include "common/status.h"

namespace onnx {
class ModelProto;
}

namespace loom::onnxfe {

/// The newest default-domain opset loom reads, and the one every model is
/// rewritten to (the ONNX library's own).
inline constexpr int64_t kMaxSourceOpset = 21;
inline constexpr int64_t kMaxSourceIrVersion = 10;
inline constexpr int64_t kAdaptedOpset = 17;
inline constexpr int64_t kAdaptedIrVersion = 8;

/// Rewrites `mp` (default-domain opset `opset`, already checked to be in
/// range) into opset kAdaptedOpset and IR version at most
/// kAdaptedIrVersion. `path` names the file in messages.
Status adapt_opset(onnx::ModelProto& mp, int64_t opset, const std::string& path);

}  // namespace loom::onnxfe
