// Testbench for loom_sp_ram: random reads and writes against a C++ array, checking the registered read-first port.
#include <vector>

#include "Vloom_sp_ram.h"
#include "rtl_harness.h"

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240604);
  print_seed("rtl_sp_ram", opt);
  std::mt19937_64 rng(opt.seed);
  constexpr int kDepth = 256;  // matches -GDepth in CMakeLists.txt

  Sim<Vloom_sp_ram> sim(argc, argv, opt);
  sim->req_i = 0;
  sim->we_i = 0;
  sim.reset();

  std::vector<uint32_t> ref(kDepth, 0);
  std::vector<bool> known(kDepth, false);
  std::uniform_int_distribution<int> addr(0, kDepth - 1);
  std::bernoulli_distribution req(0.8), write(0.4);
  bool pending = false;
  uint32_t pending_val = 0;
  uint64_t checked = 0, errors = 0;
  for (int cyc = 0; cyc < 20000; ++cyc) {
    const bool r = req(rng);
    const bool w = r && write(rng);
    const int a = addr(rng);
    const uint32_t d = uint32_t(rng());
    sim->req_i = r;
    sim->we_i = w;
    sim->addr_i = a;
    sim->wdata_i = d;
    sim.tick();
    // After the edge, rdata shows the last access (read-first), and holds while idle.
    if (r) {
      pending = known[size_t(a)];
      pending_val = ref[size_t(a)];  // read-first: old contents
      if (w) {
        ref[size_t(a)] = d;
        known[size_t(a)] = true;
      }
    }
    if (pending) {
      ++checked;
      if (sim->rdata_o != pending_val && errors++ < 10) {
        std::printf("cycle %d: read got %08x want %08x\n", cyc, sim->rdata_o, pending_val);
      }
    }
  }
  return report("rtl_sp_ram", argv[0], opt, checked, errors);
}
