// The service model on the tlm platform: port contention measured by running
// a batch on one core of a memory port while other batches run over and over
// on the port's other cores, against the batch alone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>

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

TEST(PortContention, BatchesOnOnePortStretchEachOther) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("tiny");  // 2 cores, 1 port
  ServiceModel sm(cfg, "tlm", "");
  const ModelSpec wide = chain(64, 256), narrow = chain(32, 64);
  auto alone = sm.cycles(wide, 32, 1);
  ASSERT_TRUE(alone) << alone.error().str();
  auto same = sm.stretch({&wide, 32, 1}, {{&wide, 32, 1}});
  ASSERT_TRUE(same) << same.error().str();
  auto other = sm.stretch({&wide, 32, 1}, {{&narrow, 16, 1}});
  ASSERT_TRUE(other) << other.error().str();
  std::printf("tiny gemm_chain(64,256) seq 32: alone %llu cycles; stretch with itself %.4f, with (32,64) seq 16 %.4f\n",
              (unsigned long long)*alone, *same, *other);
  EXPECT_GT(*same, 1.0);  // the port is shared: slower
  EXPECT_LT(*same, 2.0);  // but never worse than running one after the other
  EXPECT_GE(*other, 1.0);
  EXPECT_NE(*same, *other);  // a different co-runner, a different stretch
  // Cached: asking again runs nothing; the table has each pair once, with
  // the batch's cycles at each of the four phases.
  const uint64_t runs = sm.backend_runs();
  auto again = sm.stretch({&wide, 32, 1}, {{&wide, 32, 1}});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *same);
  EXPECT_EQ(sm.backend_runs(), runs);
  ASSERT_EQ(sm.stretches().size(), 2u);
  for (const auto& m : sm.stretches()) {
    EXPECT_EQ(m.phases.size(), 4u);
    EXPECT_GT(m.alone, 0u);
    // Alone on the port through the live path, the batch takes its measured service time.
    if (m.with.size() == 1 && std::get<0>(m.with[0]) == model_key(wide)) {
      EXPECT_NEAR(double(m.alone), double(*alone), 16.0);
    }
  }
  // More co-runners than the port has other cores are cut.
  auto many = sm.stretch({&wide, 32, 1}, {{&wide, 32, 1}, {&narrow, 16, 1}, {&narrow, 16, 1}});
  ASSERT_TRUE(many);
  EXPECT_EQ(*many, *same);
}

TEST(PortContention, StretchIsCachedOnDisk) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("tiny");
  char dir[] = "/tmp/loom_stretch_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const ModelSpec m = chain(64, 256);
  double first = 0;
  {
    ServiceModel sm(cfg, "tlm", dir);
    auto s = sm.stretch({&m, 16, 2}, {{&m, 32, 1}});
    ASSERT_TRUE(s) << s.error().str();
    first = *s;
    EXPECT_FALSE(sm.stretches()[0].from_disk);
  }
  ServiceModel sm(cfg, "tlm", dir);
  auto s = sm.stretch({&m, 16, 2}, {{&m, 32, 1}});
  ASSERT_TRUE(s) << s.error().str();
  EXPECT_EQ(*s, first);
  EXPECT_TRUE(sm.stretches()[0].from_disk);
  std::filesystem::remove_all(dir);
}

TEST(PortContention, OneCorePerPortHasNoStretch) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("default");  // 4 cores, 4 ports
  ServiceModel sm(cfg, "tlm", "");
  const ModelSpec m = chain(32, 64);
  auto s = sm.stretch({&m, 16, 1}, {{&m, 16, 1}});
  ASSERT_TRUE(s) << s.error().str();
  EXPECT_EQ(*s, 1.0);
  EXPECT_EQ(sm.backend_runs(), 0u);
}

}  // namespace
}  // namespace loom::serve
