// The `tlm` backend's public entry point: a SystemC/TLM-2.0 virtual platform of
// the fabric behind runtime::Device, functionally the golden model, timed by
// an approximate model of the RTL's units and memory ports.
#pragma once

#include <memory>

#include "common/status.h"
#include "loom/spec_gen.h"
#include "memory/mem_channel.h"
#include "device/device.h"

namespace loom::tlm {

/// Builds a tlm device for `cfg`. SystemC elaborates once per process, so all
/// devices share one platform (sized for spec::kMaxCores cores) that is reset
/// and reconfigured for each new device; only one tlm device may be alive at a
/// time in a process (a second one fails with a one-line error).
/// Device options: mem_faults (address ranges only), mem_stall, seed
/// (FaultPlan::from_options; a malformed value fails with one line).
Expected<std::unique_ptr<runtime::Device>> make_tlm_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& opt = {});

/// Replaces the faults of a live tlm device: `plan`'s address ranges in its
/// device memory, its stalls in the memory channel. Burst-number faults are
/// refused: the golden model moves an instruction's data before its bursts
/// are timed, so a burst cannot fail on its own (cosim supports them).
Status set_faults(runtime::Device& dev, const FaultPlan& plan);

}  // namespace loom::tlm
