#include "frontend/onnx/shapes.h"

#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/limits.h"
#include "common/parse.h"
#include "common/tensor_io.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"

namespace loom::onnxfe {

namespace {

Expected<int64_t> parse_extent(std::string_view s, const std::string& flag, const std::string& text) {
  auto v = parse_int64(s);
  if (!v || *v < 1 || *v > limits::kMaxTensorElems)
    return make_error(flag, "expected a whole number from 1 to " + std::to_string(limits::kMaxTensorElems) + " in '" +
                                text + "', got '" + std::string(s) + "'");
  return *v;
}

/// Splits "NAME=VALUE" at its last '=' (names may hold '=', values do not).
Expected<std::pair<std::string, std::string>> split_assignment(const std::string& text, const std::string& flag,
                                                               const std::string& form) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return make_error(flag, "expected " + form + ", got '" + text + "'");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// The graph inputs that are not initializers (IR < 4 lists both).
std::vector<onnx::ValueInfoProto*> graph_inputs(onnx::ModelProto& mp) {
  std::set<std::string> inits;
  for (const auto& t : mp.graph().initializer()) inits.insert(t.name());
  std::vector<onnx::ValueInfoProto*> r;
  for (auto& in : *mp.mutable_graph()->mutable_input())
    if (!inits.count(in.name())) r.push_back(&in);
  return r;
}

bool has_shape(const onnx::ValueInfoProto& v) {
  return v.type().has_tensor_type() && v.type().tensor_type().has_shape();
}

/// What binding decides: a value per symbol and per fixed dimension changed.
struct Resolved {
  std::map<std::string, int64_t> sym;
  std::map<std::string, std::string> sym_from;  // symbol -> the flag that bound it
  bool fixed_changed = false;
  int64_t old_batch = 0;  // the batch --batch replaced (0: none)
};

Status bind_symbol(Resolved& r, const std::string& sym, int64_t v, const std::string& from) {
  auto [it, fresh] = r.sym.emplace(sym, v);
  if (!fresh && it->second != v)
    return make_error(from, "symbolic dimension '" + sym + "' is " + std::to_string(it->second) + " by " +
                                r.sym_from[sym] + ", not " + std::to_string(v));
  if (fresh) r.sym_from[sym] = from;
  return {};
}

/// Dimension `d` is `v`: binds its symbol or replaces its value.
Status bind_dim(Resolved& r, onnx::TensorShapeProto_Dimension* d, int64_t v, const std::string& from) {
  if (d->has_dim_value()) {
    if (d->dim_value() != v) r.fixed_changed = true;
  } else if (!d->dim_param().empty()) {
    LOOM_TRY(bind_symbol(r, d->dim_param(), v, from));
  }
  d->set_dim_value(v);
  return {};
}

Status bind_inputs(std::vector<onnx::ValueInfoProto*>& ins, const ShapeBinding& b, Resolved& r) {
  std::vector<std::string> names;
  for (auto* in : ins) names.push_back("'" + in->name() + "'");
  for (const auto& [name, dims] : b.inputs) {
    const std::string from = "--input-shape " + name;
    const std::string& wanted = name;  // clang 14 captures no structured binding
    auto it = std::find_if(ins.begin(), ins.end(), [&](auto* in) { return in->name() == wanted; });
    if (it == ins.end())
      return make_error("--input-shape",
                        "the model has no graph input '" + name + "' (its inputs: " + join(names) + ")");
    auto* shape = (*it)->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (has_shape(**it) && shape->dim_size() != int(dims.size()))
      return make_error(from, "graph input '" + name + "' has rank " + std::to_string(shape->dim_size()) + ", not " +
                                  std::to_string(dims.size()));
    if (!has_shape(**it) || shape->dim_size() == 0)
      for (size_t j = 0; j < dims.size(); ++j) shape->add_dim();
    for (size_t j = 0; j < dims.size(); ++j) LOOM_TRY(bind_dim(r, shape->mutable_dim(int(j)), dims[j], from));
  }
  return {};
}

Status bind_batch(std::vector<onnx::ValueInfoProto*>& ins, const ShapeBinding& b, Resolved& r) {
  if (b.batch == 0) return {};
  for (auto* in : ins) {
    const std::string from = "--batch";
    if (!has_shape(*in) || in->type().tensor_type().shape().dim_size() == 0)
      return make_error(from, "graph input '" + in->name() + "' has no batch dimension (" +
                                  (has_shape(*in) ? "a scalar" : "no stated shape") + ")");
    auto* d = in->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    if (b.inputs.count(in->name())) {
      if (d->dim_value() != b.batch)
        return make_error(from, std::to_string(b.batch) + " differs from dimension 0 of --input-shape " + in->name());
      continue;
    }
    if (d->has_dim_value() && d->dim_value() != b.batch) r.old_batch = d->dim_value();
    LOOM_TRY(bind_dim(r, d, b.batch, from));
  }
  return {};
}

Status check_dim_symbols(const std::vector<onnx::ValueInfoProto*>& ins, const ShapeBinding& b) {
  std::set<std::string> syms;
  for (auto* in : ins)
    if (has_shape(*in))
      for (const auto& d : in->type().tensor_type().shape().dim())
        if (!d.has_dim_value() && !d.dim_param().empty()) syms.insert(d.dim_param());
  for (const auto& [sym, v] : b.dims) {
    if (syms.count(sym)) continue;
    std::vector<std::string> have;
    for (const auto& s : syms) have.push_back("'" + s + "'");
    return make_error("--dim " + sym,
                      "no graph input has a symbolic dimension '" + sym + "' (" +
                          (have.empty() ? std::string("the model has none") : "the model's: " + join(have)) + ")");
  }
  return {};
}

void substitute(onnx::ValueInfoProto& v, const Resolved& r) {
  if (!has_shape(v)) return;
  for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
    if (!d.has_dim_value() && !d.dim_param().empty())
      if (auto it = r.sym.find(d.dim_param()); it != r.sym.end()) d.set_dim_value(it->second);
}

/// The int64 values of a constant tensor `name` (an initializer or a
/// Constant node's value), or nothing.
std::optional<std::vector<int64_t>> constant_ints(const onnx::ModelProto& mp, const std::string& name) {
  const onnx::TensorProto* t = nullptr;
  for (const auto& i : mp.graph().initializer())
    if (i.name() == name) t = &i;
  for (const auto& n : mp.graph().node())
    if (n.op_type() == "Constant" && n.output_size() == 1 && n.output(0) == name)
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) t = &a.t();
  if (!t || t->data_type() != onnx::TensorProto::INT64) return std::nullopt;
  auto v = from_proto(*t, name);
  if (!v || v->is_float()) return std::nullopt;
  return v->i;
}

/// Reshape targets with the old batch in front of a tensor whose dimension
/// 0 is that batch copy dimension 0 instead (Reshape's 0, allowzero off), so
/// a batch-1 export's Reshape(x, [1, -1]) reshapes each image of a batch.
/// `lead` gives each tensor's dimension 0 at the model's own shapes.
void rebatch_reshapes(onnx::ModelProto& mp, int64_t old_batch, const std::map<std::string, TensorType>& lead) {
  auto* g = mp.mutable_graph();
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() != "Reshape" || n.input_size() < 2 || !n.domain().empty()) continue;
    bool allowzero = false;
    for (const auto& a : n.attribute()) allowzero |= a.name() == "allowzero" && a.i() != 0;
    auto shape = constant_ints(mp, n.input(1));
    auto in = lead.find(n.input(0));
    if (allowzero || !shape || shape->empty() || (*shape)[0] != old_batch || in == lead.end() ||
        !in->second.has_shape || in->second.shape.empty() || in->second.shape[0] != old_batch)
      continue;
    (*shape)[0] = 0;
    auto* t = g->add_initializer();
    t->set_name(n.input(1) + "/batch_copied_" + std::to_string(g->initializer_size()));
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(shape->size()));
    for (int64_t v : *shape) t->add_int64_data(v);
    n.set_input(1, t->name());
  }
}

}  // namespace

std::string ShapeBinding::text() const {
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : " ") + x; };
  for (const auto& [name, dims] : inputs) {
    std::string d = name + "=";
    for (size_t k = 0; k < dims.size(); ++k) {
      if (k) d += ',';
      d += std::to_string(dims[k]);
    }
    add(d);
  }
  for (const auto& [sym, v] : dims) add(sym + "=" + std::to_string(v));
  if (batch) add("batch=" + std::to_string(batch));
  return s;
}

Status parse_input_shape(const std::string& text, ShapeBinding& b) {
  const std::string flag = "--input-shape";
  auto kv = split_assignment(text, flag, "NAME=D0,D1,...");
  if (!kv) return kv.error();
  std::vector<int64_t> dims;
  std::string_view rest = kv->second;
  while (true) {
    const auto comma = rest.find(',');
    auto v = parse_extent(rest.substr(0, comma), flag, text);
    if (!v) return v.error();
    dims.push_back(*v);
    if (dims.size() > limits::kMaxRank)
      return make_error(flag, "more than " + std::to_string(limits::kMaxRank) + " dimensions in '" + text + "'");
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!b.inputs.emplace(kv->first, dims).second)
    return make_error(flag, "graph input '" + kv->first + "' is given twice");
  return {};
}

Status parse_dim(const std::string& text, ShapeBinding& b) {
  auto kv = split_assignment(text, "--dim", "SYMBOL=N");
  if (!kv) return kv.error();
  auto v = parse_extent(kv->second, "--dim", text);
  if (!v) return v.error();
  if (!b.dims.emplace(kv->first, *v).second)
    return make_error("--dim", "symbolic dimension '" + kv->first + "' is given twice");
  return {};
}

Status bind_shapes(onnx::ModelProto& mp, const ShapeBinding& b, const std::string& path) {
  if (b.empty()) return {};
  const onnx::ModelProto before = b.batch ? mp : onnx::ModelProto();
  auto ins = graph_inputs(mp);
  Resolved r;
  LOOM_TRY(check_dim_symbols(ins, b));
  for (const auto& [sym, v] : b.dims) LOOM_TRY(bind_symbol(r, sym, v, "--dim " + sym));
  LOOM_TRY(bind_inputs(ins, b, r));
  LOOM_TRY(bind_batch(ins, b, r));
  for (auto* in : ins) substitute(*in, r);
  auto* g = mp.mutable_graph();
  for (auto& o : *g->mutable_output()) substitute(o, r);
  for (auto& v : *g->mutable_value_info()) substitute(v, r);
  if (!r.fixed_changed) return {};
  // Fixed dimensions changed: what the model states of other tensors is
  // inferred again from the new input shapes.
  g->clear_value_info();
  for (auto& o : *g->mutable_output())
    if (has_shape(o))
      for (auto& d : *o.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) d.Clear();
  if (r.old_batch == 0) return {};
  onnx::ModelProto orig = before;
  auto lead = infer_shapes(orig, path, /*run_checker=*/false);
  if (!lead) return lead.error();
  for (const auto* in : graph_inputs(orig)) lead->emplace(in->name(), type_of(in->type()));
  rebatch_reshapes(mp, r.old_batch, *lead);
  return {};
}

std::string shapes_json(const ShapeBinding& b) {
  if (b.empty()) return "";
  nlohmann::json j = nlohmann::json::object();
  if (!b.inputs.empty()) j["inputs"] = b.inputs;
  if (!b.dims.empty()) j["dims"] = b.dims;
  if (b.batch) j["batch"] = b.batch;
  return j.dump();
}

Expected<ShapeBinding> shapes_from_json(const std::string& text, const std::string& where) {
  using nlohmann::json;
  ShapeBinding b;
  const auto bad = [&](const std::string& what) { return make_error(where, what); };
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return bad("is not an object");
  for (const auto& [key, v] : j.items()) {
    if (key == "batch") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > (uint64_t(1) << 20))
        return bad("'batch' is not a whole number from 1 to 1048576");
      b.batch = v.get<int64_t>();
      continue;
    }
    if (key != "inputs" && key != "dims") return bad("unknown key '" + key + "'");
    if (!v.is_object()) return bad("'" + key + "' is not an object");
    for (const auto& [name, x] : v.items()) {
      if (key == "inputs" && (!x.is_array() || x.empty())) return bad("'inputs." + name + "' is not a shape");
      std::string assignment = name + "=";
      for (const auto& d : key == "inputs" ? x : json::array({x})) {
        if (!d.is_number_unsigned()) return bad("'" + key + "." + name + "' is not whole numbers >= 1");
        assignment += std::to_string(d.get<uint64_t>()) + ",";
      }
      assignment.pop_back();
      Status s = key == "inputs" ? parse_input_shape(assignment, b) : parse_dim(assignment, b);
      if (!s) return Status(s.error()).context(where);
    }
  }
  return b;
}

namespace {

StatedTensor stated(const onnx::ValueInfoProto& v) {
  StatedTensor t{v.name(), has_shape(v), {}};
  if (t.shaped)
    for (const auto& d : v.type().tensor_type().shape().dim())
      t.dims.push_back(StatedDim{d.has_dim_value() ? d.dim_value() : 0, d.has_dim_param() ? d.dim_param() : ""});
  return t;
}

}  // namespace

Expected<Signature> read_signature(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  onnx::ModelProto mp;
  if (!mp.ParseFromString(*bytes)) return make_error(path, "not a valid ONNX model: protobuf parsing failed");
  Signature s;
  for (const auto* in : graph_inputs(mp)) s.inputs.push_back(stated(*in));
  for (const auto& out : mp.graph().output()) s.outputs.push_back(stated(out));
  return s;
}

std::string Signature::batch_symbol() const {
  std::string sym;
  for (const auto* list : {&inputs, &outputs})
    for (const auto& t : *list) {
      if (!t.shaped || t.dims.empty() || t.dims[0].symbol.empty()) return "";
      if (!sym.empty() && t.dims[0].symbol != sym) return "";
      sym = t.dims[0].symbol;
    }
  return sym;
}

Expected<bool> has_batch_dim(const std::string& path, const std::map<std::string, int64_t>& bound) {
  auto sig = read_signature(path);
  if (!sig) return sig.error();
  for (const auto& in : sig->inputs) {
    if (in.dims.empty()) return false;  // no stated shape, or a scalar
    const auto& d = in.dims[0];
    if (d.value > 0 ? d.value != 1 : bound.count(d.symbol) > 0) return false;
  }
  return true;
}

std::vector<std::string> unbound_dims(const onnx::ModelProto& mp) {
  std::set<std::string> inits;
  for (const auto& t : mp.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> r;
  for (const auto& in : mp.graph().input()) {
    if (inits.count(in.name()) || !in.type().has_tensor_type()) continue;
    if (!in.type().tensor_type().has_shape()) {
      r.push_back("input '" + in.name() + "' (no stated shape)");
      continue;
    }
    const auto& s = in.type().tensor_type().shape();
    for (int j = 0; j < s.dim_size(); ++j)
      if (!s.dim(j).has_dim_value())
        r.push_back("input '" + in.name() + "' dimension " + std::to_string(j) + " (" +
                    (s.dim(j).dim_param().empty() ? std::string("unnamed") : "'" + s.dim(j).dim_param() + "'") + ")");
  }
  return r;
}

}  // namespace loom::onnxfe
