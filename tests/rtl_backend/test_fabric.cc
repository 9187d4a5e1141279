// The real loom_fabric through the rtl backend: the register map against the
// spec, and compiled graphs run on both ref and rtl with bit-identical
// outputs and identical instruction counters.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "compiler/compiler.h"
#include "ir/builder.h"
#include "runtime/executor.h"

namespace loom::rtl {
namespace {

using ir::GraphBuilder;
using ir::OpKind;
namespace cr = spec::core_reg;

/// Configurations verilated into this build, from CMake.
std::vector<std::string> built_configs() {
  std::vector<std::string> v;
  std::stringstream ss(LOOM_RTL_TEST_CONFIGS);
  for (std::string s; std::getline(ss, s, ',');)
    if (!s.empty()) v.push_back(s);
  return v;
}

class Fabric : public ::testing::TestWithParam<std::string> {
 protected:
  const spec::HwConfig& cfg() const { return *spec::find_config(GetParam()); }
};

TEST_P(Fabric, RegisterMapMatchesSpec) {
  auto made = make_rtl_device(cfg(), RtlOptions{});
  ASSERT_TRUE(made.is_ok()) << made.error().str();
  RtlDevice& d = **made;
  EXPECT_EQ(d.read_reg(spec::reg::ID), spec::kIdValue);
  EXPECT_EQ(d.read_reg(spec::reg::VERSION), spec::kVersion);
  const auto& c = cfg();
  EXPECT_EQ(d.read_reg(spec::reg::HWCFG), spec::hwcfg_value(c));
  for (uint32_t v : {0x00000000u, 0xFFFFFFFFu, 0xA5A55A5Au, 0x12345678u}) {
    d.write_reg(spec::reg::SCRATCH, v);
    EXPECT_EQ(d.read_reg(spec::reg::SCRATCH), v);
  }
  // Nothing started: idle at once, every core neither busy nor in error.
  EXPECT_EQ(d.read_reg(spec::reg::STATUS), 0u);
  const Status s = d.run_until_idle(10'000);
  EXPECT_TRUE(s.is_ok()) << s.str();
  EXPECT_TRUE(d.health().is_ok()) << d.health().str();
}

// Every core's read/write registers hold every bit the spec gives them, at
// that core's own address (a block wired to another core's slot, or an
// upper half cut short, reads back wrong); widths as docs/spec/regs.yaml
// states them: 32 bits, and bits [47:32] for the _HI halves.
TEST_P(Fabric, EveryCoreRegisterHoldsItsBits) {
  auto made = make_rtl_device(cfg(), RtlOptions{});
  ASSERT_TRUE(made.is_ok()) << made.error().str();
  RtlDevice& d = **made;
  const std::pair<uint32_t, uint32_t> regs[] = {
      {cr::RING_BASE_LO, 0xFFFFFFFFu}, {cr::RING_BASE_HI, 0xFFFFu}, {cr::RING_SIZE, 0xFFFFFFFFu},
      {cr::RING_TAIL, 0xFFFFFFFFu},    {cr::WIN_BASE_LO, 0xFFFFFFFFu}, {cr::WIN_BASE_HI, 0xFFFFu},
      {cr::WIN_LIMIT_LO, 0xFFFFFFFFu}, {cr::WIN_LIMIT_HI, 0xFFFFu}};
  for (uint32_t pattern : {0xFFFFFFFFu, 0xAAAAAAAAu, 0x55555555u, 0x00000000u}) {
    // Each core and register its own value, written before any is read back.
    for (unsigned c = 0; c < cfg().cores; ++c)
      for (auto [off, mask] : regs) d.write_reg(spec::core_reg_addr(c, off), pattern ^ (c * 0x11111111u) ^ off);
    for (unsigned c = 0; c < cfg().cores; ++c)
      for (auto [off, mask] : regs)
        EXPECT_EQ(d.read_reg(spec::core_reg_addr(c, off)), (pattern ^ (c * 0x11111111u) ^ off) & mask)
            << "core " << c << ", register offset " << off;
  }
  for (unsigned c = 0; c < cfg().cores; ++c)
    for (auto [off, mask] : regs) d.write_reg(spec::core_reg_addr(c, off), 0);
  // Nothing was started by those writes (no doorbell).
  EXPECT_EQ(d.read_reg(spec::reg::STATUS), 0u);
  EXPECT_TRUE(d.health().is_ok()) << d.health().str();
}

// Several Verilated models alive at once (e.g. rtl next to cosim or xrt-emu)
// must tear down in any order.
TEST_P(Fabric, TwoLiveModelsTearDownInAnyOrder) {
  for (bool first_made_first_gone : {true, false}) {
    auto a = make_rtl_device(cfg(), RtlOptions{});
    ASSERT_TRUE(a.is_ok()) << a.error().str();
    auto b = make_rtl_device(cfg(), RtlOptions{});
    ASSERT_TRUE(b.is_ok()) << b.error().str();
    (*a)->write_reg(spec::reg::SCRATCH, 0x1234u);
    (*b)->write_reg(spec::reg::SCRATCH, 0x5678u);
    EXPECT_EQ((*a)->read_reg(spec::reg::SCRATCH), 0x1234u);
    EXPECT_EQ((*b)->read_reg(spec::reg::SCRATCH), 0x5678u);
    if (first_made_first_gone) {
      a->reset();
      b->reset();
    } else {
      b->reset();
      a->reset();
    }
  }
}

TEST(FabricFactory, UnbuiltConfigIsAClearError) {
  spec::HwConfig odd = *spec::find_config("tiny");
  odd.name = "not_a_config";
  auto made = make_rtl_device(odd);
  ASSERT_FALSE(made.is_ok());
  EXPECT_NE(made.error().str().find("was not verilated into this build"), std::string::npos) << made.error().str();
}

struct Case {
  const char* name;
  std::function<void(GraphBuilder&)> build;
};

const Case kCases[] = {
    {"matmul", [](GraphBuilder& b) { b.output(b.gemm("mm", b.input("a", {5, 33}), 9, false)); }},
    {"gemm_clip_fused",
     [](GraphBuilder& b) { b.output(b.unary("cl", OpKind::Clip, b.gemm("fc", b.input("a", {6, 20}), 10), 0.0, 0.4)); }},
    {"conv_relu_fused",
     [](GraphBuilder& b) {
       b.output(b.unary("r", OpKind::Relu, b.conv("c", b.input("x", {1, 6, 6, 4}), {8, 3, 3, 1, 1, 1})));
     }},
    {"add_relu",
     [](GraphBuilder& b) {
       const auto x = b.input("x", {1, 5, 5, 8});
       const auto y = b.input("y", {1, 5, 5, 8}, 0.04, 2);
       b.output(b.unary("r", OpKind::Relu, b.add("a", x, y)));
     }},
    {"maxpool_k3s2p1",
     [](GraphBuilder& b) { b.output(b.pool("p", OpKind::MaxPool, b.input("x", {1, 11, 11, 12}), 3, 2, 1)); }},
};

/// Compiles `c` for the config, runs it on ref and on `rtl`, compares.
void run_both(const spec::HwConfig& cfg, const Case& c, RtlDevice& rtl, uint64_t seed = 7) {
  SCOPED_TRACE(std::string("config=") + std::string(cfg.name) + " case=" + c.name + " seed=" + std::to_string(seed));
  GraphBuilder b(c.name, seed);
  c.build(b);
  ir::Graph& g = b.graph();
  ASSERT_TRUE(ir::validate(g).is_ok());
  auto compiled = compiler::compile(g, cfg, {});
  ASSERT_TRUE(compiled.is_ok()) << compiled.error().str();
  const auto inputs = ir::random_inputs(g, seed);

  auto ref_dev = ref::make_ref_device(cfg);
  ASSERT_TRUE(ref_dev.is_ok()) << ref_dev.error().str();
  auto want = runtime::execute(**ref_dev, compiled->plan, inputs);
  ASSERT_TRUE(want.is_ok()) << want.error().str();
  runtime::RunOptions ro;
  ro.timeout_cycles = 20'000'000;
  auto got = runtime::execute(rtl, compiled->plan, inputs, ro);
  ASSERT_TRUE(got.is_ok()) << got.error().str();
  std::printf("%s on %s: %llu cycles\n", c.name, std::string(cfg.name).c_str(),
              static_cast<unsigned long long>(got->cycles));

  ASSERT_EQ(want->outputs.size(), got->outputs.size());
  for (size_t i = 0; i < want->outputs.size(); ++i) {
    const auto& [name, w] = want->outputs[i];
    const Tensor& h = got->outputs[i].second;
    ASSERT_EQ(w.shape, h.shape) << name;
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < w.data.size(); ++k)
      if (w.data[k] != h.data[k] && bad++ == 0) first = k;
    EXPECT_EQ(bad, 0u) << name << ": " << bad << " of " << w.data.size() << " bytes differ, first at " << first;
  }
  ASSERT_EQ(want->cores.size(), got->cores.size());
  // Instruction counts, MACs and data bytes are architectural; cycles and
  // queue depth are not and may differ.
  for (size_t core = 0; core < want->cores.size(); ++core) {
    for (auto k : {spec::Counter::INSN_LOAD, spec::Counter::INSN_COMPUTE, spec::Counter::INSN_STORE,
                   spec::Counter::INSN_SYNC, spec::Counter::MACS, spec::Counter::BYTES_RD, spec::Counter::BYTES_WR})
      EXPECT_EQ(want->cores[core].counters[size_t(k)], got->cores[core].counters[size_t(k)])
          << "core " << core << " counter " << spec::kCounterNames[size_t(k)];
  }
  EXPECT_TRUE(rtl.health().is_ok()) << rtl.health().str();
}

TEST_P(Fabric, EndToEndMatchesRef) {
  for (const Case& c : kCases) {
    auto made = make_rtl_device(cfg());
    ASSERT_TRUE(made.is_ok()) << made.error().str();
    run_both(cfg(), c, static_cast<RtlDevice&>(**made));
  }
}

TEST_P(Fabric, EndToEndUnderMemoryStress) {
  // Slow, stalling memory that answers different IDs out of order.
  RtlOptions opt;
  opt.mem.read_latency = 60;
  opt.mem.write_latency = 30;
  opt.mem.beats_per_cycle = 0.5;
  opt.mem.stall_prob = 0.3;
  opt.mem.reorder_ids = true;
  opt.mem.seed = 1234;
  std::printf("memory seed %llu (rerun a failure with a waveform: RtlOptions::trace_path)\n",
              static_cast<unsigned long long>(opt.mem.seed));
  for (const Case& c : {kCases[0], kCases[2]}) {
    auto made = make_rtl_device(cfg(), opt);
    ASSERT_TRUE(made.is_ok()) << made.error().str();
    run_both(cfg(), c, **made);
  }
}

// Empty when no configuration could be verilated (the fabric did not elaborate).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Fabric);
INSTANTIATE_TEST_SUITE_P(Configs, Fabric, ::testing::ValuesIn(built_configs()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom::rtl
