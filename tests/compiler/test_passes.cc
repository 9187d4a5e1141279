// Golden tests per pass: input graph -> expected decisions, statistics and
// plan structure; plus the stream invariants every plan must satisfy.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <string>

#include "compiler/compiler.h"
#include "compiler/pass.h"
#include "ir/builder.h"
#include "plan/plan.h"
#include "residual_graphs.h"

namespace loom::compiler::test {
namespace {

using ir::OpKind;
using ir::GraphBuilder;
using ir::ConvSpec;

const spec::HwConfig& cfg(const char* n) { return *spec::find_config(n); }

CompileResult compile_ok(ir::Graph& g, const char* c = "tiny", CompileOptions o = {}) {
  Status v = ir::validate(g);
  EXPECT_TRUE(v.is_ok()) << v.str();
  auto r = compile(g, cfg(c), o);
  EXPECT_TRUE(r.is_ok()) << (r ? "" : r.error().str());
  return r ? std::move(*r) : CompileResult{};
}

int64_t stat(const CompileResult& r, const std::string& key) {
  for (const auto& [k, v] : r.stats)
    if (k == key) return v;
  return -1;
}

std::vector<std::string> decisions(const CompileResult& r, const std::string& pass) {
  std::vector<std::string> out;
  for (const auto& d : r.decisions)
    if (d.pass == pass) out.push_back(d.node + ": " + d.text);
  return out;
}

/// Replays one core's stream in program order as the golden model does:
/// every pop needs an earlier push; all queues are empty at END.
void expect_tokens_balanced(const std::vector<spec::Insn>& s) {
  // Queues: load->compute, compute->load, compute->store, store->compute.
  std::array<int64_t, 4> q{};
  for (size_t i = 0; i < s.size(); ++i) {
    const auto op = spec::Opcode(s[i].w[0] & 63u);
    const auto* info = spec::opcode_info(uint64_t(op));
    ASSERT_NE(info, nullptr);
    const bool pop_prev = spec::get_bits(s[i], 6, 1), pop_next = spec::get_bits(s[i], 7, 1);
    const bool push_prev = spec::get_bits(s[i], 8, 1), push_next = spec::get_bits(s[i], 9, 1);
    int pp = -1, pn = -1, up = -1, un = -1;  // queue indices for this unit
    switch (info->unit) {
      case spec::Unit::Load:
        pn = 1, un = 0;
        break;
      case spec::Unit::Compute:
        pp = 0, pn = 3, up = 1, un = 2;
        break;
      case spec::Unit::Store:
        pp = 2, up = 3;
        break;
      case spec::Unit::Control:
        EXPECT_FALSE(pop_prev || pop_next || push_prev || push_next) << "control insn " << i << " carries token flags";
        for (auto v : q) EXPECT_EQ(v, 0) << "tokens outstanding at control insn " << i;
        continue;
    }
    if (pop_prev) {
      ASSERT_TRUE(pp >= 0 && q[size_t(pp)] > 0) << "pop_prev without push at " << i;
      --q[size_t(pp)];
    }
    if (pop_next) {
      ASSERT_TRUE(pn >= 0 && q[size_t(pn)] > 0) << "pop_next without push at " << i;
      --q[size_t(pn)];
    }
    if (push_prev) {
      ASSERT_GE(up, 0) << "push_prev with no previous unit at " << i;
      ++q[size_t(up)];
    }
    if (push_next) {
      ASSERT_GE(un, 0) << "push_next with no next unit at " << i;
      ++q[size_t(un)];
    }
  }
}

void expect_valid_plan(const CompileResult& r, unsigned cores) {
  ASSERT_EQ(r.plan.cores.size(), cores);
  for (const auto& s : r.plan.cores) {
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(spec::Opcode(s.back().w[0] & 63u), spec::Opcode::END);
    expect_tokens_balanced(s);
  }
}

ir::Graph conv_relu_graph() {
  GraphBuilder b("conv_relu");
  const auto c = b.conv("conv1", b.input("x", {1, 8, 8, 16}), {32, 3, 3, 1, 1, 1});
  b.output(b.unary("relu1", OpKind::Relu, c));
  return b.graph();
}

// A pass that reads the fusion policy and keeps one statistic, declaring
// what it is told to.
class ProbePass final : public Pass {
 public:
  explicit ProbePass(PassInfo i) : info_(std::move(i)) {}
  const PassInfo& info() const override { return info_; }
  Status run(CompileState& s) override {
    if (s.fusion() == Fusion::Cost) bump("probed");
    return Status::ok();
  }

 private:
  PassInfo info_;
};

TEST(PassInfo, APassIsHeldToTheOptionsAndStatisticsItDeclares) {
  auto st = make_state(conv_relu_graph(), cfg("tiny"), {});
  ASSERT_TRUE(st.is_ok());
  ProbePass declared({"probe", {PassOption::Fusion}, {{"probed", "times probed"}}});
  EXPECT_TRUE(st->run_pass(declared).is_ok());
  ProbePass no_option({"probe", {}, {{"probed", "times probed"}}});
  auto e = st->run_pass(no_option);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.error().str().find("pass 'probe': internal error: reads option 'fusion'"), std::string::npos)
      << e.error().str();
  ProbePass no_stat({"probe", {PassOption::Fusion}, {{"other.*", "a family"}}});
  e = st->run_pass(no_stat);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.error().str().find("keeps statistic 'probed'"), std::string::npos) << e.error().str();
  ProbePass family({"probe", {PassOption::Fusion}, {{"prob.*", "not a prefix of 'probed' at the dot"}}});
  EXPECT_FALSE(st->run_pass(family).is_ok());
}

TEST(PassInfo, ThePipelineDeclaresEveryStatisticItKeeps) {
  std::vector<std::string> names;
  for (const auto& p : pipeline_passes()) names.push_back(p.name);
  ASSERT_EQ(names.size(), 14u);
  EXPECT_EQ(names.front(), "fold-transpose");
  EXPECT_EQ(names.back(), "hls-calls");
  // Every statistic of a compile is declared by the pass that kept it.
  ir::Graph g = conv_relu_graph();
  auto r = compile_ok(g);
  for (const auto& [key, v] : r.stats) {
    const auto dot = key.find('.');
    bool found = false;
    for (const auto& p : pipeline_passes())
      if (key.substr(0, dot) == p.name) found = p.keeps(key.substr(dot + 1));
    EXPECT_TRUE(found) << key;
  }
}

TEST(Legalize, CountsOpsAndRejectsNonConstantConvWeights) {
  ir::Graph g = conv_relu_graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "legalize.ops.conv2d"), 1);
  EXPECT_EQ(stat(r, "legalize.ops.relu"), 1);
  EXPECT_EQ(stat(r, "legalize.layers"), 2);

  g.tensor("conv1.w").is_const = false;
  g.inputs.push_back("conv1.w");
  auto bad = compile(g, cfg("tiny"), {});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.error().str().find("node 'conv1'"), std::string::npos) << bad.error().str();
  EXPECT_NE(bad.error().str().find("weights must be constant"), std::string::npos);
}

TEST(Legalize, RejectsAvgPoolExcludingPadding) {
  GraphBuilder b("avg");
  b.output(b.pool("pool1", OpKind::AvgPool, b.input("x", {1, 6, 6, 4}), 3, 1, 1));
  ir::Graph& g = b.graph();
  g.nodes[0].attrs.count_include_pad = false;
  // validate() rejects this too; legalize must not rely on it.
  EXPECT_FALSE(ir::validate(g).is_ok());
  auto r = compile(g, cfg("tiny"), {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().where, "node 'pool1'");
}

TEST(FuseActivation, FoldsReluIntoConv) {
  ir::Graph g = conv_relu_graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fuse-activation.fused"), 1);
  const auto d = decisions(r, "fuse-activation");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].substr(0, d[0].find(';')), "conv1+relu1: folded relu 'relu1' into the output clamp [-5, 127]");
  EXPECT_NE(d[0].find("; cost model: saves "), std::string::npos) << d[0];
  ASSERT_EQ(r.plan.layers.size(), 1u);
  EXPECT_EQ(r.plan.layers[0].name, "conv1+relu1");
  EXPECT_EQ(r.plan.semaphores_used, 0u);
}

TEST(Decisions, AreRecordsWhoseExplanationStartsWithTheChoice) {
  ir::Graph g = conv_relu_graph();
  auto r = compile_ok(g);
  ASSERT_FALSE(r.decisions.empty());
  bool tile = false;
  for (const auto& d : r.decisions) {
    EXPECT_FALSE(d.choice.empty()) << d.pass << " " << d.node;
    EXPECT_EQ(d.text.rfind(d.choice, 0), 0u) << d.text;
    if (d.pass == "tiling" && d.node == "conv1+relu1") {
      tile = true;
      EXPECT_EQ(d.choice.substr(0, 2), "M=") << d.choice;
      EXPECT_EQ(d.choice.find(';'), std::string::npos) << d.choice;
      ASSERT_TRUE(d.predicted_cycles.has_value());
      EXPECT_EQ(*d.predicted_cycles, r.predicted[0].cycles);
    }
  }
  EXPECT_TRUE(tile);
  CompileOptions none;
  none.fusion = Fusion::None;
  for (const auto& d : compile_ok(g, "tiny", none).decisions)
    if (d.pass == "fuse-activation") {
      EXPECT_EQ(d.choice, "kept separate");
    }
}

TEST(FuseActivation, PolicyNoneKeepsEveryLayerAndGreedyFusesWithoutWeighing) {
  ir::Graph g = conv_relu_graph();
  CompileOptions none;
  none.fusion = Fusion::None;
  auto n = compile_ok(g, "tiny", none);
  EXPECT_EQ(stat(n, "fuse-activation.fused"), -1);
  EXPECT_EQ(stat(n, "fuse-activation.not_fused"), 1);
  EXPECT_EQ(decisions(n, "fuse-activation")[0], "relu1: kept separate: fusion policy none");
  EXPECT_EQ(n.plan.layers.size(), 2u);
  CompileOptions greedy;
  greedy.fusion = Fusion::Greedy;
  auto gr = compile_ok(g, "tiny", greedy);
  EXPECT_EQ(decisions(gr, "fuse-activation")[0], "conv1+relu1: folded relu 'relu1' into the output clamp [-5, 127]");
  EXPECT_EQ(gr.plan.layers.size(), 1u);
  // The cost model predicts the fused group faster: the activation layer's
  // cycles (and its barrier) disappear, the producer's stay the same.
  auto c = compile_ok(g, "tiny");
  EXPECT_LT(c.predicted_cycles, n.predicted_cycles);
  EXPECT_EQ(c.predicted_cycles, gr.predicted_cycles);
  EXPECT_EQ(n.predicted[0].cycles, c.predicted[0].cycles);
  EXPECT_EQ(stat(c, "fuse-activation.saved_predicted_cycles"), int64_t(n.predicted[1].cycles));
}

TEST(FusionPolicy, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(*parse_fusion("none"), Fusion::None);
  EXPECT_EQ(*parse_fusion("greedy"), Fusion::Greedy);
  EXPECT_EQ(*parse_fusion("cost"), Fusion::Cost);
  auto bad = parse_fusion("all");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.error().str().find("unknown policy 'all'"), std::string::npos) << bad.error().str();
}

TEST(FuseActivation, KeepsReluWhenProducerOutputIsObserved) {
  GraphBuilder b("observed");
  const auto c = b.conv("conv1", b.input("x", {1, 4, 4, 4}), {4, 1, 1, 1, 0, 1});
  b.output(b.unary("relu1", OpKind::Relu, c));
  b.output(c);
  auto r = compile_ok(b.graph());
  EXPECT_EQ(stat(r, "fuse-activation.not_fused"), 1);
  EXPECT_EQ(decisions(r, "fuse-activation")[0], "relu1: kept separate: 'conv1.y' is a graph output");
  EXPECT_EQ(r.plan.layers.size(), 2u);
}

TEST(FuseActivation, KeepsReluWithTwoConsumersOrOtherQuantization) {
  GraphBuilder b("fanout");
  const auto x = b.input("x", {1, 4, 4, 4});
  const auto c = b.conv("conv1", x, {4, 1, 1, 1, 0, 1});
  const auto r1 = b.unary("relu1", OpKind::Relu, c);
  b.output(b.conv("conv2", c, {4, 1, 1, 1, 0, 1}));
  b.output(b.add("add1", r1, b.input("x2", {1, 4, 4, 4})));
  auto r = compile_ok(b.graph());
  EXPECT_EQ(decisions(r, "fuse-activation")[0], "relu1: kept separate: 'conv1.y' has 2 consumers");

  GraphBuilder b2("requant");
  const auto c2 = b2.conv("conv1", b2.input("x", {1, 4, 4, 4}), {4, 1, 1, 1, 0, 1});
  const auto r2 = b2.unary("relu1", OpKind::Relu, c2);
  b2.graph().tensor(r2).q.scale = {0.5};
  b2.output(r2);
  auto rr = compile_ok(b2.graph());
  EXPECT_EQ(decisions(rr, "fuse-activation")[0], "relu1: kept separate: input and output quantization differ");
}

CompileOptions policy(Fusion f) {
  CompileOptions o;
  o.fusion = f;
  return o;
}

bool has(const std::vector<std::string>& v, const std::string& prefix) {
  for (const auto& x : v)
    if (x.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(FuseResidual, FoldsTheAddWhenPredictedFaster) {
  GraphBuilder b("res");
  residual_block(b, 8, 64, 1, true);
  auto r = compile_ok(b.graph());
  EXPECT_EQ(decisions(r, "fuse-residual")[0],
            "conv+add: legal as a requantizing add behind the post-op (rescale): one rounding of the sum, as the "
            "separate add");
  EXPECT_TRUE(has(decisions(r, "tiling"), "conv+add: folded the add into POSTOP as a rescale (cost): fused predicts "))
      << decisions(r, "tiling")[0];
  EXPECT_EQ(stat(r, "tiling.residual_fused"), 1);
  ASSERT_EQ(r.plan.layers.size(), 1u);
  EXPECT_EQ(r.plan.layers[0].name, "conv+add");
  auto none = compile_ok(b.graph(), "tiny", policy(Fusion::None));
  EXPECT_EQ(none.plan.layers.size(), 2u);
  EXPECT_EQ(decisions(none, "fuse-residual")[0], "add: kept separate: fusion policy none");
  EXPECT_LT(r.predicted_cycles, none.predicted_cycles);
}

// The case greedy gets wrong: on tiny a 3x3 conv over 256 channels already
// fills the IN slot with A tiles; the residual tile forces other tiles,
// which cost more than the separate add. (At 128 channels the full tile
// search finds a fused tiling that wins.)
TEST(FuseResidual, GreedyFoldsWhereTheCostModelRefuses) {
  GraphBuilder b("res");
  residual_block(b, 8, 256, 3, true);
  auto greedy = compile_ok(b.graph(), "tiny", policy(Fusion::Greedy));
  auto cost = compile_ok(b.graph());
  EXPECT_EQ(greedy.plan.layers.size(), 1u);
  EXPECT_TRUE(has(decisions(greedy, "tiling"), "conv+add: folded the add into POSTOP as a rescale (greedy)"));
  ASSERT_EQ(cost.plan.layers.size(), 2u);
  EXPECT_TRUE(has(decisions(cost, "tiling"), "conv+add: kept separate (cost): fused predicts "))
      << decisions(cost, "tiling")[0];
  EXPECT_EQ(stat(cost, "tiling.residual_refused"), 1);
  // The residual tile in IN leaves the conv other tiles (28 x 32 against
  // 16 x 16 alone), predicted slower than the conv and the add apart.
  EXPECT_GT(greedy.predicted_cycles, cost.predicted_cycles);
  EXPECT_NE(greedy.predicted[0].insns, cost.predicted[0].insns);
}

// Every fusable add folds as a rescale, whatever its scales and whether the
// conv's clamp binds: POSTOP keeps the conv's clamped int8 result and adds
// the other operand with one rounding, exactly as the separate add.
TEST(FuseResidual, FoldsEveryAddAsARescale) {
  GraphBuilder b("res");
  residual_block(b, 8, 16, 1, false);  // random weights: the conv's clamp may bind
  auto r = compile_ok(b.graph(), "tiny", policy(Fusion::Greedy));
  ASSERT_EQ(decisions(r, "fuse-residual").size(), 1u);
  EXPECT_EQ(decisions(r, "fuse-residual")[0],
            "conv+add: legal as a requantizing add behind the post-op (rescale): one rounding of the sum, as the "
            "separate add");
  EXPECT_EQ(stat(r, "fuse-residual.candidates"), 1);
  ASSERT_EQ(r.plan.layers.size(), 1u);

  GraphBuilder b2("rescale");
  rescaled_residual_block(b2, 4, 8, 1, false);
  auto r2 = compile_ok(b2.graph(), "tiny", policy(Fusion::Greedy));
  EXPECT_EQ(stat(r2, "fuse-residual.candidates"), 1);
  EXPECT_EQ(r2.plan.layers.size(), 1u);

  // Fusion none keeps every add separate.
  auto r3 = compile_ok(b2.graph(), "tiny", policy(Fusion::None));
  EXPECT_EQ(decisions(r3, "fuse-residual")[0], "add: kept separate: fusion policy none");
  EXPECT_EQ(r3.plan.layers.size(), 2u);
}

// Attention's K^T: the transpose of the last two dims goes into the GEMM
// (b_trans) through the scale; a head split before it keeps whole rows.
TEST(FoldTranspose, GemmReadsKAsItLies) {
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "head split" : "last two dims");
    GraphBuilder b("kt");
    const auto q = b.input("q", {10, 2 * 8});
    const auto kt = split ? b.transpose("kt", b.input("k", {10, 2, 8}), {1, 2, 0})
                          : b.transpose("kt", b.input("k", {2, 10, 8}), {0, 2, 1});
    b.output(b.matmul("scores", q, b.mul("ks", kt, b.constant("c", {2, 8, 10})), 2));
    ir::Graph& g = b.graph();
    auto r = compile_ok(g);
    EXPECT_EQ(stat(r, "fold-transpose.folded"), 1);
    const auto d = decisions(r, "fold-transpose");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0], std::string("scores: reads b as its transpose (GEMM b_trans): the transpose 'kt' ") +
                        (split ? "keeps whole rows" : "is dropped"));
    bool has_kt = false;
    for (const auto& l : r.plan.layers) has_kt = has_kt || l.name == "kt";
    EXPECT_EQ(has_kt, split);
  }
}

// ViT's patch embedding: NHWC -> NCHW -> flatten -> tokens moves nothing.
TEST(FoldLayout, TokensFromNhwcAreOneReshape) {
  GraphBuilder b("tokens");
  const auto t = b.transpose("nchw", b.input("x", {1, 4, 5, 24}), {0, 3, 1, 2});
  const auto tok = b.transpose("tok", b.reshape("flat", t, {1, 24, 20}), {0, 2, 1});
  b.output(b.gemm("fc", b.reshape("rows", tok, {20, 24}), 16));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-layout.chains"), 1);
  EXPECT_EQ(stat(r, "fold-layout.transposes_removed"), 2);
  const auto d = decisions(r, "fold-layout");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].substr(0, d[0].find(": predicted")), "nchw+flat+tok+rows: one reshape: the chain moves no data");
  EXPECT_NE(d[0].find(" -> 0"), std::string::npos) << d[0];
  EXPECT_EQ(stat(r, "legalize.ops.transpose"), -1);
}

// Two one-byte gathers in a row compose into one.
TEST(FoldLayout, TwoGathersBecomeOne) {
  GraphBuilder b("two");
  const auto t = b.transpose("t1", b.input("x", {2, 6, 10}), {0, 2, 1});
  b.output(b.transpose("t2", t, {1, 0, 2}));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-layout.transposes_removed"), 1);
  EXPECT_EQ(stat(r, "legalize.ops.transpose"), 1);
}

// ShuffleNet's channel shuffle between NHWC views composes into a one-byte
// gather of two-row LOADs, predicted slower than the chain: kept (with the
// channel maps off, which would make it a 1x1 convolution).
TEST(FoldLayout, KeepsAChainThatComposesIntoASlowerGather) {
  GraphBuilder b("shuffle");
  const auto t = b.transpose("nchw", b.input("x", {1, 3, 4, 10}), {0, 3, 1, 2});
  const auto sh = b.transpose("shuffle", b.reshape("split", t, {1, 2, 5, 3, 4}), {0, 2, 1, 3, 4});
  b.output(b.transpose("nhwc", b.reshape("merge", sh, {1, 10, 3, 4}), {0, 2, 3, 1}));
  ir::Graph& g = b.graph();
  CompileOptions none;
  none.fusion = Fusion::None;
  auto r = compile_ok(g, "tiny", none);
  EXPECT_EQ(stat(r, "fold-layout.kept_chains"), 1);
  EXPECT_EQ(stat(r, "legalize.ops.transpose"), 3);
}

// ShuffleNetV2's unit as importers write it: NHWC -> ONNX order, the
// shuffle's 5-D transpose, the split into channel halves, back to NHWC for
// the conv and the concat. Each half is a choice of the concat's channels
// per pixel: the conv's goes into its weights, the concat's is a 1x1
// selection; no transpose or slice is left.
TEST(FoldChannels, ShuffleAndSplitBecomeSelections) {
  GraphBuilder b("unit");
  const auto x = b.input("x", {1, 5, 6, 16});
  const auto t = b.transpose("nchw", x, {0, 3, 1, 2});
  const auto sh = b.reshape("merge", b.transpose("shuffle", b.reshape("split", t, {1, 2, 8, 5, 6}), {0, 2, 1, 3, 4}),
                            {1, 16, 5, 6});
  const auto lo = b.transpose("lo_nhwc", b.slice("lo", sh, {0, 0, 0, 0}, {1, 8, 5, 6}), {0, 2, 3, 1});
  const auto hi = b.transpose("hi_nhwc", b.slice("hi", sh, {0, 8, 0, 0}, {1, 16, 5, 6}), {0, 2, 3, 1});
  b.output(b.concat("cat", {lo, b.conv("c", hi, {8, 1, 1, 1, 0, 1})}, 3));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-channels.maps"), 1);
  EXPECT_EQ(stat(r, "fold-channels.folded_into_weights"), 1);
  EXPECT_EQ(stat(r, "legalize.ops.transpose"), -1);
  EXPECT_EQ(stat(r, "legalize.ops.slice"), -1);
  const auto d = decisions(r, "fold-channels");
  ASSERT_EQ(d.size(), 2u);
  const auto head = [](const std::string& s) { return s.substr(0, s.find(", predicted")); };
  EXPECT_EQ(head(d[0]), "hi_nhwc.y: into the weights of its readers: picks 8 of the 16 channels of 'x' per pixel; "
                        "its convs read 'x' with zero-point rows for the others");
  EXPECT_EQ(head(d[1]), "lo_nhwc.y: one 1x1 convolution: picks 8 of the 16 channels of 'x' per pixel");
  // The conv's MACs are those of its 8 channels, not of the 16 it reads.
  bool seen = false;
  for (const auto& l : r.plan.layers) {
    if (l.name != "c" && l.name.rfind("c+", 0) != 0) continue;  // alone, or writing the concat's slice
    seen = true;
    EXPECT_EQ(l.macs, uint64_t(5 * 6 * 8 * 8));
  }
  EXPECT_TRUE(seen);
  // Without the fold (policy none) the moves stay.
  CompileOptions none;
  none.fusion = Fusion::None;
  auto n = compile_ok(g, "tiny", none);
  EXPECT_EQ(stat(n, "fold-channels.maps"), -1);
  EXPECT_GT(stat(n, "legalize.ops.transpose"), 0);
}

// A move that changes which pixel a byte belongs to is no channel map.
TEST(FoldChannels, LeavesMovesAcrossPixels) {
  GraphBuilder b("hw");
  b.output(b.conv("c", b.transpose("swap", b.input("x", {1, 6, 6, 8}), {0, 2, 1, 3}), {8, 1, 1, 1, 0, 1}));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-channels.maps"), -1);
  EXPECT_EQ(stat(r, "legalize.ops.transpose"), 1);
}

// GELU as exporters write it: four element-wise ops of x become one lookup.
TEST(FoldPointwise, GeluChainIsOneLookup) {
  GraphBuilder b("gelu");
  const auto x = b.input("x", {4, 64});
  const auto e = b.add("e1", b.lut("erf", x), b.splat("one", {4, 64}, 50), 0.04, -3);
  const auto h = b.mul("h", x, e, 0.06, 2);
  b.output(b.gemm("fc", b.mul("gelu", h, b.splat("half", {4, 64}, 64), 0.05, -1), 16));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-pointwise.lookups"), 1);
  EXPECT_EQ(stat(r, "fold-pointwise.folded_ops"), 4);
  const auto d = decisions(r, "fold-pointwise");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "erf+e1+h+gelu: one lookup of 'x': 4 element-wise ops of one input, evaluated on its 256 values");
  ASSERT_EQ(r.plan.layers.size(), 2u);
  EXPECT_EQ(r.plan.layers[0].name, "erf+e1+h+gelu");
  // The fusion policy none runs every op as written.
  CompileOptions none;
  none.fusion = Fusion::None;
  auto rn = compile_ok(g, "tiny", none);
  EXPECT_EQ(stat(rn, "fold-pointwise.lookups"), -1);
  EXPECT_EQ(rn.plan.layers.size(), 5u);
}

TEST(FoldPointwise, LeavesOpsOfTwoInputsAndSingleOps) {
  GraphBuilder b("two");
  const auto x = b.input("x", {4, 64});
  const auto y = b.input("y", {4, 64});
  b.output(b.mul("m", b.unary("r", OpKind::Relu, x), y));  // two activations
  b.output(b.lut("l", y));                                  // one op
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-pointwise.lookups"), -1);
}

TEST(FoldTranspose, LeavesATransposeReadTwice) {
  GraphBuilder b("kt2");
  const auto kt = b.transpose("kt", b.input("k", {2, 10, 8}), {0, 2, 1});
  b.output(b.matmul("scores", b.input("q", {10, 2 * 8}), kt, 2));
  b.output(b.unary("r", OpKind::Relu, kt));
  ir::Graph& g = b.graph();
  auto r = compile_ok(g);
  EXPECT_EQ(stat(r, "fold-transpose.folded"), -1);
  EXPECT_TRUE(decisions(r, "fold-transpose").empty());
}

TEST(Tiling, ConvOnTinyFitsHalvedScratchpads) {
  GraphBuilder b("big");
  b.output(b.conv("conv1", b.input("x", {1, 20, 20, 64}), {96, 3, 3, 1, 1, 1}));
  auto r = compile_ok(b.graph());
  const auto d = decisions(r, "tiling");
  ASSERT_EQ(d.size(), 1u);
  // The layer is compute-bound either way. Of all 593 candidates (im2col
  // tiles, tiles that split the rows evenly over the cores, row windows,
  // image bands) the cost model picks a 24 x 24 im2col tile of two K steps
  // over the DRAM-bytes-first 84 x 48 tile; it reads 2.7x the bytes and
  // is faster on tlm (717,553 cycles against 731,932 for the row-window
  // tile the search picked when it costed only the first 24). The branch
  // and bound costs a few dozen of them.
  EXPECT_EQ(d[0].substr(0, d[0].find("; predicted 7")),
            "conv1: M=400 K=576 N=96: tm=24 tn=24 tk=320 (2 K steps); IN 7680 B/8192 B, WGT 7680 B/8192 B, "
            "OUT 576 B/4096 B per slot, ACC 2304 B/16384 B; predicted DRAM bytes read 1881216, written 38400");
  EXPECT_NE(d[0].find("best of 593 candidates ("), std::string::npos) << d[0];
  EXPECT_NE(d[0].find("; the DRAM-bytes-first choice predicts "), std::string::npos) << d[0];
  EXPECT_GT(stat(r, "tiling.predicted_cycles"), 400 * 576 * 96 / (4 * 4 * 2));
  EXPECT_EQ(stat(r, "tiling.layers"), 1);
}

TEST(Tiling, SingleBufferingDoublesTheBudget) {
  GraphBuilder b("gemm");
  b.output(b.gemm("fc", b.input("a", {300, 700}), 260));
  CompileOptions o;
  o.double_buffer = false;
  auto one = compile_ok(b.graph(), "tiny", o);
  auto two = compile_ok(b.graph(), "tiny");
  EXPECT_LE(one.plan.layers[0].bytes_read, two.plan.layers[0].bytes_read);
  EXPECT_NE(decisions(one, "tiling")[0].find("/16384 B"), std::string::npos) << decisions(one, "tiling")[0];
  EXPECT_NE(decisions(two, "tiling")[0].find("/4096 B per slot"), std::string::npos) << decisions(two, "tiling")[0];
  EXPECT_EQ(decisions(one, "tiling")[0].find("per slot"), std::string::npos) << decisions(one, "tiling")[0];
}

/// Everything a compile gives, as text: the plan's bytes, every decision
/// with its numbers and alternatives, the statistics and predictions.
std::string compiled_text(const CompileResult& r) {
  std::ostringstream out;
  out << plan::encode_plan(r.plan);
  for (const auto& d : r.decisions) {
    out << '\n' << d.node << '|' << d.pass << '|' << d.choice << '|' << d.text << '|' << d.predicted_cycles.value_or(0);
    for (const auto& a : d.alternatives) out << '|' << a.choice << '=' << a.predicted_cycles.value_or(0);
  }
  for (const auto& [k, v] : r.stats) out << '\n' << k << '=' << v;
  for (const auto& p : r.predicted) out << '\n' << p.name << ':' << p.cycles;
  out << '\n' << r.predicted_cycles;
  return out.str();
}

// The tiling pass remembers each conv/gemm search by all it reads
// (set_tile_search_memo): a network of repeated blocks of several widths,
// strides, groups and a residual chain, compiled on three configurations,
// 1-4 cores, single and double buffering and every fusion policy, gives
// the same plan, decisions and statistics with the memo off, on and cold,
// and on and warm from the other compiles.
TEST(Tiling, RememberedSearchesChangeNothing) {
  GraphBuilder b("blocks");
  auto x = b.input("x", {1, 16, 16, 16});
  const int64_t widths[] = {16, 32, 32, 64};
  for (int i = 0; i < 4; ++i) {
    const std::string p = std::string("b").append(1, char('0' + i));
    const int64_t w = widths[i], stride = i == 2 ? 2 : 1;
    auto y = b.unary(p + ".relu1", OpKind::Relu, b.conv(p + ".c1", x, {w, 1, 1, 1, 0, 1}));
    y = b.unary(p + ".relu2", OpKind::Relu, b.conv(p + ".c2", y, {w, 3, 3, stride, 1, i == 3 ? 8 : 1}));
    y = b.conv(p + ".c3", y, {w, 1, 1, 1, 0, 1});
    const auto sc = i == 0 || (widths[i - 1] == w && stride == 1) ? x : b.conv(p + ".down", x, {w, 1, 1, stride, 0, 1});
    x = b.unary(p + ".relu3", OpKind::Relu, b.add(p + ".add", y, sc));
  }
  b.output(b.gemm("fc", b.flatten("flat", b.pool("gap", OpKind::GlobalAvgPool, x, 8, 1, 0)), 40));
  ASSERT_TRUE(ir::validate(b.graph()).is_ok());
  std::vector<std::pair<const char*, CompileOptions>> runs;
  for (const char* c : {"tiny", "small", "default"})
    for (int cores : {1, 2, 4})
      for (bool dbuf : {true, false})
        for (Fusion f : {Fusion::Cost, Fusion::None, Fusion::Greedy}) {
          CompileOptions o;
          o.num_cores = std::min(cores, int(cfg(c).cores));
          o.double_buffer = dbuf;
          o.fusion = f;
          runs.emplace_back(c, o);
        }
  std::vector<std::string> off, cold;
  set_tile_search_memo(false);
  for (const auto& [c, o] : runs) off.push_back(compiled_text(compile_ok(b.graph(), c, o)));
  for (const auto& [c, o] : runs) {
    set_tile_search_memo(true);  // on and empty
    cold.push_back(compiled_text(compile_ok(b.graph(), c, o)));
  }
  set_tile_search_memo(true);
  for (size_t i = runs.size(); i-- > 0;) {  // warm: every search asked before, in another order
    EXPECT_EQ(cold[i], off[i]) << runs[i].first << " run " << i;
    EXPECT_EQ(compiled_text(compile_ok(b.graph(), runs[i].first, runs[i].second)), off[i])
        << runs[i].first << " run " << i;
  }
}

TEST(Placement, RoundRobinAndBarriers) {
  GraphBuilder b("two_layers");
  const auto c = b.conv("conv1", b.input("x", {1, 20, 20, 8}), {8, 3, 3, 1, 1, 1});
  b.output(b.pool("pool1", OpKind::MaxPool, c, 2, 2, 0));
  auto r = compile_ok(b.graph(), "small");
  EXPECT_EQ(stat(r, "placement.barriers"), 1);
  EXPECT_EQ(stat(r, "placement.cores"), 4);
  for (const auto& d : decisions(r, "placement")) EXPECT_NE(d.find("round-robin over 4 cores"), std::string::npos) << d;
  EXPECT_EQ(r.plan.semaphores_used, 1u);
  // Every core: SEM_SIGNAL 0 then SEM_WAIT 0 for cores * 1 after layer 0.
  for (size_t c2 = 0; c2 < 4; ++c2) {
    const auto& s = r.plan.cores[c2];
    const uint32_t end0 = r.plan.layers[0].insn_end[c2];
    ASSERT_GE(s.size(), end0 + 2);
    EXPECT_EQ(spec::Opcode(s[end0].w[0] & 63u), spec::Opcode::SEM_SIGNAL);
    const auto w = spec::SemWaitInsn::decode(s[end0 + 1]);
    EXPECT_EQ(spec::Opcode(s[end0 + 1].w[0] & 63u), spec::Opcode::SEM_WAIT);
    EXPECT_EQ(w.sem_id, 0u);
    EXPECT_EQ(w.count, 4u);
    EXPECT_EQ(r.plan.layers[1].insn_begin[c2], end0 + 2);
  }
  expect_valid_plan(r, 4);
}

TEST(MemoryPlan, ConstantsThenActivationsAndAliases) {
  GraphBuilder b("mem");
  const auto x = b.input("x", {2, 3, 3, 4});
  const auto f = b.flatten("flat", x);
  b.output(b.gemm("fc", f, 5));
  auto r = compile_ok(b.graph());
  // Weights [36][5] = 180 B, padded to 192; PARAM 5 x 12 = 60 B.
  EXPECT_EQ(stat(r, "memory-plan.constant_bytes"), 192 + 60);
  EXPECT_EQ(stat(r, "memory-plan.aliases"), 1);
  ASSERT_EQ(r.plan.inputs.size(), 1u);
  EXPECT_EQ(r.plan.inputs[0].offset, 256u);
  EXPECT_EQ(r.plan.outputs[0].offset, 256u + 128u);
  EXPECT_EQ(r.plan.memory_bytes, 256u + 128u + 64u);
  EXPECT_EQ(r.plan.constants.size(), 252u);
  EXPECT_EQ(r.plan.compiler, std::string("loom ") + LOOM_VERSION);
  EXPECT_EQ(r.plan.config, "tiny");
}

TEST(MemoryPlan, ReusesABufferOnceItsLastReaderHasRun) {
  // x -> c1 -> c2 -> c3 -> y: c1's output is dead after c2, so c3 takes its
  // buffer; c2's output stays live while c3 reads it; x and y are pinned.
  GraphBuilder b("chain");
  auto y = b.conv("c1", b.input("x", {1, 8, 8, 8}), {8, 1, 1, 1, 0, 1});
  y = b.conv("c2", y, {8, 1, 1, 1, 0, 1});
  b.output(b.conv("c3", y, {8, 1, 1, 1, 0, 1}));
  auto r = compile_ok(b.graph());
  EXPECT_EQ(stat(r, "memory-plan.activation_buffers"), 4);
  EXPECT_EQ(stat(r, "memory-plan.reused_buffers"), 1);
  EXPECT_EQ(stat(r, "memory-plan.activation_bytes"), 3 * 512);
  EXPECT_EQ(stat(r, "memory-plan.activation_bytes_without_reuse"), 4 * 512);
  const auto d = decisions(r, "memory-plan");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("peak device memory " + std::to_string(r.plan.memory_bytes) + " B"), std::string::npos) << d[0];
  // The graph output does not overlap the input it is computed from.
  EXPECT_NE(r.plan.outputs[0].offset, r.plan.inputs[0].offset);
}

TEST(Codegen, StreamsAreValidAndTokenBalanced) {
  for (const char* c : {"tiny", "small", "default"}) {
    GraphBuilder b("net");
    const auto x = b.input("x", {1, 16, 16, 8});
    const auto c1 = b.unary("r1", OpKind::Relu, b.conv("c1", x, {24, 3, 3, 2, 1, 1}));
    const auto p = b.pool("p1", OpKind::AvgPool, c1, 2, 2, 0);
    b.output(b.add("add1", p, p));
    auto r = compile_ok(b.graph(), c);
    expect_valid_plan(r, cfg(c).cores);
    for (const auto& s : r.plan.cores)
      for (const auto& i : s) {
        const auto op = spec::Opcode(i.w[0] & 63u);
        if (op == spec::Opcode::LOAD) {
          EXPECT_TRUE(spec::LoadInsn::decode(i).invalid_field().empty());
        }
      }
  }
}

TEST(Codegen, FieldOverflowNamesTheNode) {
  GraphBuilder b("huge_window");
  b.output(b.pool("gap", OpKind::GlobalAvgPool, b.input("x", {1, 300, 300, 1}), 0, 0, 0));
  ASSERT_TRUE(ir::validate(b.graph()).is_ok());
  auto r = compile(b.graph(), cfg("default"), {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().where, "node 'gap'");
}

TEST(Compile, RejectsTooManyCores) {
  ir::Graph g = conv_relu_graph();
  ASSERT_TRUE(ir::validate(g).is_ok());
  CompileOptions o;
  o.num_cores = 3;
  EXPECT_FALSE(compile(g, cfg("tiny"), o).is_ok());
}

}  // namespace
}  // namespace loom::compiler::test
