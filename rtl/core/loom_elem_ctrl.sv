// Element controller of the compute unit: POSTOP, POOL and ELTWISE through one loom_postop datapath into OUT.
//
// All three produce one int8 per element, written densely from out_addr in
// element order, and all three fit loom_postop's element function
//   clamp(rq(acc + bias, mult, shift) + out_zp [+ rq(res - res_zp, res_mult, res_shift)], lo, hi):
//   POSTOP   acc = ACC word, (bias, mult, shift) = PARAM triple, res = IN byte
//   ELTWISE  acc = A, bias = -a_zp, (a_mult, a_shift); residual = B with (b_zp, b_mult, b_shift)
//   POOL avg acc = sum(x - in_zp) over the window, bias 0, (mult, shift)
//   POOL max acc = max(x), bias 0, mult 2, shift 1 (rq(v, 2, 1) = v exactly), out_zp 0
// so one datapath (two requantizers) serves every post-op instruction.
//
// POSTOP first scans the per-channel shifts of the PARAM table (one channel
// a cycle) and raises err_o before any output is written if one is outside
// 1..62; this is stricter than the contract requires and leaves OUT exactly
// as the golden model does. Elements are then fed one a cycle: each
// element's ACC word, PARAM triple and residual byte are read in parallel
// (ACC through its grant); data the datapath refuses is read again.
//
// POOL reads, for each output pixel and each SpW-channel chunk, the win
// window rows of that chunk (one read each) into per-lane max and sum
// registers, then feeds the chunk's lanes. ELTWISE reads an SpW-byte chunk
// of A and of B (both in IN, one read port) and feeds it.
//
// Performance (first version): one element per cycle at best; POOL spends
// win + 1 read cycles per chunk and ELTWISE three per chunk, neither
// overlapped with feeding. OUT is written one byte per element.
`include "loom_assert.svh"

module loom_elem_ctrl #(
  parameter int unsigned SpW     = 16,
  parameter int unsigned InAw    = 14,
  parameter int unsigned AccAw   = 14,
  parameter int unsigned OutAw   = 13,
  parameter int unsigned ParamAw = 12
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,

  input  logic                 start_i,   // insn_i holds a checked, non-empty instruction
  input  logic                 abort_i,
  input  logic [255:0]         insn_i,
  output logic                 busy_o,
  output logic                 done_o,    // 1-cycle pulse: every output is written
  output logic                 err_o,     // 1-cycle pulse: a PARAM shift outside 1..62
  output logic                 active_o,

  output logic                 in_rd_req_o,
  output logic [InAw-1:0]      in_rd_addr_o,
  input  logic [SpW*8-1:0]     in_rd_data_i,

  output logic                 acc_rd_req_o,
  output logic [AccAw-1:0]     acc_rd_addr_o,
  input  logic                 acc_rd_gnt_i,
  input  logic [SpW*8-1:0]     acc_rd_data_i,

  output logic                 param_rd_req_o,
  output logic [ParamAw-1:0]   param_rd_addr_o,
  input  logic [SpW*8-1:0]     param_rd_data_i,

  output logic                 out_wr_req_o,
  output logic [OutAw-1:0]     out_wr_addr_o,
  output logic [SpW*8-1:0]     out_wr_data_o,
  output logic [SpW-1:0]       out_wr_mask_o,
  input  logic                 out_wr_gnt_i
);

  typedef enum logic [3:0] {
    EIdle,
    EScan,     // POSTOP: check every channel's shift
    EPost,     // POSTOP: feed elements
    EPoolRd,   // POOL: reduce the window rows of one channel chunk
    EPoolFeed, // POOL: feed the chunk's lanes
    EEltA,     // ELTWISE: read the A chunk
    EEltB,     // ELTWISE: capture A, read the B chunk
    EEltCap,   // ELTWISE: capture B
    EEltFeed,  // ELTWISE: feed the chunk
    EWait,     // everything fed; wait for the last output write
    EDrain     // abort: discard what is in the datapath
  } elem_e;

  // ---------------------------------------------------------------------------
  // Instruction fields.
  // ---------------------------------------------------------------------------
  logic [5:0] opcode;
  assign opcode = insn_i[loom_pkg::INSN_OPCODE_LSB +: loom_pkg::INSN_OPCODE_W];
  logic is_post, is_pool, is_elt;
  assign is_post = (opcode == loom_pkg::OpPostop);
  assign is_pool = (opcode == loom_pkg::OpPool);
  assign is_elt  = (opcode == loom_pkg::OpEltwise);

  // POSTOP.
  logic        p_res;
  logic [31:0] p_acc, p_out, p_par, p_raddr;
  logic [16:0] p_m, p_n;
  assign p_res   = insn_i[loom_pkg::POSTOP_RESIDUAL_LSB];
  assign p_acc   = 32'(insn_i[loom_pkg::POSTOP_ACC_ADDR_LSB +: loom_pkg::POSTOP_ACC_ADDR_W]);
  assign p_out   = 32'(insn_i[loom_pkg::POSTOP_OUT_ADDR_LSB +: loom_pkg::POSTOP_OUT_ADDR_W]);
  assign p_par   = 32'(insn_i[loom_pkg::POSTOP_PARAM_ADDR_LSB +: loom_pkg::POSTOP_PARAM_ADDR_W]);
  assign p_raddr = 32'(insn_i[loom_pkg::POSTOP_RES_ADDR_LSB +: loom_pkg::POSTOP_RES_ADDR_W]);
  assign p_m     = 17'(insn_i[loom_pkg::POSTOP_M_LSB +: loom_pkg::POSTOP_M_W]);
  assign p_n     = 17'(insn_i[loom_pkg::POSTOP_N_LSB +: loom_pkg::POSTOP_N_W]);
  // POOL.
  logic               o_avg;
  logic [5:0]         o_shift;
  logic [31:0]        o_in, o_out, o_c32, o_win_c;
  logic [16:0]        o_p, o_win, o_c;
  logic signed [7:0]  o_in_zp;
  logic signed [31:0] o_mult;
  assign o_avg   = insn_i[loom_pkg::POOL_AVG_LSB];
  assign o_shift = insn_i[loom_pkg::POOL_SHIFT_LSB +: loom_pkg::POOL_SHIFT_W];
  assign o_in    = 32'(insn_i[loom_pkg::POOL_IN_ADDR_LSB +: loom_pkg::POOL_IN_ADDR_W]);
  assign o_out   = 32'(insn_i[loom_pkg::POOL_OUT_ADDR_LSB +: loom_pkg::POOL_OUT_ADDR_W]);
  assign o_p     = 17'(insn_i[loom_pkg::POOL_P_LSB +: loom_pkg::POOL_P_W]);
  assign o_win   = 17'(insn_i[loom_pkg::POOL_WIN_LSB +: loom_pkg::POOL_WIN_W]);
  assign o_c     = 17'(insn_i[loom_pkg::POOL_C_LSB +: loom_pkg::POOL_C_W]);
  assign o_in_zp = insn_i[loom_pkg::POOL_IN_ZP_LSB +: loom_pkg::POOL_IN_ZP_W];
  assign o_mult  = insn_i[loom_pkg::POOL_MULT_LSB +: loom_pkg::POOL_MULT_W];
  assign o_c32   = 32'(o_c);
  // ELTWISE.
  logic [5:0]         e_ash, e_bsh;
  logic [31:0]        e_a, e_b, e_out, e_cnt;
  logic signed [7:0]  e_azp, e_bzp;
  logic signed [31:0] e_amult, e_bmult;
  assign e_ash   = insn_i[loom_pkg::ELTWISE_A_SHIFT_LSB +: loom_pkg::ELTWISE_A_SHIFT_W];
  assign e_bsh   = insn_i[loom_pkg::ELTWISE_B_SHIFT_LSB +: loom_pkg::ELTWISE_B_SHIFT_W];
  assign e_a     = 32'(insn_i[loom_pkg::ELTWISE_A_ADDR_LSB +: loom_pkg::ELTWISE_A_ADDR_W]);
  assign e_b     = 32'(insn_i[loom_pkg::ELTWISE_B_ADDR_LSB +: loom_pkg::ELTWISE_B_ADDR_W]);
  assign e_out   = 32'(insn_i[loom_pkg::ELTWISE_OUT_ADDR_LSB +: loom_pkg::ELTWISE_OUT_ADDR_W]);
  assign e_cnt   = 32'(insn_i[loom_pkg::ELTWISE_COUNT_LSB +: loom_pkg::ELTWISE_COUNT_W]);
  assign e_azp   = insn_i[loom_pkg::ELTWISE_A_ZP_LSB +: loom_pkg::ELTWISE_A_ZP_W];
  assign e_bzp   = insn_i[loom_pkg::ELTWISE_B_ZP_LSB +: loom_pkg::ELTWISE_B_ZP_W];
  assign e_amult = insn_i[loom_pkg::ELTWISE_A_MULT_LSB +: loom_pkg::ELTWISE_A_MULT_W];
  assign e_bmult = insn_i[loom_pkg::ELTWISE_B_MULT_LSB +: loom_pkg::ELTWISE_B_MULT_W];

  // ---------------------------------------------------------------------------
  // Datapath configuration per opcode (stable for the whole instruction).
  // ---------------------------------------------------------------------------
  logic              cfg_res;
  logic signed [7:0] cfg_out_zp, cfg_lo, cfg_hi, cfg_res_zp;
  logic signed [31:0] cfg_res_mult;
  logic [5:0]        cfg_res_shift;
  always_comb begin
    cfg_res       = 1'b0;
    cfg_out_zp    = '0;
    cfg_lo        = insn_i[loom_pkg::POSTOP_CLIP_LO_LSB +: 8];
    cfg_hi        = insn_i[loom_pkg::POSTOP_CLIP_HI_LSB +: 8];
    cfg_res_zp    = '0;
    cfg_res_mult  = '0;
    cfg_res_shift = 6'd1;
    if (is_post) begin
      cfg_res       = p_res;
      cfg_out_zp    = insn_i[loom_pkg::POSTOP_OUT_ZP_LSB +: loom_pkg::POSTOP_OUT_ZP_W];
      cfg_res_zp    = insn_i[loom_pkg::POSTOP_RES_ZP_LSB +: loom_pkg::POSTOP_RES_ZP_W];
      cfg_res_mult  = insn_i[loom_pkg::POSTOP_RES_MULT_LSB +: loom_pkg::POSTOP_RES_MULT_W];
      cfg_res_shift = insn_i[loom_pkg::POSTOP_RES_SHIFT_LSB +: loom_pkg::POSTOP_RES_SHIFT_W];
    end else if (is_pool) begin
      cfg_out_zp = o_avg ? insn_i[loom_pkg::POOL_OUT_ZP_LSB +: loom_pkg::POOL_OUT_ZP_W] : 8'sd0;
      cfg_lo     = insn_i[loom_pkg::POOL_CLIP_LO_LSB +: loom_pkg::POOL_CLIP_LO_W];
      cfg_hi     = insn_i[loom_pkg::POOL_CLIP_HI_LSB +: loom_pkg::POOL_CLIP_HI_W];
    end else if (is_elt) begin
      cfg_res       = 1'b1;
      cfg_out_zp    = insn_i[loom_pkg::ELTWISE_OUT_ZP_LSB +: loom_pkg::ELTWISE_OUT_ZP_W];
      cfg_lo        = insn_i[loom_pkg::ELTWISE_CLIP_LO_LSB +: loom_pkg::ELTWISE_CLIP_LO_W];
      cfg_hi        = insn_i[loom_pkg::ELTWISE_CLIP_HI_LSB +: loom_pkg::ELTWISE_CLIP_HI_W];
      cfg_res_zp    = e_bzp;
      cfg_res_mult  = e_bmult;
      cfg_res_shift = e_bsh;
    end
  end

  // ---------------------------------------------------------------------------
  // State.
  // ---------------------------------------------------------------------------
  elem_e        es_d, es_q;
  logic         pend_d, pend_q;             // reads for the cursor element arrive this cycle
  logic [16:0]  ci_d, ci_q, cj_d, cj_q;     // cursor (POSTOP: row, channel; POOL: pixel, chunk base)
  logic [31:0]  c_acc_d, c_acc_q, c_par_d, c_par_q, c_res_d, c_res_q;
  logic [31:0]  win_base_d, win_base_q, row_ptr_d, row_ptr_q;
  logic [16:0]  w_d, w_q;                   // POOL: window rows read so far
  logic         w_first_d, w_first_q;       // POOL: the arriving row is the window's first
  logic [16:0]  lane_d, lane_q, lanes_d, lanes_q;
  logic [SpW*8-1:0]  lmax_d, lmax_q, ea_d, ea_q, eb_d, eb_q;
  logic [SpW*32-1:0] lsum_d, lsum_q;
  logic [31:0]  e_i_d, e_i_q;               // ELTWISE chunk base
  logic [31:0]  total_d, total_q, written_d, written_q, out_ptr_d, out_ptr_q;

  // Datapath interface.
  logic               dp_in_valid, dp_in_ready, dp_fire;
  logic signed [31:0] dp_acc, dp_bias, dp_mult;
  logic [5:0]         dp_shift;
  logic signed [7:0]  dp_res;
  logic               dp_out_valid, dp_out_ready, dp_busy;
  logic signed [7:0]  dp_out;

  assign dp_fire = dp_in_valid && dp_in_ready;

  // Next POSTOP cursor element (row-major).
  logic        post_last;
  logic [16:0] nx_i, nx_j;
  logic [31:0] nx_par;
  always_comb begin
    post_last = (ci_q + 17'd1 >= p_m) && (cj_q + 17'd1 >= p_n);
    nx_i      = ci_q;
    nx_j      = cj_q + 17'd1;
    nx_par    = c_par_q + 32'd12;
    if (cj_q + 17'd1 >= p_n) begin
      nx_i   = ci_q + 17'd1;
      nx_j   = '0;
      nx_par = p_par;
    end
  end

  // POOL lane update: running max and zero-point-shifted sum of the arriving row.
  logic [SpW*8-1:0]  pool_max;
  logic [SpW*32-1:0] pool_sum;
  for (genvar l = 0; l < SpW; l++) begin : g_pool_lane
    logic signed [7:0]  x;
    logic signed [31:0] d;
    assign x = in_rd_data_i[8*l +: 8];
    assign d = 32'(x) - 32'(o_in_zp);
    assign pool_max[8*l +: 8]  = (x > $signed(lmax_q[8*l +: 8])) ? x : lmax_q[8*l +: 8];
    assign pool_sum[32*l +: 32] = w_first_q ? d : lsum_q[32*l +: 32] + d;
  end

  // A PARAM shift word read in EScan (low 32 bits of the window at param+12j+8).
  logic signed [31:0] scan_shift;
  assign scan_shift = param_rd_data_i[31:0];

  always_comb begin
    es_d       = es_q;
    pend_d     = 1'b0;
    ci_d       = ci_q;
    cj_d       = cj_q;
    c_acc_d    = c_acc_q;
    c_par_d    = c_par_q;
    c_res_d    = c_res_q;
    win_base_d = win_base_q;
    row_ptr_d  = row_ptr_q;
    w_d        = w_q;
    w_first_d  = w_first_q;
    lane_d     = lane_q;
    lanes_d    = lanes_q;
    lmax_d     = lmax_q;
    lsum_d     = lsum_q;
    ea_d       = ea_q;
    eb_d       = eb_q;
    e_i_d      = e_i_q;
    total_d    = total_q;
    done_o     = 1'b0;
    err_o      = 1'b0;

    in_rd_req_o     = 1'b0;
    in_rd_addr_o    = InAw'(c_res_q);
    acc_rd_req_o    = 1'b0;
    acc_rd_addr_o   = AccAw'(c_acc_q);
    param_rd_req_o  = 1'b0;
    param_rd_addr_o = ParamAw'(c_par_q);

    dp_in_valid = 1'b0;
    dp_acc      = acc_rd_data_i[31:0];
    dp_bias     = param_rd_data_i[31:0];
    dp_mult     = param_rd_data_i[63:32];
    dp_shift    = param_rd_data_i[69:64];
    dp_res      = in_rd_data_i[7:0];

    unique case (es_q)
      EIdle: begin
        if (start_i) begin
          ci_d    = '0;
          cj_d    = '0;
          c_acc_d = p_acc;
          c_par_d = p_par;
          c_res_d = p_raddr;
          if (is_post) begin
            total_d = 32'(p_m) * 32'(p_n);
            es_d    = EScan;
          end else if (is_pool) begin
            total_d    = 32'(o_p) * o_c32;
            win_base_d = o_in;
            row_ptr_d  = o_in;
            w_d        = '0;
            es_d       = EPoolRd;
          end else begin
            total_d = e_cnt;
            e_i_d   = '0;
            es_d    = EEltA;
          end
        end
      end

      // cj counts channels issued; c_par points at the next channel's shift word.
      EScan: begin
        param_rd_addr_o = ParamAw'(c_par_q + 32'd8);
        if (cj_q < p_n) begin
          param_rd_req_o = 1'b1;
          pend_d         = 1'b1;
          cj_d           = cj_q + 17'd1;
          c_par_d        = c_par_q + 32'd12;
        end
        if (pend_q && (scan_shift < 32'sd1 || scan_shift > 32'sd62)) begin
          err_o = 1'b1;
          es_d  = EIdle;
        end else if (cj_q >= p_n && !pend_q) begin
          cj_d    = '0;
          c_par_d = p_par;
          es_d    = EPost;
        end
      end

      EPost: begin
        dp_in_valid = pend_q;
        if (dp_fire) begin
          if (post_last) begin
            es_d = EWait;
          end else begin
            // Read the next element now so it arrives back to back.
            ci_d    = nx_i;
            cj_d    = nx_j;
            c_acc_d = c_acc_q + 32'd4;
            c_par_d = nx_par;
            c_res_d = c_res_q + 32'd1;
            acc_rd_req_o = 1'b1;
            pend_d       = acc_rd_gnt_i;
          end
        end else begin
          acc_rd_req_o = 1'b1;
          pend_d       = acc_rd_gnt_i;
        end
        // PARAM and IN follow ACC's request; without ACC's grant the data is unused.
        acc_rd_addr_o   = AccAw'(c_acc_d);
        param_rd_addr_o = ParamAw'(c_par_d);
        in_rd_addr_o    = InAw'(c_res_d);
        param_rd_req_o  = acc_rd_req_o;
        in_rd_req_o     = acc_rd_req_o && p_res;
      end

      EPoolRd: begin
        in_rd_addr_o = InAw'(row_ptr_q + 32'(cj_q));
        if (w_q < o_win) begin
          in_rd_req_o = 1'b1;
          pend_d      = 1'b1;
          w_first_d   = (w_q == 17'd0);
          w_d         = w_q + 17'd1;
          row_ptr_d   = row_ptr_q + o_c32;
        end
        if (pend_q) begin
          lmax_d = w_first_q ? in_rd_data_i : pool_max;
          lsum_d = pool_sum;
        end else if (w_q >= o_win) begin
          lane_d  = '0;
          lanes_d = (o_c - cj_q < 17'(SpW)) ? o_c - cj_q : 17'(SpW);
          es_d    = EPoolFeed;
        end
      end

      EPoolFeed: begin
        dp_in_valid = 1'b1;
        dp_acc      = o_avg ? $signed(lsum_q[31:0]) : 32'($signed(lmax_q[7:0]));
        dp_bias     = '0;
        dp_mult     = o_avg ? o_mult : 32'sd2;
        dp_shift    = o_avg ? o_shift : 6'd1;
        dp_res      = '0;
        if (dp_fire) begin
          lmax_d = lmax_q >> 8;
          lsum_d = lsum_q >> 32;
          lane_d = lane_q + 17'd1;
          if (lane_q + 17'd1 >= lanes_q) begin
            w_d = '0;
            if (cj_q + 17'(SpW) < o_c) begin
              cj_d      = cj_q + 17'(SpW);
              row_ptr_d = win_base_q;
              es_d      = EPoolRd;
            end else begin
              cj_d       = '0;
              ci_d       = ci_q + 17'd1;
              win_base_d = win_base_q + o_win_c;
              row_ptr_d  = win_base_q + o_win_c;
              es_d       = (ci_q + 17'd1 < o_p) ? EPoolRd : EWait;
            end
          end
        end
      end

      EEltA: begin
        in_rd_req_o  = 1'b1;
        in_rd_addr_o = InAw'(e_a + e_i_q);
        es_d         = EEltB;
      end

      EEltB: begin
        ea_d         = in_rd_data_i;
        in_rd_req_o  = 1'b1;
        in_rd_addr_o = InAw'(e_b + e_i_q);
        es_d         = EEltCap;
      end

      EEltCap: begin
        eb_d    = in_rd_data_i;
        lane_d  = '0;
        lanes_d = (e_cnt - e_i_q < 32'(SpW)) ? 17'(e_cnt - e_i_q) : 17'(SpW);
        es_d    = EEltFeed;
      end

      EEltFeed: begin
        dp_in_valid = 1'b1;
        dp_acc      = 32'($signed(ea_q[7:0]));
        dp_bias     = 32'sd0 - 32'(e_azp);
        dp_mult     = e_amult;
        dp_shift    = e_ash;
        dp_res      = eb_q[7:0];
        if (dp_fire) begin
          ea_d   = ea_q >> 8;
          eb_d   = eb_q >> 8;
          lane_d = lane_q + 17'd1;
          if (lane_q + 17'd1 >= lanes_q) begin
            e_i_d = e_i_q + 32'(SpW);
            es_d  = (e_i_q + 32'(SpW) < e_cnt) ? EEltA : EWait;
          end
        end
      end

      EWait: begin
        if (written_q == total_q && !dp_busy) begin
          done_o = 1'b1;
          es_d   = EIdle;
        end
      end

      EDrain: begin
        if (!dp_busy) begin
          es_d = EIdle;
        end
      end

      default: es_d = EIdle;
    endcase

    if (abort_i && es_q != EIdle) begin
      es_d = EDrain;
    end
  end

  assign o_win_c = 32'(o_win) * o_c32;

  // ---------------------------------------------------------------------------
  // Output writer: one byte per element, in order from out_addr.
  // ---------------------------------------------------------------------------
  always_comb begin
    written_d = written_q;
    out_ptr_d = out_ptr_q;
    out_wr_req_o  = dp_out_valid && (es_q != EDrain);
    out_wr_addr_o = OutAw'(out_ptr_q);
    out_wr_data_o = (SpW*8)'(dp_out);
    out_wr_mask_o = SpW'(1);
    dp_out_ready  = (es_q == EDrain) || out_wr_gnt_i;
    if (es_q == EIdle && start_i) begin
      written_d = '0;
      out_ptr_d = is_post ? p_out : (is_pool ? o_out : e_out);
    end else if (dp_out_valid && dp_out_ready) begin
      written_d = written_q + 32'd1;
      out_ptr_d = out_ptr_q + 32'd1;
    end
  end

  loom_postop u_postop (
    .clk_i           (clk_i),
    .rst_ni          (rst_ni),
    .cfg_residual_i  (cfg_res),
    .cfg_out_zp_i    (cfg_out_zp),
    .cfg_clip_lo_i   (cfg_lo),
    .cfg_clip_hi_i   (cfg_hi),
    .cfg_res_zp_i    (cfg_res_zp),
    .cfg_res_mult_i  (cfg_res_mult),
    .cfg_res_shift_i (cfg_res_shift),
    .in_valid_i      (dp_in_valid),
    .in_ready_o      (dp_in_ready),
    .acc_i           (dp_acc),
    .bias_i          (dp_bias),
    .mult_i          (dp_mult),
    .shift_i         (dp_shift),
    .res_i           (dp_res),
    .out_valid_o     (dp_out_valid),
    .out_ready_i     (dp_out_ready),
    .out_o           (dp_out),
    .busy_o          (dp_busy)
  );

  // ---------------------------------------------------------------------------
  // Registers.
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      es_q <= EIdle;
      pend_q <= 1'b0;
    end else begin
      es_q <= es_d;
      pend_q <= pend_d;
    end
  end

  always_ff @(posedge clk_i) begin
    ci_q       <= ci_d;
    cj_q       <= cj_d;
    c_acc_q    <= c_acc_d;
    c_par_q    <= c_par_d;
    c_res_q    <= c_res_d;
    win_base_q <= win_base_d;
    row_ptr_q  <= row_ptr_d;
    w_q        <= w_d;
    w_first_q  <= w_first_d;
    lane_q     <= lane_d;
    lanes_q    <= lanes_d;
    lmax_q     <= lmax_d;
    lsum_q     <= lsum_d;
    ea_q       <= ea_d;
    eb_q       <= eb_d;
    e_i_q      <= e_i_d;
    total_q    <= total_d;
    written_q  <= written_d;
    out_ptr_q  <= out_ptr_d;
  end

  assign busy_o   = (es_q != EIdle);
  assign active_o = (es_q != EIdle) && (es_q != EDrain);

  logic unused_bits;
  assign unused_bits = ^{insn_i, acc_rd_data_i, param_rd_data_i, in_rd_data_i};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(ParamTripleFits_A, SpW >= 12)
  `LOOM_ASSERT(NoStartWhileBusy_A, start_i |-> es_q == EIdle)
  `LOOM_ASSERT(NoExtraOutput_A, es_q != EDrain && out_wr_req_o |-> written_q < total_q)

endmodule
