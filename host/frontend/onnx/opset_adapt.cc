// Opset 18-21 nodes in their opset-17 form (see opset_adapt.h). The table
// below lists every default-domain op whose schema changed in opsets 18 to
// 21 (ONNX's Changelog.md): those whose change only added element types or
// attributes loom leaves at their defaults keep their node, the others are
// rewritten (inputs that became attributes again, ops expressed by older
// ones), and ops new in those opsets without an older form are refused.
#include "frontend/onnx/opset_adapt.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <vector>

#include "frontend/onnx/value.h"

namespace loom::onnxfe {

namespace {

using onnx::AttributeProto;
using onnx::NodeProto;

struct Adapter {
  onnx::GraphProto& g;
  const std::string& path;
  int64_t opset;
  std::map<std::string, const onnx::TensorProto*> consts;
  std::vector<NodeProto> out;  // the rewritten node list
  int fresh = 0;

  std::string where(const NodeProto& n) const {
    return path + ": node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ", opset " +
           std::to_string(opset) + ")";
  }
  Error refuse(const NodeProto& n, const std::string& what) const {
    return make_error(where(n), what + "; it has no opset-17 form loom reads");
  }

  static const AttributeProto* attr(const NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  static void drop_attr(NodeProto& n, const std::string& name) {
    auto* as = n.mutable_attribute();
    for (int k = as->size(); k-- > 0;)
      if (as->Get(k).name() == name) as->DeleteSubrange(k, 1);
  }
  static int64_t attr_i(const NodeProto& n, const std::string& name, int64_t def) {
    const AttributeProto* a = attr(n, name);
    return a ? a->i() : def;
  }
  static std::string attr_s(const NodeProto& n, const std::string& name, const std::string& def) {
    const AttributeProto* a = attr(n, name);
    return a ? a->s() : def;
  }
  /// An attribute that must hold its default (or be absent): dropped, else refused.
  Status default_only(NodeProto& n, const std::string& name, int64_t def) const {
    if (attr_i(n, name, def) != def)
      return refuse(n, "attribute '" + name + "' = " + std::to_string(attr_i(n, name, def)));
    drop_attr(n, name);
    return {};
  }
  Status default_only_s(NodeProto& n, const std::string& name, const std::string& def) const {
    if (attr_s(n, name, def) != def) return refuse(n, "attribute '" + name + "' = '" + attr_s(n, name, def) + "'");
    drop_attr(n, name);
    return {};
  }

  /// The integers of constant input `k` (an initializer or a Constant node's value).
  Expected<std::vector<int64_t>> const_ints(const NodeProto& n, int k) const {
    const std::string& name = n.input(k);
    auto it = consts.find(name);
    if (it == consts.end()) return refuse(n, "input '" + name + "' is not a constant");
    auto v = from_proto(*it->second, where(n) + ": input '" + name + "'");
    if (!v) return v.error();
    if (v->is_float()) return make_error(where(n) + ": input '" + name + "'", "must be an integer tensor");
    return v->i;
  }
  /// The size of dim `axis` of `name` when the model declares it, else -1.
  int64_t dim_of(const std::string& name, int64_t axis) const {
    auto from = [&](const onnx::ValueInfoProto& vi) -> int64_t {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return -1;
      const auto& s = vi.type().tensor_type().shape();
      const int64_t a = axis < 0 ? axis + s.dim_size() : axis;
      if (a < 0 || a >= s.dim_size() || !s.dim(int(a)).has_dim_value()) return -1;
      return s.dim(int(a)).dim_value();
    };
    for (const auto& vi : g.input())
      if (vi.name() == name) return from(vi);
    for (const auto& vi : g.value_info())
      if (vi.name() == name) return from(vi);
    if (auto it = consts.find(name); it != consts.end()) {
      const auto& t = *it->second;
      const int64_t a = axis < 0 ? axis + t.dims_size() : axis;
      if (a >= 0 && a < t.dims_size()) return t.dims(int(a));
    }
    return -1;
  }

  /// A float32 scalar initializer.
  std::string scalar(const NodeProto& n, float v) {
    onnx::TensorProto t;
    t.set_name(n.output(0) + "/opset17_const" + std::to_string(fresh++));
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(v);
    std::string name = t.name();
    *g.add_initializer() = std::move(t);
    return name;
  }
  /// Emits `op(inputs) -> output` (a fresh name when `output` is empty).
  std::string emit(const NodeProto& from, const std::string& op, std::vector<std::string> inputs,
                   std::string output = {}) {
    NodeProto n;
    n.set_op_type(op);
    n.set_name(from.name() + "/" + op + std::to_string(fresh));
    if (output.empty()) output = from.output(0) + "/opset17_" + std::to_string(fresh++);
    for (auto& i : inputs) n.add_input(i);
    n.add_output(output);
    out.push_back(std::move(n));
    return output;
  }

  // ---- the adapters -------------------------------------------------------

  /// Reduce* (opset 18, ReduceMax/ReduceMin again at 20): `axes` moved from
  /// an attribute to an optional input.
  Status reduce(NodeProto& n) {
    const bool noop = attr_i(n, "noop_with_empty_axes", 0) != 0;
    drop_attr(n, "noop_with_empty_axes");
    std::vector<int64_t> axes;
    if (n.input_size() > 1 && !n.input(1).empty()) {
      auto a = const_ints(n, 1);
      if (!a) return a.error();
      axes = *a;
    }
    while (n.input_size() > 1) n.mutable_input()->RemoveLast();
    if (axes.empty() && noop) {
      n.set_op_type("Identity");
      n.clear_attribute();
    } else if (!axes.empty()) {
      AttributeProto* a = n.add_attribute();
      a->set_name("axes");
      a->set_type(AttributeProto::INTS);
      for (auto x : axes) a->add_ints(x);
    }
    out.push_back(std::move(n));
    return {};
  }

  /// Split (opset 18): `num_outputs` instead of explicit sizes; the last
  /// chunk may be smaller, which opset 17 writes as a `split` input.
  Status split(NodeProto& n) {
    const AttributeProto* no = attr(n, "num_outputs");
    if (!no) {
      out.push_back(std::move(n));
      return {};
    }
    const int64_t parts = no->i();
    drop_attr(n, "num_outputs");
    if (parts != n.output_size())
      return make_error(where(n) + ": attribute 'num_outputs'",
                        std::to_string(parts) + " but the node has " + std::to_string(n.output_size()) + " outputs");
    const int64_t d = dim_of(n.input(0), attr_i(n, "axis", 0));
    if (d > 0 && parts > 0 && d % parts != 0) {
      const int64_t chunk = (d + parts - 1) / parts;
      onnx::TensorProto t;
      t.set_name(n.output(0) + "/opset17_split");
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(parts);
      for (int64_t k = 0; k < parts; ++k) t.add_int64_data(std::max<int64_t>(0, std::min(chunk, d - k * chunk)));
      while (n.input_size() < 2) n.add_input("");
      n.set_input(1, t.name());
      *g.add_initializer() = std::move(t);
    }
    out.push_back(std::move(n));
    return {};
  }

  /// Pad (18: optional `axes` input; 19: mode "wrap").
  Status pad(NodeProto& n) {
    if (n.input_size() > 3 && !n.input(3).empty()) return refuse(n, "input 'axes'");
    if (attr_s(n, "mode", "constant") == "wrap") return refuse(n, "mode 'wrap'");
    while (n.input_size() > 3) n.mutable_input()->RemoveLast();
    out.push_back(std::move(n));
    return {};
  }

  /// Resize (18: antialias, axes, keep_aspect_ratio_policy; 19:
  /// coordinate_transformation_mode half_pixel_symmetric).
  Status resize(NodeProto& n) {
    LOOM_TRY(default_only(n, "antialias", 0));
    if (attr(n, "axes")) return refuse(n, "attribute 'axes'");
    LOOM_TRY(default_only_s(n, "keep_aspect_ratio_policy", "stretch"));
    if (attr_s(n, "coordinate_transformation_mode", "half_pixel") == "half_pixel_symmetric")
      return refuse(n, "coordinate_transformation_mode 'half_pixel_symmetric'");
    out.push_back(std::move(n));
    return {};
  }

  /// QuantizeLinear/DequantizeLinear (19: saturate, for float8 only; 21:
  /// blocked quantization and output_dtype).
  Status qdq(NodeProto& n) {
    drop_attr(n, "saturate");
    LOOM_TRY(default_only(n, "block_size", 0));
    if (attr(n, "output_dtype")) {
      // The zero point's type decides the output type in opset 17.
      if (n.input_size() < 3 || n.input(2).empty()) return refuse(n, "attribute 'output_dtype' without a zero point");
      drop_attr(n, "output_dtype");
    }
    out.push_back(std::move(n));
    return {};
  }

  /// Gelu (20): 0.5 x (1 + erf(x / sqrt 2)), or with approximate = "tanh"
  /// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in opset-17 ops.
  Status gelu(NodeProto& n) {
    const std::string approx = attr_s(n, "approximate", "none");
    if (approx != "none" && approx != "tanh") return refuse(n, "approximate '" + approx + "'");
    const std::string x = n.input(0);
    std::string inner;
    if (approx == "none") {
      inner = emit(n, "Erf", {emit(n, "Div", {x, scalar(n, float(std::sqrt(2.0)))})});
    } else {
      const std::string x3 = emit(n, "Mul", {emit(n, "Mul", {x, x}), x});
      const std::string s = emit(n, "Add", {x, emit(n, "Mul", {x3, scalar(n, 0.044715f)})});
      inner = emit(n, "Tanh", {emit(n, "Mul", {s, scalar(n, float(std::sqrt(2.0 / std::numbers::pi)))})});
    }
    const std::string h = emit(n, "Mul", {x, emit(n, "Add", {inner, scalar(n, 1.0f)})});
    emit(n, "Mul", {h, scalar(n, 0.5f)}, n.output(0));
    return {};
  }

  /// Mish (18): x tanh(softplus(x)).
  Status mish(NodeProto& n) {
    emit(n, "Mul", {n.input(0), emit(n, "Tanh", {emit(n, "Softplus", {n.input(0)})})}, n.output(0));
    return {};
  }

  /// Attributes that only apply to new element types or stay at their default.
  /// (`n` is already in `out`.)
  Status keep(NodeProto& n) {
    const std::string& op = n.op_type();
    if (op == "Cast" || op == "CastLike") drop_attr(n, "saturate");
    if (op == "AveragePool" || op == "LpPool") {
      const AttributeProto* d = attr(n, "dilations");
      if (d)
        for (auto v : d->ints())
          if (v != 1) return refuse(n, "dilations other than 1");
      drop_attr(n, "dilations");
    }
    if (op == "LpPool") LOOM_TRY(default_only(n, "ceil_mode", 0));
    if (op == "ScatterElements" || op == "ScatterND") {
      const std::string r = attr_s(n, "reduction", "none");
      if (r == "max" || r == "min") return refuse(n, "reduction '" + r + "'");
    }
    return {};
  }

  Status adapt(NodeProto& n) {
    using Fn = Status (Adapter::*)(NodeProto&);
    static const std::map<std::string, Fn> table = {
        {"ReduceL1", &Adapter::reduce},
        {"ReduceL2", &Adapter::reduce},
        {"ReduceLogSum", &Adapter::reduce},
        {"ReduceLogSumExp", &Adapter::reduce},
        {"ReduceMax", &Adapter::reduce},
        {"ReduceMean", &Adapter::reduce},
        {"ReduceMin", &Adapter::reduce},
        {"ReduceProd", &Adapter::reduce},
        {"ReduceSumSquare", &Adapter::reduce},
        {"Split", &Adapter::split},
        {"Pad", &Adapter::pad},
        {"Resize", &Adapter::resize},
        {"QuantizeLinear", &Adapter::qdq},
        {"DequantizeLinear", &Adapter::qdq},
        {"Gelu", &Adapter::gelu},
        {"Mish", &Adapter::mish},
        // Changed only by new element types or attributes kept at their defaults.
        {"AveragePool", &Adapter::keep},
        {"LpPool", &Adapter::keep},
        {"Cast", &Adapter::keep},
        {"CastLike", &Adapter::keep},
        {"Constant", &Adapter::keep},
        {"ConstantOfShape", &Adapter::keep},
        {"Equal", &Adapter::keep},
        {"Identity", &Adapter::keep},
        {"Reshape", &Adapter::keep},
        {"Shape", &Adapter::keep},
        {"Size", &Adapter::keep},
        {"Flatten", &Adapter::keep},
        {"Squeeze", &Adapter::keep},
        {"Unsqueeze", &Adapter::keep},
        {"Transpose", &Adapter::keep},
        {"QLinearMatMul", &Adapter::keep},
        {"IsInf", &Adapter::keep},
        {"IsNaN", &Adapter::keep},
        {"ScatterElements", &Adapter::keep},
        {"ScatterND", &Adapter::keep},
        {"If", &Adapter::keep},
        {"Loop", &Adapter::keep},
        {"Scan", &Adapter::keep}};
    // New after opset 17 with no older form (or a changed meaning).
    static const std::set<std::string> refused = {
        "BitwiseAnd",         "BitwiseNot",         "BitwiseOr",          "BitwiseXor",   "CenterCropPad", "Col2Im",
        "GroupNormalization", "OptionalGetElement", "OptionalHasElement", "DeformConv",   "AffineGrid",    "DFT",
        "GridSample",         "ImageDecoder",       "RegexFullMatch",     "StringConcat", "StringSplit"};
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      out.push_back(std::move(n));
      return {};
    }
    if (refused.count(n.op_type()))
      return refuse(n, "op " + n.op_type() + " is newer than opset 17 or changed after it");
    auto it = table.find(n.op_type());
    if (it == table.end() || it->second == &Adapter::keep) {
      out.push_back(std::move(n));
      return it == table.end() ? Status{} : keep(out.back());
    }
    if (n.input_size() == 0 || n.input(0).empty() || n.output_size() == 0 || n.output(0).empty())
      return make_error(where(n), "needs its first input and output");
    return (this->*(it->second))(n);
  }
};

}  // namespace

Status adapt_opset(onnx::ModelProto& mp, int64_t opset, const std::string& path) {
  if (mp.ir_version() > kAdaptedIrVersion) mp.set_ir_version(kAdaptedIrVersion);
  if (opset <= kAdaptedOpset) return {};
  onnx::GraphProto& g = *mp.mutable_graph();
  Adapter a{g, path, opset, {}, {}, 0};
  for (const auto& t : g.initializer()) a.consts[t.name()] = &t;
  for (const auto& n : g.node())
    if (n.op_type() == "Constant" && n.output_size() == 1)
      for (const auto& at : n.attribute())
        if (at.name() == "value" && at.has_t()) a.consts[n.output(0)] = &at.t();
  for (auto& n : *g.mutable_node()) LOOM_TRY(a.adapt(n));
  g.clear_node();
  for (auto& n : a.out) *g.add_node() = std::move(n);
  for (auto& os : *mp.mutable_opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") os.set_version(kAdaptedOpset);
  return {};
}

}  // namespace loom::onnxfe
