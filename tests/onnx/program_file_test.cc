// Program files with ONNX host steps in the library: plan::write_program /
// plan::read_program with the ONNX codec keep every step, host node
// (attributes included), constant, graph input type and boundary layout, and
// the program read back runs to the same outputs; a format-2 program plan
// that loom wrote before program files reads and runs as the model does.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/ref/ref_device.h"
#include "compiler/options.h"
#include "driver/compile.h"
#include "driver/fingerprint.h"
#include "frontend/onnx/host_codec.h"
#include "frontend/onnx/program.h"
#include "plan/plan.h"
#include "plan/program_file.h"
#include "device/device.h"

using namespace loom;
using namespace loom::onnxfe;

namespace {

void scalar(onnx::GraphProto* g, const std::string& name, int32_t type, double v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  if (type == onnx::TensorProto::FLOAT) t->add_float_data(float(v));
  else t->add_int32_data(int32_t(v));
}

void tensor(onnx::GraphProto* g, const std::string& name, int32_t type, std::vector<int64_t> dims, uint32_t seed) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  int64_t n = 1;
  for (auto d : dims) t->add_dims(d), n *= d;
  for (int64_t k = 0; k < n; ++k) {
    seed = seed * 1103515245u + 12345u;
    const int v = int((seed >> 16) % 101) - 50;
    if (type == onnx::TensorProto::FLOAT) t->add_float_data(1.0f + float(v) / 100.0f);
    else t->add_int32_data(v);
  }
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& name, const std::string& op,
                      std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void io(onnx::ValueInfoProto* v, const std::string& name, int32_t type, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (auto d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// x [4, 8] -> Q -> QLinearMatMul (segment 0) -> DQ -> Transpose -> LayerNorm
// -> Transpose -> Softmax -> Q -> QLinearMatMul (segment 1) -> y int8 [4, 5].
std::string two_segment_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("lib");
  const int32_t F = onnx::TensorProto::FLOAT, I8 = onnx::TensorProto::INT8;
  scalar(g, "xs", F, 0.05), scalar(g, "xz", I8, 2);
  tensor(g, "b1", I8, {8, 6}, 1), scalar(g, "bs1", F, 0.02), scalar(g, "bz1", I8, 0);
  scalar(g, "ys1", F, 0.1), scalar(g, "yz1", I8, -3);
  tensor(g, "gamma", F, {4}, 2), tensor(g, "beta", F, {4}, 3);
  scalar(g, "hs", F, 1.0 / 256), scalar(g, "hz", I8, -128);
  tensor(g, "b2", I8, {6, 5}, 4), scalar(g, "bs2", F, 0.03), scalar(g, "bz2", I8, 0);
  scalar(g, "ys2", F, 0.02), scalar(g, "yz2", I8, 1);
  node(g, "q_x", "QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
  node(g, "mm1", "QLinearMatMul", {"xq", "xs", "xz", "b1", "bs1", "bz1", "ys1", "yz1"}, {"m1"});
  node(g, "dq_m1", "DequantizeLinear", {"m1", "ys1", "yz1"}, {"m1f"});
  auto* t1 = node(g, "tr1", "Transpose", {"m1f"}, {"t1"});
  auto* perm = t1->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1), perm->add_ints(0);
  auto* ln = node(g, "ln", "LayerNormalization", {"t1", "gamma", "beta"}, {"l"});
  auto* eps = ln->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(0.01f);
  *node(g, "tr2", "Transpose", {"l"}, {"t2"})->add_attribute() = *perm;
  auto* sm = node(g, "softmax", "Softmax", {"t2"}, {"s"});
  auto* ax = sm->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(-1);
  node(g, "q_s", "QuantizeLinear", {"s", "hs", "hz"}, {"sq"});
  node(g, "mm2", "QLinearMatMul", {"sq", "hs", "hz", "b2", "bs2", "bz2", "ys2", "yz2"}, {"y"});
  io(g->add_input(), "x", F, {4, 8});
  io(g->add_output(), "y", I8, {4, 5});
  return m.SerializeAsString();
}

/// The info of a program file compiled for tiny with `opt`.
plan::ProgramInfo tiny_info(const compiler::CompileOptions& opt = {}, std::string source = "", uint64_t hash = 0) {
  return plan::ProgramInfo{"tiny", "loom test", std::move(source), hash, compiler::options_to_json(opt).dump()};
}

Status write(const plan::Program& p, const plan::ProgramInfo& info, const std::string& path) {
  return plan::write_program(p, info, path, &host_codec());
}

Expected<plan::ProgramFile> read(const std::string& path) { return plan::read_program(path, &host_codec()); }

class ProgramFile : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::register_backend("ref", "golden model", ref::make_ref_device);
    cfg = spec::find_config("tiny");
    ASSERT_NE(cfg, nullptr);
    auto m = load_model_bytes(two_segment_model(), "lib.onnx", ".");
    ASSERT_TRUE(m) << m.error().str();
    auto p = build_program(*m, {}, *cfg, {});
    ASSERT_TRUE(p) << p.error().str();
    prog = std::move(*p);
    host = *host_model(prog, "test");
    path = (std::filesystem::temp_directory_path() / ("loom_progfile_" + std::to_string(::getpid()) + ".plan")).string();
  }
  void TearDown() override { std::filesystem::remove(path); }

  const spec::HwConfig* cfg = nullptr;
  plan::Program prog;
  const HostModel* host = nullptr;  // prog's
  std::string path;
};

TEST_F(ProgramFile, RoundTripKeepsEverything) {
  ASSERT_EQ(prog.segments.size(), 2u);
  compiler::CompileOptions opt;
  opt.num_cores = 2;
  opt.placement = compiler::Placement::Pipeline;
  ASSERT_TRUE(write(prog, tiny_info(opt, "/src/lib.onnx", 0x1234abcdu), path).is_ok());
  auto r = read(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->version, plan::kProgramFormatVersion);
  EXPECT_EQ(r->info.config, "tiny");
  EXPECT_EQ(r->info.source, "/src/lib.onnx");
  EXPECT_EQ(r->info.source_hash, 0x1234abcdu);
  auto back = compiler::options_from_json(nlohmann::json::parse(r->info.compile_options), *cfg, "test");
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(back->num_cores, 2);
  EXPECT_EQ(back->placement, compiler::Placement::Pipeline);
  EXPECT_TRUE(compiler::options_diff(*back, opt).empty());
  const plan::Program& q = r->program;
  auto qh = host_model(q, "test");
  ASSERT_TRUE(qh) << qh.error().str();
  const HostModel& qm = **qh;
  EXPECT_EQ(q.fallback_ops(), prog.fallback_ops());
  EXPECT_EQ(q.notes, prog.notes);
  EXPECT_EQ(qm.onnx_nodes, host->onnx_nodes);
  EXPECT_EQ(qm.model.inputs, host->model.inputs);
  EXPECT_EQ(qm.model.outputs, host->model.outputs);
  EXPECT_EQ(qm.model.opset, 17);
  EXPECT_EQ(qm.model.types.at("x").shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(qm.model.types.at("x").type, int32_t(kFloat));
  // The same steps: segment k, or a host node equal in every field.
  const auto& qs = q.steps;
  const auto& ps = prog.steps;
  ASSERT_EQ(qs.size(), ps.size());
  for (size_t k = 0; k < qs.size(); ++k) {
    ASSERT_EQ(qs[k].segment, ps[k].segment) << "step " << k;
    if (qs[k].on_device()) continue;
    const Node& a = host->model.nodes[ps[k].host];
    const Node& b = qm.model.nodes[qs[k].host];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.domain, b.domain);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.outputs, b.outputs);
    ASSERT_EQ(a.attrs.size(), b.attrs.size()) << a.name;
    for (const auto& [name, x] : a.attrs) {
      const Attr& y = b.attrs.at(name);
      EXPECT_EQ(x.type, y.type);
      EXPECT_EQ(x.i, y.i);
      EXPECT_EQ(x.f, y.f);
      EXPECT_EQ(x.s, y.s);
      EXPECT_EQ(x.ints, y.ints);
      EXPECT_EQ(x.floats, y.floats);
    }
    for (const auto& i : a.inputs) {
      auto c = host->model.consts.find(i);
      if (c == host->model.consts.end()) continue;
      const Value& v = qm.model.consts.at(i);
      EXPECT_EQ(v.type, c->second.type) << i;
      EXPECT_EQ(v.shape, c->second.shape) << i;
      EXPECT_EQ(v.f, c->second.f) << i;
      EXPECT_EQ(v.i, c->second.i) << i;
    }
  }
  EXPECT_EQ(qm.model.consts.count("b1"), 0u) << "segment weights belong in the segment plans";
  ASSERT_EQ(q.segments.size(), prog.segments.size());
  ASSERT_EQ(qm.layouts.size(), host->layouts.size());
  for (size_t k = 0; k < q.segments.size(); ++k) {
    const SegmentLayout& a = host->layouts[k];
    const SegmentLayout& b = qm.layouts[k];
    const plan::Segment& pa = prog.segments[k];
    const plan::Segment& pb = q.segments[k];
    EXPECT_EQ(pa.ops, pb.ops);
    EXPECT_EQ(pa.inputs, pb.inputs);
    EXPECT_EQ(pa.outputs, pb.outputs);
    EXPECT_EQ(a.nhwc, b.nhwc);
    EXPECT_EQ(a.u8, b.u8);
    EXPECT_EQ(plan::encode_plan(pa.plan), plan::encode_plan(pb.plan));
  }
}

TEST_F(ProgramFile, ReusableDriverCompilesWhatAFirstCompileGivesUnderEveryOptionSet) {
  // Host steps between two device segments: partitioned once, compiled
  // under each option set, equal to a compile from the start.
  auto m = load_model_bytes(two_segment_model(), "lib.onnx", ".");
  ASSERT_TRUE(m) << m.error().str();
  const auto src = driver::Source::onnx_model(*m);
  auto r = driver::Reusable::prepare(src, *cfg);
  ASSERT_TRUE(r) << r.error().str();
  std::set<std::string> distinct;
  for (const auto& opt : driver::option_sets()) {
    auto want = driver::compile_program(src, *cfg, opt);
    auto got = r->compile(opt);
    ASSERT_EQ(bool(want), bool(got));
    if (!want) {
      EXPECT_EQ(want.error().str(), got.error().str());
      continue;
    }
    EXPECT_EQ(want->segments.size(), 2u);
    EXPECT_EQ(driver::fingerprint(*want), driver::fingerprint(*got)) << compiler::options_to_json(opt).dump();
    distinct.insert(driver::fingerprint(*got));
  }
  EXPECT_GE(distinct.size(), 3u) << "the option sets change the program";
}

TEST_F(ProgramFile, ReadBackRunsToTheSameOutputs) {
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  auto r = read(path);
  ASSERT_TRUE(r) << r.error().str();
  Value x = Value::make(kFloat, {4, 8});
  for (int64_t k = 0; k < x.numel(); ++k) x.f[size_t(k)] = float((k * 37) % 23 - 11) / 9.0f;
  const std::map<std::string, Value> in{{"x", x}};
  auto a = run_program(prog, "ref", *cfg, in, /*check=*/true);
  ASSERT_TRUE(a) << a.error().str();
  EXPECT_TRUE(a->device.mismatches.empty());
  EXPECT_EQ(a->device.checked_segments, int(a->device.segments.size()));
  auto b = run_program(r->program, "ref", *cfg, in);
  ASSERT_TRUE(b) << b.error().str();
  ASSERT_EQ(a->outputs.size(), 1u);
  ASSERT_EQ(b->outputs.size(), 1u);
  EXPECT_EQ(b->outputs[0].first, "y");
  EXPECT_EQ(b->outputs[0].second.type, int32_t(kInt8));
  EXPECT_EQ(b->outputs[0].second.shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(a->outputs[0].second.i, b->outputs[0].second.i);
  EXPECT_EQ(a->device.instructions, b->device.instructions);
  // Not a degenerate output: the values vary.
  std::set<int64_t> distinct(b->outputs[0].second.i.begin(), b->outputs[0].second.i.end());
  EXPECT_GT(distinct.size(), 3u);
}

TEST_F(ProgramFile, SegmentGraphsRebuildThePlansSegmentsWithoutCompiling) {
  auto m = load_model_bytes(two_segment_model(), "lib.onnx", ".");
  ASSERT_TRUE(m) << m.error().str();
  std::vector<std::vector<std::string>> nodes;
  for (const auto& s : prog.segments) nodes.push_back(s.ops);
  auto g = segment_graphs(*m, nodes);
  ASSERT_TRUE(g) << g.error().str();
  ASSERT_EQ(g->size(), prog.segments.size());
  for (size_t k = 0; k < g->size(); ++k) {
    const ir::Graph& a = prog.segments[k].graph;
    const ir::Graph& b = (*g)[k].graph;
    EXPECT_EQ(a.inputs, b.inputs) << k;
    EXPECT_EQ(a.outputs, b.outputs) << k;
    ASSERT_EQ(a.nodes.size(), b.nodes.size()) << k;
    for (size_t n = 0; n < a.nodes.size(); ++n) EXPECT_EQ(a.nodes[n].name, b.nodes[n].name);
    EXPECT_EQ(host->layouts[k].nhwc, (*g)[k].layout.nhwc);
    EXPECT_EQ(host->layouts[k].u8, (*g)[k].layout.u8);
    // The same reference outputs on the same inputs.
    const auto in = ir::random_inputs(a, 3);
    auto ra = ir::run_reference(a, in);
    auto rb = ir::run_reference(b, in);
    ASSERT_TRUE(ra && rb);
    for (const auto& o : a.outputs) EXPECT_EQ(ra->at(o).data, rb->at(o).data) << o;
  }
  nodes[1].push_back("no_such_node");
  auto bad = segment_graphs(*m, nodes);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().str().find("segment 1"), std::string::npos) << bad.error().str();
  EXPECT_NE(bad.error().str().find("'no_such_node'"), std::string::npos) << bad.error().str();
}

TEST_F(ProgramFile, SingleGraphReaderRefusesAProgramPlan) {
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  EXPECT_EQ(plan::plan_format_version(path), plan::kProgramFormatVersion);
  auto r = plan::read_plan(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("format_version"), std::string::npos) << r.error().str();
  EXPECT_NE(r.error().str().find("program plan"), std::string::npos) << r.error().str();
}

TEST_F(ProgramFile, ProgramReaderReadsASingleGraphPlanAsOneSegment) {
  ASSERT_TRUE(plan::write_plan(prog.segments[0].plan, path).is_ok());
  auto r = read(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->version, plan::kPlanFormatVersion);
  ASSERT_EQ(r->program.segments.size(), 1u);
  ASSERT_EQ(r->program.steps.size(), 1u);
  EXPECT_EQ(r->program.host, nullptr);
  EXPECT_EQ(plan::encode_plan(r->program.segments[0].plan), plan::encode_plan(prog.segments[0].plan));
}

TEST_F(ProgramFile, HostStepsNeedTheirCodec) {
  // Written without a codec: nothing written, one line.
  Status s = plan::write_program(prog, tiny_info(), path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().str().find("'onnx' need their codec"), std::string::npos) << s.error().str();
  EXPECT_FALSE(std::filesystem::exists(path));
  // Read without one: refused, naming the codec the file needs.
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  EXPECT_EQ(plan::host_codec_of(path), "onnx");
  auto r = plan::read_program(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("host: field 'codec': host steps of 'onnx'"), std::string::npos) << r.error().str();
}

std::string fixture(const std::string& name) { return std::string(LOOM_SOURCE_DIR) + "/tests/plan/fixtures/" + name; }

TEST_F(ProgramFile, FormatTwoProgramPlanReadsAndRunsAsTheModel) {
  // Written by loom before program files (format 2): read through the same
  // checks, run to the outputs of the model compiled now, and written again
  // as a program file (format 3) that reads back to the same program.
  auto old = read(fixture("two_segments.tiny.v2.plan"));
  ASSERT_TRUE(old) << old.error().str();
  EXPECT_EQ(old->version, plan::kOnnxProgramFormatVersion);
  EXPECT_EQ(old->info.config, "tiny");
  const plan::Program& q = old->program;
  EXPECT_EQ(q.segments.size(), 2u);
  EXPECT_EQ(q.steps.size(), 7u);
  EXPECT_EQ(q.fallback_ops(), (std::vector<std::string>{"quant_x (QuantizeLinear)", "deq_c1 (DequantizeLinear)",
                                                        "softmax (Softmax)", "quant_s (QuantizeLinear)",
                                                        "deq_y (DequantizeLinear)"}));
  auto m = load_model(fixture("two_segments.onnx"));
  ASSERT_TRUE(m) << m.error().str();
  auto now = build_program(*m, {}, *cfg, {});
  ASSERT_TRUE(now) << now.error().str();
  Value x = Value::make(kFloat, {1, 3, 6, 6});
  for (int64_t k = 0; k < x.numel(); ++k) x.f[size_t(k)] = float((k * 29) % 31 - 15) / 7.0f;
  const std::map<std::string, Value> in{{"x", x}};
  auto a = run_program(*now, "ref", *cfg, in);
  auto b = run_program(q, "ref", *cfg, in);
  ASSERT_TRUE(a && b) << (a ? b.error().str() : a.error().str());
  ASSERT_EQ(b->outputs.size(), 1u);
  EXPECT_EQ(a->outputs[0].second.f, b->outputs[0].second.f);
  EXPECT_EQ(a->device.instructions, b->device.instructions);

  ASSERT_TRUE(write(q, old->info, path).is_ok());
  auto again = read(path);
  ASSERT_TRUE(again) << again.error().str();
  EXPECT_EQ(again->version, plan::kProgramFormatVersion);
  EXPECT_EQ(again->info.compile_options, old->info.compile_options);
  EXPECT_EQ(again->program.fallback_ops(), q.fallback_ops());
  ASSERT_EQ(again->program.steps.size(), q.steps.size());
  for (size_t k = 0; k < q.steps.size(); ++k) {
    EXPECT_EQ(again->program.steps[k].segment, q.steps[k].segment);
    EXPECT_EQ(again->program.steps[k].host, q.steps[k].host);
  }
  for (size_t k = 0; k < q.segments.size(); ++k)
    EXPECT_EQ(plan::encode_plan(again->program.segments[k].plan), plan::encode_plan(q.segments[k].plan));
}

/// The file at `path` with its container's metadata edited by `edit` and, if
/// `flags` is given, the header's flags word set; the checksum recomputed,
/// so only the reader's own checks can refuse it.
void tamper(const std::string& path, const std::function<void(nlohmann::json&)>& edit, uint32_t flags = 0) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto c = plan::decode_container(bytes, path);
  ASSERT_TRUE(c) << c.error().str();
  nlohmann::json meta = nlohmann::json::parse(c->meta);
  edit(meta);
  std::string out = plan::encode_container(c->version, meta.dump(), c->payload);
  for (int k = 0; k < 4; ++k) out[size_t(12 + k)] = char((flags >> (8 * k)) & 0xff);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << out;
}

void expect_refused(Expected<plan::ProgramFile> r, const std::string& needle) {
  ASSERT_FALSE(r) << "accepted; expected an error with: " << needle;
  EXPECT_NE(r.error().str().find(needle), std::string::npos) << r.error().str();
}

TEST_F(ProgramFile, ReaderRefusesFlagsAndU8FlagsThatDisagreeWithTheModel) {
  const plan::ProgramInfo info = tiny_info();
  ASSERT_TRUE(write(prog, info, path).is_ok());
  ASSERT_TRUE(read(path)) << "the untampered plan reads back";
  tamper(path, [](nlohmann::json&) {}, 0xdeadbeef);
  expect_refused(read(path), "field 'flags'");
  // Segment 0 reads 'xq', which the host model's QuantizeLinear writes as int8.
  ASSERT_TRUE(write(prog, info, path).is_ok());
  tamper(path, [](nlohmann::json& m) { m["host"]["layouts"][0]["u8"] = {"xq"}; });
  expect_refused(read(path), "'xq' is int8 in the host model, flagged u8");
}

// Rewrites the host model inside the program plan at `path` (and, through
// `edit_meta`, its metadata).
void edit_host(const std::string& path, const std::function<void(onnx::ModelProto&)>& edit_model,
               const std::function<void(nlohmann::json&)>& edit_meta = [](nlohmann::json&) {}) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  auto c = plan::decode_container(bytes, path);
  ASSERT_TRUE(c) << c.error().str();
  nlohmann::json meta = nlohmann::json::parse(c->meta);
  const size_t host_bytes = meta["host"]["bytes"].get<size_t>();
  onnx::ModelProto host;
  ASSERT_TRUE(host.ParseFromString(c->payload.substr(0, host_bytes)));
  edit_model(host);
  edit_meta(meta);
  const std::string h = host.SerializeAsString();
  meta["host"]["bytes"] = h.size();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << plan::encode_container(c->version, meta.dump(), h + c->payload.substr(host_bytes));
}

onnx::NodeProto* host_node(onnx::ModelProto& host, const std::string& op) {
  for (auto& n : *host.mutable_graph()->mutable_node())
    if (n.op_type() == op) return &n;
  return nullptr;
}

TEST_F(ProgramFile, ReaderRefusesAHostNodeWithMoreOperandsThanItsSchema) {
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  edit_host(path, [](onnx::ModelProto& host) {
    onnx::NodeProto* n = host_node(host, "Transpose");
    ASSERT_NE(n, nullptr);
    for (int k = 0; k < 4; ++k) n->add_input(n->input(0));  // a Transpose with 5 inputs
  });
  expect_refused(read(path), "5 inputs; Transpose takes 1 to 1");
}

TEST_F(ProgramFile, ReaderRefusesHostStepsWhoseShapesDisagreeWithASegment) {
  // The second Transpose made an identity: softmax and its QuantizeLinear
  // then give segment 1 a [6, 4] tensor where its plan reads [4, 6].
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  edit_host(path, [](onnx::ModelProto& host) {
    for (auto& n : *host.mutable_graph()->mutable_node())
      if (n.op_type() == "Transpose" && n.input(0) == "l") {
        n.mutable_attribute(0)->clear_ints();
        n.mutable_attribute(0)->add_ints(0), n.mutable_attribute(0)->add_ints(1);
      }
  });
  expect_refused(read(path), "input 'sq': the host steps give int8 [6,4], the segment's plan reads int8 [4,6]");
}

TEST_F(ProgramFile, ReaderRefusesAHostStepThatBroadcastsPastTheTensorLimit) {
  // Two 32,768-element constants added with numpy broadcasting: 2^30
  // elements (4 GiB of float), refused at load instead of run.
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  size_t nodes = 0;
  edit_host(
      path,
      [&](onnx::ModelProto& host) {
        auto* g = host.mutable_graph();
        for (const auto& [name, dims] :
             {std::pair{"c1", std::vector<int64_t>{32768, 1}}, std::pair{"c2", std::vector<int64_t>{1, 32768}}}) {
          auto* t = g->add_initializer();
          t->set_name(name);
          t->set_data_type(onnx::TensorProto::FLOAT);
          for (auto d : dims) t->add_dims(d);
          t->set_raw_data(std::string(32768 * 4, '\0'));
        }
        node(g, "blow_up", "Add", {"c1", "c2"}, {"big"});
        nodes = size_t(g->node_size());
      },
      [&](nlohmann::json& meta) {
        meta["steps"].push_back({{"host", nodes - 1}});
        meta["fallback_ops"].push_back("blow_up (Add)");
      });
  expect_refused(read(path), "tensor 'big'");
}

TEST_F(ProgramFile, ReaderRefusesFallbackOpsThatAreNotTheHostSteps) {
  ASSERT_TRUE(write(prog, tiny_info(), path).is_ok());
  edit_host(
      path, [](onnx::ModelProto&) {},
      [](nlohmann::json& meta) {
        ASSERT_FALSE(meta["fallback_ops"].empty());
        meta["fallback_ops"][0] = "elsewhere (Relu)";
      });
  expect_refused(read(path), "field 'fallback_ops': not the ops of the host steps");
}

TEST_F(ProgramFile, PlanReaderRefusesABindingScaleOrZeroPointOutOfRange) {
  for (const auto& [field, value, needle] :
       {std::tuple{"scale", -1.0, "field 'scale'"}, std::tuple{"zero_point", 1000.0, "field 'zero_point'"}}) {
    ASSERT_TRUE(plan::write_plan(prog.segments[0].plan, path).is_ok());
    tamper(path, [&, f = field, v = value](nlohmann::json& m) {
      if (std::string(f) == "scale") m["inputs"][0][f] = v;
      else m["inputs"][0][f] = int(v);
    });
    auto r = plan::read_plan(path);
    ASSERT_FALSE(r) << field << " " << value << " accepted";
    EXPECT_NE(r.error().str().find(needle), std::string::npos) << r.error().str();
  }
}

}  // namespace
