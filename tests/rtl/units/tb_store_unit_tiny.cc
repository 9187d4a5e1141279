// loom_store_unit testbench, tiny configuration (parameters from the LOOM_* definitions in CMakeLists.txt).
#include "store_unit_tb.inc"
