// The service model on the tlm platform: port contention measured by running
// a batch on one core of a memory port while other batches run over and over
// on the port's other cores, against the batch alone; batches mapped onto
// several cores served as gangs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "loom/spec_gen.h"
#include "device/device.h"
#include "runtime/executor.h"
#include "serve/server.h"
#include "serve/service.h"
#include "serve/workload.h"
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

// Cached counts each in bounds but impossible together (the batch alone not
// taking its service time, a phase faster than alone or slower than the
// batch and its co-runner one after the other) are measured again.
TEST(PortContention, InconsistentStretchEntriesAreMeasuredAgain) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("tiny");
  char dir[] = "/tmp/loom_stretch_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const ModelSpec m = chain(64, 256);
  double first = 0;
  uint64_t alone = 0;
  {
    ServiceModel sm(cfg, "tlm", dir);
    auto s = sm.stretch({&m, 16, 2}, {{&m, 32, 1}});
    ASSERT_TRUE(s) << s.error().str();
    first = *s;
    alone = sm.stretches()[0].alone;
  }
  std::string entry;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ".stretch") entry = f.path().string();
  ASSERT_FALSE(entry.empty());
  const auto a = [&](double k) { return std::to_string(uint64_t(double(alone) * k)); };
  const std::vector<std::string> spoiled = {
      "1 1 1 1 1\n",                                                 // alone is not the service time
      a(1) + " " + a(1) + " " + a(1) + " " + a(1) + " " + a(40) + "\n",  // 40x with one co-runner
      a(1) + " " + a(0.5) + " " + a(1) + " " + a(1) + " " + a(1) + "\n",  // faster than alone
      a(3) + " " + a(3) + " " + a(3) + " " + a(3) + " " + a(3) + "\n",  // alone 3x the service time
  };
  for (const auto& text : spoiled) {
    {
      FILE* f = std::fopen(entry.c_str(), "w");
      ASSERT_NE(f, nullptr);
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
    ServiceModel sm(cfg, "tlm", dir);
    auto s = sm.stretch({&m, 16, 2}, {{&m, 32, 1}});
    ASSERT_TRUE(s) << s.error().str();
    EXPECT_FALSE(sm.stretches()[0].from_disk) << text;
    EXPECT_EQ(*s, first) << text;
  }
  // The entry written back is used again.
  ServiceModel sm(cfg, "tlm", dir);
  auto s = sm.stretch({&m, 16, 2}, {{&m, 32, 1}});
  ASSERT_TRUE(s) << s.error().str();
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

// A mapping that places every batch of the chain on `cores` cores.
Mapper on_cores(int cores, compiler::Placement placement = compiler::Placement::Static) {
  return [cores, placement](const ModelSpec&, int64_t, int) {
    MappedRun r;
    r.options.num_cores = cores;
    r.options.placement = placement;
    r.tag = "cores=" + std::to_string(cores) + ",placement=" + compiler::placement_name(placement);
    return r;
  };
}

Workload gang_workload(const char* scheduling, int streams = 1) {
  std::string text = std::string(R"(config: small
duration_ms: 4
seed: 5
batching: fixed
scheduling: )") + scheduling + R"(
max_batch: 2
max_queue_delay_ms: 0.02
streams:
)";
  for (int i = 0; i < streams; ++i)
    text += "  - name: chain" + std::to_string(i) + R"(
    model: gemm_chain
    hidden: 32
    ffn: 64
    layers: 1
    slo_ms: 50.0
    arrival: {poisson: {rate: 20000}}
    seq_len: {values: [16, 32], weights: [1, 1]}
)";
  auto w = parse_workload_text(text, "gang.yaml");
  EXPECT_TRUE(w) << w.error().str();
  return *w;
}

TEST(Gang, ABatchOnTwoCoresHoldsBothUntilItEnds) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("small");  // 4 cores, 2 ports
  const Workload w = gang_workload("dynamic");
  ServiceModel sm(cfg, "tlm", "");
  sm.swap_mapping(on_cores(2), 0.0);
  std::vector<BatchSpan> spans;
  std::vector<ServedRequest> reqs;
  ServeOptions o;
  o.spans = &spans;
  o.requests = &reqs;
  auto r = run_serve(w, o, sm);
  ASSERT_TRUE(r) << r.error().str();
  // Every batch ran on two cores: two spans with the same start and end on
  // different cores, and no core ever ran two batches at once.
  ASSERT_FALSE(spans.empty());
  ASSERT_EQ(spans.size() % 2, 0u);
  EXPECT_EQ(size_t(r->gang_batches), spans.size() / 2);
  for (size_t i = 0; i < spans.size(); i += 2) {
    EXPECT_NE(spans[i].core, spans[i + 1].core);
    EXPECT_EQ(spans[i].start_us, spans[i + 1].start_us);
    EXPECT_EQ(spans[i].end_us, spans[i + 1].end_us);
    EXPECT_GT(spans[i].end_us, spans[i].start_us);
  }
  for (int c = 0; c < int(cfg.cores); ++c) {
    std::vector<std::pair<double, double>> on;
    for (const auto& b : spans)
      if (b.core == c) on.push_back({b.start_us, b.end_us});
    std::sort(on.begin(), on.end());
    for (size_t k = 1; k < on.size(); ++k) EXPECT_GE(on[k].first, on[k - 1].second) << "core " << c;
  }
  size_t done = 0;
  for (const auto& q : reqs) done += q.done_us >= 0;
  EXPECT_EQ(done, reqs.size());
  // A two-core plan is faster than the one-core plan of the same batch.
  const ModelSpec m = w.streams[0].model;
  sm.set_now(0);
  auto c2 = sm.cycles(m, 32, 2);
  ASSERT_TRUE(c2) << c2.error().str();
  sm.clear_mappings();  // one tlm platform per process: the same model, unmapped
  auto c1 = sm.cycles(m, 32, 2);
  ASSERT_TRUE(c1) << c1.error().str();
  std::printf("small gemm_chain(32,64) 64 rows: %llu cycles on 1 core, %llu on 2\n", (unsigned long long)*c1,
              (unsigned long long)*c2);
  EXPECT_LT(*c2, *c1);
}

TEST(Gang, MoreCoresThanTheStreamHasIsAnError) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("small");
  // Two streams in static partitions of 2 cores each; the mapping asks for 4.
  ServiceModel sm(cfg, "tlm", "");
  sm.swap_mapping(on_cores(4), 0.0);
  auto r = run_serve(gang_workload("static", 2), ServeOptions{}, sm);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("mapped onto 4 cores; it can use 2"), std::string::npos) << r.error().str();
}

TEST(Gang, LiveRunsAMappedGangAndRefusesADynamicOne) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("small");
  // A mapping's gang of 2 cores with a static plan (as loom tune makes them)
  // runs live: one job on both cores, as the simulator has it (the golden
  // check is serve.cli.Gangs', this binary has no ref backend).
  ServiceModel sm(cfg, "tlm", "");
  sm.swap_mapping(on_cores(2), 0.0);
  auto sim = run_serve(gang_workload("dynamic"), ServeOptions{}, sm);
  ASSERT_TRUE(sim) << sim.error().str();
  ServeOptions lo;
  lo.mode = "live";
  auto l = run_serve(gang_workload("dynamic"), lo, sm);
  ASSERT_TRUE(l) << l.error().str();
  ASSERT_TRUE(l->live);
  EXPECT_EQ(l->gang_batches, sim->gang_batches);
  EXPECT_GT(l->gang_batches, 0);
  EXPECT_EQ(l->live->counters.device_runs, uint64_t(l->gang_batches));
  EXPECT_EQ(l->live->counters.device_errors, 0u);
  EXPECT_EQ(l->completed, sim->completed);
  // A dynamic plan's tile tasks are the host's to dispatch, one plan at a
  // time: live serving says so before it starts.
  sm.clear_mappings();  // one tlm platform per process: the same model
  sm.swap_mapping(on_cores(2, compiler::Placement::Dynamic), 0.0);
  auto d = run_serve(gang_workload("dynamic"), lo, sm);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().str().find("with dynamic placement; live serving runs a gang's static or pipeline plan"),
            std::string::npos)
      << d.error().str();
}

// Two streams of the chain on `small` (4 cores, 2 ports), one busy and one
// nearly idle, so that static scheduling leaves the idle stream's cores free.
Workload lopsided_workload(const char* scheduling) {
  std::string text = std::string(R"(config: small
duration_ms: 1
seed: 7
batching: fixed
scheduling: )") + scheduling + R"(
max_batch: 4
max_queue_delay_ms: 0.01
streams:
)";
  for (const char* rate : {"1000000", "2000"})
    text += std::string("  - name: chain_") + rate + R"(
    model: gemm_chain
    hidden: 32
    ffn: 64
    layers: 1
    slo_ms: 50.0
    arrival: {poisson: {rate: )" + rate + R"(}}
    seq_len: {values: [16, 32], weights: [1, 1]}
)";
  auto w = parse_workload_text(text, "lopsided.yaml");
  EXPECT_TRUE(w) << w.error().str();
  return *w;
}

TEST(BatchCap, AMappingsCapHoldsFromItsSwapOn) {
  // The busy stream forms batches of max_batch 4; a mapping swapped in at
  // 0.4 ms caps them at 2 (loom tune's batch cap) from then on.
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("small");
  ServiceModel sm(cfg, "tlm", "");
  const double at = 400;
  sm.swap_mapping(on_cores(1), at, [](const ModelSpec&) { return 2; });
  std::vector<BatchSpan> spans;
  ServeOptions o;
  o.spans = &spans;
  auto r = run_serve(lopsided_workload("dynamic"), o, sm);
  ASSERT_TRUE(r) << r.error().str();
  int before = 0, after = 0;
  for (const auto& b : spans)
    if (b.stream == 0) (b.start_us < at ? before : after) = std::max(b.start_us < at ? before : after, b.requests);
  EXPECT_EQ(before, 4);
  EXPECT_EQ(after, 2);
  sm.set_now(at - 1);
  EXPECT_EQ(sm.batch_cap(lopsided_workload("dynamic").streams[0].model), 0);  // no mapping yet: the workload's
  sm.set_now(at);
  EXPECT_EQ(sm.batch_cap(lopsided_workload("dynamic").streams[0].model), 2);
}

TEST(TailAttribution, EveryRequestsPartsSumToItsLatency) {
  register_tlm();
  const spec::HwConfig& cfg = *spec::find_config("small");
  ServiceModel sm(cfg, "tlm", "");
  for (const char* sched : {"static", "dynamic"}) {
    std::vector<ServedRequest> reqs;
    ServeOptions o;
    o.requests = &reqs;
    auto r = run_serve(lopsided_workload(sched), o, sm);
    ASSERT_TRUE(r) << r.error().str();
    LatencyParts sum;
    size_t done = 0;
    for (const auto& q : reqs) {
      if (q.done_us < 0) continue;
      ++done;
      const double lat = q.done_us - q.arrival_us;
      EXPECT_NEAR(q.parts.total(), lat, 1e-6 * std::max(1.0, lat)) << sched;
      EXPECT_NEAR(q.parts.queueing + q.parts.batching + q.parts.imbalance, q.start_us - q.arrival_us, 1e-6 * std::max(1.0, lat));
      for (size_t i = 0; i < LatencyParts::kCount; ++i) EXPECT_GE(q.parts[i], -1e-9) << LatencyParts::kNames[i];
      EXPECT_GT(q.parts.service, 0);
      sum.queueing += q.parts.queueing, sum.batching += q.parts.batching, sum.imbalance += q.parts.imbalance;
      sum.stretch += q.parts.stretch;
    }
    ASSERT_GT(done, 100u);
    std::printf("%s: %zu requests, queueing %.0f us, batching %.0f us, imbalance %.0f us, stretch %.0f us\n", sched,
                done, sum.queueing, sum.batching, sum.imbalance, sum.stretch);
    EXPECT_GT(sum.batching, 0) << sched;  // fixed batching holds a batch for up to 10 us
    if (std::string(sched) == "static") {
      // The busy stream waits while the idle stream's cores are free.
      EXPECT_GT(sum.imbalance, 0);
    } else {
      EXPECT_GT(sum.queueing, 0);   // every core busy
      EXPECT_EQ(sum.imbalance, 0);  // any free core takes any stream's batch
      EXPECT_GT(sum.stretch, 0);    // two busy cores a port
    }
    // The result's attribution: the mean parts of every completed request.
    const auto& a = r->latency_attribution;
    EXPECT_EQ(a.all.requests, int64_t(done));
    EXPECT_NEAR(a.all.latency_us, *r->latency.mean, 1e-6 * *r->latency.mean);
    EXPECT_GE(a.p99.latency_us, a.p50.latency_us);
    sm.clear_mappings();
  }
}
}  // namespace
}  // namespace loom::serve
