// Testbench for loom_dp_ram: concurrent random writes and registered reads against a C++ array.
#include <vector>

#include "Vloom_dp_ram.h"
#include "rtl_harness.h"

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240605);
  print_seed("rtl_dp_ram", opt);
  std::mt19937_64 rng(opt.seed);
  constexpr int kDepth = 256;  // matches -GDepth in CMakeLists.txt

  Sim<Vloom_dp_ram> sim(argc, argv, opt);
  sim->wr_en_i = 0;
  sim->rd_en_i = 0;
  sim.reset();

  std::vector<uint32_t> ref(kDepth, 0);
  std::vector<bool> known(kDepth, false);
  std::uniform_int_distribution<int> addr(0, kDepth - 1);
  std::bernoulli_distribution wr(0.5), rd(0.6);
  bool pending = false;
  uint32_t pending_val = 0;
  uint64_t checked = 0, errors = 0;
  for (int cyc = 0; cyc < 20000; ++cyc) {
    const bool w = wr(rng);
    const int wa = addr(rng);
    int ra = addr(rng);
    if (w && ra == wa) ra = (ra + 1) % kDepth;  // same-address collisions are outside the contract
    const bool r = rd(rng);
    const uint32_t d = uint32_t(rng());
    sim->wr_en_i = w;
    sim->wr_addr_i = wa;
    sim->wr_data_i = d;
    sim->rd_en_i = r;
    sim->rd_addr_i = ra;
    sim.tick();
    if (r) {
      pending = known[size_t(ra)];
      pending_val = ref[size_t(ra)];
    }
    if (w) {
      ref[size_t(wa)] = d;
      known[size_t(wa)] = true;
    }
    if (pending) {
      ++checked;
      if (sim->rd_data_o != pending_val && errors++ < 10) {
        std::printf("cycle %d: read got %08x want %08x\n", cyc, sim->rd_data_o, pending_val);
      }
    }
  }
  return report("rtl_dp_ram", argv[0], opt, checked, errors);
}
