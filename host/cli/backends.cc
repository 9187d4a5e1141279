// Registers the backends built into this binary with the runtime's registry.
#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#ifdef LOOM_HAVE_TLM
#include "tlm/tlm_device.h"
#endif
#ifdef LOOM_HAVE_COSIM
#include "cosim/cosim_device.h"
#endif
#if defined(LOOM_HAVE_XRT) || defined(LOOM_HAVE_XRT_EMU)
#include "backends/xrt/xrt_backends.h"
#endif
#include "cli/cli_common.h"
#include "device/device.h"

namespace loom::cli {

void register_builtin_backends() {
  runtime::register_backend("ref", "golden functional model: bit-exact reference, no timing", ref::make_ref_device);
  runtime::register_backend(
      "rtl", "Verilated loom_fabric with AXI4 memory models: cycle-accurate, slow",
      [](const spec::HwConfig& cfg, const runtime::DeviceOptions& o) { return rtl::make_rtl_device(cfg, o); });
#ifdef LOOM_HAVE_TLM
  runtime::register_backend("tlm", "SystemC/TLM-2.0 virtual platform: bit-exact, approximate cycles, fast",
                            tlm::make_tlm_device);
#endif
#ifdef LOOM_HAVE_COSIM
  runtime::register_backend(
      "cosim", "Verilated loom_fabric in the SystemC platform (AXI<->TLM bridges): cycle-accurate",
      [](const spec::HwConfig& cfg, const runtime::DeviceOptions& o) { return cosim::make_cosim_device(cfg, o); });
#endif
#ifdef LOOM_HAVE_XRT
  runtime::register_backend("xrt", "an Alveo/Kria card through XRT (--xclbin, --device)", xrt_hw::make_device);
#else
  runtime::register_backend(
      "xrt", "not built: " LOOM_XRT_MISSING_REASON,
      [](const spec::HwConfig&, const runtime::DeviceOptions&) -> Expected<std::unique_ptr<runtime::Device> > {
        return make_error("xrt", "not built into this loom: " LOOM_XRT_MISSING_REASON);
      });
#endif
#ifdef LOOM_HAVE_XRT_EMU
  runtime::register_backend("xrt-emu", "the xrt backend on the XRT emulation over the Verilated fabric",
                            xrt_emu::make_device);
#endif
}

}  // namespace loom::cli
