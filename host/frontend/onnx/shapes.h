// Shapes bound at import, in tvmc's way: a whole graph input's shape
// (--input-shape NAME=D0,D1,...), a named symbolic dimension (--dim
// SYMBOL=N) or the batch (--batch N: dimension 0 of every graph input,
// also where the model fixes it). Bound before the ONNX checker and shape
// inference, so every tensor of the model gets static dimensions and the
// partitioner sees the model as if it had been exported at that shape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace onnx {
class ModelProto;
}

namespace loom::onnxfe {

struct ShapeBinding {
  std::map<std::string, std::vector<int64_t>> inputs;  // graph input -> its whole shape
  std::map<std::string, int64_t> dims;                 // symbolic dimension -> value
  int64_t batch = 0;                                   // dimension 0 of every graph input (0: as the model has it)

  bool empty() const { return inputs.empty() && dims.empty() && batch == 0; }
  /// "input=1,3,32,32 seq=128 batch=4", as a user would write the flags.
  std::string text() const;
  bool operator==(const ShapeBinding&) const = default;
};

/// "NAME=D0,D1,..." (--input-shape); every dimension a whole number >= 1.
Status parse_input_shape(const std::string& text, ShapeBinding& b);
/// "SYMBOL=N" (--dim), N >= 1.
Status parse_dim(const std::string& text, ShapeBinding& b);

/// Applies `b` to the graph inputs of `mp`, before its checker and shape
/// inference. Every name must be a graph input, every symbol one of theirs,
/// every rank equal to the input's; two values for one symbol are an error.
/// Where a fixed dimension changes (--batch on a batch-1 export, an
/// --input-shape that differs), the shapes the model states for other
/// tensors are dropped, to be inferred again, and a constant Reshape target
/// that carried the old batch in front of a batch-led tensor copies it
/// instead (Reshape's 0). Errors name the flag and the input.
Status bind_shapes(onnx::ModelProto& mp, const ShapeBinding& b, const std::string& path);

/// `b` as a JSON object's text, `{"inputs": {NAME: [D0, ...]}, "dims":
/// {SYMBOL: N}, "batch": N}` with only the keys given ("" when `b` binds
/// nothing): what a program file records (metadata "input_shapes").
std::string shapes_json(const ShapeBinding& b);
/// Reads it back through the flags' own parsers, so a file binds nothing a
/// command line could not; errors name `where`.
Expected<ShapeBinding> shapes_from_json(const std::string& text, const std::string& where);

/// Whether dimension 0 of every graph input of the model at `path` is a
/// batch dimension, 1 or symbolic (a batch-1 or dynamic-batch export), so
/// `--batch N` stacks N requests; read from the model's own input types. A
/// symbol in `bound` (bound to a value elsewhere) is no batch dimension.
Expected<bool> has_batch_dim(const std::string& path, const std::map<std::string, int64_t>& bound = {});

/// A dimension as the model states it: a value, or a symbol (both empty:
/// unknown).
struct StatedDim {
  int64_t value = 0;   // 0: not a fixed value
  std::string symbol;  // the dim_param, when symbolic
};
/// A graph input or output as the model states it (`shaped` false: no
/// stated shape).
struct StatedTensor {
  std::string name;
  bool shaped = false;
  std::vector<StatedDim> dims;
};
/// The model's graph inputs (not initializers) and outputs, with the shapes
/// it states, in graph order: what a family of programs is keyed over.
struct Signature {
  std::vector<StatedTensor> inputs, outputs;
  /// The symbol at dimension 0 of every graph input and every graph output
  /// ("" when none is): the batch dimension, along which requests are
  /// independent and a batch may be padded or split (Triton's convention
  /// for a dynamic-batch model).
  std::string batch_symbol() const;
};
Expected<Signature> read_signature(const std::string& path);

/// The graph inputs' dimensions that have no value after binding, as
/// "input 'x' dimension 0 ('N')", in input order.
std::vector<std::string> unbound_dims(const onnx::ModelProto& mp);

}  // namespace loom::onnxfe
