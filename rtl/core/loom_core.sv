// One loom core: ring fetch, dispatch, load/compute/store units, five scratchpads, errors, watchdog and counters.
//
// The core owns everything the units share: the scratchpad port muxes (the
// owner table of docs/rtl-core.md), the AXI read mux between fetch (ID 0)
// and the load unit (ID 1), the first-error latch that halts every unit, the
// watchdog and the 64-bit performance counters in loom_pkg::CTR_* order.
`include "loom_cover.svh"

module loom_core #(
  parameter int unsigned AddrW      = 48,
  parameter int unsigned Rows       = 4,
  parameter int unsigned Cols       = 4,
  parameter int unsigned InBytes    = 16384,
  parameter int unsigned WgtBytes   = 16384,
  parameter int unsigned AccBytes   = 16384,
  parameter int unsigned OutBytes   = 8192,
  parameter int unsigned ParamBytes = 4096,
  parameter int unsigned MemBytes   = 8,
  parameter int unsigned SpW        = (Cols * 4 > MemBytes) ? Cols * 4 : MemBytes,
  parameter int unsigned NumSems    = 8,
  parameter int unsigned RingDepth  = 256,
  parameter int unsigned FifoDepth  = 4,
  localparam int unsigned NumErrCauses = loom_pkg::NumErrCauses,
  localparam int unsigned NumCounters  = loom_pkg::NumCounters,
  localparam int unsigned CoreIdW      = 1
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  input  logic                           flush_i,        // SOFT_RESET bit of this core

  // from the CSR block
  input  logic [AddrW-1:0]               ring_base_i,
  input  logic [15:0]                    ring_size_i,
  input  logic [15:0]                    ring_tail_i,
  input  logic                           doorbell_i,
  input  logic [AddrW-1:0]               win_base_i,
  input  logic [AddrW-1:0]               win_limit_i,
  input  logic [31:0]                    watchdog_i,     // 0: off
  input  logic                           ctr_clear_i,

  // to the CSR block
  output logic [15:0]                    ring_head_o,
  output logic                           busy_o,
  output logic                           done_o,
  output logic                           blocked_o,
  output logic                           error_o,
  output logic [NumErrCauses-1:0]        err_cause_o,
  input  logic [NumErrCauses-1:0]        err_clear_i,
  output logic [15:0]                    err_pc_o,
  output logic                           irq_done_o,
  output logic                           irq_err_o,
  output logic [NumCounters*64-1:0]      counters_o,     // counter i (loom_pkg::CTR_*) at [64*i +: 64]

  // semaphores (fabric-wide)
  output logic                           sem_signal_o,
  output logic [7:0]                     sem_id_o,
  input  logic [NumSems*32-1:0]          sem_value_i,    // semaphore i at [32*i +: 32]

  // AXI4 master
  output logic                           m_axi_awvalid,
  input  logic                           m_axi_awready,
  output logic [CoreIdW-1:0]             m_axi_awid,
  output logic [AddrW-1:0]               m_axi_awaddr,
  output logic [7:0]                     m_axi_awlen,
  output logic [2:0]                     m_axi_awsize,
  output logic [1:0]                     m_axi_awburst,
  output logic                           m_axi_wvalid,
  input  logic                           m_axi_wready,
  output logic [MemBytes*8-1:0]          m_axi_wdata,
  output logic [MemBytes-1:0]            m_axi_wstrb,
  output logic                           m_axi_wlast,
  input  logic                           m_axi_bvalid,
  output logic                           m_axi_bready,
  input  logic [CoreIdW-1:0]             m_axi_bid,
  input  logic [1:0]                     m_axi_bresp,
  output logic                           m_axi_arvalid,
  input  logic                           m_axi_arready,
  output logic [CoreIdW-1:0]             m_axi_arid,
  output logic [AddrW-1:0]               m_axi_araddr,
  output logic [7:0]                     m_axi_arlen,
  output logic [2:0]                     m_axi_arsize,
  output logic [1:0]                     m_axi_arburst,
  input  logic                           m_axi_rvalid,
  output logic                           m_axi_rready,
  input  logic [CoreIdW-1:0]             m_axi_rid,
  input  logic [MemBytes*8-1:0]          m_axi_rdata,
  input  logic [1:0]                     m_axi_rresp,
  input  logic                           m_axi_rlast
);

  localparam int unsigned InAW    = $clog2(InBytes);
  localparam int unsigned WgtAW   = $clog2(WgtBytes);
  localparam int unsigned AccAW   = $clog2(AccBytes);
  localparam int unsigned OutAW   = $clog2(OutBytes);
  localparam int unsigned ParamAW = $clog2(ParamBytes);
  localparam int unsigned SpDW    = SpW * 8;
  localparam int unsigned FCntW   = $clog2(FifoDepth + 1);
  // DMA bursts each of the load and store units keeps in flight (host/hw/timing.h
  // kMaxOutstanding), and the drain's counters sized for them.
  localparam int unsigned DmaOutstanding = 16;
  localparam int unsigned DrainCntW      = $clog2(DmaOutstanding + 1) + 1;
  // The load unit's one write port is as wide as the largest buffer it fills.
  localparam int unsigned LdMax01 = (InBytes > WgtBytes) ? InBytes : WgtBytes;
  localparam int unsigned LdMax23 = (OutBytes > ParamBytes) ? OutBytes : ParamBytes;
  localparam int unsigned LdSpAW  = $clog2((LdMax01 > LdMax23) ? LdMax01 : LdMax23);

  // ---------------------------------------------------------------------------
  // Core state: halt (first error until flush), busy, done.
  logic                    halt_d, halt_q;
  logic                    busy_d, busy_q;
  logic                    done_d, done_q;
  logic [NumErrCauses-1:0] cause_d, cause_q;
  logic [15:0]             err_pc_d, err_pc_q;
  logic                    irq_done_d, irq_done_q, irq_err_d, irq_err_q;
  logic [31:0]             wd_cnt_d, wd_cnt_q;
  logic                    issued_d, issued_q;

  // ---------------------------------------------------------------------------
  // Fetch.
  logic             f_insn_valid, f_insn_ready, f_idle, f_ring_err;
  logic [255:0]     f_insn;
  logic [15:0]      f_pc, f_ring_err_pc;
  logic [1:0]       f_resp;
  logic [FCntW-1:0] f_count;
  logic             f_arvalid, f_arready, f_rvalid, f_rready;
  logic [AddrW-1:0] f_araddr;
  logic [7:0]       f_arlen;
  logic [2:0]       f_arsize;
  logic [1:0]       f_arburst;
  logic             d_end;
  logic [15:0]      d_end_pc;

  loom_fetch #(
    .AddrW     (AddrW),
    .MemBytes  (MemBytes),
    .RingDepth (RingDepth),
    .FifoDepth (FifoDepth)
  ) u_fetch (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .flush_i       (flush_i),
    .halt_i        (halt_q),
    .ring_base_i   (ring_base_i),
    .ring_size_i   (ring_size_i),
    .ring_tail_i   (ring_tail_i),
    .doorbell_i    (doorbell_i),
    .restart_i     (d_end),
    .restart_pc_i  (d_end_pc),
    .ring_head_o   (ring_head_o),
    .idle_o        (f_idle),
    .ring_err_o    (f_ring_err),
    .ring_err_pc_o (f_ring_err_pc),
    .insn_valid_o  (f_insn_valid),
    .insn_ready_i  (f_insn_ready),
    .insn_o        (f_insn),
    .pc_o          (f_pc),
    .resp_o        (f_resp),
    .fifo_count_o  (f_count),
    .m_axi_arvalid (f_arvalid),
    .m_axi_arready (f_arready),
    .m_axi_araddr  (f_araddr),
    .m_axi_arlen   (f_arlen),
    .m_axi_arsize  (f_arsize),
    .m_axi_arburst (f_arburst),
    .m_axi_rvalid  (f_rvalid),
    .m_axi_rready  (f_rready),
    .m_axi_rdata   (m_axi_rdata),
    .m_axi_rresp   (m_axi_rresp),
    .m_axi_rlast   (m_axi_rlast)
  );

  // ---------------------------------------------------------------------------
  // Dispatch.
  logic [255:0] u_insn;
  logic [15:0]  u_pc;
  logic         ld_valid, ld_ready, ld_busy, cu_valid, cu_ready, cu_busy, st_valid, st_ready, st_busy;
  logic         ld_next_avail, ld_next_pop, ld_next_push;
  logic         cu_prev_avail, cu_prev_pop, cu_prev_push, cu_next_avail, cu_next_pop, cu_next_push;
  logic         st_prev_avail, st_prev_pop, st_prev_push;
  logic         d_blocked, d_sync_retire, d_err;
  logic [NumErrCauses-1:0] d_err_cause;
  logic [15:0]  d_err_pc;

  loom_dispatch #(
    .NumSems (NumSems)
  ) u_dispatch (
    .clk_i               (clk_i),
    .rst_ni              (rst_ni),
    .flush_i             (flush_i),
    .halt_i              (halt_q),
    .insn_valid_i        (f_insn_valid),
    .insn_ready_o        (f_insn_ready),
    .insn_i              (f_insn),
    .pc_i                (f_pc),
    .resp_i              (f_resp),
    .unit_insn_o         (u_insn),
    .unit_pc_o           (u_pc),
    .ld_valid_o          (ld_valid),
    .ld_ready_i          (ld_ready),
    .ld_busy_i           (ld_busy),
    .cu_valid_o          (cu_valid),
    .cu_ready_i          (cu_ready),
    .cu_busy_i           (cu_busy),
    .st_valid_o          (st_valid),
    .st_ready_i          (st_ready),
    .st_busy_i           (st_busy),
    .ld_tok_next_avail_o (ld_next_avail),
    .ld_tok_next_pop_i   (ld_next_pop),
    .ld_tok_next_push_i  (ld_next_push),
    .cu_tok_prev_avail_o (cu_prev_avail),
    .cu_tok_prev_pop_i   (cu_prev_pop),
    .cu_tok_prev_push_i  (cu_prev_push),
    .cu_tok_next_avail_o (cu_next_avail),
    .cu_tok_next_pop_i   (cu_next_pop),
    .cu_tok_next_push_i  (cu_next_push),
    .st_tok_prev_avail_o (st_prev_avail),
    .st_tok_prev_pop_i   (st_prev_pop),
    .st_tok_prev_push_i  (st_prev_push),
    .sem_signal_o        (sem_signal_o),
    .sem_id_o            (sem_id_o),
    .sem_value_i         (sem_value_i),
    .blocked_o           (d_blocked),
    .end_o               (d_end),
    .end_pc_o            (d_end_pc),
    .sync_retire_o       (d_sync_retire),
    .err_o               (d_err),
    .err_cause_o         (d_err_cause),
    .err_pc_o            (d_err_pc)
  );

  // ---------------------------------------------------------------------------
  // Units.
  logic                    ld_retire, ld_err, ld_stall_mem, ld_stall_dep, ld_active;
  logic                    cu_retire, cu_err, cu_stall_mem, cu_stall_dep, cu_active;
  logic                    st_retire, st_err, st_stall_mem, st_stall_dep, st_active;
  logic [NumErrCauses-1:0] ld_err_cause, cu_err_cause, st_err_cause;
  logic [15:0]             ld_err_pc, cu_err_pc, st_err_pc;
  logic [31:0]             ld_macs, ld_rd_bytes, ld_wr_bytes;
  logic [31:0]             cu_macs, cu_rd_bytes, cu_wr_bytes;
  logic [31:0]             st_macs, st_rd_bytes, st_wr_bytes;
  logic                    ld_prev_pop_unused, ld_prev_push_unused, st_next_pop_unused, st_next_push_unused;

  // load unit: scratchpad write port (buffer select) and AXI read
  logic             ld_sp_wr_req, ld_sp_wr_gnt;
  logic [2:0]       ld_sp_wr_buf;
  logic [LdSpAW-1:0] ld_sp_wr_addr;
  logic [SpDW-1:0]  ld_sp_wr_data;
  logic [SpW-1:0]   ld_sp_wr_mask;
  logic             ld_arvalid, ld_arready, ld_rvalid, ld_rready;
  logic [AddrW-1:0] ld_araddr;
  logic [7:0]       ld_arlen;
  logic [2:0]       ld_arsize;
  logic [1:0]       ld_arburst;
  logic             ldu_arvalid, ldu_arready;   // the unit's side of loom_axi_drain
  logic [AddrW-1:0] ldu_araddr;
  logic [7:0]       ldu_arlen;
  logic [2:0]       ldu_arsize;
  logic [1:0]       ldu_arburst;

  loom_load_unit #(
    .AddrW      (AddrW),
    .MemBytes   (MemBytes),
    .SpW        (SpW),
    .InBytes    (InBytes),
    .WgtBytes   (WgtBytes),
    .OutBytes   (OutBytes),
    .ParamBytes (ParamBytes),
    .MaxOutstanding (DmaOutstanding)
  ) u_load (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .flush_i          (flush_i),
    .halt_i           (halt_q),
    .insn_valid_i     (ld_valid),
    .insn_ready_o     (ld_ready),
    .insn_i           (u_insn),
    .pc_i             (u_pc),
    .tok_prev_avail_i (1'b0),
    .tok_next_avail_i (ld_next_avail),
    .tok_prev_pop_o   (ld_prev_pop_unused),
    .tok_next_pop_o   (ld_next_pop),
    .tok_prev_push_o  (ld_prev_push_unused),
    .tok_next_push_o  (ld_next_push),
    .busy_o           (ld_busy),
    .retire_o         (ld_retire),
    .err_o            (ld_err),
    .err_cause_o      (ld_err_cause),
    .err_pc_o         (ld_err_pc),
    .macs_inc_o       (ld_macs),
    .rd_bytes_inc_o   (ld_rd_bytes),
    .wr_bytes_inc_o   (ld_wr_bytes),
    .active_o         (ld_active),
    .stall_mem_o      (ld_stall_mem),
    .stall_dep_o      (ld_stall_dep),
    .win_base_i       (win_base_i),
    .win_limit_i      (win_limit_i),
    .sp_wr_req_o      (ld_sp_wr_req),
    .sp_wr_buf_o      (ld_sp_wr_buf),
    .sp_wr_addr_o     (ld_sp_wr_addr),
    .sp_wr_data_o     (ld_sp_wr_data),
    .sp_wr_mask_o     (ld_sp_wr_mask),
    .sp_wr_gnt_i      (ld_sp_wr_gnt),
    .m_axi_arvalid    (ldu_arvalid),
    .m_axi_arready    (ldu_arready),
    .m_axi_araddr     (ldu_araddr),
    .m_axi_arlen      (ldu_arlen),
    .m_axi_arsize     (ldu_arsize),
    .m_axi_arburst    (ldu_arburst),
    .m_axi_rvalid     (ld_rvalid),
    .m_axi_rready     (ld_rready),
    .m_axi_rdata      (m_axi_rdata),
    .m_axi_rresp      (m_axi_rresp),
    .m_axi_rlast      (m_axi_rlast)
  );

  // store unit: OUT and ACC read ports and AXI write
  logic             st_out_rd_req, st_out_rd_gnt, st_acc_rd_req, st_acc_rd_gnt;
  logic [OutAW-1:0] st_out_rd_addr;
  logic [AccAW-1:0] st_acc_rd_addr;
  logic [SpDW-1:0]  out_rd_data, acc_rd_data;
  logic                st_wvalid, st_wready, st_wlast, st_bvalid, st_bready;
  logic                st_awvalid, st_awready;
  logic [AddrW-1:0]    st_awaddr;
  logic [7:0]          st_awlen;
  logic [2:0]          st_awsize;
  logic [1:0]          st_awburst;
  logic [MemBytes*8-1:0] st_wdata;
  logic [MemBytes-1:0] st_wstrb;

  loom_store_unit #(
    .AddrW    (AddrW),
    .MemBytes (MemBytes),
    .SpW      (SpW),
    .AccBytes (AccBytes),
    .OutBytes (OutBytes),
    .MaxOutstanding (DmaOutstanding)
  ) u_store (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .flush_i          (flush_i),
    .halt_i           (halt_q),
    .insn_valid_i     (st_valid),
    .insn_ready_o     (st_ready),
    .insn_i           (u_insn),
    .pc_i             (u_pc),
    .tok_prev_avail_i (st_prev_avail),
    .tok_next_avail_i (1'b0),
    .tok_prev_pop_o   (st_prev_pop),
    .tok_next_pop_o   (st_next_pop_unused),
    .tok_prev_push_o  (st_prev_push),
    .tok_next_push_o  (st_next_push_unused),
    .busy_o           (st_busy),
    .retire_o         (st_retire),
    .err_o            (st_err),
    .err_cause_o      (st_err_cause),
    .err_pc_o         (st_err_pc),
    .macs_inc_o       (st_macs),
    .rd_bytes_inc_o   (st_rd_bytes),
    .wr_bytes_inc_o   (st_wr_bytes),
    .active_o         (st_active),
    .stall_mem_o      (st_stall_mem),
    .stall_dep_o      (st_stall_dep),
    .win_base_i       (win_base_i),
    .win_limit_i      (win_limit_i),
    .out_rd_req_o     (st_out_rd_req),
    .out_rd_addr_o    (st_out_rd_addr),
    .out_rd_gnt_i     (st_out_rd_gnt),
    .out_rd_data_i    (out_rd_data),
    .acc_rd_req_o     (st_acc_rd_req),
    .acc_rd_addr_o    (st_acc_rd_addr),
    .acc_rd_gnt_i     (st_acc_rd_gnt),
    .acc_rd_data_i    (acc_rd_data),
    .m_axi_awvalid    (st_awvalid),
    .m_axi_awready    (st_awready),
    .m_axi_awaddr     (st_awaddr),
    .m_axi_awlen      (st_awlen),
    .m_axi_awsize     (st_awsize),
    .m_axi_awburst    (st_awburst),
    .m_axi_wvalid     (st_wvalid),
    .m_axi_wready     (st_wready),
    .m_axi_wdata      (st_wdata),
    .m_axi_wstrb      (st_wstrb),
    .m_axi_wlast      (st_wlast),
    .m_axi_bvalid     (st_bvalid),
    .m_axi_bready     (st_bready),
    .m_axi_bresp      (m_axi_bresp)
  );

  // compute unit: one port per scratchpad side it uses
  logic               cu_in_rd_req, cu_wgt_rd_req, cu_param_rd_req, cu_acc_rd_req;
  logic [InAW-1:0]    cu_in_rd_addr;
  logic [WgtAW-1:0]   cu_wgt_rd_addr;
  logic [ParamAW-1:0] cu_param_rd_addr;
  logic [AccAW-1:0]   cu_acc_rd_addr, cu_acc_wr_addr;
  logic [OutAW-1:0]   cu_out_wr_addr;
  logic [SpDW-1:0]    cu_in_rd_data, cu_wgt_rd_data, cu_param_rd_data;
  logic               cu_acc_wr_req, cu_out_wr_req;
  logic [SpDW-1:0]    cu_acc_wr_data, cu_out_wr_data;
  logic [SpW-1:0]     cu_acc_wr_mask, cu_out_wr_mask;

  loom_compute_unit #(
    .Rows       (Rows),
    .Cols       (Cols),
    .SpW        (SpW),
    .InBytes    (InBytes),
    .WgtBytes   (WgtBytes),
    .AccBytes   (AccBytes),
    .OutBytes   (OutBytes),
    .ParamBytes (ParamBytes)
  ) u_compute (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .flush_i          (flush_i),
    .halt_i           (halt_q),
    .insn_valid_i     (cu_valid),
    .insn_ready_o     (cu_ready),
    .insn_i           (u_insn),
    .pc_i             (u_pc),
    .tok_prev_avail_i (cu_prev_avail),
    .tok_next_avail_i (cu_next_avail),
    .tok_prev_pop_o   (cu_prev_pop),
    .tok_next_pop_o   (cu_next_pop),
    .tok_prev_push_o  (cu_prev_push),
    .tok_next_push_o  (cu_next_push),
    .busy_o           (cu_busy),
    .retire_o         (cu_retire),
    .err_o            (cu_err),
    .err_cause_o      (cu_err_cause),
    .err_pc_o         (cu_err_pc),
    .macs_inc_o       (cu_macs),
    .rd_bytes_inc_o   (cu_rd_bytes),
    .wr_bytes_inc_o   (cu_wr_bytes),
    .active_o         (cu_active),
    .stall_mem_o      (cu_stall_mem),
    .stall_dep_o      (cu_stall_dep),
    .in_rd_req_o      (cu_in_rd_req),
    .in_rd_addr_o     (cu_in_rd_addr),
    .in_rd_data_i     (cu_in_rd_data),
    .wgt_rd_req_o     (cu_wgt_rd_req),
    .wgt_rd_addr_o    (cu_wgt_rd_addr),
    .wgt_rd_data_i    (cu_wgt_rd_data),
    .param_rd_req_o   (cu_param_rd_req),
    .param_rd_addr_o  (cu_param_rd_addr),
    .param_rd_data_i  (cu_param_rd_data),
    .acc_rd_req_o     (cu_acc_rd_req),
    .acc_rd_addr_o    (cu_acc_rd_addr),
    .acc_rd_gnt_i     (1'b1),
    .acc_rd_data_i    (acc_rd_data),
    .acc_wr_req_o     (cu_acc_wr_req),
    .acc_wr_addr_o    (cu_acc_wr_addr),
    .acc_wr_data_o    (cu_acc_wr_data),
    .acc_wr_mask_o    (cu_acc_wr_mask),
    .out_wr_req_o     (cu_out_wr_req),
    .out_wr_addr_o    (cu_out_wr_addr),
    .out_wr_data_o    (cu_out_wr_data),
    .out_wr_mask_o    (cu_out_wr_mask),
    .out_wr_gnt_i     (1'b1)
  );

  // ---------------------------------------------------------------------------
  // Scratchpads and their port muxes (docs/rtl-core.md, "Scratchpad ports").
  logic ld_wr_in, ld_wr_wgt, ld_wr_out, ld_wr_param;

  assign ld_wr_in    = ld_sp_wr_req && (ld_sp_wr_buf == loom_pkg::BufIn);
  assign ld_wr_wgt   = ld_sp_wr_req && (ld_sp_wr_buf == loom_pkg::BufWgt);
  assign ld_wr_param = ld_sp_wr_req && (ld_sp_wr_buf == loom_pkg::BufParam);
  // OUT write: the compute unit wins (its grant is constant 1); the load
  // unit holds its request until granted.
  assign ld_wr_out    = ld_sp_wr_req && (ld_sp_wr_buf == loom_pkg::BufOut) && !cu_out_wr_req;
  assign ld_sp_wr_gnt = ld_wr_in || ld_wr_wgt || ld_wr_param || ld_wr_out;

  // ACC read: the compute unit wins; OUT read is the store unit's alone.
  assign st_out_rd_gnt = st_out_rd_req;
  assign st_acc_rd_gnt = st_acc_rd_req && !cu_acc_rd_req;

  logic in_rd_valid, wgt_rd_valid, param_rd_valid, acc_rd_valid, out_rd_valid;

  loom_spad #(.Bytes (InBytes), .SpW (SpW)) u_spad_in (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .rd_req_i   (cu_in_rd_req),
    .rd_addr_i  (cu_in_rd_addr),
    .rd_valid_o (in_rd_valid),
    .rd_data_o  (cu_in_rd_data),
    .wr_req_i   (ld_wr_in),
    .wr_addr_i  (ld_sp_wr_addr[InAW-1:0]),
    .wr_data_i  (ld_sp_wr_data),
    .wr_mask_i  (ld_sp_wr_mask)
  );

  loom_spad #(.Bytes (WgtBytes), .SpW (SpW)) u_spad_wgt (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .rd_req_i   (cu_wgt_rd_req),
    .rd_addr_i  (cu_wgt_rd_addr),
    .rd_valid_o (wgt_rd_valid),
    .rd_data_o  (cu_wgt_rd_data),
    .wr_req_i   (ld_wr_wgt),
    .wr_addr_i  (ld_sp_wr_addr[WgtAW-1:0]),
    .wr_data_i  (ld_sp_wr_data),
    .wr_mask_i  (ld_sp_wr_mask)
  );

  loom_spad #(.Bytes (ParamBytes), .SpW (SpW)) u_spad_param (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .rd_req_i   (cu_param_rd_req),
    .rd_addr_i  (cu_param_rd_addr),
    .rd_valid_o (param_rd_valid),
    .rd_data_o  (cu_param_rd_data),
    .wr_req_i   (ld_wr_param),
    .wr_addr_i  (ld_sp_wr_addr[ParamAW-1:0]),
    .wr_data_i  (ld_sp_wr_data),
    .wr_mask_i  (ld_sp_wr_mask)
  );

  loom_spad #(.Bytes (OutBytes), .SpW (SpW)) u_spad_out (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .rd_req_i   (st_out_rd_req),
    .rd_addr_i  (st_out_rd_addr),
    .rd_valid_o (out_rd_valid),
    .rd_data_o  (out_rd_data),
    .wr_req_i   (cu_out_wr_req || ld_wr_out),
    .wr_addr_i  (cu_out_wr_req ? cu_out_wr_addr : ld_sp_wr_addr[OutAW-1:0]),
    .wr_data_i  (cu_out_wr_req ? cu_out_wr_data : ld_sp_wr_data),
    .wr_mask_i  (cu_out_wr_req ? cu_out_wr_mask : ld_sp_wr_mask)
  );

  loom_spad #(.Bytes (AccBytes), .SpW (SpW)) u_spad_acc (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .rd_req_i   (cu_acc_rd_req || st_acc_rd_gnt),
    .rd_addr_i  (cu_acc_rd_req ? cu_acc_rd_addr : st_acc_rd_addr),
    .rd_valid_o (acc_rd_valid),
    .rd_data_o  (acc_rd_data),
    .wr_req_i   (cu_acc_wr_req),
    .wr_addr_i  (cu_acc_wr_addr),
    .wr_data_i  (cu_acc_wr_data),
    .wr_mask_i  (cu_acc_wr_mask)
  );

  // ---------------------------------------------------------------------------
  // AXI read mux: fetch is ID 0, the load unit ID 1. A granted request stays
  // selected until its handshake (AXI forbids withdrawing a valid); otherwise
  // the two alternate.
  logic ar_lock_d, ar_lock_q, ar_sel_d, ar_sel_q, ar_last_d, ar_last_q;
  logic ar_sel;

  always_comb begin
    if (ar_lock_q) begin
      ar_sel = ar_sel_q;
    end else if (f_arvalid && ld_arvalid) begin
      ar_sel = !ar_last_q;
    end else begin
      ar_sel = ld_arvalid;
    end
  end

  always_comb begin
    ar_sel_d  = ar_sel;
    ar_lock_d = m_axi_arvalid && !m_axi_arready;
    ar_last_d = (m_axi_arvalid && m_axi_arready) ? ar_sel : ar_last_q;
  end

  assign m_axi_arvalid = ar_sel ? ld_arvalid : f_arvalid;
  assign m_axi_arid    = CoreIdW'(ar_sel);
  assign m_axi_araddr  = ar_sel ? ld_araddr : f_araddr;
  assign m_axi_arlen   = ar_sel ? ld_arlen : f_arlen;
  assign m_axi_arsize  = ar_sel ? ld_arsize : f_arsize;
  assign m_axi_arburst = ar_sel ? ld_arburst : f_arburst;
  assign f_arready     = m_axi_arready && !ar_sel;
  assign ld_arready    = m_axi_arready && ar_sel;

  logic ld_r_for_unit, ld_r_ready;

  assign f_rvalid      = m_axi_rvalid && (m_axi_rid == CoreIdW'(0));
  assign ld_r_for_unit = m_axi_rvalid && (m_axi_rid == CoreIdW'(1));
  assign m_axi_rready  = (m_axi_rid == CoreIdW'(1)) ? ld_r_ready : f_rready;

  // The store unit is the only writer.
  assign m_axi_awid    = '0;

  // Responses to the units' requests that a flush orphaned are absorbed
  // here (fetch drains its own bursts).
  loom_axi_drain #(
    .AddrW    (AddrW),
    .MemBytes (MemBytes),
    .MaxOpen  (DmaOutstanding),
    .CntW     (DrainCntW)
  ) u_axi_drain (
    .clk_i          (clk_i),
    .rst_ni         (rst_ni),
    .flush_i        (flush_i),
    .unit_arvalid_i (ldu_arvalid),
    .unit_arready_o (ldu_arready),
    .unit_araddr_i  (ldu_araddr),
    .unit_arlen_i   (ldu_arlen),
    .unit_arsize_i  (ldu_arsize),
    .unit_arburst_i (ldu_arburst),
    .arvalid_o      (ld_arvalid),
    .arready_i      (ld_arready),
    .araddr_o       (ld_araddr),
    .arlen_o        (ld_arlen),
    .arsize_o       (ld_arsize),
    .arburst_o      (ld_arburst),
    .unit_awvalid_i (st_awvalid),
    .unit_awready_o (st_awready),
    .unit_awaddr_i  (st_awaddr),
    .unit_awlen_i   (st_awlen),
    .unit_awsize_i  (st_awsize),
    .unit_awburst_i (st_awburst),
    .awvalid_o      (m_axi_awvalid),
    .awready_i      (m_axi_awready),
    .awaddr_o       (m_axi_awaddr),
    .awlen_o        (m_axi_awlen),
    .awsize_o       (m_axi_awsize),
    .awburst_o      (m_axi_awburst),
    .rvalid_i       (ld_r_for_unit),
    .rlast_i        (m_axi_rlast),
    .rready_o       (ld_r_ready),
    .unit_rvalid_o  (ld_rvalid),
    .unit_rready_i  (ld_rready),
    .unit_wvalid_i  (st_wvalid),
    .unit_wready_o  (st_wready),
    .unit_wdata_i   (st_wdata),
    .unit_wstrb_i   (st_wstrb),
    .unit_wlast_i   (st_wlast),
    .wvalid_o       (m_axi_wvalid),
    .wready_i       (m_axi_wready),
    .wdata_o        (m_axi_wdata),
    .wstrb_o        (m_axi_wstrb),
    .wlast_o        (m_axi_wlast),
    .bvalid_i       (m_axi_bvalid),
    .bready_o       (m_axi_bready),
    .unit_bvalid_o  (st_bvalid),
    .unit_bready_i  (st_bready)
  );

  // ---------------------------------------------------------------------------
  // First error, halt, busy/done, watchdog.
  logic                    any_retire, core_idle, wd_fire, new_err;
  logic [NumErrCauses-1:0] new_cause;
  logic [15:0]             new_pc, wd_pc;
  logic                    doorbell_ok;

  assign any_retire  = ld_retire || cu_retire || st_retire || d_sync_retire;
  assign issued_d    = ((ld_valid && ld_ready) || (cu_valid && cu_ready) || (st_valid && st_ready)) && !flush_i;
  assign core_idle   = f_idle && !f_insn_valid && !ld_busy && !cu_busy && !st_busy && !issued_q;
  assign doorbell_ok = doorbell_i && !halt_q;

  // Watchdog ERR_PC: the oldest instruction still in flight. Each unit holds
  // one; issue order is kept with small sequence numbers.
  logic [7:0]  seq_d, seq_q, ld_seq_d, ld_seq_q, cu_seq_d, cu_seq_q, st_seq_d, st_seq_q;
  logic [15:0] ld_pc_d, ld_pc_q, cu_pc_d, cu_pc_q, st_pc_d, st_pc_q;

  function automatic logic older(logic [7:0] a, logic [7:0] b);
    // a was issued before b (differences stay far below 128).
    older = (8'(a - b) >= 8'd128);
  endfunction

  always_comb begin
    seq_d    = seq_q;
    ld_seq_d = ld_seq_q;
    cu_seq_d = cu_seq_q;
    st_seq_d = st_seq_q;
    ld_pc_d  = ld_pc_q;
    cu_pc_d  = cu_pc_q;
    st_pc_d  = st_pc_q;
    if (ld_valid && ld_ready) begin
      ld_seq_d = seq_q;
      ld_pc_d  = u_pc;
    end
    if (cu_valid && cu_ready) begin
      cu_seq_d = seq_q;
      cu_pc_d  = u_pc;
    end
    if (st_valid && st_ready) begin
      st_seq_d = seq_q;
      st_pc_d  = u_pc;
    end
    if (issued_d) seq_d = seq_q + 8'd1;

    // Default: the instruction waiting at dispatch, else the next to fetch.
    wd_pc = f_insn_valid ? f_pc : ring_head_o;
    begin : oldest
      logic       found;
      logic [7:0] best;
      found = 1'b0;
      best  = '0;
      if (ld_busy) begin
        found = 1'b1;
        best  = ld_seq_q;
        wd_pc = ld_pc_q;
      end
      if (cu_busy && (!found || older(cu_seq_q, best))) begin
        found = 1'b1;
        best  = cu_seq_q;
        wd_pc = cu_pc_q;
      end
      if (st_busy && (!found || older(st_seq_q, best))) begin
        wd_pc = st_pc_q;
      end
    end
  end

  always_comb begin
    wd_cnt_d = '0;
    if (busy_q && !halt_q && !any_retire && watchdog_i != '0) wd_cnt_d = wd_cnt_q + 32'd1;
    if (flush_i) wd_cnt_d = '0;
  end
  assign wd_fire = busy_q && !halt_q && (watchdog_i != '0) && (wd_cnt_d == watchdog_i);

  // One error per cycle is latched; simultaneous errors are taken in a
  // fixed order (units, then dispatch, ring, watchdog).
  always_comb begin
    new_err   = 1'b1;
    new_cause = '0;
    new_pc    = '0;
    if (ld_err) begin
      new_cause = ld_err_cause;
      new_pc    = ld_err_pc;
    end else if (cu_err) begin
      new_cause = cu_err_cause;
      new_pc    = cu_err_pc;
    end else if (st_err) begin
      new_cause = st_err_cause;
      new_pc    = st_err_pc;
    end else if (d_err) begin
      new_cause = d_err_cause;
      new_pc    = d_err_pc;
    end else if (f_ring_err) begin
      new_cause[loom_pkg::ERR_ILLEGAL_INSN] = 1'b1;
      new_pc = f_ring_err_pc;
    end else if (wd_fire) begin
      new_cause[loom_pkg::ERR_TIMEOUT] = 1'b1;
      new_pc = wd_pc;
    end else begin
      new_err = 1'b0;
    end
    if (halt_q || flush_i) new_err = 1'b0;
  end

  always_comb begin
    halt_d     = halt_q || new_err;
    cause_d    = (cause_q & ~err_clear_i) | (new_err ? new_cause : '0);
    err_pc_d   = new_err ? new_pc : err_pc_q;
    irq_err_d  = new_err;
    irq_done_d = d_end;
    done_d     = done_q;
    busy_d     = busy_q;

    if (busy_q && core_idle) busy_d = 1'b0;
    if (doorbell_ok) begin
      busy_d = 1'b1;
      done_d = 1'b0;
    end
    if (d_end) begin
      busy_d = 1'b0;
      done_d = 1'b1;
    end
    if (new_err) busy_d = 1'b0;

    if (flush_i) begin
      halt_d     = 1'b0;
      cause_d    = '0;
      err_pc_d   = '0;
      irq_err_d  = 1'b0;
      irq_done_d = 1'b0;
      done_d     = 1'b0;
      busy_d     = 1'b0;
    end
  end

  // ---------------------------------------------------------------------------
  // Performance counters.
  // Counter i at [64*i +: 64]: flat vectors, as Yosys 0.23 rejects
  // multi-dimensional packed arrays.
  logic [NumCounters*64-1:0] ctr_d, ctr_q;
  logic [NumCounters-1:0]    ctr_inc1;   // counters that add 0 or 1
  logic [63:0]               hwm;

  always_comb begin
    ctr_inc1 = '0;
    ctr_inc1[loom_pkg::CTR_CYCLES_BUSY]      = busy_q;
    ctr_inc1[loom_pkg::CTR_CYCLES_COMPUTE]   = cu_active;
    ctr_inc1[loom_pkg::CTR_CYCLES_STALL_MEM] = ld_stall_mem || st_stall_mem;
    ctr_inc1[loom_pkg::CTR_CYCLES_STALL_DEP] = ld_stall_dep || cu_stall_dep || st_stall_dep || d_blocked;
    ctr_inc1[loom_pkg::CTR_INSN_LOAD]        = ld_retire;
    ctr_inc1[loom_pkg::CTR_INSN_COMPUTE]     = cu_retire;
    ctr_inc1[loom_pkg::CTR_INSN_STORE]       = st_retire;
    ctr_inc1[loom_pkg::CTR_INSN_SYNC]        = d_sync_retire;

    for (int unsigned i = 0; i < NumCounters; i++) begin
      ctr_d[64*i +: 64] = ctr_q[64*i +: 64] + 64'(ctr_inc1[i]);
    end
    ctr_d[64*loom_pkg::CTR_MACS +: 64]     = ctr_q[64*loom_pkg::CTR_MACS +: 64] + 64'(cu_macs);
    ctr_d[64*loom_pkg::CTR_BYTES_RD +: 64] = ctr_q[64*loom_pkg::CTR_BYTES_RD +: 64] + 64'(ld_rd_bytes);
    ctr_d[64*loom_pkg::CTR_BYTES_WR +: 64] = ctr_q[64*loom_pkg::CTR_BYTES_WR +: 64] + 64'(st_wr_bytes);
    hwm = ctr_q[64*loom_pkg::CTR_QUEUE_HWM +: 64];
    ctr_d[64*loom_pkg::CTR_QUEUE_HWM +: 64] = (64'(f_count) > hwm) ? 64'(f_count) : hwm;
    if (ctr_clear_i || flush_i) ctr_d = '0;
  end

  // ---------------------------------------------------------------------------
  // Registers.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      halt_q      <= 1'b0;
      busy_q      <= 1'b0;
      done_q      <= 1'b0;
      cause_q     <= '0;
      err_pc_q    <= '0;
      irq_done_q  <= 1'b0;
      irq_err_q   <= 1'b0;
      wd_cnt_q    <= '0;
      issued_q    <= 1'b0;
      ar_lock_q   <= 1'b0;
      ar_sel_q    <= 1'b0;
      ar_last_q   <= 1'b0;
      seq_q       <= '0;
      ld_seq_q    <= '0;
      cu_seq_q    <= '0;
      st_seq_q    <= '0;
      ld_pc_q     <= '0;
      cu_pc_q     <= '0;
      st_pc_q     <= '0;
      ctr_q       <= '0;
    end else begin
      halt_q      <= halt_d;
      busy_q      <= busy_d;
      done_q      <= done_d;
      cause_q     <= cause_d;
      err_pc_q    <= err_pc_d;
      irq_done_q  <= irq_done_d;
      irq_err_q   <= irq_err_d;
      wd_cnt_q    <= wd_cnt_d;
      issued_q    <= issued_d;
      ar_lock_q   <= ar_lock_d;
      ar_sel_q    <= ar_sel_d;
      ar_last_q   <= ar_last_d;
      seq_q       <= seq_d;
      ld_seq_q    <= ld_seq_d;
      cu_seq_q    <= cu_seq_d;
      st_seq_q    <= st_seq_d;
      ld_pc_q     <= ld_pc_d;
      cu_pc_q     <= cu_pc_d;
      st_pc_q     <= st_pc_d;
      ctr_q       <= ctr_d;
    end
  end

  assign busy_o      = busy_q;
  assign done_o      = done_q;
  assign blocked_o   = d_blocked;
  assign error_o     = |cause_q;
  assign err_cause_o = cause_q;
  assign err_pc_o    = err_pc_q;
  assign irq_done_o  = irq_done_q;
  assign irq_err_o   = irq_err_q;
  assign counters_o  = ctr_q;

  // Outputs of the unit contract this core has no use for.
  logic unused;
  assign unused = ^{ld_macs, ld_wr_bytes, ld_active, cu_rd_bytes, cu_wr_bytes, cu_stall_mem,
                    st_macs, st_rd_bytes, st_active, ld_prev_pop_unused, ld_prev_push_unused,
                    st_next_pop_unused, st_next_push_unused, m_axi_bid,
                    // the load unit's address is as wide as its largest buffer
                    ld_sp_wr_addr,
                    // read data is taken the cycle after a granted request
                    in_rd_valid, wgt_rd_valid, param_rd_valid, acc_rd_valid, out_rd_valid};

  `LOOM_ASSERT_INIT(a_spw, SpW >= MemBytes && SpW >= Cols * 4)
  `LOOM_ASSERT(a_ld_no_prev_tokens, !ld_prev_pop_unused && !ld_prev_push_unused)
  `LOOM_ASSERT(a_st_no_next_tokens, !st_next_pop_unused && !st_next_push_unused)
  `LOOM_ASSERT(a_ar_stable, !$past(m_axi_arvalid && !m_axi_arready) ||
                            (m_axi_arvalid && $stable(m_axi_arid) && $stable(m_axi_araddr)))
  `LOOM_ASSERT(a_one_acc_reader, !(cu_acc_rd_req && st_acc_rd_gnt))


  // Cover points (coverage build only): every error cause latched, watchdog,
  // soft reset, error clear, AXI backpressure per channel, AR arbitration.
  `LOOM_COVER_ERR_CAUSES(c_err, new_err, new_cause)
  `LOOM_COVER(c_watchdog, new_err && !ld_err && !cu_err && !st_err && !d_err && !f_ring_err && wd_fire)
  `LOOM_COVER(c_soft_reset_idle, flush_i && !busy_q && !halt_q)
  `LOOM_COVER(c_soft_reset_busy, flush_i && busy_q && !halt_q)
  `LOOM_COVER(c_soft_reset_halted, flush_i && halt_q)
  `LOOM_COVER(c_err_clear, |(err_clear_i & cause_q))
  `LOOM_COVER(c_aw_stall, m_axi_awvalid && !m_axi_awready)
  `LOOM_COVER(c_w_stall, m_axi_wvalid && !m_axi_wready)
  `LOOM_COVER(c_b_stall, m_axi_bvalid && !m_axi_bready)
  `LOOM_COVER(c_ar_stall, m_axi_arvalid && !m_axi_arready)
  `LOOM_COVER(c_r_stall, m_axi_rvalid && !m_axi_rready)
  `LOOM_COVER(c_ar_contend, f_arvalid && ld_arvalid)

endmodule : loom_core
