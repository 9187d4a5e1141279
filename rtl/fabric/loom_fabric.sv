// loom fabric: control slave, NumCores cores, semaphores, interrupt and one AXI4 port mux per memory port.
//
// Core i uses memory port i % MemPorts; on the port its requests carry the
// ID {i[2:0], core's own ID bit}. SOFT_RESET bit i flushes core i (the CSR
// block also clears its RING_TAIL and IRQ bits). The interrupt line is the
// registered OR of IRQ_STATUS & IRQ_ENABLE.
// Arrays over ports/cores are flat vectors, element i at [i*W +: W]: bit-
// identical to [N-1:0][W-1:0] for every connection and for Verilator's C++
// view, and accepted by Yosys 0.23, which rejects multi-dimensional ports.
`include "loom_assert.svh"

module loom_fabric #(
  parameter int unsigned NumCores   = loom_pkg::CFG_TINY_CORES,
  parameter int unsigned Rows       = loom_pkg::CFG_TINY_ARRAY_ROWS,
  parameter int unsigned Cols       = loom_pkg::CFG_TINY_ARRAY_COLS,
  parameter int unsigned InBytes    = loom_pkg::CFG_TINY_IN_KIB * 1024,
  parameter int unsigned WgtBytes   = loom_pkg::CFG_TINY_WGT_KIB * 1024,
  parameter int unsigned AccBytes   = loom_pkg::CFG_TINY_ACC_KIB * 1024,
  parameter int unsigned OutBytes   = loom_pkg::CFG_TINY_OUT_KIB * 1024,
  parameter int unsigned ParamBytes = loom_pkg::CFG_TINY_PARAM_KIB * 1024,
  parameter int unsigned MemPorts   = loom_pkg::CFG_TINY_MEM_PORTS,
  parameter int unsigned MemBytes   = loom_pkg::CFG_TINY_MEM_WIDTH_BITS / 8,
  parameter int unsigned SpW        = (Cols * 4 > MemBytes) ? Cols * 4 : MemBytes,
  parameter int unsigned NumSems    = loom_pkg::CFG_TINY_SEMAPHORES,
  parameter int unsigned RingDepth  = loom_pkg::CFG_TINY_RING_DEPTH
) (
  input  logic clk_i,
  input  logic rst_ni,

  // AXI4-Lite control slave
  input  logic        s_axi_control_awvalid,
  output logic        s_axi_control_awready,
  input  logic [11:0] s_axi_control_awaddr,
  input  logic        s_axi_control_wvalid,
  output logic        s_axi_control_wready,
  input  logic [31:0] s_axi_control_wdata,
  input  logic [3:0]  s_axi_control_wstrb,
  output logic        s_axi_control_bvalid,
  input  logic        s_axi_control_bready,
  output logic [1:0]  s_axi_control_bresp,
  input  logic        s_axi_control_arvalid,
  output logic        s_axi_control_arready,
  input  logic [11:0] s_axi_control_araddr,
  output logic        s_axi_control_rvalid,
  input  logic        s_axi_control_rready,
  output logic [31:0] s_axi_control_rdata,
  output logic [1:0]  s_axi_control_rresp,

  // AXI4 memory masters, arrays over MemPorts; ID = {core index [3:1], source [0]}
  output logic [MemPorts-1:0]            m_axi_awvalid,
  input  logic [MemPorts-1:0]            m_axi_awready,
  output logic [MemPorts*64-1:0]         m_axi_awaddr,
  output logic [MemPorts*8-1:0]          m_axi_awlen,
  output logic [MemPorts*3-1:0]          m_axi_awsize,
  output logic [MemPorts*2-1:0]          m_axi_awburst,
  output logic [MemPorts*4-1:0]          m_axi_awid,
  output logic [MemPorts-1:0]            m_axi_wvalid,
  input  logic [MemPorts-1:0]            m_axi_wready,
  output logic [MemPorts*MemBytes*8-1:0] m_axi_wdata,
  output logic [MemPorts*MemBytes-1:0]   m_axi_wstrb,
  output logic [MemPorts-1:0]            m_axi_wlast,
  input  logic [MemPorts-1:0]            m_axi_bvalid,
  output logic [MemPorts-1:0]            m_axi_bready,
  input  logic [MemPorts*2-1:0]          m_axi_bresp,
  input  logic [MemPorts*4-1:0]          m_axi_bid,
  output logic [MemPorts-1:0]            m_axi_arvalid,
  input  logic [MemPorts-1:0]            m_axi_arready,
  output logic [MemPorts*64-1:0]         m_axi_araddr,
  output logic [MemPorts*8-1:0]          m_axi_arlen,
  output logic [MemPorts*3-1:0]          m_axi_arsize,
  output logic [MemPorts*2-1:0]          m_axi_arburst,
  output logic [MemPorts*4-1:0]          m_axi_arid,
  input  logic [MemPorts-1:0]            m_axi_rvalid,
  output logic [MemPorts-1:0]            m_axi_rready,
  input  logic [MemPorts*MemBytes*8-1:0] m_axi_rdata,
  input  logic [MemPorts*2-1:0]          m_axi_rresp,
  input  logic [MemPorts-1:0]            m_axi_rlast,
  input  logic [MemPorts*4-1:0]          m_axi_rid,

  output logic interrupt_o
);

  localparam int unsigned AddrW  = 48;
  localparam int unsigned DataW  = MemBytes * 8;
  localparam int unsigned NumErr = loom_pkg::NumErrCauses;
  localparam int unsigned NumCtr = loom_pkg::NumCounters;

  // ---------------------------------------------------------------------------
  // Control slave
  // ---------------------------------------------------------------------------
  logic [31:0]                 watchdog, irq_enable;
  logic [15:0]                 irq_status;
  logic [NumCores-1:0]         soft_reset;
  logic [NumSems-1:0]          sem_clear;
  logic [NumSems*32-1:0]       sem_value;
  logic [NumCores-1:0]         core_busy, core_done, core_error, core_blocked, core_irq_done, core_irq_err;
  logic [NumCores*AddrW-1:0]   ring_base, win_base, win_limit;
  logic [NumCores*32-1:0]      ring_size, ring_tail;
  logic [NumCores-1:0]         doorbell, ctr_clear;
  logic [NumCores*NumErr-1:0]  err_cause, err_clear;
  logic [NumCores*16-1:0]      ring_head, err_pc;
  logic [NumCores*NumCtr*64-1:0] counters;
  logic [NumCores-1:0]         sem_signal;
  logic [NumCores*8-1:0]       sem_id;

  loom_csr #(
    .NumCores (NumCores),
    .NumSems  (NumSems),
    .Rows     (Rows),
    .Cols     (Cols),
    .MemPorts (MemPorts)
  ) u_csr (
    .clk_i                 (clk_i),
    .rst_ni                (rst_ni),
    .s_axi_control_awvalid (s_axi_control_awvalid),
    .s_axi_control_awready (s_axi_control_awready),
    .s_axi_control_awaddr  (s_axi_control_awaddr),
    .s_axi_control_wvalid  (s_axi_control_wvalid),
    .s_axi_control_wready  (s_axi_control_wready),
    .s_axi_control_wdata   (s_axi_control_wdata),
    .s_axi_control_wstrb   (s_axi_control_wstrb),
    .s_axi_control_bvalid  (s_axi_control_bvalid),
    .s_axi_control_bready  (s_axi_control_bready),
    .s_axi_control_bresp   (s_axi_control_bresp),
    .s_axi_control_arvalid (s_axi_control_arvalid),
    .s_axi_control_arready (s_axi_control_arready),
    .s_axi_control_araddr  (s_axi_control_araddr),
    .s_axi_control_rvalid  (s_axi_control_rvalid),
    .s_axi_control_rready  (s_axi_control_rready),
    .s_axi_control_rdata   (s_axi_control_rdata),
    .s_axi_control_rresp   (s_axi_control_rresp),
    .irq_enable_o          (irq_enable),
    .watchdog_o            (watchdog),
    .irq_status_o          (irq_status),
    .soft_reset_o          (soft_reset),
    .sem_clear_o           (sem_clear),
    .sem_value_i           (sem_value),
    .core_busy_i           (core_busy),
    .core_done_i           (core_done),
    .core_error_i          (core_error),
    .core_blocked_i        (core_blocked),
    .core_irq_done_i       (core_irq_done),
    .core_irq_err_i        (core_irq_err),
    .ring_base_o           (ring_base),
    .win_base_o            (win_base),
    .win_limit_o           (win_limit),
    .ring_size_o           (ring_size),
    .ring_tail_o           (ring_tail),
    .doorbell_o            (doorbell),
    .ctr_clear_o           (ctr_clear),
    .err_cause_i           (err_cause),
    .err_clear_o           (err_clear),
    .ring_head_i           (ring_head),
    .err_pc_i              (err_pc),
    .counters_i            (counters)
  );

  // ---------------------------------------------------------------------------
  // Semaphores and interrupt
  // ---------------------------------------------------------------------------
  loom_sem #(
    .NumCores (NumCores),
    .NumSems  (NumSems)
  ) u_sem (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .signal_i    (sem_signal),
    .signal_id_i (sem_id),
    .clear_i     (sem_clear),
    .value_o     (sem_value)
  );

  logic irq_d, irq_q;
  logic unused_irq_enable;

  assign irq_d = |(irq_status & irq_enable[15:0]);
  assign unused_irq_enable = ^irq_enable[31:16];  // enable bits without a status bit

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      irq_q <= 1'b0;
    end else begin
      irq_q <= irq_d;
    end
  end

  assign interrupt_o = irq_q;

  // ---------------------------------------------------------------------------
  // Cores, with their AXI masters gathered into arrays over cores
  // ---------------------------------------------------------------------------
  logic [NumCores-1:0]          c_arvalid, c_arready, c_rvalid, c_rready, c_rlast, c_arid, c_rid;
  logic [NumCores*AddrW-1:0]    c_araddr, c_awaddr;
  logic [NumCores*8-1:0]        c_arlen, c_awlen;
  logic [NumCores*3-1:0]        c_arsize, c_awsize;
  logic [NumCores*2-1:0]        c_arburst, c_awburst, c_rresp, c_bresp;
  logic [NumCores*DataW-1:0]    c_rdata, c_wdata;
  logic [NumCores-1:0]          c_awvalid, c_awready, c_awid, c_wvalid, c_wready, c_wlast;
  logic [NumCores-1:0]          c_bvalid, c_bready, c_bid;
  logic [NumCores*MemBytes-1:0] c_wstrb;

  for (genvar i = 0; i < NumCores; i++) begin : g_core
    logic [15:0] ring_size_sat, ring_tail_sat;

    // RING_SIZE and RING_TAIL hold 32 bits (read back as written); a value
    // past 16 bits reaches the core as 0xFFFF, which is neither a power of
    // two nor below any legal size, so the doorbell faults as in the golden
    // model instead of silently wrapping.
    assign ring_size_sat = |ring_size[i*32 + 16 +: 16] ? 16'hFFFF : ring_size[i*32 +: 16];
    assign ring_tail_sat = |ring_tail[i*32 + 16 +: 16] ? 16'hFFFF : ring_tail[i*32 +: 16];

    loom_core #(
      .Rows       (Rows),
      .Cols       (Cols),
      .InBytes    (InBytes),
      .WgtBytes   (WgtBytes),
      .AccBytes   (AccBytes),
      .OutBytes   (OutBytes),
      .ParamBytes (ParamBytes),
      .MemBytes   (MemBytes),
      .SpW        (SpW),
      .NumSems    (NumSems),
      .RingDepth  (RingDepth)
    ) u_core (
      .clk_i         (clk_i),
      .rst_ni        (rst_ni),
      .flush_i       (soft_reset[i]),
      .ring_base_i   (ring_base[i*AddrW +: AddrW]),
      .ring_size_i   (ring_size_sat),
      .ring_tail_i   (ring_tail_sat),
      .doorbell_i    (doorbell[i]),
      .win_base_i    (win_base[i*AddrW +: AddrW]),
      .win_limit_i   (win_limit[i*AddrW +: AddrW]),
      .watchdog_i    (watchdog),
      .ctr_clear_i   (ctr_clear[i]),
      .ring_head_o   (ring_head[i*16 +: 16]),
      .busy_o        (core_busy[i]),
      .done_o        (core_done[i]),
      .blocked_o     (core_blocked[i]),
      .error_o       (core_error[i]),
      .err_cause_o   (err_cause[i*NumErr +: NumErr]),
      .err_clear_i   (err_clear[i*NumErr +: NumErr]),
      .err_pc_o      (err_pc[i*16 +: 16]),
      .irq_done_o    (core_irq_done[i]),
      .irq_err_o     (core_irq_err[i]),
      .counters_o    (counters[i*NumCtr*64 +: NumCtr*64]),
      .sem_signal_o  (sem_signal[i]),
      .sem_id_o      (sem_id[i*8 +: 8]),
      .sem_value_i   (sem_value),
      .m_axi_arvalid (c_arvalid[i]),
      .m_axi_arready (c_arready[i]),
      .m_axi_araddr  (c_araddr[i*AddrW +: AddrW]),
      .m_axi_arlen   (c_arlen[i*8 +: 8]),
      .m_axi_arsize  (c_arsize[i*3 +: 3]),
      .m_axi_arburst (c_arburst[i*2 +: 2]),
      .m_axi_arid    (c_arid[i]),
      .m_axi_rvalid  (c_rvalid[i]),
      .m_axi_rready  (c_rready[i]),
      .m_axi_rdata   (c_rdata[i*DataW +: DataW]),
      .m_axi_rresp   (c_rresp[i*2 +: 2]),
      .m_axi_rlast   (c_rlast[i]),
      .m_axi_rid     (c_rid[i]),
      .m_axi_awvalid (c_awvalid[i]),
      .m_axi_awready (c_awready[i]),
      .m_axi_awaddr  (c_awaddr[i*AddrW +: AddrW]),
      .m_axi_awlen   (c_awlen[i*8 +: 8]),
      .m_axi_awsize  (c_awsize[i*3 +: 3]),
      .m_axi_awburst (c_awburst[i*2 +: 2]),
      .m_axi_awid    (c_awid[i]),
      .m_axi_wvalid  (c_wvalid[i]),
      .m_axi_wready  (c_wready[i]),
      .m_axi_wdata   (c_wdata[i*DataW +: DataW]),
      .m_axi_wstrb   (c_wstrb[i*MemBytes +: MemBytes]),
      .m_axi_wlast   (c_wlast[i]),
      .m_axi_bvalid  (c_bvalid[i]),
      .m_axi_bready  (c_bready[i]),
      .m_axi_bresp   (c_bresp[i*2 +: 2]),
      .m_axi_bid     (c_bid[i])
    );
  end

  // ---------------------------------------------------------------------------
  // Memory ports: port p serves cores p, p + MemPorts, p + 2*MemPorts, ...
  // ---------------------------------------------------------------------------
  for (genvar p = 0; p < MemPorts; p++) begin : g_port
    localparam int unsigned NumM = (NumCores > p) ? (NumCores - p + MemPorts - 1) / MemPorts : 0;

    if (NumM == 0) begin : g_idle
      // More ports than cores: the port stays quiet.
      logic unused_port;
      assign m_axi_arvalid[p] = 1'b0;
      assign m_axi_araddr[p*64 +: 64] = '0;
      assign m_axi_arlen[p*8 +: 8] = '0;
      assign m_axi_arsize[p*3 +: 3] = '0;
      assign m_axi_arburst[p*2 +: 2] = '0;
      assign m_axi_arid[p*4 +: 4] = '0;
      assign m_axi_rready[p] = 1'b1;
      assign m_axi_awvalid[p] = 1'b0;
      assign m_axi_awaddr[p*64 +: 64] = '0;
      assign m_axi_awlen[p*8 +: 8] = '0;
      assign m_axi_awsize[p*3 +: 3] = '0;
      assign m_axi_awburst[p*2 +: 2] = '0;
      assign m_axi_awid[p*4 +: 4] = '0;
      assign m_axi_wvalid[p] = 1'b0;
      assign m_axi_wdata[p*DataW +: DataW] = '0;
      assign m_axi_wstrb[p*MemBytes +: MemBytes] = '0;
      assign m_axi_wlast[p] = 1'b0;
      assign m_axi_bready[p] = 1'b1;
      assign unused_port = ^{m_axi_arready[p], m_axi_rvalid[p], m_axi_rdata[p*DataW +: DataW],
                             m_axi_rresp[p*2 +: 2], m_axi_rlast[p], m_axi_rid[p*4 +: 4],
                             m_axi_awready[p], m_axi_wready[p], m_axi_bvalid[p],
                             m_axi_bresp[p*2 +: 2], m_axi_bid[p*4 +: 4]};
    end else begin : g_mux
      logic [NumM-1:0]          s_arvalid, s_arready, s_rvalid, s_rready, s_arid;
      logic [NumM*AddrW-1:0]    s_araddr, s_awaddr;
      logic [NumM*8-1:0]        s_arlen, s_awlen;
      logic [NumM*3-1:0]        s_arsize, s_awsize;
      logic [NumM*2-1:0]        s_arburst, s_awburst;
      logic [NumM-1:0]          s_awvalid, s_awready, s_awid, s_wvalid, s_wready, s_wlast;
      logic [NumM-1:0]          s_bvalid, s_bready;
      logic [NumM*DataW-1:0]    s_wdata;
      logic [NumM*MemBytes-1:0] s_wstrb;
      logic [DataW-1:0]         s_rdata;
      logic [1:0]               s_rresp, s_bresp;
      logic                     s_rlast, s_rid, s_bid;
      logic [AddrW-1:0]         araddr, awaddr;

      for (genvar j = 0; j < NumM; j++) begin : g_m
        localparam int unsigned C = p + j * MemPorts;  // global core index
        assign s_arvalid[j]                   = c_arvalid[C];
        assign c_arready[C]                   = s_arready[j];
        assign s_araddr[j*AddrW +: AddrW]     = c_araddr[C*AddrW +: AddrW];
        assign s_arlen[j*8 +: 8]              = c_arlen[C*8 +: 8];
        assign s_arsize[j*3 +: 3]             = c_arsize[C*3 +: 3];
        assign s_arburst[j*2 +: 2]            = c_arburst[C*2 +: 2];
        assign s_arid[j]                      = c_arid[C];
        assign c_rvalid[C]                    = s_rvalid[j];
        assign s_rready[j]                    = c_rready[C];
        assign c_rdata[C*DataW +: DataW]      = s_rdata;
        assign c_rresp[C*2 +: 2]              = s_rresp;
        assign c_rlast[C]                     = s_rlast;
        assign c_rid[C]                       = s_rid;
        assign s_awvalid[j]                   = c_awvalid[C];
        assign c_awready[C]                   = s_awready[j];
        assign s_awaddr[j*AddrW +: AddrW]     = c_awaddr[C*AddrW +: AddrW];
        assign s_awlen[j*8 +: 8]              = c_awlen[C*8 +: 8];
        assign s_awsize[j*3 +: 3]             = c_awsize[C*3 +: 3];
        assign s_awburst[j*2 +: 2]            = c_awburst[C*2 +: 2];
        assign s_awid[j]                      = c_awid[C];
        assign s_wvalid[j]                    = c_wvalid[C];
        assign c_wready[C]                    = s_wready[j];
        assign s_wdata[j*DataW +: DataW]      = c_wdata[C*DataW +: DataW];
        assign s_wstrb[j*MemBytes +: MemBytes] = c_wstrb[C*MemBytes +: MemBytes];
        assign s_wlast[j]                     = c_wlast[C];
        assign c_bvalid[C]                    = s_bvalid[j];
        assign s_bready[j]                    = c_bready[C];
        assign c_bresp[C*2 +: 2]              = s_bresp;
        assign c_bid[C]                       = s_bid;
      end

      loom_axi_mux #(
        .NumMasters (NumM),
        .AddrW      (AddrW),
        .DataBytes  (MemBytes),
        .MIdW       (1),
        .TagW       (3),
        .TagBase    (p),
        .TagStride  (MemPorts)
      ) u_mux (
        .clk_i       (clk_i),
        .rst_ni      (rst_ni),
        .s_arvalid_i (s_arvalid),
        .s_arready_o (s_arready),
        .s_araddr_i  (s_araddr),
        .s_arlen_i   (s_arlen),
        .s_arsize_i  (s_arsize),
        .s_arburst_i (s_arburst),
        .s_arid_i    (s_arid),
        .s_rvalid_o  (s_rvalid),
        .s_rready_i  (s_rready),
        .s_rdata_o   (s_rdata),
        .s_rresp_o   (s_rresp),
        .s_rlast_o   (s_rlast),
        .s_rid_o     (s_rid),
        .s_awvalid_i (s_awvalid),
        .s_awready_o (s_awready),
        .s_awaddr_i  (s_awaddr),
        .s_awlen_i   (s_awlen),
        .s_awsize_i  (s_awsize),
        .s_awburst_i (s_awburst),
        .s_awid_i    (s_awid),
        .s_wvalid_i  (s_wvalid),
        .s_wready_o  (s_wready),
        .s_wdata_i   (s_wdata),
        .s_wstrb_i   (s_wstrb),
        .s_wlast_i   (s_wlast),
        .s_bvalid_o  (s_bvalid),
        .s_bready_i  (s_bready),
        .s_bresp_o   (s_bresp),
        .s_bid_o     (s_bid),
        .m_arvalid_o (m_axi_arvalid[p]),
        .m_arready_i (m_axi_arready[p]),
        .m_araddr_o  (araddr),
        .m_arlen_o   (m_axi_arlen[p*8 +: 8]),
        .m_arsize_o  (m_axi_arsize[p*3 +: 3]),
        .m_arburst_o (m_axi_arburst[p*2 +: 2]),
        .m_arid_o    (m_axi_arid[p*4 +: 4]),
        .m_rvalid_i  (m_axi_rvalid[p]),
        .m_rready_o  (m_axi_rready[p]),
        .m_rdata_i   (m_axi_rdata[p*DataW +: DataW]),
        .m_rresp_i   (m_axi_rresp[p*2 +: 2]),
        .m_rlast_i   (m_axi_rlast[p]),
        .m_rid_i     (m_axi_rid[p*4 +: 4]),
        .m_awvalid_o (m_axi_awvalid[p]),
        .m_awready_i (m_axi_awready[p]),
        .m_awaddr_o  (awaddr),
        .m_awlen_o   (m_axi_awlen[p*8 +: 8]),
        .m_awsize_o  (m_axi_awsize[p*3 +: 3]),
        .m_awburst_o (m_axi_awburst[p*2 +: 2]),
        .m_awid_o    (m_axi_awid[p*4 +: 4]),
        .m_wvalid_o  (m_axi_wvalid[p]),
        .m_wready_i  (m_axi_wready[p]),
        .m_wdata_o   (m_axi_wdata[p*DataW +: DataW]),
        .m_wstrb_o   (m_axi_wstrb[p*MemBytes +: MemBytes]),
        .m_wlast_o   (m_axi_wlast[p]),
        .m_bvalid_i  (m_axi_bvalid[p]),
        .m_bready_o  (m_axi_bready[p]),
        .m_bresp_i   (m_axi_bresp[p*2 +: 2]),
        .m_bid_i     (m_axi_bid[p*4 +: 4])
      );

      // Device addresses are 48 bits; the port is 64 bits with the top zero.
      assign m_axi_araddr[p*64 +: 64] = {{(64 - AddrW){1'b0}}, araddr};
      assign m_axi_awaddr[p*64 +: 64] = {{(64 - AddrW){1'b0}}, awaddr};
    end
  end

  // ---------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(a_cores, NumCores >= 1 && NumCores <= 8)  // 3 ID bits carry the core index
  `LOOM_ASSERT_INIT(a_ports, MemPorts >= 1)
  `LOOM_ASSERT_INIT(a_spw, SpW >= MemBytes)

endmodule : loom_fabric
