// xrt-emu mirror of XRT's <xrt/xrt_kernel.h>: see loom_xrt_emu.h.
#pragma once
#include "loom_xrt_emu.h"
