// Registers the backends built into this binary with the runtime's registry.
#include "backends/ref/ref_device.h"
#include "cli/cli_common.h"
#include "runtime/device.h"

namespace loom::cli {

void register_builtin_backends() {
  runtime::register_backend("ref", "golden functional model: bit-exact reference, no timing",
                            [](const spec::HwConfig& cfg) { return ref::make_ref_device(cfg); });
}

}  // namespace loom::cli
