// Stand-in for loom_core with the docs/rtl-core.md port list, so loom_fabric elaborates before the real core exists; test use only.
module loom_core #(
  parameter int unsigned Rows = 4, Cols = 4, InBytes = 16384, WgtBytes = 16384, AccBytes = 16384,
  parameter int unsigned OutBytes = 8192, ParamBytes = 4096, MemBytes = 8, SpW = 16, NumSems = 8,
  parameter int unsigned RingDepth = 256
) (
  input  logic clk_i, input logic rst_ni, input logic flush_i,
  input  logic [47:0] ring_base_i, input logic [15:0] ring_size_i, input logic [15:0] ring_tail_i,
  input  logic doorbell_i, input logic [47:0] win_base_i, input logic [47:0] win_limit_i,
  input  logic [31:0] watchdog_i, input logic ctr_clear_i,
  output logic [15:0] ring_head_o, output logic busy_o, output logic done_o, output logic blocked_o,
  output logic error_o, output logic [loom_pkg::NumErrCauses-1:0] err_cause_o,
  input  logic [loom_pkg::NumErrCauses-1:0] err_clear_i, output logic [15:0] err_pc_o,
  output logic irq_done_o, output logic irq_err_o,
  output logic [loom_pkg::NumCounters*64-1:0] counters_o,
  output logic sem_signal_o, output logic [7:0] sem_id_o, input logic [NumSems*32-1:0] sem_value_i,
  output logic m_axi_arvalid, input logic m_axi_arready, output logic [47:0] m_axi_araddr,
  output logic [7:0] m_axi_arlen, output logic [2:0] m_axi_arsize, output logic [1:0] m_axi_arburst,
  output logic m_axi_arid, input logic m_axi_rvalid, output logic m_axi_rready,
  input  logic [MemBytes*8-1:0] m_axi_rdata, input logic [1:0] m_axi_rresp, input logic m_axi_rlast,
  input  logic m_axi_rid,
  output logic m_axi_awvalid, input logic m_axi_awready, output logic [47:0] m_axi_awaddr,
  output logic [7:0] m_axi_awlen, output logic [2:0] m_axi_awsize, output logic [1:0] m_axi_awburst,
  output logic m_axi_awid, output logic m_axi_wvalid, input logic m_axi_wready,
  output logic [MemBytes*8-1:0] m_axi_wdata, output logic [MemBytes-1:0] m_axi_wstrb, output logic m_axi_wlast,
  input  logic m_axi_bvalid, output logic m_axi_bready, input logic [1:0] m_axi_bresp, input logic m_axi_bid
);
  // Mirrors the doorbell into busy/done so the CSR path is visible; never touches memory.
  logic busy_q;
  logic unused;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) busy_q <= 1'b0;
    else busy_q <= (busy_q | doorbell_i) & ~flush_i;
  end
  assign ring_head_o = ring_tail_i;
  assign busy_o = busy_q;
  assign done_o = 1'b0;
  assign blocked_o = 1'b0;
  assign error_o = 1'b0;
  assign err_cause_o = '0;
  assign err_pc_o = '0;
  assign irq_done_o = doorbell_i;
  assign irq_err_o = 1'b0;
  assign counters_o = '0;
  assign sem_signal_o = doorbell_i;
  assign sem_id_o = 8'(ring_tail_i);
  assign {m_axi_arvalid, m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arid} = '0;
  assign {m_axi_awvalid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awid} = '0;
  assign {m_axi_wvalid, m_axi_wdata, m_axi_wstrb, m_axi_wlast} = '0;
  assign m_axi_rready = 1'b1;
  assign m_axi_bready = 1'b1;
  assign unused = ^{ring_base_i, ring_size_i, win_base_i, win_limit_i, watchdog_i, ctr_clear_i, err_clear_i,
                    sem_value_i, m_axi_arready, m_axi_rvalid, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rid,
                    m_axi_awready, m_axi_wready, m_axi_bvalid, m_axi_bresp, m_axi_bid};
endmodule
