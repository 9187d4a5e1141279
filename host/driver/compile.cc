#include "driver/compile.h"

#include <filesystem>
#include <utility>

#include "common/hash.h"
#include "common/tensor_io.h"
#include "frontend/onnx/program.h"
#include "ir/builder.h"

namespace loom::driver {

ir::Graph gemm_chain_graph(const GemmChain& c) {
  ir::GraphBuilder b("gemm_chain", 7);
  std::string x = b.input("x", {c.rows, c.hidden});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = std::string("l").append(std::to_string(l));
    x = b.gemm(p + ".up", x, c.ffn);
    x = b.unary(p + ".relu", ir::OpKind::Relu, x);
    x = b.gemm(p + ".down", x, c.hidden);
  }
  b.output(x);
  return b.graph();
}

Source Source::graph_file(std::string path) {
  Source s;
  s.kind = Kind::Graph;
  s.path = std::move(path);
  return s;
}

Source Source::graph_of(ir::Graph g) {
  Source s;
  s.kind = Kind::Graph;
  s.graph = std::move(g);
  return s;
}

Source Source::onnx_file(std::string path, onnxfe::ShapeBinding shapes) {
  Source s;
  s.kind = Kind::Onnx;
  s.path = std::move(path);
  s.shapes = std::move(shapes);
  return s;
}

Source Source::onnx_model(onnxfe::Model m) {
  Source s;
  s.kind = Kind::Onnx;
  s.path = m.path;
  s.model = std::move(m);
  return s;
}

Source Source::gemm_chain(const GemmChain& c) {
  Source s;
  s.kind = Kind::GemmChain;
  s.chain = c;
  return s;
}

namespace {

/// One graph, one segment: its plan, predictions and decisions.
Expected<plan::Program> compile_graph(ir::Graph g, const spec::HwConfig& cfg, const compiler::CompileOptions& opt,
                                      const std::string& source) {
  if (Status s = ir::validate(g); !s) return s.error();
  auto r = compiler::compile(g, cfg, opt);
  if (!r) return r.error();
  if (!source.empty()) {
    auto bytes = read_file_bytes(source);
    r->plan.graph_source = source;
    r->plan.graph_hash = bytes ? fnv1a64(bytes->data(), bytes->size()) : 0;
  }
  plan::Program p;
  p.segments.push_back(compiler::segment_of(std::move(*r), std::move(g)));
  p.steps.push_back(plan::Step{0, 0});
  return p;
}

}  // namespace

Expected<plan::Program> compile_program(Source src, const spec::HwConfig& cfg, const compiler::CompileOptions& opt,
                                        const std::map<std::string, onnxfe::Value>& bound) {
  switch (src.kind) {
    case Source::Kind::Graph: {
      if (src.graph) return compile_graph(std::move(*src.graph), cfg, opt, "");
      const auto ext = std::filesystem::path(src.path).extension().string();
      if (ext != ".json")
        return make_error(src.path, "unknown model format '" + ext + "' (expected a .json graph or a plan)");
      auto g = ir::parse_graph_json(src.path);
      if (!g) return g.error();
      return compile_graph(std::move(*g), cfg, opt, src.path);
    }
    case Source::Kind::GemmChain:
      return compile_graph(gemm_chain_graph(src.chain), cfg, opt, "");
    case Source::Kind::Onnx: {
      if (!src.model) {
        auto m = onnxfe::load_model(src.path, src.shapes);
        if (!m) return m.error();
        src.model = std::move(*m);
      }
      onnxfe::ProgramOptions po;
      po.compile = opt;
      return onnxfe::build_program(std::move(*src.model), bound, cfg, po);
    }
  }
  return make_error(src.path, "unknown input kind");
}

Expected<Reusable> Reusable::prepare(Source src, const spec::HwConfig& cfg) {
  if (src.kind == Source::Kind::Onnx && !src.model) {
    auto m = onnxfe::load_model(src.path, src.shapes);
    if (!m) return m.error();
    src.model = std::move(*m);
  }
  Reusable r;
  r.cfg_ = &cfg;
  Source copy = src;
  auto base = compile_program(std::move(copy), cfg, {});
  if (!base) return base.error();
  r.base_ = std::move(*base);
  if (auto h = onnxfe::host_model(r.base_, src.path)) r.partial_ = (*h)->segments_on_host > 0;
  r.src_ = std::move(src);
  return r;
}

Expected<plan::Program> Reusable::compile(const compiler::CompileOptions& opt) const {
  const auto from_start = [&] { return compile_program(src_, *cfg_, opt); };
  if (partial_ || opt.exact_host) return from_start();
  plan::Program p;
  p.steps = base_.steps;
  p.host_ops = base_.host_ops;
  p.notes = base_.notes;
  p.host = base_.host;
  for (const auto& seg : base_.segments) {
    auto r = compiler::compile(seg.graph, *cfg_, opt);
    if (!r) return from_start();  // the same error, or the segment on the host, as a first compile gives
    plan::Segment s = compiler::segment_of(std::move(*r), seg.graph);
    s.ops = seg.ops;
    s.plan.graph_source = seg.plan.graph_source;
    s.plan.graph_hash = seg.plan.graph_hash;
    p.segments.push_back(std::move(s));
  }
  return p;
}

}  // namespace loom::driver
