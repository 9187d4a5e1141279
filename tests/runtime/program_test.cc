// plan::Program and runtime::run_program: steps in order on one device, host
// steps and values behind HostSteps, errors that stop the run where they occur.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "plan/program.h"
#include "runtime/program.h"

namespace loom::runtime {
namespace {

const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

plan::Plan compile_ok(const ir::Graph& g) {
  auto r = compiler::compile(g, tiny(), {});
  EXPECT_TRUE(r) << r.error().str();
  return r ? std::move(r->plan) : plan::Plan{};
}

/// Two segments with host steps around and between them:
///   host 0: x = seeded input; seg 0: y = gemm(x); host 1: y = -y / 2;
///   seg 1: z = gemm(y); host 2: records z.
struct Fixture {
  ir::Graph a, b;
  plan::Program prog;
  std::map<std::string, Tensor> x;
  Fixture() {
    ir::GraphBuilder ba("a", 3);
    ba.output(ba.gemm("g0", ba.input("x", {4, 16}), 8));
    a = ba.graph();
    ir::GraphBuilder bb("b", 5);
    bb.output(bb.gemm("g1", bb.input(a.outputs[0], {4, 8}), 6));
    b = bb.graph();
    x = ir::random_inputs(a, 7);
    for (const ir::Graph* g : {&a, &b}) {
      plan::Segment s;
      s.plan = compile_ok(*g);
      s.inputs = g->inputs;
      s.outputs = g->outputs;
      prog.segments.push_back(std::move(s));
    }
    prog.steps = {{-1, 0}, {0, 0}, {-1, 1}, {1, 0}, {-1, 2}};
  }
};

class Recorder final : public HostSteps {
 public:
  explicit Recorder(const Fixture& f, size_t fail_at = size_t(-1)) : f_(f), fail_at_(fail_at) {}
  Status run_host(size_t index) override {
    log.push_back("host " + std::to_string(index));
    if (index == fail_at_) return make_error("host step " + std::to_string(index), "refused by the test");
    if (index == 0) values = f_.x;
    if (index == 1) {
      Tensor& y = values.at(f_.a.outputs[0]);
      for (int64_t k = 0; k < y.numel(); ++k) y.i8()[k] = int8_t(-y.i8()[k] / 2);
    }
    return {};
  }
  Expected<Tensor> to_device(int segment, const plan::TensorBinding& b) override {
    log.push_back("in " + std::to_string(segment) + " " + b.name);
    auto it = values.find(b.name);
    if (it == values.end()) return make_error("segment " + std::to_string(segment) + " input '" + b.name + "'", "has no value");
    return it->second;
  }
  Status from_device(int segment, const plan::TensorBinding& b, Tensor t) override {
    log.push_back("out " + std::to_string(segment) + " " + b.name);
    values[b.name] = std::move(t);
    return {};
  }
  std::vector<std::string> log;
  std::map<std::string, Tensor> values;

 private:
  const Fixture& f_;
  size_t fail_at_;
};

TEST(Program, RunsEveryStepInOrderOnOneDevice) {
  Fixture f;
  ASSERT_TRUE(plan::validate(f.prog, "test").is_ok());
  auto dev = ref::make_ref_device(tiny());
  ASSERT_TRUE(dev);
  Recorder host(f);
  auto run = run_program(**dev, f.prog, host);
  ASSERT_TRUE(run) << run.error().str();
  const std::string y = f.a.outputs[0], z = f.b.outputs[0];
  const std::vector<std::string> want{"host 0", "in 0 x", "out 0 " + y, "host 1", "in 1 " + y, "out 1 " + z, "host 2"};
  EXPECT_EQ(host.log, want);
  ASSERT_EQ(run->segments.size(), 2u);
  EXPECT_EQ(run->segments[0].segment, 0);
  EXPECT_EQ(run->segments[1].segment, 1);
  EXPECT_TRUE(run->segments[0].result.outputs.empty()) << "outputs are handed to HostSteps";
  uint64_t insns = 0;
  for (const auto& s : run->segments)
    for (const auto& c : s.result.cores) insns += c.instructions;
  EXPECT_EQ(run->instructions, insns);
  EXPECT_GT(insns, 0u);
  // The result is the reference of both segments with the host step between.
  auto ya = ir::run_reference(f.a, f.x);
  ASSERT_TRUE(ya);
  Tensor yt = ya->at(y);
  for (int64_t k = 0; k < yt.numel(); ++k) yt.i8()[k] = int8_t(-yt.i8()[k] / 2);
  auto zb = ir::run_reference(f.b, {{y, yt}});
  ASSERT_TRUE(zb);
  EXPECT_EQ(host.values.at(z).data, zb->at(z).data);
  std::set<int8_t> distinct(host.values.at(z).i8(), host.values.at(z).i8() + host.values.at(z).numel());
  EXPECT_GT(distinct.size(), 2u) << "a degenerate output would prove nothing";
}

TEST(Program, CheckComparesEverySegmentWithItsReference) {
  Fixture f;
  auto dev = ref::make_ref_device(tiny());
  ASSERT_TRUE(dev);
  RunOptions ro;
  ro.check = true;
  {
    Recorder host(f);
    auto run = run_program(**dev, f.prog, host, ro);
    ASSERT_FALSE(run) << "segments without graphs cannot be checked";
    EXPECT_EQ(run.error().str(), "segment 0: has no graph to check against");
  }
  f.prog.segments[0].graph = f.a;
  f.prog.segments[1].graph = f.b;
  {
    Recorder host(f);
    auto run = run_program(**dev, f.prog, host, ro);
    ASSERT_TRUE(run) << run.error().str();
    EXPECT_EQ(run->checked_segments, 2);
    EXPECT_TRUE(run->mismatches.empty());
  }
  // A reference that differs: segment 1 checked against other weights.
  ir::GraphBuilder other("b", 6);
  other.output(other.gemm("g1", other.input(f.a.outputs[0], {4, 8}), 6));
  f.prog.segments[1].graph = other.graph();
  Recorder host(f);
  auto run = run_program(**dev, f.prog, host, ro);
  ASSERT_TRUE(run) << run.error().str();
  ASSERT_EQ(run->mismatches.size(), 1u);
  EXPECT_EQ(run->mismatches[0].output, "segment 1 output '" + f.b.outputs[0] + "'");
  EXPECT_GT(run->mismatches[0].elements, 0);
  EXPECT_GT(run->mismatches[0].max_abs_diff, 0);
  EXPECT_EQ(host.values.count(f.b.outputs[0]), 1u) << "a mismatch does not stop the run";
}

TEST(Program, AFailingHostStepStopsTheRunThere) {
  Fixture f;
  auto dev = ref::make_ref_device(tiny());
  ASSERT_TRUE(dev);
  Recorder host(f, 1);
  auto run = run_program(**dev, f.prog, host);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().str(), "host step 1: refused by the test");
  EXPECT_EQ(host.log.back(), "host 1") << "segment 1 must not start";
}

TEST(Program, AMissingInputIsAnErrorNamingIt) {
  Fixture f;
  f.prog.steps.erase(f.prog.steps.begin());  // no host step 0: x never bound
  auto dev = ref::make_ref_device(tiny());
  ASSERT_TRUE(dev);
  Recorder host(f);
  auto run = run_program(**dev, f.prog, host);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().str(), "segment 0 input 'x': has no value");
}

TEST(Program, SingleSegmentRunsAsTheExecutorDoes) {
  Fixture f;
  plan::Program p = plan::single_segment(f.prog.segments[0].plan);
  ASSERT_TRUE(plan::validate(p, "one").is_ok());
  ASSERT_EQ(p.steps.size(), 1u);
  auto d1 = ref::make_ref_device(tiny());
  auto d2 = ref::make_ref_device(tiny());
  ASSERT_TRUE(d1 && d2);
  DeviceValues values(f.x);
  auto run = run_program(**d1, p, values);
  ASSERT_TRUE(run) << run.error().str();
  auto direct = execute(**d2, p.segments[0].plan, f.x);
  ASSERT_TRUE(direct);
  const std::string y = f.a.outputs[0];
  EXPECT_EQ(values.values().at(y).data, direct->outputs[0].second.data);
  EXPECT_EQ(run->segments[0].result.cores.size(), direct->cores.size());
  for (size_t c = 0; c < direct->cores.size(); ++c)
    EXPECT_EQ(run->segments[0].result.cores[c].counters, direct->cores[c].counters) << "core " << c;
  auto host = values.run_host(0);
  EXPECT_FALSE(host.is_ok());
}

TEST(Program, ValidateNamesTheBadStepOrSegment) {
  Fixture f;
  plan::Program p = f.prog;
  p.steps[3].segment = 5;
  EXPECT_EQ(plan::validate(p, "m").error().str(), "m: step 3: names segment 5 of 2");
  p = f.prog;
  p.steps.erase(p.steps.begin() + 3);
  EXPECT_EQ(plan::validate(p, "m").error().str(), "m: segment 1: is run by no step");
  p = f.prog;
  p.segments[1].inputs = {"other"};
  EXPECT_EQ(plan::validate(p, "m").error().str(), "m: segment 1: its inputs are not the inputs of its plan");
  p = f.prog;
  p.segments[0].outputs.push_back("extra");
  EXPECT_EQ(plan::validate(p, "m").error().str(), "m: segment 0: its outputs are not the outputs of its plan");
}

}  // namespace
}  // namespace loom::runtime
