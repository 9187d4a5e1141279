// xrt-emu mirror of XRT's <experimental/xrt_system.h>: see loom_xrt_emu.h.
#pragma once
#include "loom_xrt_emu.h"
