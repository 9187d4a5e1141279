// Placement: golden tests of the pipeline stages and the dynamic tasks
// (input graph -> stage split, units, semaphores, task count and
// dependencies), the plan's task list on disk, and end-to-end runs through
// the runtime (dynamic dispatch included) on the ref device, and on tlm when
// it is built, bit-exact with the direct reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "ir/builder.h"
#include "runtime/executor.h"
#ifdef LOOM_HAVE_TLM
#include "tlm/tlm_device.h"
#endif

namespace loom::compiler::test {
namespace {

using ir::ConvSpec;
using ir::GraphBuilder;
using ir::OpKind;

const spec::HwConfig& cfg(const char* n) { return *spec::find_config(n); }

/// conv -> conv -> maxpool -> conv -> gap -> fc, batch `n`.
ir::Graph net(int64_t n, int64_t hw = 12) {
  GraphBuilder b("net", 5);
  const auto x = b.input("x", {n, hw, hw, 8});
  const auto c1 = b.unary("r1", OpKind::Relu, b.conv("c1", x, {16, 3, 3, 1, 1, 1}));
  const auto c2 = b.conv("c2", c1, {16, 3, 3, 1, 1, 1});
  const auto p = b.pool("p", OpKind::MaxPool, c2, 2, 2, 0);
  const auto c3 = b.unary("r3", OpKind::Relu, b.conv("c3", p, {32, 3, 3, 1, 1, 1}));
  const auto a = b.add("res", c3, b.conv("c4", p, {32, 1, 1, 1, 0, 1}));
  const auto gp = b.pool("gap", OpKind::GlobalAvgPool, a, 0, 0, 0);
  b.output(b.gemm("fc", b.flatten("fl", gp), 10));
  ir::Graph g = b.graph();
  EXPECT_TRUE(ir::validate(g).is_ok());
  return g;
}

/// Two 3x3 convolutions over a tall image: tiles are bands of output rows.
/// 2048 pixels of 8 channels: OUT (4 KiB a slot) holds at most 512 pixels
/// of a tile on tiny, so every layer has at least four tiles there.
ir::Graph chain(const char* name = "chain") {
  GraphBuilder b(name, 9);
  const auto x = b.input("x", {1, 256, 8, 8});
  b.output(b.conv("d2", b.conv("d1", x, {8, 3, 3, 1, 1, 1}), {8, 3, 3, 1, 1, 1}));
  ir::Graph g = b.graph();
  EXPECT_TRUE(ir::validate(g).is_ok());
  return g;
}

CompileResult compile_ok(const ir::Graph& g, const char* c, Placement p, int tasks_per_core = 1) {
  CompileOptions o;
  o.placement = p;
  o.tasks_per_core = tasks_per_core;
  auto r = compile(g, cfg(c), o);
  EXPECT_TRUE(r.is_ok()) << (r ? "" : r.error().str());
  return r ? std::move(*r) : CompileResult{};
}

int64_t stat(const CompileResult& r, const std::string& key) {
  for (const auto& [k, v] : r.stats)
    if (k == key) return v;
  return -1;
}

spec::Opcode opcode(const spec::Insn& i) { return spec::Opcode(spec::get_bits(i, 0, 6)); }

TEST(Placement, ParsesNamesAndRejectsOthers) {
  for (Placement p : {Placement::Static, Placement::Pipeline, Placement::Dynamic}) {
    auto q = parse_placement(placement_name(p));
    ASSERT_TRUE(q.is_ok());
    EXPECT_EQ(*q, p);
  }
  auto bad = parse_placement("round-robin");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().str(), "--placement: unknown placement 'round-robin' (static, pipeline or dynamic)");
}

TEST(Placement, StaticListsThePortsOfEachLayer) {
  const auto r = compile_ok(net(1), "small", Placement::Static);
  EXPECT_EQ(r.plan.placement, "static");
  EXPECT_TRUE(r.plan.tasks.empty());
  int with_ports = 0;
  for (const auto& d : r.decisions)
    if (d.pass == "placement" && d.text.find("memory ports carry") != std::string::npos) ++with_ports;
  EXPECT_EQ(with_ports, int(r.plan.layers.size()));  // every emitting layer, on small's two ports
  EXPECT_GE(with_ports, 6);
}

TEST(Placement, PipelineSplitsLayersIntoStagesAndHandsImagesOver) {
  // Batch 4 on small (4 cores, 16 semaphores): images are the units.
  const auto r = compile_ok(net(4), "small", Placement::Pipeline);
  const int64_t S = stat(r, "placement.stages");
  ASSERT_GE(S, 2);
  EXPECT_EQ(4 % S, 0);
  EXPECT_EQ(stat(r, "placement.units"), 4);
  EXPECT_EQ(r.plan.placement, "pipeline");
  EXPECT_EQ(r.plan.semaphores_used, uint32_t(2 * S));
  const size_t gs = size_t(4 / S);
  // Stage k > 0: each core first waits for unit 0 of stage k-1 (semaphore
  // 2(k-1)+1, count 1); stage 0 starts with work.
  for (size_t c = 0; c < 4; ++c) {
    const size_t k = c / gs;
    const auto& s = r.plan.cores[c];
    ASSERT_FALSE(s.empty());
    if (k == 0) {
      EXPECT_NE(opcode(s[0]), spec::Opcode::SEM_WAIT) << "core " << c;
    } else {
      ASSERT_EQ(opcode(s[0]), spec::Opcode::SEM_WAIT) << "core " << c;
      const auto w = spec::SemWaitInsn::decode(s[0]);
      EXPECT_EQ(w.sem_id, 2 * (k - 1) + 1);
      EXPECT_EQ(w.count, 1u);
    }
    // Signals of "unit done": the stage's first core, once per image, except in the last stage.
    size_t done_signals = 0;
    for (const auto& i : s)
      if (opcode(i) == spec::Opcode::SEM_SIGNAL && spec::SemSignalInsn::decode(i).sem_id == 2 * k + 1) ++done_signals;
    EXPECT_EQ(done_signals, (k + 1 < size_t(S) && c % gs == 0) ? 4u : 0u) << "core " << c;
  }
  // Every emitting layer is in exactly one stage.
  std::set<std::string> staged;
  for (const auto& d : r.decisions)
    if (d.pass == "placement" && d.text.rfind("stage ", 0) == 0) staged.insert(d.node);
  EXPECT_EQ(staged.size(), size_t(S));
}

TEST(Placement, PipelineCutsAnImagesTilesSoNoStageCoreIdles) {
  // Three 3x3 convolutions, batch 4 of 16x16x16 on small (4 cores, two
  // stages of two). Whether the tiling already gives an image two tiles (it
  // weighs row splits that spread the tiles over all cores) or the placement
  // has to split them, every core of a stage gets work from every layer.
  GraphBuilder b("chain_b4", 3);
  const auto x = b.input("x", {4, 16, 16, 16});
  b.output(b.conv("k3", b.conv("k2", b.conv("k1", x, {16, 3, 3, 1, 1, 1}), {16, 3, 3, 1, 1, 1}), {16, 3, 3, 1, 1, 1}));
  ir::Graph g = b.graph();
  ASSERT_TRUE(ir::validate(g).is_ok());
  const auto r = compile_ok(g, "small", Placement::Pipeline);
  ASSERT_EQ(stat(r, "placement.stages"), 2);
  // Every core of a stage has instructions for each of the stage's layers.
  for (const auto& l : r.plan.layers) {
    int cores_with_work = 0;
    for (size_t c = 0; c < 4; ++c) cores_with_work += l.insn_end[c] > l.insn_begin[c];
    EXPECT_EQ(cores_with_work, 2) << l.name;
  }
  auto dev = ref::make_ref_device(cfg("small"));
  ASSERT_TRUE(dev.is_ok());
  const auto in = ir::random_inputs(g, 2);
  auto res = runtime::execute(**dev, r.plan, in);
  ASSERT_TRUE(res.is_ok()) << res.error().str();
  EXPECT_TRUE(res->outputs[0].second.data == ir::run_reference(g, in)->at(g.outputs[0]).data);
}

TEST(Placement, PipelineWithoutABatchIsOneUnit) {
  const auto r = compile_ok(net(1), "tiny", Placement::Pipeline);
  EXPECT_EQ(stat(r, "placement.stages"), 2);  // tiny: two cores
  EXPECT_EQ(stat(r, "placement.units"), 1);
  bool said = false;
  for (const auto& d : r.decisions)
    said = said || (d.pass == "placement" && d.text.find("one unit (no batch to overlap") != std::string::npos);
  EXPECT_TRUE(said);
}

TEST(Placement, DynamicTasksDependOnTheRowsTheyRead) {
  // Default: one task per core and layer; here two.
  EXPECT_EQ(compile_ok(chain(), "tiny", Placement::Dynamic).plan.tasks.size(), 4u);
  const auto r = compile_ok(chain(), "tiny", Placement::Dynamic, 2);
  const auto& p = r.plan;
  EXPECT_EQ(p.placement, "dynamic");
  EXPECT_EQ(p.semaphores_used, 2u);
  ASSERT_EQ(p.layers.size(), 2u);
  // Each layer: its tiles (bands of output rows) in up to four tasks (two
  // per core on tiny); both layers tile alike.
  size_t l0 = 0, l1 = 0;
  for (const auto& t : p.tasks) (t.layer == 0 ? l0 : l1)++;
  ASSERT_EQ(l0, l1);
  ASSERT_EQ(l0, 4u);
  EXPECT_EQ(stat(r, "codegen.tasks"), int64_t(2 * l0));
  // The pool is core 0's stream; the other core holds END only.
  ASSERT_EQ(p.cores.size(), 2u);
  EXPECT_EQ(p.cores[1].size(), 1u);
  uint32_t at = 0;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const auto& t = p.tasks[i];
    EXPECT_EQ(t.begin, at) << "tasks tile the pool in order";
    at = t.end;
    EXPECT_EQ(opcode(p.cores[0][t.end - 1]), spec::Opcode::FENCE) << "task " << i;
    EXPECT_GT(t.cycles, 0u);
    if (t.layer == 0) {
      EXPECT_TRUE(t.deps.empty()) << "task " << i;
    }
  }
  EXPECT_EQ(at + 1, p.cores[0].size());  // then END
  // A band of layer 1 (at least 64 rows) reads one input row above and
  // below it (3x3, pad 1): the bands of layer 0 beside it and no others.
  const uint32_t T = uint32_t(l0);
  EXPECT_EQ(p.tasks[T].deps, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(p.tasks[T + 1].deps, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(p.tasks[2 * T - 1].deps, (std::vector<uint32_t>{T - 2, T - 1}));
}

TEST(Placement, PlanFileKeepsTasksAndRejectsBadOnes) {
  const auto r = compile_ok(chain(), "tiny", Placement::Dynamic, 2);
  const std::string path = (std::filesystem::temp_directory_path() / "loom_placement_test.plan").string();
  ASSERT_TRUE(plan::write_plan(r.plan, path).is_ok());
  auto back = plan::read_plan(path);
  ASSERT_TRUE(back.is_ok()) << back.error().str();
  EXPECT_EQ(back->placement, "dynamic");
  ASSERT_EQ(back->tasks.size(), r.plan.tasks.size());
  for (size_t i = 0; i < back->tasks.size(); ++i) {
    EXPECT_EQ(back->tasks[i].deps, r.plan.tasks[i].deps);
    EXPECT_EQ(back->tasks[i].begin, r.plan.tasks[i].begin);
    EXPECT_EQ(back->tasks[i].port, r.plan.tasks[i].port);
  }
  plan::Plan bad = r.plan;
  bad.tasks[1].deps = {1};
  ASSERT_TRUE(plan::write_plan(bad, path).is_ok());
  auto e = plan::read_plan(path);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.error().str(), path + ": tasks[1]: field 'deps': a task may only wait for an earlier task");
  bad = r.plan;
  bad.tasks.clear();
  ASSERT_TRUE(plan::write_plan(bad, path).is_ok());
  e = plan::read_plan(path);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.error().str().find("a dynamic plan needs tasks"), std::string::npos) << e.error().str();
  std::filesystem::remove(path);
}

using MakeDevice = std::function<Expected<std::unique_ptr<runtime::Device>>(const spec::HwConfig&, const runtime::DeviceOptions&)>;

/// Compiles `g` with `p`, runs it through the runtime on `make`'s device and
/// compares every output with the direct reference; returns the cycles.
uint64_t run_exact(const ir::Graph& g, const char* c, Placement p, const MakeDevice& make, int tasks_per_core = 1) {
  SCOPED_TRACE(std::string("config=") + c + " placement=" + placement_name(p) +
               " tasks_per_core=" + std::to_string(tasks_per_core));
  const auto r = compile_ok(g, c, p, tasks_per_core);
  const auto inputs = ir::random_inputs(g, 11);
  auto want = ir::run_reference(g, inputs);
  EXPECT_TRUE(want.is_ok());
  auto dev = make(cfg(c), runtime::DeviceOptions{});
  EXPECT_TRUE(dev.is_ok()) << dev.error().str();
  if (!dev) return 0;
  auto res = runtime::execute(**dev, r.plan, inputs);
  EXPECT_TRUE(res.is_ok()) << res.error().str();
  if (!res) return 0;
  if (p == Placement::Dynamic) {
    EXPECT_EQ(res->tasks, r.plan.tasks.size());
  }
  for (const auto& [name, t] : res->outputs) {
    const Tensor& w = want->at(name);
    EXPECT_EQ(w.shape, t.shape) << name;
    EXPECT_TRUE(w.data == t.data) << name << " differs from the reference";
  }
  return res->cycles;
}

TEST(PlacementE2E, EveryPlacementMatchesReferenceOnRef) {
  for (const char* c : {"tiny", "small", "default"})
    for (Placement p : {Placement::Static, Placement::Pipeline, Placement::Dynamic}) {
      run_exact(net(1), c, p, ref::make_ref_device);
      run_exact(net(3, 8), c, p, ref::make_ref_device);
      run_exact(chain(), c, p, ref::make_ref_device);
    }
  // Several tasks per core: tasks wait for others still queued on another core.
  for (const char* c : {"tiny", "small"}) {
    run_exact(net(1), c, Placement::Dynamic, ref::make_ref_device, 3);
    run_exact(chain(), c, Placement::Dynamic, ref::make_ref_device, 3);
  }
}

#ifdef LOOM_HAVE_TLM
TEST(PlacementE2E, EveryPlacementMatchesReferenceOnTlm) {
  for (const char* c : {"tiny", "small"})
    for (Placement p : {Placement::Static, Placement::Pipeline, Placement::Dynamic}) {
      const uint64_t cyc = run_exact(net(2, 8), c, p, tlm::make_tlm_device);
      EXPECT_GT(cyc, 0u);
      std::printf("%s %s net batch 2: %llu cycles\n", c, placement_name(p), (unsigned long long)cyc);
    }
  EXPECT_GT(run_exact(chain(), "tiny", Placement::Dynamic, tlm::make_tlm_device, 3), 0u);
}
#endif

}  // namespace
}  // namespace loom::compiler::test
