// Import and checking of ONNX models. Every check that can name a file, node
// and field runs before onnx::checker, whose own message is kept on one line.
#include "frontend/onnx/model.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <queue>
#include <set>

#include "common/isolate.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/tensor_io.h"
#include "frontend/onnx/canonicalize.h"
#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/opset_adapt.h"

namespace loom::onnxfe {

namespace fs = std::filesystem;

int64_t Node::get_i(const std::string& a, int64_t def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.i;
}
float Node::get_f(const std::string& a, float def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.f;
}
std::string Node::get_s(const std::string& a, const std::string& def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.s;
}
std::vector<int64_t> Node::get_ints(const std::string& a, std::vector<int64_t> def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.ints;
}

bool is_onnx_path(const std::string& path) { return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0; }

namespace {

// Resolves a tensor's external data inside the model's folder only.
Expected<std::string> external_bytes(const onnx::TensorProto& t, const std::string& dir, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      const auto v = parse_int64(kv.value());
      if (!v || *v < 0)
        return make_error(where + ": field 'external_data'",
                          "'" + kv.key() + "' must be a whole number >= 0, got '" + excerpt(kv.value()) + "'");
      (kv.key() == "offset" ? offset : length) = *v;
    }
  }
  if (location.empty()) return make_error(where + ": field 'external_data'", "no 'location' given");
  const fs::path loc(location);
  if (loc.is_absolute()) {
    return make_error(where + ": field 'external_data'",
                      "location '" + location + "' is an absolute path; it must be relative to the model's folder");
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(dir.empty() ? "." : dir), ec);
  const fs::path full = fs::weakly_canonical(fs::path(dir.empty() ? "." : dir) / loc, ec);
  auto rel = full.lexically_relative(base);
  if (ec || rel.empty() || *rel.begin() == "..") {
    return make_error(where + ": field 'external_data'",
                      "location '" + location + "' leaves the model's folder (" + base.string() + ")");
  }
  uint64_t size = 0;
  if (length < 0) {
    // The whole rest of the file: its size decides the length.
    auto whole = read_file_range(full.string(), 0, 0, &size);
    if (!whole) return make_error(where + ": field 'external_data'", whole.error().str());
    if (uint64_t(offset) > size)
      return make_error(where + ": field 'external_data'", "offset lies beyond the end of '" + location + "'");
    length = int64_t(size - uint64_t(offset));
  }
  auto bytes = read_file_range(full.string(), uint64_t(offset), uint64_t(length));
  if (!bytes) return make_error(where + ": field 'external_data'", bytes.error().str());
  return std::move(*bytes);
}

Attr convert_attr(const onnx::AttributeProto& a) {
  Attr r;
  r.type = a.type();
  r.i = a.i();
  r.f = a.f();
  r.s = a.s();
  r.ints.assign(a.ints().begin(), a.ints().end());
  r.floats.assign(a.floats().begin(), a.floats().end());
  if (a.type() == onnx::AttributeProto::TENSOR && a.has_t()) {
    auto v = from_proto(a.t(), "attribute '" + a.name() + "'");
    if (v && v->numel() == 1) {
      r.tensor_type = v->type;
      if (v->is_float())
        r.floats = v->f;
      else
        r.ints = v->i;
    }
  }
  return r;
}

}  // namespace

TensorType type_of(const onnx::TypeProto& tp) {
  TensorType t;
  if (!tp.has_tensor_type()) return t;
  t.type = tp.tensor_type().elem_type();
  if (tp.tensor_type().has_shape()) {
    t.has_shape = true;
    for (const auto& d : tp.tensor_type().shape().dim()) {
      if (!d.has_dim_value()) {
        t.has_shape = false;
        t.shape.clear();
        break;
      }
      t.shape.push_back(d.dim_value());
    }
  }
  return t;
}

namespace {

Status check_value_info(const onnx::ValueInfoProto& v, const std::string& where) {
  if (!v.type().has_tensor_type()) return make_error(where + ": field 'type'", "only tensor types are supported");
  const auto& tt = v.type().tensor_type();
  if (!elem_supported(tt.elem_type())) {
    return make_error(where + ": field 'elem_type'",
                      elem_name(tt.elem_type()) + " is not supported (float32, uint8, int8, int32, int64, bool are)");
  }
  if (tt.has_shape()) {
    std::vector<int64_t> dims;
    bool all_known = true;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        dims.push_back(d.dim_value());
      } else {
        all_known = false;
      }
    }
    if (all_known) {
      LOOM_TRY(check_dims(dims, where + ": field 'shape'"));
    } else {
      for (size_t k = 0; k < dims.size(); ++k)
        if (dims[k] < 1)
          return make_error(where + ": field 'shape'", "dimension " + std::to_string(dims[k]) + " is not >= 1");
    }
  }
  return {};
}

// Every name and op type is well-formed UTF-8 (protobuf does not check it
// in ONNX's proto2 messages, and plan metadata is JSON, which needs it).
Status check_names(const onnx::GraphProto& g, const std::string& path) {
  // `what` names the kind of string, `s` is the string itself.
  auto check = [&](const std::string& where, const char* what, const std::string& s) -> Status {
    if (valid_utf8(s)) return {};
    return make_error(path + ": " + where, std::string(what) + " is not valid UTF-8: '" + excerpt(s) + "'");
  };
  LOOM_TRY(check("graph", "the graph name", g.name()));
  for (const auto* vis : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *vis) LOOM_TRY(check("value_info", "a tensor name", vi.name()));
  for (const auto& t : g.initializer()) LOOM_TRY(check("initializer", "a tensor name", t.name()));
  for (int k = 0; k < g.node_size(); ++k) {
    const auto& n = g.node(k);
    const std::string where = "node " + std::to_string(k);
    LOOM_TRY(check(where, "the node name", n.name()));
    LOOM_TRY(check(where, "the op type", n.op_type()));
    LOOM_TRY(check(where, "the domain", n.domain()));
    for (const auto* ts : {&n.input(), &n.output()})
      for (const auto& t : *ts) LOOM_TRY(check(where, "a tensor name", t));
    for (const auto& a : n.attribute()) LOOM_TRY(check(where, "an attribute name", a.name()));
  }
  return {};
}

// Attribute values the ONNX library divides by or sizes loops with, checked
// before the checker and shape inference see them (a stride of 0 would be an
// integer division by zero inside the library).
Status check_attr_values(const Model& m, const Node& n) {
  static const std::set<std::string> positive = {"strides", "dilations", "kernel_shape", "blocksize", "group"};
  constexpr int64_t kMaxAttr = int64_t(1) << 20;
  for (const auto& [name, a] : n.attrs) {
    const bool pos = positive.count(name) > 0, pads = name == "pads" || name == "output_padding";
    if (!pos && !pads) continue;
    std::vector<int64_t> vals = a.ints;
    if (a.type == onnx::AttributeProto::INT) vals.push_back(a.i);
    for (int64_t v : vals) {
      if ((pos && (v < 1 || v > kMaxAttr)) || (pads && (v < 0 || v > kMaxAttr)))
        return make_error(
            m.where(n) + ": attribute '" + name + "'",
            "value " + std::to_string(v) + " is outside " + (pos ? "1" : "0") + ".." + std::to_string(kMaxAttr));
    }
  }
  if (auto it = n.attrs.find("auto_pad"); it != n.attrs.end()) {
    static const std::set<std::string> modes = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    if (!modes.count(it->second.s))
      return make_error(m.where(n) + ": attribute 'auto_pad'",
                        "'" + it->second.s + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  // An axis beyond any tensor's rank (limits::kMaxRank) names no axis.
  if (auto it = n.attrs.find("axis"); it != n.attrs.end() && it->second.type == onnx::AttributeProto::INT) {
    const int64_t r = int64_t(limits::kMaxRank);
    if (it->second.i < -r || it->second.i > r)
      return make_error(m.where(n) + ": attribute 'axis'",
                        std::to_string(it->second.i) + " is outside -" + std::to_string(r) + ".." + std::to_string(r));
  }
  // A convolution's bias holds one value per output channel.
  const size_t w_at = n.op == "Conv" ? 1 : n.op == "QLinearConv" ? 3 : 0, b_at = n.op == "Conv" ? 2 : 8;
  if (w_at && n.inputs.size() > b_at && !n.in(b_at).empty()) {
    auto w = m.consts.find(n.in(w_at)), b = m.consts.find(n.in(b_at));
    if (w != m.consts.end() && b != m.consts.end() && !w->second.shape.empty() &&
        (b->second.shape.size() != 1 || b->second.shape[0] != w->second.shape[0]))
      return make_error(m.where(n) + ": input '" + n.in(b_at) + "'", "bias " + shape_str(b->second.shape) + " for " +
                                                                         std::to_string(w->second.shape[0]) +
                                                                         " output channels (one value per channel)");
  }
  return {};
}

// Quantization parameters must match the tensors they describe.
Status check_quant(const Model& m, const Node& n) {
  auto type_of_t = [&](const std::string& t) -> int32_t {
    if (auto c = m.consts.find(t); c != m.consts.end()) return c->second.type;
    if (auto it = m.types.find(t); it != m.types.end()) return it->second.type;
    return 0;
  };
  auto shape_of = [&](const std::string& t, std::vector<int64_t>* s) -> bool {
    if (auto c = m.consts.find(t); c != m.consts.end()) return *s = c->second.shape, true;
    if (auto it = m.types.find(t); it != m.types.end() && it->second.has_shape) return *s = it->second.shape, true;
    return false;
  };
  auto numel = [](const std::vector<int64_t>& s) {
    int64_t k = 1;
    for (auto d : s) k *= d;
    return k;
  };
  // (data, scale, zero_point, channel count or -1 for per-tensor only)
  auto pair = [&](size_t data, size_t scale, size_t zp, int64_t channels, const char* what) -> Status {
    const std::string w = m.where(n);
    const std::string d = n.in(data), s = n.in(scale), z = n.in(zp);
    if (d.empty() || s.empty()) return {};
    const int32_t dt = type_of_t(d);
    if (!z.empty()) {
      const int32_t zt = type_of_t(z);
      if (dt && zt && dt != zt) {
        return make_error(w + ": input '" + z + "'", std::string(what) + " zero point is " + elem_name(zt) + " but '" +
                                                         d + "' is " + elem_name(dt));
      }
    }
    if (type_of_t(s) && type_of_t(s) != kFloat)
      return make_error(w + ": input '" + s + "'",
                        std::string(what) + " scale must be float32, got " + elem_name(type_of_t(s)));
    std::vector<int64_t> ss, zs;
    if (shape_of(s, &ss)) {
      const int64_t k = numel(ss);
      if (k != 1 && (channels < 0 || k != channels)) {
        return make_error(w + ": input '" + s + "'",
                          std::string(what) + " scale has " + std::to_string(k) + " values; expected 1" +
                              (channels >= 0 ? " or one per channel (" + std::to_string(channels) + ")" : ""));
      }
      if (!z.empty() && shape_of(z, &zs) && numel(zs) != k) {
        return make_error(w + ": input '" + z + "'", std::string(what) + " zero point has " +
                                                         std::to_string(numel(zs)) + " values but the scale has " +
                                                         std::to_string(k));
      }
    }
    return {};
  };
  std::vector<int64_t> ws;
  if (n.op == "QLinearConv") {
    int64_t ch = -1;
    if (shape_of(n.in(3), &ws) && !ws.empty()) ch = ws[0];
    LOOM_TRY(pair(0, 1, 2, -1, "x"));
    LOOM_TRY(pair(3, 4, 5, ch, "w"));
  } else if (n.op == "QLinearMatMul") {
    int64_t ch = -1;
    if (shape_of(n.in(3), &ws) && !ws.empty()) ch = ws.back();
    LOOM_TRY(pair(0, 1, 2, -1, "a"));
    LOOM_TRY(pair(3, 4, 5, ch, "b"));
  } else if (n.op == "QuantizeLinear" || n.op == "DequantizeLinear") {
    std::vector<int64_t> xs;
    int64_t ch = -1;
    if (shape_of(n.in(0), &xs) && !xs.empty()) {
      int64_t axis = n.get_i("axis", 1);
      if (axis < 0) axis += int64_t(xs.size());
      if (axis >= 0 && axis < int64_t(xs.size())) ch = xs[size_t(axis)];
    }
    if (n.op == "DequantizeLinear") {
      LOOM_TRY(pair(0, 1, 2, ch, "x"));
    } else {
      // QuantizeLinear: the zero point's type is the output's type.
      LOOM_TRY(pair(0, 1, 99, ch, "y"));
      const int32_t zt = type_of_t(n.in(2));
      if (zt && zt != kUint8 && zt != kInt8)
        return make_error(m.where(n) + ": input '" + n.in(2) + "'",
                          "zero point must be uint8 or int8, got " + elem_name(zt));
    }
  } else if (n.op == "MatMulInteger" || n.op == "ConvInteger") {
    const std::string w = m.where(n);
    for (auto [d, z] : {std::pair<size_t, size_t>{0, 2}, {1, 3}}) {
      const int32_t dt = type_of_t(n.in(d)), zt = type_of_t(n.in(z));
      if (!n.in(z).empty() && dt && zt && dt != zt)
        return make_error(w + ": input '" + n.in(z) + "'",
                          "zero point is " + elem_name(zt) + " but '" + n.in(d) + "' is " + elem_name(dt));
    }
  }
  return {};
}

}  // namespace

Expected<Model> load_model(const std::string& path, const ShapeBinding& shapes) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return load_model_bytes(*bytes, path, fs::path(path).parent_path().string(), shapes);
}

Status check_bound(const Model& m) {
  if (m.unbound.empty()) return {};
  std::string dims;
  for (const auto& d : m.unbound) dims += (dims.empty() ? "" : ", ") + d;
  return make_error(m.path,
                    "graph input dimensions have no value: " + dims +
                        "; bind them with --dim SYMBOL=N, --input-shape NAME=D0,D1,... or --batch N (a workload "
                        "stream: dims: {SYMBOL: N})");
}

namespace {

/// The model's header: IR version, opsets (newer exports rewritten into
/// their opset-17 form, opset_adapt.h) and tensor names.
Status read_header(onnx::ModelProto& mp, const std::string& path, Model* m) {
  m->path = path;
  m->ir_version = mp.ir_version();
  if (mp.ir_version() > kMaxSourceIrVersion) {
    return make_error(path + ": field 'ir_version'", std::to_string(mp.ir_version()) +
                                                         " is newer than the supported IR version " +
                                                         std::to_string(kMaxSourceIrVersion));
  }
  bool has_default = false;
  for (const auto& os : mp.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") {
      has_default = true;
      m->opset = os.version();
      if (os.version() < kMinOpset || os.version() > kMaxSourceOpset) {
        return make_error(path + ": field 'opset_import'",
                          "opset " + std::to_string(os.version()) + " of the default domain is not supported (" +
                              std::to_string(kMinOpset) + " to " + std::to_string(kMaxSourceOpset) + " are)");
      }
    } else if (os.domain() != "com.microsoft") {
      return make_error(path + ": field 'opset_import'", "domain '" + os.domain() + "' is not supported");
    }
  }
  if (!has_default) return make_error(path + ": field 'opset_import'", "no opset for the default ONNX domain");
  // Newer exports are read in their opset-17 form (opset_adapt.h).
  LOOM_TRY(check_names(*mp.mutable_graph(), path));
  LOOM_TRY(adapt_opset(mp, m->opset, path));
  m->opset = std::min(m->opset, kAdaptedOpset);
  return {};
}

/// Initializers (external data resolved inside folder `dir`), graph inputs
/// and outputs; `defined` gets every tensor the graph itself provides.
Status read_tensors(onnx::GraphProto* g, const std::string& path, const std::string& dir, Model* m,
                    std::set<std::string>* defined) {
  if (g->sparse_initializer_size() > 0)
    return make_error(path + ": field 'sparse_initializer'", "sparse initializers are not supported");

  // Initializers (external data resolved inside the model's folder).
  for (auto& t : *g->mutable_initializer()) {
    const std::string where = path + ": initializer '" + t.name() + "'";
    if (t.name().empty()) return make_error(path + ": initializer", "has no name");
    if (m->consts.count(t.name())) return make_error(where, "declared twice");
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
      auto ext = external_bytes(t, dir, where);
      if (!ext) return ext.error();
      t.set_raw_data(*ext);
      t.clear_external_data();
      t.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
    }
    auto v = from_proto(t, where);
    if (!v) return v.error();
    m->consts.emplace(t.name(), std::move(*v));
  }

  if (g->node_size() > limits::kMaxNodes)
    return make_error(path + ": field 'node'", std::to_string(g->node_size()) + " nodes, above the limit of " +
                                                   std::to_string(limits::kMaxNodes) + " (docs/security.md)");
  for (const auto& in : g->input()) {
    const std::string where = path + ": graph input '" + in.name() + "'";
    if (m->consts.count(in.name())) continue;  // IR < 4: initializers are listed as inputs too
    LOOM_TRY(check_value_info(in, where));
    m->inputs.push_back(in.name());
    m->types[in.name()] = type_of(in.type());
    defined->insert(in.name());
  }
  for (const auto& [name, v] : m->consts) defined->insert(name);
  for (const auto& out : g->output()) {
    LOOM_TRY(check_value_info(out, path + ": graph output '" + out.name() + "'"));
    m->outputs.push_back(out.name());
  }
  if (m->outputs.empty()) return make_error(path + ": field 'output'", "the graph has no outputs");
  return {};
}

/// Node indices of `nodes` in a topological order (Kahn's algorithm,
/// stable in file order), or the node a cycle runs through.
Expected<std::vector<size_t>> topological_order(const Model& m, const std::vector<Node>& nodes,
                                                const std::map<std::string, size_t>& producer) {
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (const auto& i : nodes[k].inputs) {
      auto it = producer.find(i);
      if (i.empty() || it == producer.end()) continue;
      ++pending[k];
      users[it->second].push_back(k);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (pending[k] == 0) ready.push(k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (size_t u : users[k])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t k = 0; k < nodes.size(); ++k)
      if (pending[k] > 0) return make_error(m.where(nodes[k]), "the graph has a cycle through this node");
  }
  return order;
}

/// The graph's nodes in a topological order (Constant nodes become
/// constants): names, producers, attributes and missing tensors checked.
/// The file's node list is sorted the same way, as the checker expects.
Status read_nodes(onnx::GraphProto* g, const std::string& path, const std::set<std::string>& defined, Model* m) {
  std::vector<Node> nodes;
  std::map<std::string, size_t> producer;
  for (int k = 0; k < g->node_size(); ++k) {
    const auto& np = g->node(k);
    Node n;
    n.op = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op + "_" + std::to_string(k) : np.name();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& a : np.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
        return make_error(m->where(n) + ": attribute '" + a.name() + "'", "subgraphs are not supported");
      n.attrs[a.name()] = convert_attr(a);
    }
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      if (defined.count(o) && !producer.count(o))
        return make_error(m->where(n) + ": output '" + o + "'", "is also a graph input or initializer");
      if (auto p = producer.find(o); p != producer.end())
        return make_error(m->where(n) + ": output '" + o + "'",
                          p->second == nodes.size() ? std::string("is listed twice among the node's outputs")
                                                    : "is also produced by node '" + nodes[p->second].name + "'");
      producer[o] = nodes.size();
    }
    if (n.op == "Constant" && n.domain.empty()) {
      const onnx::TensorProto* tp = nullptr;
      for (const auto& a : np.attribute())
        if (a.name() == "value" && a.has_t()) tp = &a.t();
      if (tp == nullptr)
        return make_error(m->where(n) + ": field 'attribute'", "only the 'value' form of Constant is supported");
      auto v = from_proto(*tp, m->where(n) + ": attribute 'value'");
      if (!v) return v.error();
      if (n.outputs.size() != 1) return make_error(m->where(n) + ": field 'output'", "expected one output");
      m->consts[n.outputs[0]] = std::move(*v);
    }
    nodes.push_back(std::move(n));
  }
  for (const auto& n : nodes) {
    for (const auto& i : n.inputs) {
      if (i.empty() || defined.count(i) || producer.count(i)) continue;
      return make_error(m->where(n) + ": input '" + i + "'",
                        "is not a graph input, an initializer or the output of any node (missing initializer?)");
    }
  }
  for (const auto& o : m->outputs) {
    if (!defined.count(o) && !producer.count(o))
      return make_error(path + ": graph output '" + o + "'", "no node produces it");
  }
  auto order = topological_order(*m, nodes, producer);
  if (!order) return order.error();
  // The checker expects the file's node list in topological order.
  {
    std::vector<onnx::NodeProto> sorted;
    sorted.reserve(order->size());
    for (size_t k : *order) sorted.push_back(g->node(int(k)));
    g->clear_node();
    for (auto& np : sorted) *g->add_node() = std::move(np);
  }
  for (size_t k : *order) {
    if (nodes[k].op == "Constant" && nodes[k].domain.empty()) continue;
    m->nodes.push_back(std::move(nodes[k]));
  }
  return {};
}

/// Attribute values and quantization parameters of every node, on what is
/// known before inference (graph inputs, initializers), so a message names
/// the node and the operand.
Status check_nodes_before_inference(const Model& m) {
  for (const auto& n : m.nodes) {
    LOOM_TRY(check_attr_values(m, n));
    LOOM_TRY(check_quant(m, n));
    // Every constant scale operand (by the op's operand kinds): finite, > 0.
    if (const std::string* kinds = operand_kinds(n))
      for (size_t k = 0; k < n.inputs.size() && k < kinds->size(); ++k)
        if ((*kinds)[k] == 's')
          if (auto c = m.consts.find(n.inputs[k]); c != m.consts.end())
            LOOM_TRY(check_scales(c->second, m.where(n) + ": input '" + n.inputs[k] + "'"));
  }
  return {};
}

/// The types ONNX's checker and shape inference give every tensor.
Status infer_types(onnx::ModelProto& mp, const std::string& path, Model* m) {
  auto types = infer_shapes(mp, path, /*run_checker=*/true);
  if (!types) return types.error();
  for (auto& [name, t] : *types) m->types[name] = std::move(t);
  // Again with the inferred types; the constant scales were checked above.
  for (const auto& n : m->nodes) LOOM_TRY(check_quant(*m, n));
  return {};
}

}  // namespace

Expected<std::map<std::string, TensorType>> infer_shapes(onnx::ModelProto& mp, const std::string& path,
                                                         bool run_checker) {
  // ONNX's checker and shape inference assume a model they can trust: on some
  // malformed ones they crash (a rank-3 input to a rank-4 QLinearConv kernel
  // is a SEGV in convPoolShapeInference). So they run in a child process,
  // which sends back only the inferred types; a crash or hang is an error.
  const auto& nodes = mp.graph().node();
  const bool custom = std::any_of(nodes.begin(), nodes.end(), [](const onnx::NodeProto& n) {
    return !n.domain().empty() && n.domain() != "ai.onnx";
  });
  auto inferred = run_isolated(
      path + ": ONNX checker and shape inference",
      [&]() -> Expected<std::string> {
        if (run_checker) {
          try {
            onnx::checker::check_model(mp);
          } catch (const std::exception& e) {
            return make_error("ONNX checker", exception_text(e.what()));
          }
        }
        try {
          // Strict (type-checked, node errors fatal) unless nodes of other
          // domains are present, whose schemas the ONNX library does not know.
          // Data propagation infers a Reshape whose target is computed from
          // Shape (Shape -> Gather -> Concat, as exporters write dynamic
          // axes) once the shapes are bound.
          onnx::ShapeInferenceOptions opts{!custom, custom ? 0 : 1, true};
          onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(), opts);
        } catch (const std::exception& e) {
          return make_error("ONNX shape inference", exception_text(e.what()));
        }
        onnx::GraphProto types;
        *types.mutable_value_info() = mp.graph().value_info();
        *types.mutable_output() = mp.graph().output();
        return types.SerializeAsString();
      },
      /*timeout_ms=*/120'000, limits::kMaxFileBytes);
  if (!inferred) {
    // The child's own error ("ONNX checker: ...") reads better without the wrapper.
    const std::string& w = inferred.error().what;
    if (w.rfind("ONNX checker: ", 0) == 0 || w.rfind("ONNX shape inference: ", 0) == 0) return make_error(path, w);
    return inferred.error();
  }
  onnx::GraphProto types;
  if (!types.ParseFromString(*inferred)) return make_error(path, "ONNX shape inference: unreadable answer");
  *mp.mutable_graph()->mutable_value_info() = std::move(*types.mutable_value_info());
  *mp.mutable_graph()->mutable_output() = std::move(*types.mutable_output());
  std::map<std::string, TensorType> out;
  for (const auto& vi : mp.graph().value_info()) {
    // An empty slice of a shape (torch's unflatten concatenates Shape[3:]
    // of a rank-3 tensor) is left unknown: the import drops it from its
    // Concat (canonicalize.h); any other zero-sized tensor is refused.
    const auto& tt = vi.type().tensor_type();
    if (tt.elem_type() == onnx::TensorProto::INT64 && tt.shape().dim_size() == 1 && tt.shape().dim(0).has_dim_value() &&
        tt.shape().dim(0).dim_value() == 0)
      continue;
    LOOM_TRY(check_value_info(vi, path + ": tensor '" + vi.name() + "'"));
    out[vi.name()] = type_of(vi.type());
  }
  for (const auto& vi : mp.graph().output()) {
    // Untyped when not inferred (the output of another domain's op).
    if (vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET)
      LOOM_TRY(check_value_info(vi, path + ": graph output '" + vi.name() + "'"));
    out.emplace(vi.name(), type_of(vi.type()));
  }
  return out;
}

Expected<Model> load_model_bytes(const std::string& bytes, const std::string& path, const std::string& dir,
                                 const ShapeBinding& shapes) {
  onnx::ModelProto mp;
  if (bytes.empty()) return make_error(path, "empty file; not an ONNX model");
  if (!mp.ParseFromString(bytes)) {
    return make_error(path, "not a valid ONNX model: protobuf parsing failed (truncated or not an ONNX file)");
  }
  if (!mp.has_graph() || mp.ir_version() <= 0) {
    return make_error(path, "not an ONNX model: no graph or no ir_version (truncated or not an ONNX file)");
  }
  Model m;
  LOOM_TRY(read_header(mp, path, &m));
  if (Status s = bind_shapes(mp, shapes, path); !s) return Status(s.error()).context(path);
  m.bound = shapes;
  m.unbound = unbound_dims(mp);
  onnx::GraphProto* g = mp.mutable_graph();
  m.name = g->name();
  std::set<std::string> defined;
  LOOM_TRY(read_tensors(g, path, dir, &m, &defined));
  LOOM_TRY(read_nodes(g, path, defined, &m));
  LOOM_TRY(check_nodes_before_inference(m));
  LOOM_TRY(infer_types(mp, path, &m));
  m.import_note = canonicalize(m).note();
  return m;
}

}  // namespace loom::onnxfe
