// Unit tests of the serving library: percentile and fairness math against
// hand-computed cases, each batching policy's decision on crafted queues,
// workload-file errors, and the result reader's checks and merge rows.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "ir/builder.h"
#include "serve/memo.h"
#include "serve/metrics.h"
#include "serve/result.h"
#include "common/json_read.h"
#include "serve/policy.h"
#include "serve/result_check.h"
#include "serve/service.h"
#include "serve/sim.h"
#include "serve/workload.h"

namespace loom::serve {
namespace {

TEST(Percentile, NearestRankOnTenValues) {
  // 10 values: p50 is the 5th smallest, p95 and p99 the 10th, p10 the 1st.
  std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(*percentile(v, 50), 5);
  EXPECT_EQ(*percentile(v, 51), 6);
  EXPECT_EQ(*percentile(v, 95), 10);
  EXPECT_EQ(*percentile(v, 10), 1);
  EXPECT_EQ(*percentile(v, 99.9), 10);
}

TEST(Percentile, ThousandValues) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i * 2.0);
  EXPECT_EQ(*percentile(v, 50), 1000.0);   // rank 500
  EXPECT_EQ(*percentile(v, 99), 1980.0);   // rank 990
  EXPECT_EQ(*percentile(v, 99.9), 1998.0); // rank 999
  EXPECT_FALSE(percentile({}, 50).has_value());
}

TEST(LatencySummary, StatisticsOfASampleInAnyOrder) {
  const LatencySummary s = LatencySummary::of({30, 10, 20, 40});
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(*s.mean, 25.0);
  EXPECT_EQ(*s.p50, 20.0);
  EXPECT_EQ(*s.p99, 40.0);
  EXPECT_EQ(*s.max, 40.0);
  ASSERT_EQ(s.cdf.size(), 101u);
  EXPECT_EQ(s.cdf.front(), 10.0);
  EXPECT_EQ(s.cdf.back(), 40.0);
  EXPECT_EQ(s.to_json()["requests"], 4);
  EXPECT_EQ(s.to_json()["p50_us"], 20.0);
}

TEST(LatencySummary, AnEmptySampleHasNoStatisticsNotZeros) {
  const LatencySummary s = LatencySummary::of({});
  EXPECT_EQ(s.count, 0);
  EXPECT_FALSE(s.mean || s.p50 || s.p95 || s.p99 || s.p999 || s.max);
  EXPECT_TRUE(s.cdf.empty());
  const auto j = s.to_json();
  EXPECT_EQ(j["requests"], 0);
  for (const char* k : {"p50_us", "p95_us", "p99_us", "p999_us", "mean_us", "max_us"})
    EXPECT_TRUE(j[k].is_null()) << k;
}

TEST(PercentileEstimate, IntervalBracketsTheEstimateAndNarrowsWithTheSample) {
  for (int n : {1000, 40000}) {  // the exact binomial law, and its normal approximation
    std::vector<double> v;
    for (int i = 1; i <= n; ++i) v.push_back(i);
    const auto p50 = PercentileEstimate::of(v, 50);
    EXPECT_EQ(*p50.value_us, n / 2);
    // The median's rank is binomial: about n/2 +- 1.96 sqrt(n)/2.
    const double half = 1.96 * std::sqrt(double(n)) / 2;
    EXPECT_NEAR(*p50.lo_us, n / 2 - half, 2 + 0.1 * half) << n;
    EXPECT_NEAR(*p50.hi_us, n / 2 + half, 2 + 0.1 * half) << n;
    const auto p99 = PercentileEstimate::of(v, 99);
    EXPECT_LT(*p99.lo_us, *p99.value_us);
    EXPECT_GT(*p99.hi_us, *p99.value_us);
    EXPECT_TRUE(p99.enough);  // 10 or more requests beyond it
    EXPECT_EQ(PercentileEstimate::of(v, 99.9).enough, n >= 10000);
  }
  const auto none = PercentileEstimate::of({}, 99);
  EXPECT_FALSE(none.value_us || none.lo_us || none.hi_us || none.enough);
  const auto one = PercentileEstimate::of({7.0}, 99);
  EXPECT_EQ(*one.lo_us, 7.0);
  EXPECT_EQ(*one.hi_us, 7.0);
  EXPECT_FALSE(one.enough);
}

// A two-stream result whose streams' latencies are `a` and `b` (us), SLO 1 ms each.
std::pair<Workload, ServeResult> two_streams(const std::vector<double>& a, const std::vector<double>& b) {
  Workload w;
  ServeResult r;
  for (const auto* lat : {&a, &b}) {
    Stream s;
    s.name = lat == &a ? "a" : "b";
    s.slo_ms = 1.0;
    s.shapes.values = {16};
    w.streams.push_back(s);
    StreamResult sr;
    sr.name = s.name;
    sr.slo_ms = 1.0;
    sr.latency = LatencySummary::of(*lat);
    int64_t met = 0;
    for (double x : *lat) met += x <= 1000;
    sr.slo_attainment = lat->empty() ? 1.0 : double(met) / double(lat->size());
    r.streams.push_back(sr);
  }
  return {w, r};
}

TEST(Memo, TheDecisionFollowsTheRule) {
  std::vector<double> fast, slow, few;
  for (int i = 0; i < 2000; ++i) fast.push_back(100 + i % 500), slow.push_back(600 + i);
  for (int i = 0; i < 50; ++i) few.push_back(100 + i);
  auto [w, r] = two_streams(fast, fast);
  EXPECT_EQ(serve_memo(w, r, {fast, fast}).decision, "ship");
  std::tie(w, r) = two_streams(fast, slow);  // b's p99 is 2.579 ms against 1 ms
  Memo m = serve_memo(w, r, {fast, slow});
  EXPECT_EQ(m.decision, "escalate");
  EXPECT_FALSE(m.checks[0].holds);
  EXPECT_NE(m.checks[0].detail.find("b 2.579 ms vs 1.00 ms"), std::string::npos) << m.checks[0].detail;
  EXPECT_NE(m.primary.name.find("(b)"), std::string::npos);
  std::tie(w, r) = two_streams(fast, few);  // within the SLO, on 50 requests: a p99 is not a tail
  m = serve_memo(w, r, {fast, few});
  EXPECT_EQ(m.decision, "bounded rollout");
  EXPECT_FALSE(m.checks[2].holds);
  r.failed = 1;  // a failed request escalates, whatever the tail
  EXPECT_EQ(serve_memo(w, r, {fast, few}).decision, "escalate");
}

TEST(Memo, TheMostSevereFailingClauseDecides) {
  auto c = [](bool holds, const char* if_not) { return RuleCheck{"clause", holds, "", if_not}; };
  EXPECT_EQ(decide({}), "ship");
  EXPECT_EQ(decide({c(true, "roll back"), c(true, "escalate")}), "ship");
  EXPECT_EQ(decide({c(false, "bounded rollout"), c(true, "roll back")}), "bounded rollout");
  EXPECT_EQ(decide({c(false, "bounded rollout"), c(false, "escalate")}), "escalate");
  EXPECT_EQ(decide({c(false, "escalate"), c(false, "roll back"), c(false, "bounded rollout")}), "roll back");
  // Every check of a serve memo says where its failure leads.
  std::vector<double> fast;
  for (int i = 0; i < 2000; ++i) fast.push_back(100 + i % 500);
  auto [w, r] = two_streams(fast, fast);
  for (const auto& k : serve_memo(w, r, {fast, fast}).checks)
    EXPECT_TRUE(k.if_not == "escalate" || k.if_not == "bounded rollout") << k.clause;
}

TEST(Fairness, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index({1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jain_index({1, 2}), 9.0 / 10.0);  // (1+2)^2 / (2 * 5)
}

std::deque<QueuedReq> queue_of(std::initializer_list<std::tuple<double, double, int64_t>> rs) {
  std::deque<QueuedReq> q;
  for (auto [a, d, s] : rs) q.push_back({a, d, s});
  return q;
}

// Service: 100 us fixed cost + 10 us per request-row unit (seq * batch / 16).
double svc(int64_t seq, int batch) { return 100.0 + 10.0 * double(seq * batch) / 16.0; }

TEST(Batching, NoneTakesOne) {
  BatchParams p;
  p.policy = Batching::None;
  auto q = queue_of({{0, 1000, 16}, {1, 1001, 16}, {2, 1002, 16}});
  auto d = decide_batch(p, q, 5, svc);
  EXPECT_EQ(d.n, 1);
}

TEST(Batching, FixedWaitsThenFlushes) {
  BatchParams p;
  p.policy = Batching::Fixed;
  p.max_batch = 4;
  p.max_delay_us = 50;
  auto q = queue_of({{10, 1000, 16}, {20, 1000, 16}});
  auto d = decide_batch(p, q, 30, svc);
  EXPECT_EQ(d.n, 0);
  EXPECT_DOUBLE_EQ(d.wake_us, 60);  // oldest arrival + delay
  d = decide_batch(p, q, 60, svc);
  EXPECT_EQ(d.n, 2);
  auto full = queue_of({{10, 1000, 16}, {11, 1000, 16}, {12, 1000, 16}, {13, 1000, 16}, {14, 1000, 16}});
  d = decide_batch(p, full, 15, svc);
  EXPECT_EQ(d.n, 4);  // max_batch reached: no waiting
}

TEST(Batching, DeadlinePicksLargestFeasible) {
  BatchParams p;
  p.policy = Batching::Deadline;
  p.max_batch = 8;
  p.slack_margin = 0;
  p.max_seq = 16;
  // Five requests; the oldest's deadline (t=460) allows at most
  // 100 + 10*n <= 460 at now=0 -> n <= 36, all five fit; throughput rises
  // with n, so all five. Waiting for a sixth: it stops two batch times
  // (2 x 160) before the deadline, 460 - 320 = 140 > 0, and 6/160 > 5/150,
  // so it waits until 140.
  auto q = queue_of({{0, 460, 16}, {0, 560, 16}, {0, 560, 16}, {0, 560, 16}, {0, 560, 16}});
  auto d = decide_batch(p, q, 0, svc);
  EXPECT_EQ(d.n, 0);
  EXPECT_DOUBLE_EQ(d.wake_us, 140);
  d = decide_batch(p, q, 140, svc);
  EXPECT_EQ(d.n, 5);
  EXPECT_FALSE(d.fallback);
}

TEST(Batching, DeadlineLimitsBatchToMeetTheOldest) {
  BatchParams p;
  p.policy = Batching::Deadline;
  p.max_batch = 8;
  p.slack_margin = 0;
  p.max_seq = 64;
  // seq 64 rows: svc(64, n) = 100 + 40 n. Oldest deadline 250 at now=0:
  // n = 1 (140) and n = 3 (220) fit, n = 4 (260) does not.
  auto q = queue_of({{0, 250, 64}, {0, 900, 64}, {0, 900, 64}, {0, 900, 64}, {0, 900, 64}});
  auto d = decide_batch(p, q, 0, svc);
  EXPECT_EQ(d.n, 3);
}

TEST(Batching, DeadlineFallsBackWhenNothingFits) {
  BatchParams p;
  p.policy = Batching::Deadline;
  p.slack_margin = 0.1;
  auto q = queue_of({{0, 100, 16}, {0, 1000, 16}});
  auto d = decide_batch(p, q, 50, svc);  // 50 + 110 > 90: infeasible
  // The most efficient batch of the oldest request's length goes:
  // both (120 us) rather than 2 x 110 us one by one.
  EXPECT_EQ(d.n, 2);
  EXPECT_TRUE(d.fallback);
  EXPECT_LT(d.slack_us, 0);
}

TEST(Batching, DeadlineGroupsShapesWhenTheSkippedRequestCanWait) {
  BatchParams p;
  p.policy = Batching::Deadline;
  p.max_batch = 8;
  p.slack_margin = 0;
  p.max_seq = 128;
  // A long request at the front, three short ones behind it. Padded FIFO:
  // svc(128, 4) = 420 for 180 + 3 x 110 = 510 us of work (1.21x); the three
  // short ones alone: svc(16, 3) = 130 for 330 (2.54x). The long one can
  // still start at 130 <= 1000 - 180, so the short ones go first.
  auto q = queue_of({{0, 1000, 128}, {0, 2000, 16}, {0, 2000, 16}, {0, 2000, 16}});
  auto d = decide_batch(p, q, 0, svc);
  ASSERT_EQ(d.n, 3);
  EXPECT_EQ(d.idx, (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(d.fallback);
  EXPECT_DOUBLE_EQ(d.slack_us, (1000 - 180) - 130.0);  // the skipped request's slack counts
  // Same queue, but the long one must start by 250 - 180 = 70: no skipping;
  // it goes alone (with any short one it would end after 250).
  q.front().deadline_us = 250;
  d = decide_batch(p, q, 0, svc);
  EXPECT_EQ(d.n, 1);
  EXPECT_TRUE(d.idx.empty());
  // Grouping off: only FIFO prefixes padded to 128; all four (420 us for 510)
  // are the most efficient, and the whole queue goes from the front.
  q.front().deadline_us = 1000;
  p.group_shapes = false;
  d = decide_batch(p, q, 0, svc);
  EXPECT_TRUE(d.idx.empty());
  EXPECT_EQ(d.n, 4);
}

std::string err_of(const std::string& yaml) {
  auto w = parse_workload_text(yaml, "w.yaml");
  return w ? std::string("ok") : w.error().str();
}

const char* kGood = R"(duration_ms: 5
streams:
  - name: a
    model: gemm_chain
    slo_ms: 2
    arrival: {poisson: {rate: 100}}
)";

TEST(Workload, ParsesAGoodFile) {
  auto w = parse_workload_text(kGood, "w.yaml");
  ASSERT_TRUE(w) << w.error().str();
  ASSERT_EQ(w->streams.size(), 1u);
  EXPECT_EQ(w->streams[0].arrival.rate, 100);
  EXPECT_EQ(w->streams[0].slo_ms, 2);
}

TEST(Workload, PoissonRateDrift) {
  // 100 req/s, 400 from 2 s, a pause from 3 s, 50 from 3.5 s: the load
  // changes over time.
  std::string y = kGood;
  y.replace(y.find("duration_ms: 5"), 14, "duration_ms: 4000");
  y.replace(y.find("{poisson: {rate: 100}}"), 22,
            "{poisson: {rate: 100, drift: [{at_ms: 2000, rate: 400}, {at_ms: 3000, rate: 0}, "
            "{at_ms: 3500, rate: 50}]}}");
  auto w = parse_workload_text(y, "w.yaml");
  ASSERT_TRUE(w) << w.error().str();
  const Arrival& a = w->streams[0].arrival;
  ASSERT_EQ(a.rate_drift.size(), 3u);
  EXPECT_EQ(a.rate_drift[1].at_ms, 3000);
  EXPECT_EQ(a.rate_drift[1].rate, 0);
  // (100 x 2 + 400 x 1 + 0 x 0.5 + 50 x 0.5) / 4 = 156.25 req/s.
  EXPECT_DOUBLE_EQ(a.mean_rate(4000), 156.25);
  EXPECT_DOUBLE_EQ(a.mean_rate(1000), 100);
  EXPECT_NEAR(expected_requests(w->streams[0], 4000, 1.0), 625, 1e-9);
  // The arrivals follow the rate in each window (Poisson: within 5 sigma).
  const auto reqs = detail::arrivals(w->streams[0], 0, 7, 4000e3, 1.0);
  int n[4] = {0, 0, 0, 0};
  for (const auto& r : reqs) {
    const double t = r.arrival / 1000.0;
    n[t < 2000 ? 0 : t < 3000 ? 1 : t < 3500 ? 2 : 3]++;
  }
  EXPECT_NEAR(n[0], 200, 5 * std::sqrt(200.0));
  EXPECT_NEAR(n[1], 400, 5 * std::sqrt(400.0));
  EXPECT_EQ(n[2], 0);
  EXPECT_NEAR(n[3], 25, 5 * std::sqrt(25.0));
  // Bad drifts: one line each.
  for (auto [drift, needle] : {std::pair{"[]", "non-empty list"}, std::pair{"[{at_ms: 0, rate: 5}]", "must be > 0"},
                               std::pair{"[{at_ms: 5, rate: 5}, {at_ms: 5, rate: 6}]", "increase"},
                               std::pair{"[{at_ms: 5, rate: -1}]", "rate"},
                               std::pair{"[{at_ms: 5, rate: 1, x: 2}]", "'x'"}}) {
    std::string b = kGood;
    b.replace(b.find("{poisson: {rate: 100}}"), 22, std::string("{poisson: {rate: 100, drift: ") + drift + "}}");
    const std::string e = err_of(b);
    EXPECT_NE(e.find("arrival: poisson: field 'drift'"), std::string::npos) << e;
    EXPECT_NE(e.find(needle), std::string::npos) << drift << ": " << e;
  }
}

TEST(Workload, SeedsAndStreamsDrawIndependentSequences) {
  // No (seed, stream) pair replays another's draws: the first 64 draws of
  // seeds 0..15 on streams 0..3 are all distinct (a state linear in the
  // seed once made seed k + 2 the sequence of seed k two draws later).
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 16; ++seed)
    for (int idx = 0; idx < 4; ++idx) {
      ir::Rng r(detail::stream_state(seed, idx));
      for (int k = 0; k < 64; ++k) EXPECT_TRUE(seen.insert(r.next()).second) << seed << " " << idx << " " << k;
    }
}

TEST(Workload, Errors) {
  EXPECT_NE(err_of("streams: [a, b\n").find("malformed YAML"), std::string::npos);
  {
    // Each field within 1..4096, together 137 GB of weights: refused at load.
    std::string big = kGood;
    big.replace(big.find("model: gemm_chain"), 17, "model: gemm_chain\n    hidden: 4096\n    ffn: 4096\n    layers: 4096");
    EXPECT_NE(err_of(big).find("holds 128.0 GiB of weights, above the limit of 1.0 GiB"), std::string::npos)
        << err_of(big);
  }
  std::string y = kGood;
  EXPECT_NE(err_of(y.replace(y.find("gemm_chain"), 10, "resnet9000")).find("unknown model 'resnet9000'"),
            std::string::npos);
  y = kGood;
  EXPECT_NE(err_of(y.replace(y.find("rate: 100"), 9, "rate: -5")).find("field 'rate'"), std::string::npos);
  EXPECT_NE(err_of(std::string(kGood) + "batching: greedy\n").find("unknown batching policy 'greedy'"),
            std::string::npos);
  EXPECT_NE(err_of(std::string(kGood) + "scheduling: random\n").find("unknown scheduling policy"), std::string::npos);
  y = kGood;
  EXPECT_NE(err_of(y.replace(y.find("slo_ms: 2"), 9, "slo_ms: 0")).find("field 'slo_ms'"), std::string::npos);
  EXPECT_NE(err_of("streams: []\nduration_ms: 1\n").find("non-empty"), std::string::npos);
  EXPECT_NE(err_of(std::string(kGood) + "shape_grouping: 3\n").find("field 'shape_grouping'"), std::string::npos);
  auto w = parse_workload_text(std::string(kGood) + "shape_grouping: false\n", "w.yaml");
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->shape_grouping);
}

}  // namespace
}  // namespace loom::serve

namespace loom::serve {
namespace {

TEST(Batching, DeadlineSpreadsOverIdleCoresAndDoesNotWait) {
  BatchParams p;
  p.policy = Batching::Deadline;
  p.max_batch = 8;
  p.slack_margin = 0;
  p.max_seq = 16;
  // Same queue as DeadlinePicksLargestFeasible, but two idle cores: at most
  // ceil(5 / 2) = 3 per batch, dispatched at once.
  std::deque<QueuedReq> q;
  for (int i = 0; i < 5; ++i) q.push_back({0, i == 0 ? 300.0 : 400.0, 16});
  auto d = decide_batch(p, q, 0, [](int64_t s, int n) { return 100.0 + 10.0 * double(s * n) / 16.0; }, 2);
  EXPECT_EQ(d.n, 3);
}

}  // namespace
}  // namespace loom::serve

// ONNX and zoo models as streams, and the port-contention setting.
namespace loom::serve {
namespace {

std::string with_model(const std::string& model) {
  std::string y = kGood;
  return y.replace(y.find("gemm_chain"), 10, model);
}

TEST(Workload, ZooModelsAreCanonical) {
  auto w = parse_workload_text(with_model("\"zoo:bert\""), "w.yaml");
  ASSERT_TRUE(w) << w.error().str();
  const ModelSpec& m = w->streams[0].model;
  EXPECT_EQ(m.kind, ModelSpec::Kind::Onnx);
  EXPECT_EQ(m.zoo_name, "bert");
  EXPECT_EQ(m.zoo_seq, 32);  // bert's default length
  EXPECT_EQ(model_key(m), "zoo:bert:seq=32");
  w = parse_workload_text(with_model("\"zoo:mobilenetv2:slice=stem\""), "w.yaml");
  ASSERT_TRUE(w) << w.error().str();
  EXPECT_EQ(w->streams[0].model.zoo_slice, "stem");
  EXPECT_EQ(model_key(w->streams[0].model), "zoo:mobilenetv2:slice=stem");
  EXPECT_TRUE(w->streams[0].model.path.empty());  // built on first use
}

TEST(Workload, BertWithALengthDistributionIsBucketed) {
  auto w = parse_workload_text(with_model("\"zoo:bert\"") + "    seq_len: {values: [20, 300, 512]}\n", "w.yaml");
  ASSERT_TRUE(w) << w.error().str();
  const ModelSpec& m = w->streams[0].model;
  EXPECT_TRUE(m.bucketed());
  EXPECT_EQ(m.zoo_seq, 0);
  EXPECT_EQ(model_key(m), "zoo:bert");
  EXPECT_EQ(w->streams[0].shapes.values, (std::vector<int64_t>{20, 300, 512}));
  // A fixed length is not bucketed, with or without seq_len.
  w = parse_workload_text(with_model("\"zoo:bert:seq=64\""), "w.yaml");
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->streams[0].model.bucketed());
  // Lengths longer than the longest zoo BERT have no bucket.
  const std::string e = err_of(with_model("\"zoo:bert\"") + "    seq_len: {values: [20, 513]}\n");
  EXPECT_NE(e.find("seq_len: field 'values'"), std::string::npos) << e;
  EXPECT_NE(e.find("1..512"), std::string::npos) << e;
  EXPECT_EQ(zoo_bert_bucket(1), 32);
  EXPECT_EQ(zoo_bert_bucket(33), 64);
  EXPECT_EQ(zoo_bert_bucket(257), 384);
  EXPECT_EQ(zoo_bert_bucket(512), 512);
  EXPECT_EQ(zoo_bert_bucket(513), 0);
}

TEST(Workload, AnOnnxFileIsBucketedAlongItsSequenceSymbol) {
  // The ladder: powers of two and their halfway points, 8 .. 4096.
  const auto ladder = bucket_ladder();
  EXPECT_EQ(ladder.front(), 8);
  EXPECT_EQ(ladder.back(), kMaxBucketLength);
  EXPECT_EQ(std::vector<int64_t>(ladder.begin(), ladder.begin() + 6), (std::vector<int64_t>{8, 12, 16, 24, 32, 48}));
  for (size_t k = 1; k < ladder.size(); ++k) EXPECT_LE(ladder[k] * 2, ladder[k - 1] * 3);  // padding < half
  ModelSpec m;
  m.kind = ModelSpec::Kind::Onnx;
  m.name = m.path = "enc.onnx";
  m.seq_symbol = "seq";
  m.dims = {{"heads", 4}};
  ASSERT_TRUE(m.bucketed());
  EXPECT_EQ(m.bucket_of(1), 8);
  EXPECT_EQ(m.bucket_of(100), 128);
  EXPECT_EQ(m.bucket_of(4097), 0);
  EXPECT_TRUE(m.bucket_allowed(100));  // a mapping may pick any length
  EXPECT_FALSE(m.bucket_allowed(4097));
  // Bound to a bucket: the symbol is a dim, the model no longer bucketed,
  // its key that of the bound shape.
  const ModelSpec b = m.at_length(96);
  EXPECT_FALSE(b.bucketed());
  EXPECT_EQ(b.bound_length(), 96);
  EXPECT_EQ(b.dims.at("seq"), 96);
  EXPECT_EQ(b.dims.at("heads"), 4);
  EXPECT_EQ(b.name, "enc.onnx:seq=96");
  EXPECT_NE(model_key(b), model_key(m));
  EXPECT_EQ(m.bound_length(), 0);
  // The zoo BERT keeps its lengths.
  ModelSpec z;
  z.kind = ModelSpec::Kind::Onnx;
  z.name = "zoo:bert";
  z.zoo_name = "bert";
  EXPECT_EQ(z.bucket_lengths(), (std::vector<int64_t>{32, 64, 128, 256, 384, 512}));
  EXPECT_FALSE(z.bucket_allowed(96));
  EXPECT_EQ(z.at_length(128).name, "zoo:bert:seq=128");
  EXPECT_EQ(z.at_length(128).bound_length(), 128);
}

TEST(Workload, TraceSequenceLengthsOutsideEveryBoundAreRefusedAtLoad) {
  // A length no plan can hold fails at load naming the line, before any
  // compile or allocation (a length of 10^9 once took 48 s and 2.2 GB).
  const auto dir = std::filesystem::temp_directory_path() / ("loom_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "t.trace").string();
  const auto with_trace = [&](const std::string& model, const std::string& lines) {
    std::ofstream(trace) << lines;
    std::string y = with_model(model);
    return err_of(y.replace(y.find("{poisson: {rate: 100}}"), 22, "{trace: {file: \"" + trace + "\"}}"));
  };
  EXPECT_EQ(with_trace("gemm_chain", "0 16\n1 4096\n"), "ok");
  std::string e = with_trace("gemm_chain", "0 16\n# comment\n1 1000000000\n");
  EXPECT_NE(e.find(trace + ":3"), std::string::npos) << e;
  EXPECT_NE(e.find("seq_len 1000000000 is outside 1..4096"), std::string::npos) << e;
  e = with_trace("\"zoo:bert\"", "0 600\n");
  EXPECT_NE(e.find("outside 1..512 (the longest zoo BERT)"), std::string::npos) << e;
  e = with_trace("\"zoo:bert:seq=64\"", "0 64\n");
  EXPECT_NE(e.find("has a fixed shape"), std::string::npos) << e;
  EXPECT_EQ(with_trace("\"zoo:bert:seq=64\"", "0\n2.5\n"), "ok");
  std::filesystem::remove_all(dir);
}

TEST(Workload, ModelErrors) {
  EXPECT_NE(err_of(with_model("\"zoo:alexnet\"")).find("unknown zoo model 'alexnet'"), std::string::npos);
  EXPECT_NE(err_of(with_model("\"zoo:bert:seq=33\"")).find("seq must be 32, 64"), std::string::npos);
  EXPECT_NE(err_of(with_model("\"zoo:resnet50:slice=stage9\"")).find("unknown slice 'stage9'"), std::string::npos);
  EXPECT_NE(err_of(with_model("\"zoo:resnet50:seq=32\"")).find("resnet50 takes slice=S"), std::string::npos);
  EXPECT_NE(err_of(with_model("\"zoo:\"")).find("expected zoo:NAME"), std::string::npos);
  EXPECT_NE(err_of(with_model("missing_model.onnx")).find("ONNX model"), std::string::npos);
  EXPECT_NE(err_of(with_model("missing_model.onnx")).find("not found"), std::string::npos);
  EXPECT_NE(err_of(with_model("\"zoo:bert:seq=64\"") + "    seq_len: {values: [8]}\n").find("fixed shape"),
            std::string::npos);
}

TEST(Workload, PortContentionIsMeasuredUnlessGiven) {
  auto w = parse_workload_text(kGood, "w.yaml");
  ASSERT_TRUE(w);
  EXPECT_LT(w->port_contention, 0);  // measured
  w = parse_workload_text(std::string(kGood) + "port_contention: 0.25\n", "w.yaml");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->port_contention, 0.25);
  EXPECT_NE(err_of(std::string(kGood) + "port_contention: -1\n").find("field 'port_contention'"), std::string::npos);
}

// The smallest serve result that every reader accepts: one stream.
constexpr const char* kServeResult = R"({
  "kind": "serve", "workload": "dir/w.yaml", "backend": "tlm", "config": "tiny", "batching": "fixed",
  "seed": 3, "load_scale": 1.0, "scheduling": {"requested": "auto", "used": "dynamic", "reason": null},
  "submitted": 10, "completed": 9, "dropped": 1, "throughput_rps": 900.5, "core_imbalance": 0.1,
  "latency": {"p50_us": 1, "p95_us": 2, "p99_us": 3, "p999_us": 4, "max_us": 5},
  "fairness": {"jain": 1, "antt": 1, "stp": 1},
  "streams": [{"name": "a", "submitted": 10, "slo_attainment": 0.9, "slo_ms": 2,
               "latency": {"p50_us": 1, "p95_us": 2, "p99_us": 3, "p999_us": 4, "max_us": 5},
               "latency_cdf_us": [1, 2], "queue_wait": {"histogram": [{"lo_us": 0, "hi_us": null, "count": 9}]}}],
  "cores": [{"core": 0, "port": 0, "utilization": 0.5}], "batch_sizes": {"1": 9}})";

ordered_json doc(const std::string& text) {
  auto j = parse_json(text, "test.json");
  EXPECT_TRUE(j) << j.error().str();
  return j ? *j : ordered_json();
}

TEST(ResultCheck, ServeResultPassesAndEachDamageNamesItsField) {
  const ordered_json good = doc(kServeResult);
  ASSERT_TRUE(check_result(good, "r.json")) << check_result(good, "r.json").str();
  ordered_json bad = good;
  bad["streams"][0]["latency"] = "fast";
  EXPECT_EQ(check_result(bad, "runs/3.json").str(),
            "runs/3.json: streams[0]: field 'latency': expected an object, got string");
  bad = good;
  bad["streams"][0]["latency"].erase("p99_us");
  EXPECT_EQ(check_serve_result(bad, "r.json").str(), "r.json: streams[0]: field 'latency.p99_us': missing (expected a number or null)");
  bad = good;
  bad["cores"][0] = 1;
  EXPECT_EQ(check_serve_result(bad, "r.json").str(), "r.json: cores[0]: expected an object, got number");
}

TEST(ResultCheck, NumbersAreFinite) {
  // Text past the double range is not JSON to the parser; a value built in
  // memory (the merge's) may still be infinite, and a dump writes it as null.
  std::string text = kServeResult;
  text.replace(text.find("900.5"), 5, "1e999");
  EXPECT_EQ(parse_json(text, "r.json").error().str(), "r.json: not valid JSON");
  ordered_json r = doc(kServeResult);
  r["throughput_rps"] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(check_result(r, "r.json").str(), "r.json: field 'throughput_rps': expected a number, got a number out of range");
}

TEST(ResultCheck, MergedSweepReadsBackAsASweepResult) {
  const ordered_json r = doc(kServeResult);
  const ordered_json man = doc(R"({"sweep": "s.yaml", "points": [
      {"id": 0, "params": {"workload": "/x/w.yaml", "loads": 0.5, "admission": true}, "args": []},
      {"id": 1, "params": {"workload": "/x/w.yaml", "loads": 1.0, "admission": false}, "args": []}]})");
  ASSERT_TRUE(check_manifest(man, "points.json")) << check_manifest(man, "points.json").str();
  const ordered_json res = sweep_result(man, {r, r}, {{"launcher", "local"}});
  ASSERT_TRUE(check_result(res, "results.json")) << check_result(res, "results.json").str();
  EXPECT_EQ(res["settings"], ordered_json::parse(R"(["config", "batching", "scheduling", "workload", "admission"])"));
  const ordered_json& row = res["runs"][1];
  EXPECT_EQ(row["workload"], "w.yaml");
  EXPECT_EQ(row["load_scale"], 1.0);
  EXPECT_EQ(row["scheduling"], "auto");
  EXPECT_EQ(row["a.p99_us"], 3);
  EXPECT_EQ(row["result"], "runs/1.json");
  EXPECT_EQ(csv_line(row).second.substr(0, 35), "config,batching,scheduling,scheduli");
}

TEST(ResultCheck, ManifestSettingsAreTheSweepAxes) {
  const auto check = [](const char* text) { return check_manifest(doc(text), "points.json").str(); };
  EXPECT_EQ(check(R"({"points": [{"params": {"colour": "red"}, "args": []}]})"),
            "points.json: points[0]: field 'params': unknown setting 'colour'");
  EXPECT_EQ(check(R"({"points": [{"params": {"seeds": "1"}, "args": []}]})"),
            "points.json: points[0]: field 'params.seeds': expected a number, got string");
  EXPECT_EQ(check(R"({"points": [{"params": {"seeds": 1}, "args": []}, {"params": {}, "args": []}]})"),
            "points.json: points[1]: field 'params': not the settings of points[0] (every point has the same)");
}

}  // namespace
}  // namespace loom::serve
