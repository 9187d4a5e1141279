// The operator table: which graph ops the fabric runs and how.
#include "compiler/op_table.h"

#include <array>

namespace loom::compiler {
namespace {

using ir::OpKind;
constexpr std::array<OpProps, 17> kOps{{
    {OpKind::Conv2d, "conv2d", LayerKind::Mac, true, false, false},
    {OpKind::Gemm, "gemm", LayerKind::Mac, true, false, false},
    {OpKind::Relu, "relu", LayerKind::Eltwise, false, true, false},
    {OpKind::Clip, "clip", LayerKind::Eltwise, false, true, false},
    {OpKind::Add, "add", LayerKind::Eltwise, true, false, false},
    {OpKind::Mul, "mul", LayerKind::Eltwise, true, false, false},
    {OpKind::MaxPool, "maxpool", LayerKind::Pool, false, false, false},
    {OpKind::AvgPool, "avgpool", LayerKind::Pool, false, false, true},
    {OpKind::GlobalAvgPool, "globalavgpool", LayerKind::Pool, false, false, true},
    {OpKind::Reshape, "reshape", LayerKind::Alias, false, false, false},
    {OpKind::Flatten, "flatten", LayerKind::Alias, false, false, false},
    // A layout transform: gathered by DMA, copied through ELTWISE.
    {OpKind::Transpose, "transpose", LayerKind::Eltwise, false, false, false},
    // A table lookup (ELTWISE lut): the table is loaded beside each chunk.
    {OpKind::Lut, "lut", LayerKind::Eltwise, false, false, false},
    // Row normalizations (ROWNORM): chunks of whole rows; the softmax table
    // or the channel triples are loaded once per core that runs the layer.
    {OpKind::Softmax, "softmax", LayerKind::Eltwise, false, false, false},
    {OpKind::LayerNorm, "layernorm", LayerKind::Eltwise, false, false, false},
    // Concat: one ELTWISE copy layer per input into its strided slice of the
    // output; slice: a gather like the transpose's.
    {OpKind::Concat, "concat", LayerKind::Eltwise, false, false, false},
    {OpKind::Slice, "slice", LayerKind::Eltwise, false, false, false},
}};

}  // namespace

const OpProps* op_props(ir::OpKind op) {
  for (const auto& p : kOps)
    if (p.op == op) return &p;
  return nullptr;
}

}  // namespace loom::compiler
