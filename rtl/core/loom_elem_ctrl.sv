// Element controller of the compute unit: POSTOP, POOL, ELTWISE and ROWNORM through one loom_postop datapath into OUT.
//
// All of them produce int8 outputs written densely from out_addr, and all of
// them fit loom_postop's element function
//   clamp(rq(acc + bias, mult, shift) + out_zp [+ rq(res - res_zp, res_mult, res_shift)], lo, hi)
// or, for a requantizing add (rounded once), its sum form
//   clamp(rqs(acc + bias, mult, res - res_zp, res_mult, shift) + out_zp, lo, hi):
//   POSTOP   acc = ACC word, (bias, mult, shift) = PARAM triple, res = IN byte; ties to even with `even`
//            (with rescale the datapath's stage A adds the residual, see loom_postop)
//   ELTWISE add (sum form): acc = A, bias = -a_zp, (a_mult, a_shift); res = B with (b_zp, b_mult);
//            b_shift is checked (loom_compute_check) but not used
//   ELTWISE mul: acc = (A - a_zp) * (B - b_zp) (a 9 x 9-bit product a lane), bias 0, (a_mult, a_shift)
//   POOL avg acc = sum(x - in_zp) over the window, bias 0, (mult, shift), ties to even (rqe)
//   POOL max acc = max(x), bias 0, mult 2, shift 1 (rq(v, 2, 1) = v exactly), out_zp 0
//   ROWNORM softmax   acc = p = floor(e * r / 2^16), bias 0, (mult, shift)
//   ROWNORM layernorm acc = t (computed beside the datapath), bias 0, mult 2, shift 1
// so one datapath serves every post-op instruction.
//
// The datapath is Lanes = SpW / 4 elements wide: one ACC read (SpW bytes,
// Lanes int32 words) a cycle, as wide as an accumulator row of the array.
// Each beat carries its OUT address and byte mask beside it (a tag FIFO as
// deep as the datapath), and the writer stores a beat's Lanes bytes in one
// OUT write. Lanes past the end of a row are masked and fed rq(0, 0, 1).
//
// POSTOP walks the m x n tile in chunks of Lanes channels, chunk after chunk
// (column-major over chunks): a chunk's PARAM triples (12 * Lanes bytes, three
// SpW-byte reads) are loaded into registers once, then its m rows stream one
// beat a cycle (ACC at acc + 4(i*n + j0), residual IN at res + i*n + j0).
// Before any output is written every chunk's shifts are scanned (the same
// three reads a chunk) and err_o is raised if one is outside 1..62; this is
// stricter than the contract requires and leaves OUT exactly as the golden
// model does. A single-chunk POSTOP keeps the scanned triples and does not
// read them again. A rescale POSTOP first reads the add's (a_mult, a_shift)
// pair at param + 12n (one read, checked like a channel shift) and holds it
// in registers for the datapath's stage A.
//
// POOL reads, for each output pixel and each SpW-channel chunk, the win
// window rows of that chunk (one read each) into per-lane max and sum
// registers, then feeds the chunk Lanes channels a beat. ELTWISE reads an
// SpW-byte chunk of A and of B (both in IN, one read port) and feeds it
// Lanes elements a beat; while a chunk is fed (four beats) the next chunk's
// A and B are read into a second pair of registers, so after the first
// chunk's three read cycles the beats run back to back. ELTWISE lut first
// loads the 256-byte table at b into the table register (256 / SpW IN reads,
// shifted in from the top, byte k in entry k), then walks A as a beat pass
// (below): Lanes lookups a beat (entry (A + 128) mod 256), fed through the
// datapath unchanged (rq(v, 2, 1) = v, no zero point) into the clamp.
//
// ROWNORM walks its m rows one after another, each in passes over IN:
//   softmax: the 512-byte exponent table is loaded once per instruction into
//     a 4096-bit register (512 / SpW PARAM reads, shifted in from the top).
//     Per row: a max pass (one SpW-byte read a cycle, a max tree), a sum pass
//     (Lanes table lookups a cycle), a restoring division r = (2^32 - 1) / S
//     (one quotient bit a cycle, 32 cycles; r = 0 when S = 0) and the output
//     pass, Lanes elements a beat: p = floor(e * r / 2^16) into the datapath.
//   layernorm: every channel's sh is scanned first exactly as POSTOP's shifts
//     (EParRd / EScanChk, same fields), so a bad one faults before any
//     output. Per row: a statistics pass (sum of d and of d^2 over SpW bytes
//     a read), V = n * S2 + eps - S1^2 on one shared row multiplier (two
//     cycles; V, 1 when 0, shifted up by the even count 2e that puts it in
//     [2^60, 2^62) as the second cycle ends), q = isqrt(V) (two bits of V,
//     one root bit a cycle, 31 cycles), Q = 2^72 / q on the same divider (43
//     cycles) and r = Q 2^(e - 24) as its last step ends, then n * r and
//     S1 * r (one cycle each, mod 2^64) so that c * r = d * (n r) - S1 r
//     exactly (|c r| < 2^57). The output pass reads each beat's Lanes triples
//     (three PARAM reads, as POSTOP's EParRd) and feeds the beat as the third
//     window arrives, the next beat's first read going out with it: three
//     cycles a beat. Each lane forms z = floor((c r + 2^31) / 2^32), z * g + b and
//     t = sat32(round_half_away((z g + b) / 2^sh)) and feeds t through the
//     datapath unchanged.
// The beat passes take a chunk's first beat straight off the IN port the
// cycle it arrives (xsrc) and hold the rest in xb; the next chunk is read
// with the last beat of the one before, so the passes run a beat a cycle.
// One 17 x 64 multiplier a lane serves both softmax (e * r) and layernorm
// (d * n r); layernorm adds a 26 x 32 one (z * g) and a 64-bit rounding
// shifter a lane. The lane arithmetic is combinational into the datapath's
// first register (a long path; a pipeline stage there is future work).
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

  typedef enum logic [4:0] {
    EIdle,
    EAddRd,    // POSTOP rescale: read the add's (a_mult, a_shift) pair
    EAddChk,   // POSTOP rescale: capture and check it
    EParRd,    // POSTOP: read one chunk's PARAM triples (three SpW-byte reads)
    EScanChk,  // POSTOP: check the chunk's shifts
    EPost,     // POSTOP: feed the chunk's rows
    EPoolRd,   // POOL: reduce the window rows of one channel chunk
    EPoolFeed, // POOL: feed the chunk's lanes
    EEltA,     // ELTWISE: read the A chunk
    EEltB,     // ELTWISE: capture A, read the B chunk
    EEltCap,   // ELTWISE: capture B
    EEltFeed,  // ELTWISE: feed the chunk, reading the next one
    ELTab,     // ELTWISE lut: load the 256-byte table into the table register
    ELutOut,   // ELTWISE lut: feed A's lookups, Lanes a beat
    RTab,      // ROWNORM softmax: load the 256-entry exponent table
    RScan,     // ROWNORM: a row's max (softmax) or sum and sum of squares (layernorm), SpW bytes a read
    RSum,      // ROWNORM softmax: the row's sum of table entries, Lanes lookups a cycle
    RVar1,     // ROWNORM layernorm: n * S2 + eps
    RVar2,     // ROWNORM layernorm: V = n * S2 + eps - S1^2
    RSqrt,     // ROWNORM layernorm: q = isqrt(V 4^e), one result bit a cycle
    RDiv,      // ROWNORM: r = floor(N / D), one quotient bit a cycle
    RNr1,      // ROWNORM layernorm: n * r
    RNr2,      // ROWNORM layernorm: S1 * r
    ROut,      // ROWNORM softmax: feed the row, Lanes elements a beat
    ROutLn,    // ROWNORM layernorm: read a beat's triples (three PARAM reads), feed it
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
  logic is_rn;
  assign is_rn   = (opcode == loom_pkg::OpRownorm);

  // POSTOP.
  logic        p_res, p_rescale;
  logic signed [7:0] p_a_zp, p_add_zp, p_add_lo, p_add_hi;
  assign p_rescale = insn_i[loom_pkg::POSTOP_RESCALE_LSB];
  assign p_a_zp    = insn_i[loom_pkg::POSTOP_A_ZP_LSB +: loom_pkg::POSTOP_A_ZP_W];
  assign p_add_zp  = insn_i[loom_pkg::POSTOP_ADD_ZP_LSB +: loom_pkg::POSTOP_ADD_ZP_W];
  assign p_add_lo  = insn_i[loom_pkg::POSTOP_ADD_LO_LSB +: loom_pkg::POSTOP_ADD_LO_W];
  assign p_add_hi  = insn_i[loom_pkg::POSTOP_ADD_HI_LSB +: loom_pkg::POSTOP_ADD_HI_W];
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
  logic               e_mul, e_lut;
  logic [5:0]         e_ash;  // b_shift is checked (loom_compute_check), not used
  logic [31:0]        e_a, e_b, e_out, e_cnt;
  logic signed [7:0]  e_azp, e_bzp;
  logic signed [31:0] e_amult, e_bmult;
  assign e_mul   = insn_i[loom_pkg::ELTWISE_MUL_LSB];
  assign e_lut   = insn_i[loom_pkg::ELTWISE_LUT_LSB];
  assign e_ash   = insn_i[loom_pkg::ELTWISE_A_SHIFT_LSB +: loom_pkg::ELTWISE_A_SHIFT_W];
  assign e_a     = 32'(insn_i[loom_pkg::ELTWISE_A_ADDR_LSB +: loom_pkg::ELTWISE_A_ADDR_W]);
  assign e_b     = 32'(insn_i[loom_pkg::ELTWISE_B_ADDR_LSB +: loom_pkg::ELTWISE_B_ADDR_W]);
  assign e_out   = 32'(insn_i[loom_pkg::ELTWISE_OUT_ADDR_LSB +: loom_pkg::ELTWISE_OUT_ADDR_W]);
  assign e_cnt   = 32'(insn_i[loom_pkg::ELTWISE_COUNT_LSB +: loom_pkg::ELTWISE_COUNT_W]);
  assign e_azp   = insn_i[loom_pkg::ELTWISE_A_ZP_LSB +: loom_pkg::ELTWISE_A_ZP_W];
  assign e_bzp   = insn_i[loom_pkg::ELTWISE_B_ZP_LSB +: loom_pkg::ELTWISE_B_ZP_W];
  assign e_amult = insn_i[loom_pkg::ELTWISE_A_MULT_LSB +: loom_pkg::ELTWISE_A_MULT_W];
  assign e_bmult = insn_i[loom_pkg::ELTWISE_B_MULT_LSB +: loom_pkg::ELTWISE_B_MULT_W];

  // ROWNORM (out_addr, param_addr, m and n sit where POSTOP's do: p_out, p_par, p_m, p_n).
  logic               r_ln;
  logic [5:0]         r_shift;
  logic [31:0]        r_in, r_eps;
  logic signed [7:0]  r_in_zp;
  logic signed [31:0] r_mult;
  assign r_ln    = insn_i[loom_pkg::ROWNORM_LN_LSB];
  assign r_shift = insn_i[loom_pkg::ROWNORM_SHIFT_LSB +: loom_pkg::ROWNORM_SHIFT_W];
  assign r_in    = 32'(insn_i[loom_pkg::ROWNORM_IN_ADDR_LSB +: loom_pkg::ROWNORM_IN_ADDR_W]);
  assign r_eps   = insn_i[loom_pkg::ROWNORM_EPS_LSB +: loom_pkg::ROWNORM_EPS_W];
  assign r_in_zp = insn_i[loom_pkg::ROWNORM_IN_ZP_LSB +: loom_pkg::ROWNORM_IN_ZP_W];
  assign r_mult  = insn_i[loom_pkg::ROWNORM_MULT_LSB +: loom_pkg::ROWNORM_MULT_W];

  // ---------------------------------------------------------------------------
  // Datapath configuration per opcode (stable for the whole instruction).
  // ---------------------------------------------------------------------------
  logic              cfg_res, cfg_sum, cfg_rescale, cfg_even;
  logic signed [7:0] cfg_out_zp, cfg_lo, cfg_hi, cfg_res_zp;
  logic signed [31:0] cfg_res_mult;
  logic [5:0]        cfg_res_shift;
  always_comb begin
    cfg_res       = 1'b0;
    cfg_sum       = 1'b0;
    cfg_rescale   = 1'b0;
    cfg_even      = 1'b0;
    cfg_out_zp    = '0;
    cfg_lo        = insn_i[loom_pkg::POSTOP_CLIP_LO_LSB +: 8];
    cfg_hi        = insn_i[loom_pkg::POSTOP_CLIP_HI_LSB +: 8];
    cfg_res_zp    = '0;
    cfg_res_mult  = '0;
    cfg_res_shift = 6'd1;
    if (is_post) begin
      cfg_res       = p_res;
      cfg_rescale   = p_rescale;
      cfg_even      = insn_i[loom_pkg::POSTOP_EVEN_LSB];
      cfg_out_zp    = insn_i[loom_pkg::POSTOP_OUT_ZP_LSB +: loom_pkg::POSTOP_OUT_ZP_W];
      cfg_res_zp    = insn_i[loom_pkg::POSTOP_RES_ZP_LSB +: loom_pkg::POSTOP_RES_ZP_W];
      cfg_res_mult  = insn_i[loom_pkg::POSTOP_RES_MULT_LSB +: loom_pkg::POSTOP_RES_MULT_W];
      cfg_res_shift = insn_i[loom_pkg::POSTOP_RES_SHIFT_LSB +: loom_pkg::POSTOP_RES_SHIFT_W];
    end else if (is_pool) begin
      cfg_even   = o_avg;
      cfg_out_zp = o_avg ? insn_i[loom_pkg::POOL_OUT_ZP_LSB +: loom_pkg::POOL_OUT_ZP_W] : 8'sd0;
      cfg_lo     = insn_i[loom_pkg::POOL_CLIP_LO_LSB +: loom_pkg::POOL_CLIP_LO_W];
      cfg_hi     = insn_i[loom_pkg::POOL_CLIP_HI_LSB +: loom_pkg::POOL_CLIP_HI_W];
    end else if (is_elt) begin
      // The add is one requantizing add at a_shift; b_shift is not used.
      cfg_res       = !e_mul && !e_lut;
      cfg_sum       = !e_mul && !e_lut;
      cfg_out_zp    = e_lut ? 8'sd0 : insn_i[loom_pkg::ELTWISE_OUT_ZP_LSB +: loom_pkg::ELTWISE_OUT_ZP_W];
      cfg_lo        = insn_i[loom_pkg::ELTWISE_CLIP_LO_LSB +: loom_pkg::ELTWISE_CLIP_LO_W];
      cfg_hi        = insn_i[loom_pkg::ELTWISE_CLIP_HI_LSB +: loom_pkg::ELTWISE_CLIP_HI_W];
      cfg_res_zp    = e_bzp;
      cfg_res_mult  = e_bmult;
    end else if (is_rn) begin
      cfg_out_zp = insn_i[loom_pkg::ROWNORM_OUT_ZP_LSB +: loom_pkg::ROWNORM_OUT_ZP_W];
      cfg_lo     = insn_i[loom_pkg::ROWNORM_CLIP_LO_LSB +: loom_pkg::ROWNORM_CLIP_LO_W];
      cfg_hi     = insn_i[loom_pkg::ROWNORM_CLIP_HI_LSB +: loom_pkg::ROWNORM_CLIP_HI_W];
    end
  end

  // ---------------------------------------------------------------------------
  // State.
  // ---------------------------------------------------------------------------
  localparam int unsigned Lanes = SpW / 4;
  localparam int unsigned TagW  = OutAw + Lanes;
  localparam int unsigned ParW  = 3 * SpW * 8;    // one chunk's PARAM triples

  elem_e        es_d, es_q;
  logic         pend_d, pend_q;             // reads for the cursor beat arrive this cycle
  logic         scan_d, scan_q;             // POSTOP: PARAM reads feed the shift scan
  logic [1:0]   pr_d, pr_q, pidx_d, pidx_q; // POSTOP: PARAM windows requested / arriving
  logic [ParW-1:0] preg_d, preg_q;          // POSTOP: the chunk's (bias, mult, shift) triples
  logic [16:0]  ci_d, ci_q, cj_d, cj_q;     // cursor (POSTOP: row, chunk base; POOL: pixel, chunk base)
  logic [31:0]  c_acc_d, c_acc_q, c_par_d, c_par_q, c_res_d, c_res_q, c_out_d, c_out_q;
  logic [31:0]  win_base_d, win_base_q, row_ptr_d, row_ptr_q;
  logic [16:0]  w_d, w_q;                   // POOL: window rows read so far
  logic         w_first_d, w_first_q;       // POOL: the arriving row is the window's first
  logic [16:0]  lane_d, lane_q, lanes_d, lanes_q;
  logic [SpW*8-1:0]  lmax_d, lmax_q, ea_d, ea_q, eb_d, eb_q;
  logic [SpW*8-1:0]  na_d, na_q, nb_d, nb_q;   // ELTWISE: the next chunk's A and B
  logic [1:0]        rp_d, rp_q;               // ELTWISE: next chunk reads (0 none, 1 A sent, 2 B sent, 3 both held)
  logic [SpW*32-1:0] lsum_d, lsum_q;
  logic [31:0]  e_i_d, e_i_q;               // ELTWISE chunk base
  logic [31:0]  fed_d, fed_q, written_d, written_q;
  logic signed [31:0] amult_d, amult_q, ashift_d, ashift_q;  // POSTOP rescale: the add's pair

  // Datapath interface: one beat of Lanes elements.
  logic                  dp_in_valid, dp_in_ready, dp_fire;
  logic [Lanes*32-1:0]   dp_acc, dp_bias, dp_mult;
  logic [Lanes*6-1:0]    dp_shift;
  logic [Lanes*8-1:0]    dp_res;
  logic                  dp_out_valid, dp_out_ready, dp_busy;
  logic [Lanes*8-1:0]    dp_out;
  logic [16:0]           dp_lanes;          // live lanes of the fed beat (1..Lanes)
  logic [OutAw-1:0]      dp_addr;           // OUT address of the fed beat

  assign dp_fire = dp_in_valid && dp_in_ready;

  // POSTOP: live channels of the chunk at cj.
  logic [16:0] post_ln;
  assign post_ln = (p_n - cj_q < 17'(Lanes)) ? p_n - cj_q : 17'(Lanes);
  // POOL / ELTWISE: live lanes of the beat at lane within a chunk of lanes.
  logic [16:0] feed_ln;
  assign feed_ln = (lanes_q - lane_q < 17'(Lanes)) ? lanes_q - lane_q : 17'(Lanes);

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

  // POSTOP: shift check of the chunk's live channels (bit l: channel j0 + l is bad).
  logic [Lanes-1:0] bad_shift;
  for (genvar l = 0; l < Lanes; l++) begin : g_scan_lane
    logic signed [31:0] sh;
    assign sh = preg_q[96*l + 64 +: 32];
    assign bad_shift[l] = (17'(l) < post_ln) && (sh < 32'sd1 || sh > 32'sd62);
  end

  // ---------------------------------------------------------------------------
  // ROWNORM state and arithmetic.
  // ---------------------------------------------------------------------------
  localparam int unsigned TabW = 4096;  // 256 16-bit table entries
  localparam int unsigned TabReads = TabW / (SpW * 8);
  localparam int unsigned LutReads = 256 / SpW;  // ELTWISE lut: SpW one-byte entries a read

  logic [TabW-1:0]    tab_d, tab_q;                 // table, entry d in bits [16d +: 16] (lut: a byte)
  logic [8:0]         tk_d, tk_q;                   // table windows requested
  logic [31:0]        rin_d, rin_q;                 // IN address of the current row
  logic [16:0]        roff_d, roff_q, rcap_d, rcap_q;  // scan: next offset to read, offset arriving
  logic [16:0]        bj_d, bj_q;                   // beat passes: the beat's first element
  logic [1:0]         bic_d, bic_q;                 // beat passes: beat within its SpW-byte chunk
  logic [SpW*8-1:0]   xb_d, xb_q;                   // the chunk being walked, beat at the bottom
  logic               xpend_d, xpend_q;             // an IN chunk read arrives this cycle
  logic signed [7:0]  mx_d, mx_q;                   // softmax: row max
  logic [31:0]        ssum_d, ssum_q;               // softmax: row sum of table entries
  logic signed [24:0] s1_d, s1_q;                   // layernorm: sum of d
  logic [31:0]        s2_d, s2_q;                   // layernorm: sum of d^2
  logic [63:0]        v_d, v_q;                     // layernorm: V 4^e, shifted up two bits an isqrt step
  logic [4:0]         ne_d, ne_q;                   // layernorm: e, V's normalizing shift in bit pairs
  logic [32:0]        sq_rem_d, sq_rem_q;
  logic [30:0]        sq_root_d, sq_root_q;
  logic [48:0]        dv_num_d, dv_num_q, dv_quo_d, dv_quo_q;
  logic [31:0]        dv_den_d, dv_den_q, dv_rem_d, dv_rem_q;
  logic               dv_zero_d, dv_zero_q;
  logic [5:0]         it_d, it_q;                   // isqrt / divider step
  logic [63:0]        nr_d, nr_q, k_d, k_q;         // layernorm: n * r and S1 * r (mod 2^64)

  logic [31:0] rn_r;      // softmax reciprocal
  assign rn_r = dv_zero_q ? 32'd0 : dv_quo_q[31:0];

  // Live elements of the beat at bj and of the scanned chunk at rcap.
  logic [16:0] rbl, rcl;
  assign rbl = (p_n - bj_q < 17'(Lanes)) ? p_n - bj_q : 17'(Lanes);
  assign rcl = (p_n - rcap_q < 17'(SpW)) ? p_n - rcap_q : 17'(SpW);

  // The chunk a beat pass reads from: straight off the IN port the cycle it arrives.
  logic [SpW*8-1:0] xsrc;
  assign xsrc = xpend_q ? in_rd_data_i : xb_q;

  // ELTWISE lut: an arriving table window as SpW entries, and the live lanes of the beat at e_i.
  logic [SpW*16-1:0] lut_win;
  for (genvar l = 0; l < SpW; l++) begin : g_lut_entry
    assign lut_win[16*l +: 16] = {8'd0, in_rd_data_i[8*l +: 8]};
  end
  logic [16:0] lut_ln;
  assign lut_ln = (e_cnt - e_i_q < 32'(Lanes)) ? 17'(e_cnt - e_i_q) : 17'(Lanes);

  // Scan of an arriving chunk: max, sum of d and sum of d^2 over its live bytes.
  logic [SpW*8-1:0]  sc_x;    // live bytes, -128 elsewhere
  logic [SpW*9-1:0]  sc_d;    // live d = x - in_zp, 0 elsewhere
  logic [SpW*17-1:0] sc_d2;   // live d^2, 0 elsewhere
  logic [SpW-1:0]    dd_unused;
  for (genvar l = 0; l < SpW; l++) begin : g_scan_byte
    logic              live;
    logic signed [8:0] d;
    logic [17:0]       dd;
    assign live = 17'(l) < rcl;
    assign d    = 9'($signed(in_rd_data_i[8*l +: 8])) - 9'(r_in_zp);
    assign dd   = 18'(18'(d) * 18'(d));
    assign sc_x[8*l +: 8]    = live ? in_rd_data_i[8*l +: 8] : 8'h80;
    assign sc_d[9*l +: 9]    = live ? d : 9'sd0;
    assign sc_d2[17*l +: 17] = live ? dd[16:0] : 17'd0;
    assign dd_unused[l]      = dd[17];  // d^2 <= 255^2 < 2^17
  end
  logic signed [7:0]  cmax;
  logic signed [24:0] csum;
  logic [31:0]        csq;
  always_comb begin
    cmax = -8'sd128;
    csum = '0;
    csq  = '0;
    for (int unsigned l = 0; l < SpW; l++) begin
      if ($signed(sc_x[8*l +: 8]) > cmax) cmax = sc_x[8*l +: 8];
      csum = csum + 25'($signed(sc_d[9*l +: 9]));
      csq  = csq + 32'(sc_d2[17*l +: 17]);
    end
  end

  // Per-row multiplier, shared by n * S2, S1^2, n * r and S1 * r (low 64 bits).
  logic signed [25:0] rm_a;
  logic signed [49:0] rm_b;
  logic        [63:0] rm_p;
  always_comb begin
    rm_a = 26'(s1_q);
    rm_b = 50'(s1_q);
    if (es_q == RVar1 || es_q == RNr1) rm_a = 26'(p_n);
    if (es_q == RVar1) rm_b = 50'(s2_q);
    if (es_q == RNr1 || es_q == RNr2) rm_b = 50'(dv_quo_q);
  end
  assign rm_p = 64'(rm_a) * 64'(rm_b);

  // Restoring divider and isqrt steps.
  logic [32:0] dv_sh;
  logic        dv_ge;
  assign dv_sh = {dv_rem_q, dv_num_q[48]};
  assign dv_ge = dv_sh >= {1'b0, dv_den_q};
  logic [34:0] sq_sh, sq_trial;
  logic        sq_ge;
  assign sq_sh    = {sq_rem_q, v_q[61:60]};
  assign sq_trial = 35'({sq_root_q, 2'b01});
  assign sq_ge    = sq_sh >= sq_trial;
  logic [30:0] sq_root_nx;
  assign sq_root_nx = {sq_root_q[29:0], sq_ge};

  // Layernorm: V = n * S2 + eps - S1^2 (below 2^49), 1 when 0, and the even
  // shift 2e that puts it in [2^60, 2^62): e = (61 - its top bit) / 2.
  logic [63:0] vn_raw, vn_one;
  logic [5:0]  vn_top;
  logic [4:0]  vn_e;
  assign vn_raw = v_q - rm_p;
  assign vn_one = (vn_raw == '0) ? 64'd1 : vn_raw;
  always_comb begin
    vn_top = '0;
    for (int unsigned b = 0; b < 62; b++) if (vn_one[b]) vn_top = 6'(b);
  end
  assign vn_e = 5'((6'd61 - vn_top) >> 1);
  // The divider's last step: r = Q 2^(e - 24), floored when e < 24.
  logic [48:0] dv_quo_nx, ln_r;
  assign dv_quo_nx = {dv_quo_q[47:0], dv_ge};
  assign ln_r      = (ne_q >= 5'd24) ? dv_quo_nx << (ne_q - 5'd24) : dv_quo_nx >> (5'd24 - ne_q);
  logic unused_vn;
  assign unused_vn = ^vn_one[63:62];

  // Softmax sum pass: the beat's table entries summed over its live lanes.
  logic [Lanes*16-1:0] lane_e;
  logic [31:0]         esum;
  always_comb begin
    esum = '0;
    for (int unsigned l = 0; l < Lanes; l++) begin
      if (17'(l) < rbl) esum = esum + 32'(lane_e[16*l +: 16]);
    end
  end

  // Output lanes. Softmax: p = floor(e * r / 2^16). Layernorm: c * r = d * (n r) - S1 r
  // (exact mod 2^64, |c r| < 2^57), z = floor((c r + 2^31) / 2^32), t = sat32(round((z g + b) / 2^sh)).
  // One 17 x 64 multiplier a lane serves both.
  logic [Lanes*32-1:0] rn_acc;
  logic [ParW-1:0]     ptrip;
  assign ptrip = (pend_q && es_q == ROutLn && pr_q == 2'd3) ? {param_rd_data_i, preg_q[2*SpW*8-1:0]} : preg_q;
  for (genvar l = 0; l < Lanes; l++) begin : g_rn_lane
    logic [7:0]         x, idx;
    logic signed [8:0]  d;
    logic signed [16:0] la;
    logic signed [63:0] lb, lp, cr, crr, zg, a, t64;
    logic signed [25:0] z;
    logic signed [31:0] b, g, t;
    logic [5:0]         sh;
    assign x   = xsrc[8*l +: 8];
    assign idx = is_elt ? {~x[7], x[6:0]} : 8'(mx_q) - x;
    assign d   = 9'($signed(x)) - 9'(r_in_zp);
    assign lane_e[16*l +: 16] = tab_q[16*idx +: 16];
    assign la  = r_ln ? 17'(d) : $signed({1'b0, lane_e[16*l +: 16]});
    assign lb  = r_ln ? $signed(nr_q) : $signed(64'(rn_r));
    assign lp  = 64'(la) * lb;
    assign cr  = lp - $signed(k_q);
    assign crr = cr + 64'sd2147483648;  // rounds z half up
    assign z   = crr[57:32];
    assign b   = ptrip[96*l +: 32];
    assign g   = ptrip[96*l + 32 +: 32];
    assign sh  = ptrip[96*l + 64 +: 6];
    assign zg  = 64'(z) * 64'(g);
    assign a   = zg + 64'(b);
    assign t64 = (a + (64'sd1 <<< (sh - 6'd1)) - (a < 0 ? 64'sd1 : 64'sd0)) >>> sh;
    assign t   = (t64 > 64'sd2147483647) ? 32'sh7FFFFFFF : (t64 < -64'sd2147483648) ? 32'sh80000000 : t64[31:0];
    assign rn_acc[32*l +: 32] = r_ln ? t : 32'(lp[47:16]);

    logic unused_rn;
    assign unused_rn = ^{crr[63:58], crr[31:0], ptrip[96*l + 70 +: 26]};
  end

  // Beat operands per opcode; lanes at or past dp_lanes compute rq(0, 0, 1).
  for (genvar l = 0; l < Lanes; l++) begin : g_feed_lane
    logic               live;
    logic signed [31:0] acc, bias, mult;
    logic        [5:0]  shift;
    logic signed [8:0]  da, db;
    logic signed [17:0] prod;
    assign live = 17'(l) < dp_lanes;
    // ELTWISE mul: |(A - a_zp) (B - b_zp)| <= 255 * 256, exact in 18 bits.
    assign da   = 9'($signed(ea_q[8*l +: 8])) - 9'(e_azp);
    assign db   = 9'($signed(eb_q[8*l +: 8])) - 9'(e_bzp);
    assign prod = 18'(da) * 18'(db);
    always_comb begin
      acc   = '0;
      bias  = '0;
      mult  = '0;
      shift = 6'd1;
      if (es_q == EPost) begin
        acc   = acc_rd_data_i[32*l +: 32];
        bias  = preg_q[96*l +: 32];
        mult  = preg_q[96*l + 32 +: 32];
        shift = preg_q[96*l + 64 +: 6];
      end else if (es_q == EPoolFeed) begin
        acc   = o_avg ? $signed(lsum_q[32*l +: 32]) : 32'($signed(lmax_q[8*l +: 8]));
        mult  = o_avg ? o_mult : 32'sd2;
        shift = o_avg ? o_shift : 6'd1;
      end else if (es_q == ELutOut) begin
        acc   = 32'($signed(lane_e[16*l +: 8]));
        mult  = 32'sd2;
        shift = 6'd1;
      end else if (es_q == ROut) begin
        acc   = rn_acc[32*l +: 32];
        mult  = r_mult;
        shift = r_shift;
      end else if (es_q == ROutLn) begin
        acc   = rn_acc[32*l +: 32];
        mult  = 32'sd2;
        shift = 6'd1;
      end else if (es_q == EEltFeed) begin
        acc   = e_mul ? 32'(prod) : 32'($signed(ea_q[8*l +: 8]));
        bias  = e_mul ? 32'sd0 : 32'sd0 - 32'(e_azp);
        mult  = e_amult;
        shift = e_ash;
      end
      if (!live) begin
        acc   = '0;
        bias  = '0;
        mult  = '0;
        shift = 6'd1;
      end
    end
    assign dp_acc[32*l +: 32]  = acc;
    assign dp_bias[32*l +: 32] = bias;
    assign dp_mult[32*l +: 32] = mult;
    assign dp_shift[6*l +: 6]  = shift;
    assign dp_res[8*l +: 8]    = (es_q == EEltFeed) ? eb_q[8*l +: 8] : in_rd_data_i[8*l +: 8];
  end

  logic x_consume;  // ROWNORM: the beat at the bottom of the chunk is used up this cycle
  logic [31:0] n32, n4;
  assign n32 = 32'(p_n);
  assign n4  = n32 << 2;
  // POSTOP rescale: PARAM address of the add's pair, after the n triples.
  logic [31:0] p_apar;
  assign p_apar = p_par + (n32 << 3) + n4;
  // POSTOP: the next chunk's first channel.
  logic [16:0] cj_nx;
  logic [31:0] cj_nx32;
  assign cj_nx   = cj_q + 17'(Lanes);
  assign cj_nx32 = 32'(cj_nx);

  always_comb begin
    es_d       = es_q;
    pend_d     = 1'b0;
    scan_d     = scan_q;
    pr_d       = pr_q;
    pidx_d     = pidx_q;
    preg_d     = preg_q;
    ci_d       = ci_q;
    cj_d       = cj_q;
    c_acc_d    = c_acc_q;
    c_par_d    = c_par_q;
    c_res_d    = c_res_q;
    c_out_d    = c_out_q;
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
    na_d       = na_q;
    nb_d       = nb_q;
    rp_d       = rp_q;
    e_i_d      = e_i_q;
    amult_d    = amult_q;
    ashift_d   = ashift_q;
    tab_d      = tab_q;
    tk_d       = tk_q;
    rin_d      = rin_q;
    roff_d     = roff_q;
    rcap_d     = rcap_q;
    bj_d       = bj_q;
    bic_d      = bic_q;
    xpend_d    = 1'b0;
    mx_d       = mx_q;
    ssum_d     = ssum_q;
    s1_d       = s1_q;
    s2_d       = s2_q;
    v_d        = v_q;
    sq_rem_d   = sq_rem_q;
    sq_root_d  = sq_root_q;
    ne_d       = ne_q;
    dv_num_d   = dv_num_q;
    dv_quo_d   = dv_quo_q;
    dv_den_d   = dv_den_q;
    dv_rem_d   = dv_rem_q;
    dv_zero_d  = dv_zero_q;
    it_d       = it_q;
    nr_d       = nr_q;
    k_d        = k_q;
    x_consume  = 1'b0;
    done_o     = 1'b0;
    err_o      = 1'b0;

    in_rd_req_o     = 1'b0;
    in_rd_addr_o    = InAw'(c_res_q);
    acc_rd_req_o    = 1'b0;
    acc_rd_addr_o   = AccAw'(c_acc_q);
    param_rd_req_o  = 1'b0;
    param_rd_addr_o = ParamAw'(c_par_q + 32'(pr_q) * 32'(SpW));

    dp_in_valid = 1'b0;
    dp_lanes    = post_ln;
    dp_addr     = OutAw'(c_out_q);

    unique case (es_q)
      EIdle: begin
        if (start_i) begin
          ci_d    = '0;
          cj_d    = '0;
          c_acc_d = p_acc;
          c_par_d = p_par;
          c_res_d = p_raddr;
          pr_d    = '0;
          scan_d  = 1'b1;
          rin_d  = r_in;
          roff_d = '0;
          tk_d   = '0;
          if (is_post) begin
            c_out_d = p_out;
            es_d    = p_rescale ? EAddRd : EParRd;
          end else if (is_rn) begin
            // Layernorm scans every channel's shift first (POSTOP's scan).
            c_out_d = p_out;
            es_d    = r_ln ? EParRd : RTab;
          end else if (is_pool) begin
            c_out_d    = o_out;
            win_base_d = o_in;
            row_ptr_d  = o_in;
            w_d        = '0;
            es_d       = EPoolRd;
          end else begin
            c_out_d = e_out;
            e_i_d   = '0;
            bic_d   = '0;
            es_d    = e_lut ? ELTab : EEltA;
          end
        end
      end

      EAddRd: begin
        param_rd_req_o  = 1'b1;
        param_rd_addr_o = ParamAw'(p_apar);
        es_d            = EAddChk;
      end

      EAddChk: begin
        amult_d  = param_rd_data_i[31:0];
        ashift_d = param_rd_data_i[63:32];
        if ($signed(param_rd_data_i[63:32]) < 32'sd1 || $signed(param_rd_data_i[63:32]) > 32'sd62) begin
          err_o = 1'b1;
          es_d  = EIdle;
        end else begin
          es_d = EParRd;
        end
      end

      // Three SpW-byte reads from c_par; window r lands in preg bytes [r*SpW, (r+1)*SpW).
      // After a scan the chunk is checked; otherwise its first row is read
      // while the last window arrives.
      EParRd: begin
        if (pr_q != 2'd3) begin
          param_rd_req_o = 1'b1;
          pend_d         = 1'b1;
          pidx_d         = pr_q;
          pr_d           = pr_q + 2'd1;
        end
        if (pend_q) begin
          preg_d[pidx_q*(SpW*8) +: SpW*8] = param_rd_data_i;
          if (pidx_q == 2'd2) begin
            if (scan_q) begin
              es_d = EScanChk;
            end else begin
              es_d         = EPost;
              acc_rd_req_o = 1'b1;
              pend_d       = acc_rd_gnt_i;
            end
          end
        end
      end

      EScanChk: begin
        if (bad_shift != '0) begin
          err_o = 1'b1;
          es_d  = EIdle;
        end else if (cj_q + 17'(Lanes) < p_n) begin
          cj_d    = cj_q + 17'(Lanes);
          c_par_d = c_par_q + 32'(12 * Lanes);
          pr_d    = '0;
          es_d    = EParRd;
        end else if (is_rn) begin
          scan_d = 1'b0;
          es_d   = RScan;
        end else begin
          scan_d = 1'b0;
          if (cj_q == '0) begin
            // One chunk: its triples are already loaded.
            es_d         = EPost;
            acc_rd_req_o = 1'b1;
            pend_d       = acc_rd_gnt_i;
          end else begin
            cj_d    = '0;
            c_par_d = p_par;
            pr_d    = '0;
            es_d    = EParRd;
          end
        end
      end

      EPost: begin
        dp_in_valid = pend_q;
        if (dp_fire) begin
          if (ci_q + 17'd1 < p_m) begin
            // Read the next row now so it arrives back to back.
            ci_d    = ci_q + 17'd1;
            c_acc_d = c_acc_q + n4;
            c_res_d = c_res_q + n32;
            c_out_d = c_out_q + n32;
            acc_rd_req_o = 1'b1;
            pend_d       = acc_rd_gnt_i;
          end else if (cj_q + 17'(Lanes) < p_n) begin
            ci_d    = '0;
            cj_d    = cj_q + 17'(Lanes);
            c_acc_d = p_acc + (cj_nx32 << 2);
            c_res_d = p_raddr + cj_nx32;
            c_out_d = p_out + cj_nx32;
            c_par_d = c_par_q + 32'(12 * Lanes);
            pr_d    = '0;
            es_d    = EParRd;
          end else begin
            es_d = EWait;
          end
        end else begin
          acc_rd_req_o = 1'b1;
          pend_d       = acc_rd_gnt_i;
        end
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
        dp_lanes    = feed_ln;
        if (dp_fire) begin
          lmax_d  = lmax_q >> (8 * Lanes);
          lsum_d  = lsum_q >> (32 * Lanes);
          lane_d  = lane_q + 17'(Lanes);
          c_out_d = c_out_q + 32'(feed_ln);
          if (lane_q + 17'(Lanes) >= lanes_q) begin
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

      // ELTWISE lut: 256 / SpW table reads, each window shifting in from the
      // top; the last one's arrival sends A's first chunk read.
      ELTab: begin
        in_rd_addr_o = InAw'(e_b + 32'(tk_q) * 32'(SpW));
        if (tk_q < 9'(LutReads)) begin
          in_rd_req_o = 1'b1;
          pend_d      = 1'b1;
          tk_d        = tk_q + 9'd1;
        end
        if (pend_q) begin
          tab_d = {lut_win, tab_q[TabW-1:SpW*16]};
          if (tk_q == 9'(LutReads)) begin
            in_rd_req_o  = 1'b1;
            in_rd_addr_o = InAw'(e_a);
            xpend_d      = 1'b1;
            es_d         = ELutOut;
          end
        end
      end

      // A beat pass over A: the next chunk is read with the last beat of the one before.
      ELutOut: begin
        dp_in_valid = 1'b1;
        dp_lanes    = lut_ln;
        if (dp_fire) begin
          x_consume = 1'b1;
          c_out_d   = c_out_q + 32'(lut_ln);
          e_i_d     = e_i_q + 32'(Lanes);
          bic_d     = bic_q + 2'd1;
          if (e_i_q + 32'(Lanes) >= e_cnt) begin
            es_d = EWait;
          end else if (bic_q == 2'd3) begin
            in_rd_req_o  = 1'b1;
            in_rd_addr_o = InAw'(e_a + e_i_q + 32'(Lanes));
            xpend_d      = 1'b1;
          end
        end
      end

      EEltCap: begin
        eb_d    = in_rd_data_i;
        lane_d  = '0;
        lanes_d = (e_cnt - e_i_q < 32'(SpW)) ? 17'(e_cnt - e_i_q) : 17'(SpW);
        rp_d    = '0;
        es_d    = EEltFeed;
      end

      // The next chunk's A and B are read in the chunk's first three cycles
      // (each arrives the cycle after its request) and taken over with its
      // last beat: a chunk that is not the last has four beats.
      EEltFeed: begin
        if (e_i_q + 32'(SpW) < e_cnt) begin
          in_rd_req_o  = (rp_q == 2'd0) || (rp_q == 2'd1);
          in_rd_addr_o = InAw'((rp_q == 2'd0 ? e_a : e_b) + e_i_q + 32'(SpW));
          if (rp_q == 2'd1) na_d = in_rd_data_i;
          if (rp_q == 2'd2) nb_d = in_rd_data_i;
          if (rp_q != 2'd3) rp_d = rp_q + 2'd1;
        end
        dp_in_valid = 1'b1;
        dp_lanes    = feed_ln;
        if (dp_in_ready) begin  // dp_in_valid is 1: the beat is fed
          ea_d    = ea_q >> (8 * Lanes);
          eb_d    = eb_q >> (8 * Lanes);
          lane_d  = lane_q + 17'(Lanes);
          c_out_d = c_out_q + 32'(feed_ln);
          if (lane_q + 17'(Lanes) >= lanes_q) begin
            e_i_d = e_i_q + 32'(SpW);
            if (e_i_q + 32'(SpW) < e_cnt) begin
              ea_d    = na_q;
              eb_d    = nb_q;
              lane_d  = '0;
              lanes_d = (e_cnt - e_i_q - 32'(SpW) < 32'(SpW)) ? 17'(e_cnt - e_i_q - 32'(SpW)) : 17'(SpW);
              rp_d    = '0;
            end else begin
              es_d = EWait;
            end
          end
        end
      end

      // ROWNORM softmax: 512 / SpW table reads; each window shifts in from the top.
      RTab: begin
        param_rd_addr_o = ParamAw'(p_par + 32'(tk_q) * 32'(SpW));
        if (tk_q < 9'(TabReads)) begin
          param_rd_req_o = 1'b1;
          pend_d         = 1'b1;
          tk_d           = tk_q + 9'd1;
        end
        if (pend_q) begin
          tab_d = {param_rd_data_i, tab_q[TabW-1:SpW*8]};
          if (tk_q == 9'(TabReads)) es_d = RScan;
        end
      end

      // A row's chunks, one read a cycle; the last one's arrival ends the pass.
      RScan: begin
        in_rd_addr_o = InAw'(rin_q + 32'(roff_q));
        if (roff_q < p_n) begin
          in_rd_req_o = 1'b1;
          pend_d      = 1'b1;
          rcap_d      = roff_q;
          roff_d      = roff_q + 17'(SpW);
        end
        if (pend_q) begin
          mx_d = (rcap_q == '0 || cmax > mx_q) ? cmax : mx_q;
          s1_d = (rcap_q == '0 ? 25'sd0 : s1_q) + csum;
          s2_d = (rcap_q == '0 ? 32'd0 : s2_q) + csq;
          if (rcap_q + 17'(SpW) >= p_n) begin
            bj_d  = '0;
            bic_d = '0;
            if (r_ln) begin
              es_d = RVar1;
            end else begin
              es_d         = RSum;
              in_rd_req_o  = 1'b1;
              in_rd_addr_o = InAw'(rin_q);
              xpend_d      = 1'b1;
            end
          end
        end
      end

      RSum: begin
        x_consume = 1'b1;
        ssum_d    = (bj_q == '0 ? 32'd0 : ssum_q) + esum;
        bj_d      = bj_q + 17'(Lanes);
        bic_d     = bic_q + 2'd1;
        if (bj_q + 17'(Lanes) >= p_n) begin
          dv_num_d  = {32'hFFFF_FFFF, 17'd0};
          dv_den_d  = ssum_d;
          dv_zero_d = (ssum_d == 32'd0);
          dv_rem_d  = '0;
          dv_quo_d  = '0;
          it_d      = '0;
          es_d      = RDiv;
        end else if (bic_q == 2'd3) begin
          in_rd_req_o  = 1'b1;
          in_rd_addr_o = InAw'(rin_q + 32'(bj_q) + 32'(Lanes));
          xpend_d      = 1'b1;
        end
      end

      RVar1: begin
        v_d  = rm_p + 64'(r_eps);
        es_d = RVar2;
      end

      RVar2: begin
        v_d       = vn_one << {vn_e, 1'b0};
        ne_d      = vn_e;
        sq_rem_d  = '0;
        sq_root_d = '0;
        it_d      = '0;
        es_d      = RSqrt;
      end

      // 31 steps: V 4^e < 2^62, two bits a step from the top; q >= 2^30.
      RSqrt: begin
        sq_rem_d  = sq_ge ? 33'(sq_sh - sq_trial) : 33'(sq_sh);
        sq_root_d = sq_root_nx;
        v_d       = v_q << 2;
        it_d      = it_q + 6'd1;
        if (it_q == 6'd30) begin
          // 2^72 / q: the dividend's bits above the 43 quotient bits, 2^29,
          // start as the remainder (below q), the 43 below it are zero.
          dv_num_d  = '0;
          dv_den_d  = 32'(sq_root_nx);
          dv_zero_d = 1'b0;
          dv_rem_d  = 32'h2000_0000;
          dv_quo_d  = '0;
          it_d      = '0;
          es_d      = RDiv;
        end
      end

      // 32 steps (softmax, (2^32 - 1) / S) or 43 (layernorm, 2^72 / q).
      RDiv: begin
        dv_rem_d = dv_ge ? 32'(dv_sh - {1'b0, dv_den_q}) : dv_sh[31:0];
        dv_quo_d = dv_quo_nx;
        dv_num_d = dv_num_q << 1;
        it_d     = it_q + 6'd1;
        if (it_q == (r_ln ? 6'd42 : 6'd31)) begin
          if (r_ln) begin
            dv_quo_d = ln_r;
            es_d     = RNr1;
          end else begin
            es_d         = ROut;
            bj_d         = '0;
            bic_d        = '0;
            in_rd_req_o  = 1'b1;
            in_rd_addr_o = InAw'(rin_q);
            xpend_d      = 1'b1;
          end
        end
      end

      RNr1: begin
        nr_d = rm_p;
        es_d = RNr2;
      end

      RNr2: begin
        k_d     = rm_p;
        bj_d    = '0;
        bic_d   = '0;
        c_par_d = p_par;
        pr_d    = '0;
        es_d    = ROutLn;
      end

      ROut: begin
        dp_in_valid = 1'b1;
        dp_lanes    = rbl;
        if (dp_fire) begin
          x_consume = 1'b1;
          c_out_d   = c_out_q + 32'(rbl);
          bj_d      = bj_q + 17'(Lanes);
          bic_d     = bic_q + 2'd1;
          if (bj_q + 17'(Lanes) >= p_n) begin
            if (ci_q + 17'd1 < p_m) begin
              ci_d   = ci_q + 17'd1;
              rin_d  = rin_q + n32;
              roff_d = '0;
              es_d   = RScan;
            end else begin
              es_d = EWait;
            end
          end else if (bic_q == 2'd3) begin
            in_rd_req_o  = 1'b1;
            in_rd_addr_o = InAw'(rin_q + 32'(bj_q) + 32'(Lanes));
            xpend_d      = 1'b1;
          end
        end
      end

      // Per beat: three PARAM reads (window w at c_par + w * SpW), the chunk's
      // IN read beside the first beat's first; the beat is fed as the third
      // window arrives, and the next beat's first read goes out with it.
      ROutLn: begin
        dp_lanes = rbl;
        if (pend_q) preg_d[pidx_q*(SpW*8) +: SpW*8] = param_rd_data_i;
        if (pr_q != 2'd3) begin
          param_rd_req_o = 1'b1;
          pend_d         = 1'b1;
          pidx_d         = pr_q;
          pr_d           = pr_q + 2'd1;
          if (pr_q == 2'd0 && bic_q == 2'd0) begin
            in_rd_req_o  = 1'b1;
            in_rd_addr_o = InAw'(rin_q + 32'(bj_q));
            xpend_d      = 1'b1;
          end
        end else begin
          dp_in_valid = 1'b1;
          if (dp_fire) begin
            x_consume = 1'b1;
            c_out_d   = c_out_q + 32'(rbl);
            c_par_d   = c_par_q + 32'(12 * Lanes);
            bj_d      = bj_q + 17'(Lanes);
            bic_d     = bic_q + 2'd1;
            if (bj_q + 17'(Lanes) >= p_n) begin
              if (ci_q + 17'd1 < p_m) begin
                ci_d   = ci_q + 17'd1;
                rin_d  = rin_q + n32;
                roff_d = '0;
                es_d   = RScan;
              end else begin
                es_d = EWait;
              end
            end else begin
              param_rd_req_o  = 1'b1;
              param_rd_addr_o = ParamAw'(c_par_q + 32'(12 * Lanes));
              pend_d          = 1'b1;
              pidx_d          = 2'd0;
              pr_d            = 2'd1;
              if (bic_q == 2'd3) begin
                in_rd_req_o  = 1'b1;
                in_rd_addr_o = InAw'(rin_q + 32'(bj_q) + 32'(Lanes));
                xpend_d      = 1'b1;
              end
            end
          end
        end
      end

      EWait: begin
        if (written_q == fed_q && !dp_busy) begin
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

    // ROWNORM beat passes: a consumed beat shifts the chunk down; an arriving chunk is held.
    if (x_consume) begin
      xb_d = xsrc >> (8 * Lanes);
    end else if (xpend_q) begin
      xb_d = in_rd_data_i;
    end else begin
      xb_d = xb_q;
    end

    // POSTOP row reads (the first of a chunk is issued from EParRd or
    // EScanChk): IN follows ACC's request; without ACC's grant the data is unused.
    if (es_q == EParRd || es_q == EScanChk || es_q == EPost) begin
      acc_rd_addr_o = AccAw'(c_acc_d);
      in_rd_addr_o  = InAw'(c_res_d);
      in_rd_req_o   = acc_rd_req_o && p_res;
    end

    if (abort_i && es_q != EIdle) begin
      es_d = EDrain;
    end
  end

  assign o_win_c = 32'(o_win) * o_c32;

  // ---------------------------------------------------------------------------
  // Beat tags: OUT address and live lanes, in datapath order.
  // ---------------------------------------------------------------------------
  logic [TagW-1:0] tag_in, tag_out;
  logic            tag_full, tag_empty;
  logic [3:0]      tag_count;
  logic [Lanes-1:0] tag_mask;
  logic [Lanes:0]   mask_ext;
  assign mask_ext = ({{Lanes{1'b0}}, 1'b1} << dp_lanes[$clog2(Lanes+1)-1:0]) - 1'b1;
  assign tag_in   = {dp_addr, mask_ext[Lanes-1:0]};

  // Depth 14: the datapath holds at most 13 beats (rescale), and a beat may
  // enter in the cycle one leaves while 13 are in flight.
  loom_fifo #(.Width (TagW), .Depth (14)) u_tags (
    .clk_i   (clk_i),
    .rst_ni  (rst_ni),
    .flush_i (1'b0),
    .push_i  (dp_fire),
    .wdata_i (tag_in),
    .full_o  (tag_full),
    .pop_i   (dp_out_valid && dp_out_ready),
    .rdata_o (tag_out),
    .empty_o (tag_empty),
    .count_o (tag_count)
  );
  assign tag_mask = tag_out[Lanes-1:0];

  // ---------------------------------------------------------------------------
  // Output writer: one OUT write a beat, at the beat's address and mask.
  // ---------------------------------------------------------------------------
  always_comb begin
    written_d = written_q;
    fed_d     = fed_q;
    out_wr_req_o  = dp_out_valid && (es_q != EDrain);
    out_wr_addr_o = tag_out[TagW-1 -: OutAw];
    out_wr_data_o = (SpW*8)'(dp_out);
    out_wr_mask_o = SpW'(tag_mask);
    dp_out_ready  = (es_q == EDrain) || out_wr_gnt_i;
    if (es_q == EIdle && start_i) begin
      written_d = '0;
      fed_d     = '0;
    end else begin
      if (dp_out_valid && dp_out_ready) begin
        written_d = written_q + 32'd1;
      end
      if (dp_fire) begin
        fed_d = fed_q + 32'd1;
      end
    end
  end

  loom_postop #(.Lanes (Lanes)) u_postop (
    .clk_i           (clk_i),
    .rst_ni          (rst_ni),
    .cfg_residual_i  (cfg_res),
    .cfg_out_zp_i    (cfg_out_zp),
    .cfg_clip_lo_i   (cfg_lo),
    .cfg_clip_hi_i   (cfg_hi),
    .cfg_res_zp_i    (cfg_res_zp),
    .cfg_res_mult_i  (cfg_res_mult),
    .cfg_res_shift_i (cfg_res_shift),
    .cfg_sum_i       (cfg_sum),
    .cfg_even_i      (cfg_even),
    .cfg_rescale_i   (cfg_rescale),
    .cfg_a_zp_i      (p_a_zp),
    .cfg_a_mult_i    (amult_q),
    .cfg_a_shift_i   (ashift_q[5:0]),
    .cfg_add_zp_i    (p_add_zp),
    .cfg_add_lo_i    (p_add_lo),
    .cfg_add_hi_i    (p_add_hi),
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
      es_q    <= EIdle;
      pend_q  <= 1'b0;
      xpend_q <= 1'b0;
    end else begin
      es_q    <= es_d;
      pend_q  <= pend_d;
      xpend_q <= xpend_d;
    end
  end

  always_ff @(posedge clk_i) begin
    scan_q     <= scan_d;
    pr_q       <= pr_d;
    pidx_q     <= pidx_d;
    preg_q     <= preg_d;
    ci_q       <= ci_d;
    cj_q       <= cj_d;
    c_acc_q    <= c_acc_d;
    c_par_q    <= c_par_d;
    c_res_q    <= c_res_d;
    c_out_q    <= c_out_d;
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
    na_q       <= na_d;
    nb_q       <= nb_d;
    rp_q       <= rp_d;
    e_i_q      <= e_i_d;
    fed_q      <= fed_d;
    written_q  <= written_d;
    amult_q    <= amult_d;
    ashift_q   <= ashift_d;
    tab_q      <= tab_d;
    tk_q       <= tk_d;
    rin_q      <= rin_d;
    roff_q     <= roff_d;
    rcap_q     <= rcap_d;
    bj_q       <= bj_d;
    bic_q      <= bic_d;
    xb_q       <= xb_d;
    mx_q       <= mx_d;
    ssum_q     <= ssum_d;
    s1_q       <= s1_d;
    s2_q       <= s2_d;
    v_q        <= v_d;
    sq_rem_q   <= sq_rem_d;
    sq_root_q  <= sq_root_d;
    ne_q       <= ne_d;
    dv_num_q   <= dv_num_d;
    dv_quo_q   <= dv_quo_d;
    dv_den_q   <= dv_den_d;
    dv_rem_q   <= dv_rem_d;
    dv_zero_q  <= dv_zero_d;
    it_q       <= it_d;
    nr_q       <= nr_d;
    k_q        <= k_d;
  end

  assign busy_o   = (es_q != EIdle);
  assign active_o = (es_q != EIdle) && (es_q != EDrain);

  logic unused_bits;
  assign unused_bits = ^{insn_i, acc_rd_data_i, param_rd_data_i, in_rd_data_i, tag_empty, tag_count,
                        mask_ext[Lanes], ashift_q[31:6], p_apar, dd_unused};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(ParamTripleFits_A, SpW >= 16 && SpW % 4 == 0)
  `LOOM_ASSERT_INIT(LutTableFits_A, 256 % SpW == 0)
  `LOOM_ASSERT(NoStartWhileBusy_A, start_i |-> es_q == EIdle)
  `LOOM_ASSERT(NoExtraOutput_A, es_q != EDrain && out_wr_req_o |-> written_q < fed_q)
  `LOOM_ASSERT(TagsKeepUp_A, !(dp_fire && tag_full))
  `LOOM_ASSERT(TagPerBeat_A, dp_out_valid |-> !tag_empty)
  `LOOM_ASSERT(LiveLanes_A, dp_in_valid |-> dp_lanes >= 17'd1 && dp_lanes <= 17'(Lanes))
  // A chunk's last beat takes over the next chunk's A and B only once both are held.
  `LOOM_ASSERT(NextChunkHeld_A, es_q == EEltFeed && dp_in_ready && lane_q + 17'(Lanes) >= lanes_q && e_i_q + 32'(SpW) < e_cnt |-> rp_q == 2'd3)
  // A chunk's last beat takes over the next chunk's A and B only once both are held.


  // Cover points (coverage build only).
  `LOOM_COVER_STATES(c_state, es_q, 27)

endmodule
