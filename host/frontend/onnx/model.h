// An imported ONNX model: checked (structure, opsets, dims, external-data
// paths, cycles, missing tensors, then onnx::checker and shape inference),
// with initializers and Constant nodes converted to host values and the nodes
// in topological order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "frontend/onnx/shapes.h"
#include "frontend/onnx/value.h"

namespace onnx {
class AttributeProto;
class ModelProto;
class TypeProto;
}  // namespace onnx

namespace loom::onnxfe {

inline constexpr int64_t kMinOpset = 10;
inline constexpr int64_t kMaxOpset = 17;

struct Attr {
  int32_t type = 0;  // onnx::AttributeProto::AttributeType
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  /// A one-element tensor attribute (ConstantOfShape's `value`): its element
  /// type (0 when the attribute is no such tensor) and value in ints/floats.
  int32_t tensor_type = 0;
};

struct Node {
  std::string name;                 // as in the model, or "<op>_<index>" when it has none
  std::string op;                   // op_type
  std::string domain;               // "" for ai.onnx, "com.microsoft", or "loom" for folded QDQ ops
  std::vector<std::string> inputs;  // "" = absent optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attr> attrs;

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  int64_t get_i(const std::string& a, int64_t def) const;
  float get_f(const std::string& a, float def) const;
  std::string get_s(const std::string& a, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& a, std::vector<int64_t> def = {}) const;
  std::string in(size_t k) const { return k < inputs.size() ? inputs[k] : std::string(); }
};

struct TensorType {
  int32_t type = 0;            // 0: unknown
  std::vector<int64_t> shape;  // valid when has_shape
  bool has_shape = false;
};

struct Model {
  std::string path;  // for messages
  std::string name;
  int64_t ir_version = 0;
  int64_t opset = 0;                        // of the default domain
  std::vector<Node> nodes;                  // topological order
  std::map<std::string, Value> consts;      // initializers and Constant outputs
  std::map<std::string, TensorType> types;  // from the model and shape inference
  std::vector<std::string> inputs;          // graph inputs that are not initializers
  std::vector<std::string> outputs;
  std::string import_note;  // what import rewrote (canonicalize.h), for the compile notes
  ShapeBinding bound;       // the shapes bound at import (shapes.h)
  /// Graph input dimensions left without a value (symbolic or unknown), as
  /// "input 'x' dimension 0 ('N')": such a model does not compile.
  std::vector<std::string> unbound;

  std::string where(const Node& n) const { return path + ": node '" + n.name + "' (" + n.op + ")"; }
};

/// Reads and checks `path`, with `shapes` bound on its graph inputs first
/// (shapes.h). Errors are one line naming the file, node and field.
Expected<Model> load_model(const std::string& path, const ShapeBinding& shapes = {});
/// The same from bytes; `dir` is the folder external data is resolved in.
Expected<Model> load_model_bytes(const std::string& bytes, const std::string& path, const std::string& dir,
                                 const ShapeBinding& shapes = {});
/// The one-line refusal of a model whose graph inputs keep symbolic or
/// unknown dimensions, naming them and the flags that bind them; nothing
/// when every dimension has a value.
Status check_bound(const Model& m);

/// A tensor type as ONNX writes it; has_shape only when every dim is known.
TensorType type_of(const onnx::TypeProto& tp);

/// ONNX's shape inference over `mp` (after its checker when `run_checker`),
/// strict unless the graph holds nodes of other domains, run in a child
/// process (it crashes on some malformed models). Every inferred tensor and
/// graph output is checked like a model's own (supported element type, dims
/// within limits.h) and returned by name; `mp` gets the inferred value_info.
Expected<std::map<std::string, TensorType>> infer_shapes(onnx::ModelProto& mp, const std::string& path,
                                                         bool run_checker);

/// True when `path` names an ONNX model (by extension).
bool is_onnx_path(const std::string& path);

}  // namespace loom::onnxfe
