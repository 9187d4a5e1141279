// Simple dual-port scratchpad RAM (one write port, one registered read port, one clock) for BRAM/URAM inference.
//
// Port A writes, port B reads; both may act in the same cycle, so a unit can
// fill a scratchpad while another drains it. Reading the address being
// written in the same cycle returns the old word in simulation; the hardware
// primitives do not all guarantee that, so controllers must not rely on it
// (an assertion flags it). Storage is a reset-free `logic [Width-1:0]
// mem [Depth]`; RamStyle selects the ram_style hint as in loom_sp_ram.
`include "loom_assert.svh"

module loom_dp_ram #(
  parameter int unsigned              Width    = 64,
  parameter int unsigned              Depth    = 1024,
  parameter loom_rtl_pkg::ram_style_e RamStyle = loom_rtl_pkg::RamAuto,
  localparam int unsigned             AddrW    = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,  // only for assertions; the RAM has no reset

  input  logic             wr_en_i,
  input  logic [AddrW-1:0] wr_addr_i,
  input  logic [Width-1:0] wr_data_i,

  input  logic             rd_en_i,
  input  logic [AddrW-1:0] rd_addr_i,
  output logic [Width-1:0] rd_data_o
);

  logic [Width-1:0] rd_data_q;

  // The memory write sits inside always_ff with its enable: this is the RAM
  // inference template, and the one exception to `x_q <= x_d` in loom RTL.
  if (RamStyle == loom_rtl_pkg::RamUltra) begin : g_ultra
    (* ram_style = "ultra" *) logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (wr_en_i) begin
        mem[wr_addr_i] <= wr_data_i;
      end
      if (rd_en_i) begin
        rd_data_q <= mem[rd_addr_i];
      end
    end
  end else if (RamStyle == loom_rtl_pkg::RamBlock) begin : g_block
    (* ram_style = "block" *) logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (wr_en_i) begin
        mem[wr_addr_i] <= wr_data_i;
      end
      if (rd_en_i) begin
        rd_data_q <= mem[rd_addr_i];
      end
    end
  end else begin : g_auto
    logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (wr_en_i) begin
        mem[wr_addr_i] <= wr_data_i;
      end
      if (rd_en_i) begin
        rd_data_q <= mem[rd_addr_i];
      end
    end
  end

  assign rd_data_o = rd_data_q;

  `LOOM_ASSERT_INIT(DepthLegal_A, Depth >= 2)
  `LOOM_ASSERT_INIT(WidthLegal_A, Width >= 1)
  `LOOM_ASSERT(NoReadWriteCollision_A, !(wr_en_i && rd_en_i && wr_addr_i == rd_addr_i))

endmodule
