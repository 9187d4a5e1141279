// loom_load_unit testbench, tiny configuration (parameters from the LOOM_* definitions in CMakeLists.txt).
#include "load_unit_tb.inc"
