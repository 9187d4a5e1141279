// AXI4 N:1 multiplexer for the cores sharing one memory port: round robin per burst, responses routed by ID tag.
//
// AR and AW are arbitrated independently, one grant per burst (address
// handshake). A presented request stays selected until the slave takes it,
// so VALID and the payload never change under a stalled handshake. Each
// granted AW pushes its master into a small FIFO; W beats are taken only from
// the master at its head until WLAST, so write bursts reach the slave whole
// and in AW order. Outgoing IDs are {tag, master's own ID}: master j's tag is
// TagBase + j*TagStride (the fabric passes the global core index), and R/B
// beats go back to the master whose tag they carry. Responses of different
// masters may interleave on R; each master sees only its own.
// Arrays over masters are flat vectors, element j at [j*W +: W].
`include "loom_assert.svh"

module loom_axi_mux #(
  parameter int unsigned NumMasters  = 2,
  parameter int unsigned AddrW       = 48,
  parameter int unsigned DataBytes   = 8,
  parameter int unsigned MIdW        = 1,   // ID width of each master
  parameter int unsigned TagW        = 3,   // tag bits above the master's ID
  parameter int unsigned TagBase     = 0,
  parameter int unsigned TagStride   = 1,
  parameter int unsigned WFifoDepth  = 4,   // AW bursts granted ahead of their W data
  localparam int unsigned IdW        = TagW + MIdW,
  localparam int unsigned DataW      = DataBytes * 8
) (
  input  logic clk_i,
  input  logic rst_ni,

  // Masters (arrays over NumMasters); R and B payloads are shared, VALID is per master.
  input  logic [NumMasters-1:0]           s_arvalid_i,
  output logic [NumMasters-1:0]           s_arready_o,
  input  logic [NumMasters*AddrW-1:0]     s_araddr_i,
  input  logic [NumMasters*8-1:0]         s_arlen_i,
  input  logic [NumMasters*3-1:0]         s_arsize_i,
  input  logic [NumMasters*2-1:0]         s_arburst_i,
  input  logic [NumMasters*MIdW-1:0]      s_arid_i,
  output logic [NumMasters-1:0]           s_rvalid_o,
  input  logic [NumMasters-1:0]           s_rready_i,
  output logic [DataW-1:0]                s_rdata_o,
  output logic [1:0]                      s_rresp_o,
  output logic                            s_rlast_o,
  output logic [MIdW-1:0]                 s_rid_o,
  input  logic [NumMasters-1:0]           s_awvalid_i,
  output logic [NumMasters-1:0]           s_awready_o,
  input  logic [NumMasters*AddrW-1:0]     s_awaddr_i,
  input  logic [NumMasters*8-1:0]         s_awlen_i,
  input  logic [NumMasters*3-1:0]         s_awsize_i,
  input  logic [NumMasters*2-1:0]         s_awburst_i,
  input  logic [NumMasters*MIdW-1:0]      s_awid_i,
  input  logic [NumMasters-1:0]           s_wvalid_i,
  output logic [NumMasters-1:0]           s_wready_o,
  input  logic [NumMasters*DataW-1:0]     s_wdata_i,
  input  logic [NumMasters*DataBytes-1:0] s_wstrb_i,
  input  logic [NumMasters-1:0]           s_wlast_i,
  output logic [NumMasters-1:0]           s_bvalid_o,
  input  logic [NumMasters-1:0]           s_bready_i,
  output logic [1:0]                      s_bresp_o,
  output logic [MIdW-1:0]                 s_bid_o,

  // Memory port
  output logic                 m_arvalid_o,
  input  logic                 m_arready_i,
  output logic [AddrW-1:0]     m_araddr_o,
  output logic [7:0]           m_arlen_o,
  output logic [2:0]           m_arsize_o,
  output logic [1:0]           m_arburst_o,
  output logic [IdW-1:0]       m_arid_o,
  input  logic                 m_rvalid_i,
  output logic                 m_rready_o,
  input  logic [DataW-1:0]     m_rdata_i,
  input  logic [1:0]           m_rresp_i,
  input  logic                 m_rlast_i,
  input  logic [IdW-1:0]       m_rid_i,
  output logic                 m_awvalid_o,
  input  logic                 m_awready_i,
  output logic [AddrW-1:0]     m_awaddr_o,
  output logic [7:0]           m_awlen_o,
  output logic [2:0]           m_awsize_o,
  output logic [1:0]           m_awburst_o,
  output logic [IdW-1:0]       m_awid_o,
  output logic                 m_wvalid_o,
  input  logic                 m_wready_i,
  output logic [DataW-1:0]     m_wdata_o,
  output logic [DataBytes-1:0] m_wstrb_o,
  output logic                 m_wlast_o,
  input  logic                 m_bvalid_i,
  output logic                 m_bready_o,
  input  logic [1:0]           m_bresp_i,
  input  logic [IdW-1:0]       m_bid_i
);

  localparam int unsigned SelW = (NumMasters > 1) ? $clog2(NumMasters) : 1;
  localparam int unsigned PtrW = (WFifoDepth > 1) ? $clog2(WFifoDepth) : 1;

  typedef logic [SelW-1:0] sel_t;

  logic ar_lock_d, ar_lock_q, aw_lock_d, aw_lock_q;
  sel_t ar_sel, ar_sel_d, ar_sel_q, ar_rr_d, ar_rr_q;
  sel_t aw_sel, aw_sel_d, aw_sel_q, aw_rr_d, aw_rr_q;

  // Tag of master j: TagBase + j*TagStride.
  logic [NumMasters*TagW-1:0] tags;
  for (genvar g = 0; g < NumMasters; g++) begin : g_tag
    assign tags[g*TagW +: TagW] = TagW'(TagBase + g * TagStride);
  end

  // First requester at or after the round-robin pointer (AR and AW), and the
  // pointer value after a grant.
  sel_t ar_pick, aw_pick, ar_next, aw_next;

  always_comb begin
    ar_pick = ar_rr_q;
    aw_pick = aw_rr_q;
    for (int k = NumMasters - 1; k >= 0; k--) begin
      if (s_arvalid_i[(32'(ar_rr_q) + 32'(k)) % NumMasters]) ar_pick = SelW'((32'(ar_rr_q) + 32'(k)) % NumMasters);
      if (s_awvalid_i[(32'(aw_rr_q) + 32'(k)) % NumMasters]) aw_pick = SelW'((32'(aw_rr_q) + 32'(k)) % NumMasters);
    end
  end

  // ---------------------------------------------------------------------------
  // AR: round robin per burst
  // ---------------------------------------------------------------------------
  logic ar_hs;

  assign ar_sel  = ar_lock_q ? ar_sel_q : ar_pick;
  assign ar_next = (32'(ar_sel) + 1 >= NumMasters) ? '0 : ar_sel + 1'b1;

  always_comb begin
    m_arvalid_o = s_arvalid_i[ar_sel];
    m_araddr_o  = s_araddr_i[ar_sel*AddrW +: AddrW];
    m_arlen_o   = s_arlen_i[ar_sel*8 +: 8];
    m_arsize_o  = s_arsize_i[ar_sel*3 +: 3];
    m_arburst_o = s_arburst_i[ar_sel*2 +: 2];
    m_arid_o    = {tags[ar_sel*TagW +: TagW], s_arid_i[ar_sel*MIdW +: MIdW]};
    ar_hs       = m_arvalid_o & m_arready_i;
    s_arready_o = '0;
    s_arready_o[ar_sel] = m_arready_i;
    ar_lock_d   = m_arvalid_o & ~m_arready_i;
    ar_sel_d    = ar_sel;
    ar_rr_d     = ar_hs ? ar_next : ar_rr_q;
  end

  // ---------------------------------------------------------------------------
  // AW: round robin per burst; the W-order FIFO must have room
  // ---------------------------------------------------------------------------
  logic aw_hs, wq_full, wq_empty;

  assign aw_sel  = aw_lock_q ? aw_sel_q : aw_pick;
  assign aw_next = (32'(aw_sel) + 1 >= NumMasters) ? '0 : aw_sel + 1'b1;

  always_comb begin
    // While locked the FIFO cannot fill (only AW handshakes push), so gating
    // with ~wq_full never withdraws a presented VALID.
    m_awvalid_o = s_awvalid_i[aw_sel] & ~wq_full;
    m_awaddr_o  = s_awaddr_i[aw_sel*AddrW +: AddrW];
    m_awlen_o   = s_awlen_i[aw_sel*8 +: 8];
    m_awsize_o  = s_awsize_i[aw_sel*3 +: 3];
    m_awburst_o = s_awburst_i[aw_sel*2 +: 2];
    m_awid_o    = {tags[aw_sel*TagW +: TagW], s_awid_i[aw_sel*MIdW +: MIdW]};
    aw_hs       = m_awvalid_o & m_awready_i;
    s_awready_o = '0;
    s_awready_o[aw_sel] = m_awready_i & ~wq_full;
    aw_lock_d   = m_awvalid_o & ~m_awready_i;
    aw_sel_d    = aw_sel;
    aw_rr_d     = aw_hs ? aw_next : aw_rr_q;
  end

  // ---------------------------------------------------------------------------
  // W: beats of the master at the head of the AW-order FIFO
  // ---------------------------------------------------------------------------
  logic [WFifoDepth*SelW-1:0] wq_d, wq_q;
  logic [PtrW-1:0]            wq_rd_d, wq_rd_q, wq_wr_d, wq_wr_q;
  logic [PtrW:0]              wq_cnt_d, wq_cnt_q;
  sel_t                       w_sel;
  logic                       w_pop;

  assign wq_full  = (wq_cnt_q == (PtrW+1)'(WFifoDepth));
  assign wq_empty = (wq_cnt_q == '0);
  assign w_sel    = wq_q[wq_rd_q*SelW +: SelW];

  always_comb begin
    m_wvalid_o = ~wq_empty & s_wvalid_i[w_sel];
    m_wdata_o  = s_wdata_i[w_sel*DataW +: DataW];
    m_wstrb_o  = s_wstrb_i[w_sel*DataBytes +: DataBytes];
    m_wlast_o  = s_wlast_i[w_sel];
    s_wready_o = '0;
    s_wready_o[w_sel] = ~wq_empty & m_wready_i;
    w_pop      = m_wvalid_o & m_wready_i & m_wlast_o;

    wq_d     = wq_q;
    wq_rd_d  = wq_rd_q;
    wq_wr_d  = wq_wr_q;
    wq_cnt_d = wq_cnt_q;
    if (aw_hs) begin
      wq_d[wq_wr_q*SelW +: SelW] = aw_sel;
      wq_wr_d = (32'(wq_wr_q) + 1 >= WFifoDepth) ? '0 : wq_wr_q + 1'b1;
    end
    if (w_pop) begin
      wq_rd_d = (32'(wq_rd_q) + 1 >= WFifoDepth) ? '0 : wq_rd_q + 1'b1;
    end
    wq_cnt_d = wq_cnt_q + (PtrW+1)'(aw_hs) - (PtrW+1)'(w_pop);
  end

  // ---------------------------------------------------------------------------
  // R and B: route by tag
  // ---------------------------------------------------------------------------
  logic [NumMasters-1:0] r_hit, b_hit;

  always_comb begin
    for (int unsigned j = 0; j < NumMasters; j++) begin
      r_hit[j] = (m_rid_i[MIdW +: TagW] == tags[j*TagW +: TagW]);
      b_hit[j] = (m_bid_i[MIdW +: TagW] == tags[j*TagW +: TagW]);
    end
    s_rvalid_o = {NumMasters{m_rvalid_i}} & r_hit;
    s_bvalid_o = {NumMasters{m_bvalid_i}} & b_hit;
    // A beat with a foreign tag is dropped rather than left to block the port.
    m_rready_o = ~|r_hit | |(s_rready_i & r_hit);
    m_bready_o = ~|b_hit | |(s_bready_i & b_hit);
  end

  assign s_rdata_o = m_rdata_i;
  assign s_rresp_o = m_rresp_i;
  assign s_rlast_o = m_rlast_i;
  assign s_rid_o   = m_rid_i[MIdW-1:0];
  assign s_bresp_o = m_bresp_i;
  assign s_bid_o   = m_bid_i[MIdW-1:0];

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_lock_q <= 1'b0;
      ar_sel_q  <= '0;
      ar_rr_q   <= '0;
      aw_lock_q <= 1'b0;
      aw_sel_q  <= '0;
      aw_rr_q   <= '0;
      wq_q      <= '0;
      wq_rd_q   <= '0;
      wq_wr_q   <= '0;
      wq_cnt_q  <= '0;
    end else begin
      ar_lock_q <= ar_lock_d;
      ar_sel_q  <= ar_sel_d;
      ar_rr_q   <= ar_rr_d;
      aw_lock_q <= aw_lock_d;
      aw_sel_q  <= aw_sel_d;
      aw_rr_q   <= aw_rr_d;
      wq_q      <= wq_d;
      wq_rd_q   <= wq_rd_d;
      wq_wr_q   <= wq_wr_d;
      wq_cnt_q  <= wq_cnt_d;
    end
  end

  // ---------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(a_masters, NumMasters >= 1 && NumMasters <= (1 << SelW))
  `LOOM_ASSERT_INIT(a_tags_fit, TagBase + (NumMasters - 1) * TagStride < (1 << TagW))
  `LOOM_ASSERT_INIT(a_fifo_pow2, WFifoDepth >= 2 && (WFifoDepth & (WFifoDepth - 1)) == 0)
  // A stalled address handshake keeps VALID and its payload.
  `LOOM_ASSERT(a_ar_stable, m_arvalid_o && !m_arready_i |=>
               m_arvalid_o && $stable(m_araddr_o) && $stable(m_arid_o) && $stable(m_arlen_o))
  `LOOM_ASSERT(a_aw_stable, m_awvalid_o && !m_awready_i |=>
               m_awvalid_o && $stable(m_awaddr_o) && $stable(m_awid_o) && $stable(m_awlen_o))
  `LOOM_ASSERT(a_w_stable, m_wvalid_o && !m_wready_i |=> m_wvalid_o && $stable(m_wdata_o) && $stable(m_wlast_o))
  `LOOM_ASSERT(a_r_routed, m_rvalid_i |-> |r_hit)
  `LOOM_ASSERT(a_b_routed, m_bvalid_i |-> |b_hit)
  `LOOM_ASSERT(a_wq_bounds, wq_cnt_q <= (PtrW+1)'(WFifoDepth))

endmodule : loom_axi_mux
