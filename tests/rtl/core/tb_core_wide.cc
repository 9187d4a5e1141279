// Testbench for loom_core with 64-byte AXI beats (two instructions per beat): the same scenarios as tb_core.cc.
#include "tb_core.cc"
