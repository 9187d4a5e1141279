// One processing element of the output-stationary systolic array: 9x9 signed MAC into int32.
//
// Operands arrive from the left (a, with the beat's flags) and from above (b)
// and leave registered to the right and below. On a valid beat the PE adds
// a*b to its accumulator (restarting from zero on `first`, wrapping modulo
// 2^32 as GEMM specifies); on `last` the finished sum is copied into a result
// register so the accumulator can start the next tile on the following beat.
// The multiply-accumulate has the DSP48E2 shape P <= (first ? 0 : P) + A*B.
// Datapath registers have no reset; only the valid flag does.
`include "loom_assert.svh"

module loom_systolic_pe (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               en_i,

  input  logic signed [8:0]  a_i,
  input  logic               valid_i,
  input  logic               first_i,
  input  logic               last_i,
  input  logic signed [8:0]  b_i,

  output logic signed [8:0]  a_o,
  output logic               valid_o,
  output logic               first_o,
  output logic               last_o,
  output logic signed [8:0]  b_o,

  output logic signed [31:0] res_o
);

  logic signed [8:0]  a_d, a_q, b_d, b_q;
  logic               valid_d, valid_q, first_d, first_q, last_d, last_q;
  logic signed [31:0] acc_d, acc_q, res_d, res_q;
  logic signed [17:0] prod;
  logic signed [31:0] acc_base;

  assign prod     = a_i * b_i;
  assign acc_base = first_i ? 32'sd0 : acc_q;

  always_comb begin
    a_d     = a_q;
    b_d     = b_q;
    valid_d = valid_q;
    first_d = first_q;
    last_d  = last_q;
    acc_d   = acc_q;
    res_d   = res_q;
    if (en_i) begin
      a_d     = a_i;
      b_d     = b_i;
      valid_d = valid_i;
      first_d = first_i;
      last_d  = last_i;
      if (valid_i) begin
        acc_d = acc_base + 32'(prod);
        if (last_i) begin
          res_d = acc_d;
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
    end else begin
      valid_q <= valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    a_q     <= a_d;
    b_q     <= b_d;
    first_q <= first_d;
    last_q  <= last_d;
    acc_q   <= acc_d;
    res_q   <= res_d;
  end

  assign a_o     = a_q;
  assign b_o     = b_q;
  assign valid_o = valid_q;
  assign first_o = first_q;
  assign last_o  = last_q;
  assign res_o   = res_q;

  // Operands are zero-point-adjusted int8: within [-255, 255].
  `LOOM_ASSERT(OperandARange_A, valid_i && en_i |-> a_i != -9'sd256)
  `LOOM_ASSERT(OperandBRange_A, valid_i && en_i |-> b_i != -9'sd256)

endmodule
