## Vivado-flow constraints for the loom RTL kernel on the Kria KV260 (K26 SOM,
## xck26-sfvc784-2LV-c), configuration `tiny` (loom_top_tiny: 1 x 64-bit
## memory port, 250 MHz), in a Vivado block design without a Vitis platform.
##
## PS-PL wiring of the block design (Zynq UltraScale+ MPSoC IP, zynq_ultra_ps_e):
##   pl_clk0 (250 MHz; set in the PS IP's clock configuration) -> loom ap_clk,
##     the SmartConnects and proc_sys_reset's slowest_sync_clk
##   pl_resetn0 -> proc_sys_reset ext_reset_in; its peripheral_aresetn -> ap_rst_n
##     (loom_top synchronizes it again: a two-flop release)
##   M_AXI_HPM0_FPD -> AXI SmartConnect -> s_axi_control (12-bit address, 4 KiB
##     segment; the register map is docs/spec/regs.md)
##   m_axi_gmem0 -> AXI SmartConnect -> S_AXI_HP0_FPD (PS DDR; 64-bit data, so
##     set the HP0 port width to 64 in the PS IP; 49-bit addresses: loom drives
##     48 and ties the rest to zero)
##   interrupt (level, active high) -> pl_ps_irq0[0]
##   Address editor: s_axi_control at 0x00_A000_0000 (HPM0_FPD range); the
##   kernel's master sees the PS DDR at 0x0 (HP0 "DDR_LOW") and
##   0x8_0000_0000 ("DDR_HIGH"); program WIN_BASE/WIN_LIMIT with those.
##
## Clocks: pl_clk0 is created by the PS IP's own constraints, so this file
## defines no clock. Out-of-context synthesis of the kernel alone
## (loom_top_tiny as top, USED_IN out_of_context) takes kv260_kernel_ooc.xdc.

## Carrier-board fan: fan_en_b on package pin A12 (3.3 V bank). Drive it
## from the design (a constant port fan_en_b) so the fan runs at full speed
## while the PL is busy.
set_property PACKAGE_PIN A12 [get_ports -quiet fan_en_b]
set_property IOSTANDARD LVCMOS33 [get_ports -quiet fan_en_b]
set_property SLEW SLOW [get_ports -quiet fan_en_b]
set_property DRIVE 4 [get_ports -quiet fan_en_b]

set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]
