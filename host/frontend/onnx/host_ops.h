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

/// The kinds of `n`'s operands, one letter per input (f float, i integer,
/// s scale: float, non-empty, finite and > 0; z zero point: integer; '.'
/// anything), or nullptr when the op constrains none.
const std::string* operand_kinds(const Node& n);
/// Every value of a float scale tensor is finite and > 0.
Status check_scales(const Value& v, const std::string& where);

/// Runs `n` on the host, reading its inputs from and writing its outputs to `env`.
Status run_host(const Model& m, const Node& n, std::map<std::string, Value>& env);

}  // namespace loom::onnxfe
