// Binds the verilated stand-in fabrics (tiny: one 8-byte port, integer-typed
// pins; small: two 16-byte ports, VlWide pins) to FabricSim.
#include "standin_models.h"

#include "Vstandin_small.h"
#include "Vstandin_tiny.h"
#include "hw/verilated/verilated_fabric.h"

namespace loom::rtl::test {

std::unique_ptr<hw::FabricSim> make_standin(std::string_view cfg, bool tracing) {
  if (cfg == "tiny")
    return std::make_unique<hw::VerilatedFabric<Vstandin_tiny>>(hw::FabricShape{LOOM_TINY_MEM_PORTS, LOOM_TINY_MEM_BYTES},
                                                            tracing);
  if (cfg == "small")
    return std::make_unique<hw::VerilatedFabric<Vstandin_small>>(
        hw::FabricShape{LOOM_SMALL_MEM_PORTS, LOOM_SMALL_MEM_BYTES}, tracing);
  return nullptr;
}

}  // namespace loom::rtl::test
