// Registers the backends built into this binary with the runtime's registry.
#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "cli/cli_common.h"
#include "runtime/device.h"

namespace loom::cli {

void register_builtin_backends() {
  runtime::register_backend("ref", "golden functional model: bit-exact reference, no timing",
                            [](const spec::HwConfig& cfg) { return ref::make_ref_device(cfg); });
  runtime::register_backend("rtl", "Verilated loom_fabric with AXI4 memory models: cycle-accurate, slow",
                            [](const spec::HwConfig& cfg) { return rtl::make_rtl_device(cfg); });
}

}  // namespace loom::cli
