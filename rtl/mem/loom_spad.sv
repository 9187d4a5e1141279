// Byte-addressed two-bank scratchpad: any SpW-byte window at any byte address in one access.
//
// Storage is two banks of SpW-byte words, even word addresses in bank 0 and
// odd ones in bank 1. A window starting at byte a covers word w = a / SpW from
// byte a % SpW on and the first a % SpW bytes of word w + 1; the two words are
// always in different banks, so each bank sees one access per port and cycle.
// Writes rotate data and byte mask into the two words; reads fetch both words
// and rotate the pair back by the registered offset (read data one cycle after
// the request, held while idle). Addresses past the end wrap to the start
// (the units check bounds before they access). Reading a word in the cycle it
// is written returns the old contents in simulation; the FPGA primitives do
// not all promise that, so controllers must not rely on it.
//
// Each bank is a reset-free `logic [SpW*8-1:0] mem [Depth]` with per-byte
// write enables, written in the RAM inference template (the one exception to
// `x_q <= x_d` in loom RTL, as in loom_dp_ram).
`include "loom_assert.svh"

module loom_spad #(
  parameter int unsigned              Bytes    = 16384,
  parameter int unsigned              SpW      = 16,
  parameter loom_rtl_pkg::ram_style_e RamStyle = loom_rtl_pkg::RamAuto,
  localparam int unsigned             SpAddrW  = $clog2(Bytes)
) (
  input  logic               clk_i,
  input  logic               rst_ni,

  // Read: data for a request arrives the next cycle.
  input  logic               rd_req_i,
  input  logic [SpAddrW-1:0] rd_addr_i,   // byte address
  output logic               rd_valid_o,  // rd_req_i delayed by one cycle
  output logic [SpW*8-1:0]   rd_data_o,   // byte b = mem[rd_addr + b]

  // Write.
  input  logic               wr_req_i,
  input  logic [SpAddrW-1:0] wr_addr_i,   // byte address
  input  logic [SpW*8-1:0]   wr_data_i,   // byte b goes to mem[wr_addr + b]
  input  logic [SpW-1:0]     wr_mask_i    // byte enables (bit b for byte b)
);

  localparam int unsigned OffW   = (SpW > 1) ? $clog2(SpW) : 1;
  localparam int unsigned Words  = Bytes / SpW;
  localparam int unsigned Depth  = Words / 2;
  localparam int unsigned RowW   = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned WordW  = SpAddrW - OffW;
  localparam int unsigned DataW  = SpW * 8;

  // ---------------------------------------------------------------------------
  // Address split: word w, offset o; bank 0 holds word (w even ? w : w + 1),
  // bank 1 holds word (w odd ? w : w + 1), both at row word / 2.
  // ---------------------------------------------------------------------------
  logic [WordW-1:0] rd_word, wr_word;
  logic [OffW-1:0]  rd_off, wr_off;
  logic [RowW-1:0]  rd_row0, rd_row1, wr_row0, wr_row1;

  assign rd_word = rd_addr_i[SpAddrW-1:OffW];
  assign rd_off  = rd_addr_i[OffW-1:0];
  assign wr_word = wr_addr_i[SpAddrW-1:OffW];
  assign wr_off  = wr_addr_i[OffW-1:0];
  // Bank 0 row = (w + 1) / 2 (wrapping past the end), bank 1 row = w / 2.
  assign rd_row0 = rd_word[WordW-1:1] + RowW'(rd_word[0]);
  assign rd_row1 = rd_word[WordW-1:1];
  assign wr_row0 = wr_word[WordW-1:1] + RowW'(wr_word[0]);
  assign wr_row1 = wr_word[WordW-1:1];

  // ---------------------------------------------------------------------------
  // Write rotation: byte b of the window lands at byte o + b of the word pair
  // {word w + 1, word w}.
  // ---------------------------------------------------------------------------
  logic [2*SpW*8-1:0] wr_pair_data;
  logic [2*SpW-1:0]   wr_pair_mask;
  logic [SpW*8-1:0]   wr_lo_data, wr_hi_data, bank_wdata [2];
  logic [SpW-1:0]     wr_lo_mask, wr_hi_mask, bank_we [2];
  logic [RowW-1:0]    bank_wrow [2], bank_rrow [2];

  assign wr_pair_data = {{(SpW*8){1'b0}}, wr_data_i} << {wr_off, 3'b000};
  assign wr_pair_mask = {{SpW{1'b0}}, wr_mask_i} << wr_off;
  assign wr_lo_data   = wr_pair_data[SpW*8-1:0];
  assign wr_hi_data   = wr_pair_data[2*SpW*8-1:SpW*8];
  assign wr_lo_mask   = wr_req_i ? wr_pair_mask[SpW-1:0] : '0;
  assign wr_hi_mask   = wr_req_i ? wr_pair_mask[2*SpW-1:SpW] : '0;

  // Word w goes to bank w[0], word w + 1 to the other bank.
  assign bank_wdata[0] = wr_word[0] ? wr_hi_data : wr_lo_data;
  assign bank_wdata[1] = wr_word[0] ? wr_lo_data : wr_hi_data;
  assign bank_we[0]    = wr_word[0] ? wr_hi_mask : wr_lo_mask;
  assign bank_we[1]    = wr_word[0] ? wr_lo_mask : wr_hi_mask;
  assign bank_wrow[0]  = wr_row0;
  assign bank_wrow[1]  = wr_row1;
  assign bank_rrow[0]  = rd_row0;
  assign bank_rrow[1]  = rd_row1;

  // ---------------------------------------------------------------------------
  // Banks.
  // ---------------------------------------------------------------------------
  logic [SpW*8-1:0] bank_rdata [2];

  for (genvar k = 0; k < 2; k++) begin : g_bank
    logic [SpW*8-1:0] rdata_q;
    if (RamStyle == loom_rtl_pkg::RamUltra) begin : g_ultra
      (* ram_style = "ultra" *) logic [SpW*8-1:0] mem [Depth];
      always_ff @(posedge clk_i) begin
        for (int unsigned b = 0; b < SpW; b++) begin
          if (bank_we[k][b]) begin
            mem[bank_wrow[k]][b*8 +: 8] <= bank_wdata[k][b*8 +: 8];
          end
        end
        if (rd_req_i) begin
          rdata_q <= mem[bank_rrow[k]];
        end
      end
    end else if (RamStyle == loom_rtl_pkg::RamBlock) begin : g_block
      (* ram_style = "block" *) logic [SpW*8-1:0] mem [Depth];
      always_ff @(posedge clk_i) begin
        for (int unsigned b = 0; b < SpW; b++) begin
          if (bank_we[k][b]) begin
            mem[bank_wrow[k]][b*8 +: 8] <= bank_wdata[k][b*8 +: 8];
          end
        end
        if (rd_req_i) begin
          rdata_q <= mem[bank_rrow[k]];
        end
      end
    end else begin : g_auto
      logic [SpW*8-1:0] mem [Depth];
      always_ff @(posedge clk_i) begin
        for (int unsigned b = 0; b < SpW; b++) begin
          if (bank_we[k][b]) begin
            mem[bank_wrow[k]][b*8 +: 8] <= bank_wdata[k][b*8 +: 8];
          end
        end
        if (rd_req_i) begin
          rdata_q <= mem[bank_rrow[k]];
        end
      end
    end
    assign bank_rdata[k] = rdata_q;
  end

  // ---------------------------------------------------------------------------
  // Read rotation, on the offset and bank order registered with the request.
  // ---------------------------------------------------------------------------
  logic [OffW-1:0]    rd_off_d, rd_off_q;
  logic               rd_odd_d, rd_odd_q;
  logic               rd_valid_d, rd_valid_q;
  logic [2*SpW*8-1:0] rd_pair;

  always_comb begin
    rd_off_d   = rd_off_q;
    rd_odd_d   = rd_odd_q;
    rd_valid_d = rd_req_i;
    if (rd_req_i) begin
      rd_off_d = rd_off;
      rd_odd_d = rd_word[0];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_off_q   <= '0;
      rd_odd_q   <= 1'b0;
      rd_valid_q <= 1'b0;
    end else begin
      rd_off_q   <= rd_off_d;
      rd_odd_q   <= rd_odd_d;
      rd_valid_q <= rd_valid_d;
    end
  end

  assign rd_pair    = rd_odd_q ? {bank_rdata[0], bank_rdata[1]} : {bank_rdata[1], bank_rdata[0]};
  assign rd_data_o  = DataW'(rd_pair >> {rd_off_q, 3'b000});
  assign rd_valid_o = rd_valid_q;

  // Only parameter checks here: a clocked assertion would sample rst_ni, which
  // the lint waiver for that pattern covers only under rtl/core/.
  `LOOM_ASSERT_INIT(SpWPow2_A, SpW >= 1 && (SpW & (SpW - 1)) == 0)
  `LOOM_ASSERT_INIT(BytesPow2_A, (Bytes & (Bytes - 1)) == 0)
  `LOOM_ASSERT_INIT(TwoWordsPerRow_A, Bytes >= 4 * SpW)

endmodule
