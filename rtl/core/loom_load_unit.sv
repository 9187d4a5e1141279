// LOAD unit: 2-D DMA from device memory (AXI4 read bursts) into the IN, WGT, OUT or PARAM scratchpad.
//
// An accepted LOAD is checked first, in the golden model's order (buffer and
// PARAM alignment -> ILLEGAL_INSN, scratchpad bounds of all pad_lo + rows +
// pad_hi rows -> SCRATCHPAD_OOB, the memory range against the window ->
// WINDOW), then waits for its compute->load token (pop_next), then runs two
// decoupled walkers over the same row list:
//
// - the AR walker issues, per real row, INCR bursts of MemBytes beats from the
//   MemBytes-aligned row start, cut at 256 beats and at 4 KiB boundaries, with
//   up to MaxOutstanding bursts in flight;
// - the row writer walks all rows in order: padding rows write pad_value,
//   real rows take R beats, drop the bytes outside the row and pack the rest
//   into a 2*SpW-byte gather buffer that drains as SpW-byte masked writes to
//   consecutive scratchpad addresses (the scratchpad takes any byte address).
//   Burst boundaries do not matter to it: it only counts bytes per row, so
//   the two walkers agree by construction.
//
// Rows are written in program order, so overlapping scratchpad rows hold the
// later row, as in the golden model. On retire the unit pulses push_next
// (load->compute) with retire_o. An R beat with SLVERR/DECERR raises the cause
// (earlier bytes stay written); the unit then stops issuing, drains the bursts
// in flight and waits for halt_i. halt_i abandons the instruction, draining
// outstanding bursts before going idle; flush_i resets at once and is only
// safe with the AXI port idle (the core's soft reset guarantees that).
//
// Scratchpad side: one write port plus a buffer select (sp_wr_buf_o, a
// loom_pkg::buffer_e value); the core steers it to the selected scratchpad
// and returns that port's grant (always 1 for IN/WGT/PARAM, OUT yields to the
// compute unit). Address, data and mask hold until the grant.
`include "loom_assert.svh"

module loom_load_unit #(
  parameter int unsigned MemBytes       = 8,
  parameter int unsigned SpW            = 16,
  parameter int unsigned InBytes        = 16384,
  parameter int unsigned WgtBytes       = 16384,
  parameter int unsigned OutBytes       = 8192,
  parameter int unsigned ParamBytes     = 4096,
  parameter int unsigned AddrW          = 48,
  parameter int unsigned MaxOutstanding = 4,
  localparam int unsigned MaxSpBytes01  = (InBytes > WgtBytes) ? InBytes : WgtBytes,
  localparam int unsigned MaxSpBytes23  = (OutBytes > ParamBytes) ? OutBytes : ParamBytes,
  localparam int unsigned MaxSpBytes    = (MaxSpBytes01 > MaxSpBytes23) ? MaxSpBytes01 : MaxSpBytes23,
  localparam int unsigned SpAddrW       = $clog2(MaxSpBytes),
  localparam int unsigned NumErrCauses  = loom_pkg::NumErrCauses
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    flush_i,
  input  logic                    halt_i,

  // Instruction.
  input  logic                    insn_valid_i,
  output logic                    insn_ready_o,
  input  logic [255:0]            insn_i,
  input  logic [15:0]             pc_i,

  // Per-core DMA window [win_base, win_limit).
  input  logic [AddrW-1:0]        win_base_i,
  input  logic [AddrW-1:0]        win_limit_i,

  // Dependency tokens: only tok_next (compute) exists for the load unit.
  input  logic                    tok_prev_avail_i,
  input  logic                    tok_next_avail_i,
  output logic                    tok_prev_pop_o,
  output logic                    tok_next_pop_o,
  output logic                    tok_prev_push_o,
  output logic                    tok_next_push_o,

  // Status.
  output logic                    busy_o,
  output logic                    retire_o,
  output logic                    err_o,
  output logic [NumErrCauses-1:0] err_cause_o,
  output logic [15:0]             err_pc_o,

  // Performance counter increments.
  output logic [31:0]             macs_inc_o,
  output logic [31:0]             rd_bytes_inc_o,
  output logic [31:0]             wr_bytes_inc_o,
  output logic                    active_o,
  output logic                    stall_mem_o,
  output logic                    stall_dep_o,

  // Scratchpad write port (steered by sp_wr_buf_o).
  output logic                    sp_wr_req_o,
  output logic [2:0]              sp_wr_buf_o,
  output logic [SpAddrW-1:0]      sp_wr_addr_o,
  output logic [SpW*8-1:0]        sp_wr_data_o,
  output logic [SpW-1:0]          sp_wr_mask_o,
  input  logic                    sp_wr_gnt_i,

  // AXI4 read master.
  output logic                    m_axi_arvalid,
  input  logic                    m_axi_arready,
  output logic [AddrW-1:0]        m_axi_araddr,
  output logic [7:0]              m_axi_arlen,
  output logic [2:0]              m_axi_arsize,
  output logic [1:0]              m_axi_arburst,
  input  logic                    m_axi_rvalid,
  output logic                    m_axi_rready,
  input  logic [MemBytes*8-1:0]   m_axi_rdata,
  input  logic [1:0]              m_axi_rresp,
  input  logic                    m_axi_rlast
);

  localparam int unsigned MemOffW = (MemBytes > 1) ? $clog2(MemBytes) : 1;
  localparam int unsigned DataW   = SpW * 8;
  localparam int unsigned GBytes  = 2 * SpW;                 // gather buffer
  localparam int unsigned GcW     = $clog2(GBytes + 1);
  localparam int unsigned NW      = $clog2(MemBytes + 1);
  localparam int unsigned BeatW   = 18;                      // beats of one row: <= 65535 / MemBytes + 2
  localparam int unsigned OutW    = $clog2(MaxOutstanding + 1);
  localparam int unsigned RowW    = 18;                      // pad_lo + rows + pad_hi
  localparam int unsigned Beats4k = 4096 / MemBytes;

  typedef enum logic [2:0] {
    StIdle,   // ready for an instruction
    StCheck,  // field, bounds and window checks
    StDep,    // waiting for the compute->load token
    StRun,    // moving data
    StErr,    // error raised: drain the bursts in flight, wait for halt_i
    StDrain   // halted: drain the bursts in flight, then idle
  } state_e;

  // ---------------------------------------------------------------------------
  // Instruction register and fields.
  // ---------------------------------------------------------------------------
  state_e         state_d, state_q;
  logic [255:0]   insn_d, insn_q;
  logic [15:0]    pc_d, pc_q;
  logic           accept;

  assign insn_ready_o = (state_q == StIdle) && !halt_i && !flush_i;
  assign accept       = insn_valid_i && insn_ready_o;
  assign insn_d       = accept ? insn_i : insn_q;
  assign pc_d         = accept ? pc_i : pc_q;

  logic [2:0]       f_buf;
  logic [7:0]       f_pad;
  logic [23:0]      f_sp_addr, f_sp_stride;
  logic [47:0]      f_dram_addr;
  logic [15:0]      f_rows, f_cols, f_pad_lo, f_pad_hi;
  logic [31:0]      f_dram_stride;
  logic             f_pop_next, f_push_next;

  assign f_buf         = insn_q[loom_pkg::LOAD_BUF_LSB +: loom_pkg::LOAD_BUF_W];
  assign f_pad         = insn_q[loom_pkg::LOAD_PAD_VALUE_LSB +: loom_pkg::LOAD_PAD_VALUE_W];
  assign f_sp_addr     = insn_q[loom_pkg::LOAD_SP_ADDR_LSB +: loom_pkg::LOAD_SP_ADDR_W];
  assign f_dram_addr   = insn_q[loom_pkg::LOAD_DRAM_ADDR_LSB +: loom_pkg::LOAD_DRAM_ADDR_W];
  assign f_rows        = insn_q[loom_pkg::LOAD_ROWS_LSB +: loom_pkg::LOAD_ROWS_W];
  assign f_cols        = insn_q[loom_pkg::LOAD_COLS_LSB +: loom_pkg::LOAD_COLS_W];
  assign f_pad_lo      = insn_q[loom_pkg::LOAD_PAD_LO_LSB +: loom_pkg::LOAD_PAD_LO_W];
  assign f_pad_hi      = insn_q[loom_pkg::LOAD_PAD_HI_LSB +: loom_pkg::LOAD_PAD_HI_W];
  assign f_dram_stride = insn_q[loom_pkg::LOAD_DRAM_STRIDE_LSB +: loom_pkg::LOAD_DRAM_STRIDE_W];
  assign f_sp_stride   = insn_q[loom_pkg::LOAD_SP_STRIDE_LSB +: loom_pkg::LOAD_SP_STRIDE_W];
  assign f_pop_next    = insn_q[loom_pkg::INSN_POP_NEXT_LSB];
  assign f_push_next   = insn_q[loom_pkg::INSN_PUSH_NEXT_LSB];

  // ---------------------------------------------------------------------------
  // Checks (StCheck), on the latched fields, in the golden model's order.
  // ---------------------------------------------------------------------------
  logic [RowW-1:0]  total;
  logic [43:0]      sp_span, sp_size;
  logic [49:0]      dram_span;
  logic             chk_illegal, chk_oob, chk_window;

  assign total = RowW'(f_pad_lo) + RowW'(f_rows) + RowW'(f_pad_hi);

  always_comb begin
    chk_illegal = 1'b0;
    sp_size     = 44'(InBytes);
    unique case (f_buf)
      3'(loom_pkg::BufIn):    sp_size = 44'(InBytes);
      3'(loom_pkg::BufWgt):   sp_size = 44'(WgtBytes);
      3'(loom_pkg::BufOut):   sp_size = 44'(OutBytes);
      3'(loom_pkg::BufParam): begin
        sp_size     = 44'(ParamBytes);
        chk_illegal = (f_sp_addr[1:0] != 2'b00) || (f_sp_stride[1:0] != 2'b00);
      end
      default:                chk_illegal = 1'b1;
    endcase
  end

  // span_2d(n, stride, cols) = n == 0 || cols == 0 ? 0 : (n - 1) * stride + cols
  assign sp_span   = (total == '0 || f_cols == '0) ? '0
                   : (44'(total) - 44'd1) * 44'(f_sp_stride) + 44'(f_cols);
  assign dram_span = (f_rows == '0 || f_cols == '0) ? '0
                   : (50'(f_rows) - 50'd1) * 50'(f_dram_stride) + 50'(f_cols);
  assign chk_oob    = (sp_span != '0) && ((44'(f_sp_addr) > sp_size) || (sp_span > sp_size - 44'(f_sp_addr)));
  assign chk_window = (dram_span != '0) && ((f_dram_addr < 48'(win_base_i)) ||
                      (50'(f_dram_addr) + dram_span > 50'(win_limit_i)));

  // ---------------------------------------------------------------------------
  // AR walker.
  // ---------------------------------------------------------------------------
  logic [15:0]      ar_rows_d, ar_rows_q;           // real rows not yet set up
  logic [AddrW-1:0] ar_row_addr_d, ar_row_addr_q;   // start of the next real row
  logic [AddrW-1:0] ar_beat_addr_d, ar_beat_addr_q; // next beat address (aligned)
  logic [BeatW-1:0] ar_beats_d, ar_beats_q;         // beats of the current row not yet requested
  logic             arvalid_d, arvalid_q;
  logic [AddrW-1:0] araddr_d, araddr_q;
  logic [7:0]       arlen_d, arlen_q;
  logic [OutW-1:0]  outst_d, outst_q;
  logic             ar_fire, r_fire, r_last_fire;
  logic [AddrW:0]   row_end;
  logic [BeatW-1:0] row_beats, to4k, burst_beats;

  assign ar_fire     = m_axi_arvalid && m_axi_arready;
  assign r_fire      = m_axi_rvalid && m_axi_rready;
  assign r_last_fire = r_fire && m_axi_rlast;

  // Beats from the aligned row start through the beat holding the row's last byte.
  assign row_end   = (AddrW+1)'(ar_row_addr_q) + (AddrW+1)'(f_cols) - (AddrW+1)'(1);
  assign row_beats = BeatW'((row_end >> MemOffW) - ((AddrW+1)'(ar_row_addr_q) >> MemOffW)) + BeatW'(1);
  assign to4k      = BeatW'(Beats4k) - BeatW'(ar_beat_addr_q[11:MemOffW]);

  always_comb begin
    burst_beats = ar_beats_q;
    if (burst_beats > BeatW'(256)) burst_beats = BeatW'(256);
    if (burst_beats > to4k) burst_beats = to4k;
  end

  // ---------------------------------------------------------------------------
  // Row writer.
  // ---------------------------------------------------------------------------
  logic [RowW-1:0]     row_d, row_q;          // current row, 0 .. nrows
  logic [RowW-1:0]     nrows_d, nrows_q;      // rows to write (0 when cols == 0)
  logic [SpAddrW-1:0]  row_sp_d, row_sp_q;    // scratchpad address of the row
  logic [SpAddrW-1:0]  wp_d, wp_q;            // next scratchpad write address
  logic [15:0]         rem_d, rem_q;          // row bytes still to receive (real) or write (pad)
  logic [MemOffW-1:0]  off_d, off_q;          // offset of the row's bytes in its next beat
  logic [AddrW-1:0]    rd_addr_d, rd_addr_q;  // start of the current / next real row
  logic [GBytes*8-1:0] gbuf_d, gbuf_q;
  logic [GcW-1:0]      gcnt_d, gcnt_q;

  logic                row_active, row_pad, row_done, run;
  logic                want_wr, wr_fire, pad_full;
  logic [NW-1:0]       beat_n;
  logic [MemBytes*8-1:0] beat_bytes;
  logic [GcW-1:0]      gcnt_w;
  logic [GBytes*8-1:0] gbuf_w;
  logic [SpW-1:0]      part_mask;

  assign run        = (state_q == StRun);
  assign row_active = run && (row_q != nrows_q);
  assign row_pad    = (row_q < RowW'(f_pad_lo)) || (row_q >= RowW'(f_pad_lo) + RowW'(f_rows));
  assign row_done   = (rem_q == '0) && (row_pad || gcnt_q == '0);
  assign pad_full   = (rem_q >= 16'(SpW));

  // Bytes of the row in the next beat: min(MemBytes - off, rem).
  always_comb begin
    if (16'(MemBytes) - 16'(off_q) < rem_q) begin
      beat_n = NW'(MemBytes - 32'(off_q));
    end else begin
      beat_n = NW'(rem_q);
    end
  end

  always_comb begin
    beat_bytes = m_axi_rdata >> {off_q, 3'b000};
    for (int unsigned b = 0; b < MemBytes; b++) begin
      if (NW'(b) >= beat_n) beat_bytes[b*8 +: 8] = 8'h00;
    end
  end

  // A masked write of the gather buffer's head: full words while the row
  // streams, the remainder once the row's last byte has arrived.
  always_comb begin
    for (int unsigned b = 0; b < SpW; b++) begin
      part_mask[b] = row_pad ? (16'(b) < rem_q) : (GcW'(b) < gcnt_q);
    end
  end

  assign want_wr = row_active && !row_done &&
                   (row_pad || gcnt_q >= GcW'(SpW) || (rem_q == '0 && gcnt_q != '0));
  assign wr_fire = want_wr && sp_wr_gnt_i;

  assign sp_wr_req_o  = want_wr;
  assign sp_wr_buf_o  = f_buf;
  assign sp_wr_addr_o = wp_q;
  assign sp_wr_data_o = row_pad ? {SpW{f_pad}} : gbuf_q[DataW-1:0];
  assign sp_wr_mask_o = (row_pad ? pad_full : gcnt_q >= GcW'(SpW)) ? '1 : part_mask;

  assign m_axi_rready = (row_active && !row_pad && rem_q != '0 && (32'(gcnt_q) + MemBytes <= GBytes)) ||
                        (state_q == StErr) || (state_q == StDrain);

  assign gcnt_w = (wr_fire && !row_pad) ? ((gcnt_q >= GcW'(SpW)) ? gcnt_q - GcW'(SpW) : '0) : gcnt_q;
  assign gbuf_w = (wr_fire && !row_pad) ? (gbuf_q >> DataW) : gbuf_q;

  // ---------------------------------------------------------------------------
  // Errors and retire.
  // ---------------------------------------------------------------------------
  logic                    err_d, err_q;
  logic [NumErrCauses-1:0] cause_d, cause_q;
  logic                    r_err, axi_quiet, all_done, retire;

  assign r_err     = run && r_fire && m_axi_rresp[1];
  assign axi_quiet = !arvalid_q && (outst_q == '0);
  assign all_done  = run && (row_q == nrows_q) && (ar_rows_q == '0) && (ar_beats_q == '0) && axi_quiet;
  assign retire    = all_done && !halt_i && !flush_i;

  // ---------------------------------------------------------------------------
  // Next state.
  // ---------------------------------------------------------------------------
  always_comb begin
    state_d        = state_q;
    err_d          = 1'b0;
    cause_d        = '0;
    ar_rows_d      = ar_rows_q;
    ar_row_addr_d  = ar_row_addr_q;
    ar_beat_addr_d = ar_beat_addr_q;
    ar_beats_d     = ar_beats_q;
    arvalid_d      = arvalid_q;
    araddr_d       = araddr_q;
    arlen_d        = arlen_q;
    outst_d        = outst_q + OutW'(ar_fire) - OutW'(r_last_fire);
    row_d          = row_q;
    nrows_d        = nrows_q;
    row_sp_d       = row_sp_q;
    wp_d           = wp_q;
    rem_d          = rem_q;
    off_d          = off_q;
    rd_addr_d      = rd_addr_q;
    gbuf_d         = gbuf_w;
    gcnt_d         = gcnt_w;

    if (ar_fire) begin
      arvalid_d = 1'b0;
    end

    unique case (state_q)
      StIdle: begin
        if (accept) state_d = StCheck;
      end

      StCheck: begin
        // Walker set-up for the run; harmless if a check fails.
        ar_rows_d     = (f_cols == '0) ? '0 : f_rows;
        ar_row_addr_d = AddrW'(f_dram_addr);
        ar_beats_d    = '0;
        row_d         = '0;
        nrows_d       = (f_cols == '0) ? '0 : total;
        row_sp_d      = SpAddrW'(f_sp_addr);
        wp_d          = SpAddrW'(f_sp_addr);
        rem_d         = f_cols;
        rd_addr_d     = AddrW'(f_dram_addr);
        off_d         = f_dram_addr[MemOffW-1:0];
        gbuf_d        = '0;
        gcnt_d        = '0;
        if (chk_illegal || chk_oob || chk_window) begin
          err_d   = 1'b1;
          cause_d[loom_pkg::ERR_ILLEGAL_INSN]   = chk_illegal;
          cause_d[loom_pkg::ERR_SCRATCHPAD_OOB] = !chk_illegal && chk_oob;
          cause_d[loom_pkg::ERR_WINDOW]         = !chk_illegal && !chk_oob;
          state_d = StErr;
        end else begin
          state_d = StDep;
        end
      end

      StDep: begin
        if (!f_pop_next || tok_next_avail_i) state_d = StRun;
      end

      StRun: begin
        // AR walker: set up the next real row, or launch the next burst.
        if (ar_beats_q == '0 && ar_rows_q != '0) begin
          ar_beat_addr_d = {ar_row_addr_q[AddrW-1:MemOffW], {MemOffW{1'b0}}};
          ar_beats_d     = row_beats;
          ar_row_addr_d  = ar_row_addr_q + AddrW'(f_dram_stride);
          ar_rows_d      = ar_rows_q - 16'd1;
        end else if (ar_beats_q != '0 && !arvalid_q && outst_q < OutW'(MaxOutstanding)) begin
          arvalid_d      = 1'b1;
          araddr_d       = ar_beat_addr_q;
          arlen_d        = 8'(burst_beats - BeatW'(1));
          ar_beat_addr_d = ar_beat_addr_q + (AddrW'(burst_beats) << MemOffW);
          ar_beats_d     = ar_beats_q - burst_beats;
        end

        // Row writer.
        if (wr_fire) begin
          wp_d = wp_q + SpAddrW'(SpW);
          if (row_pad) rem_d = pad_full ? rem_q - 16'(SpW) : '0;
        end
        if (r_fire && !row_pad && row_active) begin
          gbuf_d = gbuf_w | (GBytes*8)'((GBytes*8)'(beat_bytes) << {gcnt_w, 3'b000});
          gcnt_d = gcnt_w + GcW'(beat_n);
          rem_d  = rem_q - 16'(beat_n);
          off_d  = '0;
        end
        if (row_active && row_done) begin
          row_d    = row_q + RowW'(1);
          row_sp_d = row_sp_q + SpAddrW'(f_sp_stride);
          wp_d     = row_sp_q + SpAddrW'(f_sp_stride);
          rem_d    = f_cols;
          if (!row_pad) rd_addr_d = rd_addr_q + AddrW'(f_dram_stride);
          off_d    = row_pad ? rd_addr_q[MemOffW-1:0] : (rd_addr_q[MemOffW-1:0] + f_dram_stride[MemOffW-1:0]);
        end

        if (r_err) begin
          err_d   = 1'b1;
          cause_d[loom_pkg::ERR_AXI_SLVERR] = !m_axi_rresp[0];
          cause_d[loom_pkg::ERR_AXI_DECERR] = m_axi_rresp[0];
          state_d = StErr;
        end else if (all_done) begin
          state_d = StIdle;
        end
      end

      StErr: ;  // wait for halt_i; R beats are drained meanwhile

      StDrain: begin
        if (axi_quiet) state_d = StIdle;
      end

      default: state_d = StIdle;
    endcase

    // halt_i abandons the instruction; bursts already requested are drained.
    if (halt_i && state_q != StIdle) begin
      state_d = axi_quiet ? StIdle : StDrain;
      err_d   = 1'b0;
      // A burst launched this cycle is dropped: it was never offered.
      if (!arvalid_q) arvalid_d = 1'b0;
    end

    if (flush_i) begin
      state_d   = StIdle;
      err_d     = 1'b0;
      arvalid_d = 1'b0;
      outst_d   = '0;
    end
  end

  // ---------------------------------------------------------------------------
  // Registers: control state with reset, datapath reset-free.
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= StIdle;
      err_q     <= 1'b0;
      cause_q   <= '0;
      arvalid_q <= 1'b0;
      outst_q   <= '0;
      ar_rows_q <= '0;
      ar_beats_q <= '0;
      row_q     <= '0;
      nrows_q   <= '0;
      gcnt_q    <= '0;
      rem_q     <= '0;
    end else begin
      state_q   <= state_d;
      err_q     <= err_d;
      cause_q   <= cause_d;
      arvalid_q <= arvalid_d;
      outst_q   <= outst_d;
      ar_rows_q <= ar_rows_d;
      ar_beats_q <= ar_beats_d;
      row_q     <= row_d;
      nrows_q   <= nrows_d;
      gcnt_q    <= gcnt_d;
      rem_q     <= rem_d;
    end
  end

  always_ff @(posedge clk_i) begin
    insn_q         <= insn_d;
    pc_q           <= pc_d;
    ar_row_addr_q  <= ar_row_addr_d;
    ar_beat_addr_q <= ar_beat_addr_d;
    araddr_q       <= araddr_d;
    arlen_q        <= arlen_d;
    row_sp_q       <= row_sp_d;
    wp_q           <= wp_d;
    off_q          <= off_d;
    rd_addr_q      <= rd_addr_d;
    gbuf_q         <= gbuf_d;
  end

  // ---------------------------------------------------------------------------
  // Outputs.
  // ---------------------------------------------------------------------------
  assign m_axi_arvalid  = arvalid_q;
  assign m_axi_araddr   = araddr_q;
  assign m_axi_arlen    = arlen_q;
  assign m_axi_arsize   = 3'(MemOffW);
  assign m_axi_arburst  = 2'b01;  // INCR

  assign tok_prev_pop_o  = 1'b0;
  assign tok_prev_push_o = 1'b0;
  assign tok_next_pop_o  = (state_q == StDep) && f_pop_next && tok_next_avail_i && !halt_i && !flush_i;
  assign tok_next_push_o = retire && f_push_next;

  assign busy_o      = (state_q != StIdle);
  assign retire_o    = retire;
  assign err_o       = err_q;
  assign err_cause_o = cause_q;
  assign err_pc_o    = pc_q;

  assign macs_inc_o     = '0;
  assign wr_bytes_inc_o = '0;
  assign active_o       = 1'b0;
  assign rd_bytes_inc_o = (r_fire && run && !row_pad && row_active) ? 32'(beat_n) : '0;
  assign stall_mem_o    = row_active && !row_pad && rem_q != '0 && !m_axi_rvalid && gcnt_q < GcW'(SpW);
  assign stall_dep_o    = (state_q == StDep) && f_pop_next && !tok_next_avail_i;

  // The load unit has no previous neighbour; opcode and the other flags are the dispatcher's.
  logic unused_inputs;
  assign unused_inputs = ^{tok_prev_avail_i, insn_q};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(MemBytesPow2_A, MemBytes >= 1 && (MemBytes & (MemBytes - 1)) == 0)
  `LOOM_ASSERT_INIT(SpWideEnough_A, SpW >= MemBytes)
  `LOOM_ASSERT_INIT(OutstandingLegal_A, MaxOutstanding >= 1)
  `LOOM_ASSERT(ArHeld_A, m_axi_arvalid && !m_axi_arready && !flush_i |=>
                         m_axi_arvalid && $stable({m_axi_araddr, m_axi_arlen}))
  `LOOM_ASSERT(ArNo4kCross_A, m_axi_arvalid |->
                              32'(m_axi_araddr[11:0]) + (32'(m_axi_arlen) + 1) * MemBytes <= 4096)
  `LOOM_ASSERT(ArAligned_A, m_axi_arvalid |-> m_axi_araddr[MemOffW-1:0] == '0)
  `LOOM_ASSERT(OutstandingBound_A, 32'(outst_q) + 32'(arvalid_q) <= MaxOutstanding)
  `LOOM_ASSERT(RBeatExpected_A, m_axi_rvalid |-> outst_q != '0)
  `LOOM_ASSERT(GatherNoOverflow_A, gcnt_q <= GcW'(GBytes))
  `LOOM_ASSERT(SpWrHeld_A, sp_wr_req_o && !sp_wr_gnt_i && !halt_i && !flush_i && !r_err |=>
                           sp_wr_req_o && $stable({sp_wr_addr_o, sp_wr_data_o, sp_wr_mask_o}))
  `LOOM_ASSERT(ArOnlyWhenChecked_A, m_axi_arvalid |-> state_q inside {StRun, StErr, StDrain})


  // Cover points (coverage build only): states, burst lengths, bursts in flight, stalls.
  `LOOM_COVER_STATES(c_state, state_q, 6)
  `LOOM_COVER_BURST(c_ar, ar_fire, m_axi_arlen)
  `LOOM_COVER_LEVEL(c_outst, outst_q, MaxOutstanding)
  `LOOM_COVER(c_ar_stall, m_axi_arvalid && !m_axi_arready)
  `LOOM_COVER(c_r_stall, m_axi_rvalid && !m_axi_rready)
  `LOOM_COVER(c_sp_wr_stall, sp_wr_req_o && !sp_wr_gnt_i)

endmodule
