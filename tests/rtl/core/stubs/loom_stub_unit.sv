// Behavioural stand-in for a loom unit (test only): follows the unit contract with a programmable latency.
//
// Test-only meaning of instruction bits (the real units decode the ISA):
//   insn[47:32]   cycles spent executing
//   insn[255]     raise an error at accept, cause bits insn[254:248]
//   insn[119:112] for load/store: beats of one AXI burst at insn[64+:48]
// Kind: 0 load (AR/R), 1 compute, 2 store (AW/W/B).
/* verilator lint_off UNUSEDSIGNAL */
module loom_stub_unit #(
  parameter int unsigned Kind     = 1,
  parameter int unsigned AddrW    = 48,
  parameter int unsigned MemBytes = 8,
  localparam int unsigned NumErrCauses = loom_pkg::NumErrCauses
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    flush_i,
  input  logic                    halt_i,
  input  logic                    insn_valid_i,
  output logic                    insn_ready_o,
  input  logic [255:0]            insn_i,
  input  logic [15:0]             pc_i,
  input  logic                    tok_prev_avail_i,
  input  logic                    tok_next_avail_i,
  output logic                    tok_prev_pop_o,
  output logic                    tok_next_pop_o,
  output logic                    tok_prev_push_o,
  output logic                    tok_next_push_o,
  output logic                    busy_o,
  output logic                    retire_o,
  output logic                    err_o,
  output logic [NumErrCauses-1:0] err_cause_o,
  output logic [15:0]             err_pc_o,
  output logic [31:0]             macs_inc_o,
  output logic [31:0]             rd_bytes_inc_o,
  output logic [31:0]             wr_bytes_inc_o,
  output logic                    active_o,
  output logic                    stall_mem_o,
  output logic                    stall_dep_o,
  output logic                    m_axi_arvalid,
  input  logic                    m_axi_arready,
  output logic [AddrW-1:0]        m_axi_araddr,
  output logic [7:0]              m_axi_arlen,
  output logic [2:0]              m_axi_arsize,
  output logic [1:0]              m_axi_arburst,
  input  logic                    m_axi_rvalid,
  output logic                    m_axi_rready,
  input  logic [1:0]              m_axi_rresp,
  input  logic                    m_axi_rlast,
  output logic                    m_axi_awvalid,
  input  logic                    m_axi_awready,
  output logic [AddrW-1:0]        m_axi_awaddr,
  output logic [7:0]              m_axi_awlen,
  output logic [2:0]              m_axi_awsize,
  output logic [1:0]              m_axi_awburst,
  output logic                    m_axi_wvalid,
  input  logic                    m_axi_wready,
  output logic [MemBytes*8-1:0]   m_axi_wdata,
  output logic [MemBytes-1:0]     m_axi_wstrb,
  output logic                    m_axi_wlast,
  input  logic                    m_axi_bvalid,
  output logic                    m_axi_bready,
  input  logic [1:0]              m_axi_bresp
);
  typedef enum logic [3:0] {
    StIdle, StCheck, StPopPrev, StPopNext, StExec, StAddr, StData, StResp, StRetire, StFault, StDrain
  } st_e;

  st_e st_q;
  logic [255:0] insn_q;
  logic [15:0] pc_q, cnt_q;
  logic [7:0] beats_q;
  logic [1:0] resp_q;

  logic pop_prev, pop_next, push_prev, push_next;
  assign pop_prev  = insn_q[6];
  assign pop_next  = insn_q[7];
  assign push_prev = insn_q[8];
  assign push_next = insn_q[9];

  logic [7:0] nbeats;
  assign nbeats = insn_q[119:112];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q <= StIdle;
      insn_q <= '0;
      pc_q <= '0;
      cnt_q <= '0;
      beats_q <= '0;
      resp_q <= '0;
    end else if (flush_i) begin
      st_q <= StIdle;
    end else begin
      unique case (st_q)
        StIdle: if (insn_valid_i) begin
          insn_q <= insn_i;
          pc_q <= pc_i;
          st_q <= StCheck;
        end
        StCheck: st_q <= insn_q[255] ? StFault : StPopPrev;
        StPopPrev: if (!pop_prev || tok_prev_avail_i) st_q <= StPopNext;
        StPopNext: if (!pop_next || tok_next_avail_i) begin
          cnt_q <= insn_q[47:32];
          resp_q <= '0;
          st_q <= (Kind != 1 && nbeats != 0) ? StAddr : StExec;
        end
        StAddr: if ((Kind == 0 && m_axi_arready) || (Kind == 2 && m_axi_awready)) begin
          beats_q <= nbeats;
          st_q <= StData;
        end
        StData: begin
          if (Kind == 0 && m_axi_rvalid) begin
            if (m_axi_rresp[1]) resp_q <= m_axi_rresp;
            if (m_axi_rlast) st_q <= StResp;
          end
          if (Kind == 2 && m_axi_wready) begin
            beats_q <= beats_q - 8'd1;
            if (beats_q == 8'd1) st_q <= StResp;
          end
        end
        StResp: begin
          if (Kind == 0) st_q <= resp_q[1] ? StFault : StExec;
          if (Kind == 2 && m_axi_bvalid) begin
            resp_q <= m_axi_bresp;
            st_q <= m_axi_bresp[1] ? StFault : StExec;
          end
        end
        StExec: if (cnt_q == 0) st_q <= StRetire; else cnt_q <= cnt_q - 16'd1;
        StRetire: st_q <= StIdle;
        StFault: st_q <= StDrain;
        StDrain: if (halt_i) st_q <= StIdle;
        default: st_q <= StIdle;
      endcase
      // Halt abandons the instruction, except an AXI burst which must finish.
      if (halt_i && st_q != StData && st_q != StAddr && st_q != StResp) st_q <= StIdle;
    end
  end

  assign insn_ready_o    = (st_q == StIdle) && !halt_i;
  assign busy_o          = (st_q != StIdle);
  assign tok_prev_pop_o  = (st_q == StPopPrev) && pop_prev && tok_prev_avail_i && !halt_i;
  assign tok_next_pop_o  = (st_q == StPopNext) && pop_next && tok_next_avail_i && !halt_i;
  assign retire_o        = (st_q == StRetire) && !halt_i;
  assign tok_prev_push_o = retire_o && push_prev;
  assign tok_next_push_o = retire_o && push_next;
  assign err_o           = (st_q == StFault);
  always_comb begin
    err_cause_o = '0;
    if (resp_q[1]) err_cause_o[resp_q[0] ? loom_pkg::ERR_AXI_DECERR : loom_pkg::ERR_AXI_SLVERR] = 1'b1;
    else err_cause_o = insn_q[248 +: NumErrCauses];
  end
  assign err_pc_o        = pc_q;
  assign macs_inc_o      = (Kind == 1 && st_q == StExec) ? 32'd1 : 32'd0;
  assign active_o        = (Kind == 1 && st_q == StExec);
  assign rd_bytes_inc_o  = (Kind == 0 && st_q == StData && m_axi_rvalid) ? MemBytes : 0;
  assign wr_bytes_inc_o  = (Kind == 2 && st_q == StData && m_axi_wready) ? MemBytes : 0;
  assign stall_mem_o     = (st_q == StAddr) || (st_q == StData) || (st_q == StResp);
  assign stall_dep_o     = (st_q == StPopPrev && pop_prev && !tok_prev_avail_i) ||
                           (st_q == StPopNext && pop_next && !tok_next_avail_i);

  assign m_axi_arvalid = (Kind == 0) && (st_q == StAddr);
  assign m_axi_araddr  = insn_q[64 +: AddrW];
  assign m_axi_arlen   = nbeats - 8'd1;
  assign m_axi_arsize  = 3'($clog2(MemBytes));
  assign m_axi_arburst = 2'b01;
  assign m_axi_rready  = (Kind == 0) && (st_q == StData);
  assign m_axi_awvalid = (Kind == 2) && (st_q == StAddr);
  assign m_axi_awaddr  = insn_q[64 +: AddrW];
  assign m_axi_awlen   = nbeats - 8'd1;
  assign m_axi_awsize  = 3'($clog2(MemBytes));
  assign m_axi_awburst = 2'b01;
  assign m_axi_wvalid  = (Kind == 2) && (st_q == StData);
  assign m_axi_wdata   = {(MemBytes / 2){pc_q}};
  assign m_axi_wstrb   = '1;
  assign m_axi_wlast   = (beats_q == 8'd1);
  assign m_axi_bready  = (Kind == 2) && (st_q == StResp);
endmodule
