// HLS compute units (hls/README.md "As compute units"): a unit call of each
// kernel on ref and tlm bit-exact against the direct reference of the same
// one-node graph; the unit latency on tlm equal to the latency model; bad
// calls as one-line errors with nothing written; and plans compiled with
// --hls auto bit-exact on ref and tlm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "compiler/hetero.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/op_quant.h"
#include "loom_hls_latency.h"
#include "loom_hls_units.h"
#include "runtime/executor.h"
#include "tlm/tlm_device.h"

namespace loom {
namespace {

using DeviceMaker = std::function<Expected<std::unique_ptr<runtime::Device>>(const spec::HwConfig&)>;

const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

struct Backend {
  const char* name;
  DeviceMaker make;
};
const Backend kBackends[] = {{"ref", [](const spec::HwConfig& c) { return ref::make_ref_device(c); }},
                             {"tlm", [](const spec::HwConfig& c) { return tlm::make_tlm_device(c); }}};

/// A one-node graph, its seeded input values and the reference output.
struct NodeCase {
  std::string what;
  ir::Graph g;
  std::map<std::string, Tensor> inputs;
  Tensor want;
};

NodeCase finish(std::string what, ir::GraphBuilder& gb, uint64_t seed) {
  NodeCase c;
  c.what = std::move(what);
  c.g = gb.graph();
  c.inputs = ir::random_inputs(c.g, seed);
  auto out = ir::run_reference(c.g, c.inputs);
  EXPECT_TRUE(out) << out.error().str();
  if (out) c.want = out->at(c.g.outputs.at(0));
  return c;
}

std::vector<NodeCase> cases() {
  std::vector<NodeCase> v;
  {
    ir::GraphBuilder gb("conv3x3", 11);
    const auto y = gb.conv("cv", gb.input("x", {1, 9, 7, 5}), {20, 3, 3, 2, 1, 1, true});
    gb.output(y);
    gb.graph().nodes[0].attrs.act.lo = gb.graph().tensor(y).q.zero_point;  // fused ReLU
    v.push_back(finish("conv 3x3 stride 2 pad 1 relu", gb, 1));
  }
  {
    ir::GraphBuilder gb("depthwise", 12);
    gb.output(gb.conv("dw", gb.input("x", {1, 6, 6, 8}), {8, 3, 3, 1, 1, 8, true}));
    v.push_back(finish("depthwise conv 3x3", gb, 2));
  }
  {
    ir::GraphBuilder gb("gemm", 13);
    gb.output(gb.gemm("fc", gb.input("a", {5, 40}), 19, true));
    v.push_back(finish("gemm 5x40x19", gb, 3));
  }
  {
    ir::GraphBuilder gb("maxpool", 14);
    gb.output(gb.pool("mp", ir::OpKind::MaxPool, gb.input("x", {1, 8, 8, 12}), 3, 2, 1));
    v.push_back(finish("maxpool 3x3 s2 p1", gb, 4));
  }
  {
    ir::GraphBuilder gb("avgpool", 15);
    gb.output(gb.pool("ap", ir::OpKind::AvgPool, gb.input("x", {1, 6, 6, 10}), 2, 2, 0));
    v.push_back(finish("avgpool 2x2", gb, 5));
  }
  {
    ir::GraphBuilder gb("gap", 16);
    gb.output(gb.pool("gp", ir::OpKind::GlobalAvgPool, gb.input("x", {1, 5, 5, 24}), 1, 1, 0));
    v.push_back(finish("global avgpool", gb, 6));
  }
  {
    ir::GraphBuilder gb("add", 17);
    gb.output(gb.add("ad", gb.input("a", {1, 4, 4, 9}), gb.input("b", {1, 4, 4, 9}, 0.03, 5)));
    v.push_back(finish("add", gb, 7));
  }
  {
    ir::GraphBuilder gb("relu", 18);
    gb.output(gb.unary("rl", ir::OpKind::Relu, gb.input("x", {1, 3, 3, 7})));
    v.push_back(finish("relu", gb, 8));
  }
  return v;
}

/// Writes the node's operands to `dev` (mac weights in the graph's layout,
/// the (bias, mult, shift) table), runs the unit call for rows [row0, end)
/// and returns y (pre-filled with 0x5A) and the device cycles it took.
struct UnitRun {
  Tensor y;
  uint64_t cycles = 0, model = 0;
};
Expected<UnitRun> run_on_unit(runtime::Device& dev, const NodeCase& c, int64_t row0 = 0) {
  const ir::Node& n = c.g.nodes.at(0);
  const auto put = [&](std::span<const uint8_t> bytes) -> Expected<uint64_t> {
    auto a = dev.alloc(std::max<size_t>(bytes.size(), 1));
    if (!a) return a.error();
    if (!bytes.empty()) LOOM_TRY(dev.write(*a, bytes));
    return *a;
  };
  compiler::UnitOperands at;
  const Tensor& x = c.inputs.at(n.inputs[0]);
  auto xa = put(x.data);
  if (!xa) return xa.error();
  at.x = *xa;
  if (n.op == ir::OpKind::Conv2d || n.op == ir::OpKind::Gemm) {
    auto wa = put(c.g.tensor(n.inputs[1]).data.data);
    if (!wa) return wa.error();
    at.w = *wa;
    auto q = ir::mac_quant(c.g, n);
    if (!q) return q.error();
    std::vector<int32_t> p;
    for (size_t j = 0; j < q->mult.size(); ++j) {
      int32_t b = 0;
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) b = c.g.tensor(n.inputs[2]).data.i32()[j];
      p.insert(p.end(), {b, q->mult[j].mult, q->mult[j].shift});
    }
    auto pa = put({reinterpret_cast<const uint8_t*>(p.data()), p.size() * 4});
    if (!pa) return pa.error();
    at.params = *pa;
  } else if (n.op == ir::OpKind::Add) {
    auto ba = put(c.inputs.at(n.inputs[1]).data);
    if (!ba) return ba.error();
    at.w = *ba;
  }
  UnitRun r;
  r.y = Tensor(DType::I8, c.want.shape);
  std::fill(r.y.data.begin(), r.y.data.end(), uint8_t(0x5A));
  auto ya = put(r.y.data);
  if (!ya) return ya.error();
  at.y = *ya;
  auto call = compiler::unit_call_for_node(c.g, n, at, 0, row0);
  if (!call) return call.error();
  r.model = hls::latency_cycles(*call);
  const uint64_t t0 = dev.cycles();
  auto h = dev.start_unit(*call);
  if (!h) return h.error();
  LOOM_TRY(dev.wait_unit(*h, 1'000'000'000));
  r.cycles = dev.cycles() - t0;
  LOOM_TRY(dev.read(at.y, r.y.data));
  return r;
}

TEST(HlsUnits, EveryKernelBitExactOnRefAndTlm) {
  const auto cs = cases();
  for (const auto& b : kBackends) {
    auto dev = b.make(tiny());
    ASSERT_TRUE(dev) << dev.error().str();
    for (const auto& c : cs) {
      SCOPED_TRACE(std::string(b.name) + ": " + c.what);
      auto r = run_on_unit(**dev, c);
      ASSERT_TRUE(r) << r.error().str();
      EXPECT_TRUE(r->y == c.want) << "unit output differs from the direct reference";
      if ((*dev)->has_time()) {
        // Uncontended (the cores are idle), the unit takes exactly its latency model.
        EXPECT_EQ(r->cycles, r->model);
        EXPECT_GT(r->model, loom_hls::kDataflowOverhead);
      }
    }
  }
}

TEST(HlsUnits, RowRangeWritesOnlyItsRows) {
  const auto cs = cases();
  const NodeCase& conv = cs[0];  // 5 x 4 output pixels
  const int64_t ow = conv.want.shape[2], m = conv.want.shape[3], row0 = 2 * ow;
  for (const auto& b : kBackends) {
    SCOPED_TRACE(b.name);
    auto dev = b.make(tiny());
    ASSERT_TRUE(dev) << dev.error().str();
    auto r = run_on_unit(**dev, conv, row0);
    ASSERT_TRUE(r) << r.error().str();
    for (int64_t i = 0; i < conv.want.numel(); ++i) {
      const uint8_t want = i < row0 * m ? uint8_t(0x5A) : conv.want.data[size_t(i)];
      ASSERT_EQ(r->y.data[size_t(i)], want) << "element " << i;
    }
  }
}

TEST(HlsUnits, BadCallsAreOneLineErrorsAndWriteNothing) {
  const auto cs = cases();
  spec::HwConfig none = tiny();
  none.hls_conv_units = 0;
  auto dev = ref::make_ref_device(none);
  ASSERT_TRUE(dev) << dev.error().str();
  auto r = run_on_unit(**dev, cs[0]);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("has 0 conv units"), std::string::npos) << r.error().str();

  auto d2 = ref::make_ref_device(tiny());
  ASSERT_TRUE(d2) << d2.error().str();
  runtime::UnitCall bad{"loom_hls_fft", 0, {}};
  auto h = (*d2)->start_unit(bad);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().str().find("unknown kernel 'loom_hls_fft'"), std::string::npos) << h.error().str();
  bad = {"loom_hls_gemm", 1, std::vector<int64_t>(12, 0)};
  h = (*d2)->start_unit(bad);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().str().find("has 1 gemm unit"), std::string::npos) << h.error().str();
  bad = {"loom_hls_gemm", 0, {0, 0, 0}};
  h = (*d2)->start_unit(bad);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().str().find("expected 12 arguments"), std::string::npos) << h.error().str();

  // A kernel status (clip lo > hi): an error naming it; y keeps its bytes.
  auto ya = (*d2)->alloc(64);
  ASSERT_TRUE(ya);
  std::vector<uint8_t> fill(64, 0x5A), back(64, 0);
  ASSERT_TRUE((*d2)->write(*ya, fill));
  runtime::UnitCall clip{"loom_hls_eltwise", 0, {int64_t(*ya), int64_t(*ya), int64_t(*ya), 64, 0, 0, 0, 0,
                                                  1 << 30, 1, 0, 1, 100, 10}};
  h = (*d2)->start_unit(clip);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().str().find("kBadClamp"), std::string::npos) << h.error().str();
  EXPECT_EQ(h.error().str().find('\n'), std::string::npos);
  ASSERT_TRUE((*d2)->read(*ya, back));
  EXPECT_EQ(back, fill);
}

/// Runs a compiled one-output plan of `g` on ref and tlm (tiny) with seeded
/// inputs; each output must equal the direct reference's.
void expect_bit_exact_on_ref_and_tlm(const ir::Graph& g, const plan::Plan& p, uint64_t seed) {
  const auto inputs = ir::random_inputs(g, seed);
  auto want = ir::run_reference(g, inputs);
  ASSERT_TRUE(want) << want.error().str();
  for (const auto& b : kBackends) {
    SCOPED_TRACE(b.name);
    auto dev = b.make(tiny());
    ASSERT_TRUE(dev) << dev.error().str();
    auto res = runtime::execute(**dev, p, inputs);
    ASSERT_TRUE(res) << res.error().str();
    ASSERT_EQ(res->outputs.size(), 1u);
    EXPECT_TRUE(res->outputs[0].second == want->at(g.outputs[0])) << "differs from the direct reference";
  }
}

/// A small CNN whose first conv the cost model sends to a unit on tiny.
ir::Graph hetero_graph() {
  ir::GraphBuilder gb("hetero", 21);
  auto x = gb.input("x", {1, 16, 16, 8});
  x = gb.conv("c1", x, {16, 3, 3, 1, 1, 1, true});
  x = gb.conv("c2", x, {16, 1, 1, 1, 0, 1, true});
  x = gb.pool("p", ir::OpKind::MaxPool, x, 2, 2, 0);
  x = gb.flatten("f", x);
  gb.output(gb.gemm("fc", x, 10, true));
  return gb.graph();
}

TEST(HlsUnits, CompiledPlanWithHlsAutoBitExactOnRefAndTlm) {
  ir::Graph g = hetero_graph();
  ASSERT_TRUE(ir::validate(g));
  compiler::CompileOptions opt;
  opt.hls = compiler::Hls::Auto;
  auto comp = compiler::compile(g, tiny(), opt);
  ASSERT_TRUE(comp) << comp.error().str();
  ASSERT_FALSE(comp->plan.unit_calls.empty()) << "the cost model kept every layer on the cores";
  auto off = compiler::compile(g, tiny(), compiler::CompileOptions{});
  ASSERT_TRUE(off) << off.error().str();
  EXPECT_TRUE(off->plan.unit_calls.empty());

  // The plan file keeps the unit calls.
  const std::string path = ::testing::TempDir() + "hetero.plan";
  ASSERT_TRUE(plan::write_plan(comp->plan, path));
  auto back = plan::read_plan(path);
  ASSERT_TRUE(back) << back.error().str();
  ASSERT_EQ(back->unit_calls.size(), comp->plan.unit_calls.size());
  EXPECT_EQ(back->unit_calls[0].args, comp->plan.unit_calls[0].args);
  EXPECT_EQ(back->unit_calls[0].wait_at, comp->plan.unit_calls[0].wait_at);

  expect_bit_exact_on_ref_and_tlm(g, *back, 5);
}

/// Depthwise and pointwise convs, a residual add of two activations and a
/// max pool: the hls-placement decisions per layer (golden, on tiny) and the
/// plan bit-exact on ref and tlm (a grouped conv reads its unit-layout weight
/// copy; an eltwise call has three pointer arguments, a pool call two).
TEST(HlsUnits, HeteroDecisionsOnDepthwiseAddPool) {
  ir::GraphBuilder gb("hetero_dw", 23);
  auto x = gb.input("x", {1, 16, 16, 32});
  auto d = gb.conv("dw", x, {32, 3, 3, 1, 1, 32, true});
  auto p = gb.conv("pw", d, {32, 1, 1, 1, 0, 1, true});
  auto y = gb.add("add", gb.unary("relu", ir::OpKind::Relu, d), p);
  gb.output(gb.pool("mp", ir::OpKind::MaxPool, y, 2, 2, 0));
  ir::Graph g = gb.graph();
  ASSERT_TRUE(ir::validate(g));
  compiler::CompileOptions opt;
  opt.hls = compiler::Hls::Auto;
  // On the cores' depthwise unit (the default) the depthwise conv runs
  // faster than on the conv unit (checked here), and so it does with group
  // packing on the array; on the array without packing, row windows and
  // image bands (one group a GEMM, gathered a byte a row) the unit wins.
  for (auto dw : {compiler::CompileOptions::Depthwise::Auto, compiler::CompileOptions::Depthwise::Off}) {
    opt.depthwise = dw;
    auto packed = compiler::compile(g, tiny(), opt);
    ASSERT_TRUE(packed) << packed.error().str();
    bool weighed = false;
    for (const auto& d2 : packed->decisions) {
      if (d2.pass != "hls-placement" || d2.node != "dw") continue;
      weighed = true;
      EXPECT_EQ(d2.text.rfind("cores:", 0), 0u) << d2.text;
    }
    EXPECT_TRUE(weighed);
  }
  opt.group_packing = false;
  opt.row_windows = compiler::CompileOptions::RowWindows::Off;
  opt.image_bands = compiler::CompileOptions::ImageBands::Off;
  auto comp = compiler::compile(g, tiny(), opt);
  ASSERT_TRUE(comp) << comp.error().str();
  std::map<std::string, std::string> dec;
  for (const auto& d2 : comp->decisions)
    if (d2.pass == "hls-placement") dec[d2.node] = d2.text;
  std::string all;
  for (const auto& [k, v] : dec) all += k + ": " + v + "\n";
  // The depthwise conv: the unit's 16 lanes beat the cores' gathers by ~2x.
  ASSERT_TRUE(dec.count("dw")) << all;
  EXPECT_EQ(dec["dw"].rfind("unit:", 0), 0u) << all;
  EXPECT_NE(dec["dw"].find("loom_hls_conv"), std::string::npos) << all;
  // Every pool and eltwise layer was weighed against its unit, by name.
  bool saw_pool = false;
  for (const auto& [k, v] : dec) {
    if (v.find("loom_hls_pool") != std::string::npos) saw_pool = true;
    EXPECT_TRUE(v.rfind("unit:", 0) == 0 || v.rfind("split:", 0) == 0 || v.rfind("cores:", 0) == 0) << k << ": " << v;
  }
  EXPECT_TRUE(saw_pool) << all;
  bool dw_call = false;
  for (const auto& u : comp->plan.unit_calls) {
    const std::string& layer = comp->plan.layers.at(u.layer).name;
    EXPECT_EQ(u.ptr_args, u.kernel == "loom_hls_pool" ? 2u : u.kernel == "loom_hls_eltwise" ? 3u : 4u) << layer;
    if (layer == "dw") {
      dw_call = true;
      ASSERT_GE(u.args.size(), 18u);
      EXPECT_EQ(u.args[17], 32) << "groups";
    }
  }
  EXPECT_TRUE(dw_call);
  expect_bit_exact_on_ref_and_tlm(g, comp->plan, 9);
}

/// A dense conv split by output pixels between the cores and the conv unit,
/// with the cores' share longer than their command rings hold: on tlm the
/// host refills the rings while the unit runs, so the split takes about
/// max(unit, cores' share) — not their sum, as when the cores idled after
/// their first ring until the unit was done — and less than the cores alone.
TEST(HlsUnits, SplitRunsTheCoresShareBesideTheUnit) {
  ir::GraphBuilder gb("hetero_split", 29);
  auto x = gb.input("x", {1, 96, 96, 8});
  gb.output(gb.conv("c", x, {16, 3, 3, 1, 1, 1, true}));
  ir::Graph g = gb.graph();
  ASSERT_TRUE(ir::validate(g));
  compiler::CompileOptions opt;
  opt.hls = compiler::Hls::Auto;
  auto comp = compiler::compile(g, tiny(), opt);
  ASSERT_TRUE(comp) << comp.error().str();
  auto off = compiler::compile(g, tiny(), compiler::CompileOptions{});
  ASSERT_TRUE(off) << off.error().str();
  long row0 = 0, rows = 0, unit = 0;
  for (const auto& d : comp->decisions) {
    if (d.text.rfind("split:", 0) != 0) continue;
    ASSERT_EQ(std::sscanf(d.text.c_str(),
                          "split: rows [0, %ld) of %ld on the cores (%*d cycles), [%*d, %*d) on "
                          "loom_hls_conv (%ld)",
                          &row0, &rows, &unit),
              3)
        << d.text;
  }
  ASSERT_GT(row0, 0) << "the conv was not split between the cores and the unit";
  uint64_t share = 0;
  for (const auto& s : comp->plan.cores) share = std::max<uint64_t>(share, s.size());
  ASSERT_GT(share, uint64_t(tiny().ring_depth)) << "the cores' share fits one ring: nothing to refill";

  const auto inputs = ir::random_inputs(g, 3);
  auto want = ir::run_reference(g, inputs);
  ASSERT_TRUE(want) << want.error().str();
  auto dev = tlm::make_tlm_device(tiny());
  ASSERT_TRUE(dev) << dev.error().str();
  auto split_run = runtime::execute(**dev, comp->plan, inputs);
  ASSERT_TRUE(split_run) << split_run.error().str();
  EXPECT_TRUE(split_run->outputs[0].second == want->at(g.outputs[0]));
  EXPECT_GT(split_run->ring_refills, 0u);
  auto cores_run = runtime::execute(**dev, off->plan, inputs);
  ASSERT_TRUE(cores_run) << cores_run.error().str();
  EXPECT_LT(split_run->cycles, cores_run->cycles);
  // The cores' share as measured: the cores-alone run scaled to its rows.
  const double cores_share = double(cores_run->cycles) * double(row0) / double(rows);
  EXPECT_LT(double(split_run->cycles), 1.15 * std::max(cores_share, double(unit)))
      << "cores alone " << cores_run->cycles << ", their share " << cores_share << ", unit " << unit;
}

}  // namespace
}  // namespace loom
