// Field and scratchpad-bounds checks of the compute unit's instructions, in the golden model's order.
//
// Purely combinational on the held instruction. The unit raises
// ERR_ILLEGAL_INSN when illegal_o is set, else ERR_SCRATCHPAD_OOB when oob_o
// is set; empty_o marks an instruction that passes its checks but has no
// work (zero-size shapes, or GEMM with k_len = 0 and accumulate = 1), which
// the unit retires without touching a scratchpad. Exactly as in
// host/hw/golden_compute.cc, POSTOP/POOL/ELTWISE/ROWNORM/DWCONV with no
// elements skip the bounds check, while GEMM always checks the ACC range.
//
// The spans are formed exactly (up to 49 bits for POOL's p*win*c), so no
// wrapped product can sneak past the bound. The multipliers are wide but sit
// on a register-to-register path of their own (the unit's check cycle).
module loom_compute_check #(
  parameter int unsigned InBytes    = 16384,
  parameter int unsigned WgtBytes   = 16384,
  parameter int unsigned AccBytes   = 16384,
  parameter int unsigned OutBytes   = 8192,
  parameter int unsigned ParamBytes = 4096
) (
  input  logic [255:0] insn_i,
  output logic         illegal_o,
  output logic         oob_o,
  output logic         empty_o
);

  // True when [addr, addr + len) lies inside a scratchpad of `size` bytes.
  function automatic logic fits(input logic [63:0] size, input logic [23:0] addr, input logic [63:0] len);
    fits = (len == 64'd0) || ((64'(addr) + len) <= size);
  endfunction

  // (rows - 1) * stride + cols, or 0 when rows or cols is 0.
  function automatic logic [63:0] span2d(input logic [15:0] rows, input logic [15:0] stride,
                                         input logic [17:0] cols);
    logic [31:0] r1, prod;
    r1   = 32'(rows) - 32'd1;
    prod = r1 * 32'(stride);
    span2d = (rows == 16'd0 || cols == 18'd0) ? 64'd0 : 64'(prod) + 64'(cols);
  endfunction

  function automatic logic shift_ok(input logic [5:0] s);
    shift_ok = (s != 6'd0) && (s != 6'd63);
  endfunction

  logic [5:0] opcode;
  assign opcode = insn_i[loom_pkg::INSN_OPCODE_LSB +: loom_pkg::INSN_OPCODE_W];

  // GEMM fields.
  logic        g_acc, g_bt;
  logic [23:0] g_in, g_wgt, g_c;
  logic [15:0] g_m, g_n, g_k, g_lda, g_ldb, g_ldc;
  assign g_acc = insn_i[loom_pkg::GEMM_ACCUMULATE_LSB];
  assign g_bt  = insn_i[loom_pkg::GEMM_B_TRANS_LSB];
  assign g_in  = insn_i[loom_pkg::GEMM_IN_ADDR_LSB +: loom_pkg::GEMM_IN_ADDR_W];
  assign g_wgt = insn_i[loom_pkg::GEMM_WGT_ADDR_LSB +: loom_pkg::GEMM_WGT_ADDR_W];
  assign g_c   = insn_i[loom_pkg::GEMM_ACC_ADDR_LSB +: loom_pkg::GEMM_ACC_ADDR_W];
  assign g_m   = insn_i[loom_pkg::GEMM_M_LSB +: loom_pkg::GEMM_M_W];
  assign g_n   = insn_i[loom_pkg::GEMM_N_LSB +: loom_pkg::GEMM_N_W];
  assign g_k   = insn_i[loom_pkg::GEMM_K_LEN_LSB +: loom_pkg::GEMM_K_LEN_W];
  assign g_lda = insn_i[loom_pkg::GEMM_LDA_LSB +: loom_pkg::GEMM_LDA_W];
  assign g_ldb = insn_i[loom_pkg::GEMM_LDB_LSB +: loom_pkg::GEMM_LDB_W];
  assign g_ldc = insn_i[loom_pkg::GEMM_LDC_LSB +: loom_pkg::GEMM_LDC_W];

  // POSTOP fields.
  logic              p_res, p_rescale;
  logic [5:0]        p_res_shift;
  logic signed [7:0] p_add_lo, p_add_hi;
  assign p_rescale   = insn_i[loom_pkg::POSTOP_RESCALE_LSB];
  assign p_add_lo    = insn_i[loom_pkg::POSTOP_ADD_LO_LSB +: loom_pkg::POSTOP_ADD_LO_W];
  assign p_add_hi    = insn_i[loom_pkg::POSTOP_ADD_HI_LSB +: loom_pkg::POSTOP_ADD_HI_W];
  logic [23:0]       p_acc, p_out, p_par, p_res_addr;
  logic [15:0]       p_m, p_n;
  logic signed [7:0] p_lo, p_hi;
  assign p_res       = insn_i[loom_pkg::POSTOP_RESIDUAL_LSB];
  assign p_res_shift = insn_i[loom_pkg::POSTOP_RES_SHIFT_LSB +: loom_pkg::POSTOP_RES_SHIFT_W];
  assign p_acc       = insn_i[loom_pkg::POSTOP_ACC_ADDR_LSB +: loom_pkg::POSTOP_ACC_ADDR_W];
  assign p_out       = insn_i[loom_pkg::POSTOP_OUT_ADDR_LSB +: loom_pkg::POSTOP_OUT_ADDR_W];
  assign p_par       = insn_i[loom_pkg::POSTOP_PARAM_ADDR_LSB +: loom_pkg::POSTOP_PARAM_ADDR_W];
  assign p_res_addr  = insn_i[loom_pkg::POSTOP_RES_ADDR_LSB +: loom_pkg::POSTOP_RES_ADDR_W];
  assign p_m         = insn_i[loom_pkg::POSTOP_M_LSB +: loom_pkg::POSTOP_M_W];
  assign p_n         = insn_i[loom_pkg::POSTOP_N_LSB +: loom_pkg::POSTOP_N_W];
  assign p_lo        = insn_i[loom_pkg::POSTOP_CLIP_LO_LSB +: loom_pkg::POSTOP_CLIP_LO_W];
  assign p_hi        = insn_i[loom_pkg::POSTOP_CLIP_HI_LSB +: loom_pkg::POSTOP_CLIP_HI_W];

  // POOL fields.
  logic              o_avg;
  logic [5:0]        o_shift;
  logic [23:0]       o_in, o_out;
  logic [15:0]       o_p, o_win, o_c;
  logic signed [7:0] o_lo, o_hi;
  assign o_avg   = insn_i[loom_pkg::POOL_AVG_LSB];
  assign o_shift = insn_i[loom_pkg::POOL_SHIFT_LSB +: loom_pkg::POOL_SHIFT_W];
  assign o_in    = insn_i[loom_pkg::POOL_IN_ADDR_LSB +: loom_pkg::POOL_IN_ADDR_W];
  assign o_out   = insn_i[loom_pkg::POOL_OUT_ADDR_LSB +: loom_pkg::POOL_OUT_ADDR_W];
  assign o_p     = insn_i[loom_pkg::POOL_P_LSB +: loom_pkg::POOL_P_W];
  assign o_win   = insn_i[loom_pkg::POOL_WIN_LSB +: loom_pkg::POOL_WIN_W];
  assign o_c     = insn_i[loom_pkg::POOL_C_LSB +: loom_pkg::POOL_C_W];
  assign o_lo    = insn_i[loom_pkg::POOL_CLIP_LO_LSB +: loom_pkg::POOL_CLIP_LO_W];
  assign o_hi    = insn_i[loom_pkg::POOL_CLIP_HI_LSB +: loom_pkg::POOL_CLIP_HI_W];

  // ELTWISE fields.
  logic              e_mul, e_lut;
  logic [5:0]        e_ash, e_bsh;
  logic [23:0]       e_a, e_b, e_out, e_cnt;
  logic signed [7:0] e_lo, e_hi;
  assign e_ash = insn_i[loom_pkg::ELTWISE_A_SHIFT_LSB +: loom_pkg::ELTWISE_A_SHIFT_W];
  assign e_mul = insn_i[loom_pkg::ELTWISE_MUL_LSB];
  assign e_lut = insn_i[loom_pkg::ELTWISE_LUT_LSB];
  assign e_bsh = insn_i[loom_pkg::ELTWISE_B_SHIFT_LSB +: loom_pkg::ELTWISE_B_SHIFT_W];
  assign e_a   = insn_i[loom_pkg::ELTWISE_A_ADDR_LSB +: loom_pkg::ELTWISE_A_ADDR_W];
  assign e_b   = insn_i[loom_pkg::ELTWISE_B_ADDR_LSB +: loom_pkg::ELTWISE_B_ADDR_W];
  assign e_out = insn_i[loom_pkg::ELTWISE_OUT_ADDR_LSB +: loom_pkg::ELTWISE_OUT_ADDR_W];
  assign e_cnt = insn_i[loom_pkg::ELTWISE_COUNT_LSB +: loom_pkg::ELTWISE_COUNT_W];
  assign e_lo  = insn_i[loom_pkg::ELTWISE_CLIP_LO_LSB +: loom_pkg::ELTWISE_CLIP_LO_W];
  assign e_hi  = insn_i[loom_pkg::ELTWISE_CLIP_HI_LSB +: loom_pkg::ELTWISE_CLIP_HI_W];

  // ROWNORM fields.
  logic              r_ln;
  logic [5:0]        r_shift;
  logic [23:0]       r_in, r_out, r_par;
  logic [15:0]       r_m, r_n;
  logic signed [7:0] r_lo, r_hi;
  assign r_ln    = insn_i[loom_pkg::ROWNORM_LN_LSB];
  assign r_shift = insn_i[loom_pkg::ROWNORM_SHIFT_LSB +: loom_pkg::ROWNORM_SHIFT_W];
  assign r_in    = insn_i[loom_pkg::ROWNORM_IN_ADDR_LSB +: loom_pkg::ROWNORM_IN_ADDR_W];
  assign r_out   = insn_i[loom_pkg::ROWNORM_OUT_ADDR_LSB +: loom_pkg::ROWNORM_OUT_ADDR_W];
  assign r_par   = insn_i[loom_pkg::ROWNORM_PARAM_ADDR_LSB +: loom_pkg::ROWNORM_PARAM_ADDR_W];
  assign r_m     = insn_i[loom_pkg::ROWNORM_M_LSB +: loom_pkg::ROWNORM_M_W];
  assign r_n     = insn_i[loom_pkg::ROWNORM_N_LSB +: loom_pkg::ROWNORM_N_W];
  assign r_lo    = insn_i[loom_pkg::ROWNORM_CLIP_LO_LSB +: loom_pkg::ROWNORM_CLIP_LO_W];
  assign r_hi    = insn_i[loom_pkg::ROWNORM_CLIP_HI_LSB +: loom_pkg::ROWNORM_CLIP_HI_W];

  // DWCONV fields.
  logic [3:0]  d_kh, d_kw, d_stride;
  logic [23:0] d_in, d_wgt, d_acc, d_ldi;
  logic [15:0] d_c, d_ow, d_oh;
  assign d_kh     = insn_i[loom_pkg::DWCONV_KH_LSB +: loom_pkg::DWCONV_KH_W];
  assign d_kw     = insn_i[loom_pkg::DWCONV_KW_LSB +: loom_pkg::DWCONV_KW_W];
  assign d_stride = insn_i[loom_pkg::DWCONV_STRIDE_LSB +: loom_pkg::DWCONV_STRIDE_W];
  assign d_in     = insn_i[loom_pkg::DWCONV_IN_ADDR_LSB +: loom_pkg::DWCONV_IN_ADDR_W];
  assign d_wgt    = insn_i[loom_pkg::DWCONV_WGT_ADDR_LSB +: loom_pkg::DWCONV_WGT_ADDR_W];
  assign d_acc    = insn_i[loom_pkg::DWCONV_ACC_ADDR_LSB +: loom_pkg::DWCONV_ACC_ADDR_W];
  assign d_ldi    = insn_i[loom_pkg::DWCONV_LDI_LSB +: loom_pkg::DWCONV_LDI_W];
  assign d_c      = insn_i[loom_pkg::DWCONV_C_LSB +: loom_pkg::DWCONV_C_W];
  assign d_ow     = insn_i[loom_pkg::DWCONV_OW_LSB +: loom_pkg::DWCONV_OW_W];
  assign d_oh     = insn_i[loom_pkg::DWCONV_OH_LSB +: loom_pkg::DWCONV_OH_W];

  // DWCONV spans (used only when oh, ow and c are all nonzero): the window
  // band's rows and pixels, IN up to the last window's last byte, the taps'
  // weights and the dense int32 result.
  logic [20:0] d_rows, d_cols;
  logic [63:0] d_in_len, d_wgt_len, d_acc_len;
  logic [61:0] d_pc;
  assign d_rows    = (21'(d_oh) - 21'd1) * 21'(d_stride) + 21'(d_kh) - 21'd1;
  assign d_cols    = (21'(d_ow) - 21'd1) * 21'(d_stride) + 21'(d_kw);
  assign d_in_len  = 64'(d_rows) * 64'(d_ldi) + 64'(d_cols) * 64'(d_c);
  assign d_wgt_len = 64'(8'(d_kh) * 8'(d_kw)) * 64'(d_c);
  assign d_pc      = 62'(32'(d_oh) * 32'(d_ow)) * 62'(d_c);
  assign d_acc_len = {d_pc, 2'b00};

  // Products shared by the bounds checks.
  logic [63:0] g_a_len, g_b_len, g_c_len, p_mn, o_pc, o_pwc, r_mn;
  assign g_a_len = (g_n == 16'd0 || g_k == 16'd0) ? 64'd0 : span2d(g_m, g_lda, 18'(g_k));
  assign g_b_len = (g_m == 16'd0) ? 64'd0 :
                   g_bt ? span2d(g_n, g_ldb, 18'(g_k)) : span2d(g_k, g_ldb, 18'(g_n));
  assign g_c_len = span2d(g_m, g_ldc, {g_n, 2'b00});
  assign p_mn    = 64'(32'(p_m) * 32'(p_n));
  assign o_pc    = 64'(32'(o_p) * 32'(o_c));
  assign o_pwc   = 64'(o_pc[31:0]) * 64'(o_win);
  assign r_mn    = 64'(32'(r_m) * 32'(r_n));

  always_comb begin
    illegal_o = 1'b0;
    oob_o     = 1'b0;
    empty_o   = 1'b0;
    unique case (opcode)
      loom_pkg::OpGemm: begin
        illegal_o = (g_c[1:0] != 2'b00) || (g_ldc[1:0] != 2'b00);
        oob_o     = !fits(64'(InBytes), g_in, g_a_len) || !fits(64'(WgtBytes), g_wgt, g_b_len) ||
                    !fits(64'(AccBytes), g_c, g_c_len);
        empty_o   = (g_m == 16'd0) || (g_n == 16'd0) || (g_k == 16'd0 && g_acc);
      end
      loom_pkg::OpPostop: begin
        illegal_o = (p_acc[1:0] != 2'b00) || (p_par[1:0] != 2'b00) || (p_lo > p_hi) ||
                    (p_res && !shift_ok(p_res_shift)) ||
                    (p_rescale && (!p_res || p_add_lo > p_add_hi));
        empty_o   = (p_mn == 64'd0);
        oob_o     = !empty_o && (!fits(64'(AccBytes), p_acc, {p_mn[61:0], 2'b00}) ||
                                 !fits(64'(OutBytes), p_out, p_mn) ||
                                 !fits(64'(ParamBytes), p_par, 64'(p_n) * 64'd12 + (p_rescale ? 64'd8 : 64'd0)) ||
                                 (p_res && !fits(64'(InBytes), p_res_addr, p_mn)));
      end
      loom_pkg::OpPool: begin
        illegal_o = (o_lo > o_hi) || (o_avg && !shift_ok(o_shift));
        empty_o   = (o_p == 16'd0) || (o_win == 16'd0) || (o_c == 16'd0);
        oob_o     = !empty_o && (!fits(64'(InBytes), o_in, o_pwc) || !fits(64'(OutBytes), o_out, o_pc));
      end
      loom_pkg::OpEltwise: begin
        illegal_o = !shift_ok(e_ash) || (!e_mul && !shift_ok(e_bsh)) || (e_lo > e_hi);
        empty_o   = (e_cnt == 24'd0);
        // With lut, B is the whole 256-byte table.
        oob_o     = !empty_o && (!fits(64'(InBytes), e_a, 64'(e_cnt)) ||
                                 !fits(64'(InBytes), e_b, e_lut ? 64'd256 : 64'(e_cnt)) ||
                                 !fits(64'(OutBytes), e_out, 64'(e_cnt)));
      end
      loom_pkg::OpRownorm: begin
        illegal_o = (r_par[1:0] != 2'b00) || (r_lo > r_hi) || (!r_ln && !shift_ok(r_shift));
        empty_o   = (r_mn == 64'd0);
        // Softmax reads the whole 512-byte table, layernorm n triples.
        oob_o     = !empty_o && (!fits(64'(InBytes), r_in, r_mn) || !fits(64'(OutBytes), r_out, r_mn) ||
                                 !fits(64'(ParamBytes), r_par, r_ln ? 64'(r_n) * 64'd12 : 64'd512));
      end
      loom_pkg::OpDwconv: begin
        illegal_o = (d_kh == 4'd0) || (d_kw == 4'd0) || (d_stride == 4'd0) || (d_acc[1:0] != 2'b00);
        empty_o   = (d_oh == 16'd0) || (d_ow == 16'd0) || (d_c == 16'd0);
        oob_o     = !empty_o && (!fits(64'(InBytes), d_in, d_in_len) || !fits(64'(WgtBytes), d_wgt, d_wgt_len) ||
                                 !fits(64'(AccBytes), d_acc, d_acc_len));
      end
      // The dispatcher routes only the six compute opcodes here; anything
      // else is rejected rather than executed as something it is not.
      default: illegal_o = 1'b1;
    endcase
  end

  // Bits of the instruction that no check looks at (zero points, multipliers, flags).
  logic unused_insn;
  assign unused_insn = ^insn_i;

endmodule
