// Testbench for loom_spad: random byte-masked windows written and read at any byte address, against a C++ array.
#include <vector>

#include "Vloom_spad.h"
#include "rtl_harness.h"
#include "unit_tb.h"

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  using namespace loom::unittb;
  const Options opt = parse_options(argc, argv, 20240610);
  print_seed("rtl_spad", opt);
  std::mt19937_64 rng(opt.seed);
  constexpr unsigned kBytes = LOOM_SPAD_BYTES;
  constexpr unsigned kSpW = LOOM_SPW;

  Sim<Vloom_spad> sim(argc, argv, opt);
  sim->rd_req_i = 0;
  sim->wr_req_i = 0;
  sim.reset();

  std::vector<uint8_t> ref(kBytes);
  std::vector<bool> known(kBytes, false);
  std::uniform_int_distribution<unsigned> addr(0, kBytes - 1);
  std::bernoulli_distribution wr(0.6), rd(0.6), near_end(0.1);
  Checker chk;
  bool pending = false;
  std::vector<uint8_t> want(kSpW);
  std::vector<bool> want_known(kSpW);
  for (int cyc = 0; cyc < 30000 && chk.errors < 20; ++cyc) {
    const bool w = wr(rng), r = rd(rng);
    // Addresses near the end exercise the wrap to the start.
    const unsigned wa = near_end(rng) ? kBytes - 1 - addr(rng) % kSpW : addr(rng);
    const unsigned ra = near_end(rng) ? kBytes - 1 - addr(rng) % kSpW : addr(rng);
    sim->wr_req_i = w;
    sim->wr_addr_i = wa;
    sim->rd_req_i = r;
    sim->rd_addr_i = ra;
    const uint64_t mask = (cyc % 7 == 0) ? ~0ull : rng();
    sim->wr_mask_i = decltype(sim->wr_mask_i)(mask);
    std::vector<uint8_t> data(kSpW);
    for (unsigned b = 0; b < kSpW; ++b) {
      data[b] = uint8_t(rng());
      set_byte(sim->wr_data_i, b, data[b]);
    }
    sim.tick();
    chk.expect(bool(sim->rd_valid_o) == r, "cycle %d: rd_valid %d want %d", cyc, int(sim->rd_valid_o), int(r));
    // A byte read in the cycle it is written is outside the contract (the
    // FPGA primitives differ), so it is not checked.
    pending = r;
    if (r) {
      for (unsigned b = 0; b < kSpW; ++b) {
        const unsigned a = (ra + b) % kBytes;
        want[b] = ref[a];
        want_known[b] = known[a] && !(w && (a - wa) % kBytes < kSpW);
      }
    }
    if (pending) {
      for (unsigned b = 0; b < kSpW; ++b)
        if (want_known[b])
          chk.expect(get_byte(sim->rd_data_o, b) == want[b], "cycle %d byte %u: got %02x want %02x", cyc, b,
                     get_byte(sim->rd_data_o, b), want[b]);
    }
    if (w) {
      for (unsigned b = 0; b < kSpW; ++b) {
        if ((mask >> b) & 1) {
          ref[(wa + b) % kBytes] = data[b];
          known[(wa + b) % kBytes] = true;
        }
      }
    }
  }
  chk.expect(!sim.assertion_failed(), "SystemVerilog assertion failed");
  return report("rtl_spad", argv[0], opt, chk.checked, chk.errors);
}
