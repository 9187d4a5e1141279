// POSTOP element datapath, Lanes elements a cycle: int32 accumulator + bias -> requantize -> (+ residual) -> clamp -> int8.
//
// Per element, in every lane (isa.yaml, POSTOP and ELTWISE add):
//   v = acc + bias                          (int32, wraps modulo 2^32)
//   y = rq(v, mult, shift) + out_zp
//       + rq(res - res_zp, res_mult, res_shift)   when residual_i
//   out = clamp(y, clip_lo, clip_hi)
// with sum_i (ELTWISE add, which also sets residual_i) the two terms are one
// requantizing add, rounded once:
//   y = rqs(v, mult, res - res_zp, res_mult, shift) + out_zp
// and with rescale_i (POSTOP's requantizing add fused behind the post-op,
// also rounded once; res_shift is not used):
//   x   = clamp(rq(v, mult, shift) + out_zp, clip_lo, clip_hi)
//   y   = rqs(x - a_zp, a_mult, res - res_zp, res_mult, a_shift) + add_zp
//   out = clamp(y, add_lo, add_hi)
// where rqs(a, ma, b, mb, s) = sat32(round_half_away((a * ma + b * mb) / 2^s)).
// With cfg_even_i (POOL's average, POSTOP's `even`) the main requantizer rounds ties to even
// (rqe); the residual and rescale ones always round away from zero.
// Each lane has three requantizers: the main one (v), the residual one and
// the rescale one (stage A, between the first two and stage S). The residual
// requantizer has a second product (loom_requant Dual): with sum_i it
// computes the whole add and the main one idles at rq(0, 0, 1) = 0; with
// residual_i alone it computes rq(res - res_zp, res_mult, res_shift). Stage A
// has a second product too: with rescale_i it computes the whole add while
// the raw residual res - res_zp rides through the main requantizer as its
// sideband, in step with x, and the residual requantizer idles. Without
// rescale_i stage A is bypassed and idle.
// Both operands of a requantizing add are int8 values minus int8 zero points,
// within +-255 (10 bits): the residual requantizer and stage A take 10-bit
// operands. With sum_i the controller feeds acc = A and bias = -a_zp, so v
// is within +-255 too (asserted).
// y is formed exactly in 34 bits before the clamp, so nothing wraps after the
// requantizers. Per-element operands (acc, bias, mult, shift, res) travel with
// the stream, Lanes of each side by side (lane l in bits [l*W +: W]); the
// per-instruction fields (cfg_*) are quasi-static: they must not change while
// busy_o is high (the controller issues the next POSTOP only after the unit
// drains). The lanes share one valid/ready handshake: a beat is a row of
// Lanes elements, so a core's post-processing keeps pace with the array's
// accumulator rows (as NVDLA sizes its SDP to the MAC array). Every lane's
// first two requantizers, and every lane's stage A, see identical valid/ready
// inputs and therefore advance in lockstep; lane 0's handshake stands for
// all, and assertions check it.
//
// Latency: 1 (bias/residual prepare) + 5 (requant) + 1 (sum) + 1 (clamp) = 8,
// and 13 with rescale_i (+5 for stage A).
`include "loom_assert.svh"

module loom_postop #(
  parameter int unsigned Lanes = 1
) (
  input  logic              clk_i,
  input  logic              rst_ni,

  // Instruction-level configuration, stable while busy_o.
  input  logic              cfg_residual_i,
  input  logic signed [7:0] cfg_out_zp_i,
  input  logic signed [7:0] cfg_clip_lo_i,
  input  logic signed [7:0] cfg_clip_hi_i,
  input  logic signed [7:0] cfg_res_zp_i,
  input  logic signed [31:0] cfg_res_mult_i,
  input  logic        [5:0] cfg_res_shift_i,
  input  logic              cfg_sum_i,       // ELTWISE add: needs cfg_residual_i, not with cfg_rescale_i
  input  logic              cfg_even_i,      // POOL avg, POSTOP even: the main requantizer rounds ties to even
  input  logic              cfg_rescale_i,
  input  logic signed [7:0] cfg_a_zp_i,
  input  logic signed [31:0] cfg_a_mult_i,
  input  logic        [5:0] cfg_a_shift_i,
  input  logic signed [7:0] cfg_add_zp_i,
  input  logic signed [7:0] cfg_add_lo_i,
  input  logic signed [7:0] cfg_add_hi_i,

  // Beat stream in: Lanes elements.
  input  logic                  in_valid_i,
  output logic                  in_ready_o,
  input  logic [Lanes*32-1:0]   acc_i,
  input  logic [Lanes*32-1:0]   bias_i,
  input  logic [Lanes*32-1:0]   mult_i,
  input  logic [Lanes*6-1:0]    shift_i,
  input  logic [Lanes*8-1:0]    res_i,

  // Beat stream out.
  output logic                  out_valid_o,
  input  logic                  out_ready_i,
  output logic [Lanes*8-1:0]    out_o,

  // High while any beat is in flight.
  output logic              busy_o
);

  // ---------------------------------------------------------------------------
  // Shared handshake: stage P, the requantizers (lane 0's), stage A, stage S,
  // stage C.
  // ---------------------------------------------------------------------------
  logic signed [7:0] c_lo, c_hi;
  assign c_lo = cfg_rescale_i ? cfg_add_lo_i : cfg_clip_lo_i;
  assign c_hi = cfg_rescale_i ? cfg_add_hi_i : cfg_clip_hi_i;
  logic p_valid_q, s_valid_q, c_valid_q;
  logic p_en, s_en, c_en;
  logic [Lanes-1:0] rq_in_ready, rq_res_in_ready, rq_out_valid, rq_res_out_valid;
  logic [Lanes-1:0] ra_in_ready, ra_out_valid;
  logic mid_ready, s_in_valid;

  assign p_en = ~p_valid_q | rq_in_ready[0];
  assign c_en = ~c_valid_q | out_ready_i;
  assign s_en = ~s_valid_q | c_en;
  // The first requantizers hand over to stage A (rescale) or to stage S.
  assign mid_ready  = cfg_rescale_i ? ra_in_ready[0] : s_en;
  assign s_in_valid = cfg_rescale_i ? ra_out_valid[0] : rq_out_valid[0];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      p_valid_q <= 1'b0;
      s_valid_q <= 1'b0;
      c_valid_q <= 1'b0;
    end else begin
      p_valid_q <= p_en ? in_valid_i : p_valid_q;
      s_valid_q <= s_en ? s_in_valid : s_valid_q;
      c_valid_q <= c_en ? s_valid_q : c_valid_q;
    end
  end

  for (genvar l = 0; l < Lanes; l++) begin : g_lane
    // -------------------------------------------------------------------------
    // Stage P: bias add and residual zero-point subtraction.
    // -------------------------------------------------------------------------
    logic signed [31:0] p_v_d, p_v_q, p_mult_d, p_mult_q;
    logic        [5:0]  p_shift_d, p_shift_q;
    logic signed [9:0]  p_rv_d, p_rv_q;
    logic signed [31:0] p_rmult_d, p_rmult_q;
    logic        [5:0]  p_rshift_d, p_rshift_q;
    logic signed [9:0]  p_raw_d, p_raw_q;  // res - res_zp (0 without a residual)
    logic signed [31:0] v_in;
    logic signed [7:0]  res;
    logic signed [31:0] rq_y, rq_res_y, ra_y;
    logic signed [32:0] x_full;
    logic signed [7:0]  x;
    logic signed [9:0]  ra_v;
    logic signed [9:0]  rq_raw;             // the raw residual beside rq_y
    logic               rq_res_side, ra_side;  // unused sidebands

    assign res  = res_i[8*l +: 8];
    assign v_in = acc_i[32*l +: 32] + bias_i[32*l +: 32];

    always_comb begin
      p_v_d      = p_v_q;
      p_mult_d   = p_mult_q;
      p_shift_d  = p_shift_q;
      p_rv_d     = p_rv_q;
      p_rmult_d  = p_rmult_q;
      p_rshift_d = p_rshift_q;
      p_raw_d    = p_raw_q;
      if (p_en) begin
        // int8 minus int8: exact in 10 bits.
        p_raw_d = cfg_residual_i ? 10'(res) - 10'(cfg_res_zp_i) : 10'sd0;
        if (cfg_sum_i) begin
          // The residual requantizer computes the whole add; the main one
          // computes rq(0, 0, 1) = 0. v_in is A - a_zp here (asserted below).
          p_v_d      = '0;
          p_mult_d   = '0;
          p_shift_d  = 6'd1;
          p_rv_d     = v_in[9:0];
          p_rmult_d  = mult_i[32*l +: 32];
          p_rshift_d = shift_i[6*l +: 6];
        end else begin
          p_v_d     = v_in;
          p_mult_d  = mult_i[32*l +: 32];
          p_shift_d = shift_i[6*l +: 6];
          // Without a residual, and with rescale (stage A adds it), the
          // residual requantizer computes rq(0, 0, 1) = 0, which keeps its
          // operands inside the contract and its inputs quiet.
          if (cfg_residual_i && !cfg_rescale_i) begin
            p_rv_d     = p_raw_d;
            p_rmult_d  = cfg_res_mult_i;
            p_rshift_d = cfg_res_shift_i;
          end else begin
            p_rv_d     = '0;
            p_rmult_d  = '0;
            p_rshift_d = 6'd1;
          end
        end
      end
    end

    always_ff @(posedge clk_i) begin
      p_v_q      <= p_v_d;
      p_mult_q   <= p_mult_d;
      p_shift_q  <= p_shift_d;
      p_rv_q     <= p_rv_d;
      p_rmult_q  <= p_rmult_d;
      p_rshift_q <= p_rshift_d;
      p_raw_q    <= p_raw_d;
    end

    // -------------------------------------------------------------------------
    // Requantizers (main and residual), in lockstep. The main one carries the
    // raw residual to stage A; the residual one's second product is the
    // ELTWISE add's B term (zero otherwise).
    // -------------------------------------------------------------------------
    loom_requant #(.SideW (10)) u_rq_main (
      .clk_i       (clk_i),
      .rst_ni      (rst_ni),
      .in_valid_i  (p_valid_q),
      .in_ready_o  (rq_in_ready[l]),
      .v_i         (p_v_q),
      .mult_i      (p_mult_q),
      .shift_i     (p_shift_q),
      .even_i      (cfg_even_i),
      .v2_i        (10'sd0),
      .mult2_i     (32'sd0),
      .side_i      (p_raw_q),
      .out_valid_o (rq_out_valid[l]),
      .out_ready_i (mid_ready),
      .y_o         (rq_y),
      .side_o      (rq_raw)
    );

    loom_requant #(.VW (10), .Dual (1'b1)) u_rq_res (
      .clk_i       (clk_i),
      .rst_ni      (rst_ni),
      .in_valid_i  (p_valid_q),
      .in_ready_o  (rq_res_in_ready[l]),
      .v_i         (p_rv_q),
      .mult_i      (p_rmult_q),
      .shift_i     (p_rshift_q),
      .even_i      (1'b0),
      .v2_i        (cfg_sum_i ? p_raw_q : 10'sd0),
      .mult2_i     (cfg_sum_i ? cfg_res_mult_i : 32'sd0),
      .side_i      (1'b0),
      .out_valid_o (rq_res_out_valid[l]),
      .out_ready_i (mid_ready),
      .y_o         (rq_res_y),
      .side_o      (rq_res_side)
    );

    // -------------------------------------------------------------------------
    // Stage A (rescale only): clamp the post-op result to int8, subtract a_zp
    // (|x - a_zp| <= 255, 10 bits) and requantize it together with the raw
    // residual, rounded once.
    // -------------------------------------------------------------------------
    assign x_full = 33'(rq_y) + 33'(cfg_out_zp_i);
    always_comb begin
      if (x_full < 33'(cfg_clip_lo_i)) begin
        x = cfg_clip_lo_i;
      end else if (x_full > 33'(cfg_clip_hi_i)) begin
        x = cfg_clip_hi_i;
      end else begin
        x = x_full[7:0];
      end
    end
    assign ra_v = 10'(x) - 10'(cfg_a_zp_i);

    loom_requant #(.VW (10), .Dual (1'b1)) u_rq_add (
      .clk_i       (clk_i),
      .rst_ni      (rst_ni),
      .in_valid_i  (rq_out_valid[0] && cfg_rescale_i),
      .in_ready_o  (ra_in_ready[l]),
      .v_i         (cfg_rescale_i ? ra_v : 10'sd0),
      .mult_i      (cfg_rescale_i ? cfg_a_mult_i : 32'sd0),
      .shift_i     (cfg_rescale_i ? cfg_a_shift_i : 6'd1),
      .even_i      (1'b0),
      .v2_i        (cfg_rescale_i ? rq_raw : 10'sd0),
      .mult2_i     (cfg_rescale_i ? cfg_res_mult_i : 32'sd0),
      .side_i      (1'b0),
      .out_valid_o (ra_out_valid[l]),
      .out_ready_i (s_en),
      .y_o         (ra_y),
      .side_o      (ra_side)
    );

    // -------------------------------------------------------------------------
    // Stage S: exact 34-bit sum. Stage C: clamp to [clip_lo, clip_hi].
    // -------------------------------------------------------------------------
    logic signed [33:0] s_y_d, s_y_q;
    logic signed [7:0]  c_out_d, c_out_q;

    always_comb begin
      s_y_d = s_y_q;
      if (s_en) begin
        s_y_d = cfg_rescale_i ? 34'(ra_y) + 34'(cfg_add_zp_i)
                              : 34'(rq_y) + 34'(rq_res_y) + 34'(cfg_out_zp_i);
      end
      c_out_d = c_out_q;
      if (c_en) begin
        if (s_y_q < 34'(c_lo)) begin
          c_out_d = c_lo;
        end else if (s_y_q > 34'(c_hi)) begin
          c_out_d = c_hi;
        end else begin
          c_out_d = s_y_q[7:0];
        end
      end
    end

    always_ff @(posedge clk_i) begin
      s_y_q   <= s_y_d;
      c_out_q <= c_out_d;
    end

    assign out_o[8*l +: 8] = c_out_q;

    logic unused_side;
    assign unused_side = ^{rq_res_side, ra_side};

    // With sum_i the controller feeds acc = A (int8) and bias = -a_zp, so
    // v_in = A - a_zp fits the residual requantizer's 10-bit operand.
    `LOOM_ASSERT(SumOperandNarrow_A, in_valid_i && in_ready_o && cfg_sum_i |->
                                      v_in >= -32'sd255 && v_in <= 32'sd255)
  end

  assign in_ready_o  = p_en;
  assign out_valid_o = c_valid_q;

  // Occupancy counter: beats accepted but not yet delivered (at most 13).
  logic [3:0] inflight_d, inflight_q;
  always_comb begin
    inflight_d = inflight_q;
    if (in_valid_i && in_ready_o) begin
      inflight_d = inflight_d + 4'd1;
    end
    if (out_valid_o && out_ready_i) begin
      inflight_d = inflight_d - 4'd1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inflight_q <= '0;
    end else begin
      inflight_q <= inflight_d;
    end
  end

  assign busy_o = (inflight_q != '0);

  // Lanes other than 0 report the same handshake; only the assertions read it.
  logic unused_handshake;
  assign unused_handshake = ^{rq_in_ready, rq_res_in_ready, rq_out_valid, rq_res_out_valid,
                              ra_in_ready, ra_out_valid};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT(RqLockstepReady_A, rq_in_ready == {Lanes{rq_in_ready[0]}} &&
                                   rq_res_in_ready == {Lanes{rq_in_ready[0]}})
  `LOOM_ASSERT(RqLockstepValid_A, rq_out_valid == {Lanes{rq_out_valid[0]}} &&
                                   rq_res_out_valid == {Lanes{rq_out_valid[0]}})
  `LOOM_ASSERT(RaLockstep_A, ra_in_ready == {Lanes{ra_in_ready[0]}} &&
                              ra_out_valid == {Lanes{ra_out_valid[0]}})
  `LOOM_ASSERT(ClipOrdered_A, busy_o |-> cfg_clip_lo_i <= cfg_clip_hi_i)
  `LOOM_ASSERT(AddClipOrdered_A, busy_o && cfg_rescale_i |-> cfg_add_lo_i <= cfg_add_hi_i)
  `LOOM_ASSERT(SumMode_A, busy_o && cfg_sum_i |-> cfg_residual_i && !cfg_rescale_i)
  `LOOM_ASSERT(RescaleShift_A, busy_o && cfg_rescale_i |-> cfg_a_shift_i >= 6'd1 && cfg_a_shift_i <= 6'd62)
  `LOOM_ASSERT(CfgStable_A, busy_o |=> $stable({cfg_residual_i, cfg_out_zp_i, cfg_clip_lo_i,
                                                 cfg_clip_hi_i, cfg_res_zp_i, cfg_res_mult_i,
                                                 cfg_res_shift_i, cfg_sum_i, cfg_rescale_i, cfg_a_zp_i,
                                                 cfg_a_mult_i, cfg_a_shift_i, cfg_add_zp_i,
                                                 cfg_add_lo_i, cfg_add_hi_i}) || !busy_o)
  `LOOM_ASSERT(InflightBound_A, inflight_q <= 4'd13)
  `LOOM_ASSERT(OutHeld_A, out_valid_o && !out_ready_i |=> out_valid_o && $stable(out_o))

endmodule
