// Fabric-wide semaphores: monotonic saturating 32-bit counters, incremented by core SEM_SIGNAL pulses, cleared by SEM_CLEAR.
//
// Several cores may signal the same semaphore in one cycle; every pulse
// counts. A clear and a signal in the same cycle keep the signal (the value
// becomes the number of pulses), so a SEM_SIGNAL racing a host clear is never
// lost. Saturation keeps the counters monotonic, as in the golden model.
// Pulses with an id at or past NumSems are ignored (the core rejects them).
`include "loom_assert.svh"

module loom_sem #(
  parameter int unsigned NumCores = 2,
  parameter int unsigned NumSems  = 8
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic [NumCores-1:0]      signal_i,     // 1-cycle pulse per core
  input  logic [NumCores*8-1:0]    signal_id_i,  // semaphore index per core
  input  logic [NumSems-1:0]       clear_i,      // 1-cycle pulse per semaphore
  output logic [NumSems*32-1:0]    value_o
);

  localparam int unsigned IncW = $clog2(NumCores + 1);

  logic [NumSems*32-1:0] value_d, value_q;

  always_comb begin
    value_d = value_q;
    for (int unsigned s = 0; s < NumSems; s++) begin
      logic [IncW-1:0] inc;
      logic [32:0]     sum;
      inc = '0;
      for (int unsigned c = 0; c < NumCores; c++) begin
        if (signal_i[c] && signal_id_i[c*8 +: 8] == 8'(s)) inc = inc + 1'b1;
      end
      sum = (clear_i[s] ? 33'd0 : {1'b0, value_q[s*32 +: 32]}) + 33'(inc);
      value_d[s*32 +: 32] = sum[32] ? 32'hFFFF_FFFF : sum[31:0];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      value_q <= '0;
    end else begin
      value_q <= value_d;
    end
  end

  assign value_o = value_q;

  `LOOM_ASSERT_INIT(a_params, NumCores >= 1 && NumSems >= 1 && NumSems <= 256)

endmodule : loom_sem
