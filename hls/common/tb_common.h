// Shared pieces of the loom HLS C-simulation testbenches: seeded random
// numbers, bit-exact comparison with a readable first mismatch, and the
// one-node graphs whose direct reference (ir::run_reference) is the oracle.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "loom_hls_latency.h"
#ifdef LOOM_HLS_STANDIN
#include "loom_hls_standin/hls_stream.h"
#endif

namespace loom_hls_tb {

using loom::ir::Rng;

/// Counts cases and compared outputs; any mismatch marks the run failed.
struct Tally {
  int cases = 0;
  int64_t outputs = 0;
  int failures = 0;

  /// Compares got against want element by element; prints the first mismatch.
  bool check(const std::string& what, const int8_t* got, const int8_t* want, size_t n) {
    ++cases;
    outputs += int64_t(n);
    for (size_t i = 0; i < n; ++i) {
      if (got[i] != want[i]) {
        std::fprintf(stderr, "MISMATCH %s: element %zu of %zu: kernel %d, golden %d\n", what.c_str(), i, n,
                     int(got[i]), int(want[i]));
        ++failures;
        return false;
      }
    }
    return true;
  }
  /// Records a failed expectation that is not an output comparison.
  void fail(const std::string& what) {
    ++cases;
    ++failures;
    std::fprintf(stderr, "FAIL %s\n", what.c_str());
  }
  void pass_case() { ++cases; }

  /// Compares the latency model's shape-dependent cycles (the model minus
  /// kDataflowOverhead) with the same sum built from the loop trip counts the
  /// C simulation executed (stream writes, stand-in builds only).
  void check_model(const std::string& what, uint64_t model_cycles, uint64_t counted) {
    ++models;
    if (model_cycles - loom_hls::kDataflowOverhead != counted) {
      ++failures;
      std::fprintf(stderr, "LATENCY MODEL %s: model %llu cycles + overhead, loop trip counts give %llu\n",
                   what.c_str(), (unsigned long long)(model_cycles - loom_hls::kDataflowOverhead),
                   (unsigned long long)counted);
    }
  }
  int models = 0;

  int finish(const char* name) const {
    std::printf("%s: %d cases, %lld outputs compared, %d latency-model checks, %d failures\n", name, cases,
                (long long)outputs, models, failures);
    return failures == 0 && cases > 0 ? 0 : 1;
  }
};

/// Elements written to the named stream since the last reset_stream_counts()
/// (0 outside the stand-in build, where the model checks are skipped).
inline void reset_stream_counts() {
#ifdef LOOM_HLS_STANDIN
  hls::standin_write_counts().clear();
#endif
}
inline uint64_t stream_writes(const char* name) {
#ifdef LOOM_HLS_STANDIN
  auto& m = hls::standin_write_counts();
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
#else
  (void)name;
  return 0;
#endif
}
#ifdef LOOM_HLS_STANDIN
inline constexpr bool kCountStreams = true;
#else
inline constexpr bool kCountStreams = false;
#endif

inline std::vector<int8_t> random_i8(Rng& rng, size_t n, int lo = -128, int hi = 127) {
  std::vector<int8_t> v(n);
  for (auto& x : v) x = int8_t(rng.range(lo, hi));
  return v;
}

/// Runs the direct reference on a graph with the given int8 input values and
/// returns the data of its single output; aborts the test on an error.
inline std::vector<int8_t> reference_output(const loom::ir::Graph& g,
                                            const std::map<std::string, std::vector<int8_t>>& inputs) {
  std::map<std::string, loom::Tensor> in;
  for (const auto& [name, vals] : inputs) {
    loom::Tensor t(loom::DType::I8, g.tensor(name).shape);
    for (size_t i = 0; i < vals.size(); ++i) t.i8()[i] = vals[i];
    in.emplace(name, std::move(t));
  }
  auto out = loom::ir::run_reference(g, in);
  if (!out) {
    std::fprintf(stderr, "reference failed: %s\n", out.error().str().c_str());
    std::exit(2);
  }
  const loom::Tensor& y = out->at(g.outputs.at(0));
  return std::vector<int8_t>(y.i8(), y.i8() + y.numel());
}

}  // namespace loom_hls_tb
