# SLR floorplanning hook of the loom Vitis flow: run by Vivado before
# opt_design of the v++ link (the Makefile passes it as
# run.impl_1.STEPS.OPT_DESIGN.TCL.PRE on multi-SLR boards). Places the loom
# kernel instance, and so all its cores, in one SLR given by the LOOM_SLR
# environment variable (SLR0, SLR1, ...): the same SLR as the memory it
# uses, as the link config's slr= asks, but enforced as a pblock so that
# placement cannot spread the cores over an SLR crossing.
# LOOM_PBLOCK_CELLS may name a cell pattern (default: */loom_top_*_1).
if {![info exists ::env(LOOM_SLR)]} {
  puts "loom slr_pblock: LOOM_SLR not set; no pblock"
  return
}
set slr $::env(LOOM_SLR)
set pattern [expr {[info exists ::env(LOOM_PBLOCK_CELLS)] ? $::env(LOOM_PBLOCK_CELLS) : "*/loom_top_*_1"}]
set cells [get_cells -hierarchical -quiet -filter "NAME =~ $pattern"]
if {[llength $cells] == 0} {
  error "loom slr_pblock: no cell matches '$pattern'"
}
if {[llength [get_slrs -quiet $slr]] == 0} {
  error "loom slr_pblock: this device has no $slr (SLRs: [get_slrs])"
}
set pb [create_pblock pblock_loom_kernel]
resize_pblock $pb -add [get_slrs $slr]
add_cells_to_pblock $pb $cells
set_property IS_SOFT FALSE $pb
puts "loom slr_pblock: [llength $cells] cell(s) matching '$pattern' constrained to $slr"
