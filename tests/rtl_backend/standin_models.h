// The stand-in loom_fabric models verilated for the rtl backend's own tests.
#pragma once

#include <memory>
#include <string_view>

#include "hw/verilated/fabric_sim.h"

namespace loom::rtl::test {

/// The stand-in verilated with the parameters of configuration `cfg` ("tiny"
/// or "small"); nullptr for any other name.
std::unique_ptr<hw::FabricSim> make_standin(std::string_view cfg, bool tracing);

}  // namespace loom::rtl::test
