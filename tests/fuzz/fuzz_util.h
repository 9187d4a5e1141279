// Shared pieces of the libFuzzer targets (tests/fuzz, docs/security.md).
// Each target feeds its bytes to one loader the way the CLI does and lets
// the sanitizers and libFuzzer judge: a loader may refuse the input with an
// Error (one line), but never crash, hang, leak or allocate without bound.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/tensor.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "spec/loom/spec_gen.h"

namespace loom::fuzz {

inline std::string_view bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// An error must be one line of bounded length that says where and what
/// (Error::str() stops at 4 KiB plus "..."; the CLI prints at most 1 KiB).
inline void check_error(const Error& e) {
  const std::string s = e.str();
  if (s.empty() || s.find('\n') != std::string::npos || s.size() > 4096 + 3) {
    std::fprintf(stderr, "bad error message (%zu bytes): %.300s\n", s.size(), s.c_str());
    std::abort();
  }
}

/// The fabric every target compiles for: the smallest one, so a run is fast.
inline const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

/// Deterministic int8 inputs for a graph (bytes derived from the name).
inline std::map<std::string, Tensor> inputs_for(const ir::Graph& g) {
  std::map<std::string, Tensor> in;
  for (const auto& name : g.inputs) {
    const ir::TensorInfo& t = g.tensor(name);
    Tensor x;
    x.dtype = t.dtype;
    x.shape = t.shape;
    x.data.resize(size_t(x.numel()) * dtype_size(x.dtype));
    uint32_t h = 2166136261u;
    for (char c : name) h = (h ^ uint8_t(c)) * 16777619u;
    for (auto& b : x.data) b = uint8_t((h = h * 1103515245u + 12345u) >> 24);
    in[name] = std::move(x);
  }
  return in;
}

/// Elements of every tensor of `shapes` together, saturating.
template <class Shapes>
int64_t total_elems(const Shapes& shapes) {
  int64_t sum = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) {
      if (d <= 0) return sum;
      n = n > (int64_t(1) << 40) / d ? (int64_t(1) << 40) : n * d;
    }
    sum = std::min<int64_t>(sum + n, int64_t(1) << 40);
  }
  return sum;
}

/// The targets compile and run what they load. A legal graph of a billion
/// elements is real work, not a hang, so beyond this size a target checks the
/// loading only (the budgets of limits.h still apply).
inline constexpr int64_t kRunElems = int64_t(1) << 18;

/// Work a plan asks of the golden model: multiply-accumulates of its GEMMs
/// and window elements of its POOLs, over every core's stream.
inline uint64_t plan_work(const std::vector<std::vector<spec::Insn>>& cores) {
  uint64_t w = 0;
  for (const auto& s : cores)
    for (const auto& in : s) {
      const auto op = spec::Opcode(in.w[0] & 63u);
      if (op == spec::Opcode::GEMM) {
        const auto g = spec::GemmInsn::decode(in);
        w += g.m * g.n * g.k_len;
      } else if (op == spec::Opcode::POOL) {
        const auto p = spec::PoolInsn::decode(in);
        w += p.p * p.win * p.c;
      }
    }
  return w;
}
inline constexpr uint64_t kRunWork = uint64_t(1) << 26;

}  // namespace loom::fuzz

// A mutator for the plan containers: mutate the metadata or the payload (or,
// now and then, the raw bytes), then re-encode with a fresh checksum, so that
// mutations get past the checksum to the decoders behind it.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);
namespace loom::fuzz {
inline size_t mutate_container(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  auto c = plan::decode_container(bytes(data, size), "mutate");
  if (!c || seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string& part = (seed / 8) % 2 ? c->payload : c->meta;
  const size_t room = max_size > size ? max_size - size : 0;
  const size_t old = part.size();
  part.resize(old + std::min<size_t>(room, 256));
  part.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(part.data()), old, part.size()));
  const std::string out = plan::encode_container(c->version, c->meta, c->payload);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::copy(out.begin(), out.end(), data);
  return out.size();
}
}  // namespace loom::fuzz
