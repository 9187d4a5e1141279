# Classic Vitis HLS Tcl flow for one loom HLS kernel (Vitis HLS 2022.2 and
# later): C simulation, C synthesis, C/RTL co-simulation and export of a
# Vitis kernel (.xo). Run from hls/:
#   vitis_hls -f run_hls.tcl -tclargs <gemm|conv|pool|eltwise> [csim|csynth|cosim|export|all] [build_dir]
# build_dir is a CMake build of the loom host libraries that the testbench
# links (default ../build/ci).
set kernel [lindex $argv 0]
set step [expr {[llength $argv] > 1 ? [lindex $argv 1] : "all"}]
set build [expr {[llength $argv] > 2 ? [lindex $argv 2] : "../build/ci"}]
if {[lsearch -exact {gemm conv pool eltwise} $kernel] < 0} {
  puts stderr "run_hls.tcl: unknown kernel '$kernel' (expected gemm, conv, pool or eltwise)"
  exit 1
}
if {[lsearch -exact {csim csynth cosim export all} $step] < 0} {
  puts stderr "run_hls.tcl: unknown step '$step' (expected csim, csynth, cosim, export or all)"
  exit 1
}
set top loom_hls_$kernel
set part xcu55c-fsvh2892-2L-e
# 300 MHz, the Alveo platforms' default kernel clock.
set period 3.333
set tb_cflags "-std=c++20 -Iinclude -Icommon -I../host -I../host/spec -I$kernel"
set ldflags "-L$build/host/backends/ref -L$build/host/ir -L$build/host/common -lloom_backend_ref -lloom_ir -lloom_common -lonnx_proto -lprotobuf"

open_project -reset vitis_$kernel
set_top $top
add_files $kernel/$top.cc -cflags "-Iinclude"
add_files -tb $kernel/tb_$kernel.cc -cflags $tb_cflags
open_solution -reset -flow_target vitis u55c
set_part $part
create_clock -period $period -name default

if {$step eq "csim" || $step eq "all"} { csim_design -ldflags $ldflags }
if {$step eq "csynth" || $step eq "cosim" || $step eq "export" || $step eq "all"} { csynth_design }
if {$step eq "cosim" || $step eq "all"} { cosim_design -ldflags $ldflags -rtl verilog }
if {$step eq "export" || $step eq "all"} { export_design -format xo -output $top.xo }
exit 0
