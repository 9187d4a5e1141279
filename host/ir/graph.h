// loom's graph IR: quantized NHWC int8 graphs, the input of the compiler and
// of the direct (untiled) reference implementation.
//
// Quantization follows ONNX's linear scheme real = scale * (q - zero_point).
// Every op's integer semantics are fixed in docs/graph-format.md; the
// multipliers are derived from the float scales by quantize_multiplier()
// (common/quant.h), so the reference and the compiled plan agree bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"

namespace loom::ir {

enum class OpKind : uint8_t {
  Conv2d,         // inputs: x [N,H,W,C] i8, w [KH,KW,C/groups,M] i8, optional bias [M] i32
  Gemm,           // inputs: a [M,K] i8, b [K,N] i8, optional bias [N] i32 (matmul = gemm without bias);
                  // with groups G > 1: a [M,G*K], b [G,K,N] (one product per group, as in a grouped conv)
  Relu,           // x i8 -> y i8
  Clip,           // x i8 -> y i8 with attrs clip_min/clip_max (real values)
  Add,            // a, b i8 -> y i8; b the shape of a, or 1 in a's leading dims (repeated over them)
  MaxPool,        // x [N,H,W,C] -> y
  AvgPool,        // x [N,H,W,C] -> y (count_include_pad semantics, see docs)
  GlobalAvgPool,  // x [N,H,W,C] -> y [N,1,1,C]
  Reshape,        // x -> y with attr shape (one -1 allowed)
  Flatten,        // x [N,...] -> y [N, prod(...)]
  Mul,            // a, b i8 -> y i8; b as for add
  Transpose,      // x -> y with attr perm: y's dim d is x's dim perm[d] (a layout transform, values unchanged)
  Lut,            // x i8, table [256] i8 constant -> y i8: y = table[x + 128] (any function of one int8 value)
  Softmax,        // x i8 -> y i8 over the last axis (ROWNORM softmax; table and multiplier from the scales)
  LayerNorm,      // x i8 [..., C], params [C, 3] i32 constant (b, g, sh) -> y i8 over the last axis (ROWNORM ln)
  Concat,         // x0..xk (dims equal but along attr axis) -> y; each input requantized to y's quantization
  Slice,          // x -> y = x[starts[d] : ends[d]] along every axis d (step 1), quantization unchanged
};

/// Name used in the JSON format ("conv2d", "gemm", "matmul", ...).
const char* op_name(OpKind k);

struct QParams {
  std::vector<double> scale{1.0};  // one value, or one per output channel (conv/gemm weights only)
  int32_t zero_point = 0;
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::I8;
  std::vector<int64_t> shape;
  QParams q;
  bool is_const = false;  // an initializer: `data` holds its values
  Tensor data;
};

/// Post-op activation folded into conv/gemm/add (by the JSON author or by the
/// compiler's activation-fusion pass), in the output's integer domain.
struct Activation {
  int32_t lo = -128;
  int32_t hi = 127;
};

struct Attrs {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t groups = 1;
  bool trans_b = false;                   // gemm: b given as its transpose, [N,K] or [G,N,K]
  bool count_include_pad = true;          // avgpool
  double clip_min = 0.0, clip_max = 0.0;  // clip (real values)
  std::vector<int64_t> shape;             // reshape
  std::vector<int64_t> perm;              // transpose
  int64_t axis = 0;                       // concat
  std::vector<int64_t> starts, ends;      // slice: one per axis, 0 <= start < end <= dim
  int64_t eps = 0;                        // layernorm: added to n^2 times the variance (input units), 0..2^32-1
  Activation act;                         // conv/gemm/add fused clamp (integer domain)
  bool round_even = false;                // conv/gemm: the output requantization rounds ties to even
  bool moves_only =
      false;  // conv: a 0/1 choice of channels (the compiler's fold-channels): its MACs do no work of the model
  int64_t picked =
      0;  // conv: input channels its weights use (fold-channels added zero-point rows for the rest); 0: all
};

struct Node {
  std::string name;
  OpKind op = OpKind::Relu;
  std::vector<std::string> inputs;  // tensor names; "" = absent optional input
  std::vector<std::string> outputs;
  Attrs attrs;
};

struct Graph {
  std::string name;
  std::string source;  // file it was read from (for messages)
  std::map<std::string, TensorInfo> tensors;
  std::vector<std::string> inputs;   // graph inputs in order
  std::vector<std::string> outputs;  // graph outputs in order
  std::vector<Node> nodes;           // topologically sorted after validate()

  const TensorInfo& tensor(const std::string& n) const { return tensors.at(n); }
  TensorInfo& tensor(const std::string& n) { return tensors.at(n); }
};

/// Reads the JSON graph format (docs/graph-format.md). Errors name the file,
/// node and field.
Expected<Graph> parse_graph_json(const std::string& path);
Expected<Graph> parse_graph_json_text(const std::string& text, const std::string& source);

/// True when `b` has a's rank and is 1 in a's leading dims and equal to a in
/// the others: element e of a pairs with element e mod numel(b) of b.
inline bool repeats_over(const std::vector<int64_t>& b, const std::vector<int64_t>& a) {
  if (b.size() != a.size()) return false;
  size_t d = 0;
  while (d < a.size() && b[d] == 1) ++d;
  for (; d < a.size(); ++d)
    if (b[d] != a[d]) return false;
  return true;
}

/// Checks ops, arities, dtypes, quantization parameters, and infers/validates
/// every shape; sorts nodes topologically (a cycle is an error).
Status validate(Graph& g);

/// Direct, untiled integer implementation of every op: the oracle that
/// compiled plans are checked against. `inputs` maps graph input names.
Expected<std::map<std::string, Tensor>> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs);

/// Seeded random int8 inputs for every graph input (deterministic).
std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed);

}  // namespace loom::ir
