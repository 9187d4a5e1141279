// End-to-end: compiled plans run on the ref device must match the direct
// reference implementation bit for bit, on every configuration.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "ir/builder.h"
#include "plan_runner.h"
#include "residual_graphs.h"

namespace loom::compiler::test {
namespace {

using ir::OpKind;
using ir::GraphBuilder;
using ir::ConvSpec;
using Build = std::function<void(GraphBuilder&)>;

struct Case {
  const char* name;
  Build build;
};

void check(const char* cfg_name, const Case& c, const CompileOptions& opt = {}, uint64_t seed = 7) {
  SCOPED_TRACE(std::string("config=") + cfg_name + " case=" + c.name + " seed=" + std::to_string(seed));
  const spec::HwConfig& cfg = *spec::find_config(cfg_name);
  GraphBuilder b(c.name, seed);
  c.build(b);
  ir::Graph& g = b.graph();
  Status v = ir::validate(g);
  ASSERT_TRUE(v.is_ok()) << v.str();
  auto r = compile(g, cfg, opt);
  ASSERT_TRUE(r.is_ok()) << r.error().str();
  const auto inputs = ir::random_inputs(g, seed);
  auto want = ir::run_reference(g, inputs);
  ASSERT_TRUE(want.is_ok()) << want.error().str();
  auto got = run_plan(r->plan, cfg, inputs);
  ASSERT_TRUE(got.is_ok()) << got.error().str();
  for (const auto& out : g.outputs) {
    const Tensor& w = want->at(out);
    const Tensor& h = got->at(out);
    ASSERT_EQ(w.shape, h.shape) << out;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < w.data.size(); ++i)
      if (w.data[i] != h.data[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << out << ": " << bad << " of " << w.data.size() << " bytes differ, first at " << first
                       << " (want " << int(int8_t(w.data[first])) << ", got " << int(int8_t(h.data[first])) << ")";
  }
}

/// Static on every core, static on one, dynamic (3 tasks a core), pipeline.
std::vector<CompileOptions> every_placement() {
  std::vector<CompileOptions> v(4);
  v[1].num_cores = 1;
  v[2].placement = Placement::Dynamic;
  v[2].tasks_per_core = 3;
  v[3].placement = Placement::Pipeline;
  return v;
}

const Case kCases[] = {
    {"conv_s1_pad",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 10, 10, 8}), {16, 3, 3, 1, 1, 1}));
     }},
    {"conv_s2_pad",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {2, 9, 9, 6}), {12, 3, 3, 2, 1, 1}));
     }},
    {"conv_1x1_nobias",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 7, 5, 24}), {20, 1, 1, 1, 0, 1, false}));
     }},
    {"conv_5x5_s2_pad2",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 11, 13, 3}), {8, 5, 5, 2, 2, 1}));
     }},
    {"conv_grouped",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 8, 8, 8}), {12, 3, 3, 1, 1, 2}));
     }},
    {"conv_depthwise",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 9, 9, 16}), {16, 3, 3, 1, 1, 16}));
     }},
    {"conv_depthwise_s2",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 10, 10, 8}), {8, 3, 3, 2, 1, 8}));
     }},
    {"gemm",
     [](GraphBuilder& b) {
       b.output(b.gemm("fc", b.input("a", {40, 100}), 70));
     }},
    {"matmul",
     [](GraphBuilder& b) {
       b.output(b.gemm("mm", b.input("a", {5, 33}), 9, false));
     }},
    {"conv_relu_fused",
     [](GraphBuilder& b) {
       b.output(b.unary("r", OpKind::Relu, b.conv("c", b.input("x", {1, 6, 6, 4}), {8, 3, 3, 1, 1, 1})));
     }},
    {"gemm_clip_fused",
     [](GraphBuilder& b) {
       b.output(b.unary("cl", OpKind::Clip, b.gemm("fc", b.input("a", {6, 20}), 10), 0.0, 0.4));
     }},
    {"add_relu",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 5, 5, 8});
       const auto y = b.input("y", {1, 5, 5, 8}, 0.04, 2);
       b.output(b.unary("r", OpKind::Relu, b.add("a", x, y)));
     }},
    {"mul",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 5, 7, 8});
       b.output(b.mul("m", x, b.input("y", {1, 5, 7, 8}, 0.04, -3)));
     }},
    {"mul_relu_of_conv",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 6, 6, 12});
       const auto c = b.conv("c", x, {12, 3, 3, 1, 1, 1});
       b.output(b.unary("r", OpKind::Relu, b.mul("m", c, x, 0.02, 5)));
     }},
    {"relu_unfused",
     [](GraphBuilder& b) {
       const auto c = b.conv("c", b.input("x", {1, 6, 6, 4}), {8, 3, 3, 1, 1, 1});
       b.output(b.unary("r", OpKind::Relu, c));
       b.output(c);
     }},
    {"maxpool_k3s2p1",
     [](GraphBuilder& b) {
       b.output(b.pool("p", OpKind::MaxPool, b.input("x", {1, 11, 11, 12}), 3, 2, 1));
     }},
    {"avgpool_k2s2",
     [](GraphBuilder& b) {
       b.output(b.pool("p", OpKind::AvgPool, b.input("x", {2, 8, 8, 6}), 2, 2, 0));
     }},
    {"avgpool_k3s1p1",
     [](GraphBuilder& b) {
       b.output(b.pool("p", OpKind::AvgPool, b.input("x", {1, 7, 7, 5}), 3, 1, 1));
     }},
    {"globalavgpool",
     [](GraphBuilder& b) {
       b.output(b.pool("p", OpKind::GlobalAvgPool, b.input("x", {2, 7, 7, 40}), 0, 0, 0));
     }},
    {"small_net",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 12, 12, 3});
       const auto c1 = b.unary("r1", OpKind::Relu, b.conv("c1", x, {16, 3, 3, 1, 1, 1}));
       const auto p1 = b.pool("p1", OpKind::MaxPool, c1, 2, 2, 0);
       const auto c2 = b.conv("c2", p1, {16, 3, 3, 1, 1, 1});
       const auto a = b.unary("r2", OpKind::Relu, b.add("res", c2, p1));
       const auto gp = b.pool("gap", OpKind::GlobalAvgPool, a, 0, 0, 0);
       b.output(b.gemm("fc", b.flatten("fl", gp), 10));
     }},
};

// Larger than the scratchpads of tiny (and partly of small): tiling over M, N and K.
const Case kLarge[] = {
    {"conv_large",
     [](GraphBuilder& b) {
       b.output(b.conv("c", b.input("x", {1, 20, 20, 64}), {96, 3, 3, 1, 1, 1}));
     }},
    {"gemm_large",
     [](GraphBuilder& b) {
       b.output(b.gemm("fc", b.input("a", {300, 700}), 260));
     }},
    {"add_large",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 40, 40, 24});
       b.output(b.add("a", x, b.input("y", {1, 40, 40, 24}, 0.03, 0)));
     }},
    {"mul_large",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 33, 31, 20});
       b.output(b.mul("m", x, b.input("y", {1, 33, 31, 20}, 0.09, 7), 0.2, 0));
     }},
    {"pool_large",
     [](GraphBuilder& b) {
       b.output(b.pool("p", OpKind::MaxPool, b.input("x", {1, 30, 30, 200}), 3, 1, 1));
     }},
};

class E2E : public ::testing::TestWithParam<const char*> {};

TEST_P(E2E, OpsMatchReference) {
  for (const auto& c : kCases) check(GetParam(), c);
}
TEST_P(E2E, LargeShapesMatchReference) {
  for (const auto& c : kLarge) check(GetParam(), c);
}
TEST_P(E2E, SingleBufferedOneCoreMatchesReference) {
  CompileOptions o;
  o.num_cores = 1;
  o.double_buffer = false;
  for (const auto& c : kCases) check(GetParam(), c, o, 11);
  check(GetParam(), kLarge[0], o, 11);
}

// Single convolutions with every channel of the image per K step: kernel
// widths, strides and paddings that put 0, 1 or several edge pixels on each
// side, images narrower than the kernel, and a ResNet-style 7x7/2 stem on 3
// channels.
struct ConvShape {
  int64_t h, w, c, k, stride, pad;
};
constexpr ConvShape kRowShapes[] = {{23, 23, 3, 7, 2, 3}, {9, 9, 1, 3, 1, 1}, {9, 7, 3, 3, 2, 0},
                                    {6, 5, 4, 5, 1, 2},   {5, 4, 3, 5, 1, 4}, {11, 13, 2, 5, 3, 2},
                                    {8, 8, 5, 2, 1, 1}};

std::string shape_name(const char* prefix, const ConvShape& g) {
  return std::string(prefix) + std::to_string(g.h) + "x" + std::to_string(g.w) + "x" + std::to_string(g.c) + "_k" +
         std::to_string(g.k) + "s" + std::to_string(g.stride) + "p" + std::to_string(g.pad);
}

Build single_conv(const ConvShape& g) {
  return [g](GraphBuilder& b) {
    b.output(b.conv("c", b.input("x", {1, g.h, g.w, g.c}), {8, g.k, g.k, g.stride, g.pad, 1}));
  };
}

// Gathers that take one LOAD per kernel row (every channel of an ungrouped
// conv): interior pixels in one row of KW * C bytes, the left and right edge
// pixels and padding rows per position; plus a 7x7 stride-1 case. On a
// single core with small tiles (pixel runs split inside output rows, K steps
// split inside kernel rows) and on the default tiling.
TEST_P(E2E, RowGathersMatchReference) {
  std::vector<ConvShape> gs(std::begin(kRowShapes), std::end(kRowShapes));
  gs.push_back({13, 10, 3, 7, 1, 3});
  CompileOptions small;
  small.num_cores = 1;
  for (const auto& g : gs) {
    const std::string name = shape_name("row_gather_", g);
    const Case c{name.c_str(), single_conv(g)};
    check(GetParam(), c);
    check(GetParam(), c, small, 5);
  }
}

/// Whether compiling `c` with `opt` on `cfg_name` made a tiling decision
/// containing `text` (e.g. ", row windows)").
/// Whether pass `pass` explains a decision containing `text` (failing: what it said).
::testing::AssertionResult pass_says(const char* cfg_name, const Case& c, const CompileOptions& opt,
                                     const std::string& pass, const std::string& text) {
  GraphBuilder b(c.name, 7);
  c.build(b);
  auto r = compile(b.graph(), *spec::find_config(cfg_name), opt);
  if (!r.is_ok()) return ::testing::AssertionFailure() << r.error().str();
  std::string said;
  for (const auto& d : r->decisions) {
    if (d.pass != pass) continue;
    if (d.text.find(text) != std::string::npos) return ::testing::AssertionSuccess();
    said += "\n  " + d.node + ": " + d.text;
  }
  return ::testing::AssertionFailure() << c.name << ": " << pass << " never says '" << text << "'; it says:" << said;
}
bool tiling_says(const char* cfg_name, const Case& c, const CompileOptions& opt, const std::string& text) {
  return bool(pass_says(cfg_name, c, opt, "tiling", text));
}

// Row windows (GEMMs reading overlapping A rows from loaded input rows),
// forced on every convolution that allows them: the shapes above, a 3x3 on
// 16 channels and a 3x3 with a residual; on the default tiling and on one
// core with small tiles (runs that start and end inside output rows, several
// per tile).
// Batch folding (MacGeom::images): 1x1 convs of a batch of 3 run as one
// tall image, stride 1 and stride 2 on an even height (tiles spanning
// images), beside an odd height and a 3x3 that the cost model folds or not
// (batch_fold off: an outer loop); with a residual add and a pipeline that
// splits the folded rows by image again.
TEST_P(E2E, BatchFoldedPointwiseConvsMatchReference) {
  const Case c{"batch_fold", [](GraphBuilder& b) {
                 const auto x = b.input("x", {3, 6, 5, 8});
                 const auto c1 = b.conv("c1", x, {16, 1, 1, 1, 0, 1});                // folded
                 const auto c2 = b.conv("c2", c1, {16, 1, 1, 2, 0, 1});               // folded: 6 = 3 x 2
                 const auto c3 = b.conv("c3", c2, {16, 1, 1, 2, 0, 1});               // 3 rows: stays per image
                 const auto c4 = b.conv("c4", c2, {16, 1, 1, 1, 0, 1});               // folded
                 b.output(b.add("res", b.conv("c5", c4, {16, 1, 1, 1, 0, 1}), c2));  // folded, residual
                 b.output(b.conv("c6", c3, {8, 3, 3, 1, 1, 1}));  // 3x3: per image
               }};
  check(GetParam(), c);
  // The folded convs tile 3 x 30 (c1) and 3 x 9 (c2) pixels as one M.
  GraphBuilder b(c.name, 7);
  c.build(b);
  CompileOptions off;
  off.batch_fold = CompileOptions::BatchFold::Off;  // the 1x1 convs without seams fold all the same
  auto r = compile(b.graph(), *spec::find_config(GetParam()), off);
  ASSERT_TRUE(r.is_ok()) << r.error().str();
  std::map<std::string, std::string> tiling;
  for (const auto& d : r->decisions)
    if (d.pass == "tiling") tiling[d.node] += d.text;
  EXPECT_NE(tiling["c1"].find("M=90 "), std::string::npos) << tiling["c1"];
  EXPECT_NE(tiling["c2"].find("M=27 "), std::string::npos) << tiling["c2"];
  EXPECT_NE(tiling["c3"].find("M=4 "), std::string::npos) << tiling["c3"];  // per image: 2 x 2
  CompileOptions pipe;
  pipe.placement = Placement::Pipeline;
  check(GetParam(), c, pipe, 5);
  CompileOptions dyn;
  dyn.placement = Placement::Dynamic;
  check(GetParam(), c, dyn, 9);
}

// Batch folding across seams (batch_fold on): padded 3x3 windows at strides
// 1 and 2 (7 rows to 4: the stride does not step evenly into the next
// image), a grouped 5x5, an unpadded 3x3 and a folded residual add; a tile's
// pixels span images and each window reads only its own image, padding at
// the seams; a depthwise conv the array would fold but the unit takes. On
// every placement, single-buffered on one core, and with the
// cost model choosing (auto).
TEST_P(E2E, BatchFoldedWindowsMatchReference) {
  const Case c{"batch_fold_seams", [](GraphBuilder& b) {
                 const auto x = b.input("x", {3, 7, 6, 8});
                 const auto c1 = b.conv("c1", x, {16, 3, 3, 1, 1, 1});
                 const auto c2 = b.conv("c2", c1, {16, 3, 3, 2, 1, 1});
                 const auto c3 = b.conv("c3", c2, {16, 5, 5, 1, 2, 4});
                 b.output(b.conv("c4", c3, {16, 3, 3, 1, 0, 1}));
                 b.output(b.add("res", b.conv("c5", c2, {16, 3, 3, 1, 1, 1}), c3));
                 b.output(b.conv("dw", c1, {16, 3, 3, 1, 1, 16}));  // the depthwise unit keeps it per image
               }};
  for (CompileOptions o : every_placement()) {
    o.batch_fold = CompileOptions::BatchFold::On;
    check(GetParam(), c, o);
  }
  CompileOptions one;
  one.batch_fold = CompileOptions::BatchFold::On;
  one.num_cores = 1;
  one.double_buffer = false;
  check(GetParam(), c, one, 11);
  check(GetParam(), c);
  one.num_cores = 0;
  EXPECT_TRUE(pass_says(GetParam(), c, one, "tiling", "M=126 "));  // c1: 3 images of 7 x 6 as one M
  one.batch_fold = CompileOptions::BatchFold::Off;
  EXPECT_TRUE(pass_says(GetParam(), c, one, "tiling", "M=42 "));
}

TEST_P(E2E, RowWindowsMatchReference) {
  std::vector<ConvShape> gs(std::begin(kRowShapes), std::end(kRowShapes));
  gs.push_back({13, 10, 16, 3, 1, 1});
  CompileOptions on;
  on.row_windows = CompileOptions::RowWindows::On;
  CompileOptions small = on;
  small.num_cores = 1;
  for (const auto& g : gs) {
    const std::string name = shape_name("row_window_", g);
    const Case c{name.c_str(), single_conv(g)};
    check(GetParam(), c, on);
    check(GetParam(), c, small, 5);
    EXPECT_TRUE(tiling_says(GetParam(), c, on, ", row windows)")) << name << ": the tiling did not use row windows";
  }
  const Case res{"row_window_residual", [](GraphBuilder& b) { residual_block(b, 7, 24, 3, true, true); }};
  check(GetParam(), res, on);
}

// Image bands (one GEMM per kernel row and column phase over a tile's padded
// input rows), forced on every convolution that allows them, strides 1-3:
// depthwise (packed
// and one group a GEMM), grouped with several channels a group, ungrouped,
// 5x5 and unpadded kernels, one-row images; on the default placement, on one
// core, with dynamic tasks, and pipelined (tiles that start and end inside
// output rows).
TEST_P(E2E, ImageBandsMatchReference) {
  struct Band {
    int64_t h, w, c, groups, cout, k, pad, stride = 1;
  };
  const Band shapes[] = {{9, 7, 24, 24, 24, 3, 1},    {12, 5, 16, 4, 16, 3, 1},   {10, 10, 8, 1, 16, 3, 1},
                         {11, 6, 8, 8, 8, 5, 2},       {7, 9, 6, 3, 12, 3, 0},     {1, 17, 32, 32, 32, 3, 1},
                         {30, 30, 48, 48, 48, 3, 1},   {13, 11, 32, 32, 32, 3, 1, 2}, {12, 12, 8, 1, 8, 3, 1, 2},
                         {9, 10, 12, 4, 8, 5, 2, 2},   {14, 15, 16, 16, 16, 4, 1, 3}};
  CompileOptions on;
  on.image_bands = CompileOptions::ImageBands::On;
  on.depthwise = CompileOptions::Depthwise::Off;  // the depthwise shapes on the array
  CompileOptions one = on;
  one.num_cores = 1;
  CompileOptions unpacked = on;
  unpacked.group_packing = false;
  CompileOptions tasks = on;
  tasks.placement = Placement::Dynamic;
  tasks.tasks_per_core = 3;
  CompileOptions pipe = on;  // one stage: its tiles are cut along pixels
  pipe.placement = Placement::Pipeline;
  for (const auto& g : shapes) {
    const std::string name = "band_" + std::to_string(g.h) + "x" + std::to_string(g.w) + "x" + std::to_string(g.c) +
                             "_g" + std::to_string(g.groups) + "_k" + std::to_string(g.k) + "s" +
                             std::to_string(g.stride) + "p" + std::to_string(g.pad);
    const Case c{name.c_str(), [g](GraphBuilder& b) {
                   b.output(
                       b.conv("c", b.input("x", {1, g.h, g.w, g.c}), {g.cout, g.k, g.k, g.stride, g.pad, g.groups}));
                 }};
    for (const CompileOptions* o : {&on, &one, &unpacked, &tasks, &pipe}) check(GetParam(), c, *o);
    EXPECT_TRUE(tiling_says(GetParam(), c, on, ", image bands)")) << name << ": the tiling did not use image bands";
  }
}

// The depthwise unit (DWCONV), forced on every depthwise convolution: 1x1
// to 5x5 and non-square kernels, strides 1-3, padding 0-2, channel counts
// below, at and above the scratchpad width and not a multiple of it, one-row
// and one-column images, batch 2, ReLU6 fused; on the default placement, on
// one core, with dynamic tasks and pipelined; and on tiny with 700 channels,
// which PARAM holds only in slices.
TEST_P(E2E, DepthwiseUnitMatchesReference) {
  struct Dw {
    int64_t n, h, w, c, kh, kw, pad, stride;
  };
  const Dw shapes[] = {{1, 9, 7, 24, 3, 3, 1, 1},  {1, 12, 5, 16, 3, 3, 1, 2},  {2, 10, 10, 8, 5, 5, 2, 1},
                       {1, 11, 6, 70, 3, 3, 0, 3}, {1, 1, 17, 32, 3, 3, 1, 1},  {1, 17, 1, 40, 3, 3, 1, 1},
                       {1, 8, 8, 96, 1, 1, 0, 1},  {1, 9, 9, 144, 5, 3, 1, 2},  {1, 14, 15, 33, 4, 4, 1, 2},
                       {1, 7, 7, 700, 3, 3, 1, 1}};
  CompileOptions on;
  on.depthwise = CompileOptions::Depthwise::On;
  CompileOptions one = on;
  one.num_cores = 1;
  CompileOptions tasks = on;
  tasks.placement = Placement::Dynamic;
  tasks.tasks_per_core = 3;
  CompileOptions pipe = on;
  pipe.placement = Placement::Pipeline;
  for (const auto& g : shapes) {
    const std::string name = "dw_" + std::to_string(g.n) + "x" + std::to_string(g.h) + "x" + std::to_string(g.w) +
                             "x" + std::to_string(g.c) + "_k" + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
                             "s" + std::to_string(g.stride) + "p" + std::to_string(g.pad);
    const Case c{name.c_str(), [g](GraphBuilder& b) {
                   const auto y = b.conv("c", b.input("x", {g.n, g.h, g.w, g.c}), {g.c, g.kh, g.kw, g.stride, g.pad, g.c});
                   b.output(g.c % 2 ? y : b.unary("r", OpKind::Clip, y, 0.0, 0.3));
                 }};
    for (const CompileOptions* o : {&on, &one, &tasks, &pipe}) check(GetParam(), c, *o);
    EXPECT_TRUE(tiling_says(GetParam(), c, on, "(DWCONV)")) << name << ": the tiling did not use the depthwise unit";
  }
}

// Concat along every axis (channels of an image: strided rows into the
// output; a wide axis: rows split at chunk edges; the batch), with inputs
// requantized or copied, a constant part, and slices (channel halves, a
// window, one row) feeding it, on every placement.
TEST_P(E2E, ConcatAndSliceMatchReference) {
  const Case cases[] = {
      {"concat_channels",  // a fire module's expand: two convs joined on C
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 9, 7, 16});
         b.output(b.concat("cat", {b.conv("e1", x, {24, 1, 1, 1, 0, 1}), b.conv("e3", x, {40, 3, 3, 1, 1, 1})}, 3));
       }},
      {"concat_three_same_quant",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 5, 6, 8}, 0.06, 2), y = b.input("y", {1, 5, 6, 3}, 0.06, 2);
         b.output(b.concat("cat", {x, y, b.input("z", {1, 5, 6, 21}, 0.06, 2)}, 3));
       }},
      {"concat_rows_wide",  // axis 1 of [2, r, 3000]: rows wider than a chunk on tiny
       [](GraphBuilder& b) {
         b.output(b.concat("cat", {b.input("x", {2, 3, 3000}), b.input("y", {2, 2, 3000}, 0.02, -5)}, 1));
       }},
      {"concat_batch",
       [](GraphBuilder& b) {
         b.output(b.concat("cat", {b.input("x", {1, 4, 4, 8}), b.input("y", {2, 4, 4, 8}, 0.09, 0)}, 0));
       }},
      {"split_shuffle",  // ShuffleNetV2: halves of C, one through a conv, joined again
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 6, 6, 32});
         const auto l = b.slice("l", x, {0, 0, 0, 0}, {1, 6, 6, 16}), r = b.slice("r", x, {0, 0, 0, 16}, {1, 6, 6, 32});
         b.output(b.concat("cat", {l, b.conv("c", r, {16, 1, 1, 1, 0, 1})}, 3));
       }},
      {"slice_window",
       [](GraphBuilder& b) {
         b.output(b.slice("s", b.input("x", {2, 9, 11, 5}), {1, 2, 3, 1}, {2, 8, 10, 4}));
       }},
      {"slice_token",  // ViT's class token: row 0 of [1, N, D]
       [](GraphBuilder& b) {
         b.output(b.slice("s", b.input("x", {1, 17, 64}), {0, 0, 0}, {1, 1, 64}));
       }},
  };
  for (const auto& c : cases)
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
}

std::string named(const char* stem, int k) {
  std::string s(stem);
  s += std::to_string(k);
  return s;
}

/// Gives tensor `t` the quantization of `like`.
void same_quant(GraphBuilder& b, const std::string& t, const std::string& like) {
  b.graph().tensor(t).q = b.graph().tensor(like).q;
}

// Concat in place: inputs that the concat would copy unchanged are written
// into its buffer by their producers (convs, depthwise convs, pools, gemms,
// other concats) and read from there by their other readers (convs,
// depthwise convs, gemms, pools, other concats' copies): DenseNet's chain of
// two-input concats and its one concat per layer of every feature so far, at
// batch 1 and 2; Inception branches of which some are requantized (copied)
// and others not; rows put before a sequence (contiguous slices, read by an
// element-wise op too); and an input an element-wise op reads, which stays a
// copy. Inputs the concat requantizes are written requantized by their
// conv's POSTOP (rescale) where the cost model, or the greedy policy, says
// so. On every placement, and the decisions say which.
TEST_P(E2E, ConcatInPlaceMatchesReference) {
  const auto chain = [](int64_t n, bool requantized) {
    return [n, requantized](GraphBuilder& b) {
      const auto x = b.input("x", {n, 9, 7, 16});
      auto y = b.pool("p", OpKind::MaxPool, x, 3, 1, 1);  // keeps x's scale: in place
      for (int k = 1; k <= 3; ++k) {
        const int64_t c = 16 + 8 * (k - 1);
        const auto d = b.conv(named("bn", k), y, {c, 1, 1, 1, 0, c});  // a depthwise reader of the strided slice
        const auto f = b.conv(named("f", k), d, {8, 3, 3, 1, 1, 1});
        if (!requantized) same_quant(b, f, x);
        y = b.concat(named("cat", k), {y, f}, 3, 0.05, -3);
      }
      b.output(b.conv("head", y, {12, 1, 1, 1, 0, 1}));
    };
  };
  const Case cases[] = {
      {"dense_chain", chain(1, false)},
      {"dense_chain_batch2_requantized", chain(2, true)},
      {"dense_lists",  // every layer concatenates all features so far
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 8, 6, 24});
         std::vector<std::string> fs{b.conv("f0", x, {16, 1, 1, 1, 0, 1})};
         std::string y = fs[0];
         for (int k = 1; k <= 3; ++k) {
           const auto f = b.conv(named("f", k), y, {8, 3, 3, 1, 1, 1});
           same_quant(b, f, fs[0]);
           fs.push_back(f);
           y = b.concat(named("cat", k), fs, 3);
           same_quant(b, y, fs[0]);
         }
         b.output(b.pool("gap", OpKind::GlobalAvgPool, y, 1, 1, 0));
       }},
      {"inception_mixed",  // two branches at the output's scale, one requantized
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 10, 10, 12});
         const auto a = b.conv("a", x, {16, 1, 1, 1, 0, 1}), c = b.conv("c", x, {24, 3, 3, 1, 1, 1});
         const auto p = b.pool("p", OpKind::MaxPool, x, 3, 1, 1);
         same_quant(b, a, x);
         b.output(b.pool("q", OpKind::MaxPool, b.concat("cat", {a, c, p}, 3, 0.05, -3), 2, 2, 0));
       }},
      {"token_rows",  // [1, D] and [N, D] rows: contiguous slices; one also read by an element-wise op
       [](GraphBuilder& b) {
         const auto x = b.input("x", {16, 32}), t = b.input("t", {1, 32});
         const auto g = b.gemm("g", x, 48), c = b.gemm("c", t, 48);
         same_quant(b, c, g);
         const auto y = b.concat("cat", {c, g}, 0);
         same_quant(b, y, g);
         b.output(b.gemm("h", y, 24));
         b.output(b.unary("r", OpKind::Relu, g));
       }},
      {"eltwise_reader",  // a strided slice an add would read: copied
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 6, 6, 8});
         const auto a = b.conv("a", x, {8, 1, 1, 1, 0, 1});
         same_quant(b, a, x);
         b.output(b.concat("cat", {x, a}, 3, 0.05, -3));
         b.output(b.add("s", a, x));
       }},
  };
  CompileOptions greedy;  // every producer that can writes its slice requantized
  greedy.fusion = Fusion::Greedy;
  for (const auto& c : cases) {
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
    check(GetParam(), c, greedy);
  }
  const char* cfg = GetParam();
  EXPECT_TRUE(pass_says(cfg, cases[0], {}, "concat-in-place", "in place: 'cat2.y', 'f3.y' written"));
  EXPECT_TRUE(pass_says(cfg, cases[2], {}, "concat-in-place", "in place: 'f0.y', 'f1.y', 'f2.y' written"));
  EXPECT_TRUE(pass_says(cfg, cases[3], {}, "concat-in-place",
                        "'c.y' requantized to the output's scale by its producer's post-op if faster"));
  EXPECT_TRUE(pass_says(cfg, cases[3], greedy, "tiling", "writes the concat's slice requantized by POSTOP's rescale"));
  EXPECT_TRUE(pass_says(cfg, cases[1], greedy, "tiling", "writes the concat's slice requantized by POSTOP's rescale"));
  EXPECT_TRUE(pass_says(cfg, cases[4], {}, "concat-in-place", "in place: 'c.y', 'g.y' written"));
  EXPECT_TRUE(pass_says(cfg, cases[5], {}, "concat-in-place", "'s' cannot read it as a strided slice"));
}

// Channel maps as 1x1 selections (fold-channels): ShuffleNetV2's stride-1
// unit (shuffle in ONNX order, split, NHWC again) and stride-2 unit (the
// shuffled tensor read by a depthwise and a 1x1 conv; and its branches as
// ShuffleNetV2 has them, the permutation passing through the depthwise conv
// into the 1x1 conv after it), a shuffle of three
// groups written on NHWC directly, and a channel slice through ONNX order;
// at batch 1 and 2, on every placement.
TEST_P(E2E, ChannelMapsMatchReference) {
  const auto shuffled = [](GraphBuilder& b, const std::string& x, int64_t g) {
    const auto& s = b.graph().tensor(x).shape;
    const int64_t n = s[0], h = s[1], w = s[2], c = s[3];
    const auto t = b.transpose(x + "_nchw", x, {0, 3, 1, 2});
    const auto sh = b.transpose(x + "_sh", b.reshape(x + "_split", t, {n, g, c / g, h, w}), {0, 2, 1, 3, 4});
    return b.reshape(x + "_merge", sh, {n, c, h, w});
  };
  const Case cases[] = {
      {"shuffle_unit",
       [&](GraphBuilder& b) {
         const auto x = b.concat("x", {b.input("a", {2, 6, 5, 12}), b.input("b", {2, 6, 5, 12}, 0.04, 1)}, 3);
         const auto sh = shuffled(b, x, 2);
         const auto lo = b.transpose("lo_nhwc", b.slice("lo", sh, {0, 0, 0, 0}, {2, 12, 6, 5}), {0, 2, 3, 1});
         const auto hi = b.transpose("hi_nhwc", b.slice("hi", sh, {0, 12, 0, 0}, {2, 24, 6, 5}), {0, 2, 3, 1});
         b.output(b.concat("cat", {lo, b.conv("c", hi, {12, 1, 1, 1, 0, 1})}, 3));
       }},
      {"shuffle_stride2",
       [&](GraphBuilder& b) {
         const auto x = b.conv("x", b.input("in", {1, 8, 8, 8}), {20, 1, 1, 1, 0, 1});
         const auto sh = b.transpose("sh_nhwc", shuffled(b, x, 2), {0, 2, 3, 1});
         const auto d = b.conv("d", sh, {20, 3, 3, 2, 1, 20});
         b.output(b.concat("cat", {d, b.conv("p", sh, {20, 3, 3, 2, 1, 1})}, 3));
       }},
      {"shuffle_stride2_branches",  // the depthwise branch's 1x1 conv and the other branch's take the permutation
       [&](GraphBuilder& b) {
         const auto x = b.conv("x", b.input("in", {2, 8, 8, 8}), {24, 1, 1, 1, 0, 1});
         const auto sh = b.transpose("sh_nhwc", shuffled(b, x, 2), {0, 2, 3, 1});
         const auto d = b.conv("pw1", b.conv("dw", sh, {24, 3, 3, 2, 1, 24}), {16, 1, 1, 1, 0, 1});
         b.output(b.concat("cat", {d, b.conv("pw2", sh, {16, 3, 3, 2, 1, 1})}, 3));
       }},
      {"shuffle_nhwc_three_groups",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 4, 7, 18});
         const auto sh = b.transpose("sh", b.reshape("split", x, {1, 4, 7, 3, 6}), {0, 1, 2, 4, 3});
         b.output(b.conv("c", b.reshape("merge", sh, {1, 4, 7, 18}), {10, 3, 3, 1, 1, 1}));
       }},
      {"slice_through_onnx_order",
       [](GraphBuilder& b) {
         const auto t = b.transpose("nchw", b.input("x", {1, 9, 4, 40}), {0, 3, 1, 2});
         const auto s = b.transpose("nhwc", b.slice("s", t, {0, 5, 0, 0}, {1, 29, 9, 4}), {0, 2, 3, 1});
         b.output(b.pool("m", OpKind::MaxPool, s, 3, 1, 1));
       }},
  };
  for (const auto& c : cases)
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
  EXPECT_TRUE(pass_says(GetParam(), cases[0], {}, "fold-channels", "one 1x1 convolution: picks 12 of the 24 channels"));
  EXPECT_TRUE(pass_says(GetParam(), cases[2], {}, "fold-channels", "into the weights of its readers: picks 24 of the 24"));
}

// Residual adds whose other operand is a constant or one row of channels
// (a bias an exporter quantized apart from its MatMul, a position
// embedding, a per-channel shift after a conv, an activation row) folded
// into the producer's POSTOP as a rescale: on every placement, and under
// the greedy policy, which folds each one.
TEST_P(E2E, ConstantAndRowResidualsMatchReference) {
  const Case cases[] = {
      {"gemm_bias_add",
       [](GraphBuilder& b) {
         const auto y = b.gemm("fc", b.input("x", {37, 48}), 40, false);
         b.output(b.add("bias", y, b.constant("b", {1, 40}, 0.03, -2), 0.05, 1));
       }},
      {"gemm_bias_add_3d",  // [1, S, N] + [1, 1, N]
       [](GraphBuilder& b) {
         const auto y = b.reshape("y3", b.gemm("fc", b.input("x", {21, 32}), 24, false), {1, 21, 24});
         b.output(b.add("bias", y, b.constant("b", {1, 1, 24}, 0.03, 4), 0.06, -1));
       }},
      {"gemm_position_embedding",  // a constant of the output's shape
       [](GraphBuilder& b) {
         const auto y = b.gemm("fc", b.input("x", {17, 32}), 24);
         b.output(b.add("pos", y, b.constant("p", {17, 24}, 0.02, 0), 0.07, 2));
       }},
      {"conv_channel_shift",
       [](GraphBuilder& b) {
         const auto y = b.conv("c", b.input("x", {2, 7, 6, 12}), {20, 3, 3, 1, 1, 1});
         b.output(b.add("shift", y, b.constant("s", {1, 1, 1, 20}, 0.04, 3), 0.05, -4));
       }},
      {"gemm_activation_row",
       [](GraphBuilder& b) {
         const auto y = b.gemm("fc", b.input("x", {19, 32}), 16);
         b.output(b.add("rowadd", y, b.input("r", {1, 16}, 0.03, 1), 0.06, 0));
       }},
  };
  CompileOptions greedy;
  greedy.fusion = Fusion::Greedy;
  for (const auto& c : cases) {
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
    check(GetParam(), c, greedy);
    EXPECT_TRUE(pass_says(GetParam(), c, greedy, "tiling", "folded the add into POSTOP as a rescale"));
  }
}

// An activation operand repeated over the other's leading dims (squeeze-
// excite's [1,1,1,C] gate over [1,H,W,C], a [1,1,D] row over [1,N,D], a
// period wider than a chunk on tiny), on every placement.
TEST_P(E2E, BroadcastOperandsMatchReference) {
  const Case cases[] = {
      {"se_gate",
       [](GraphBuilder& b) {
         const auto x = b.input("x", {1, 9, 7, 48});
         const auto s = b.pool("gap", OpKind::GlobalAvgPool, x, 1, 1, 0);
         b.output(b.mul("se", x, b.unary("r", OpKind::Relu, s), 0.04, -1));
       }},
      {"row_add",
       [](GraphBuilder& b) {
         b.output(b.add("a", b.input("x", {1, 13, 40}), b.input("p", {1, 1, 40}, 0.03, 4)));
       }},
      {"wide_period",
       [](GraphBuilder& b) {
         b.output(b.mul("m", b.input("x", {3, 5000}), b.input("p", {1, 5000}, 0.08, 0), 0.1, 2));
       }},
  };
  for (const auto& c : cases)
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
}

// Requantization multipliers below 2^-32 (a weight channel near zero, as
// PyTorch's initializations leave some): shift 62 with fewer bits, or 0.
TEST_P(E2E, TinyMultipliersMatchReference) {
  const Case cases[] = {{"tiny_channel_scales", [](GraphBuilder& b) {
                           const auto y = b.conv("c", b.input("x", {1, 6, 6, 16}), {8, 3, 3, 1, 1, 1});
                           auto& w = b.graph().tensor("c.w");
                           w.q.scale[1] = 3e-9;   // x*w/y ~ 1e-10: shift 62, 28 bits
                           w.q.scale[2] = 1e-21;  // ~ 4e-23: multiplier 0
                           b.output(y);
                         }},
                        {"tiny_gemm", [](GraphBuilder& b) {
                           const auto y = b.gemm("fc", b.input("a", {5, 40}, 1e-6), 12);
                           b.graph().tensor(y).q.scale[0] = 1e5;  // a*w/y ~ 1.5e-13
                           b.output(y);
                         }}};
  for (const auto& c : cases)
    for (const CompileOptions& o : every_placement()) check(GetParam(), c, o);
}

// Residual adds folded into POSTOP (plain where provably exact, rescale
// otherwise) and kept separate, under every fusion policy, bit-exact with the
// reference.
TEST(E2EResidual, EveryPolicyMatchesReference) {
  const Case cases[] = {
      {"residual_1x1", [](GraphBuilder& b) { residual_block(b, 6, 16, 1, true); }},
      {"residual_3x3_relu", [](GraphBuilder& b) { residual_block(b, 7, 24, 3, true, true); }},
      {"residual_random", [](GraphBuilder& b) { residual_block(b, 5, 8, 3, false); }},
      {"residual_wide_3x3", [](GraphBuilder& b) { residual_block(b, 8, 128, 3, true); }},
      {"rescaled_1x1", [](GraphBuilder& b) { rescaled_residual_block(b, 6, 16, 1, false); }},
      {"rescaled_3x3_relu", [](GraphBuilder& b) { rescaled_residual_block(b, 7, 24, 3, true); }},
      {"rescaled_wide_odd", [](GraphBuilder& b) { rescaled_residual_block(b, 5, 72, 1, false); }},
  };
  for (const char* cfg : {"tiny", "small", "default"})
    for (Fusion f : {Fusion::None, Fusion::Greedy, Fusion::Cost})
      for (const auto& c : cases) {
        CompileOptions o;
        o.fusion = f;
        check(cfg, c, o);
      }
}

// Layout transforms gathered by DMA (runs of many bytes, of one byte, runs
// split at chunk edges) and grouped GEMMs (constant and activation b), as an
// attention block uses them: K^T and V per head, scores and context per
// head, on every placement.
TEST_P(E2E, AttentionLayoutsMatchReference) {
  const Case cases[] = {
      {"transpose_heads",  // [S, H, D] -> [H, S, D]: runs of D bytes
       [](GraphBuilder& b) { b.output(b.transpose("t", b.input("x", {1, 7, 4, 10}), {0, 2, 1, 3})); }},
      {"transpose_elems",  // [S, H*D] -> [H*D, S]: runs of one byte
       [](GraphBuilder& b) { b.output(b.transpose("t", b.input("x", {9, 37}), {1, 0})); }},
      {"transpose_kt",  // [S, H, D] -> [H, D, S]
       [](GraphBuilder& b) { b.output(b.transpose("t", b.input("x", {5, 3, 6}), {1, 2, 0})); }},
      {"transpose_rank4_mixed",
       [](GraphBuilder& b) { b.output(b.transpose("t", b.input("x", {2, 3, 4, 5}), {2, 0, 3, 1})); }},
      {"transpose_large",  // over the scratchpads of tiny: chunked on whole runs
       [](GraphBuilder& b) { b.output(b.transpose("t", b.input("x", {1, 130, 12, 64}), {0, 2, 1, 3})); }},
      {"grouped_gemm_const",
       [](GraphBuilder& b) {
         b.output(b.unary("r", OpKind::Relu, b.grouped_gemm("g", b.input("a", {21, 3 * 16}), 3, 24)));
       }},
      {"grouped_gemm_const_packable",  // groups of 8 outputs: two or four of them may share a GEMM
       [](GraphBuilder& b) { b.output(b.grouped_gemm("g", b.input("a", {37, 4 * 12}), 4, 8)); }},
      {"attention_core",
       [](GraphBuilder& b) {
         constexpr int64_t S = 19, H = 4, D = 16;
         const auto q = b.input("q", {S, H * D});
         const auto k = b.input("k", {S, H * D}, 0.04, 2);
         const auto v = b.input("v", {S, H * D}, 0.06, -1);
         const auto kt = b.transpose("kt", b.reshape("kr", k, {S, H, D}), {1, 2, 0});
         const auto scores = b.matmul("scores", q, kt, H);
         const auto vh = b.transpose("vh", b.reshape("vr", v, {S, H, D}), {1, 0, 2});
         b.output(b.matmul("context", b.unary("p", OpKind::Relu, scores), vh, H));
       }},
      {"attention_kt_scaled",  // K^T scaled by a constant: the GEMM reads K as it lies (fold-transpose)
       [](GraphBuilder& b) {
         constexpr int64_t S = 21, H = 3, D = 20;
         const auto q = b.input("q", {S, H * D});
         const auto kt = b.transpose("kt", b.input("k", {H, S, D}, 0.04, 2), {0, 2, 1});
         const auto ks = b.mul("ks", kt, b.constant("s", {H, D, S}));
         b.output(b.unary("r", OpKind::Relu, b.matmul("scores", q, ks, H)));
       }},
      {"matmul_bt",  // a plain [M,K] x [N,K]^T, b through a relu and a reshape
       [](GraphBuilder& b) {
         const auto t = b.transpose("t", b.input("x", {1, 9, 40}), {0, 2, 1});
         const auto r = b.reshape("tr", b.unary("r", OpKind::Relu, t), {40, 9});
         b.output(b.matmul("mm", b.input("a", {17, 40}), r));
       }},
      {"kt_read_twice",  // the transpose is also an output: kept, and the GEMM reads it
       [](GraphBuilder& b) {
         const auto kt = b.transpose("kt", b.input("k", {2, 11, 16}), {0, 2, 1});
         b.output(kt);
         b.output(b.matmul("scores", b.input("q", {11, 2 * 16}), kt, 2));
       }},
      {"trans_b_attr",  // trans_b written in the graph, b an input [G, N, K]
       [](GraphBuilder& b) { b.output(b.matmul("mm", b.input("a", {13, 2 * 24}), b.input("bt", {2, 35, 24}), 2, true)); }},
      {"tokens_from_nhwc",  // NHWC -> NCHW -> [C, HW] -> [HW, C]: moves nothing (fold-layout)
       [](GraphBuilder& b) {
         const auto t = b.transpose("nchw", b.input("x", {1, 4, 5, 24}), {0, 3, 1, 2});
         const auto tok = b.transpose("tok", b.reshape("flat", t, {1, 24, 20}), {0, 2, 1});
         b.output(b.gemm("fc", b.reshape("rows", tok, {20, 24}), 16));
       }},
      {"channel_shuffle",  // NHWC -> NCHW, [2, C/2] -> [C/2, 2], back to NHWC: one gather
       [](GraphBuilder& b) {
         const auto t = b.transpose("nchw", b.input("x", {1, 3, 4, 10}), {0, 3, 1, 2});
         const auto sh = b.transpose("shuffle", b.reshape("split", t, {1, 2, 5, 3, 4}), {0, 2, 1, 3, 4});
         b.output(b.transpose("nhwc", b.reshape("merge", sh, {1, 10, 3, 4}), {0, 2, 3, 1}));
       }},
      {"chain_observed",  // the middle of a chain is an output: two chains
       [](GraphBuilder& b) {
         const auto t = b.transpose("a", b.input("x", {2, 3, 7}), {2, 0, 1});
         const auto u = b.transpose("b", t, {1, 2, 0});
         b.output(u);
         b.output(b.transpose("d", b.transpose("c", u, {0, 2, 1}), {2, 0, 1}));
       }},
      {"gelu_chain",  // x * (1 + erf(x)) * 0.5 as exporters write GELU: one lookup (fold-pointwise)
       [](GraphBuilder& b) {
         const auto x = b.gemm("fc", b.input("a", {23, 40}), 48);
         const auto e = b.add("e1", b.lut("erf", x), b.splat("one", {23, 48}, 50, 0.02, 0), 0.04, -3);
         const auto h = b.mul("h", x, e, 0.06, 2);
         b.output(b.mul("gelu", h, b.splat("half", {23, 48}, 64, 0.0078125, 0), 0.05, -1));
       }},
      {"pointwise_shared",  // an inner step is also an output: both become lookups of x
       [](GraphBuilder& b) {
         const auto x = b.input("x", {5, 300});
         const auto r = b.unary("r", OpKind::Relu, b.add("s", x, b.splat("c", {5, 300}, -20), 0.05, 4));
         b.output(r);
         b.output(b.mul("sq", r, r, 0.3, -7));
       }},
      {"lut",  // chunks of several sizes, the table beside each
       [](GraphBuilder& b) { b.output(b.lut("l", b.input("x", {3, 1000}))); }},
      {"lut_after_gemm",
       [](GraphBuilder& b) { b.output(b.lut("l", b.gemm("fc", b.input("a", {17, 40}), 24))); }},
      {"softmax_rows",  // rows of several lengths, chunks of whole rows
       [](GraphBuilder& b) { b.output(b.softmax("s", b.input("x", {3, 37, 101}, 0.2, 5))); }},
      {"softmax_long_rows",  // 3000 rows of 128: many chunks on tiny
       [](GraphBuilder& b) { b.output(b.softmax("s", b.input("x", {12, 250, 128}, 0.1, 0))); }},
      {"layernorm_after_gemm",
       [](GraphBuilder& b) { b.output(b.layernorm("n", b.gemm("fc", b.input("a", {29, 40}), 96))); }},
      {"attention_softmax",
       [](GraphBuilder& b) {
         constexpr int64_t S = 13, H = 3, D = 16;
         const auto q = b.input("q", {S, H * D});
         const auto k = b.input("k", {S, H * D}, 0.04, 2);
         const auto kt = b.transpose("kt", b.reshape("kr", k, {S, H, D}), {1, 2, 0});
         const auto scores = b.reshape("sr", b.matmul("scores", q, kt, H), {S, H, S});
         b.output(b.layernorm("ln", b.reshape("pr", b.softmax("p", scores), {S, H * S})));
       }},
  };
  CompileOptions plain;
  CompileOptions one;
  one.num_cores = 1;
  one.double_buffer = false;
  CompileOptions tasks;
  tasks.placement = Placement::Dynamic;
  tasks.tasks_per_core = 3;
  CompileOptions pipe;
  pipe.placement = Placement::Pipeline;
  for (const auto& c : cases)
    for (const CompileOptions* o : {&plain, &one, &tasks, &pipe}) check(GetParam(), c, *o);
}

TEST(RefRun, RingsRefillAsTheyDrain) {
  const spec::HwConfig& cfg = *spec::find_config("tiny");
  GraphBuilder b("refill", 3);
  kLarge[0].build(b);
  ir::Graph& g = b.graph();
  ASSERT_TRUE(ir::validate(g).is_ok());
  auto r = compile(g, cfg, {});
  ASSERT_TRUE(r.is_ok()) << r.error().str();
  const auto inputs = ir::random_inputs(g, 3);
  auto want = ir::run_reference(g, inputs);
  ASSERT_TRUE(want.is_ok());
  RunStats st;
  auto got = run_plan(r->plan, cfg, inputs, 16, &st);
  ASSERT_TRUE(got.is_ok()) << got.error().str();
  EXPECT_GT(st.rounds, 10u);
  EXPECT_EQ(got->at(g.outputs[0]).data, want->at(g.outputs[0]).data);
}

INSTANTIATE_TEST_SUITE_P(Configs, E2E, ::testing::Values("tiny", "small", "default"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace loom::compiler::test
