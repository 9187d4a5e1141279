// Partitioning into device segments and host ops (after the QDQ folds of
// qdq_fold.h, node by node through the mappers of mappers.h), and the
// segment runner. Layout rule: ONNX tensors are NCHW; inside a segment
// rank-4 tensors are NHWC, converted at the segment's boundary (host
// transposes), and weights are converted once at import. uint8 tensors run
// as int8: a uint8 tensor q with zero point z is the int8 tensor q - 128 with
// zero point z - 128 (same real values), converted at the boundary.
#include "frontend/onnx/program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "device/device.h"
#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/mappers.h"
#include "frontend/onnx/qdq_fold.h"
#include "frontend/onnx/segment_builder.h"
#include "ir/ir_util.h"
#include "runtime/executor.h"

namespace loom::onnxfe {

namespace {

/// The segment `b` built from model nodes `nodes`: its boundary outputs
/// (produced here, read by other nodes or the graph), boundary layouts and
/// name. Not yet validated or compiled.
SegmentDraft finish_segment(SegBuilder& b, const std::vector<size_t>& nodes, size_t index) {
  const Model& m = b.m;
  SegmentDraft seg = std::move(b.seg);
  // Boundary outputs: produced here, needed by later nodes or the graph.
  std::set<std::string> needed(m.outputs.begin(), m.outputs.end());
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    if (std::find(nodes.begin(), nodes.end(), k) != nodes.end()) continue;
    for (const auto& i : m.nodes[k].inputs) needed.insert(i);
  }
  for (const auto& nd : seg.graph.nodes)
    if (needed.count(nd.outputs[0])) seg.graph.outputs.push_back(nd.outputs[0]);
  // Device nodes nothing reads (a transpose that a later view looked
  // through) are dropped, with their tensors.
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> read(seg.graph.outputs.begin(), seg.graph.outputs.end());
    for (const auto& nd : seg.graph.nodes) read.insert(nd.inputs.begin(), nd.inputs.end());
    for (size_t k = seg.graph.nodes.size(); k-- > 0;) {
      if (read.count(seg.graph.nodes[k].outputs[0])) continue;
      seg.graph.tensors.erase(seg.graph.nodes[k].outputs[0]);
      seg.graph.nodes.erase(seg.graph.nodes.begin() + std::ptrdiff_t(k));
      changed = true;
    }
  }
  const Perm nhwc = default_layout(4);
  for (const auto* ts : {&seg.graph.inputs, &seg.graph.outputs})
    for (const auto& t : *ts) {
      seg.layout.nhwc[t] = b.layout[t] == nhwc;
      seg.layout.u8[t] = b.onnx_type[t] == kUint8;
    }
  seg.graph.name = m.name.empty() ? "onnx" : m.name;
  seg.graph.name += "/segment" + std::to_string(index);
  seg.graph.source = m.path;
  return seg;
}

}  // namespace

Expected<plan::Program> build_program(Model model, const std::map<std::string, Value>& bound, const spec::HwConfig& cfg,
                                      const ProgramOptions& opt) {
  // A symbolic dimension left unbound would put every op after it on the
  // host (no static shape): refused, naming the dimensions and the flags.
  if (opt.use_device) LOOM_TRY(check_bound(model));
  plan::Program p;
  auto host = std::make_shared<HostModel>();
  host->model = std::move(model);
  Model& m = host->model;
  Known known = [&](const std::string& t) -> const Value* {
    if (auto it = m.consts.find(t); it != m.consts.end()) return &it->second;
    if (auto it = bound.find(t); it != bound.end()) return &it->second;
    return nullptr;
  };
  if (!m.import_note.empty()) p.notes.push_back(m.import_note);
  std::map<std::string, std::string> unfolded;
  if (opt.use_device) host->folded_qdq = fold_qdq(m, known, opt.compile.exact_host, &unfolded);
  {
    int rows = 0, exact = 0;
    for (const auto& n : m.nodes) {
      rows += n.domain == "loom" && (n.op == "QLinearSoftmax" || n.op == "QLinearLayerNorm");
      exact += n.domain.empty() && (n.op == "Softmax" || n.op == "LayerNormalization");
    }
    if (rows)
      p.notes.push_back(
          std::to_string(rows) +
          " Softmax/LayerNormalization ops run as integer row normalizations "
          "(ROWNORM: approximations, bit-exact across backends; --exact-host keeps them on the host in float)");
    if (exact && opt.compile.exact_host)
      p.notes.push_back(std::to_string(exact) +
                        " Softmax/LayerNormalization ops run on the host in float (--exact-host)");
  }

  // Every op must run somewhere.
  std::set<std::string> consumed_later;
  for (const auto& n : m.nodes) {
    std::string why;
    if (!host_supports(n, m.opset, &why)) {
      // Device-only forms are mapped below; anything else is an error now.
      return make_error(m.where(n), "op " + (n.domain.empty() ? n.op : n.domain + "." + n.op) +
                                        " is supported neither by the fabric nor by the host fallback (" + why + ")");
    }
  }

  std::vector<bool> on_device(m.nodes.size(), false);
  std::vector<int> seg_of(m.nodes.size(), -1);
  std::vector<std::string> host_why(m.nodes.size(), opt.use_device ? "" : "the device is not used for this run");
  const Uses uses = uses_of(m);
  if (opt.use_device) {
    std::unique_ptr<SegBuilder> cur;
    std::vector<size_t> cur_nodes;
    auto close = [&]() -> Status {
      if (!cur || cur_nodes.empty()) {
        cur.reset();
        cur_nodes.clear();
        return {};
      }
      SegmentDraft seg = finish_segment(*cur, cur_nodes, p.segments.size());
      std::string why;
      Status s = ir::validate(seg.graph);
      if (s) {
        const compiler::CompileOptions& co = opt.compile;
        auto r = compiler::compile(seg.graph, cfg, co);
        if (!r &&
            (co.placement != compiler::Placement::Static || co.hls != compiler::Hls::Off || co.tasks_per_core != 1)) {
          // Only the options stand in the way: say so rather than moving the
          // segment to the host.
          compiler::CompileOptions def;
          def.num_cores = co.num_cores;
          def.fusion = co.fusion;
          def.cost_params = co.cost_params;
          if (compiler::compile(seg.graph, cfg, def))
            return make_error(
                "segment " + std::to_string(p.segments.size()) + " (from '" + m.nodes[cur_nodes[0]].name + "')",
                "compiles with the default placement and --hls off but not with --placement " +
                    std::string(compiler::placement_name(co.placement)) + " --hls " + compiler::hls_name(co.hls) +
                    ": " + r.error().str());
        }
        if (r) {
          plan::Segment ps = compiler::segment_of(std::move(*r), std::move(seg.graph));
          ps.plan.graph_source = m.path;
          const int idx = int(p.segments.size());
          for (size_t k : cur_nodes) on_device[k] = true, seg_of[k] = idx, ps.ops.push_back(m.nodes[k].name);
          p.segments.push_back(std::move(ps));
          host->layouts.push_back(std::move(seg.layout));
        } else {
          why = r.error().str();
        }
      } else {
        why = s.str();
      }
      if (!why.empty()) {
        ++host->segments_on_host;
        p.notes.push_back("segment of " + std::to_string(cur_nodes.size()) + " ops from '" +
                          m.nodes[cur_nodes[0]].name + "' runs on the host: " + why);
        for (size_t k : cur_nodes) host_why[k] = "its segment did not compile for the fabric: " + why;
      }
      cur.reset();
      cur_nodes.clear();
      return {};
    };
    for (size_t k = 0; k < m.nodes.size(); ++k) {
      if (!cur) {
        cur = std::make_unique<SegBuilder>(SegBuilder{m, known, {}, {}, {}, {}});
        cur->param_bytes = uint64_t(cfg.param_kib) * 1024;
      }
      const Refusal refused = map_device(*cur, m.nodes[k]);
      if (!refused) {
        cur_nodes.push_back(k);
      } else {
        const std::string& why = *refused;
        if (!why.empty())
          p.notes.push_back("'" + m.nodes[k].name + "' (" + m.nodes[k].op + ") runs on the host: " + why);
        host_why[k] = why.empty() ? host_reason(m, uses, known, m.nodes[k], unfolded) : why;
        LOOM_TRY(close());
      }
    }
    LOOM_TRY(close());
  }
  host->onnx_nodes = m.nodes.size();
  int last_seg = -1;
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    if (on_device[k]) {
      if (seg_of[k] != last_seg) p.steps.push_back(plan::Step{seg_of[k], 0});
      last_seg = seg_of[k];
    } else {
      p.steps.push_back(plan::Step{-1, k});
      p.host_ops.push_back(plan::HostOp{m.nodes[k].name, m.nodes[k].op, host_why[k], output_elements(m, m.nodes[k])});
      last_seg = -1;
    }
  }
  p.host = std::move(host);
  return p;
}

Expected<std::vector<SegmentDraft>> segment_graphs(Model model, const std::vector<std::vector<std::string>>& nodes,
                                                   bool exact_host) {
  Model& m = model;
  Known known = [&](const std::string& name) -> const Value* {
    auto it = m.consts.find(name);
    return it != m.consts.end() ? &it->second : nullptr;
  };
  std::map<std::string, std::string> unfolded;
  fold_qdq(m, known, exact_host, &unfolded);
  std::vector<SegmentDraft> out;
  size_t at = 0;  // segments are runs of consecutive nodes, in model order
  for (size_t s = 0; s < nodes.size(); ++s) {
    const std::string where = m.path + ": segment " + std::to_string(s);
    SegBuilder b{m, known, {}, {}, {}, {}};
    std::vector<size_t> ks;
    for (const auto& name : nodes[s]) {
      while (at < m.nodes.size() && m.nodes[at].name != name) ++at;
      if (at == m.nodes.size())
        return make_error(where, "node '" + name + "' is not in the model, or not in the order of the segment");
      if (const Refusal why = map_device(b, m.nodes[at]))
        return make_error(where,
                          "node '" + name + "' no longer maps to the fabric" + (why->empty() ? "" : ": " + *why));
      ks.push_back(at++);
    }
    SegmentDraft seg = finish_segment(b, ks, s);
    if (Status v = ir::validate(seg.graph); !v) return Status(v).context(where).error();
    out.push_back(std::move(seg));
  }
  return out;
}

namespace {

Tensor to_device(const Value& v, bool nhwc, bool u8) {
  std::vector<int64_t> s = v.shape;
  if (nhwc) s = {v.shape[0], v.shape[2], v.shape[3], v.shape[1]};
  Tensor t(DType::I8, s);
  const int64_t off = u8 ? 128 : 0;
  if (!nhwc) {
    for (int64_t k = 0; k < v.numel(); ++k) t.i8()[k] = int8_t(v.i[size_t(k)] - off);
    return t;
  }
  const int64_t N = v.shape[0], C = v.shape[1], H = v.shape[2], W = v.shape[3];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          t.i8()[((n * H + h) * W + w) * C + c] = int8_t(v.i[size_t(((n * C + c) * H + h) * W + w)] - off);
  return t;
}

Value from_device(const Tensor& t, bool nhwc, bool u8) {
  std::vector<int64_t> s = t.shape;
  if (nhwc) s = {t.shape[0], t.shape[3], t.shape[1], t.shape[2]};
  Value v = Value::make(u8 ? kUint8 : kInt8, s);
  const int64_t off = u8 ? 128 : 0;
  if (!nhwc) {
    for (int64_t k = 0; k < v.numel(); ++k) v.i[size_t(k)] = int64_t(t.i8()[k]) + off;
    return v;
  }
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          v.i[size_t(((n * C + c) * H + h) * W + w)] = int64_t(t.i8()[((n * H + h) * W + w) * C + c]) + off;
  return v;
}

}  // namespace

Expected<ProgramRun> run_program(const plan::Program& p, const std::string& backend, const spec::HwConfig& cfg,
                                 const std::map<std::string, Value>& inputs, bool check) {
  auto dev = runtime::make_device(backend, cfg);
  if (!dev) return dev.error();
  return run_program(p, **dev, inputs, check);
}

Expected<std::map<std::string, Value>> random_inputs(const Model& m, uint64_t seed) {
  std::map<std::string, Value> in;
  for (size_t k = 0; k < m.inputs.size(); ++k) {
    const std::string& name = m.inputs[k];
    auto it = m.types.find(name);
    if (it == m.types.end() || it->second.type == 0 || !it->second.has_shape)
      return make_error(m.path + ": graph input '" + name + "'",
                        "has no known type and fixed shape for random inputs; give it with --inputs");
    for (int64_t d : it->second.shape)
      if (d < 1)
        return make_error(m.path + ": graph input '" + name + "'",
                          "has a dynamic shape " + shape_str(it->second.shape) + "; give it with --inputs");
    LOOM_TRY(check_dims(it->second.shape, m.path + ": graph input '" + name + "'"));
    const int32_t t = it->second.type;
    if (!elem_supported(t))
      return make_error(m.path + ": graph input '" + name + "'",
                        "has element type " + elem_name(t) + ", which loom does not handle");
    Value v = Value::make(t, it->second.shape);
    ir::detail::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull + k + 1);
    for (int64_t e = 0; e < v.numel(); ++e) {
      if (t == kFloat) {
        v.f[size_t(e)] = float(double(rng.next() >> 11) * 0x1p-53 * 2.0 - 1.0);
      } else if (t == kBool) {
        v.i[size_t(e)] = int64_t(rng.next() & 1);
      } else if (t == kInt8 || t == kUint8) {
        int64_t lo = 0, hi = 0;
        elem_range(t, &lo, &hi);
        v.i[size_t(e)] = rng.in_range(lo, hi);
      } else {
        v.i[size_t(e)] = rng.in_range(0, 15);
      }
    }
    in[name] = std::move(v);
  }
  return in;
}

Expected<std::map<std::string, Value>> read_inputs(const Model& m, const std::vector<std::string>& files) {
  if (files.size() != m.inputs.size())
    return make_error("--inputs", std::to_string(files.size()) + " files given; " + m.path + " has " +
                                      std::to_string(m.inputs.size()) + " graph inputs");
  std::map<std::string, Value> in;
  for (size_t k = 0; k < files.size(); ++k) {
    auto v = read_value(files[k]);
    if (!v) return v.error();
    // A model's stated (or bound) shape is what its program was compiled for.
    if (auto t = m.types.find(m.inputs[k]); t != m.types.end() && t->second.has_shape && t->second.shape != v->shape)
      return make_error("--inputs " + files[k], "shape " + shape_str(v->shape) + ", but graph input '" + m.inputs[k] +
                                                    "' of " + m.path + " is " + shape_str(t->second.shape));
    in[m.inputs[k]] = std::move(*v);
  }
  return in;
}

uint64_t output_elements(const Model& m, const Node& n) {
  double sum = 0;
  for (const auto& out : n.outputs) {
    auto t = m.types.find(out);
    if (t == m.types.end() || !t->second.has_shape) continue;
    double e = 1;
    for (int64_t d : t->second.shape) e *= double(std::max<int64_t>(d, 1));
    sum += e;
  }
  return uint64_t(std::min(sum, 0x1p62));
}

Expected<const HostModel*> host_model(const plan::Program& p, const std::string& where) {
  const auto* h = dynamic_cast<const HostModel*>(p.host.get());
  if (!h) return make_error(where, "the program has no ONNX model for its host steps");
  if (h->layouts.size() != p.segments.size())
    return make_error(h->model.path, "the program has " + std::to_string(p.segments.size()) + " device segments but " +
                                         std::to_string(h->layouts.size()) + " segment layouts");
  return h;
}

Expected<std::unique_ptr<ProgramValues>> ProgramValues::bind(const plan::Program& p,
                                                             const std::map<std::string, Value>& inputs) {
  auto h = host_model(p, "the program");
  if (!h) return h.error();
  const Model& m = (*h)->model;
  LOOM_TRY(plan::validate(p, m.path));
  std::map<std::string, Value> env = m.consts;
  for (const auto& name : m.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) return make_error(m.path, "no value given for graph input '" + name + "'");
    const Value& v = it->second;
    auto ti = m.types.find(name);
    if (ti != m.types.end()) {
      if (ti->second.type && ti->second.type != v.type)
        return make_error(m.path + ": graph input '" + name + "'",
                          "expects " + elem_name(ti->second.type) + ", got " + elem_name(v.type));
      if (ti->second.has_shape && ti->second.shape != v.shape)
        return make_error(m.path + ": graph input '" + name + "'",
                          "expects shape " + shape_str(ti->second.shape) + ", got " + shape_str(v.shape));
    }
    env[name] = v;
  }
  return std::unique_ptr<ProgramValues>(new ProgramValues(**h, std::move(env)));
}

Status ProgramValues::run_host(size_t index) {
  const Model& m = h_.model;
  if (index >= m.nodes.size())
    return make_error(m.path + ": host step " + std::to_string(index), "names no node of the model");
  return onnxfe::run_host(m, m.nodes[index], env_);
}

TensorType SegmentLayout::host_type(const plan::TensorBinding& b) const {
  TensorType t{u8.at(b.name) ? kUint8 : kInt8, b.shape, true};
  if (nhwc.at(b.name)) t.shape = {b.shape[0], b.shape[3], b.shape[1], b.shape[2]};
  return t;
}

Expected<Tensor> ProgramValues::to_device(int segment, const plan::TensorBinding& b) {
  const Model& m = h_.model;
  const SegmentLayout& seg = h_.layouts.at(size_t(segment));
  auto vit = env_.find(b.name);
  if (vit == env_.end() || !seg.nhwc.count(b.name) || !seg.u8.count(b.name))
    return make_error(m.path + ": segment " + std::to_string(segment) + " input '" + b.name + "'", "has no value");
  const Value& v = vit->second;
  // The segment was compiled for this type and shape: anything else at run
  // time is refused before a byte is converted.
  const TensorType want = seg.host_type(b);
  if (v.type != want.type || v.shape != want.shape)
    return make_error(m.path + ": tensor '" + b.name + "'", "is " + elem_name(v.type) + " " + shape_str(v.shape) +
                                                                " at run time; the segment was compiled for " +
                                                                elem_name(want.type) + " " + shape_str(want.shape));
  return onnxfe::to_device(v, seg.nhwc.at(b.name), seg.u8.at(b.name));
}

Status ProgramValues::from_device(int segment, const plan::TensorBinding& b, Tensor t) {
  const SegmentLayout& seg = h_.layouts.at(size_t(segment));
  if (!seg.nhwc.count(b.name) || !seg.u8.count(b.name))
    return make_error(h_.model.path + ": segment " + std::to_string(segment) + " output '" + b.name + "'",
                      "is no boundary tensor of the segment");
  env_[b.name] = onnxfe::from_device(t, seg.nhwc.at(b.name), seg.u8.at(b.name));
  return {};
}

Expected<std::vector<std::pair<std::string, Value>>> ProgramValues::outputs() const {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& o : h_.model.outputs) {
    auto it = env_.find(o);
    if (it == env_.end()) return make_error(h_.model.path + ": graph output '" + o + "'", "was not computed");
    out.emplace_back(o, it->second);
  }
  return out;
}

Expected<ProgramRun> run_program(const plan::Program& p, runtime::Device& dev,
                                 const std::map<std::string, Value>& inputs, bool check,
                                 const runtime::RunOptions& opt) {
  auto host = ProgramValues::bind(p, inputs);
  if (!host) return host.error();
  runtime::RunOptions ro = opt;
  ro.check = check;
  auto dr = runtime::run_program(dev, p, **host, ro);
  if (!dr) return dr.error();
  auto outs = (*host)->outputs();
  if (!outs) return outs.error();
  ProgramRun run;
  run.outputs = std::move(*outs);
  run.device = std::move(*dr);
  return run;
}

}  // namespace loom::onnxfe
