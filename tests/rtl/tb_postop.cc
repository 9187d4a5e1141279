// Testbench for loom_postop: random POSTOP elements (bias, requant, residual, rescale, clamp), ELTWISE adds
// (the sum mode) and POOL averages (the even mode: ties to even) against a C++ model built on loom::requantize,
// loom::requantize_sum and loom::requantize_even, with random stalls on both sides; also checks the pipeline
// latency (8, 13 with rescale).
#include <deque>
#include <vector>

#include "Vloom_postop.h"
#include "common/quant.h"
#include "rtl_harness.h"

namespace {

// Datapath modes, one per instruction.
enum Mode { kPlain, kResidual, kSum, kRescale, kEven, kModes };
const char* const kModeNames[kModes] = {"plain", "residual", "sum", "rescale", "even"};

struct Cfg {
  bool residual, sum, rescale, even;
  int8_t out_zp, clip_lo, clip_hi, res_zp;
  int32_t res_mult;
  int res_shift;  // used by the residual mode only
  // rescale: y = rqs(x - a_zp, a_mult, res - res_zp, res_mult, a_shift) + add_zp, clamped to add_lo..add_hi.
  int8_t a_zp, add_zp, add_lo, add_hi;
  int32_t a_mult;
  int a_shift;
};

struct Elem {
  int32_t acc, bias, mult;
  int shift;
  int8_t res;
};

/// What a requantizing add (sum, rescale) exercised: an exact tie of a * ma + b * mb, and a sum whose single
/// rounding differs from rounding each term on its own.
struct AddStats {
  bool tie = false;
  bool one_rounding_differs = false;
};

int32_t requantize_add(int64_t a, int32_t ma, int64_t b, int32_t mb, int shift, AddStats* st) {
  const uint64_t p = uint64_t(a * ma + b * mb);
  const uint64_t mask = (uint64_t(1) << shift) - 1;
  st->tie = (p & mask) == (uint64_t(1) << (shift - 1));
  const int32_t y = loom::requantize_sum(a, ma, b, mb, shift);
  st->one_rounding_differs = int64_t(y) != int64_t(loom::requantize(a, ma, shift)) + loom::requantize(b, mb, shift);
  return y;
}

int8_t reference(const Cfg& c, const Elem& e, AddStats* st) {
  const int32_t v = int32_t(uint32_t(e.acc) + uint32_t(e.bias));  // wraps modulo 2^32
  const int64_t raw = int64_t(e.res) - c.res_zp;
  *st = {};
  if (c.sum) {  // ELTWISE add: v = A - a_zp, one rounding at the element's shift
    const int64_t y = int64_t(requantize_add(v, e.mult, raw, c.res_mult, e.shift, st)) + c.out_zp;
    return loom::clamp_i8(y, c.clip_lo, c.clip_hi);
  }
  if (c.even) {  // POOL avg: v = sum(x - in_zp), bias 0, one rounding with ties to even
    const uint64_t p = uint64_t(int64_t(v) * e.mult), mask = (uint64_t(1) << e.shift) - 1;
    st->tie = (p & mask) == (uint64_t(1) << (e.shift - 1));
    const int32_t y = loom::requantize_even(v, e.mult, e.shift);
    st->one_rounding_differs = y != loom::requantize(v, e.mult, e.shift);  // here: differs from ties away
    return loom::clamp_i8(int64_t(y) + c.out_zp, c.clip_lo, c.clip_hi);
  }
  int64_t y = int64_t(loom::requantize(v, e.mult, e.shift)) + c.out_zp;
  if (c.rescale) {
    const int8_t x = loom::clamp_i8(y, c.clip_lo, c.clip_hi);
    y = int64_t(requantize_add(int64_t(x) - c.a_zp, c.a_mult, raw, c.res_mult, c.a_shift, st)) + c.add_zp;
    return loom::clamp_i8(y, c.add_lo, c.add_hi);
  }
  const int64_t r = c.residual ? loom::requantize(raw, c.res_mult, c.res_shift) : 0;
  return loom::clamp_i8(y + r, c.clip_lo, c.clip_hi);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240602);
  print_seed("rtl_postop", opt);
  std::mt19937_64 rng(opt.seed);

  Sim<Vloom_postop> sim(argc, argv, opt);
  sim->in_valid_i = 0;
  sim->out_ready_i = 0;
  sim.reset();

  std::uniform_int_distribution<int> i8(-128, 127), shift_any(1, 62), shift_q(20, 40), ashift_q(28, 36),
      len(1, 400), mode_of(0, kModes - 1), small(-7, 7), pow2(0, 28), round_shift(1, 40), pair_shift_q(26, 40);
  std::uniform_int_distribution<int32_t> any32(INT32_MIN, INT32_MAX), acc(-(1 << 22), 1 << 22),
      qmult(1 << 30, INT32_MAX), bias(-(1 << 16), 1 << 16);
  std::bernoulli_distribution coin(0.5), send(0.85), take(0.75), rare(0.05);

  uint64_t checked = 0, errors = 0;
  uint64_t modes[kModes] = {};
  uint64_t ties[kModes] = {};     // requantizing adds that were exact ties (sum, rescale)
  uint64_t differs[kModes] = {};  // ... whose one rounding differs from rounding each term
  uint64_t min_latency[kModes] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
  const int kInstructions = 120;
  for (int insn = 0; insn < kInstructions; ++insn) {
    // A POSTOP or ELTWISE add instruction: per-instruction fields change only while the unit is idle.
    const Mode mode = Mode(mode_of(rng));
    Cfg c{};
    c.residual = mode != kPlain && mode != kEven;
    c.even = mode == kEven;
    c.sum = mode == kSum;
    c.rescale = mode == kRescale;
    c.out_zp = int8_t(i8(rng));
    int lo = i8(rng), hi = i8(rng);
    if (lo > hi) std::swap(lo, hi);
    if (insn % 5 == 0) lo = c.out_zp < hi ? c.out_zp : hi;  // ReLU-style lower clamp
    if (insn % 7 == 0) { lo = -128; hi = 127; }
    c.clip_lo = int8_t(lo);
    c.clip_hi = int8_t(hi);
    c.res_zp = int8_t(i8(rng));
    c.res_mult = insn % 3 == 0 ? any32(rng) : qmult(rng);
    c.res_shift = insn % 3 == 0 ? shift_any(rng) : shift_q(rng) - 10;
    c.a_zp = int8_t(i8(rng));
    c.add_zp = int8_t(i8(rng));
    int alo = i8(rng), ahi = i8(rng);
    if (alo > ahi) std::swap(alo, ahi);
    if (insn % 6 == 1) alo = c.add_zp < ahi ? c.add_zp : ahi;  // ReLU after the add
    if (insn % 11 == 3) { alo = -128; ahi = 127; }
    if (insn % 13 == 5) alo = ahi;                             // a single legal output value
    c.add_lo = int8_t(alo);
    c.add_hi = int8_t(ahi);
    // The two multipliers of a requantizing add (sum and rescale) share one shift: a realistic
    // pair on one grid, round multipliers (many exact ties), or anything legal (saturation).
    int32_t pair_a = 0, pair_b = 0;
    int pair_shift = 1;
    switch (insn % 4) {
      case 0:
      case 1: {
        // As an add's multipliers come: the larger in [2^30, 2^31), the smaller on its grid.
        const int32_t big = qmult(rng);
        const int32_t other = std::uniform_int_distribution<int32_t>(0, big)(rng);
        const bool a_big = coin(rng);
        pair_a = a_big ? big : other, pair_b = a_big ? other : big, pair_shift = pair_shift_q(rng);
        break;
      }
      case 2:
        pair_a = small(rng) * (int32_t(1) << pow2(rng));
        pair_b = small(rng) * (int32_t(1) << pow2(rng));
        pair_shift = round_shift(rng);
        break;
      default:
        pair_a = any32(rng), pair_b = any32(rng), pair_shift = shift_any(rng);
        break;
    }
    if (insn % 9 == 2) pair_shift = coin(rng) ? 1 : 62;
    c.a_mult = pair_a;
    c.a_shift = pair_shift;
    if (c.sum || c.rescale) c.res_mult = pair_b;
    const bool wild = insn % 4 == 0;  // full-range operands: exercises wrap and saturation
    const bool extreme = insn % 10 == 7;  // sum: int8 extremes, so |A - a_zp| reaches 255

    std::vector<Elem> elems(size_t(len(rng)));
    for (Elem& e : elems) {
      if (c.sum) {
        // ELTWISE add as loom_elem_ctrl feeds it: acc = A, bias = -a_zp, (a_mult, a_shift).
        e.acc = extreme ? (coin(rng) ? 127 : -128) : i8(rng);
        e.bias = -int32_t(c.a_zp);
        e.mult = rare(rng) ? any32(rng) : pair_a;
        e.shift = rare(rng) ? shift_any(rng) : pair_shift;
        e.res = int8_t(extreme ? (coin(rng) ? 127 : -128) : i8(rng));
        continue;
      }
      if (c.even) {
        // POOL avg as loom_elem_ctrl feeds it: a window sum, bias 0, and a multiplier that is often a power of
        // two (a 2^k window with equal scales: many exact ties) or any legal one.
        e.acc = wild ? any32(rng) : std::uniform_int_distribution<int32_t>(-255 * 64, 255 * 64)(rng);
        e.bias = 0;
        const bool round = coin(rng);
        e.mult = round ? int32_t(1) << 30 : (wild ? any32(rng) : qmult(rng));
        e.shift = round ? 30 + std::uniform_int_distribution<int>(1, 6)(rng) : (wild ? shift_any(rng) : shift_q(rng));
        e.res = int8_t(i8(rng));
        continue;
      }
      e.acc = wild ? any32(rng) : acc(rng);
      e.bias = wild ? any32(rng) : bias(rng);
      e.mult = wild || rare(rng) ? any32(rng) : qmult(rng);
      e.shift = wild ? shift_any(rng) : shift_q(rng);
      e.res = int8_t(i8(rng));
    }

    while (sim->busy_o) sim.tick();
    sim->cfg_residual_i = c.residual;
    sim->cfg_out_zp_i = uint8_t(c.out_zp);
    sim->cfg_clip_lo_i = uint8_t(c.clip_lo);
    sim->cfg_clip_hi_i = uint8_t(c.clip_hi);
    sim->cfg_res_zp_i = uint8_t(c.res_zp);
    sim->cfg_res_mult_i = uint32_t(c.res_mult);
    // Only the residual mode uses res_shift (the adds round once at their own shift); elsewhere
    // drive an illegal value to prove it is ignored.
    sim->cfg_res_shift_i = mode == kResidual ? c.res_shift : (coin(rng) ? 0 : 63);
    sim->cfg_sum_i = c.sum;
    sim->cfg_even_i = c.even;
    // Without rescale its fields are don't-care: drive an illegal shift and an empty add clamp.
    sim->cfg_rescale_i = c.rescale;
    sim->cfg_a_zp_i = uint8_t(c.a_zp);
    sim->cfg_a_mult_i = uint32_t(c.a_mult);
    sim->cfg_a_shift_i = c.rescale ? c.a_shift : (coin(rng) ? 0 : 63);
    sim->cfg_add_zp_i = uint8_t(c.add_zp);
    sim->cfg_add_lo_i = uint8_t(c.rescale ? c.add_lo : 100);
    sim->cfg_add_hi_i = uint8_t(c.rescale ? c.add_hi : uint8_t(-100));
    ++modes[mode];

    std::deque<int8_t> expected;
    std::deque<uint64_t> sent_at;  // cycle each element entered
    size_t next = 0;
    uint64_t guard = 0;
    bool held = false;
    while ((next < elems.size() || !expected.empty()) && guard++ < 100000) {
      // A beat once offered stays offered until taken (valid/ready rule).
      const bool offer = next < elems.size() && (held || send(rng));
      sim->in_valid_i = offer;
      if (offer) {
        const Elem& e = elems[next];
        sim->acc_i = uint32_t(e.acc);
        sim->bias_i = uint32_t(e.bias);
        sim->mult_i = uint32_t(e.mult);
        sim->shift_i = e.shift;
        sim->res_i = uint8_t(e.res);
      }
      sim->out_ready_i = take(rng);
      sim.settle();
      if (sim->out_valid_o && sim->out_ready_i) {
        const int8_t got = int8_t(sim->out_o);
        if (expected.empty()) {
          std::printf("insn %d: unexpected output %d\n", insn, got);
          ++errors;
        } else {
          const int8_t want = expected.front();
          expected.pop_front();
          const uint64_t lat = sim.cycles() - sent_at.front();
          sent_at.pop_front();
          uint64_t& mn = min_latency[mode];
          if (lat < mn) mn = lat;
          ++checked;
          if (got != want && errors++ < 10) {
            std::printf("insn %d element %llu: got %d want %d\n", insn,
                        static_cast<unsigned long long>(next - expected.size() - 1), got, want);
          }
        }
      }
      if (offer && sim->in_ready_o) {
        AddStats st;
        expected.push_back(reference(c, elems[next++], &st));
        ties[mode] += st.tie;
        differs[mode] += st.one_rounding_differs;
        sent_at.push_back(sim.cycles());
      }
      held = offer && !sim->in_ready_o;
      sim.tick();
    }
    sim->in_valid_i = 0;
    if (next != elems.size() || !expected.empty()) {
      std::printf("insn %d stalled: %zu of %zu sent\n", insn, next, elems.size());
      ++errors;
      break;
    }
  }
  // Unstalled beats see the documented pipeline depth: 8, and 13 through the rescale stage.
  for (int m = 0; m < kModes; ++m) {
    const uint64_t want = m == kRescale ? 13 : 8;
    std::printf("%s: %llu instructions, minimum latency %llu; adds: %llu exact ties, %llu where one rounding differs\n",
                kModeNames[m], static_cast<unsigned long long>(modes[m]),
                static_cast<unsigned long long>(min_latency[m]), static_cast<unsigned long long>(ties[m]),
                static_cast<unsigned long long>(differs[m]));
    if ((m == kSum || m == kRescale || m == kEven) && (ties[m] == 0 || differs[m] == 0)) {
      std::printf("coverage hole: mode %s lacks an exact tie or one that rounds differently\n", kModeNames[m]);
      ++errors;
    }
    if (modes[m] == 0) {
      std::printf("coverage hole: mode %s was never generated\n", kModeNames[m]);
      ++errors;
    } else if (min_latency[m] != want) {
      std::printf("mode %s: latency %llu, expected %llu\n", kModeNames[m], static_cast<unsigned long long>(min_latency[m]),
                  static_cast<unsigned long long>(want));
      ++errors;
    }
  }
  if (sim.assertion_failed()) {
    std::printf("an RTL assertion fired\n");
    ++errors;
  }
  return report("rtl_postop", argv[0], opt, checked, errors);
}
