// The compute unit of a loom core: executes GEMM, POSTOP, POOL, ELTWISE, ROWNORM and DWCONV on the scratchpads under the unit contract.
//
// Sequence per instruction (docs/rtl-core.md, unit contract): accept while
// idle; one check cycle (loom_compute_check: ILLEGAL_INSN, then
// SCRATCHPAD_OOB, before anything is touched); wait for the tokens the pop
// flags ask for (stall_dep_o) and pop them together in one cycle; execute on
// loom_gemm_ctrl (GEMM), loom_dw_ctrl (DWCONV) or loom_elem_ctrl (POSTOP,
// POOL, ELTWISE, ROWNORM); then one
// retire cycle with retire_o and the push pulses. An error pulses err_o with
// its cause and pc, and the unit holds (busy) until halt_i or flush_i.
// halt_i and flush_i abandon the instruction: the controllers drain the
// array, the depthwise lanes and the post-op pipeline (results discarded) so that nothing stale
// reaches the next instruction, then the unit is idle.
//
// Scratchpad ports follow the loom_spad contract: byte addresses, SpW-byte
// windows, data the cycle after a (granted) read request, byte-masked
// writes. IN, WGT and PARAM reads are the unit's own; the ACC read port is
// shared with the store unit and the OUT write port with the load unit, so
// those two carry a grant. The ACC write port is the unit's alone. The three
// controllers never run at once, so their requests are simply ORed and the
// busy one's address and data go out.
`include "loom_cover.svh"

module loom_compute_unit #(
  parameter int unsigned Rows       = 4,
  parameter int unsigned Cols       = 4,
  parameter int unsigned SpW        = 16,
  parameter int unsigned InBytes    = 16384,
  parameter int unsigned WgtBytes   = 16384,
  parameter int unsigned AccBytes   = 16384,
  parameter int unsigned OutBytes   = 8192,
  parameter int unsigned ParamBytes = 4096,
  // Scratchpad address widths (byte addresses); derived, not meant to be set.
  parameter int unsigned InAw       = $clog2(InBytes),
  parameter int unsigned WgtAw      = $clog2(WgtBytes),
  parameter int unsigned AccAw      = $clog2(AccBytes),
  parameter int unsigned OutAw      = $clog2(OutBytes),
  parameter int unsigned ParamAw    = $clog2(ParamBytes)
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  input  logic                                flush_i,
  input  logic                                halt_i,

  // Instruction.
  input  logic                                insn_valid_i,
  output logic                                insn_ready_o,
  input  logic [255:0]                        insn_i,
  input  logic [15:0]                         pc_i,

  // Dependency tokens: prev = load unit, next = store unit.
  input  logic                                tok_prev_avail_i,
  input  logic                                tok_next_avail_i,
  output logic                                tok_prev_pop_o,
  output logic                                tok_next_pop_o,
  output logic                                tok_prev_push_o,
  output logic                                tok_next_push_o,

  // Status.
  output logic                                busy_o,
  output logic                                retire_o,
  output logic                                err_o,
  output logic [loom_pkg::NumErrCauses-1:0]   err_cause_o,
  output logic [15:0]                         err_pc_o,

  // Performance counter increments.
  output logic [31:0]                         macs_inc_o,
  output logic [31:0]                         rd_bytes_inc_o,
  output logic [31:0]                         wr_bytes_inc_o,
  output logic                                active_o,
  output logic                                stall_mem_o,
  output logic                                stall_dep_o,

  // IN read.
  output logic                                in_rd_req_o,
  output logic [InAw-1:0]                     in_rd_addr_o,
  input  logic [SpW*8-1:0]                    in_rd_data_i,
  // WGT read.
  output logic                                wgt_rd_req_o,
  output logic [WgtAw-1:0]                    wgt_rd_addr_o,
  input  logic [SpW*8-1:0]                    wgt_rd_data_i,
  // PARAM read.
  output logic                                param_rd_req_o,
  output logic [ParamAw-1:0]                  param_rd_addr_o,
  input  logic [SpW*8-1:0]                    param_rd_data_i,
  // ACC read (shared with the store unit; compute has priority).
  output logic                                acc_rd_req_o,
  output logic [AccAw-1:0]                    acc_rd_addr_o,
  input  logic                                acc_rd_gnt_i,
  input  logic [SpW*8-1:0]                    acc_rd_data_i,
  // ACC write.
  output logic                                acc_wr_req_o,
  output logic [AccAw-1:0]                    acc_wr_addr_o,
  output logic [SpW*8-1:0]                    acc_wr_data_o,
  output logic [SpW-1:0]                      acc_wr_mask_o,
  // OUT write (shared with the load unit; compute has priority).
  output logic                                out_wr_req_o,
  output logic [OutAw-1:0]                    out_wr_addr_o,
  output logic [SpW*8-1:0]                    out_wr_data_o,
  output logic [SpW-1:0]                      out_wr_mask_o,
  input  logic                                out_wr_gnt_i
);

  typedef enum logic [2:0] {
    SIdle,
    SCheck,   // field and bounds checks on the held instruction
    STok,     // wait for the tokens to pop
    SRun,     // a controller executes
    SRetire,  // retire_o and pushes
    SErr,     // error reported; wait for halt_i / flush_i
    SDrain    // abandoned: wait for the controllers to drain
  } state_e;

  state_e         state_d, state_q;
  logic [255:0]   insn_d, insn_q;
  logic [15:0]    pc_d, pc_q;

  logic [5:0] opcode;
  logic       pop_prev, pop_next, push_prev, push_next;
  assign opcode    = insn_q[loom_pkg::INSN_OPCODE_LSB +: loom_pkg::INSN_OPCODE_W];
  assign pop_prev  = insn_q[loom_pkg::INSN_POP_PREV_LSB];
  assign pop_next  = insn_q[loom_pkg::INSN_POP_NEXT_LSB];
  assign push_prev = insn_q[loom_pkg::INSN_PUSH_PREV_LSB];
  assign push_next = insn_q[loom_pkg::INSN_PUSH_NEXT_LSB];

  logic chk_illegal, chk_oob, chk_empty;
  loom_compute_check #(
    .InBytes    (InBytes),
    .WgtBytes   (WgtBytes),
    .AccBytes   (AccBytes),
    .OutBytes   (OutBytes),
    .ParamBytes (ParamBytes)
  ) u_check (
    .insn_i    (insn_q),
    .illegal_o (chk_illegal),
    .oob_o     (chk_oob),
    .empty_o   (chk_empty)
  );

  // Empty instructions skip execution; remember it across the token wait.
  logic empty_d, empty_q;

  logic abort;
  assign abort = halt_i || flush_i;

  logic tokens_ok;
  assign tokens_ok = (!pop_prev || tok_prev_avail_i) && (!pop_next || tok_next_avail_i);

  logic g_start, g_busy, g_done, g_active;
  logic e_start, e_busy, e_done, e_err, e_active;
  logic d_start, d_busy, d_done, d_active;

  always_comb begin
    state_d         = state_q;
    insn_d          = insn_q;
    pc_d            = pc_q;
    empty_d         = empty_q;
    insn_ready_o    = 1'b0;
    tok_prev_pop_o  = 1'b0;
    tok_next_pop_o  = 1'b0;
    tok_prev_push_o = 1'b0;
    tok_next_push_o = 1'b0;
    retire_o        = 1'b0;
    err_o           = 1'b0;
    err_cause_o     = '0;
    stall_dep_o     = 1'b0;
    g_start         = 1'b0;
    e_start         = 1'b0;
    d_start         = 1'b0;

    unique case (state_q)
      SIdle: begin
        insn_ready_o = 1'b1;
        if (insn_valid_i) begin
          insn_d  = insn_i;
          pc_d    = pc_i;
          state_d = SCheck;
        end
      end

      SCheck: begin
        empty_d = chk_empty;
        if (chk_illegal) begin
          err_o                                  = 1'b1;
          err_cause_o[loom_pkg::ERR_ILLEGAL_INSN] = 1'b1;
          state_d                                = SErr;
        end else if (chk_oob) begin
          err_o                                    = 1'b1;
          err_cause_o[loom_pkg::ERR_SCRATCHPAD_OOB] = 1'b1;
          state_d                                  = SErr;
        end else begin
          state_d = STok;
        end
      end

      STok: begin
        stall_dep_o = !tokens_ok;
        if (tokens_ok) begin
          tok_prev_pop_o = pop_prev;
          tok_next_pop_o = pop_next;
          if (empty_q) begin
            state_d = SRetire;
          end else begin
            g_start = (opcode == loom_pkg::OpGemm);
            d_start = (opcode == loom_pkg::OpDwconv);
            e_start = (opcode != loom_pkg::OpGemm) && (opcode != loom_pkg::OpDwconv);
            state_d = SRun;
          end
        end
      end

      SRun: begin
        if (e_err) begin
          // A per-channel PARAM shift outside 1..62 (POSTOP, ROWNORM layernorm).
          err_o                                  = 1'b1;
          err_cause_o[loom_pkg::ERR_ILLEGAL_INSN] = 1'b1;
          state_d                                = SErr;
        end else if (g_done || e_done || d_done) begin
          state_d = SRetire;
        end
      end

      SRetire: begin
        retire_o        = 1'b1;
        tok_prev_push_o = push_prev;
        tok_next_push_o = push_next;
        state_d         = SIdle;
      end

      SErr: ;  // held until halt_i / flush_i

      SDrain: begin
        if (!g_busy && !e_busy && !d_busy) begin
          state_d = SIdle;
        end
      end

      default: state_d = SIdle;
    endcase

    // Abandon whatever is in progress; nothing more is reported.
    if (abort && state_q != SIdle) begin
      state_d         = SDrain;
      tok_prev_pop_o  = 1'b0;
      tok_next_pop_o  = 1'b0;
      tok_prev_push_o = 1'b0;
      tok_next_push_o = 1'b0;
      retire_o        = 1'b0;
      err_o           = 1'b0;
      err_cause_o     = '0;
      g_start         = 1'b0;
      e_start         = 1'b0;
      d_start         = 1'b0;
      stall_dep_o     = 1'b0;
    end
    if (abort && state_q == SIdle) begin
      state_d      = SIdle;
      insn_ready_o = 1'b0;
    end
  end

  assign err_pc_o       = pc_q;
  assign busy_o         = (state_q != SIdle);
  assign rd_bytes_inc_o = '0;
  assign wr_bytes_inc_o = '0;
  assign stall_mem_o    = 1'b0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= SIdle;
    end else begin
      state_q <= state_d;
    end
  end

  always_ff @(posedge clk_i) begin
    insn_q  <= insn_d;
    pc_q    <= pc_d;
    empty_q <= empty_d;
  end

  // ---------------------------------------------------------------------------
  // Controllers.
  // ---------------------------------------------------------------------------
  logic                g_in_req, e_in_req, d_in_req, g_acc_rd_req, e_acc_rd_req;
  logic [InAw-1:0]     g_in_addr, e_in_addr, d_in_addr;
  logic [AccAw-1:0]    g_acc_rd_addr, e_acc_rd_addr;
  logic [31:0]         g_macs, d_macs;
  logic                g_wgt_req, d_wgt_req, g_acc_wr_req, d_acc_wr_req;
  logic [WgtAw-1:0]    g_wgt_addr, d_wgt_addr;
  logic [AccAw-1:0]    g_acc_wr_addr, d_acc_wr_addr;
  logic [SpW*8-1:0]    g_acc_wr_data, d_acc_wr_data;
  logic [SpW-1:0]      g_acc_wr_mask, d_acc_wr_mask;

  loom_gemm_ctrl #(
    .Rows  (Rows),
    .Cols  (Cols),
    .SpW   (SpW),
    .InAw  (InAw),
    .WgtAw (WgtAw),
    .AccAw (AccAw)
  ) u_gemm (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .start_i       (g_start),
    .abort_i       (abort),
    .insn_i        (insn_q),
    .busy_o        (g_busy),
    .done_o        (g_done),
    .active_o      (g_active),
    .macs_inc_o    (g_macs),
    .in_rd_req_o   (g_in_req),
    .in_rd_addr_o  (g_in_addr),
    .in_rd_data_i  (in_rd_data_i),
    .wgt_rd_req_o  (g_wgt_req),
    .wgt_rd_addr_o (g_wgt_addr),
    .wgt_rd_data_i (wgt_rd_data_i),
    .acc_rd_req_o  (g_acc_rd_req),
    .acc_rd_addr_o (g_acc_rd_addr),
    .acc_rd_gnt_i  (acc_rd_gnt_i),
    .acc_rd_data_i (acc_rd_data_i),
    .acc_wr_req_o  (g_acc_wr_req),
    .acc_wr_addr_o (g_acc_wr_addr),
    .acc_wr_data_o (g_acc_wr_data),
    .acc_wr_mask_o (g_acc_wr_mask)
  );

  loom_dw_ctrl #(
    .SpW   (SpW),
    .InAw  (InAw),
    .WgtAw (WgtAw),
    .AccAw (AccAw)
  ) u_dw (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .start_i       (d_start),
    .abort_i       (abort),
    .insn_i        (insn_q),
    .busy_o        (d_busy),
    .done_o        (d_done),
    .active_o      (d_active),
    .macs_inc_o    (d_macs),
    .in_rd_req_o   (d_in_req),
    .in_rd_addr_o  (d_in_addr),
    .in_rd_data_i  (in_rd_data_i),
    .wgt_rd_req_o  (d_wgt_req),
    .wgt_rd_addr_o (d_wgt_addr),
    .wgt_rd_data_i (wgt_rd_data_i),
    .acc_wr_req_o  (d_acc_wr_req),
    .acc_wr_addr_o (d_acc_wr_addr),
    .acc_wr_data_o (d_acc_wr_data),
    .acc_wr_mask_o (d_acc_wr_mask)
  );

  loom_elem_ctrl #(
    .SpW     (SpW),
    .InAw    (InAw),
    .AccAw   (AccAw),
    .OutAw   (OutAw),
    .ParamAw (ParamAw)
  ) u_elem (
    .clk_i           (clk_i),
    .rst_ni          (rst_ni),
    .start_i         (e_start),
    .abort_i         (abort),
    .insn_i          (insn_q),
    .busy_o          (e_busy),
    .done_o          (e_done),
    .err_o           (e_err),
    .active_o        (e_active),
    .in_rd_req_o     (e_in_req),
    .in_rd_addr_o    (e_in_addr),
    .in_rd_data_i    (in_rd_data_i),
    .acc_rd_req_o    (e_acc_rd_req),
    .acc_rd_addr_o   (e_acc_rd_addr),
    .acc_rd_gnt_i    (acc_rd_gnt_i),
    .acc_rd_data_i   (acc_rd_data_i),
    .param_rd_req_o  (param_rd_req_o),
    .param_rd_addr_o (param_rd_addr_o),
    .param_rd_data_i (param_rd_data_i),
    .out_wr_req_o    (out_wr_req_o),
    .out_wr_addr_o   (out_wr_addr_o),
    .out_wr_data_o   (out_wr_data_o),
    .out_wr_mask_o   (out_wr_mask_o),
    .out_wr_gnt_i    (out_wr_gnt_i)
  );

  // Shared ports: only the running controller requests.
  assign in_rd_req_o   = g_in_req || e_in_req || d_in_req;
  assign in_rd_addr_o  = g_busy ? g_in_addr : d_busy ? d_in_addr : e_in_addr;
  assign wgt_rd_req_o  = g_wgt_req || d_wgt_req;
  assign wgt_rd_addr_o = d_busy ? d_wgt_addr : g_wgt_addr;
  assign acc_rd_req_o  = g_acc_rd_req || e_acc_rd_req;
  assign acc_rd_addr_o = g_busy ? g_acc_rd_addr : e_acc_rd_addr;
  assign acc_wr_req_o  = g_acc_wr_req || d_acc_wr_req;
  assign acc_wr_addr_o = d_busy ? d_acc_wr_addr : g_acc_wr_addr;
  assign acc_wr_data_o = d_busy ? d_acc_wr_data : g_acc_wr_data;
  assign acc_wr_mask_o = d_busy ? d_acc_wr_mask : g_acc_wr_mask;

  // Only the running controller counts (the others add zero).
  assign macs_inc_o = g_macs | d_macs;
  assign active_o   = g_active || e_active || d_active;

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(SpwHoldsAccRow_A, SpW >= Cols * 4 && SpW >= 16)
  `LOOM_ASSERT_INIT(PowerOfTwoSpads_A, (InBytes & (InBytes - 1)) == 0 && (WgtBytes & (WgtBytes - 1)) == 0 &&
                                       (AccBytes & (AccBytes - 1)) == 0 && (OutBytes & (OutBytes - 1)) == 0 &&
                                       (ParamBytes & (ParamBytes - 1)) == 0)
  `LOOM_ASSERT(OneController_A, !(g_busy && e_busy) && !(g_busy && d_busy) && !(d_busy && e_busy))
  `LOOM_ASSERT(ReadyOnlyIdle_A, insn_ready_o |-> state_q == SIdle)
  `LOOM_ASSERT(PushOnlyAtRetire_A, (tok_prev_push_o || tok_next_push_o) |-> retire_o)
  `LOOM_ASSERT(PopPrevWhenAvail_A, tok_prev_pop_o |-> tok_prev_avail_i)
  `LOOM_ASSERT(PopNextWhenAvail_A, tok_next_pop_o |-> tok_next_avail_i)
  `LOOM_ASSERT(NoRetireAndErr_A, !(retire_o && err_o))
  `LOOM_ASSERT(ErrCauseOneHot_A, err_o |-> $onehot(err_cause_o))


  // Cover points (coverage build only): states and the opcode each instruction carries.
  `LOOM_COVER_STATES(c_state, state_q, 7)
  `LOOM_COVER_OPCODES(c_op, insn_valid_i && insn_ready_o, insn_i[loom_pkg::INSN_OPCODE_LSB +: loom_pkg::INSN_OPCODE_W])

endmodule
