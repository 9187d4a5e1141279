// The ONNX frontend's codec for a program file's host steps (plan::HostCodec,
// docs/plan-format.md): the host nodes in step order and the constants the
// steps read as an ONNX ModelProto, so any ONNX tool can read them, with
// each segment's boundary layouts in the metadata. The host graph is not a
// model the importer checks (its nodes read tensors the segments produce),
// so the reader checks it here.
#include "frontend/onnx/host_codec.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_read.h"
#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "plan/json_read.h"

namespace loom::onnxfe {

namespace {

using nlohmann::json;

// ---- encoding --------------------------------------------------------------

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

/// The codec's metadata: the report counters and each segment's layouts.
std::string host_meta(const HostModel& h) {
  json layouts = json::array();
  for (const SegmentLayout& s : h.layouts) {
    json nhwc = json::array(), u8 = json::array();
    for (const auto& [t, on] : s.nhwc)
      if (on) nhwc.push_back(t);
    for (const auto& [t, on] : s.u8)
      if (on) u8.push_back(t);
    layouts.push_back(json{{"nhwc", nhwc}, {"u8", u8}});
  }
  const json meta{{"model", h.model.name},
                  {"onnx_nodes", h.onnx_nodes},
                  {"folded_qdq", h.folded_qdq},
                  {"layouts", std::move(layouts)}};
  return meta.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws
}

// ---- decoding --------------------------------------------------------------

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

/// Segment `k`'s layout (`j`: its `host.layouts` entry): `nhwc` and `u8`
/// name boundary tensors of the segment, `nhwc` only of rank 4, `u8` as the
/// host model and the other segments have it.
Expected<SegmentLayout> read_layout(const json& j, size_t k, const plan::Segment& ps,
                                    const std::map<std::string, int32_t>& types, std::map<std::string, bool>& u8_of,
                                    const std::string& path) {
  const std::string ctx = "host.layouts[" + std::to_string(k) + "]";
  const std::string w = path + ": " + ctx;
  plan::Fields r{path, {}};
  std::vector<std::string> nhwc, u8;
  r.get(j, ctx, "nhwc", &nhwc);
  r.get(j, ctx, "u8", &u8);
  if (r.err) return *r.err;
  SegmentLayout s;
  for (const auto& t : ps.inputs) s.nhwc[t] = false, s.u8[t] = false;
  for (const auto& t : ps.outputs) s.nhwc[t] = false, s.u8[t] = false;
  const std::string seg = " is no boundary tensor of segment " + std::to_string(k);
  for (const auto& t : u8) {
    if (!s.u8.count(t)) return make_error(w, "field 'u8': '" + t + "'" + seg);
    s.u8[t] = true;
  }
  for (const auto& t : nhwc) {
    if (!s.nhwc.count(t)) return make_error(w, "field 'nhwc': '" + t + "'" + seg);
    for (const auto* bs : {&ps.plan.inputs, &ps.plan.outputs})
      for (const auto& b : *bs)
        if (b.name == t && b.shape.size() != 4) return make_error(w, "field 'nhwc': '" + t + "' is not of rank 4");
    s.nhwc[t] = true;
  }
  LOOM_TRY(check_boundary_types(types, s, u8_of, w));
  return s;
}

/// One layout per segment, in segment order.
Status read_layouts(const json& layouts, const plan::Program& p, HostModel& h, const std::string& path) {
  if (!layouts.is_array() || layouts.size() != p.segments.size())
    return make_error(path + ": host",
                      "field 'layouts': expected one entry per segment (" + std::to_string(p.segments.size()) + ")");
  std::map<std::string, bool> u8_of;  // every boundary tensor's u8 flag, across segments
  const std::map<std::string, int32_t> types = eight_bit_types(h.model);
  for (size_t k = 0; k < p.segments.size(); ++k) {
    auto s = read_layout(layouts[k], k, p.segments[k], types, u8_of, path);
    if (!s) return s.error();
    h.layouts.push_back(std::move(*s));
  }
  return {};
}

/// Host step `k` (node `st.host` of the host model): in range, run once.
Expected<const Node*> host_node(const plan::Step& st, size_t k, const Model& m, std::vector<int>& seen,
                                const std::string& path) {
  const std::string w = path + ": steps[" + std::to_string(k) + "]";
  if (st.host >= m.nodes.size())
    return make_error(w, "field 'host': " + std::to_string(st.host) + " is out of range (the host model has " +
                             std::to_string(m.nodes.size()) + " nodes)");
  if (seen[st.host]++) return make_error(w, "field 'host': node " + std::to_string(st.host) + " runs twice");
  return &m.nodes[st.host];
}

/// The steps with the host model: every host node runs exactly once, every
/// tensor is produced (graph input, constant or an earlier step) before a
/// step reads it, every graph output is computed. Fills `p.host_ops`.
Status check_steps(plan::Program& p, const Model& m, const std::string& path) {
  std::set<std::string> avail(m.inputs.begin(), m.inputs.end());
  for (const auto& [name, v] : m.consts) avail.insert(name);
  std::vector<int> seen(m.nodes.size(), 0);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const plan::Step& st = p.steps[k];
    const std::vector<std::string>*reads = nullptr, *writes = nullptr;
    std::string what;
    if (st.on_device()) {
      const plan::Segment& s = p.segments[size_t(st.segment)];
      reads = &s.inputs, writes = &s.outputs;
      what = "segment " + std::to_string(st.segment);
    } else {
      auto n = host_node(st, k, m, seen, path);
      if (!n) return n.error();
      reads = &(*n)->inputs, writes = &(*n)->outputs;
      what = "node '" + (*n)->name + "'";
      // The file keeps no reasons: only what runs on the host.
      p.host_ops.push_back(plan::HostOp{(*n)->name, (*n)->op, "", output_elements(m, **n)});
    }
    for (const auto& t : *reads)
      if (!t.empty() && !avail.count(t))
        return make_error(path + ": steps[" + std::to_string(k) + "]",
                          what + " reads '" + t + "', which no earlier step, input or constant provides");
    for (const auto& t : *writes)
      if (!t.empty()) avail.insert(t);
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k])
      return make_error(path + ": metadata", "field 'steps': host node '" + m.nodes[k].name + "' never runs");
  for (const auto& o : m.outputs)
    if (!avail.count(o)) return make_error(path + ": field 'host_model'", "graph output '" + o + "' is never computed");
  return {};
}

class OnnxCodec final : public plan::HostCodec {
 public:
  const char* kind() const override { return "onnx"; }

  Expected<plan::HostBytes> encode(const plan::Program& p, const std::string& where) const override {
    auto hm = host_model(p, where);
    if (!hm) return hm.error();
    const HostModel& h = **hm;
    plan::HostBytes out;
    std::vector<size_t> host_index;
    out.bytes = host_model_bytes(p, h.model, &host_index);
    for (const auto& st : p.steps) out.index.push_back(st.on_device() ? 0 : host_index[st.host]);
    out.meta = host_meta(h);
    return out;
  }

  Status decode(const plan::HostBytes& in, plan::Program& p, const std::string& path) const override {
    auto meta = parse_json_sorted(in.meta, path + ": host");
    if (!meta) return meta.error();
    auto hp = std::make_shared<HostModel>();
    plan::Fields r{path, {}};
    json layouts;
    r.get(*meta, "host", "onnx_nodes", &hp->onnx_nodes);
    r.get(*meta, "host", "folded_qdq", &hp->folded_qdq);
    r.get(*meta, "host", "layouts", &layouts);
    if (r.err) return *r.err;
    auto model = read_host_model(in.bytes, path);
    if (!model) return model.error();
    hp->model = std::move(*model);
    LOOM_TRY(read_layouts(layouts, p, *hp, path));
    LOOM_TRY(check_steps(p, hp->model, path));
    LOOM_TRY(check_host_shapes(in.bytes, p, *hp, path));
    p.host = std::move(hp);
    return {};
  }
};

}  // namespace

const plan::HostCodec& host_codec() {
  static const OnnxCodec codec;
  return codec;
}

}  // namespace loom::onnxfe
