// Test stand-in for loom_load_unit: the unit contract plus a scratchpad write port and AXI reads.
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off PINCONNECTEMPTY */
module loom_load_unit #(
  parameter int unsigned AddrW = 48, MemBytes = 8, SpW = 16,
  parameter int unsigned InBytes = 16384, WgtBytes = 16384, OutBytes = 8192, ParamBytes = 4096,
  parameter int unsigned MaxOutstanding = 4,
  localparam int unsigned MaxSpBytes01  = (InBytes > WgtBytes) ? InBytes : WgtBytes,
  localparam int unsigned MaxSpBytes23  = (OutBytes > ParamBytes) ? OutBytes : ParamBytes,
  localparam int unsigned MaxSpBytes    = (MaxSpBytes01 > MaxSpBytes23) ? MaxSpBytes01 : MaxSpBytes23,
  localparam int unsigned SpAddrW       = $clog2(MaxSpBytes),
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
  input  logic [AddrW-1:0]        win_base_i,
  input  logic [AddrW-1:0]        win_limit_i,
  output logic                    sp_wr_req_o,
  output logic [2:0]              sp_wr_buf_o,
  output logic [SpAddrW-1:0]      sp_wr_addr_o,
  output logic [SpW*8-1:0]        sp_wr_data_o,
  output logic [SpW-1:0]          sp_wr_mask_o,
  input  logic                    sp_wr_gnt_i,
  output logic                    m_axi_arvalid,
  input  logic                    m_axi_arready,
  output logic [AddrW-1:0]        m_axi_araddr,
  output logic [7:0]              m_axi_arlen,
  output logic [2:0]              m_axi_arsize,
  output logic [1:0]              m_axi_arburst,
  input  logic                    m_axi_rvalid,
  output logic                    m_axi_rready,
  input  logic [MemBytes*8-1:0]   m_axi_rdata,
  input  logic [1:0]              m_axi_rresp,
  input  logic                    m_axi_rlast
);
  // One scratchpad write at retire, so the OUT/IN write muxes see traffic.
  assign sp_wr_req_o  = retire_o;
  assign sp_wr_buf_o  = insn_i[12:10];
  assign sp_wr_addr_o = '0;
  assign sp_wr_data_o = '0;
  assign sp_wr_mask_o = '0;
  loom_stub_unit #(.Kind(0), .AddrW(AddrW), .MemBytes(MemBytes)) u_stub (
    .clk_i(clk_i), .rst_ni(rst_ni), .flush_i(flush_i), .halt_i(halt_i), .insn_valid_i(insn_valid_i), .insn_ready_o(insn_ready_o), .insn_i(insn_i), .pc_i(pc_i),
    .tok_prev_avail_i(tok_prev_avail_i), .tok_next_avail_i(tok_next_avail_i), .tok_prev_pop_o(tok_prev_pop_o), .tok_next_pop_o(tok_next_pop_o), .tok_prev_push_o(tok_prev_push_o),
    .tok_next_push_o(tok_next_push_o), .busy_o(busy_o), .retire_o(retire_o), .err_o(err_o), .err_cause_o(err_cause_o), .err_pc_o(err_pc_o), .macs_inc_o(macs_inc_o),
    .rd_bytes_inc_o(rd_bytes_inc_o), .wr_bytes_inc_o(wr_bytes_inc_o), .active_o(active_o), .stall_mem_o(stall_mem_o), .stall_dep_o(stall_dep_o),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst),
    .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready), .m_axi_rresp(m_axi_rresp), .m_axi_rlast(m_axi_rlast),
    .m_axi_awvalid(), .m_axi_awready(1'b0), .m_axi_awaddr(), .m_axi_awlen(), .m_axi_awsize(),
    .m_axi_awburst(), .m_axi_wvalid(), .m_axi_wready(1'b0), .m_axi_wdata(), .m_axi_wstrb(),
    .m_axi_wlast(), .m_axi_bvalid(1'b0), .m_axi_bready(), .m_axi_bresp(2'b00)
  );
endmodule
