// Testbench for loom_requant: random and corner vectors against loom::requantize, with random stalls; a random
// sideband bit rides with every operand and must leave beside its result.
#include <deque>
#include <utility>
#include <vector>

#include "Vloom_requant.h"
#include "common/quant.h"
#include "rtl_harness.h"

namespace {

struct Vec {
  int32_t v;
  int32_t mult;
  int shift;
  uint8_t side = 0;  // side_i (SideW = 1 at this top)
};

std::vector<Vec> make_vectors(std::mt19937_64& rng) {
  std::vector<Vec> out;
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
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
        out.push_back({int32_t(v), int32_t(m), s});
        out.push_back({int32_t(-v), int32_t(m), s});
        out.push_back({int32_t(v), int32_t(-m), s});
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
  // A random sideband bit on every vector, so a stuck or misaligned sideband shows.
  std::bernoulli_distribution bit(0.5);
  for (Vec& x : out) x.side = uint8_t(bit(rng));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240601);
  print_seed("rtl_requant", opt);
  std::mt19937_64 rng(opt.seed);
  const std::vector<Vec> vecs = make_vectors(rng);

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
      expected.push_back({loom::requantize(x.v, x.mult, x.shift), x.side});
    }
    held = offer && !sim->in_ready_o;
    sim.tick();
  }
  if (next != vecs.size() || !expected.empty()) {
    std::printf("stalled: %zu of %zu sent, %zu outstanding\n", next, vecs.size(), expected.size());
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
  return report("rtl_requant", argv[0], opt, checked, errors);
}
