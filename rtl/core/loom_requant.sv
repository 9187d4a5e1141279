// Pipelined requantization rq(v, mult, shift) = sat32(round_half_away(v * mult / 2^shift)), or with Dual the
// requantizing add rqs(v, mult, v2, mult2, shift) = sat32(round_half_away((v * mult + v2 * mult2) / 2^shift)).
// With even_i (POOL's average) ties round to even instead: rqe (loom::requantize_even).
//
// Bit-exact with loom::requantize (host/common/quant.h) for 1 <= shift <= 62,
// and with Dual with loom::requantize_sum: both products are summed exactly
// and rounded once. Rounding without taking absolute values: for the product
// (or sum of products) p,
//   p >= 0: (p + 2^(s-1))     >>> s   == floor((|p| + half) / 2^s)
//   p <  0: (p + 2^(s-1) - 1) >>> s   == -floor((|p| + half) / 2^s)
// and ties to even, for either sign, with the floor q = p >>> s:
//           (p + 2^(s-1) - 1 + q[0]) >>> s
// (q[0] is bit s of p: a tie rounds up exactly when q is odd), so one 64-bit
// adder and one arithmetic shifter suffice. |v * mult| <= 2^62
// and |v2 * mult2| <= 2^9 * 2^31 = 2^40 (v2 is 10 bits), so |p| <= 2^62 +
// 2^40 and p + half < 2^63: neither the sum nor the shift can overflow 64
// bits.
//
// Stages (Latency = 5): 1 operand registers (DSP A/B), 2 product, or the sum
// of both products with Dual (DSP M/P), 3 rounding add, 4 arithmetic shift,
// 5 saturation. The pipeline stalls as a whole: a stage advances when the
// stage after it is empty or advancing, so valid/ready bubbles collapse.
// Datapath registers have no reset (FPGA reset-free datapath); only the valid
// bits are reset.
//
// VW narrows the operand v (sign-extended to the 64-bit product) where its
// range is known, so synthesis maps a narrower multiplier. Dual adds the
// second product (a 10 x 32-bit multiplier and a 64-bit adder); without it
// v2_i and mult2_i are ignored and the instance is the plain requantizer.
// side_i is an optional SideW-bit sideband that travels with its operand
// through the same stage enables and leaves as side_o beside y_o.
`include "loom_assert.svh"

module loom_requant #(
  parameter int unsigned VW    = 32,
  parameter bit          Dual  = 1'b0,
  parameter int unsigned SideW = 1
) (
  input  logic               clk_i,
  input  logic               rst_ni,

  input  logic               in_valid_i,
  output logic               in_ready_o,
  input  logic signed [VW-1:0] v_i,
  input  logic signed [31:0] mult_i,
  input  logic        [5:0]  shift_i,
  input  logic               even_i,   // round ties to even (else away from zero); travels with shift_i
  input  logic signed [9:0]  v2_i,     // Dual only
  input  logic signed [31:0] mult2_i,  // Dual only
  input  logic [SideW-1:0]   side_i,

  output logic               out_valid_o,
  input  logic               out_ready_i,
  output logic signed [31:0] y_o,
  output logic [SideW-1:0]   side_o
);

  localparam int unsigned Latency = 5;

  // Valid bits and per-stage advance enables.
  logic [Latency-1:0] valid_d, valid_q;
  logic [Latency-1:0] en;

  always_comb begin
    en[Latency-1] = ~valid_q[Latency-1] | out_ready_i;
    for (int unsigned s = Latency - 1; s > 0; s--) begin
      en[s-1] = ~valid_q[s-1] | en[s];
    end
  end

  always_comb begin
    valid_d = valid_q;
    if (en[0]) begin
      valid_d[0] = in_valid_i;
    end
    for (int unsigned s = 1; s < Latency; s++) begin
      if (en[s]) begin
        valid_d[s] = valid_q[s-1];
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
    end else begin
      valid_q <= valid_d;
    end
  end

  // Datapath.
  // A stage's data registers load only when valid data moves in (its enable
  // and a valid beat upstream); with `en` alone an empty pipeline would
  // recompute every stage from stale operands on every idle cycle, which
  // costs simulation time and toggles for nothing. Data of an empty stage is
  // never used: outputs are read with out_valid_o.
  logic [Latency-1:0] ld;
  assign ld = en & {valid_q[Latency-2:0], in_valid_i};

  logic signed [VW-1:0] v_d, v_q;
  logic signed [31:0] mult_d, mult_q;
  // Sideband of stage s in bits [s*SideW +: SideW] (one flat vector: Yosys
  // reads no multi-dimensional packed arrays).
  logic [Latency*SideW-1:0] sd_d, sd_q;
  logic        [5:0]  sh1_d, sh1_q, sh2_d, sh2_q, sh3_d, sh3_q;
  logic               ev1_d, ev1_q, ev2_d, ev2_q;
  logic signed [63:0] prod_d, prod_q;
  logic signed [63:0] sum_d, sum_q;
  logic signed [63:0] shr_d, shr_q;
  logic signed [31:0] y_d, y_q;
  logic signed [63:0] rnd;
  // Stage 2's input: v * mult, plus v2 * mult2 with Dual.
  logic signed [63:0] prod_full;

  if (Dual) begin : g_dual
    logic signed [9:0]  v2_d, v2_q;
    logic signed [31:0] mult2_d, mult2_q;
    assign v2_d    = ld[0] ? v2_i    : v2_q;
    assign mult2_d = ld[0] ? mult2_i : mult2_q;
    always_ff @(posedge clk_i) begin
      v2_q    <= v2_d;
      mult2_q <= mult2_d;
    end
    assign prod_full = 64'(v_q) * 64'(mult_q) + 64'(v2_q) * 64'(mult2_q);
  end else begin : g_single
    assign prod_full = 64'(v_q) * 64'(mult_q);
    logic unused_dual;
    assign unused_dual = ^{v2_i, mult2_i};
  end

  always_comb begin
    // Stage 1: operand registers.
    v_d    = ld[0] ? v_i     : v_q;
    mult_d = ld[0] ? mult_i  : mult_q;
    sh1_d  = ld[0] ? shift_i : sh1_q;
    ev1_d  = ld[0] ? even_i  : ev1_q;
    sd_d[0 +: SideW] = ld[0] ? side_i : sd_q[0 +: SideW];
    for (int unsigned s = 1; s < Latency; s++) begin
      sd_d[s*SideW +: SideW] = ld[s] ? sd_q[(s-1)*SideW +: SideW] : sd_q[s*SideW +: SideW];
    end

    // Stage 2: full 64-bit signed product (with Dual, the exact sum of both).
    prod_d = ld[1] ? prod_full : prod_q;
    sh2_d  = ld[1] ? sh1_q : sh2_q;
    ev2_d  = ld[1] ? ev1_q : ev2_q;

    // Stage 3: add half an LSB of the result, minus one for a negative product (or sum);
    // for ties to even, minus one plus the floor's lowest bit.
    // shift 0 is outside the contract; it degrades to no rounding.
    rnd = '0;
    if (ld[2] && sh2_q != 6'd0) begin
      if (ev2_q) begin
        rnd = (64'sd1 <<< (sh2_q - 6'd1)) - 64'sd1 + (prod_q[sh2_q] ? 64'sd1 : 64'sd0);
      end else begin
        rnd = (64'sd1 <<< (sh2_q - 6'd1)) - (prod_q[63] ? 64'sd1 : 64'sd0);
      end
    end
    sum_d = ld[2] ? prod_q + rnd : sum_q;
    sh3_d = ld[2] ? sh2_q : sh3_q;

    // Stage 4: arithmetic shift (floor division by 2^shift).
    shr_d = ld[3] ? (sum_q >>> sh3_q) : shr_q;

    // Stage 5: saturate to int32.
    y_d = y_q;
    if (ld[4]) begin
      if (shr_q[63:31] == {33{shr_q[63]}}) begin
        y_d = shr_q[31:0];
      end else begin
        y_d = shr_q[63] ? 32'sh8000_0000 : 32'sh7fff_ffff;
      end
    end
  end

  always_ff @(posedge clk_i) begin
    v_q    <= v_d;
    mult_q <= mult_d;
    sh1_q  <= sh1_d;
    prod_q <= prod_d;
    sh2_q  <= sh2_d;
    ev1_q  <= ev1_d;
    ev2_q  <= ev2_d;
    sum_q  <= sum_d;
    sh3_q  <= sh3_d;
    shr_q  <= shr_d;
    y_q    <= y_d;
    sd_q   <= sd_d;
  end

  assign in_ready_o  = en[0];
  assign out_valid_o = valid_q[Latency-1];
  assign y_o         = y_q;
  assign side_o      = sd_q[(Latency-1)*SideW +: SideW];

  // Every accepted shift is inside the contract; outputs never vanish.
  `LOOM_ASSERT(ShiftInRange_A, in_valid_i && in_ready_o |-> shift_i >= 6'd1 && shift_i <= 6'd62)
  `LOOM_ASSERT(OutHeld_A, out_valid_o && !out_ready_i |=> out_valid_o && $stable(y_o))

endmodule
