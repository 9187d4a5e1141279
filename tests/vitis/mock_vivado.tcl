# Stand-in for the Vivado Tcl commands scripts/vitis/package_kernel.tcl uses,
# for loom's flow test without Vivado: each command records its arguments in
# LOG; the kernel's AXI masters are the m_axi_gmemN ports of the RTL top.
#   tclsh mock_vivado.tcl SCRIPT LOG TOP_SV SCRIPT_ARGS...
lassign $argv script logpath topsv
set ::argv [lrange $argv 3 end]
set ::argc [llength $::argv]
set ::log [open $logpath w]
set fh [open $topsv]
set ::masters [lsort -unique [regexp -all -inline {m_axi_gmem[0-9]+} [read $fh]]]
close $fh

proc rec {args} { puts $::log [join $args " "]; flush $::log }
proc create_project {args} { rec create_project {*}$args }
proc add_files {args} { rec add_files {*}$args }
proc set_property {args} { rec set_property {*}$args }
proc get_property {prop obj} { if {$prop eq "NAME"} { return $obj } ; return "" }
proc current_fileset {} { return sources_1 }
proc get_files {args} { return {} }
proc update_compile_order {args} {}
proc close_project {args} { rec close_project {*}$args }
proc package_xo {args} { rec package_xo {*}$args }
namespace eval ipx {}
proc ipx::package_project {args} { rec ipx::package_project {*}$args }
proc ipx::unload_core {args} {}
proc ipx::edit_ip_in_project {args} { rec ipx::edit_ip_in_project {*}$args }
proc ipx::current_core {} { return core }
proc ipx::get_user_parameters {args} { return {} }
proc ipx::remove_user_parameter {args} {}
proc ipx::get_bus_interfaces {pattern args} {
  if {$pattern eq "m_axi_gmem*"} { return $::masters }
  if {$pattern eq "interrupt"} { return interrupt }
  return {}
}
proc ipx::associate_bus_interfaces {args} { rec ipx::associate_bus_interfaces {*}$args }
proc ipx::infer_bus_interface {args} { rec ipx::infer_bus_interface {*}$args }
proc ipx::add_bus_parameter {name obj} { rec ipx::add_bus_parameter $name $obj ; return bp_$name }
proc ipx::get_memory_maps {args} { return s_axi_control }
proc ipx::get_address_blocks {args} { return {} }
proc ipx::add_address_block {name map} { rec ipx::add_address_block $name $map ; return $name }
proc ipx::add_register {name block} { rec ipx::add_register $name $block ; return reg_$name }
proc ipx::add_register_parameter {name reg} { return rp_$name }
proc ipx::create_xgui_files {args} {}
proc ipx::update_checksums {args} {}
proc ipx::check_integrity {args} { rec ipx::check_integrity {*}$args }
proc ipx::save_core {args} { rec ipx::save_core {*}$args }

source $script
