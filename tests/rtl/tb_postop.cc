// Testbench for loom_postop: random POSTOP elements (bias, requant, residual, rescale, clamp) against a C++ model
// built on loom::requantize, with random stalls on both sides; also checks the pipeline latency (8, 13 with rescale).
#include <deque>
#include <vector>

#include "Vloom_postop.h"
#include "common/quant.h"
#include "rtl_harness.h"

namespace {

struct Cfg {
  bool residual, rescale;
  int8_t out_zp, clip_lo, clip_hi, res_zp;
  int32_t res_mult;
  int res_shift;
  // rescale: y = rq(x - a_zp, a_mult, a_shift) + rq(res) + add_zp, clamped to add_lo..add_hi.
  int8_t a_zp, add_zp, add_lo, add_hi;
  int32_t a_mult;
  int a_shift;
};

struct Elem {
  int32_t acc, bias, mult;
  int shift;
  int8_t res;
};

int8_t reference(const Cfg& c, const Elem& e) {
  const int32_t v = int32_t(uint32_t(e.acc) + uint32_t(e.bias));  // wraps modulo 2^32
  int64_t y = int64_t(loom::requantize(v, e.mult, e.shift)) + c.out_zp;
  const int64_t r = c.residual ? loom::requantize(int64_t(e.res) - c.res_zp, c.res_mult, c.res_shift) : 0;
  if (c.rescale) {
    const int8_t x = loom::clamp_i8(y, c.clip_lo, c.clip_hi);
    y = int64_t(loom::requantize(int64_t(x) - c.a_zp, c.a_mult, c.a_shift)) + r + c.add_zp;
    return loom::clamp_i8(y, c.add_lo, c.add_hi);
  }
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
      len(1, 400);
  std::uniform_int_distribution<int32_t> any32(INT32_MIN, INT32_MAX), acc(-(1 << 22), 1 << 22),
      qmult(1 << 30, INT32_MAX), bias(-(1 << 16), 1 << 16);
  std::bernoulli_distribution coin(0.5), send(0.85), take(0.75), rare(0.05);

  uint64_t checked = 0, errors = 0;
  uint64_t modes[3] = {0, 0, 0};                    // plain, residual, rescale instructions
  uint64_t min_latency[2] = {UINT64_MAX, UINT64_MAX};  // without, with rescale
  const int kInstructions = 90;
  for (int insn = 0; insn < kInstructions; ++insn) {
    // A POSTOP instruction: per-instruction fields change only while the unit is idle.
    Cfg c{};
    c.residual = coin(rng);
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
    // rescale needs a residual; about half the residual instructions use it.
    c.rescale = c.residual && coin(rng);
    c.a_zp = int8_t(i8(rng));
    c.add_zp = int8_t(i8(rng));
    int alo = i8(rng), ahi = i8(rng);
    if (alo > ahi) std::swap(alo, ahi);
    if (insn % 6 == 1) alo = c.add_zp < ahi ? c.add_zp : ahi;  // ReLU after the add
    if (insn % 11 == 3) { alo = -128; ahi = 127; }
    if (insn % 13 == 5) alo = ahi;                             // a single legal output value
    c.add_lo = int8_t(alo);
    c.add_hi = int8_t(ahi);
    // Mostly realistic (mult in [2^30, 2^31), shift 28..36: scales 1/64..8), sometimes anything legal.
    c.a_mult = insn % 3 == 1 ? any32(rng) : qmult(rng);
    c.a_shift = insn % 3 == 1 ? shift_any(rng) : ashift_q(rng);
    if (insn % 9 == 2) c.a_shift = coin(rng) ? 1 : 62;
    const bool wild = insn % 4 == 0;  // full-range operands: exercises wrap and saturation

    std::vector<Elem> elems(size_t(len(rng)));
    for (Elem& e : elems) {
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
    // Without a residual the shift field is don't-care; drive an illegal value to prove it is ignored.
    sim->cfg_res_shift_i = c.residual ? c.res_shift : 0;
    // Without rescale its fields are don't-care: drive an illegal shift and an empty add clamp.
    sim->cfg_rescale_i = c.rescale;
    sim->cfg_a_zp_i = uint8_t(c.a_zp);
    sim->cfg_a_mult_i = uint32_t(c.a_mult);
    sim->cfg_a_shift_i = c.rescale ? c.a_shift : (coin(rng) ? 0 : 63);
    sim->cfg_add_zp_i = uint8_t(c.add_zp);
    sim->cfg_add_lo_i = uint8_t(c.rescale ? c.add_lo : 100);
    sim->cfg_add_hi_i = uint8_t(c.rescale ? c.add_hi : uint8_t(-100));
    ++modes[c.rescale ? 2 : c.residual ? 1 : 0];

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
          uint64_t& mn = min_latency[c.rescale];
          if (lat < mn) mn = lat;
          ++checked;
          if (got != want && errors++ < 10) {
            std::printf("insn %d element %llu: got %d want %d\n", insn,
                        static_cast<unsigned long long>(next - expected.size() - 1), got, want);
          }
        }
      }
      if (offer && sim->in_ready_o) {
        expected.push_back(reference(c, elems[next++]));
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
  std::printf("instructions: %llu plain, %llu residual, %llu rescale; minimum latency %llu, %llu with rescale\n",
              static_cast<unsigned long long>(modes[0]), static_cast<unsigned long long>(modes[1]),
              static_cast<unsigned long long>(modes[2]), static_cast<unsigned long long>(min_latency[0]),
              static_cast<unsigned long long>(min_latency[1]));
  if (modes[0] == 0 || modes[1] == 0 || modes[2] == 0) {
    std::printf("coverage hole: a POSTOP mode was never generated\n");
    ++errors;
  }
  // Unstalled beats see the documented pipeline depth: 8, and 13 through the rescale stage.
  if (min_latency[0] != 8 || min_latency[1] != 13) {
    std::printf("latency %llu / %llu, expected 8 / 13\n", static_cast<unsigned long long>(min_latency[0]),
                static_cast<unsigned long long>(min_latency[1]));
    ++errors;
  }
  if (sim.assertion_failed()) {
    std::printf("an RTL assertion fired\n");
    ++errors;
  }
  return report("rtl_postop", argv[0], opt, checked, errors);
}
