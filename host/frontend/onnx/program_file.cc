// Program plans: the device segments' plans, the host steps (an ONNX graph of
// the host nodes and the constants the steps read) and the step order, in the
// versioned plan container. The host graph is plain ONNX protobuf so any ONNX
// tool can read it; it is not a model the importer checks (its nodes read
// tensors the segments produce), so the reader checks it here.
#include "frontend/onnx/program_file.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/json_read.h"
#include "common/tensor_io.h"
#include "compiler/options.h"
#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/model.h"
#include "plan/json_read.h"

namespace loom::onnxfe {

namespace {

using nlohmann::json;
using plan::read_strict;

void put_node(const Node& n, onnx::NodeProto* np) {
  np->set_name(n.name);
  np->set_op_type(n.op);
  if (!n.domain.empty()) np->set_domain(n.domain);
  for (const auto& i : n.inputs) np->add_input(i);
  for (const auto& o : n.outputs) np->add_output(o);
  for (const auto& [name, a] : n.attrs) {
    auto* ap = np->add_attribute();
    ap->set_name(name);
    ap->set_type(onnx::AttributeProto_AttributeType(a.type));
    // The importer keeps every field of an attribute; so does the file.
    if (a.i) ap->set_i(a.i);
    if (a.f != 0.0f) ap->set_f(a.f);
    if (!a.s.empty()) ap->set_s(a.s);
    for (auto v : a.ints) ap->add_ints(v);
    for (auto v : a.floats) ap->add_floats(v);
  }
}

void put_value_info(const std::string& name, const Model& m, onnx::ValueInfoProto* vi) {
  vi->set_name(name);
  auto it = m.types.find(name);
  if (it == m.types.end() || it->second.type == 0) return;
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(it->second.type);
  if (it->second.has_shape) {
    auto* sh = tt->mutable_shape();
    for (auto d : it->second.shape) sh->add_dim()->set_dim_value(d);
  }
}

// The host steps as an ONNX model: nodes in step order, the constants the
// host nodes and the segments read, graph inputs with their types.
std::string host_model_bytes(const plan::Program& p, const Model& m, std::vector<size_t>* host_index) {
  onnx::ModelProto mp;
  mp.set_ir_version(m.ir_version ? m.ir_version : 8);
  mp.set_producer_name("loom");
  mp.set_producer_version(LOOM_VERSION);
  auto* g = mp.mutable_graph();
  g->set_name(m.name.empty() ? "onnx" : m.name);
  std::set<std::string> needed(m.outputs.begin(), m.outputs.end()), domains;
  host_index->assign(m.nodes.size(), 0);
  size_t count = 0;
  for (const auto& st : p.steps) {
    if (st.on_device()) {
      for (const auto& t : p.segments[size_t(st.segment)].inputs) needed.insert(t);
      continue;
    }
    const Node& n = m.nodes[st.host];
    (*host_index)[st.host] = count++;
    put_node(n, g->add_node());
    if (!n.domain.empty()) domains.insert(n.domain);
    for (const auto& i : n.inputs)
      if (!i.empty()) needed.insert(i);
  }
  auto* os = mp.add_opset_import();
  os->set_domain("");
  os->set_version(m.opset);
  for (const auto& d : domains) {
    auto* o = mp.add_opset_import();
    o->set_domain(d);
    o->set_version(1);
  }
  for (const auto& name : needed) {
    auto it = m.consts.find(name);
    if (it == m.consts.end()) continue;
    g->add_initializer()->ParseFromString(to_proto_bytes(it->second, name));
  }
  for (const auto& i : m.inputs) put_value_info(i, m, g->add_input());
  for (const auto& o : m.outputs) put_value_info(o, m, g->add_output());
  return mp.SerializeAsString();
}

// Typed access to the metadata that names the field on error.
json shapes_to_json(const ShapeBinding& b) {
  json j = json::object();
  if (!b.inputs.empty()) j["inputs"] = b.inputs;
  if (!b.dims.empty()) j["dims"] = b.dims;
  if (b.batch) j["batch"] = b.batch;
  return j;
}

/// Read back through the flags' own parsers, so a plan binds nothing a
/// command line could not.
Expected<ShapeBinding> shapes_from_json(const json& j, const std::string& where) {
  ShapeBinding b;
  const auto bad = [&](const std::string& what) { return make_error(where, what); };
  if (!j.is_object()) return bad("is not an object");
  for (const auto& [key, v] : j.items()) {
    if (key == "batch") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > (uint64_t(1) << 20))
        return bad("'batch' is not a whole number from 1 to 1048576");
      b.batch = v.get<int64_t>();
    } else if (key == "inputs" || key == "dims") {
      if (!v.is_object()) return bad("'" + key + "' is not an object");
      for (const auto& [name, x] : v.items()) {
        if (key == "inputs" && (!x.is_array() || x.empty())) return bad("'inputs." + name + "' is not a shape");
        std::string text = name + "=";
        for (const auto& d : key == "inputs" ? x : json::array({x})) {
          if (!d.is_number_unsigned()) return bad("'" + key + "." + name + "' is not whole numbers >= 1");
          text += std::to_string(d.get<uint64_t>()) + ",";
        }
        text.pop_back();
        Status s = key == "inputs" ? parse_input_shape(text, b) : parse_dim(text, b);
        if (!s) return Status(s.error()).context(where);
      }
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  return b;
}

struct Meta {
  const std::string& path;
  std::optional<Error> err;

  template <class T>
  bool get(const json& j, const std::string& ctx, const char* key, T* out) {
    if (err) return false;
    const std::string where = path + ": " + ctx;
    if (!j.is_object()) {
      err = make_error(where, "expected an object");
      return false;
    }
    auto it = j.find(key);
    if (it == j.end()) {
      err = make_error(where, std::string("missing field '") + key + "'");
      return false;
    }
    if (!read_strict(*it, out)) {
      err = make_error(where, std::string("field '") + key + "' has the wrong type or is out of range");
      return false;
    }
    return true;
  }
};

/// A default-domain node's input and output counts within its ONNX schema's
/// (the host kernels index operands by position).
Status check_arity(const Node& n, int64_t opset, const std::string& where) {
  if (!n.domain.empty()) return Status::ok();
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op, int(opset), "");
  if (!schema) return Status::ok();  // host_supports knows the op; an older schema name is its concern
  const auto count = [](const std::vector<std::string>& v) {
    size_t k = v.size();
    while (k > 0 && v[k - 1].empty()) --k;  // trailing optional operands left out
    return int(k);
  };
  const int in = count(n.inputs), out = count(n.outputs);
  if (in < schema->min_input() || in > schema->max_input())
    return make_error(where, std::to_string(in) + " inputs; " + n.op + " takes " + std::to_string(schema->min_input()) +
                                 " to " + std::to_string(schema->max_input()));
  if (out < schema->min_output() || out > schema->max_output())
    return make_error(where, std::to_string(out) + " outputs; " + n.op + " gives " +
                                 std::to_string(schema->min_output()) + " to " + std::to_string(schema->max_output()));
  return Status::ok();
}

Expected<Model> read_host_model(const std::string& bytes, const std::string& path) {
  const std::string where = path + ": field 'host_model'";
  onnx::ModelProto mp;
  if (!mp.ParseFromString(bytes)) return make_error(where, "is not an ONNX ModelProto");
  Model m;
  m.path = path;
  m.ir_version = mp.ir_version();
  m.name = mp.graph().name();
  for (const auto& os : mp.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") m.opset = os.version();
  if (m.opset < kMinOpset || m.opset > kMaxOpset)
    return make_error(where, "default-domain opset " + std::to_string(m.opset) + " is outside " +
                                 std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset));
  const auto& g = mp.graph();
  for (const auto& t : g.initializer()) {
    const std::string w = where + ": initializer '" + t.name() + "'";
    if (m.consts.count(t.name())) return make_error(w, "defined twice");
    // Written as raw_data only: its length bounds the tensor before any
    // allocation (a crafted dims field cannot ask for gigabytes).
    if (!t.has_raw_data() || t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
      return make_error(w + ": field 'raw_data'", "missing (a program plan holds its constants inline)");
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    LOOM_TRY(check_dims(dims, w + ": field 'dims'"));
    const int32_t ty = t.data_type();
    const uint64_t esize = ty == kInt64 ? 8 : (ty == kFloat || ty == kInt32) ? 4 : 1;
    uint64_t n = 1;
    for (auto d : dims) n *= uint64_t(d);
    if (elem_supported(ty) && n * esize != t.raw_data().size())
      return make_error(w + ": field 'raw_data'", "holds " + std::to_string(t.raw_data().size()) + " bytes; " +
                                                      shape_str(dims) + " of " + elem_name(ty) + " needs " +
                                                      std::to_string(n * esize));
    auto v = from_proto(t, w);
    if (!v) return v.error();
    m.consts[t.name()] = std::move(*v);
  }
  std::set<std::string> names;
  for (int k = 0; k < g.node_size(); ++k) {
    const auto& np = g.node(k);
    Node n;
    n.name = np.name();
    n.op = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    const std::string w = where + ": node " + std::to_string(k) + " '" + n.name + "' (" + n.op + ")";
    if (n.name.empty() || !names.insert(n.name).second) return make_error(w, "field 'name': empty or not unique");
    for (const auto& a : np.attribute()) {
      Attr r;
      r.type = a.type();
      r.i = a.i();
      r.f = a.f();
      r.s = a.s();
      r.ints.assign(a.ints().begin(), a.ints().end());
      r.floats.assign(a.floats().begin(), a.floats().end());
      n.attrs[a.name()] = std::move(r);
    }
    std::string why;
    if (!host_supports(n, m.opset, &why))
      return make_error(w, "field 'op_type': the host fallback does not run it (" + why + ")");
    LOOM_TRY(check_arity(n, m.opset, w));
    m.nodes.push_back(std::move(n));
  }
  for (const auto& vi : g.input()) {
    const std::string w = where + ": input '" + vi.name() + "'";
    TensorType t;
    if (vi.type().has_tensor_type()) {
      const auto& tt = vi.type().tensor_type();
      t.type = tt.elem_type();
      if (!elem_supported(t.type))
        return make_error(w, "field 'elem_type': " + elem_name(t.type) + " is not supported");
      if (tt.has_shape()) {
        t.has_shape = true;
        for (const auto& d : tt.shape().dim()) t.shape.push_back(d.dim_value());
        LOOM_TRY(check_dims(t.shape, w + ": field 'shape'"));
      }
    }
    if (m.consts.count(vi.name())) return make_error(w, "is also an initializer");
    m.types[vi.name()] = t;
    m.inputs.push_back(vi.name());
  }
  for (const auto& vi : g.output()) m.outputs.push_back(vi.name());
  if (m.outputs.empty()) return make_error(where, "field 'output': the program has no graph outputs");
  return m;
}

std::string type_str(const TensorType& t) { return elem_name(t.type) + " " + shape_str(t.shape); }

/// The host graph's types and shapes, inferred by ONNX with the segments'
/// outputs as its inputs: every tensor within the limits, every graph output
/// as declared, every tensor a segment reads as its plan reads it (a host
/// constant that broadcasts a [1,4,8,8] activation to [3,4,8,8], or to
/// gigabytes, is refused here, not run).
Status check_host_shapes(const std::string& host_bytes, const plan::Program& p, const HostModel& h,
                         const std::string& path) {
  const std::string where = path + ": field 'host_model'";
  onnx::ModelProto mp;
  if (!mp.ParseFromString(host_bytes)) return make_error(where, "is not an ONNX ModelProto");
  std::map<std::string, TensorType> known;
  for (const auto& [name, t] : h.model.types) known[name] = t;
  for (const auto& [name, v] : h.model.consts) known[name] = TensorType{v.type, v.shape, true};
  for (size_t k = 0; k < p.segments.size(); ++k)
    for (const auto& b : p.segments[k].plan.outputs) {
      const TensorType t = h.layouts[k].host_type(b);
      known[b.name] = t;
      auto* vi = mp.mutable_graph()->add_input();
      vi->set_name(b.name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.type);
      for (auto d : t.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
  std::map<std::string, TensorType> declared;
  for (const auto& vi : mp.graph().output())
    if (vi.type().tensor_type().has_shape()) declared[vi.name()] = type_of(vi.type());
  auto inferred = infer_shapes(mp, where, /*run_checker=*/false);
  if (!inferred) return inferred.error();
  for (auto& [name, t] : *inferred) known.emplace(name, t);
  const auto differs = [&](const std::string& name, const TensorType& want) -> const TensorType* {
    auto it = known.find(name);
    if (it == known.end() || !it->second.type || !it->second.has_shape || !want.has_shape) return nullptr;
    return it->second.type != want.type || it->second.shape != want.shape ? &it->second : nullptr;
  };
  for (size_t k = 0; k < p.segments.size(); ++k)
    for (const auto& b : p.segments[k].plan.inputs) {
      const TensorType want = h.layouts[k].host_type(b);
      if (const TensorType* got = differs(b.name, want))
        return make_error(path + ": segments[" + std::to_string(k) + "]: input '" + b.name + "'",
                          "the host steps give " + type_str(*got) + ", the segment's plan reads " + type_str(want));
    }
  for (const auto& [name, want] : declared)
    if (const TensorType* got = differs(name, want))
      return make_error(where + ": graph output '" + name + "'",
                        "declared " + type_str(want) + ", computed " + type_str(*got));
  return Status::ok();
}
}  // namespace

Status write_program_plan(const plan::Program& p, const ProgramPlanInfo& info, const std::string& path) {
  auto hm = host_model(p, path);
  if (!hm) return Status(hm.error()).context("nothing written");
  const HostModel& h = **hm;
  LOOM_TRY(plan::validate(p, path));
  std::vector<size_t> host_index;
  const std::string host = host_model_bytes(p, h.model, &host_index);
  std::string payload = host;
  json meta;
  meta["kind"] = "onnx_program";
  meta["config"] = info.config;
  meta["compiler"] = info.compiler;
  meta["model"] = h.model.name;
  meta["graph_source"] = info.source;
  meta["graph_hash"] = info.source_hash;
  meta["compile_options"] = compiler::options_to_json(info.options);
  if (!info.shapes.empty()) meta["input_shapes"] = shapes_to_json(info.shapes);
  meta["onnx_nodes"] = h.onnx_nodes;
  meta["folded_qdq"] = h.folded_qdq;
  meta["host_model_bytes"] = host.size();
  meta["segments"] = json::array();
  for (size_t k = 0; k < p.segments.size(); ++k) {
    const SegmentLayout& s = h.layouts[k];
    const plan::Segment& ps = p.segments[k];
    const std::string b = plan::encode_plan(ps.plan);
    payload += b;
    json nhwc = json::array(), u8 = json::array();
    for (const auto& [t, on] : s.nhwc)
      if (on) nhwc.push_back(t);
    for (const auto& [t, on] : s.u8)
      if (on) u8.push_back(t);
    meta["segments"].push_back(json{{"plan_bytes", b.size()},
                                    {"nodes", ps.ops},
                                    {"inputs", ps.inputs},
                                    {"outputs", ps.outputs},
                                    {"nhwc", nhwc},
                                    {"u8", u8}});
  }
  meta["steps"] = json::array();
  for (const auto& st : p.steps)
    meta["steps"].push_back(st.on_device() ? json{{"segment", st.segment}} : json{{"node", host_index[st.host]}});
  meta["fallback_ops"] = p.fallback_ops();
  meta["notes"] = p.notes;
  const std::string text = meta.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws
  return write_file_atomic(path, plan::encode_container(plan::kProgramFormatVersion, text, payload));
}

Expected<ProgramPlan> read_program_plan(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return decode_program_plan(*bytes, path);
}

namespace {

/// The int8/uint8 type of the tensors the host model pins down: its graph
/// inputs, and what its QuantizeLinear nodes write and DequantizeLinear
/// nodes read (the type of their zero point).
std::map<std::string, int32_t> eight_bit_types(const Model& m) {
  std::map<std::string, int32_t> t;
  const auto put = [&](const std::string& name, int32_t type) {
    if (!name.empty() && (type == kInt8 || type == kUint8)) t.emplace(name, type);
  };
  for (const auto& [name, tt] : m.types) put(name, tt.type);
  for (const auto& n : m.nodes) {
    if (!n.domain.empty() || n.inputs.size() < 3) continue;
    auto z = m.consts.find(n.inputs[2]);
    if (z == m.consts.end()) continue;
    if (n.op == "QuantizeLinear" && !n.outputs.empty()) put(n.outputs[0], z->second.type);
    if (n.op == "DequantizeLinear") put(n.inputs[0], z->second.type);
  }
  return t;
}

/// A segment's u8 flags agree with the types the host model pins down (a
/// uint8 tensor is q - 128 on the int8 fabric, converted at the boundary
/// only where the flag says so) and with the other segments' flags for the
/// same tensor.
Status check_boundary_types(const std::map<std::string, int32_t>& types, const SegmentLayout& s,
                            std::map<std::string, bool>& u8_of, const std::string& where) {
  for (const auto& [t, u8] : s.u8) {
    if (auto it = types.find(t); it != types.end() && u8 != (it->second == kUint8))
      return make_error(where + ": field 'u8'", "'" + t + "' is " + elem_name(it->second) + " in the host model, " +
                                                    (u8 ? "flagged u8" : "not flagged u8"));
    if (auto [it, fresh] = u8_of.emplace(t, u8); !fresh && it->second != u8)
      return make_error(where + ": field 'u8'", "'" + t + "' is flagged u8 in one segment and not in another");
  }
  return Status::ok();
}

}  // namespace

Expected<ProgramPlan> decode_program_plan(std::string_view bytes, const std::string& path) {
  auto c = plan::decode_container(bytes, path);
  if (!c) return c.error();
  if (c->version != plan::kProgramFormatVersion)
    return make_error(path, "field 'format_version': " + std::to_string(c->version) +
                                " is a single-segment plan, not a program plan");
  // Nesting bounded while parsing: a deep value would recurse when dumped.
  auto parsed = parse_json_sorted(c->meta, path + ": metadata");
  if (!parsed) return parsed.error();
  const json& meta = *parsed;
  ProgramPlan pp;
  ProgramPlanInfo& info = pp.info;
  plan::Program& p = pp.program;
  auto hp = std::make_shared<HostModel>();
  HostModel& h = *hp;
  std::vector<std::string> fallback_ops;
  Meta r{path, {}};
  std::string kind;
  uint64_t host_bytes = 0;
  json segs, steps;
  r.get(meta, "metadata", "kind", &kind);
  r.get(meta, "metadata", "config", &info.config);
  r.get(meta, "metadata", "compiler", &info.compiler);
  r.get(meta, "metadata", "graph_source", &info.source);
  r.get(meta, "metadata", "graph_hash", &info.source_hash);
  r.get(meta, "metadata", "onnx_nodes", &h.onnx_nodes);
  r.get(meta, "metadata", "folded_qdq", &h.folded_qdq);
  r.get(meta, "metadata", "host_model_bytes", &host_bytes);
  r.get(meta, "metadata", "fallback_ops", &fallback_ops);
  r.get(meta, "metadata", "notes", &p.notes);
  r.get(meta, "metadata", "segments", &segs);
  r.get(meta, "metadata", "steps", &steps);
  json opts;
  r.get(meta, "metadata", "compile_options", &opts);
  if (r.err) return *r.err;
  const std::string md = path + ": metadata";
  if (!spec::find_config(info.config))
    return make_error(md, "field 'config': unknown configuration '" + info.config + "'");
  auto options = compiler::options_from_json(opts, *spec::find_config(info.config), md);
  if (!options) return options.error();
  info.options = std::move(*options);
  if (meta.contains("input_shapes")) {
    auto shapes = shapes_from_json(meta["input_shapes"], md + ": field 'input_shapes'");
    if (!shapes) return shapes.error();
    info.shapes = std::move(*shapes);
  }
  if (kind != "onnx_program") return make_error(md, "field 'kind': '" + kind + "' is not 'onnx_program'");
  if (!spec::find_config(info.config))
    return make_error(md, "field 'config': unknown configuration '" + info.config + "'");
  if (!segs.is_array()) return make_error(md, "field 'segments' is not an array");
  if (!steps.is_array()) return make_error(md, "field 'steps' is not an array");
  if (host_bytes > c->payload.size())
    return make_error(md, "field 'host_model_bytes': " + std::to_string(host_bytes) + " exceeds the payload (" +
                              std::to_string(c->payload.size()) + " bytes)");
  auto model = read_host_model(c->payload.substr(0, host_bytes), path);
  if (!model) return model.error();
  h.model = std::move(*model);

  size_t at = host_bytes;
  std::map<std::string, bool> u8_of;  // every boundary tensor's u8 flag, across segments
  const std::map<std::string, int32_t> types = eight_bit_types(h.model);
  for (size_t k = 0; k < segs.size(); ++k) {
    const std::string ctx = "segments[" + std::to_string(k) + "]";
    const std::string w = path + ": " + ctx;
    uint64_t n = 0;
    SegmentLayout s;
    plan::Segment ps;
    std::vector<std::string> nhwc, u8;
    r.get(segs[k], ctx, "plan_bytes", &n);
    r.get(segs[k], ctx, "nodes", &ps.ops);
    r.get(segs[k], ctx, "inputs", &ps.inputs);
    r.get(segs[k], ctx, "outputs", &ps.outputs);
    r.get(segs[k], ctx, "nhwc", &nhwc);
    r.get(segs[k], ctx, "u8", &u8);
    if (r.err) return *r.err;
    if (n > c->payload.size() - at)
      return make_error(w, "field 'plan_bytes': " + std::to_string(n) + " bytes run past the end of the payload");
    auto sp = plan::decode_plan(std::string_view(c->payload).substr(at, n), w);
    if (!sp) return sp.error();
    at += n;
    ps.plan = std::move(*sp);
    if (ps.plan.config != info.config)
      return make_error(w, "field 'config': the segment was compiled for '" + ps.plan.config + "', the program for '" +
                               info.config + "'");
    // The boundary tensors are the plan's bindings, by name.
    auto same = [](const std::vector<std::string>& names, const std::vector<plan::TensorBinding>& b) {
      std::set<std::string> x(names.begin(), names.end()), y;
      for (const auto& t : b) y.insert(t.name);
      return x == y && x.size() == names.size();
    };
    if (!same(ps.inputs, ps.plan.inputs)) return make_error(w, "field 'inputs': not the inputs of the segment's plan");
    if (!same(ps.outputs, ps.plan.outputs))
      return make_error(w, "field 'outputs': not the outputs of the segment's plan");
    if (ps.outputs.empty()) return make_error(w, "field 'outputs': a segment with no outputs");
    // Held in the plan's binding order, whatever order the file lists them in.
    ps.inputs.clear();
    ps.outputs.clear();
    for (const auto& b : ps.plan.inputs) ps.inputs.push_back(b.name);
    for (const auto& b : ps.plan.outputs) ps.outputs.push_back(b.name);
    for (const auto& t : ps.inputs) s.nhwc[t] = false, s.u8[t] = false;
    for (const auto& t : ps.outputs) s.nhwc[t] = false, s.u8[t] = false;
    for (const auto& t : u8) {
      if (!s.u8.count(t)) return make_error(w, "field 'u8': '" + t + "' is no boundary tensor of the segment");
      s.u8[t] = true;
    }
    for (const auto& t : nhwc) {
      if (!s.nhwc.count(t)) return make_error(w, "field 'nhwc': '" + t + "' is no boundary tensor of the segment");
      for (const auto* bs : {&ps.plan.inputs, &ps.plan.outputs})
        for (const auto& b : *bs)
          if (b.name == t && b.shape.size() != 4) return make_error(w, "field 'nhwc': '" + t + "' is not of rank 4");
      s.nhwc[t] = true;
    }
    LOOM_TRY(check_boundary_types(types, s, u8_of, w));
    h.layouts.push_back(std::move(s));
    p.segments.push_back(std::move(ps));
  }
  if (at != c->payload.size())
    return make_error(md, "payload size " + std::to_string(c->payload.size()) +
                              " does not match the host model and segment plans (" + std::to_string(at) + ")");

  // Steps: every segment and host node exactly once, every tensor produced
  // before it is read.
  const Model& m = h.model;
  std::set<std::string> avail(m.inputs.begin(), m.inputs.end());
  for (const auto& [name, v] : m.consts) avail.insert(name);
  std::vector<int> seen_seg(p.segments.size(), 0), seen_node(m.nodes.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    const std::string ctx = "steps[" + std::to_string(k) + "]";
    const std::string w = path + ": " + ctx;
    plan::Step st;
    std::vector<std::string> reads, writes;
    std::string what;
    if (steps[k].is_object() && steps[k].contains("segment")) {
      int64_t i = -1;
      if (!r.get(steps[k], ctx, "segment", &i)) return *r.err;
      if (i < 0 || i >= int64_t(p.segments.size()))
        return make_error(w, "field 'segment': " + std::to_string(i) + " is out of range (the plan has " +
                                 std::to_string(p.segments.size()) + " segments)");
      if (seen_seg[size_t(i)]++) return make_error(w, "field 'segment': segment " + std::to_string(i) + " runs twice");
      st.segment = int(i);
      reads = p.segments[size_t(i)].inputs;
      writes = p.segments[size_t(i)].outputs;
      what = "segment " + std::to_string(i);
    } else {
      int64_t i = -1;
      if (!r.get(steps[k], ctx, "node", &i)) return *r.err;
      if (i < 0 || i >= int64_t(m.nodes.size()))
        return make_error(w, "field 'node': " + std::to_string(i) + " is out of range (the host model has " +
                                 std::to_string(m.nodes.size()) + " nodes)");
      if (seen_node[size_t(i)]++) return make_error(w, "field 'node': node " + std::to_string(i) + " runs twice");
      st.host = size_t(i);
      const Node& n = m.nodes[size_t(i)];
      reads = n.inputs;
      writes = n.outputs;
      what = "node '" + n.name + "'";
      // The file keeps no reasons: only what runs on the host.
      p.host_ops.push_back(plan::HostOp{n.name, n.op, "", output_elements(m, n)});
    }
    for (const auto& t : reads)
      if (!t.empty() && !avail.count(t))
        return make_error(w, what + " reads '" + t + "', which no earlier step, input or constant provides");
    for (const auto& t : writes)
      if (!t.empty()) avail.insert(t);
    p.steps.push_back(st);
  }
  for (size_t k = 0; k < seen_seg.size(); ++k)
    if (!seen_seg[k]) return make_error(md, "field 'steps': segment " + std::to_string(k) + " never runs");
  for (size_t k = 0; k < seen_node.size(); ++k)
    if (!seen_node[k]) return make_error(md, "field 'steps': host node '" + m.nodes[k].name + "' never runs");
  if (fallback_ops != p.fallback_ops())
    return make_error(md, "field 'fallback_ops': not the ops of the host steps, in step order");
  for (const auto& o : m.outputs)
    if (!avail.count(o)) return make_error(path + ": field 'host_model'", "graph output '" + o + "' is never computed");
  LOOM_TRY(check_host_shapes(c->payload.substr(0, host_bytes), p, h, path));
  p.host = std::move(hp);
  return pp;
}

}  // namespace loom::onnxfe
