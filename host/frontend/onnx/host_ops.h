// The host CPU fallback: ONNX ops executed on the host with ONNX's own
// semantics (integer ops bit-exact; float ops in float32 as the ONNX
// reference computes them).
#pragma once

#include <map>
#include <string>

#include "common/status.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"

namespace loom::onnxfe {

/// True when the host fallback implements `n` (op, domain and the attribute
/// forms it uses); `why` gets the reason when not.
bool host_supports(const Node& n, int64_t opset, std::string* why);

/// Runs `n` on the host, reading its inputs from and writing its outputs to `env`.
Status run_host(const Model& m, const Node& n, std::map<std::string, Value>& env);

}  // namespace loom::onnxfe
