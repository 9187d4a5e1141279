// Finishes a unit's AXI transactions that a soft reset orphaned: holds requests, sinks R beats and B responses, completes W bursts.
//
// flush_i returns a unit to its reset state at once, but AXI forbids
// abandoning a transaction: a request whose valid is up must stay up until
// accepted, R beats and B responses of accepted requests still arrive, and
// an accepted AW still needs all its W beats. This block sits between the
// load/store units and the core's master port, counts what is outstanding,
// and at a flush takes over: it keeps presenting a pending AR/AW (latched),
// accepts the orphaned R beats and B responses (responses of one ID return
// in order, so they are the first ones to come back) and finishes open W
// bursts with WSTRB = 0. Nothing of the old transactions reaches the
// restarted units, and their new requests wait until the port is theirs.
`include "loom_assert.svh"

module loom_axi_drain #(
  parameter int unsigned AddrW    = 48,
  parameter int unsigned MemBytes = 8,
  parameter int unsigned MaxOpen  = 8,    // AWs whose W bursts may be open at once
  parameter int unsigned CntW     = 4
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  flush_i,

  // read request: load unit -> core read mux
  input  logic                  unit_arvalid_i,
  output logic                  unit_arready_o,
  input  logic [AddrW-1:0]      unit_araddr_i,
  input  logic [7:0]            unit_arlen_i,
  input  logic [2:0]            unit_arsize_i,
  input  logic [1:0]            unit_arburst_i,
  output logic                  arvalid_o,
  input  logic                  arready_i,
  output logic [AddrW-1:0]      araddr_o,
  output logic [7:0]            arlen_o,
  output logic [2:0]            arsize_o,
  output logic [1:0]            arburst_o,
  // read data (the unit's ID only)
  input  logic                  rvalid_i,
  input  logic                  rlast_i,
  output logic                  rready_o,
  output logic                  unit_rvalid_o,
  input  logic                  unit_rready_i,

  // write request: store unit -> master port
  input  logic                  unit_awvalid_i,
  output logic                  unit_awready_o,
  input  logic [AddrW-1:0]      unit_awaddr_i,
  input  logic [7:0]            unit_awlen_i,
  input  logic [2:0]            unit_awsize_i,
  input  logic [1:0]            unit_awburst_i,
  output logic                  awvalid_o,
  input  logic                  awready_i,
  output logic [AddrW-1:0]      awaddr_o,
  output logic [7:0]            awlen_o,
  output logic [2:0]            awsize_o,
  output logic [1:0]            awburst_o,
  // write data and response
  input  logic                  unit_wvalid_i,
  output logic                  unit_wready_o,
  input  logic [MemBytes*8-1:0] unit_wdata_i,
  input  logic [MemBytes-1:0]   unit_wstrb_i,
  input  logic                  unit_wlast_i,
  output logic                  wvalid_o,
  input  logic                  wready_i,
  output logic [MemBytes*8-1:0] wdata_o,
  output logic [MemBytes-1:0]   wstrb_o,
  output logic                  wlast_o,
  input  logic                  bvalid_i,
  output logic                  bready_o,
  output logic                  unit_bvalid_o,
  input  logic                  unit_bready_i
);

  localparam int unsigned ReqW = AddrW + 8 + 3 + 2;

  // A request pending at the flush, held until accepted.
  logic            ar_hold_d, ar_hold_q, aw_hold_d, aw_hold_q;
  logic [ReqW-1:0] ar_req_d, ar_req_q, aw_req_d, aw_req_q;

  logic [CntW-1:0] r_out_d, r_out_q, r_orphan_d, r_orphan_q;
  logic [CntW-1:0] b_out_d, b_out_q, b_orphan_d, b_orphan_q;
  logic [CntW-1:0] w_orphan_d, w_orphan_q;   // open W bursts to finish
  logic [7:0]      wbeat_d, wbeat_q;         // W beats sent of the oldest open burst
  logic [7:0]      len_q;                    // AWLEN of the oldest open burst
  logic            len_empty, len_full;
  logic [$clog2(MaxOpen + 1)-1:0] len_count;

  logic r_sink, b_sink, w_sink;
  logic ar_fire, aw_fire, r_done, w_fire, w_done, b_fire;

  // ---------------------------------------------------------------------------
  // Requests.
  assign arvalid_o      = ar_hold_q || unit_arvalid_i;
  assign {araddr_o, arlen_o, arsize_o, arburst_o} =
      ar_hold_q ? ar_req_q : {unit_araddr_i, unit_arlen_i, unit_arsize_i, unit_arburst_i};
  assign unit_arready_o = arready_i && !ar_hold_q;
  assign ar_fire        = arvalid_o && arready_i;

  assign awvalid_o      = aw_hold_q || unit_awvalid_i;
  assign {awaddr_o, awlen_o, awsize_o, awburst_o} =
      aw_hold_q ? aw_req_q : {unit_awaddr_i, unit_awlen_i, unit_awsize_i, unit_awburst_i};
  assign unit_awready_o = awready_i && !aw_hold_q;
  assign aw_fire        = awvalid_o && awready_i;

  // ---------------------------------------------------------------------------
  // Responses and write data.
  assign r_sink = (r_orphan_q != '0);
  assign b_sink = (b_orphan_q != '0);
  assign w_sink = (w_orphan_q != '0);

  assign unit_rvalid_o = rvalid_i && !r_sink;
  assign rready_o      = r_sink || unit_rready_i;
  assign unit_bvalid_o = bvalid_i && !b_sink;
  assign bready_o      = b_sink || unit_bready_i;

  assign wvalid_o      = w_sink || unit_wvalid_i;
  assign wdata_o       = w_sink ? '0 : unit_wdata_i;
  assign wstrb_o       = w_sink ? '0 : unit_wstrb_i;
  assign wlast_o       = w_sink ? (wbeat_q == len_q) : unit_wlast_i;
  assign unit_wready_o = wready_i && !w_sink;

  assign r_done = rvalid_i && rready_o && rlast_i;
  assign w_fire = wvalid_o && wready_i;
  assign w_done = w_fire && wlast_o;
  assign b_fire = bvalid_i && bready_o;

  // Lengths of accepted AWs, oldest first; a W burst's last beat retires one.
  loom_fifo #(
    .Width (8),
    .Depth (MaxOpen)
  ) u_len_fifo (
    .clk_i   (clk_i),
    .rst_ni  (rst_ni),
    .flush_i (1'b0),
    .push_i  (aw_fire),
    .wdata_i (awlen_o),
    .full_o  (len_full),
    .pop_i   (w_done && !len_empty),
    .rdata_o (len_q),
    .empty_o (len_empty),
    .count_o (len_count)
  );

  always_comb begin
    ar_hold_d  = ar_hold_q && !arready_i;
    ar_req_d   = ar_req_q;
    aw_hold_d  = aw_hold_q && !awready_i;
    aw_req_d   = aw_req_q;
    r_out_d    = r_out_q + CntW'(ar_fire) - CntW'(r_done);
    r_orphan_d = r_orphan_q - CntW'(r_sink && r_done);
    b_out_d    = b_out_q + CntW'(aw_fire) - CntW'(b_fire);
    b_orphan_d = b_orphan_q - CntW'(b_sink && b_fire);
    w_orphan_d = w_orphan_q - CntW'(w_sink && w_done);
    wbeat_d    = w_fire ? (wlast_o ? 8'd0 : wbeat_q + 8'd1) : wbeat_q;

    // A held request that is accepted now belongs to the old transactions.
    if (ar_hold_q && arready_i) r_orphan_d = r_orphan_d + CntW'(1);
    if (aw_hold_q && awready_i) begin
      b_orphan_d = b_orphan_d + CntW'(1);
      w_orphan_d = w_orphan_d + CntW'(1);
    end

    if (flush_i) begin
      // Everything outstanding after this cycle is orphaned.
      r_orphan_d = r_out_d;
      b_orphan_d = b_out_d;
      w_orphan_d = CntW'(len_count) + CntW'(aw_fire) - CntW'(w_done);
      if (unit_arvalid_i && !arready_i && !ar_hold_q) begin
        ar_hold_d = 1'b1;
        ar_req_d  = {unit_araddr_i, unit_arlen_i, unit_arsize_i, unit_arburst_i};
      end
      if (unit_awvalid_i && !awready_i && !aw_hold_q) begin
        aw_hold_d = 1'b1;
        aw_req_d  = {unit_awaddr_i, unit_awlen_i, unit_awsize_i, unit_awburst_i};
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_hold_q  <= 1'b0;
      ar_req_q   <= '0;
      aw_hold_q  <= 1'b0;
      aw_req_q   <= '0;
      r_out_q    <= '0;
      r_orphan_q <= '0;
      b_out_q    <= '0;
      b_orphan_q <= '0;
      w_orphan_q <= '0;
      wbeat_q    <= '0;
    end else begin
      ar_hold_q  <= ar_hold_d;
      ar_req_q   <= ar_req_d;
      aw_hold_q  <= aw_hold_d;
      aw_req_q   <= aw_req_d;
      r_out_q    <= r_out_d;
      r_orphan_q <= r_orphan_d;
      b_out_q    <= b_out_d;
      b_orphan_q <= b_orphan_d;
      w_orphan_q <= w_orphan_d;
      wbeat_q    <= wbeat_d;
    end
  end

  `LOOM_ASSERT_INIT(a_maxopen, MaxOpen < (1 << CntW))
  `LOOM_ASSERT(a_len_no_overflow, !(aw_fire && len_full))
  // An orphaned W burst needs its AW (the store unit never sends W before AW).
  `LOOM_ASSERT(a_w_after_aw, !(w_fire && len_empty && !aw_fire))
  `LOOM_ASSERT(a_r_count, !(r_done && r_out_q == '0))
  `LOOM_ASSERT(a_b_count, !(b_fire && b_out_q == '0))
  `LOOM_ASSERT(a_r_no_overflow, !(ar_fire && r_out_q == '1))

endmodule : loom_axi_drain
