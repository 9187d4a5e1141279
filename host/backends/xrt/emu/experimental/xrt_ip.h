// xrt-emu mirror of XRT's <experimental/xrt_ip.h>: see loom_xrt_emu.h.
#pragma once
#include "loom_xrt_emu.h"
