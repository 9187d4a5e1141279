// loom_compute_unit at the tiny configuration (4x4 array, 16-byte scratchpad ports) against the golden model.
#include "Vloom_compute_unit.h"
#include "compute_unit_tb.h"

int main(int argc, char** argv) {
  const loom::rtltest::compute::TbConfig tc{"rtl_compute_tiny", "tiny", 16, 300, 20240715};
  return loom::rtltest::compute::run_compute_tb<Vloom_compute_unit>(argc, argv, tc);
}
