// loom_compute_unit at the small configuration (8x8 array, 32-byte scratchpad ports) against the golden model.
#include "Vloom_compute_unit.h"
#include "compute_unit_tb.h"

int main(int argc, char** argv) {
  const loom::rtltest::compute::TbConfig tc{"rtl_compute_small", "small", 32, 250, 20240716};
  return loom::rtltest::compute::run_compute_tb<Vloom_compute_unit>(argc, argv, tc);
}
