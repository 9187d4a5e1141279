// Test stand-in for loom_store_unit: the unit contract plus the OUT and ACC read ports and AXI writes.
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off PINCONNECTEMPTY */
module loom_store_unit #(
  parameter int unsigned AddrW = 48, MemBytes = 8, SpW = 16, AccBytes = 16384, OutBytes = 8192,
  parameter int unsigned MaxOutstanding = 4,
  localparam int unsigned AccAddrW = $clog2(AccBytes),
  localparam int unsigned OutAddrW = $clog2(OutBytes),
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
  output logic                    out_rd_req_o,
  output logic [OutAddrW-1:0]     out_rd_addr_o,
  input  logic                    out_rd_gnt_i,
  input  logic [SpW*8-1:0]        out_rd_data_i,
  output logic                    acc_rd_req_o,
  output logic [AccAddrW-1:0]     acc_rd_addr_o,
  input  logic                    acc_rd_gnt_i,
  input  logic [SpW*8-1:0]        acc_rd_data_i,
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
  // One read of each port at retire, so the ACC/OUT read muxes see traffic.
  assign out_rd_req_o  = retire_o;
  assign out_rd_addr_o = '0;
  assign acc_rd_req_o  = retire_o;
  assign acc_rd_addr_o = '0;
  loom_stub_unit #(.Kind(2), .AddrW(AddrW), .MemBytes(MemBytes)) u_stub (
    .clk_i(clk_i), .rst_ni(rst_ni), .flush_i(flush_i), .halt_i(halt_i), .insn_valid_i(insn_valid_i), .insn_ready_o(insn_ready_o), .insn_i(insn_i), .pc_i(pc_i),
    .tok_prev_avail_i(tok_prev_avail_i), .tok_next_avail_i(tok_next_avail_i), .tok_prev_pop_o(tok_prev_pop_o), .tok_next_pop_o(tok_next_pop_o), .tok_prev_push_o(tok_prev_push_o),
    .tok_next_push_o(tok_next_push_o), .busy_o(busy_o), .retire_o(retire_o), .err_o(err_o), .err_cause_o(err_cause_o), .err_pc_o(err_pc_o), .macs_inc_o(macs_inc_o),
    .rd_bytes_inc_o(rd_bytes_inc_o), .wr_bytes_inc_o(wr_bytes_inc_o), .active_o(active_o), .stall_mem_o(stall_mem_o), .stall_dep_o(stall_dep_o),
    .m_axi_arvalid(), .m_axi_arready(1'b0), .m_axi_araddr(), .m_axi_arlen(), .m_axi_arsize(),
    .m_axi_arburst(), .m_axi_rvalid(1'b0), .m_axi_rready(), .m_axi_rresp(2'b00), .m_axi_rlast(1'b0),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen), .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready), .m_axi_bresp(m_axi_bresp)
  );
endmodule
