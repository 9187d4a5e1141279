// Test stand-in for loom_spad: byte-addressed memory with the contract's one-cycle read.
/* verilator lint_off UNUSEDSIGNAL */
module loom_spad #(
  parameter int unsigned Bytes = 16384,
  parameter int unsigned SpW   = 16,
  localparam int unsigned SpAddrW = $clog2(Bytes)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               rd_req_i,
  input  logic [SpAddrW-1:0] rd_addr_i,
  output logic               rd_valid_o,
  output logic [SpW*8-1:0]   rd_data_o,
  input  logic               wr_req_i,
  input  logic [SpAddrW-1:0] wr_addr_i,
  input  logic [SpW*8-1:0]   wr_data_i,
  input  logic [SpW-1:0]     wr_mask_i
);
  logic [7:0] mem [Bytes];
  always_ff @(posedge clk_i) begin
    rd_valid_o <= rd_req_i;
    if (rd_req_i)
      for (int b = 0; b < int'(SpW); b++) rd_data_o[8*b +: 8] <= mem[SpAddrW'(rd_addr_i + SpAddrW'(b))];
    if (wr_req_i)
      for (int b = 0; b < int'(SpW); b++)
        if (wr_mask_i[b]) mem[SpAddrW'(wr_addr_i + SpAddrW'(b))] <= wr_data_i[8*b +: 8];
  end
endmodule
