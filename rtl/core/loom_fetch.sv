// Command-ring reader of a loom core: AXI read bursts of 32-byte instructions into a small FIFO.
//
// After a doorbell the reader walks the ring from RING_HEAD while it differs
// from RING_TAIL (read live, as the golden model does). One burst is in flight
// at a time and it never asks for more instructions than the FIFO has room
// for, so R beats are always accepted and the FIFO never overflows. A burst
// stops at the ring's end and at a 4 KiB boundary. ring_head_o counts
// instructions that have arrived (not merely been requested), so the host may
// reuse every slot before it. AXI errors travel with the instruction they hit
// (resp field) so the dispatcher raises them in program order.
`include "loom_assert.svh"

module loom_fetch #(
  parameter int unsigned AddrW     = 48,
  parameter int unsigned MemBytes  = 8,
  parameter int unsigned RingDepth = 256,
  parameter int unsigned FifoDepth = 4,
  localparam int unsigned CntW     = $clog2(FifoDepth + 1)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  flush_i,       // soft reset: head = 0, FIFO empty

  input  logic                  halt_i,        // core in error: issue no new bursts
  input  logic [AddrW-1:0]      ring_base_i,
  input  logic [15:0]           ring_size_i,
  input  logic [15:0]           ring_tail_i,
  input  logic                  doorbell_i,
  // END retired: drop what was fetched past it and resume after it at the
  // next doorbell, as the golden model leaves RING_HEAD just past END.
  input  logic                  restart_i,
  input  logic [15:0]           restart_pc_i,

  output logic [15:0]           ring_head_o,
  output logic                  idle_o,        // nothing to fetch, no burst in flight
  output logic                  ring_err_o,    // pulse: doorbell on an invalid ring
  output logic [15:0]           ring_err_pc_o,

  output logic                  insn_valid_o,
  input  logic                  insn_ready_i,
  output logic [255:0]          insn_o,
  output logic [15:0]           pc_o,
  output logic [1:0]            resp_o,        // worst AXI response of the instruction's beats
  output logic [CntW-1:0]       fifo_count_o,

  output logic                  m_axi_arvalid,
  input  logic                  m_axi_arready,
  output logic [AddrW-1:0]      m_axi_araddr,
  output logic [7:0]            m_axi_arlen,
  output logic [2:0]            m_axi_arsize,
  output logic [1:0]            m_axi_arburst,
  input  logic                  m_axi_rvalid,
  output logic                  m_axi_rready,
  input  logic [MemBytes*8-1:0] m_axi_rdata,
  input  logic [1:0]            m_axi_rresp,
  input  logic                  m_axi_rlast
);

  localparam int unsigned InsnBytes = 32;
  localparam int unsigned EntryW    = 256 + 16 + 2;
  localparam int unsigned LeftW     = $clog2(FifoDepth + 1);

  typedef enum logic [1:0] {
    StIdle,
    StAddr,
    StData
  } fetch_state_e;

  fetch_state_e     state_d, state_q;
  logic             run_d, run_q;
  logic [15:0]      req_idx_d, req_idx_q;   // next ring index to request
  logic [15:0]      head_d, head_q;         // next ring index to arrive
  logic [LeftW-1:0] left_d, left_q;         // instructions of the burst not yet pushed
  logic             discard_d, discard_q;   // drop the rest of the burst (flush/END)
  logic [AddrW-1:0] araddr_d, araddr_q;
  logic [7:0]       arlen_d, arlen_q;

  // ---------------------------------------------------------------------------
  // Burst sizing.
  logic [15:0]      size_mask;
  logic [15:0]      avail;       // instructions between req_idx and tail
  logic [16:0]      to_end;      // instructions to the ring's end
  logic [AddrW-1:0] req_addr;
  logic [7:0]       to_4k;       // instructions to the next 4 KiB boundary (1..128)
  logic [CntW-1:0]  space;
  logic [16:0]      n_insn;
  logic             ring_ok;
  logic             fifo_flush;

  assign size_mask = ring_size_i - 16'd1;
  assign avail     = (ring_tail_i - req_idx_q) & size_mask;
  assign to_end    = {1'b0, ring_size_i} - {1'b0, req_idx_q};
  assign req_addr  = ring_base_i + (AddrW'(req_idx_q) << 5);
  assign to_4k     = 8'((13'd4096 - {1'b0, req_addr[11:0]}) >> 5);

  always_comb begin
    n_insn = {1'b0, avail};
    if (to_end < n_insn) n_insn = to_end;
    if ({9'd0, to_4k} < n_insn) n_insn = {9'd0, to_4k};
    if (17'(space) < n_insn) n_insn = 17'(space);
  end

  // The checks the golden model makes at a doorbell (ref_device.cc).
  assign ring_ok = (ring_size_i != '0) && ((ring_size_i & size_mask) == '0) &&
                   (32'(ring_size_i) <= RingDepth) && (ring_base_i[4:0] == '0) &&
                   (ring_tail_i < ring_size_i) && (head_q < ring_size_i);

  // ---------------------------------------------------------------------------
  // R beats to instructions: either several beats per instruction or several
  // instructions per beat, depending on the memory width.
  logic             push;
  logic [255:0]     push_insn;
  logic [1:0]       push_resp;
  logic             beat_take;     // an R beat is accepted this cycle
  logic             burst_start;   // AR handshake this cycle
  logic             beats_busy;    // the beat path still holds instructions
  logic [AddrW-1:0] first_addr;    // address of the burst's first instruction
  logic             drop;          // forget partial data (flush/END)

  assign burst_start = (state_q == StAddr) && m_axi_arready;
  // While a burst's AR is out, head_q is still its first instruction.
  assign first_addr  = ring_base_i + (AddrW'(head_q) << 5);

  if (MemBytes < InsnBytes) begin : g_narrow
    localparam int unsigned BeatsPerInsn = InsnBytes / MemBytes;
    localparam int unsigned PartW = (BeatsPerInsn > 1) ? $clog2(BeatsPerInsn) : 1;

    logic [255:0]     asm_d, asm_q;     // beat i at [i*MemBytes*8 +: MemBytes*8]
    logic [PartW-1:0] part_d, part_q;
    logic [1:0]       resp_d, resp_q;   // worst response of the beats so far
    logic [1:0]       resp_now;

    assign m_axi_rready = (state_q == StData);
    assign beat_take    = m_axi_rvalid && m_axi_rready;
    assign resp_now     = (m_axi_rresp > resp_q) ? m_axi_rresp : resp_q;

    always_comb begin
      asm_d     = asm_q;
      part_d    = part_q;
      resp_d    = resp_q;
      push      = 1'b0;
      push_insn = '0;
      push_resp = resp_now;
      if (beat_take && !discard_q) begin
        asm_d[part_q*MemBytes*8 +: MemBytes*8] = m_axi_rdata;
        if (part_q == PartW'(BeatsPerInsn - 1)) begin
          push      = 1'b1;
          push_insn = asm_d;
          part_d    = '0;
          resp_d    = '0;
        end else begin
          part_d = part_q + PartW'(1);
          resp_d = resp_now;
        end
      end
      if (drop) begin
        part_d = '0;
        resp_d = '0;
      end
    end

    always_ff @(posedge clk_i) begin
      asm_q <= asm_d;
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        part_q <= '0;
        resp_q <= '0;
      end else begin
        part_q <= part_d;
        resp_q <= resp_d;
      end
    end

    assign beats_busy = 1'b0;
    logic unused_first_addr;
    assign unused_first_addr = ^{first_addr, burst_start};
  end else begin : g_wide
    localparam int unsigned InsnPerBeat = MemBytes / InsnBytes;
    localparam int unsigned SlotW = (InsnPerBeat > 1) ? $clog2(InsnPerBeat) : 1;

    logic [MemBytes*8-1:0]         beat_d, beat_q;   // slot s at [s*256 +: 256]
    logic                          beat_v_d, beat_v_q;
    logic [1:0]                    bresp_d, bresp_q;
    logic [SlotW-1:0]              slot_d, slot_q;

    assign m_axi_rready = (state_q == StData) && (!beat_v_q || discard_q);
    assign beat_take    = m_axi_rvalid && m_axi_rready;

    always_comb begin
      beat_d    = beat_q;
      beat_v_d  = beat_v_q;
      bresp_d   = bresp_q;
      slot_d    = slot_q;
      push      = 1'b0;
      push_insn = beat_q[slot_q*256 +: 256];
      push_resp = bresp_q;
      if (burst_start) begin
        // The first beat of a burst may start in the middle of the word.
        if (InsnPerBeat > 1) slot_d = SlotW'(first_addr >> 5);
        else slot_d = '0;
      end
      if (beat_v_q && !discard_q) begin
        push = 1'b1;
        if (left_q == LeftW'(1) || slot_q == SlotW'(InsnPerBeat - 1)) begin
          beat_v_d = 1'b0;
          slot_d   = '0;
        end else begin
          slot_d = slot_q + SlotW'(1);
        end
      end
      if (beat_take && !discard_q) begin
        beat_d   = m_axi_rdata;
        beat_v_d = 1'b1;
        bresp_d  = m_axi_rresp;
      end
      if (drop) begin
        beat_v_d = 1'b0;
        slot_d   = '0;
      end
    end

    always_ff @(posedge clk_i) begin
      beat_q <= beat_d;
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        beat_v_q <= 1'b0;
        bresp_q  <= '0;
        slot_q   <= '0;
      end else begin
        beat_v_q <= beat_v_d;
        bresp_q  <= bresp_d;
        slot_q   <= slot_d;
      end
    end

    assign beats_busy = beat_v_q;
  end

  // ---------------------------------------------------------------------------
  // Control.
  logic fetch_more;
  logic issue;

  assign drop       = flush_i || restart_i;
  assign fetch_more = run_q && (avail != '0);
  assign issue      = (state_q == StIdle) && (left_q == '0) && fetch_more && !halt_i && !drop &&
                      (n_insn != '0);

  always_comb begin
    state_d    = state_q;
    run_d      = run_q;
    req_idx_d  = req_idx_q;
    head_d     = head_q;
    left_d     = left_q;
    discard_d  = discard_q;
    araddr_d   = araddr_q;
    arlen_d    = arlen_q;
    ring_err_o = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (issue) begin
          state_d   = StAddr;
          left_d    = LeftW'(n_insn);
          req_idx_d = (req_idx_q + 16'(n_insn)) & size_mask;
          araddr_d  = req_addr & ~(AddrW'(MemBytes) - AddrW'(1));
          if (MemBytes < InsnBytes) begin
            arlen_d = 8'(n_insn * (InsnBytes / MemBytes) - 1);
          end else begin
            arlen_d = 8'(((32'(req_addr[$clog2(MemBytes)-1:0]) + 32'(n_insn) * InsnBytes +
                          MemBytes - 1) / MemBytes) - 1);
          end
        end
      end
      StAddr: begin
        if (m_axi_arready) state_d = StData;
      end
      StData: begin
        if (m_axi_rvalid && m_axi_rready && m_axi_rlast) begin
          state_d   = StIdle;
          discard_d = 1'b0;
        end
      end
      default: state_d = StIdle;
    endcase

    if (push) begin
      head_d = (head_q + 16'd1) & size_mask;
      left_d = left_q - LeftW'(1);
    end

    // Ring ran empty: stop until the next doorbell (golden: running = false).
    if (run_q && !fetch_more && state_q == StIdle && left_q == '0) run_d = 1'b0;

    if (doorbell_i && !halt_i) begin
      if (ring_ok) run_d = 1'b1;
      else ring_err_o = 1'b1;
    end

    if (drop) begin
      // A burst whose AR is out must still be drained; its data is dropped.
      // (A burst whose last beat arrives now is already over.)
      if (state_d != StIdle) discard_d = 1'b1;
      left_d = '0;
      run_d  = 1'b0;
      if (flush_i) begin
        head_d    = '0;
        req_idx_d = '0;
      end else begin
        head_d    = (restart_pc_i + 16'd1) & size_mask;
        req_idx_d = (restart_pc_i + 16'd1) & size_mask;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= StIdle;
      run_q     <= 1'b0;
      req_idx_q <= '0;
      head_q    <= '0;
      left_q    <= '0;
      discard_q <= 1'b0;
      araddr_q  <= '0;
      arlen_q   <= '0;
    end else begin
      state_q   <= state_d;
      run_q     <= run_d;
      req_idx_q <= req_idx_d;
      head_q    <= head_d;
      left_q    <= left_d;
      discard_q <= discard_d;
      araddr_q  <= araddr_d;
      arlen_q   <= arlen_d;
    end
  end

  // Space counts only entries already in the FIFO: a burst is issued only
  // when the previous one has been pushed completely (left_q == 0).
  logic [CntW-1:0] fifo_count;
  logic            fifo_empty;
  logic            fifo_full;
  logic [EntryW-1:0] fifo_rdata;

  assign space      = CntW'(FifoDepth) - fifo_count;
  assign fifo_flush = drop;

  loom_fifo #(
    .Width (EntryW),
    .Depth (FifoDepth)
  ) u_fifo (
    .clk_i   (clk_i),
    .rst_ni  (rst_ni),
    .flush_i (fifo_flush),
    .push_i  (push && !drop),
    .wdata_i ({push_resp, head_q, push_insn}),
    .full_o  (fifo_full),
    .pop_i   (insn_valid_o && insn_ready_i),
    .rdata_o (fifo_rdata),
    .empty_o (fifo_empty),
    .count_o (fifo_count)
  );

  assign insn_valid_o  = !fifo_empty;
  assign insn_o        = fifo_rdata[255:0];
  assign pc_o          = fifo_rdata[271:256];
  assign resp_o        = fifo_rdata[273:272];
  assign fifo_count_o  = fifo_count;
  assign ring_head_o   = head_q;
  assign ring_err_pc_o = head_q;
  assign idle_o        = !fetch_more && (state_q == StIdle) && (left_q == '0) && !beats_busy;

  assign m_axi_arvalid = (state_q == StAddr);
  assign m_axi_araddr  = araddr_q;
  assign m_axi_arlen   = arlen_q;
  assign m_axi_arsize  = 3'($clog2(MemBytes));
  assign m_axi_arburst = 2'b01;  // INCR

  `LOOM_ASSERT_INIT(a_membytes_pow2, (MemBytes & (MemBytes - 1)) == 0 && MemBytes >= 4)
  `LOOM_ASSERT_INIT(a_fifo_depth, FifoDepth >= 1 && FifoDepth <= 64)
  `LOOM_ASSERT(a_no_overflow, !(push && !drop && fifo_full))
  `LOOM_ASSERT(a_burst_in_4k, !m_axi_arvalid ||
                              (({1'b0, m_axi_araddr[11:0]} + ((13'(m_axi_arlen) + 13'd1) * 13'(MemBytes))) <= 13'd4096))
  `LOOM_ASSERT(a_ar_stable, !$past(m_axi_arvalid && !m_axi_arready) ||
                            (m_axi_arvalid && $stable(m_axi_araddr) && $stable(m_axi_arlen)))


  // Cover points (coverage build only): states, burst lengths, stalls, flushes.
  `LOOM_COVER_STATES(c_state, state_q, 3)
  `LOOM_COVER_BURST(c_ar, m_axi_arvalid && m_axi_arready, m_axi_arlen)
  `LOOM_COVER(c_ar_stall, m_axi_arvalid && !m_axi_arready)
  `LOOM_COVER(c_r_stall, m_axi_rvalid && !m_axi_rready)
  `LOOM_COVER(c_insn_stall, insn_valid_o && !insn_ready_i)
  `LOOM_COVER(c_fifo_full, fifo_full)
  `LOOM_COVER(c_ring_err, ring_err_o)
  `LOOM_COVER(c_flush_in_burst, flush_i && state_q != StIdle)
  `LOOM_COVER(c_restart_in_burst, restart_i && state_q != StIdle)

endmodule : loom_fetch
