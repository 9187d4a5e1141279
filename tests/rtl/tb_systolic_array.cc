// Testbench for loom_systolic_array: tiled random GEMMs with zero points against a naive C++ GEMM.
#include <deque>
#include <vector>

#include "Vloom_systolic_array.h"
#include "rtl_harness.h"

#ifndef LOOM_ROWS
#error "LOOM_ROWS must match the Verilated Rows parameter"
#endif
#ifndef LOOM_COLS
#error "LOOM_COLS must match the Verilated Cols parameter"
#endif

namespace {

constexpr int kRows = LOOM_ROWS;
constexpr int kCols = LOOM_COLS;

struct Gemm {
  int m, n, k;
  int8_t a_zp, b_zp;
  std::vector<int8_t> a;  // m x k
  std::vector<int8_t> b;  // k x n
};

std::vector<int32_t> naive(const Gemm& g) {
  std::vector<int32_t> c(size_t(g.m) * g.n);
  for (int i = 0; i < g.m; ++i) {
    for (int j = 0; j < g.n; ++j) {
      uint32_t acc = 0;  // wraps modulo 2^32 like GEMM
      for (int kk = 0; kk < g.k; ++kk) {
        const int32_t av = int32_t(g.a[size_t(i) * g.k + kk]) - g.a_zp;
        const int32_t bv = int32_t(g.b[size_t(kk) * g.n + j]) - g.b_zp;
        acc += uint32_t(av * bv);
      }
      c[size_t(i) * g.n + j] = int32_t(acc);
    }
  }
  return c;
}

template <typename Words>
void set_lane8(Words& w, int lane, int8_t v) {
  // Verilator packs wide ports into 32-bit words (or a single integer when narrow).
  if constexpr (std::is_integral_v<Words>) {
    w = Words((w & ~(Words(0xff) << (8 * lane))) | (Words(uint8_t(v)) << (8 * lane)));
  } else {
    uint32_t& word = w[lane / 4];
    const int sh = 8 * (lane % 4);
    word = (word & ~(0xffu << sh)) | (uint32_t(uint8_t(v)) << sh);
  }
}

template <typename Words>
int32_t get_lane32(const Words& w, int lane) {
  if constexpr (std::is_integral_v<Words>) {
    return int32_t(uint32_t(uint64_t(w) >> (32 * lane)));
  } else {
    return int32_t(w[lane]);
  }
}

struct TileRef {
  int mt, nt;
};

/// Runs one GEMM through the array tile by tile (as a GEMM controller would),
/// with random input gaps and output back-pressure. Returns mismatches.
uint64_t run_gemm(loom::rtltest::Sim<Vloom_systolic_array>& sim, const Gemm& g, std::mt19937_64& rng, double p_send,
                  double p_take, uint64_t* checked) {
  const std::vector<int32_t> want = naive(g);
  std::vector<int32_t> got(want.size(), 0x5a5a5a5a);
  std::vector<TileRef> tiles;
  for (int mt = 0; mt < (g.m + kRows - 1) / kRows; ++mt) {
    for (int nt = 0; nt < (g.n + kCols - 1) / kCols; ++nt) tiles.push_back({mt, nt});
  }
  std::bernoulli_distribution send(p_send), take(p_take);
  std::uniform_int_distribution<int> junk(-128, 127);

  size_t in_tile = 0, out_tile = 0;
  int k = 0, out_row = 0;
  uint64_t errors = 0, guard = 0;
  const uint64_t limit = uint64_t(tiles.size()) * (uint64_t(g.k) + 64) * 20 + 1000;
  bool held = false;
  while (out_tile < tiles.size() && guard++ < limit) {
    // A beat once offered stays offered until taken (valid/ready rule).
    const bool offer = in_tile < tiles.size() && (held || send(rng));
    sim->in_valid_i = offer;
    if (offer) {
      const TileRef t = tiles[in_tile];
      sim->in_first_i = k == 0;
      sim->in_last_i = k == g.k - 1;
      sim->a_zp_i = uint8_t(g.a_zp);
      sim->b_zp_i = uint8_t(g.b_zp);
      for (int i = 0; i < kRows; ++i) {
        const int row = t.mt * kRows + i;
        set_lane8(sim->a_i, i, row < g.m ? g.a[size_t(row) * g.k + k] : int8_t(junk(rng)));
      }
      for (int j = 0; j < kCols; ++j) {
        const int col = t.nt * kCols + j;
        set_lane8(sim->b_i, j, col < g.n ? g.b[size_t(k) * g.n + col] : int8_t(junk(rng)));
      }
    }
    sim->out_ready_i = take(rng);
    sim.settle();
    if (sim->out_valid_o && sim->out_ready_i) {
      const TileRef t = tiles[out_tile];
      if (int(sim->out_row_o) != out_row || bool(sim->out_last_o) != (out_row == kRows - 1)) {
        if (errors++ < 10) std::printf("tile %zu: row %d/last %d, expected row %d\n", out_tile, int(sim->out_row_o),
                                       int(sim->out_last_o), out_row);
      }
      const int row = t.mt * kRows + out_row;
      for (int j = 0; j < kCols; ++j) {
        const int col = t.nt * kCols + j;
        if (row < g.m && col < g.n) got[size_t(row) * g.n + col] = get_lane32(sim->out_c_o, j);
      }
      if (++out_row == kRows) {
        out_row = 0;
        ++out_tile;
      }
    }
    if (offer && sim->in_ready_o) {
      if (++k == g.k) {
        k = 0;
        ++in_tile;
      }
    }
    held = offer && !sim->in_ready_o;
    sim.tick();
  }
  sim->in_valid_i = 0;
  if (out_tile != tiles.size()) {
    std::printf("gemm %dx%dx%d stalled after %zu of %zu tiles\n", g.m, g.n, g.k, out_tile, tiles.size());
    ++errors;
  }
  for (size_t idx = 0; idx < want.size(); ++idx) {
    ++*checked;
    if (got[idx] != want[idx] && errors++ < 10) {
      std::printf("gemm %dx%dx%d zp(%d,%d): C[%zu][%zu] got %d want %d\n", g.m, g.n, g.k, g.a_zp, g.b_zp,
                  idx / size_t(g.n), idx % size_t(g.n), got[idx], want[idx]);
    }
  }
  return errors;
}

Gemm random_gemm(std::mt19937_64& rng, int m, int n, int k) {
  std::uniform_int_distribution<int> i8(-128, 127);
  Gemm g{m, n, k, int8_t(i8(rng)), int8_t(i8(rng)), {}, {}};
  g.a.resize(size_t(m) * k);
  g.b.resize(size_t(k) * n);
  for (auto& x : g.a) x = int8_t(i8(rng));
  for (auto& x : g.b) x = int8_t(i8(rng));
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240603);
  print_seed("rtl_systolic_array", opt);
  std::printf("array %dx%d\n", kRows, kCols);
  std::mt19937_64 rng(opt.seed);

  Sim<Vloom_systolic_array> sim(argc, argv, opt);
  sim->in_valid_i = 0;
  sim->out_ready_i = 0;
  sim.reset();

  uint64_t checked = 0, errors = 0;
  std::uniform_int_distribution<int> dm(1, 3 * kRows + 1), dn(1, 3 * kCols + 1), dk(1, 48);

  // Random shapes and zero points, with gaps and back-pressure.
  for (int t = 0; t < 40 && errors == 0; ++t) {
    const Gemm g = random_gemm(rng, dm(rng), dn(rng), dk(rng));
    errors += run_gemm(sim, g, rng, t % 4 == 0 ? 1.0 : 0.8, t % 4 == 0 ? 1.0 : 0.7, &checked);
  }
  // K = 1 and K = 2 tiles back to back at full rate: exercises the last-beat spacing.
  for (int k : {1, 2}) {
    if (errors == 0) errors += run_gemm(sim, random_gemm(rng, 3 * kRows, 2 * kCols, k), rng, 1.0, 1.0, &checked);
  }
  // Extreme operands over a long reduction: the int32 accumulators must wrap modulo 2^32.
  if (errors == 0) {
    Gemm g = random_gemm(rng, kRows, kCols, 70000);
    g.a_zp = 127;
    g.b_zp = 127;
    for (auto& x : g.a) x = -128;
    for (auto& x : g.b) x = -128;
    g.b[0] = 127;
    errors += run_gemm(sim, g, rng, 1.0, 1.0, &checked);
  }
  if (sim.assertion_failed()) ++errors;
  std::printf("cycles %llu\n", static_cast<unsigned long long>(sim.cycles()));
  return report("rtl_systolic_array", argv[0], opt, checked, errors);
}
