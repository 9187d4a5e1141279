// GEMM controller of the compute unit: tiles m x n into Rows x Cols blocks on loom_systolic_array and writes results to ACC.
//
// Feed side: the A operand needs a column of Rows bytes per beat, but a
// scratchpad read returns SpW bytes of one row, so the controller stages A:
// for each chunk of SpW values of k it reads SpW bytes of each of the
// block's rows (IN[in + (i0+r)*lda + kc], one read per row) into a
// Rows x SpW staging buffer, then streams up to SpW beats from it, shifting
// every staged row by one byte per accepted beat (byte 0 of each row is the
// column). There are two staging buffers: a stager walks the chunk sequence
// (blocks i0-major then j0, chunks of k within a block) on its own counters
// and fills one buffer while the stream drains the other, so staging (rb
// reads per chunk, rb <= Rows <= SpW) hides behind streaming and the stream
// runs from chunk to chunk and block to block without a gap. Each beat's B
// row is one WGT read (Cols bytes at wgt + k*ldb + j0) issued the cycle
// before; a beat the array refuses (or that waits for its A chunk) is read
// again, so no skid buffer is needed and the stream runs at one beat a cycle.
//
// With b_trans, B is stored as its transpose (row j of WGT holds B[.][j]), so
// B needs the same treatment as A: the stager also reads SpW bytes of each
// of the block's cb columns (WGT[wgt + (j0+c)*ldb + kc], one read per column,
// on the WGT port the stream then leaves idle) into a Cols x SpW staging
// buffer beside A's, and the stream takes byte 0 of each staged column. A
// chunk then stages in max(rb, cb) cycles.
//
// Write-back side runs concurrently and walks the same block order on its
// own counters (the array delivers tiles in order), so the feed of the next
// block overlaps the write-back of the previous one. Each valid row is one
// masked ACC write (Cols*4 <= SpW bytes); with `accumulate` the old row is
// read first (read granted in one cycle, sum written the next) and the next
// read is issued only after that write, so rows that alias each other see
// each other's updates exactly as the golden model does.
//
// Ordering: the golden model writes C in row-major element order. Blocks of
// Rows rows reorder rows of different column blocks, which is only
// observable when C rows overlap (ldc < 4n); then the controller uses bands
// of one row (band = 1) so the write order is row-major again.
//
// k_len = 0 with accumulate = 0 clears the m x n tile with zero writes, one
// per row and column block (the unit skips k_len = 0 with accumulate = 1).
//
// Performance: a block costs k cycles of feed once the first chunk is
// staged (A is re-staged for every column block, hidden behind the previous
// chunk's stream when the chunk has at least rb beats), plus the array's
// spacing of last beats (max(Rows, Cols) cycles) for short k.
`include "loom_assert.svh"

module loom_gemm_ctrl #(
  parameter int unsigned Rows  = 4,
  parameter int unsigned Cols  = 4,
  parameter int unsigned SpW   = 16,
  parameter int unsigned InAw  = 14,
  parameter int unsigned WgtAw = 14,
  parameter int unsigned AccAw = 14
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,

  input  logic                 start_i,    // insn_i holds a checked GEMM, stable until idle
  input  logic                 abort_i,    // halt/flush: drain the array and go idle
  input  logic [255:0]         insn_i,
  output logic                 busy_o,
  output logic                 done_o,     // 1-cycle pulse: every result row is written
  output logic                 active_o,
  output logic [31:0]          macs_inc_o,

  output logic                 in_rd_req_o,
  output logic [InAw-1:0]      in_rd_addr_o,
  input  logic [SpW*8-1:0]     in_rd_data_i,

  output logic                 wgt_rd_req_o,
  output logic [WgtAw-1:0]     wgt_rd_addr_o,
  input  logic [SpW*8-1:0]     wgt_rd_data_i,

  output logic                 acc_rd_req_o,
  output logic [AccAw-1:0]     acc_rd_addr_o,
  input  logic                 acc_rd_gnt_i,
  input  logic [SpW*8-1:0]     acc_rd_data_i,

  output logic                 acc_wr_req_o,
  output logic [AccAw-1:0]     acc_wr_addr_o,
  output logic [SpW*8-1:0]     acc_wr_data_o,
  output logic [SpW-1:0]       acc_wr_mask_o
);

  localparam int unsigned RowIdxW = (Rows > 1) ? $clog2(Rows) : 1;

  typedef enum logic [2:0] {
    FIdle,
    FRun,     // stream beats into the array (waiting for a staged chunk when there is none)
    FZero,    // k_len = 0: clear the tile
    FWaitWb,  // every beat sent; wait for the last result row
    FDrain    // abort: close an open tile, discard results
  } feed_e;

  // ---------------------------------------------------------------------------
  // Instruction fields.
  // ---------------------------------------------------------------------------
  logic        f_acc, f_bt;
  logic [31:0] f_in, f_wgt, f_c;
  logic [16:0] f_m, f_n, f_k;
  logic [31:0] f_lda, f_ldb, f_ldc;
  logic [7:0]  f_azp, f_bzp;
  assign f_acc = insn_i[loom_pkg::GEMM_ACCUMULATE_LSB];
  assign f_bt  = insn_i[loom_pkg::GEMM_B_TRANS_LSB];
  assign f_in  = 32'(insn_i[loom_pkg::GEMM_IN_ADDR_LSB +: loom_pkg::GEMM_IN_ADDR_W]);
  assign f_wgt = 32'(insn_i[loom_pkg::GEMM_WGT_ADDR_LSB +: loom_pkg::GEMM_WGT_ADDR_W]);
  assign f_c   = 32'(insn_i[loom_pkg::GEMM_ACC_ADDR_LSB +: loom_pkg::GEMM_ACC_ADDR_W]);
  assign f_m   = 17'(insn_i[loom_pkg::GEMM_M_LSB +: loom_pkg::GEMM_M_W]);
  assign f_n   = 17'(insn_i[loom_pkg::GEMM_N_LSB +: loom_pkg::GEMM_N_W]);
  assign f_k   = 17'(insn_i[loom_pkg::GEMM_K_LEN_LSB +: loom_pkg::GEMM_K_LEN_W]);
  assign f_azp = insn_i[loom_pkg::GEMM_A_ZP_LSB +: loom_pkg::GEMM_A_ZP_W];
  assign f_bzp = insn_i[loom_pkg::GEMM_B_ZP_LSB +: loom_pkg::GEMM_B_ZP_W];
  assign f_lda = 32'(insn_i[loom_pkg::GEMM_LDA_LSB +: loom_pkg::GEMM_LDA_W]);
  assign f_ldb = 32'(insn_i[loom_pkg::GEMM_LDB_LSB +: loom_pkg::GEMM_LDB_W]);
  assign f_ldc = 32'(insn_i[loom_pkg::GEMM_LDC_LSB +: loom_pkg::GEMM_LDC_W]);

  logic unused_insn;
  assign unused_insn = ^{insn_i[255:240], insn_i[31:12], insn_i[9:0]};

  // ---------------------------------------------------------------------------
  // State.
  // ---------------------------------------------------------------------------
  localparam int unsigned StW  = Rows * SpW * 8;  // one A staging buffer
  localparam int unsigned BStW = Cols * SpW * 8;  // one B staging buffer (b_trans)

  feed_e              fs_d, fs_q;
  logic [16:0]        band_d, band_q;          // rows per block: Rows, or 1 when C rows overlap
  logic [31:0]        band_lda_d, band_lda_q, band_ldc_d, band_ldc_q;
  // Stream: block origin, chunk base, beat index, MACs per beat, WGT address of beat k_q.
  logic [16:0]        i0_d, i0_q, j0_d, j0_q;
  logic [31:0]        macs_blk_d, macs_blk_q;
  logic [16:0]        kc_d, kc_q, k_d, k_q;
  logic [31:0]        b_addr_d, b_addr_q;
  logic               cur_d, cur_q;            // staging buffer being streamed
  logic               pend_d, pend_q;          // WGT data for beat k_q arrives this cycle
  logic               open_d, open_q;          // a tile's first beat is in, its last is not
  logic               held_d, held_q;          // a beat was offered and refused last cycle
  // Stager: the chunk it fills, the next row to read and its IN address.
  logic [16:0]        s_i0_d, s_i0_q, s_j0_d, s_j0_q, s_kc_d, s_kc_q, s_row_d, s_row_q;
  logic [31:0]        s_abase_d, s_abase_q, s_ptr_d, s_ptr_q;
  logic [31:0]        s_bbase_d, s_bbase_q, s_bptr_d, s_bptr_q;  // b_trans: WGT row of column j0, of column j0 + row
  logic               s_buf_d, s_buf_q;        // buffer being filled
  logic               s_done_d, s_done_q;      // every chunk of the instruction is staged
  logic               st_pend_d, st_pend_q;    // IN data for row st_row_q arrives this cycle
  logic               st_fin_d, st_fin_q;      // ... and it is the chunk's last row
  logic               st_a_d, st_a_q;          // ... carries a row of A (row < rb)
  logic               st_b_d, st_b_q;          // ... carries a column of B (b_trans, row < cb)
  logic               st_buf_d, st_buf_q;
  logic [16:0]        st_row_d, st_row_q;
  logic [1:0]         full_d, full_q;          // buffer holds a complete staged chunk
  logic [2*StW-1:0]   stage_d, stage_q;
  logic [2*BStW-1:0]  bstage_d, bstage_q;
  // Zero fill.
  logic [16:0]        z_i_d, z_i_q, z_j0_d, z_j0_q;
  logic [31:0]        z_base_d, z_base_q;
  // Write-back.
  logic [16:0]        wb_i0_d, wb_i0_q, wb_j0_d, wb_j0_q;
  logic [31:0]        wb_band_d, wb_band_q, wb_blk_d, wb_blk_q, wb_ptr_d, wb_ptr_q;
  logic               wb_phase_d, wb_phase_q;  // accumulate: old row arrives this cycle

  // Array interface.
  logic                arr_in_valid, arr_in_ready, arr_in_first, arr_in_last, arr_fire;
  logic [Rows*8-1:0]   arr_a;
  logic [Cols*8-1:0]   arr_b, arr_bt;
  logic                arr_out_valid, arr_out_ready, arr_out_last, arr_busy, arr_take;
  logic [RowIdxW-1:0]  arr_out_row;
  logic [Cols*32-1:0]  arr_out_c;

  // Block extents: min(band, m - i0) and min(Cols, n - j0).
  function automatic logic [16:0] min17(input logic [16:0] a, input logic [16:0] b);
    min17 = (a < b) ? a : b;
  endfunction

  logic [16:0] wb_rb, wb_cb, z_cb, s_rb, s_cb, s_nr;
  assign wb_rb = min17(band_q, f_m - wb_i0_q);
  assign wb_cb = min17(17'(Cols), f_n - wb_j0_q);
  assign z_cb  = min17(17'(Cols), f_n - z_j0_q);
  assign s_rb  = min17(band_q, f_m - s_i0_q);
  assign s_cb  = min17(17'(Cols), f_n - s_j0_q);
  assign s_nr  = (f_bt && s_cb > s_rb) ? s_cb : s_rb;  // rows a chunk stages

  function automatic logic [SpW-1:0] byte_mask(input logic [16:0] words);
    for (int unsigned b = 0; b < SpW; b++) begin
      byte_mask[b] = (17'(b / 4) < words);
    end
  endfunction

  // ---------------------------------------------------------------------------
  // Feed.
  // ---------------------------------------------------------------------------
  for (genvar r = 0; r < Rows; r++) begin : g_a_col
    assign arr_a[8*r +: 8] = cur_q ? stage_q[StW + r*SpW*8 +: 8] : stage_q[r*SpW*8 +: 8];
  end
  for (genvar c = 0; c < Cols; c++) begin : g_b_row
    assign arr_bt[8*c +: 8] = cur_q ? bstage_q[BStW + c*SpW*8 +: 8] : bstage_q[c*SpW*8 +: 8];
  end
  assign arr_b = f_bt ? arr_bt : wgt_rd_data_i[Cols*8-1:0];

  // Draining closes an open tile, and keeps offering a refused beat (the
  // array requires valid to stay up) as the last beat of a throw-away tile.
  assign arr_in_valid = (fs_q == FRun && pend_q && full_q[cur_q]) ||
                        (fs_q == FDrain && (open_q || held_q));
  assign arr_in_first = (fs_q == FDrain) ? !open_q : (k_q == 17'd0);
  assign arr_in_last  = (fs_q == FDrain) || (k_q == f_k - 17'd1);
  assign arr_fire     = arr_in_valid && arr_in_ready;

  logic wb_all;  // every block's rows are written
  assign wb_all = (wb_i0_q >= f_m);

  // Next stream block after (i0_q, j0_q), for the last beat of a block.
  logic        nb_wrap, nb_end;
  logic [16:0] nb_i0, nb_j0;
  assign nb_wrap = !(j0_q + 17'(Cols) < f_n);
  assign nb_j0   = nb_wrap ? 17'd0 : j0_q + 17'(Cols);
  assign nb_i0   = nb_wrap ? i0_q + band_q : i0_q;
  assign nb_end  = nb_i0 >= f_m;

  always_comb begin
    fs_d       = fs_q;
    band_d     = band_q;
    band_lda_d = band_lda_q;
    band_ldc_d = band_ldc_q;
    i0_d       = i0_q;
    j0_d       = j0_q;
    macs_blk_d = macs_blk_q;
    kc_d       = kc_q;
    k_d        = k_q;
    b_addr_d   = b_addr_q;
    cur_d      = cur_q;
    pend_d     = 1'b0;
    open_d     = open_q;
    s_i0_d     = s_i0_q;
    s_j0_d     = s_j0_q;
    s_kc_d     = s_kc_q;
    s_row_d    = s_row_q;
    s_abase_d  = s_abase_q;
    s_ptr_d    = s_ptr_q;
    s_bbase_d  = s_bbase_q;
    s_bptr_d   = s_bptr_q;
    s_buf_d    = s_buf_q;
    s_done_d   = s_done_q;
    st_pend_d  = 1'b0;
    st_fin_d   = 1'b0;
    st_a_d     = 1'b0;
    st_b_d     = 1'b0;
    st_buf_d   = st_buf_q;
    st_row_d   = st_row_q;
    full_d     = full_q;
    stage_d    = stage_q;
    bstage_d   = bstage_q;
    z_i_d      = z_i_q;
    z_j0_d     = z_j0_q;
    z_base_d   = z_base_q;
    wb_i0_d    = wb_i0_q;  // the write-back process below owns these after start
    in_rd_req_o   = 1'b0;
    in_rd_addr_o  = InAw'(s_ptr_q);
    wgt_rd_req_o  = 1'b0;
    wgt_rd_addr_o = f_bt ? WgtAw'(s_bptr_q) : WgtAw'(b_addr_q);
    done_o        = 1'b0;
    macs_inc_o    = '0;

    held_d = arr_in_valid && !arr_in_ready;
    if (arr_fire) begin
      open_d = !arr_in_last;
    end

    // Staging data lands the cycle after its read; the chunk's last row
    // makes the buffer full.
    if (st_pend_q) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        if (st_a_q && st_row_q == 17'(r) && st_buf_q) begin
          stage_d[StW + r*SpW*8 +: SpW*8] = in_rd_data_i;
        end
        if (st_a_q && st_row_q == 17'(r) && !st_buf_q) begin
          stage_d[r*SpW*8 +: SpW*8] = in_rd_data_i;
        end
      end
      for (int unsigned c = 0; c < Cols; c++) begin
        if (st_b_q && st_row_q == 17'(c) && st_buf_q) begin
          bstage_d[BStW + c*SpW*8 +: SpW*8] = wgt_rd_data_i;
        end
        if (st_b_q && st_row_q == 17'(c) && !st_buf_q) begin
          bstage_d[c*SpW*8 +: SpW*8] = wgt_rd_data_i;
        end
      end
      if (st_fin_q) begin
        full_d[st_buf_q] = 1'b1;
      end
    end

    // Stager: one row read per cycle into the free buffer, in stream order
    // (with b_trans, a column of B beside it on the WGT port).
    if (fs_q == FRun && !s_done_q && !full_q[s_buf_q]) begin
      in_rd_req_o  = (s_row_q < s_rb);
      wgt_rd_req_o = f_bt && (s_row_q < s_cb);
      st_a_d       = (s_row_q < s_rb);
      st_b_d       = f_bt && (s_row_q < s_cb);
      st_pend_d    = 1'b1;
      st_row_d     = s_row_q;
      st_buf_d     = s_buf_q;
      st_fin_d     = (s_row_q + 17'd1 >= s_nr);
      if (s_row_q + 17'd1 < s_nr) begin
        s_row_d  = s_row_q + 17'd1;
        s_ptr_d  = s_ptr_q + f_lda;
        s_bptr_d = s_bptr_q + f_ldb;
      end else begin
        s_row_d = '0;
        s_buf_d = !s_buf_q;
        if (s_kc_q + 17'(SpW) < f_k) begin
          s_kc_d   = s_kc_q + 17'(SpW);
          s_ptr_d  = s_abase_q + 32'(s_kc_d);
          s_bptr_d = s_bbase_q + 32'(s_kc_d);
        end else begin
          s_kc_d = '0;
          if (s_j0_q + 17'(Cols) < f_n) begin
            s_j0_d    = s_j0_q + 17'(Cols);
            s_ptr_d   = s_abase_q;
            s_bbase_d = s_bbase_q + f_ldb * 32'(Cols);
            s_bptr_d  = s_bbase_d;
          end else begin
            s_j0_d    = '0;
            s_i0_d    = s_i0_q + band_q;
            s_abase_d = s_abase_q + band_lda_q;
            s_ptr_d   = s_abase_d;
            s_bbase_d = f_wgt;
            s_bptr_d  = f_wgt;
            s_done_d  = (s_i0_d >= f_m);
          end
        end
      end
    end

    unique case (fs_q)
      FIdle: begin
        if (start_i) begin
          // Overlapping C rows force row-major write order (see header).
          band_d     = (f_m > 17'd1 && f_ldc < {13'd0, f_n, 2'b00}) ? 17'd1 : 17'(Rows);
          band_lda_d = (band_d == 17'd1) ? f_lda : f_lda * 32'(Rows);
          band_ldc_d = (band_d == 17'd1) ? f_ldc : f_ldc * 32'(Rows);
          i0_d       = '0;
          j0_d       = '0;
          kc_d       = '0;
          k_d        = '0;
          b_addr_d   = f_wgt;
          macs_blk_d = 32'(min17(band_d, f_m)) * 32'(min17(17'(Cols), f_n));
          cur_d      = 1'b0;
          s_i0_d     = '0;
          s_j0_d     = '0;
          s_kc_d     = '0;
          s_row_d    = '0;
          s_abase_d  = f_in;
          s_ptr_d    = f_in;
          s_bbase_d  = f_wgt;
          s_bptr_d   = f_wgt;
          s_buf_d    = 1'b0;
          s_done_d   = 1'b0;
          full_d     = '0;
          wb_i0_d    = '0;
          z_i_d      = '0;
          z_j0_d     = '0;
          z_base_d   = f_c;
          if (f_m == 17'd0 || f_n == 17'd0 || f_k == 17'd0) begin
            wb_i0_d  = f_m;  // no array work: nothing to write back
            s_done_d = 1'b1;
            fs_d     = (f_m != 17'd0 && f_n != 17'd0 && !f_acc) ? FZero : FWaitWb;
          end else begin
            fs_d = FRun;
          end
        end
      end

      FRun: begin
        if (arr_fire) begin
          macs_inc_o = macs_blk_q;
          if (cur_q) begin
            for (int unsigned r = 0; r < Rows; r++) begin
              stage_d[StW + r*SpW*8 +: SpW*8] = stage_q[StW + r*SpW*8 +: SpW*8] >> 8;
            end
          end else begin
            for (int unsigned r = 0; r < Rows; r++) begin
              stage_d[r*SpW*8 +: SpW*8] = stage_q[r*SpW*8 +: SpW*8] >> 8;
            end
          end
          if (f_bt && cur_q) begin
            for (int unsigned c = 0; c < Cols; c++) begin
              bstage_d[BStW + c*SpW*8 +: SpW*8] = bstage_q[BStW + c*SpW*8 +: SpW*8] >> 8;
            end
          end
          if (f_bt && !cur_q) begin
            for (int unsigned c = 0; c < Cols; c++) begin
              bstage_d[c*SpW*8 +: SpW*8] = bstage_q[c*SpW*8 +: SpW*8] >> 8;
            end
          end
          k_d      = k_q + 17'd1;
          b_addr_d = b_addr_q + f_ldb;
          if (arr_in_last || k_q + 17'd1 == kc_q + 17'(SpW)) begin
            // Chunk done: hand its buffer back to the stager.
            full_d[cur_q] = 1'b0;
            cur_d         = !cur_q;
            kc_d          = kc_q + 17'(SpW);
          end
          if (arr_in_last) begin
            // Block done: next column block, or next band.
            i0_d       = nb_i0;
            j0_d       = nb_j0;
            kc_d       = '0;
            k_d        = '0;
            b_addr_d   = f_wgt + 32'(nb_j0);
            macs_blk_d = 32'(min17(band_q, f_m - nb_i0)) * 32'(min17(17'(Cols), f_n - nb_j0));
            if (nb_end) begin
              fs_d = FWaitWb;
            end
          end
          if (!(arr_in_last && nb_end)) begin
            if (!f_bt) begin
              wgt_rd_req_o  = 1'b1;
              wgt_rd_addr_o = WgtAw'(b_addr_d);
            end
            pend_d = 1'b1;
          end
        end else begin
          // First beat, a refused beat, or a beat waiting for its chunk:
          // read the same B row (again) so it is on the bus next cycle
          // (b_trans: B is staged, the port is the stager's).
          if (!f_bt) begin
            wgt_rd_req_o = 1'b1;
          end
          pend_d = 1'b1;
        end
      end

      FZero: begin
        if (z_j0_q + 17'(Cols) < f_n) begin
          z_j0_d = z_j0_q + 17'(Cols);
        end else begin
          z_j0_d   = '0;
          z_i_d    = z_i_q + 17'd1;
          z_base_d = z_base_q + f_ldc;
          if (z_i_q + 17'd1 >= f_m) begin
            fs_d = FWaitWb;
          end
        end
      end

      FWaitWb: begin
        if (wb_all && !arr_busy) begin
          done_o = 1'b1;
          fs_d   = FIdle;
        end
      end

      FDrain: begin
        if (!open_q && !held_q && !arr_busy) begin
          fs_d = FIdle;
        end
      end

      default: fs_d = FIdle;
    endcase

    if (abort_i && fs_q != FIdle) begin
      fs_d = FDrain;
    end
  end

  // ---------------------------------------------------------------------------
  // Write-back.
  // ---------------------------------------------------------------------------
  logic row_ok;
  assign row_ok   = 17'(arr_out_row) < wb_rb;
  assign arr_take = arr_out_valid && arr_out_ready;

  always_comb begin
    wb_j0_d    = wb_j0_q;
    wb_band_d  = wb_band_q;
    wb_blk_d   = wb_blk_q;
    wb_ptr_d   = wb_ptr_q;
    wb_phase_d = wb_phase_q;
    arr_out_ready = 1'b1;
    acc_rd_req_o  = 1'b0;
    acc_rd_addr_o = AccAw'(wb_ptr_q);
    acc_wr_req_o  = 1'b0;
    acc_wr_addr_o = AccAw'(wb_ptr_q);
    acc_wr_data_o = (SpW*8)'(arr_out_c);
    acc_wr_mask_o = byte_mask(wb_cb);

    if (fs_q == FIdle && start_i) begin
      wb_j0_d    = '0;
      wb_band_d  = f_c;
      wb_blk_d   = f_c;
      wb_ptr_d   = f_c;
      wb_phase_d = 1'b0;
    end else if (fs_q == FZero) begin
      acc_wr_req_o  = 1'b1;
      acc_wr_addr_o = AccAw'(z_base_q + {13'd0, z_j0_q[16:0], 2'b00});
      acc_wr_data_o = '0;
      acc_wr_mask_o = byte_mask(z_cb);
    end else if (fs_q != FDrain && fs_q != FIdle && arr_out_valid && row_ok) begin
      if (!f_acc) begin
        acc_wr_req_o = 1'b1;
      end else if (!wb_phase_q) begin
        acc_rd_req_o  = 1'b1;
        arr_out_ready = 1'b0;
        wb_phase_d    = acc_rd_gnt_i;
      end else begin
        acc_wr_req_o = 1'b1;
        for (int unsigned j = 0; j < Cols; j++) begin
          acc_wr_data_o[32*j +: 32] = acc_rd_data_i[32*j +: 32] + arr_out_c[32*j +: 32];
        end
        wb_phase_d = 1'b0;
      end
    end

    if (arr_take && fs_q != FDrain) begin
      if (arr_out_last) begin
        if (wb_j0_q + 17'(Cols) < f_n) begin
          wb_j0_d  = wb_j0_q + 17'(Cols);
          wb_blk_d = wb_blk_q + 32'(4 * Cols);
          wb_ptr_d = wb_blk_d;
        end else begin
          wb_j0_d   = '0;
          wb_band_d = wb_band_q + band_ldc_q;
          wb_blk_d  = wb_band_d;
          wb_ptr_d  = wb_band_d;
        end
      end else begin
        wb_ptr_d = wb_ptr_q + f_ldc;
      end
    end
  end

  // wb_i0 advances with the write-back; it is also set at start (above).
  logic [16:0] wb_i0_next;
  always_comb begin
    wb_i0_next = wb_i0_d;
    if (arr_take && fs_q != FDrain && arr_out_last && !(wb_j0_q + 17'(Cols) < f_n)) begin
      wb_i0_next = wb_i0_q + band_q;
    end
  end

  // ---------------------------------------------------------------------------
  // Registers: control state reset, datapath state reset-free.
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      fs_q       <= FIdle;
      pend_q     <= 1'b0;
      st_pend_q  <= 1'b0;
      full_q     <= '0;
      open_q     <= 1'b0;
      held_q     <= 1'b0;
      wb_phase_q <= 1'b0;
      wb_i0_q    <= '0;
    end else begin
      fs_q       <= fs_d;
      pend_q     <= pend_d;
      st_pend_q  <= st_pend_d;
      full_q     <= full_d;
      open_q     <= open_d;
      held_q     <= held_d;
      wb_phase_q <= wb_phase_d;
      wb_i0_q    <= wb_i0_next;
    end
  end

  always_ff @(posedge clk_i) begin
    band_q     <= band_d;
    band_lda_q <= band_lda_d;
    band_ldc_q <= band_ldc_d;
    i0_q       <= i0_d;
    j0_q       <= j0_d;
    macs_blk_q <= macs_blk_d;
    kc_q       <= kc_d;
    k_q        <= k_d;
    b_addr_q   <= b_addr_d;
    cur_q      <= cur_d;
    s_i0_q     <= s_i0_d;
    s_j0_q     <= s_j0_d;
    s_kc_q     <= s_kc_d;
    s_row_q    <= s_row_d;
    s_abase_q  <= s_abase_d;
    s_ptr_q    <= s_ptr_d;
    s_bbase_q  <= s_bbase_d;
    s_bptr_q   <= s_bptr_d;
    s_buf_q    <= s_buf_d;
    s_done_q   <= s_done_d;
    st_fin_q   <= st_fin_d;
    st_a_q     <= st_a_d;
    st_b_q     <= st_b_d;
    st_buf_q   <= st_buf_d;
    st_row_q   <= st_row_d;
    stage_q    <= stage_d;
    bstage_q   <= bstage_d;
    z_i_q      <= z_i_d;
    z_j0_q     <= z_j0_d;
    z_base_q   <= z_base_d;
    wb_j0_q    <= wb_j0_d;
    wb_band_q  <= wb_band_d;
    wb_blk_q   <= wb_blk_d;
    wb_ptr_q   <= wb_ptr_d;
  end

  // ---------------------------------------------------------------------------
  // The array.
  // ---------------------------------------------------------------------------
  loom_systolic_array #(
    .Rows (Rows),
    .Cols (Cols)
  ) u_array (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (arr_in_valid),
    .in_ready_o  (arr_in_ready),
    .in_first_i  (arr_in_first),
    .in_last_i   (arr_in_last),
    .a_zp_i      (f_azp),
    .b_zp_i      (f_bzp),
    .a_i         (arr_a),
    .b_i         (arr_b),
    .out_valid_o (arr_out_valid),
    .out_ready_i (arr_out_ready),
    .out_row_o   (arr_out_row),
    .out_last_o  (arr_out_last),
    .out_c_o     (arr_out_c),
    .busy_o      (arr_busy)
  );

  assign busy_o   = (fs_q != FIdle);
  assign active_o = (fs_q == FRun) || (fs_q == FZero) || arr_busy;

  logic unused_data;
  // Bytes past Cols (B) and Cols*4 (old C) exist when SpW is wider than the array.
  assign unused_data = ^{wgt_rd_data_i, acc_rd_data_i};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(AccRowFits_A, Cols * 4 <= SpW)
  `LOOM_ASSERT_INIT(RowsFitStage_A, Rows >= 1 && SpW >= 4)
  // The write-back never runs past the tiles the feed produced.
  `LOOM_ASSERT(WbBehindFeed_A, fs_q != FDrain && arr_take |-> !wb_all)
  `LOOM_ASSERT(NoStartWhileBusy_A, start_i |-> fs_q == FIdle)
  // The stager never writes the buffer being streamed.
  `LOOM_ASSERT(StageIntoFree_A, st_pend_q |-> !full_q[st_buf_q])


  // Cover points (coverage build only).
  `LOOM_COVER_STATES(c_state, fs_q, 5)
  `LOOM_COVER(c_b_trans, fs_q == FIdle && start_i && f_bt && f_k != 17'd0)
  // A b_trans chunk whose B columns outnumber its A rows (stages in cb cycles).
  `LOOM_COVER(c_b_trans_wide, st_pend_q && st_b_q && !st_a_q)

endmodule
