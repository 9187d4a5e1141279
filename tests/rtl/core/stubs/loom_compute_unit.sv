// Test stand-in for loom_compute_unit: the unit contract plus its scratchpad ports (one access at retire).
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off PINCONNECTEMPTY */
module loom_compute_unit #(
  parameter int unsigned Rows = 4, Cols = 4, SpW = 16,
  parameter int unsigned InBytes = 16384, WgtBytes = 16384, AccBytes = 16384, OutBytes = 8192,
  parameter int unsigned ParamBytes = 4096,
  parameter int unsigned InAw = $clog2(InBytes), WgtAw = $clog2(WgtBytes), AccAw = $clog2(AccBytes),
  parameter int unsigned OutAw = $clog2(OutBytes), ParamAw = $clog2(ParamBytes),
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
  output logic                    in_rd_req_o,
  output logic [InAw-1:0]          in_rd_addr_o,
  input  logic [SpW*8-1:0]        in_rd_data_i,
  output logic                    wgt_rd_req_o,
  output logic [WgtAw-1:0]          wgt_rd_addr_o,
  input  logic [SpW*8-1:0]        wgt_rd_data_i,
  output logic                    param_rd_req_o,
  output logic [ParamAw-1:0]          param_rd_addr_o,
  input  logic [SpW*8-1:0]        param_rd_data_i,
  output logic                    acc_rd_req_o,
  output logic [AccAw-1:0]          acc_rd_addr_o,
  input  logic                    acc_rd_gnt_i,
  input  logic [SpW*8-1:0]        acc_rd_data_i,
  output logic                    acc_wr_req_o,
  output logic [AccAw-1:0]          acc_wr_addr_o,
  output logic [SpW*8-1:0]        acc_wr_data_o,
  output logic [SpW-1:0]          acc_wr_mask_o,
  output logic                    out_wr_req_o,
  output logic [OutAw-1:0]          out_wr_addr_o,
  output logic [SpW*8-1:0]        out_wr_data_o,
  output logic [SpW-1:0]          out_wr_mask_o,
  input  logic                    out_wr_gnt_i
);
  assign in_rd_req_o = 1'b0;
  assign in_rd_addr_o = '0;
  assign wgt_rd_req_o = 1'b0;
  assign wgt_rd_addr_o = '0;
  assign param_rd_req_o = 1'b0;
  assign param_rd_addr_o = '0;
  assign acc_rd_req_o = retire_o;
  assign acc_rd_addr_o = '0;
  assign acc_wr_req_o = 1'b0;
  assign acc_wr_addr_o = '0;
  assign acc_wr_data_o = '0;
  assign acc_wr_mask_o = '0;
  assign out_wr_req_o = retire_o;  // traffic for the OUT write mux
  assign out_wr_addr_o = '0;
  assign out_wr_data_o = '0;
  assign out_wr_mask_o = '0;

  loom_stub_unit #(.Kind(1), .AddrW(48), .MemBytes(8)) u_stub (
    .clk_i(clk_i), .rst_ni(rst_ni), .flush_i(flush_i), .halt_i(halt_i), .insn_valid_i(insn_valid_i), .insn_ready_o(insn_ready_o), .insn_i(insn_i), .pc_i(pc_i),
    .tok_prev_avail_i(tok_prev_avail_i), .tok_next_avail_i(tok_next_avail_i), .tok_prev_pop_o(tok_prev_pop_o), .tok_next_pop_o(tok_next_pop_o), .tok_prev_push_o(tok_prev_push_o),
    .tok_next_push_o(tok_next_push_o), .busy_o(busy_o), .retire_o(retire_o), .err_o(err_o), .err_cause_o(err_cause_o), .err_pc_o(err_pc_o), .macs_inc_o(macs_inc_o),
    .rd_bytes_inc_o(rd_bytes_inc_o), .wr_bytes_inc_o(wr_bytes_inc_o), .active_o(active_o), .stall_mem_o(stall_mem_o), .stall_dep_o(stall_dep_o),
    .m_axi_arvalid(), .m_axi_arready(1'b0), .m_axi_araddr(), .m_axi_arlen(), .m_axi_arsize(),
    .m_axi_arburst(), .m_axi_rvalid(1'b0), .m_axi_rready(), .m_axi_rresp(2'b00), .m_axi_rlast(1'b0),
    .m_axi_awvalid(), .m_axi_awready(1'b0), .m_axi_awaddr(), .m_axi_awlen(), .m_axi_awsize(),
    .m_axi_awburst(), .m_axi_wvalid(), .m_axi_wready(1'b0), .m_axi_wdata(), .m_axi_wstrb(),
    .m_axi_wlast(), .m_axi_bvalid(1'b0), .m_axi_bready(), .m_axi_bresp(2'b00)
  );
endmodule
