// Unit tests of loom_tune: the refit recovers known parameters from
// synthetic measurements; the swap check catches lost and reordered requests.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/compiler.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "serve/service.h"
#include "tune/mapping.h"
#include "tune/tune.h"

namespace loom::tune {
namespace {

TEST(Fit, LeastSquaresRecoversSlopeAndIntercept) {
  std::vector<std::pair<double, double>> pts;
  for (double x : {1000.0, 2500.0, 4000.0, 9000.0, 20000.0}) pts.push_back({x, 1.25 * x + 300.0});
  const LinearFit f = fit_linear(pts);
  EXPECT_EQ(f.n, 5);
  EXPECT_NEAR(f.a, 1.25, 1e-9);
  EXPECT_NEAR(f.b, 300.0, 1e-6);
}

TEST(Fit, NoisyPointsStayClose) {
  std::vector<std::pair<double, double>> pts;
  uint64_t s = 12345;
  for (int i = 0; i < 200; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double noise = (double(s >> 11) * 0x1.0p-53 - 0.5) * 40.0;  // +-20 cycles
    const double x = 500.0 + 100.0 * i;
    pts.push_back({x, 0.9 * x + 50.0 + noise});
  }
  const LinearFit f = fit_linear(pts);
  EXPECT_NEAR(f.a, 0.9, 0.002);
  EXPECT_NEAR(f.b, 50.0, 10.0);
}

TEST(Fit, OnePointIsAnOffsetAndNoneIsIdentity) {
  const LinearFit one = fit_linear({{2000.0, 2600.0}});
  EXPECT_EQ(one.a, 1.0);
  EXPECT_NEAR(one.b, 600.0, 1e-9);
  const LinearFit same_x = fit_linear({{1000.0, 1100.0}, {1000.0, 1300.0}});
  EXPECT_EQ(same_x.a, 1.0);
  EXPECT_NEAR(same_x.b, 200.0, 1e-9);
  const LinearFit none = fit_linear({});
  EXPECT_EQ(none.a, 1.0);
  EXPECT_EQ(none.b, 0.0);
  EXPECT_EQ(none.n, 0);
}

TEST(Refit, RecoversPerKindParametersAndOverhead) {
  // Two layer kinds with different true lines; plans add a fixed 150 cycles.
  std::vector<PlanTelemetry> tel;
  for (int64_t rows : {32, 64, 128, 256}) {
    PlanTelemetry t;
    const uint64_t pg = uint64_t(rows) * 400, pf = uint64_t(rows) * 700 + 1000;
    t.layers.push_back({"gemm", rows, pg, uint64_t(std::llround(1.1 * double(pg) + 200.0))});
    t.layers.push_back({"gemm+fused", rows, pf, uint64_t(std::llround(0.95 * double(pf) - 100.0))});
    uint64_t sum = 0;
    for (const auto& l : t.layers) sum += l.measured, t.predicted += l.predicted;
    t.measured = sum + 150;
    tel.push_back(t);
  }
  const Calibration c = refit(tel);
  ASSERT_EQ(c.per_kind.size(), 2u);
  EXPECT_NEAR(c.per_kind.at("gemm").a, 1.1, 1e-6);
  EXPECT_NEAR(c.per_kind.at("gemm").b, 200.0, 0.5);
  EXPECT_NEAR(c.per_kind.at("gemm+fused").a, 0.95, 1e-6);
  EXPECT_NEAR(c.per_kind.at("gemm+fused").b, -100.0, 0.5);
  EXPECT_NEAR(c.overhead, 150.0, 1e-9);
}

TEST(Decisions, SpaceHasEveryCombinationOnce) {
  const auto s = decision_space();
  EXPECT_EQ(s.size(), 6u * 2u * 2u);
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) EXPECT_NE(s[i].tag(), s[j].tag());
  EXPECT_EQ(layer_kind("gemm", "l0.up+l0.relu"), "gemm+fused");
  EXPECT_EQ(layer_kind("gemm", "l0.down"), "gemm");
}

TEST(Decisions, PlacementsOnSeveralCores) {
  // One core, and for 2 and 4 cores: static, pipeline, dynamic x1, dynamic x2.
  const auto s = decision_space({}, {}, 4);
  EXPECT_EQ(s.size(), 6u * 2u * 2u * 9u);
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) EXPECT_NE(s[i].tag(), s[j].tag());
  size_t on2 = 0, dyn4 = 0;
  for (const auto& c : s) {
    on2 += c.cores == 2;
    dyn4 += c.cores == 4 && c.placement == compiler::Placement::Dynamic;
    if (c.cores == 1) {
      EXPECT_EQ(c.placement, compiler::Placement::Static);
    }
  }
  EXPECT_EQ(on2, 6u * 2u * 2u * 4u);
  EXPECT_EQ(dyn4, 6u * 2u * 2u * 2u);
  // A 3-core fabric offers 1 and 2 cores; one core keeps the one-core tags.
  EXPECT_EQ(decision_space({}, {}, 3).size(), 6u * 2u * 2u * 5u);
  Choice c;
  EXPECT_EQ(c.tag(), "rows=64,fusion=cost,db=on");
  c.cores = 4, c.placement = compiler::Placement::Dynamic, c.tasks_per_core = 2;
  EXPECT_EQ(c.tag(), "rows=64,fusion=cost,db=on,cores=4,placement=dynamic,tpc=2");
  EXPECT_EQ(c.placement_tag(), "4 cores dynamic x2");
  Choice d = c;
  d.tasks_per_core = 1;
  EXPECT_FALSE(c.same_decision(d));
}

TEST(Decisions, QueueModelOfAGang) {
  const auto mmc_latency = [](int c, double lambda, double s) { return ggc_latency(c, lambda, s, 1, 1); };
  // M/M/1: s / (1 - rho).
  EXPECT_NEAR(mmc_latency(1, 0.5, 1.0), 2.0, 1e-12);
  // M/M/2 at a = 1 (rho 0.5): Erlang C = 1/3, wait = C s / (c (1 - rho)) = 1/3.
  EXPECT_NEAR(mmc_latency(2, 1.0, 1.0), 1.0 + 1.0 / 3.0, 1e-12);
  // No load: the service time; overloaded: infinite.
  EXPECT_EQ(mmc_latency(4, 0.0, 3.0), 3.0);
  EXPECT_TRUE(std::isinf(mmc_latency(2, 2.0, 1.0)));
  // Light load favours one fast server, heavy load several slower ones: two
  // cores twice as fast as one (a gang of 2 on a 2-core fabric, 1 server of
  // s = 1) against two servers of s = 2.
  EXPECT_LT(mmc_latency(1, 0.05, 1.0), mmc_latency(2, 0.05, 2.0));
  // A gang only 1.2x faster than one core loses at half load: 1.43 against 1.07.
  EXPECT_NEAR(mmc_latency(1, 0.5, 1.0 / 1.2), 1.0 / 1.2 / (1 - 0.5 / 1.2), 1e-12);
  EXPECT_NEAR(mmc_latency(2, 0.5, 1.0), 1.0 + 0.1 / 1.5, 1e-12);
  EXPECT_GT(mmc_latency(1, 0.5, 1.0 / 1.2), mmc_latency(2, 0.5, 1.0));
}

TEST(Decisions, QueueModelWithVariation) {
  // Allen-Cunneen: the M/M/c wait scaled by (ca2 + cs2) / 2; M/M/c at (1, 1),
  // half the wait with deterministic service, none with both deterministic.
  EXPECT_NEAR(ggc_latency(2, 1.0, 1.0, 1, 1), 1.0 + 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(ggc_latency(1, 0.5, 1.0, 1, 0), 1.5, 1e-12);
  EXPECT_EQ(ggc_latency(1, 0.5, 1.0, 0, 0), 1.0);
  EXPECT_TRUE(std::isinf(ggc_latency(2, 2.0, 1.0, 0, 0)));
}

TEST(Decisions, GangWidthWeighsBatchesAsCustomers) {
  // Two cores; a choice costs 100 cycles a run (1 MHz: 100 us) on one core
  // and 60 on two, taking up to 8 requests a run. At 0.016 requests per us in
  // batches of 8 (0.002 batches per us, near-deterministic), both widths are
  // far from overload and the gang's shorter service wins; taken one request
  // a run (0.016 runs per us) the gang's one server is at rho 0.96 and two
  // single cores (rho 0.8 each) win.
  Candidates cands;
  for (int cores : {1, 2}) {
    Choice c;
    c.rows = 8, c.cores = cores;
    cands.push_back({c, c});
  }
  const ChoiceCost cost = [](const Choice& c) -> Expected<double> { return c.cores == 1 ? 100.0 : 60.0; };
  const Fabric f{2, 1.0};
  auto batched = place_gemm(BatchMix{{{1, 8}, 1.0}}, cands, cost, Arrivals{0.016, 1, 1}, f);
  ASSERT_TRUE(batched);
  EXPECT_EQ(batched->pick, 2);
  EXPECT_EQ(batched->requests_per_batch, 8);
  EXPECT_NEAR(batched->arrival_scv, 1.0 / 8, 1e-12);  // a batch of 8 Poisson arrivals: Erlang-8
  EXPECT_EQ(batched->widths[0].service_scv, 0);
  auto alone = place_gemm(one_request_batches(LengthMix{{1, 1.0}}), cands, cost, Arrivals{0.016, 1, 1}, f);
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->pick, 1);
  EXPECT_LT(alone->widths[0].latency_us, alone->widths[1].latency_us);
  // Service of mixed batches varies: 1 run for a batch of 4, 2 runs for 16.
  auto mixed = place_gemm(BatchMix{{{1, 4}, 1.0}, {{1, 16}, 1.0}}, cands, cost, Arrivals{0.001, 1, 1}, f);
  ASSERT_TRUE(mixed);
  EXPECT_NEAR(mixed->widths[0].service_us, 150, 1e-9);
  EXPECT_NEAR(mixed->widths[0].service_scv, (100.0 * 100 + 200 * 200) / 2 / (150.0 * 150) - 1, 1e-12);
}

TEST(Decisions, RequestsPerRunPerBucketAndBatchSize) {
  // Two buckets. At 32 a run of r requests costs 100 r - 10 (r - 1): a
  // batch program is cheaper a request; at 64 a run costs 200 r + 50 (r - 1):
  // one request a run is cheapest. A batch of 3 at 32: one padded run of 4
  // (370) against three runs of 1 (300) or two of 2 (380).
  ModelMap m;
  for (int64_t len : {32, 64}) {
    Choice c;
    c.rows = len, c.requests = 1;
    m.buckets.push_back(c);
  }
  int calls = 0;
  const ChoiceCost cost = [&](const Choice& c) -> Expected<double> {
    ++calls;
    const double r = c.requests;
    return c.rows == 32 ? 100 * r - 10 * (r - 1) : 200 * r + 50 * (r - 1);
  };
  ASSERT_TRUE(pick_requests(m, 4, cost));
  EXPECT_EQ(calls, 6);  // each bucket at 1, 2 and 4 requests a run
  const int want32[] = {1, 2, 1, 4}, want64[] = {1, 1, 1, 1};
  for (int b = 1; b <= 4; ++b) {
    EXPECT_EQ(m.at(20, b).requests, want32[b - 1]) << "batch " << b;
    EXPECT_EQ(m.at(20, b).rows, 32);
    EXPECT_EQ(m.at(33, b).requests, want64[b - 1]) << "batch " << b;
    EXPECT_EQ(m.at(33, b).rows, 64);
  }
  EXPECT_EQ(m.at(20, 2).tag(), "rows=32,fusion=cost,db=on,req=2");
  // max_batch that is no power of two is a candidate itself: 6 a run.
  ModelMap six;
  six.buckets = {m.buckets[0]};
  ASSERT_TRUE(pick_requests(six, 6, cost));
  EXPECT_EQ(six.at(1, 6).requests, 6);  // 550 against 6 x 100 or 3 x 190
  EXPECT_EQ(six.at(1, 5).requests, 1);  // five single runs (500) against one padded run of 6 (550)
}

TEST(Decisions, BucketWidthWeighsBatchesAsCustomers) {
  // One bucket, one or two cores; a run of r requests costs 100 r on one
  // core and 60 r on two (1 MHz). Batches of 4 requests at 0.016 requests
  // per us: the customers are batches (0.004 per us) of 400 or 240 us;
  // one core's two servers run at rho 0.8, the gang's one at rho 0.96.
  Candidates cands;
  for (int cores : {1, 2}) {
    Choice c;
    c.rows = 16, c.cores = cores, c.requests = 1;
    cands.push_back({c, c});
  }
  const ChoiceCost cost = [](const Choice& c) -> Expected<double> {
    return (c.cores == 1 ? 100.0 : 60.0) * c.requests;
  };
  BucketSearch s;
  s.batches = {{{10, 4}, 1.0}};
  s.lens = {16};
  s.max_buckets = 1, s.max_batch = 4;
  s.cost = s.run_cost = cost;
  auto bp = pick_placed(s, cands, Arrivals{0.016, 1, 1}, Fabric{2, 1.0});
  ASSERT_TRUE(bp);
  ASSERT_EQ(bp->placements.size(), 2u);
  EXPECT_NEAR(double(bp->placements[0]["service_us"]), 400, 1e-9);  // one run of 4 on one core
  EXPECT_NEAR(double(bp->placements[1]["service_us"]), 240, 1e-9);
  EXPECT_EQ(bp->placements[0]["requests_per_batch"], 4);
  EXPECT_EQ(bp->map.at(10, 4).cores, 1);
  EXPECT_EQ(bp->map.at(10, 4).requests, 1);  // no batching gain: the fewer requests a run on a tie
}

serve::ServedRequest req(int stream, double arrival, double start, double done, bool dropped = false) {
  serve::ServedRequest r;
  r.stream = stream, r.arrival_us = arrival, r.start_us = start, r.done_us = done, r.dropped = dropped;
  return r;
}

TEST(Swap, CleanRunPasses) {
  // Stream 1 starts a later request before stream 0's: other streams do not count.
  const std::vector<serve::ServedRequest> reqs{req(0, 0, 10, 20), req(1, 1, 5, 9), req(0, 2, 12, 30),
                                               req(0, 3, 0, 0, true), req(1, 4, 40, 50)};
  bool ok = false;
  const auto j = swap_check(reqs, 11.0, 2, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(j["submitted"], 5);
  EXPECT_EQ(j["completed"], 4);
  EXPECT_EQ(j["dropped"], 1);
  EXPECT_EQ(j["dispatched_after_swap"], 2);
}

TEST(Swap, LostAndReorderedRequestsFail) {
  bool ok = true;
  auto j = swap_check({req(0, 0, 10, 20), req(0, 1, -1, -1)}, 5.0, 1, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(j["lost"], 1);
  ok = true;
  j = swap_check({req(0, 0, 10, 20), req(0, 1, 8, 15)}, 5.0, 1, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(j["reordered_within_stream"], 1);
}


// --- The compiler's cost parameters (CompileOptions::cost_params) ---------

const spec::HwConfig& config(const char* name) { return *spec::find_config(name); }

/// gemm_chain hidden 64 -> ffn 256 -> 64, two blocks, `rows` rows.
ir::Graph chain(int64_t rows) {
  serve::ModelSpec m;
  m.hidden = 64, m.ffn = 256, m.layers = 2;
  ir::Graph g = driver::gemm_chain_graph(serve::gemm_chain(m, rows));
  EXPECT_TRUE(ir::validate(g).is_ok());
  return g;
}

compiler::CompileResult compile_ok(const ir::Graph& g, const compiler::CompileOptions& o, const char* cfg = "tiny") {
  auto r = compiler::compile(g, config(cfg), o);
  EXPECT_TRUE(r.is_ok()) << (r ? "" : r.error().str());
  return r ? std::move(*r) : compiler::CompileResult{};
}

std::string decision(const compiler::CompileResult& r, const std::string& pass, const std::string& node) {
  for (const auto& d : r.decisions)
    if (d.pass == pass && d.node == node) return d.text;
  return "<none>";
}

TEST(CostParams, UncorrectedParametersGiveTheDefaultPlanByteForByte) {
  for (const char* cfg : {"tiny", "default"})
    for (int64_t rows : {32, 256}) {
      const ir::Graph g = chain(rows);
      const auto a = compile_ok(g, {}, cfg);
      compiler::CompileOptions o;
      o.cost_params = compiler::CostParams::from(config(cfg));
      const auto b = compile_ok(g, o, cfg);
      // The same plan but for the options it records.
      EXPECT_NE(a.plan.compile_options, b.plan.compile_options);
      plan::Plan bp = b.plan;
      bp.compile_options = a.plan.compile_options;
      EXPECT_EQ(plan::encode_plan(a.plan), plan::encode_plan(bp)) << cfg << " rows " << rows;
      EXPECT_EQ(a.predicted_cycles, b.predicted_cycles);
      ASSERT_EQ(a.decisions.size(), b.decisions.size());
      for (size_t i = 0; i < a.decisions.size(); ++i) EXPECT_EQ(a.decisions[i].text, b.decisions[i].text);
      EXPECT_TRUE(tune::diff_decisions(a.decisions, b.decisions).empty());
    }
}

TEST(CostParams, CorrectionAddsToEveryLayerPrediction) {
  // One core (as loom tune compiles): the busiest core runs every instruction.
  for (const char* cfg : {"tiny", "default"})
    for (int64_t rows : {32, 256}) {
      const ir::Graph g = chain(rows);
      compiler::CompileOptions o;
      o.num_cores = 1;
      const auto a = compile_ok(g, o, cfg);
      o.cost_params = compiler::CostParams::from(config(cfg));
      o.cost_params->layer_cycles = 500;
      o.cost_params->insn_cycles = 2;
      const auto b = compile_ok(g, o, cfg);
      ASSERT_EQ(a.predicted.size(), b.predicted.size());
      ASSERT_FALSE(a.predicted.empty());
      // Where the tiling stays, the prediction is the uncorrected one plus
      // the correction; where it changes, the new tile predicts less than
      // the old one corrected (the old tile is still a candidate).
      for (size_t i = 0; i < a.predicted.size(); ++i) {
        const auto& la = a.predicted[i];
        const auto& lb = b.predicted[i];
        ASSERT_EQ(la.name, lb.name);  // same fusion
        const std::string ta = decision(a, "tiling", la.name), tb = decision(b, "tiling", lb.name);
        if (ta.substr(0, ta.find(';')) == tb.substr(0, tb.find(';')))
          EXPECT_EQ(lb.cycles, la.cycles + 500 + 2 * la.insns) << cfg << " " << la.name;
        else
          EXPECT_LT(lb.cycles, la.cycles + 500 + 2 * la.insns) << cfg << " " << la.name;
      }
    }
}

TEST(CostParams, ThePipelineStageSearchDecidesWithTheRefittedParameters) {
  // The placement pass's stage search sees the corrected per-layer cost: a
  // per-layer term of 10^5 cycles raises every stage count's total by at
  // least that much (each stage pays it for each of its layers).
  const ir::Graph g = chain(256);
  compiler::CompileOptions o;
  o.placement = compiler::Placement::Pipeline;
  const auto a = compile_ok(g, o, "default");
  o.cost_params = compiler::CostParams::from(config("default"));
  o.cost_params->layer_cycles = 100000;
  const auto b = compile_ok(g, o, "default");
  const auto predicted = [&](const compiler::CompileResult& r) {
    const std::string t = decision(r, "placement", g.name);
    const size_t p = t.find("; predicted ");
    EXPECT_NE(p, std::string::npos) << t;
    return p == std::string::npos ? 0ull : std::stoull(t.substr(p + 12));
  };
  EXPECT_GE(predicted(b), predicted(a) + 100000) << decision(b, "placement", g.name);
}

TEST(CostParams, ANegativeLayerCorrectionRefusesTheActivationFusion) {
  // Golden: with the uncorrected model the ReLU folds into the GEMM's clamp;
  // when the refitted parameters say a layer costs nothing extra (a large
  // negative per-layer term), the ReLU alone predicts no saving and the cost
  // policy keeps it separate.
  const ir::Graph g = chain(32);
  const auto a = compile_ok(g, {});
  EXPECT_EQ(decision(a, "fuse-activation", "l0.relu"), "<none>");
  EXPECT_EQ(decision(a, "fuse-activation", "l0.up+l0.relu").rfind("folded relu 'l0.relu' into the output clamp", 0), 0u)
      << decision(a, "fuse-activation", "l0.up+l0.relu");
  compiler::CompileOptions o;
  o.cost_params = compiler::CostParams::from(config("tiny"));
  o.cost_params->layer_cycles = -1e6;
  const auto b = compile_ok(g, o);
  EXPECT_EQ(decision(b, "fuse-activation", "l0.relu"), "kept separate: cost model predicts no saving");
  EXPECT_EQ(b.predicted.size(), a.predicted.size() + 2);  // two blocks, one ReLU each
  const auto d = tune::diff_decisions(a.decisions, b.decisions);
  ASSERT_FALSE(d.empty());
  bool relu = false;
  for (const auto& x : d) relu = relu || (x.pass == "fuse-activation" && x.node == "l0.relu" && x.before.empty());
  EXPECT_TRUE(relu);
}

TEST(CostParams, DiffComparesTheChoiceNotItsNumbers) {
  using compiler::Decision;
  const auto dec = [](const char* node, const char* pass, const std::string& choice, const std::string& why) {
    return Decision{node, pass, choice, choice + why, std::nullopt, {}};
  };
  const std::string tile = "M=32 K=64 N=256: tm=32 tn=256 tk=64 (1 K steps)";
  const std::vector<Decision> a{dec("x", "tiling", tile, "; predicted 100 cycles"),
                                dec("x+y", "tiling", "kept separate (cost)", ": fused predicts 10 cycles; more"),
                                dec("z", "placement", "whatever", " 1")};
  const std::vector<Decision> same{dec("x", "tiling", tile, "; predicted 999 cycles"),
                                   dec("x+y", "tiling", "kept separate (cost)", ": fused predicts 12 cycles; other"),
                                   dec("z", "placement", "whatever else", " 2")};
  EXPECT_TRUE(tune::diff_decisions(a, same).empty());
  const std::vector<Decision> other{
      dec("x", "tiling", "M=32 K=64 N=256: tm=16 tn=256 tk=64 (1 K steps)", "; predicted 90 cycles"),
      dec("w", "fuse-activation", "kept separate", ": cost model predicts no saving")};
  const auto d = tune::diff_decisions(a, other);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].node, "x");
  EXPECT_NE(d[0].before, d[0].after);
  EXPECT_EQ(d[1].node, "x+y");
  EXPECT_TRUE(d[1].after.empty());
  EXPECT_EQ(d[2].node, "w");
  EXPECT_TRUE(d[2].before.empty());
}

/// Six one-layer plans in measurement order: the fitted ones measure
/// `offset` cycles above the uncorrected prediction, the held-out ones (1 and
/// 4) `held_offset` above it.
std::vector<PlanTelemetry> offset_plans(double offset, double held_offset) {
  std::vector<PlanTelemetry> tel;
  for (size_t i = 0; i < 6; ++i) {
    PlanTelemetry t;
    const uint64_t pred = 10000;
    const double off = held_out(i) ? held_offset : offset;
    t.layers.push_back({"gemm", 64, pred, uint64_t(double(pred) + off), 8});
    tel.push_back(t);
  }
  return tel;
}

TEST(Refit, HeldOutPlansAreNeverFitted) {
  const HeldOutSplit s = split_held_out(offset_plans(300, 0));
  ASSERT_EQ(s.fit.size(), 4u);
  ASSERT_EQ(s.held.size(), 2u);
  for (const auto& t : s.held) EXPECT_EQ(t.layers[0].measured, 10000u);
  for (const auto& t : s.fit) EXPECT_EQ(t.layers[0].measured, 10300u);
}

TEST(Refit, ARefitThatPredictsTheHeldOutPlansWorseIsRejected) {
  // The fitted plans say +300 cycles a layer; the held-out ones measure what
  // the uncorrected model predicts, so the refit is worse there.
  const auto base = compiler::CostParams::from(config("default"));
  const HeldOutSplit s = split_held_out(offset_plans(300, 0));
  const CostFit f = fit_cost_params(s.fit, base);
  EXPECT_NEAR(f.params.layer_cycles, 300.0, 1e-6);
  const RefitCheck c = validate_refit(s.held, base, f.params);
  EXPECT_FALSE(c.accepted);
  EXPECT_EQ(c.validation_plans, 2u);
  EXPECT_EQ(c.validation_samples, 2u);
  EXPECT_NEAR(c.error_before, 0.0, 1e-12);
  EXPECT_NEAR(c.error_after, 0.03, 1e-9);
  EXPECT_EQ(c.reason, "validation error 3.00 % > 0.00 % with the parameters it would replace");
  EXPECT_FALSE(c.to_json()["accepted"].get<bool>());
}

TEST(Refit, ARefitThatPredictsTheHeldOutPlansBetterIsAccepted) {
  const auto base = compiler::CostParams::from(config("default"));
  const HeldOutSplit s = split_held_out(offset_plans(300, 290));
  const CostFit f = fit_cost_params(s.fit, base);
  const RefitCheck c = validate_refit(s.held, base, f.params);
  EXPECT_TRUE(c.accepted);
  EXPECT_NEAR(c.error_before, 290.0 / 10290.0, 1e-9);
  EXPECT_NEAR(c.error_after, 10.0 / 10290.0, 1e-9);
  EXPECT_EQ(c.reason, "validation error 0.10 % <= 2.82 % with the parameters it would replace");
  // Against parameters that already predict better, the same refit is rejected.
  compiler::CostParams better = base;
  better.layer_cycles = 290;
  EXPECT_FALSE(validate_refit(s.held, better, f.params).accepted);
}

TEST(Refit, NothingHeldOutIsNotValidatedAndRejected) {
  const auto base = compiler::CostParams::from(config("default"));
  const auto one = offset_plans(300, 300);
  const HeldOutSplit s = split_held_out({one[0]});
  ASSERT_TRUE(s.held.empty());
  const RefitCheck c = validate_refit(s.held, base, fit_cost_params(s.fit, base).params);
  EXPECT_FALSE(c.accepted);
  EXPECT_EQ(c.validation_samples, 0u);
  EXPECT_NE(c.reason.find("not validated"), std::string::npos);
}

TEST(CostParams, FitRecoversLayerAndInstructionTerms) {
  std::vector<PlanTelemetry> tel;
  for (uint64_t insns : {5, 9, 17, 40, 100}) {
    PlanTelemetry t;
    const uint64_t pred = 1000 * insns;
    t.layers.push_back({"gemm", 64, pred, uint64_t(double(pred) + 300.0 + 4.5 * double(insns)), insns});
    tel.push_back(t);
  }
  const auto base = compiler::CostParams::from(config("default"));
  const CostFit f = fit_cost_params(tel, base);
  EXPECT_EQ(f.points, 5);
  EXPECT_NEAR(f.params.layer_cycles, 300.0, 0.5);
  EXPECT_NEAR(f.params.insn_cycles, 4.5, 0.01);
  EXPECT_EQ(f.params.latency, base.latency);
  EXPECT_GT(f.rms_before, 300.0);
  EXPECT_LT(f.rms_after, 1.0);
  // One instruction count: only the per-layer term.
  const CostFit one = fit_cost_params({tel[0]}, base);
  EXPECT_EQ(one.params.insn_cycles, 0.0);
  EXPECT_NEAR(one.params.layer_cycles, 300.0 + 4.5 * 5, 0.5);
  EXPECT_FALSE(fit_cost_params({}, base).params.corrected());
  // A negative slope is refused: an instruction cannot save cycles.
  std::vector<PlanTelemetry> neg;
  for (uint64_t insns : {5, 10, 20}) {
    PlanTelemetry t;
    t.layers.push_back({"gemm", 64, 10000, uint64_t(10000 + 1000 - 10 * insns), insns});
    neg.push_back(t);
  }
  const CostFit nf = fit_cost_params(neg, base);
  EXPECT_EQ(nf.params.insn_cycles, 0.0);
  EXPECT_NEAR(nf.unconstrained_insn_cycles, -10.0, 1e-6);
  EXPECT_NEAR(nf.params.layer_cycles, 1000.0 - 10.0 * 35.0 / 3.0, 1e-6);
}

class CostParamsFile : public ::testing::Test {
 protected:
  // One file per test and process: ctest runs the tests of this fixture in parallel.
  std::string path_ = ::testing::TempDir() + "loom_cost_params_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                      std::to_string(::getpid()) + ".json";
  void write(const std::string& text) { std::ofstream(path_) << text; }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string error(const std::string& text) {
    write(text);
    auto r = compiler::read_cost_params(path_, config("tiny"));
    EXPECT_FALSE(r.is_ok()) << text;
    return r ? "" : r.error().str();
  }
};

TEST_F(CostParamsFile, RoundTrips) {
  auto p = compiler::CostParams::from(config("tiny"));
  p.layer_cycles = -12.5, p.insn_cycles = 3.25, p.latency = 77;
  write(compiler::cost_params_text(p, config("tiny"), R"({"rounds": 3})"));
  auto r = compiler::read_cost_params(path_, config("tiny"));
  ASSERT_TRUE(r.is_ok()) << r.error().str();
  EXPECT_EQ(r->layer_cycles, -12.5);
  EXPECT_EQ(r->insn_cycles, 3.25);
  EXPECT_EQ(r->latency, 77u);
  EXPECT_EQ(r->rows, p.rows);
}

TEST_F(CostParamsFile, BadFilesNameTheFileAndTheField) {
  const std::string head = R"({"kind": "loom-cost-params", "version": 1, "config": "tiny")";
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "JSON object"},
      {R"({"version": 1, "config": "tiny"})", "'kind'"},
      {R"({"kind": "loom-cost-params", "version": 2, "config": "tiny"})", "'version'"},
      {R"({"kind": "loom-cost-params", "version": 1})", "'config'"},
      {R"({"kind": "loom-cost-params", "version": 1, "config": "default"})", "fitted for 'default'"},
      {head + R"(, "layer_cycles": "x"})", "'layer_cycles'"},
      {head + R"(, "insn_cycles": 1e300})", "'insn_cycles'"},
      {head + R"(, "latency": -3})", "'latency'"},
      {head + R"(, "latency": 1.5})", "'latency'"},
      {head + R"(, "layer_cylces": 3})", "unknown field 'layer_cylces'"},
  };
  for (const auto& [text, needle] : cases) {
    const std::string e = error(text);
    EXPECT_NE(e.find(path_), std::string::npos) << e;
    EXPECT_NE(e.find(needle), std::string::npos) << text << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  auto missing = compiler::read_cost_params(path_ + ".missing", config("tiny"));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.error().str().find(".missing"), std::string::npos);
}

}  // namespace
}  // namespace loom::tune
