// Testbench for loom_requant: random and corner vectors against loom::requantize, or loom::requantize_even where
// the vector sets even_i (a random half, and every exact tie both ways), with random stalls; a random
// sideband bit rides with every operand and must leave beside its result. Built with LOOM_REQUANT_DUAL it checks
// the Dual instance (rtl_requant_dual) against loom::requantize_sum instead: exact ties of the summed products,
// saturation corners and random operands; without it v2_i and mult2_i carry random values that must be ignored.
#include <deque>
#include <utility>
#include <vector>

#include "Vloom_requant.h"
#include "common/quant.h"
#include "rtl_harness.h"

namespace {

#ifdef LOOM_REQUANT_DUAL
constexpr bool kDual = true;
constexpr const char* kName = "rtl_requant_dual";
#else
constexpr bool kDual = false;
constexpr const char* kName = "rtl_requant";
#endif

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

struct Vec {
  int32_t v;
  int32_t mult;
  int shift;
  int32_t v2 = 0;  // v2_i: 10-bit signed
  int32_t mult2 = 0;
  uint8_t side = 0;  // side_i (SideW = 1 at this top)
  bool even = false;  // even_i: ties to even (the plain instance only; the Dual one always rounds away)
};

int32_t expect(const Vec& x) {
  if (kDual) return loom::requantize_sum(x.v, x.mult, x.v2, x.mult2, x.shift);
  return x.even ? loom::requantize_even(x.v, x.mult, x.shift) : loom::requantize(x.v, x.mult, x.shift);
}

std::vector<Vec> single_vectors(std::mt19937_64& rng, int* tie_shifts_out) {
  std::vector<Vec> out;
  // Saturation corners: the largest products, both signs, small and large shifts.
  for (int s : {1, 2, 30, 31, 32, 33, 61, 62}) {
    for (int32_t v : {kMin, kMin + 1, -1, 0, 1, kMax}) {
      for (int32_t m : {kMin, kMin + 1, -1, 0, 1, kMax, int32_t(1) << 30}) out.push_back({v, m, s});
    }
  }
  // Exact ties: |p| = (2k+1) * 2^(s-1), both signs, all shifts where it fits.
  for (int s = 1; s <= 62; ++s) {
    for (int k = 0; k < 6; ++k) {
      const int64_t p = (2 * int64_t(k) + 1) << (s - 1);
      // Split p = v * mult with |v|, |mult| inside int32.
      const int vs = s - 1 > 30 ? 30 : s - 1;
      const int64_t v = (2 * int64_t(k) + 1) << vs;
      const int64_t m = p / v;
      if (v <= kMax && m <= kMax) {
        for (bool even : {false, true}) {
          out.push_back({int32_t(v), int32_t(m), s, 0, 0, 0, even});
          out.push_back({int32_t(-v), int32_t(m), s, 0, 0, 0, even});
          out.push_back({int32_t(v), int32_t(-m), s, 0, 0, 0, even});
        }
      }
    }
  }
  // Random: full-range operands, and operands shaped like real requantization
  // (accumulator-sized v, mult in [2^30, 2^31), shift around 30..45).
  std::uniform_int_distribution<int32_t> any32(kMin, kMax);
  std::uniform_int_distribution<int32_t> acc(-(1 << 20), 1 << 20);
  std::uniform_int_distribution<int32_t> qmult(1 << 30, kMax);
  std::uniform_int_distribution<int> any_shift(1, 62), q_shift(28, 46);
  for (int i = 0; i < 20000; ++i) {
    if (i % 2 == 0) {
      out.push_back({any32(rng), any32(rng), any_shift(rng)});
    } else {
      out.push_back({acc(rng), qmult(rng), q_shift(rng)});
    }
  }
  *tie_shifts_out = 62;
  // v2_i and mult2_i are not used: random values must not leak into a result.
  std::uniform_int_distribution<int32_t> any10(-512, 511);
  std::bernoulli_distribution half(0.5);
  for (Vec& x : out) {
    x.v2 = any10(rng), x.mult2 = any32(rng);
    if (x.v != 0 && !x.even) x.even = half(rng);  // the ties keep their pairs
  }
  return out;
}

std::vector<Vec> dual_vectors(std::mt19937_64& rng, int* tie_shifts_out) {
  std::vector<Vec> out;
  std::uniform_int_distribution<int32_t> any32(kMin, kMax), any10(-512, 511), diff(-255, 255), qmult(1 << 30, kMax);
  std::uniform_int_distribution<int> any_shift(1, 62), pair_shift(26, 42);
  // Saturation corners: both products at their extremes, both signs, small and large shifts
  // (|v * mult + v2 * mult2| reaches 2^62 + 2^40).
  for (int s : {1, 2, 30, 31, 32, 33, 40, 41, 61, 62}) {
    for (int32_t v : {kMin, kMin + 1, -1, 0, 1, kMax}) {
      for (int32_t m : {kMin, -1, 0, kMax, int32_t(1) << 30}) {
        for (int32_t v2 : {-512, -255, -1, 0, 255, 511}) {
          for (int32_t m2 : {kMin, 0, 1, kMax}) out.push_back({v, m, s, v2, m2});
        }
      }
    }
  }
  // Exact ties of the sum: p = v * mult + v2 * mult2 = +-(2k+1) * 2^(s-1) for every shift. Pick
  // v2 != 0 and mult2 (a power of two near 2^(s-1), INT32_MIN or anything), then split the rest
  // r = p - v2 * mult2 as v * mult with mult a power of two (or INT32_MIN) where it fits.
  int tie_shifts = 0;
  for (int s = 1; s <= 62; ++s) {
    int found = 0;
    for (int64_t k = 0; k < 3 && (2 * k + 1) < (int64_t(1) << (63 - s)); ++k) {
      for (int64_t sign : {1, -1}) {
        const int64_t p = sign * ((2 * k + 1) << (s - 1));
        for (int attempt = 0; attempt < 8; ++attempt) {
          int32_t v2 = any10(rng);
          if (v2 == 0) v2 = 1;
          const int a = s - 1 < 30 ? s - 1 : 30;
          const int32_t m2_options[] = {int32_t(1) << a, -(int32_t(1) << a), kMin, any32(rng)};
          const int32_t m2 = m2_options[attempt < 4 ? attempt : std::uniform_int_distribution<int>(0, 3)(rng)];
          const int64_t r = p - int64_t(v2) * m2;
          if (r == 0) continue;
          int b = __builtin_ctzll(uint64_t(r));
          if (b > 30) b = 30;
          const int64_t m_options[] = {int64_t(1) << b, -(int64_t(1) << b), kMin};
          bool ok = false;
          for (int64_t m : m_options) {
            if (r % m != 0) continue;
            const int64_t v = r / m;
            if (v < kMin || v > kMax) continue;
            out.push_back({int32_t(v), int32_t(m), s, v2, m2});
            ok = true;
            break;
          }
          if (ok) {
            ++found;
            break;
          }
        }
      }
    }
    tie_shifts += found > 0;
  }
  std::printf("exact ties of the sum at %d of 62 shifts\n", tie_shifts);
  *tie_shifts_out = tie_shifts;
  // Random: full-range v with any 10-bit v2 and any multipliers; and requantizing adds as they
  // come: int8 differences, multipliers on one grid (the larger in [2^30, 2^31)).
  for (int i = 0; i < 20000; ++i) {
    if (i % 2 == 0) {
      out.push_back({any32(rng), any32(rng), any_shift(rng), any10(rng), any32(rng)});
    } else {
      const int32_t big = qmult(rng);
      const int32_t other = std::uniform_int_distribution<int32_t>(0, big)(rng);
      const bool a_big = i % 4 == 1;
      out.push_back({diff(rng), a_big ? big : other, pair_shift(rng), diff(rng), a_big ? other : big});
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, kDual ? 20240613 : 20240601);
  print_seed(kName, opt);
  std::mt19937_64 rng(opt.seed);
  int tie_shifts = 0;
  std::vector<Vec> vecs = kDual ? dual_vectors(rng, &tie_shifts) : single_vectors(rng, &tie_shifts);
  // A random sideband bit on every vector, so a stuck or misaligned sideband shows.
  std::bernoulli_distribution bit(0.5);
  for (Vec& x : vecs) x.side = uint8_t(bit(rng));
  std::printf("%zu vectors\n", vecs.size());

  Sim<Vloom_requant> sim(argc, argv, opt);
  sim->in_valid_i = 0;
  sim->out_ready_i = 0;
  sim.reset();

  std::bernoulli_distribution send(0.8), take(0.7);
  std::deque<std::pair<int32_t, uint8_t>> expected;  // (y, side) in order
  uint64_t side_seen[2] = {0, 0};
  size_t next = 0;
  uint64_t checked = 0, errors = 0;
  uint64_t guard = 0;
  bool held = false;
  while ((next < vecs.size() || !expected.empty()) && guard++ < 50 * vecs.size()) {
    // Drive inputs after the falling edge.
    // A beat once offered stays offered until taken (valid/ready rule).
    const bool offer = next < vecs.size() && (held || send(rng));
    sim->in_valid_i = offer;
    if (offer) {
      sim->v_i = uint32_t(vecs[next].v);
      sim->mult_i = uint32_t(vecs[next].mult);
      sim->shift_i = vecs[next].shift;
      sim->even_i = vecs[next].even;
      sim->v2_i = uint16_t(vecs[next].v2) & 0x3FF;
      sim->mult2_i = uint32_t(vecs[next].mult2);
      sim->side_i = vecs[next].side;
    } else {
      sim->side_i = uint8_t(rng() & 1);  // must not leak into a result
    }
    sim->out_ready_i = take(rng);
    sim.settle();
    const bool in_fire = offer && sim->in_ready_o;
    const bool out_fire = sim->out_valid_o && sim->out_ready_i;
    if (out_fire) {
      const int32_t got = int32_t(sim->y_o);
      const uint8_t got_side = uint8_t(sim->side_o);
      if (expected.empty()) {
        std::printf("unexpected output %d\n", got);
        ++errors;
      } else {
        const auto [want, want_side] = expected.front();
        expected.pop_front();
        ++checked;
        ++side_seen[want_side & 1];
        if ((got != want || got_side != want_side) && errors++ < 10) {
          std::printf("mismatch #%llu: got %d side %u, want %d side %u\n", static_cast<unsigned long long>(checked),
                      got, unsigned(got_side), want, unsigned(want_side));
        }
      }
    }
    if (in_fire) {
      const Vec& x = vecs[next++];
      expected.push_back({expect(x), x.side});
    }
    held = offer && !sim->in_ready_o;
    sim.tick();
  }
  if (next != vecs.size() || !expected.empty()) {
    std::printf("stalled: %zu of %zu sent, %zu outstanding\n", next, vecs.size(), expected.size());
    ++errors;
  }
  if (tie_shifts != 62) {
    std::printf("coverage hole: exact ties at %d of 62 shifts\n", tie_shifts);
    ++errors;
  }
  if (side_seen[0] == 0 || side_seen[1] == 0) {
    std::printf("sideband never carried both values\n");
    ++errors;
  }
  if (sim.assertion_failed()) {
    std::printf("an RTL assertion fired\n");
    ++errors;
  }
  return report(kName, argv[0], opt, checked, errors);
}
