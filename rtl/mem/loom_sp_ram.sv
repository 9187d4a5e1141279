// Single-port scratchpad RAM with a registered read, written so Yosys and Vivado infer BRAM/URAM.
//
// One access per cycle: a write (we_i) or a read whose data appears on
// rdata_o the next cycle (read-first: a write returns the old word). The
// storage is a plain `logic [Width-1:0] mem [Depth]` with no reset, which is
// what RAMB36E2/URAM288 inference needs (a reset-free memory is a deliberate
// FPGA exception to the reset-everything rule). RamStyle selects the
// ram_style hint; each choice is its own generate branch because attribute
// values must be literals for Yosys.
`include "loom_assert.svh"

module loom_sp_ram #(
  parameter int unsigned              Width    = 64,
  parameter int unsigned              Depth    = 1024,
  parameter loom_rtl_pkg::ram_style_e RamStyle = loom_rtl_pkg::RamAuto,
  localparam int unsigned             AddrW    = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic             clk_i,
  input  logic             req_i,
  input  logic             we_i,
  input  logic [AddrW-1:0] addr_i,
  input  logic [Width-1:0] wdata_i,
  output logic [Width-1:0] rdata_o
);

  logic [Width-1:0] rdata_q;

  // The memory write sits inside always_ff with its enable: this is the RAM
  // inference template, and the one exception to `x_q <= x_d` in loom RTL.
  if (RamStyle == loom_rtl_pkg::RamUltra) begin : g_ultra
    (* ram_style = "ultra" *) logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (req_i) begin
        if (we_i) begin
          mem[addr_i] <= wdata_i;
        end
        rdata_q <= mem[addr_i];
      end
    end
  end else if (RamStyle == loom_rtl_pkg::RamBlock) begin : g_block
    (* ram_style = "block" *) logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (req_i) begin
        if (we_i) begin
          mem[addr_i] <= wdata_i;
        end
        rdata_q <= mem[addr_i];
      end
    end
  end else begin : g_auto
    logic [Width-1:0] mem [Depth];
    always_ff @(posedge clk_i) begin
      if (req_i) begin
        if (we_i) begin
          mem[addr_i] <= wdata_i;
        end
        rdata_q <= mem[addr_i];
      end
    end
  end

  assign rdata_o = rdata_q;

  `LOOM_ASSERT_INIT(DepthLegal_A, Depth >= 2)
  `LOOM_ASSERT_INIT(WidthLegal_A, Width >= 1)

endmodule
