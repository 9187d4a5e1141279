// Shared pieces of the load/store unit testbenches: Verilator signal byte access, a device memory
// with injectable AXI error ranges, random protocol stalls, and the golden model's bound checks.
#pragma once

#include <verilated.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "spec/loom/spec_gen.h"

namespace loom::unittb {

// ---------------------------------------------------------------------------
// Byte access to Verilator ports of any width (CData/SData/IData/QData or VlWide).
// ---------------------------------------------------------------------------
template <typename T>
uint8_t get_byte(const T& sig, unsigned b) {
  if constexpr (std::is_integral_v<T>) {
    return uint8_t(uint64_t(sig) >> (8 * b));
  } else {
    return uint8_t(sig[b / 4] >> (8 * (b % 4)));
  }
}

template <typename T>
void set_byte(T& sig, unsigned b, uint8_t v) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U m = U(U(0xff) << (8 * b));
    sig = T((U(sig) & ~m) | (U(v) << (8 * b)));
  } else {
    uint32_t m = 0xffu << (8 * (b % 4));
    sig[b / 4] = (sig[b / 4] & ~m) | (uint32_t(v) << (8 * (b % 4)));
  }
}

template <typename T>
bool get_bit(const T& sig, unsigned b) {
  if constexpr (std::is_integral_v<T>) {
    return (uint64_t(sig) >> b) & 1;
  } else {
    return (sig[b / 32] >> (b % 32)) & 1;
  }
}

template <typename T>
void set_insn(T& sig, const spec::Insn& in) {
  for (unsigned i = 0; i < spec::kInsnWords; ++i) sig[i] = in.w[i];
}

// ---------------------------------------------------------------------------
// Golden model helpers (host/hw/golden.h, restated so the test does
// not link the host library).
// ---------------------------------------------------------------------------
constexpr uint64_t span_2d(uint64_t rows, uint64_t stride, uint64_t cols) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * stride + cols;
}
constexpr bool in_scratchpad(uint64_t size, uint64_t addr, uint64_t len) {
  return len == 0 || (addr <= size && len <= size - addr);
}

enum : uint32_t {
  kErrIllegal = 1u << 0,
  kErrSlvErr = 1u << 1,
  kErrDecErr = 1u << 2,
  kErrWindow = 1u << 3,
  kErrOob = 1u << 5,
};

// ---------------------------------------------------------------------------
// Device memory: a byte array at `base`, with MemBytes-aligned error ranges.
// ---------------------------------------------------------------------------
struct ErrRange {
  uint64_t lo, hi;  // [lo, hi)
  uint32_t resp;    // 2 = SLVERR, 3 = DECERR
};

struct DevMem {
  uint64_t base = 0;
  std::vector<uint8_t> bytes;
  std::vector<ErrRange> errs;

  bool contains(uint64_t a, uint64_t n) const { return a >= base && a + n <= base + bytes.size(); }
  uint8_t& at(uint64_t a) { return bytes[size_t(a - base)]; }
  /// AXI response for the bytes [a, a + n): the first error range hit, else OKAY.
  uint32_t resp(uint64_t a, uint64_t n) const {
    for (const auto& e : errs)
      if (a < e.hi && e.lo < a + n) return e.resp;
    return 0;
  }
  /// The golden model's per-row probe, as an error bit.
  uint32_t probe_cause(uint64_t a, uint64_t n) const {
    uint32_t r = resp(a, n);
    return r == 2 ? kErrSlvErr : r == 3 ? kErrDecErr : 0;
  }
};

/// Random stall knobs: the probability that a ready/valid is offered in a cycle.
struct Stalls {
  double addr_ready = 0.7;
  double data_valid = 0.7;
  double sp_gnt = 0.8;
  int min_latency = 0;
  int max_latency = 8;
};

inline Stalls random_stalls(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 3);
  Stalls s;
  switch (pick(rng)) {
    case 0:
      s = {1.0, 1.0, 1.0, 0, 0};  // full throughput
      break;
    case 1:
      s = {0.3, 0.3, 0.5, 0, 20};  // heavy back-pressure
      break;
    case 2:
      s = {0.9, 0.9, 0.9, 10, 40};  // long latency
      break;
    default:
      break;
  }
  return s;
}

/// Counts failures and prints the first few.
struct Checker {
  uint64_t checked = 0, errors = 0;
  template <typename... A>
  void expect(bool ok, const char* fmt, A... args) {
    ++checked;
    if (!ok) {
      if (errors < 20) {
        std::printf("  FAIL: ");
        std::printf(fmt, args...);
        std::printf("\n");
      }
      ++errors;
    }
  }
};

}  // namespace loom::unittb
