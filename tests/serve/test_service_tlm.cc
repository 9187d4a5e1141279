// The service model on the tlm platform: port contention measured by running
// copies of a batch's one-core plan at once on cores that share a memory
// port, against the same plan alone.
#include <gtest/gtest.h>

#include <cstdio>

#include "loom/spec_gen.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "serve/service.h"
#include "tlm/tlm_device.h"

namespace loom::serve {
namespace {

void register_tlm() {
  runtime::register_backend("tlm", "SystemC/TLM-2.0 virtual platform",
                            tlm::make_tlm_device);
}

ModelSpec chain(int64_t hidden, int64_t ffn) {
  ModelSpec m;
  m.hidden = hidden;
  m.ffn = ffn;
  return m;
}

TEST(PortContention, CoresPerPortFromTheSpec) {
  for (const auto& c : spec::kConfigs) {
    ServiceModel sm(c, "tlm", "");
    // Core i uses port i % mem_ports: port 0 has ceil(cores / ports) cores.
    EXPECT_EQ(sm.cores_per_port(), int((c.cores + c.mem_ports - 1) / c.mem_ports)) << c.name;
  }
}

TEST(PortContention, TwoCoresOnOnePortStretchAMemoryBoundPlan) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("tiny");  // 2 cores, 1 port
  ServiceModel sm(cfg, "tlm", "");
  const ModelSpec m = chain(64, 256);
  auto one = sm.cycles(m, 32, 1, 1);
  ASSERT_TRUE(one) << one.error().str();
  auto two = sm.cycles(m, 32, 1, 2);
  ASSERT_TRUE(two) << two.error().str();
  std::printf("tiny gemm_chain(64,256) seq 32: alone %llu cycles, 2 cores on the port %llu (x%.3f)\n",
              (unsigned long long)*one, (unsigned long long)*two, double(*two) / double(*one));
  EXPECT_GT(*two, *one);         // the port is shared: slower
  EXPECT_LT(*two, 2 * *one + 1);  // but never worse than running one after the other
  // More cores than the port has are clamped to the port's cores (no new run).
  const uint64_t runs = sm.backend_runs();
  auto many = sm.cycles(m, 32, 1, 5);
  ASSERT_TRUE(many);
  EXPECT_EQ(*many, *two);
  EXPECT_EQ(sm.backend_runs(), runs);
  // Both measurements are in the table, with the cores that ran.
  int with_two = 0;
  for (const auto& t : sm.measurements()) with_two += t.port_cores == 2;
  EXPECT_EQ(with_two, 1);
}

TEST(PortContention, ReplicatedCopiesAreIndependentAndBitExact) {
  register_tlm();
  // small: port 0 holds cores 0 and 2. A two-layer chain has a semaphore
  // barrier, which each copy gets for itself.
  const spec::HwConfig& cfg = *spec::find_config("small");
  ModelSpec m = chain(32, 64);
  m.layers = 2;
  const ir::Graph g = gemm_chain(m, 24);
  compiler::CompileOptions co;
  co.num_cores = 1;
  auto cr = compiler::compile(g, cfg, co);
  ASSERT_TRUE(cr) << cr.error().str();
  ASSERT_GT(cr->plan.semaphores_used, 0u);
  auto two = replicate_on_port(cr->plan, cfg, 2, "chain");
  ASSERT_TRUE(two) << two.error().str();
  ASSERT_EQ(two->cores.size(), 3u);  // cores 0 and 2 run; core 1 runs END
  EXPECT_EQ(two->cores[1].size(), 1u);
  auto dev = tlm::make_tlm_device(cfg);
  ASSERT_TRUE(dev);
  const auto in = ir::random_inputs(g, 1);
  auto alone = runtime::execute(**dev, cr->plan, in);
  ASSERT_TRUE(alone) << alone.error().str();
  std::map<std::string, Tensor> in2;
  for (const auto& [n, t] : in) in2[n + "@0"] = t, in2[n + "@1"] = t;
  auto both = runtime::execute(**dev, *two, in2);
  ASSERT_TRUE(both) << both.error().str();
  ASSERT_EQ(both->outputs.size(), 2 * alone->outputs.size());
  for (size_t j = 0; j < 2; ++j) {
    EXPECT_EQ(both->outputs[j].first, alone->outputs[0].first + "@" + std::to_string(j));
    EXPECT_EQ(both->outputs[j].second.data, alone->outputs[0].second.data) << "copy " << j;
  }
  EXPECT_GE(both->cycles, alone->cycles);
  EXPECT_FALSE(replicate_on_port(cr->plan, cfg, 3, "chain"));  // port 0 of small has 2 cores
}

TEST(PortContention, OneCorePerPortHasNoStretch) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("default");  // 4 cores, 4 ports
  ServiceModel sm(cfg, "tlm", "");
  const ModelSpec m = chain(32, 64);
  auto one = sm.cycles(m, 16, 1, 1);
  ASSERT_TRUE(one) << one.error().str();
  auto two = sm.cycles(m, 16, 1, 2);
  ASSERT_TRUE(two);
  EXPECT_EQ(*one, *two);
}

}  // namespace
}  // namespace loom::serve
