// Host CPU cost of one dispatch decision (target <= 2 us): the batching
// decision of the deadline-aware, fixed and none policies on a queue of 64
// waiting requests, with service times looked up in a measured table.
// Run: build/<dir>/tests/serve/loom_serve_bench
#include <benchmark/benchmark.h>

#include <map>

#include "ir/builder.h"
#include "serve/policy.h"

namespace {

using namespace loom::serve;

std::deque<QueuedReq> make_queue(int n) {
  loom::ir::Rng rng(3);
  std::deque<QueuedReq> q;
  for (int i = 0; i < n; ++i) {
    const double a = i * 20.0;
    q.push_back({a, a + 5000.0, 16 << rng.range(0, 3)});
  }
  return q;
}

void run(benchmark::State& st, Batching b) {
  BatchParams p;
  p.policy = b;
  p.max_batch = int(st.range(0));
  p.max_delay_us = 500;
  p.max_seq = 128;
  // A table of measured service times, as the server holds it.
  std::map<std::pair<int64_t, int>, double> table;
  for (int64_t s = 16; s <= 128; s *= 2)
    for (int n = 1; n <= 64; ++n) table[{s, n}] = 50.0 + 0.5 * double(s * n);
  const ServiceFn svc = [&](int64_t s, int n) { return table.at({s, n}); };
  const auto q = make_queue(64);
  double now = 1000;
  for (auto _ : st) {
    auto d = decide_batch(p, q, now, svc);
    benchmark::DoNotOptimize(d);
    now += 0.001;
  }
}

void BM_DecideDeadline(benchmark::State& st) { run(st, Batching::Deadline); }
void BM_DecideFixed(benchmark::State& st) { run(st, Batching::Fixed); }
void BM_DecideNone(benchmark::State& st) { run(st, Batching::None); }

BENCHMARK(BM_DecideDeadline)->Arg(8)->Arg(32);
BENCHMARK(BM_DecideFixed)->Arg(8)->Arg(32);
BENCHMARK(BM_DecideNone)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
