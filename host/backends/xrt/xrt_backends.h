// The two builds of the xrt backend (one source, host/backends/xrt/xrt_device.cc):
//   xrt_hw   against Debian's libxrt-dev, for a card   (backend "xrt")
//   xrt_emu  against the in-project emulation (emu/),  (backend "xrt-emu")
// Each build defines its factories in its own namespace.
#pragma once

#include <memory>
#include <string>

#include "backends/xrt/bringup.h"
#include "common/status.h"
#include "device/device.h"

#define LOOM_XRT_DECLARE_FACTORIES(ns)                                                               \
  namespace loom::ns {                                                                               \
  /* The registry's factory: card device_index (default 0), the xclbin (default: the build's,        \
     if any), opened, loaded and checked against `cfg`. */                                           \
  Expected<std::unique_ptr<runtime::Device>> make_device(const spec::HwConfig& cfg,                  \
                                                         const runtime::DeviceOptions& opt = {});    \
  /* Bringup's step-by-step view, with the same options and defaults as make_device. */              \
  Expected<std::unique_ptr<bringup::Target>> make_bringup_target(const spec::HwConfig& cfg,          \
                                                                 const runtime::DeviceOptions& opt); \
  }

LOOM_XRT_DECLARE_FACTORIES(xrt_hw)
LOOM_XRT_DECLARE_FACTORIES(xrt_emu)
