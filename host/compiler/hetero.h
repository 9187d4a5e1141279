// Heterogeneous placement (`loom compile --hls auto`): layers on the cores,
// on an HLS compute unit, or split by output pixels between both, chosen by
// comparing the cost model's cycles with the units' latency model
// (hls/README.md "As compute units"). Also the unit call that computes a
// graph node, shared with the tests.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "ir/graph.h"

namespace loom::compiler {

/// Device addresses of a node's operands for its unit call: x (a for gemm
/// and add), the weights (b for add; unused by pool and unary ops), the
/// (bias, mult, shift) table of mac nodes, and y.
struct UnitOperands {
  uint64_t x = 0, w = 0, params = 0, y = 0;
};

/// The unit call computing node `n` of `g` (conv2d, gemm, pools, add, relu,
/// clip) on unit `unit` of its kernel, for batch-1 output pixels (rows for
/// gemm) [row0, end) only: the addresses are of the whole tensors and are
/// offset here. Mac weights are in the graph's layout ([KH][KW][C/g][M],
/// gemm [K][N]). Errors name the node when it cannot run on a unit.
Expected<runtime::UnitCall> unit_call_for_node(const ir::Graph& g, const ir::Node& n, const UnitOperands& at,
                                               uint32_t unit = 0, int64_t row0 = 0);

}  // namespace loom::compiler
