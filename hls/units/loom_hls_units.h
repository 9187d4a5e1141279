// The HLS kernels as compute units of a loom device: what a unit call
// (runtime::UnitCall) reads and writes, how long it takes by the latency
// model, and its execution as the kernel's C function on device memory.
// Shared by the backends that have units (ref, tlm, xrt-emu).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"
#include "device/device.h"

namespace loom::hls {

/// A kernel as a unit: its top's name, the kind used in the spec's
/// `hls_units` counts, and its signature's shape.
struct KernelInfo {
  std::string_view top;   // "loom_hls_gemm"
  std::string_view kind;  // "gemm"
  unsigned ptrs = 0;      // pointer arguments (first in the signature)
  unsigned scalars = 0;   // int32 scalar arguments after them
};
const std::vector<KernelInfo>& kernels();
/// The kernel of a top name, or nullptr.
const KernelInfo* find_kernel(std::string_view top);
/// Units of `kind` in configuration `cfg` (spec: hls_units).
uint32_t units_of(const spec::HwConfig& cfg, std::string_view kind);

/// One byte range a call reads or writes.
struct Span {
  uint64_t addr = 0, bytes = 0;
  bool write = false;
};

/// Checks the call against `cfg` (kernel known, unit index present, argument
/// count, scalars within int32 and sizes non-negative) and returns the byte
/// ranges it reads and writes, in argument order. Errors name the kernel and
/// the argument.
Expected<std::vector<Span>> footprint(const runtime::UnitCall& call, const spec::HwConfig& cfg);

/// Kernel-clock cycles of the call by include/loom_hls_latency.h.
uint64_t latency_cycles(const runtime::UnitCall& call);

using ReadFn = std::function<Status(uint64_t addr, std::span<uint8_t> out)>;
using WriteFn = std::function<Status(uint64_t addr, std::span<const uint8_t> in)>;

/// Runs the call as the kernel's C function: reads every input range, calls
/// the top, and writes the outputs only when it returned kOk (a non-zero
/// status is an error naming it and nothing is written).
Status run(const runtime::UnitCall& call, const spec::HwConfig& cfg, const ReadFn& read, const WriteFn& write);

}  // namespace loom::hls
