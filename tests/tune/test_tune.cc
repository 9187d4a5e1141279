// Unit tests of loom_tune: the refit recovers known parameters from
// synthetic measurements; the swap check catches lost and reordered requests.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace loom::tune
