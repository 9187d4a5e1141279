// Implementation-choice enums for loom RTL modules (not part of the spec contract).
package loom_rtl_pkg;

  // Which FPGA memory primitive a scratchpad RAM should map onto.
  typedef enum logic [1:0] {
    RamAuto  = 2'd0,  // let synthesis choose by size
    RamBlock = 2'd1,  // RAMB36E2 / RAMB18E2
    RamUltra = 2'd2   // URAM288 (UltraScale+; Yosys needs synth_xilinx -uram)
  } ram_style_e;

endpackage : loom_rtl_pkg
