// Registers the backends built into this binary with the runtime's registry.
#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#ifdef LOOM_HAVE_TLM
#include "tlm_device.h"
#endif
#include "cli/cli_common.h"
#include "runtime/device.h"

namespace loom::cli {

void register_builtin_backends() {
  runtime::register_backend("ref", "golden functional model: bit-exact reference, no timing",
                            [](const spec::HwConfig& cfg) { return ref::make_ref_device(cfg); });
  runtime::register_backend("rtl", "Verilated loom_fabric with AXI4 memory models: cycle-accurate, slow",
                            [](const spec::HwConfig& cfg) { return rtl::make_rtl_device(cfg); });
#ifdef LOOM_HAVE_TLM
  runtime::register_backend("tlm", "SystemC/TLM-2.0 virtual platform: bit-exact, approximate cycles, fast",
                            [](const spec::HwConfig& cfg) { return tlm::make_tlm_device(cfg); });
#endif
}

}  // namespace loom::cli
