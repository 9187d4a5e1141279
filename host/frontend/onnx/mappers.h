// The device mapping of ONNX nodes (docs/onnx.md): map_device turns one node
// into device ops of the segment under construction, by the mapper its
// (domain, op) names in mappers.cc's table; host_reason says why a node no
// mapper took runs on the host.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "frontend/onnx/model.h"
#include "frontend/onnx/qdq_fold.h"
#include "frontend/onnx/segment_builder.h"

namespace loom::onnxfe {

/// Why a node did not become device ops; nullopt when it did. An empty
/// reason leaves it to host_reason.
using Refusal = std::optional<std::string>;

/// Resize by whole factors, quantized (loom.QLinearResize) or nearest on
/// the integers, as device ops (map_resize.cc). Called through map_device.
Refusal map_resize(SegBuilder& b, const Node& n);

/// Maps `n` into `b`; on a refusal `b` is unchanged.
Refusal map_device(SegBuilder& b, const Node& n);

/// Why `n`, which no device form matched, runs on the host: a float op the
/// quantizer left out, a quantized op whose QDQ group did not fold (and
/// why), a quantization boundary, or an integer op the fabric lacks.
std::string host_reason(const Model& m, const Uses& u, const Known& known, const Node& n,
                        const std::map<std::string, std::string>& unfolded);

}  // namespace loom::onnxfe
