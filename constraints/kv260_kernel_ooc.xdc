## Out-of-context constraints of the loom RTL kernel loom_top_tiny for the
## KV260 (xck26-sfvc784-2LV-c): synthesis and implementation of the kernel
## alone, to check it closes timing at the 250 MHz pl_clk0 it gets in the
## block design (constraints/kv260.xdc). Add with
##   read_xdc -mode out_of_context constraints/kv260_kernel_ooc.xdc
create_clock -period 4.000 -name ap_clk [get_ports ap_clk]

## ap_rst_n enters through loom_top's two-flop synchronizer; in the block
## design it comes from proc_sys_reset on the same clock, OOC it is an input
## port with no known timing.
set_false_path -from [get_ports ap_rst_n]

## AXI ports OOC: assume the interconnect registers them (half a period of
## budget outside the kernel on each side).
set_input_delay -clock ap_clk 2.000 [get_ports -filter {DIRECTION == IN && NAME != ap_clk && NAME != ap_rst_n}]
set_output_delay -clock ap_clk 2.000 [get_ports -filter {DIRECTION == OUT}]
