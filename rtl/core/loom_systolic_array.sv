// Rows x Cols output-stationary int8 systolic array with zero points and int32 accumulation.
//
// Computes, per tile, C[i][j] = sum_k (A[i][k] - a_zp) * (B[k][j] - b_zp)
// modulo 2^32 for i < Rows, j < Cols and any K >= 1.
//
// Why output-stationary: GEMM's k_len is unbounded (16-bit field) while the
// tile's m x n fits the array, so each PE keeps its C[i][j] in a local int32
// accumulator (the DSP48E2 P register) for the whole reduction and the ACC
// scratchpad is touched once per tile rather than once per K slice, as a
// weight-stationary array streaming partial sums would need. Zero points are
// subtracted once per operand at the array edge, not in every PE.
//
// Input stream: one beat per k carries column k of A (a_i[8i+:8] = A[i][k])
// and row k of B (b_i[8j+:8] = B[k][j]), with in_first_i on k = 0 and
// in_last_i on k = K-1 (both on a K = 1 tile). The array skews the beats
// internally: row i is delayed by i cycles, column j by j cycles.
//
// Output stream: after a tile's last beat the array emits its Rows rows in
// order, one beat each: out_c_o[32j+:32] = C[row][j], out_row_o = row,
// out_last_o on the final row (the tile is done when that beat is taken).
// Results sit in per-PE result registers, so the next tile computes while
// this one drains. A last beat is held back (in_ready_o low) until MinGap
// enabled cycles after the previous one so results are never overwritten
// before they are emitted. The GEMM controller implements `accumulate` by
// adding the old ACC contents as the rows come out.
//
// The whole array advances on one enable: when the output register is empty
// or being read. Latency from a last beat to row 0 out: Cols + 2 cycles.
`include "loom_assert.svh"

module loom_systolic_array #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,

  // Operand stream.
  input  logic                      in_valid_i,
  output logic                      in_ready_o,
  input  logic                      in_first_i,
  input  logic                      in_last_i,
  input  logic signed [7:0]         a_zp_i,
  input  logic signed [7:0]         b_zp_i,
  input  logic [Rows*8-1:0]         a_i,
  input  logic [Cols*8-1:0]         b_i,

  // Result rows.
  output logic                      out_valid_o,
  input  logic                      out_ready_i,
  output logic [RowIdxW-1:0]        out_row_o,
  output logic                      out_last_o,
  output logic [Cols*32-1:0]        out_c_o,

  // High from the first accepted beat until the last row of every tile is taken.
  output logic                      busy_o
);

  localparam int unsigned RowIdxW = (Rows > 1) ? $clog2(Rows) : 1;
  localparam int unsigned MinGap  = (Rows > Cols) ? Rows : Cols;
  localparam int unsigned GapW    = $clog2(MinGap + 1);

  // Global advance enable.
  logic en;
  logic out_valid_d, out_valid_q;
  assign en = ~out_valid_q | out_ready_i;

  // ---------------------------------------------------------------------------
  // Spacing of last beats.
  // ---------------------------------------------------------------------------
  logic [GapW-1:0] gap_d, gap_q;
  logic            last_blocked, in_fire;

  assign last_blocked = in_last_i && (gap_q < GapW'(MinGap));
  assign in_ready_o   = en && !last_blocked;
  assign in_fire      = in_valid_i && in_ready_o;

  always_comb begin
    gap_d = gap_q;
    if (in_fire && in_last_i) begin
      gap_d = GapW'(1);
    end else if (en && gap_q < GapW'(MinGap)) begin
      gap_d = gap_q + GapW'(1);
    end
  end

  // ---------------------------------------------------------------------------
  // Edge registers: zero-point subtraction (9-bit results) and flags.
  // ---------------------------------------------------------------------------
  logic [Rows*9-1:0] a_edge_d, a_edge_q;
  logic [Cols*9-1:0] b_edge_d, b_edge_q;
  logic              e_valid_d, e_valid_q, e_first_d, e_first_q, e_last_d, e_last_q;

  always_comb begin
    a_edge_d  = a_edge_q;
    b_edge_d  = b_edge_q;
    e_valid_d = e_valid_q;
    e_first_d = e_first_q;
    e_last_d  = e_last_q;
    if (en) begin
      e_valid_d = in_fire;
      e_first_d = in_first_i;
      e_last_d  = in_last_i;
      for (int unsigned i = 0; i < Rows; i++) begin
        a_edge_d[9*i +: 9] = 9'($signed(a_i[8*i +: 8])) - 9'(a_zp_i);
      end
      for (int unsigned j = 0; j < Cols; j++) begin
        b_edge_d[9*j +: 9] = 9'($signed(b_i[8*j +: 8])) - 9'(b_zp_i);
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      e_valid_q <= 1'b0;
      gap_q     <= GapW'(MinGap);
    end else begin
      e_valid_q <= e_valid_d;
      gap_q     <= gap_d;
    end
  end

  always_ff @(posedge clk_i) begin
    a_edge_q <= a_edge_d;
    b_edge_q <= b_edge_d;
    e_first_q <= e_first_d;
    e_last_q  <= e_last_d;
  end

  // ---------------------------------------------------------------------------
  // PE grid. Horizontal links carry {a, valid, first, last}; vertical links b.
  // Index (i, j) of a link is the input of PE(i, j); column Cols / row Rows
  // are the outputs of the last PEs.
  // ---------------------------------------------------------------------------
  logic signed [8:0]  h_a     [Rows][Cols+1];
  logic               h_valid [Rows][Cols+1];
  logic               h_first [Rows][Cols+1];
  logic               h_last  [Rows][Cols+1];
  logic signed [8:0]  v_b     [Rows+1][Cols];
  logic signed [31:0] res     [Rows][Cols];

  // Row skew: row i enters i cycles after row 0 (a delay line of depth i).
  for (genvar i = 0; i < Rows; i++) begin : g_row_skew
    if (i == 0) begin : g_direct
      assign h_a[i][0]     = a_edge_q[9*i +: 9];
      assign h_valid[i][0] = e_valid_q;
      assign h_first[i][0] = e_first_q;
      assign h_last[i][0]  = e_last_q;
    end else begin : g_delay
      logic [11:0] sr_d [i];
      logic [11:0] sr_q [i];
      always_comb begin
        for (int unsigned s = 0; s < i; s++) begin
          sr_d[s] = sr_q[s];
        end
        if (en) begin
          sr_d[0] = {a_edge_q[9*i +: 9], e_valid_q, e_first_q, e_last_q};
          for (int unsigned s = 1; s < i; s++) begin
            sr_d[s] = sr_q[s-1];
          end
        end
      end
      // The valid bit rides in the delay line; clearing it at reset is enough.
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) begin
          for (int unsigned s = 0; s < i; s++) begin
            sr_q[s] <= '0;
          end
        end else begin
          for (int unsigned s = 0; s < i; s++) begin
            sr_q[s] <= sr_d[s];
          end
        end
      end
      assign h_a[i][0]     = sr_q[i-1][11:3];
      assign h_valid[i][0] = sr_q[i-1][2];
      assign h_first[i][0] = sr_q[i-1][1];
      assign h_last[i][0]  = sr_q[i-1][0];
    end
  end

  // Column skew: column j enters j cycles after column 0.
  for (genvar j = 0; j < Cols; j++) begin : g_col_skew
    if (j == 0) begin : g_direct
      assign v_b[0][j] = b_edge_q[9*j +: 9];
    end else begin : g_delay
      logic [8:0] sr_d [j];
      logic [8:0] sr_q [j];
      always_comb begin
        for (int unsigned s = 0; s < j; s++) begin
          sr_d[s] = sr_q[s];
        end
        if (en) begin
          sr_d[0] = b_edge_q[9*j +: 9];
          for (int unsigned s = 1; s < j; s++) begin
            sr_d[s] = sr_q[s-1];
          end
        end
      end
      always_ff @(posedge clk_i) begin
        for (int unsigned s = 0; s < j; s++) begin
          sr_q[s] <= sr_d[s];
        end
      end
      assign v_b[0][j] = sr_q[j-1];
    end
  end

  for (genvar i = 0; i < Rows; i++) begin : g_pe_row
    for (genvar j = 0; j < Cols; j++) begin : g_pe_col
      loom_systolic_pe u_pe (
        .clk_i   (clk_i),
        .rst_ni  (rst_ni),
        .en_i    (en),
        .a_i     (h_a[i][j]),
        .valid_i (h_valid[i][j]),
        .first_i (h_first[i][j]),
        .last_i  (h_last[i][j]),
        .b_i     (v_b[i][j]),
        .a_o     (h_a[i][j+1]),
        .valid_o (h_valid[i][j+1]),
        .first_o (h_first[i][j+1]),
        .last_o  (h_last[i][j+1]),
        .b_o     (v_b[i+1][j]),
        .res_o   (res[i][j])
      );
    end
  end

  // ---------------------------------------------------------------------------
  // Output row register. Row i is complete in the cycle after the last beat
  // leaves PE(i, Cols-1); at most one row is complete per cycle (MinGap).
  // ---------------------------------------------------------------------------
  logic [Rows-1:0]      row_done;
  logic [Cols*32-1:0]   out_c_d, out_c_q;
  logic [RowIdxW-1:0]   out_row_d, out_row_q;
  logic                 out_last_d, out_last_q;

  for (genvar i = 0; i < Rows; i++) begin : g_row_done
    assign row_done[i] = h_valid[i][Cols] && h_last[i][Cols];
  end

  always_comb begin
    out_valid_d = out_valid_q;
    out_c_d     = out_c_q;
    out_row_d   = out_row_q;
    out_last_d  = out_last_q;
    if (en) begin
      out_valid_d = |row_done;
      out_c_d     = '0;
      out_row_d   = '0;
      out_last_d  = row_done[Rows-1];
      for (int unsigned i = 0; i < Rows; i++) begin
        if (row_done[i]) begin
          out_row_d = RowIdxW'(i);
          for (int unsigned j = 0; j < Cols; j++) begin
            out_c_d[32*j +: 32] = out_c_d[32*j +: 32] | res[i][j];
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else begin
      out_valid_q <= out_valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    out_c_q    <= out_c_d;
    out_row_q  <= out_row_d;
    out_last_q <= out_last_d;
  end

  assign out_valid_o = out_valid_q;
  assign out_c_o     = out_c_q;
  assign out_row_o   = out_row_q;
  assign out_last_o  = out_last_q;

  // ---------------------------------------------------------------------------
  // Tile bookkeeping for busy_o: an open tile (first seen, last not yet) plus
  // tiles whose last beat was taken but whose last row was not.
  // ---------------------------------------------------------------------------
  logic       open_d, open_q;
  logic [2:0] pending_d, pending_q;
  logic       tile_done;

  assign tile_done = out_valid_o && out_ready_i && out_last_o;

  always_comb begin
    open_d    = open_q;
    pending_d = pending_q;
    if (in_fire) begin
      open_d = !in_last_i;
    end
    if (in_fire && in_last_i) begin
      pending_d = pending_d + 3'd1;
    end
    if (tile_done) begin
      pending_d = pending_d - 3'd1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      open_q    <= 1'b0;
      pending_q <= '0;
    end else begin
      open_q    <= open_d;
      pending_q <= pending_d;
    end
  end

  assign busy_o = open_q || (pending_q != '0);

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(RowsLegal_A, Rows >= 1 && Rows <= 64)
  `LOOM_ASSERT_INIT(ColsLegal_A, Cols >= 1 && Cols <= 64)
  // A tile starts with `first`, and `first` only starts a tile.
  `LOOM_ASSERT(FirstOpensTile_A, in_valid_i && in_ready_o |-> (in_first_i == !open_q))
  `LOOM_ASSERT(RowDoneOneHot_A, $onehot0(row_done))
  `LOOM_ASSERT(PendingBound_A, pending_q <= 3'd4)
  `LOOM_ASSERT(OutHeld_A, out_valid_o && !out_ready_i |=> out_valid_o && $stable(out_c_o))
  `LOOM_ASSERT(InValidHeld_A, in_valid_i && !in_ready_o |=> in_valid_i)

endmodule
