// Instruction dispatcher of a loom core: decode, legality checks, per-unit issue, tokens and control instructions.
//
// Issue is in order: the head of the fetch FIFO waits until its unit accepts
// it, and units run concurrently. Control instructions and faulty
// instructions first drain all three units, so an error raised by an earlier
// instruction (window, AXI response, ...) is reported before this one, as the
// golden model's program order requires. The four dependency-token counters
// live here, between the units' pop/push pulses.
`include "loom_cover.svh"

module loom_dispatch #(
  parameter int unsigned NumSems = 8,
  parameter int unsigned TokW    = 32,
  localparam int unsigned NumErrCauses = loom_pkg::NumErrCauses
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic                          flush_i,
  input  logic                          halt_i,          // core in error: issue nothing

  // instruction FIFO head (loom_fetch)
  input  logic                          insn_valid_i,
  output logic                          insn_ready_o,
  input  logic [255:0]                  insn_i,
  input  logic [15:0]                   pc_i,
  input  logic [1:0]                    resp_i,          // AXI response of the fetch

  // to the units: one instruction bus, one valid per unit
  output logic [255:0]                  unit_insn_o,
  output logic [15:0]                   unit_pc_o,
  output logic                          ld_valid_o,
  input  logic                          ld_ready_i,
  input  logic                          ld_busy_i,
  output logic                          cu_valid_o,
  input  logic                          cu_ready_i,
  input  logic                          cu_busy_i,
  output logic                          st_valid_o,
  input  logic                          st_ready_i,
  input  logic                          st_busy_i,

  // dependency tokens (load <-> compute <-> store)
  output logic                          ld_tok_next_avail_o,
  input  logic                          ld_tok_next_pop_i,
  input  logic                          ld_tok_next_push_i,
  output logic                          cu_tok_prev_avail_o,
  input  logic                          cu_tok_prev_pop_i,
  input  logic                          cu_tok_prev_push_i,
  output logic                          cu_tok_next_avail_o,
  input  logic                          cu_tok_next_pop_i,
  input  logic                          cu_tok_next_push_i,
  output logic                          st_tok_prev_avail_o,
  input  logic                          st_tok_prev_pop_i,
  input  logic                          st_tok_prev_push_i,

  // control instructions
  output logic                          sem_signal_o,    // 1-cycle pulse
  output logic [7:0]                    sem_id_o,
  input  logic [NumSems*32-1:0]         sem_value_i,     // semaphore i at [32*i +: 32]
  output logic                          blocked_o,       // SEM_WAIT not yet satisfied
  output logic                          end_o,           // END retired (1-cycle pulse)
  output logic [15:0]                   end_pc_o,
  output logic                          sync_retire_o,   // NOP/SEM_*/FENCE/END retired

  output logic                          err_o,           // 1-cycle pulse
  output logic [NumErrCauses-1:0]       err_cause_o,
  output logic [15:0]                   err_pc_o
);

  // ---------------------------------------------------------------------------
  // Decode.
  logic [5:0]  op;
  logic        pop_prev, pop_next, push_prev, push_next;
  logic [7:0]  sem_id;
  logic [31:0] sem_count;
  logic        op_known, op_ctrl, op_load, op_store, op_compute, op_nop;
  logic        flags_bad, sem_bad, resp_bad, insn_bad;

  assign op        = insn_i[loom_pkg::INSN_OPCODE_LSB +: loom_pkg::INSN_OPCODE_W];
  assign pop_prev  = insn_i[loom_pkg::INSN_POP_PREV_LSB];
  assign pop_next  = insn_i[loom_pkg::INSN_POP_NEXT_LSB];
  assign push_prev = insn_i[loom_pkg::INSN_PUSH_PREV_LSB];
  assign push_next = insn_i[loom_pkg::INSN_PUSH_NEXT_LSB];
  // SEM_SIGNAL and SEM_WAIT share the sem_id field position.
  assign sem_id    = insn_i[loom_pkg::SEM_WAIT_SEM_ID_LSB +: loom_pkg::SEM_WAIT_SEM_ID_W];
  assign sem_count = insn_i[loom_pkg::SEM_WAIT_COUNT_LSB +: loom_pkg::SEM_WAIT_COUNT_W];

  assign op_nop     = (op == loom_pkg::OpNop);
  assign op_load    = (op == loom_pkg::OpLoad);
  assign op_store   = (op == loom_pkg::OpStore);
  assign op_compute = (op == loom_pkg::OpGemm) || (op == loom_pkg::OpPostop) ||
                      (op == loom_pkg::OpPool) || (op == loom_pkg::OpEltwise) ||
                      (op == loom_pkg::OpRownorm) || (op == loom_pkg::OpDwconv);
  assign op_ctrl    = (op == loom_pkg::OpSemSignal) || (op == loom_pkg::OpSemWait) ||
                      (op == loom_pkg::OpFence) || (op == loom_pkg::OpEnd);
  assign op_known   = op_nop || op_load || op_store || op_compute || op_ctrl;

  // Token flags naming a missing neighbour (golden.cc routes_for).
  assign flags_bad = (op_ctrl && (pop_prev || pop_next || push_prev || push_next)) ||
                     (op_load && (pop_prev || push_prev)) ||
                     (op_store && (pop_next || push_next));
  assign sem_bad   = ((op == loom_pkg::OpSemSignal) || (op == loom_pkg::OpSemWait)) &&
                     (32'(sem_id) >= NumSems);
  // SLVERR (2'b10) and DECERR (2'b11); EXOKAY cannot answer a normal read.
  assign resp_bad  = resp_i[1];
  assign insn_bad  = resp_bad || !op_known || flags_bad || sem_bad;

  logic [31:0] sem_value;
  always_comb begin
    sem_value = '0;
    for (int unsigned i = 0; i < NumSems; i++) begin
      if (32'(sem_id) == i) sem_value = sem_value_i[32*i +: 32];
    end
  end

  // ---------------------------------------------------------------------------
  // Issue.
  logic issued_d, issued_q;   // a unit accepted an instruction last cycle
  logic drained;

  // A unit raises busy_o the cycle after it accepts; issued_q covers that gap.
  assign drained = !ld_busy_i && !cu_busy_i && !st_busy_i && !issued_q;

  always_comb begin
    insn_ready_o  = 1'b0;
    ld_valid_o    = 1'b0;
    cu_valid_o    = 1'b0;
    st_valid_o    = 1'b0;
    sem_signal_o  = 1'b0;
    blocked_o     = 1'b0;
    end_o         = 1'b0;
    sync_retire_o = 1'b0;
    err_o         = 1'b0;
    err_cause_o   = '0;

    if (insn_valid_i && !halt_i && !flush_i) begin
      if (insn_bad) begin
        if (drained) begin
          err_o = 1'b1;
          if (resp_bad) begin
            err_cause_o[resp_i[0] ? loom_pkg::ERR_AXI_DECERR : loom_pkg::ERR_AXI_SLVERR] = 1'b1;
          end else begin
            err_cause_o[loom_pkg::ERR_ILLEGAL_INSN] = 1'b1;
          end
        end
      end else if (op_nop) begin
        // NOP ignores its flags and needs no drain.
        insn_ready_o  = 1'b1;
        sync_retire_o = 1'b1;
      end else if (op_load) begin
        ld_valid_o   = 1'b1;
        insn_ready_o = ld_ready_i;
      end else if (op_store) begin
        st_valid_o   = 1'b1;
        insn_ready_o = st_ready_i;
      end else if (op_compute) begin
        cu_valid_o   = 1'b1;
        insn_ready_o = cu_ready_i;
      end else if (drained) begin
        unique case (op)
          loom_pkg::OpSemSignal: begin
            sem_signal_o  = 1'b1;
            insn_ready_o  = 1'b1;
            sync_retire_o = 1'b1;
          end
          loom_pkg::OpSemWait: begin
            if (sem_value >= sem_count) begin
              insn_ready_o  = 1'b1;
              sync_retire_o = 1'b1;
            end else begin
              blocked_o = 1'b1;
            end
          end
          loom_pkg::OpEnd: begin
            end_o         = 1'b1;
            insn_ready_o  = 1'b1;
            sync_retire_o = 1'b1;
          end
          default: begin  // FENCE: the drain is all it does
            insn_ready_o  = 1'b1;
            sync_retire_o = 1'b1;
          end
        endcase
      end
    end

    issued_d = (ld_valid_o && ld_ready_i) || (cu_valid_o && cu_ready_i) || (st_valid_o && st_ready_i);
    if (flush_i) issued_d = 1'b0;
  end

  assign unit_insn_o = insn_i;
  assign unit_pc_o   = pc_i;
  assign sem_id_o    = sem_id;
  assign end_pc_o    = pc_i;
  assign err_pc_o    = pc_i;

  // ---------------------------------------------------------------------------
  // Token counters: l2c (load -> compute), c2l, c2s, s2c.
  logic [TokW-1:0] l2c_d, l2c_q, c2l_d, c2l_q, c2s_d, c2s_q, s2c_d, s2c_q;

  function automatic logic [TokW-1:0] tok_next(logic [TokW-1:0] cnt, logic push, logic pop);
    // Assignment to the name, not `return`: Yosys 0.23 reads only this form.
    tok_next = cnt;
    if (push && !pop) tok_next = cnt + TokW'(1);
    if (pop && !push) tok_next = cnt - TokW'(1);
  endfunction

  always_comb begin
    l2c_d = tok_next(l2c_q, ld_tok_next_push_i, cu_tok_prev_pop_i);
    c2l_d = tok_next(c2l_q, cu_tok_prev_push_i, ld_tok_next_pop_i);
    c2s_d = tok_next(c2s_q, cu_tok_next_push_i, st_tok_prev_pop_i);
    s2c_d = tok_next(s2c_q, st_tok_prev_push_i, cu_tok_next_pop_i);
    if (flush_i) begin
      l2c_d = '0;
      c2l_d = '0;
      c2s_d = '0;
      s2c_d = '0;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      l2c_q    <= '0;
      c2l_q    <= '0;
      c2s_q    <= '0;
      s2c_q    <= '0;
      issued_q <= 1'b0;
    end else begin
      l2c_q    <= l2c_d;
      c2l_q    <= c2l_d;
      c2s_q    <= c2s_d;
      s2c_q    <= s2c_d;
      issued_q <= issued_d;
    end
  end

  assign ld_tok_next_avail_o = (c2l_q != '0);
  assign cu_tok_prev_avail_o = (l2c_q != '0);
  assign cu_tok_next_avail_o = (s2c_q != '0);
  assign st_tok_prev_avail_o = (c2s_q != '0);

  `LOOM_ASSERT_INIT(a_num_sems, NumSems >= 1 && NumSems <= 256)
  // A unit pops only a token it saw available.
  `LOOM_ASSERT(a_pop_l2c, !cu_tok_prev_pop_i || l2c_q != '0)
  `LOOM_ASSERT(a_pop_c2l, !ld_tok_next_pop_i || c2l_q != '0)
  `LOOM_ASSERT(a_pop_c2s, !st_tok_prev_pop_i || c2s_q != '0)
  `LOOM_ASSERT(a_pop_s2c, !cu_tok_next_pop_i || s2c_q != '0)
  `LOOM_ASSERT(a_no_tok_overflow, !(ld_tok_next_push_i && !cu_tok_prev_pop_i && l2c_q == '1) &&
                                  !(cu_tok_prev_push_i && !ld_tok_next_pop_i && c2l_q == '1) &&
                                  !(cu_tok_next_push_i && !st_tok_prev_pop_i && c2s_q == '1) &&
                                  !(st_tok_prev_push_i && !cu_tok_next_pop_i && s2c_q == '1))
  `LOOM_ASSERT(a_one_issue, $onehot0({ld_valid_o, cu_valid_o, st_valid_o}))


  // Cover points (coverage build only): every opcode issued or retired, bad
  // instructions, semaphore waits, unit backpressure.
  `LOOM_COVER_OPCODES(c_op, insn_valid_i && insn_ready_o, op)
  `LOOM_COVER(c_op_unknown, insn_valid_i && !op_known)
  `LOOM_COVER(c_flags_bad, insn_valid_i && op_known && flags_bad)
  `LOOM_COVER(c_sem_bad, insn_valid_i && sem_bad)
  `LOOM_COVER(c_sem_wait_blocked, blocked_o)
  `LOOM_COVER(c_sem_wait_released, !blocked_o && $past(blocked_o) && insn_ready_o)
  `LOOM_COVER(c_ld_stall, ld_valid_o && !ld_ready_i)
  `LOOM_COVER(c_cu_stall, cu_valid_o && !cu_ready_i)
  `LOOM_COVER(c_st_stall, st_valid_o && !st_ready_i)
  `LOOM_COVER(c_ctrl_drain_wait, insn_valid_i && !halt_i && !flush_i && op_ctrl && !insn_bad && !drained)

endmodule : loom_dispatch
