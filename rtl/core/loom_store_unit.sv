// STORE unit: 2-D DMA from the OUT or ACC scratchpad to device memory as AXI4 write bursts.
//
// An accepted STORE is checked first, in the golden model's order (buffer
// OUT/ACC and ACC alignment -> ILLEGAL_INSN, scratchpad bounds ->
// SCRATCHPAD_OOB, the memory range against the window -> WINDOW), then waits
// for its compute->store token (pop_prev), then walks the rows: per row, INCR
// bursts of MemBytes beats from the MemBytes-aligned row start, cut at 256
// beats and at 4 KiB boundaries. Each beat is one scratchpad read of the SpW
// bytes at sp_row + (beat address - dram_row): the scratchpad takes any byte
// address, so no realignment buffer is needed, and bytes outside the row are
// masked off with WSTRB (the first beat's address may lie before the row; it
// wraps harmlessly since those bytes are masked). Read data lands a cycle
// after the grant in a small W FIFO; W beats of a burst wait until its AW has
// been accepted. Up to MaxOutstanding bursts await their B response.
//
// On retire the unit pulses push_prev (store->compute) with retire_o. A B
// response with SLVERR/DECERR raises the cause when it arrives (earlier
// bursts stay written); the unit then stops starting bursts, finishes the W
// beats of bursts already announced, collects their responses and waits for
// halt_i. halt_i abandons the instruction the same way; flush_i resets at
// once and is only safe with the AXI port idle.
//
// Scratchpad side: the OUT and ACC read ports, each with a request, a byte
// address and a grant (the compute unit has priority on ACC); read data is
// taken the cycle after a granted request.
`include "loom_assert.svh"

module loom_store_unit #(
  parameter int unsigned MemBytes       = 8,
  parameter int unsigned SpW            = 16,
  parameter int unsigned AccBytes       = 16384,
  parameter int unsigned OutBytes       = 8192,
  parameter int unsigned AddrW          = 48,
  parameter int unsigned MaxOutstanding = 4,
  localparam int unsigned AccAddrW      = $clog2(AccBytes),
  localparam int unsigned OutAddrW      = $clog2(OutBytes),
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

  // Dependency tokens: only tok_prev (compute) exists for the store unit.
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

  // Scratchpad read ports.
  output logic                    out_rd_req_o,
  output logic [OutAddrW-1:0]     out_rd_addr_o,
  input  logic                    out_rd_gnt_i,
  input  logic [SpW*8-1:0]        out_rd_data_i,
  output logic                    acc_rd_req_o,
  output logic [AccAddrW-1:0]     acc_rd_addr_o,
  input  logic                    acc_rd_gnt_i,
  input  logic [SpW*8-1:0]        acc_rd_data_i,

  // AXI4 write master.
  output logic                    m_axi_awvalid,
  input  logic                    m_axi_awready,
  output logic [AddrW-1:0]        m_axi_awaddr,
  output logic [7:0]              m_axi_awlen,
  output logic [2:0]              m_axi_awsize,
  output logic [1:0]              m_axi_awburst,
  output logic                    m_axi_wvalid,
  input  logic                    m_axi_wready,
  output logic [MemBytes*8-1:0]   m_axi_wdata,
  output logic [MemBytes-1:0]     m_axi_wstrb,
  output logic                    m_axi_wlast,
  input  logic                    m_axi_bvalid,
  output logic                    m_axi_bready,
  input  logic [1:0]              m_axi_bresp
);

  localparam int unsigned MemOffW   = (MemBytes > 1) ? $clog2(MemBytes) : 1;
  localparam int unsigned NW        = $clog2(MemBytes + 1);
  localparam int unsigned BeatW     = 18;
  localparam int unsigned PosW      = 20;   // signed byte position in the row: -(MemBytes-1) .. cols + MemBytes
  localparam int unsigned OutW      = $clog2(MaxOutstanding + 1);
  localparam int unsigned Beats4k   = 4096 / MemBytes;
  localparam int unsigned FifoDepth = 4;    // covers the read latency at one beat per cycle
  localparam int unsigned FifoPtrW  = $clog2(FifoDepth);
  localparam int unsigned FifoCntW  = $clog2(FifoDepth + 1);
  localparam int unsigned EntryW    = MemBytes * 8 + MemBytes + 1 + NW;  // data, strb, last, bytes

  typedef enum logic [2:0] {
    StIdle,   // ready for an instruction
    StCheck,  // field, bounds and window checks
    StDep,    // waiting for the compute->store token
    StRun,    // moving data
    StErr,    // error raised: finish announced bursts, wait for halt_i
    StDrain   // halted: finish announced bursts, then idle
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

  logic [2:0]   f_buf;
  logic [23:0]  f_sp_addr, f_sp_stride;
  logic [47:0]  f_dram_addr;
  logic [15:0]  f_rows, f_cols;
  logic [31:0]  f_dram_stride;
  logic         f_pop_prev, f_push_prev, f_is_acc;

  assign f_buf         = insn_q[loom_pkg::STORE_BUF_LSB +: loom_pkg::STORE_BUF_W];
  assign f_sp_addr     = insn_q[loom_pkg::STORE_SP_ADDR_LSB +: loom_pkg::STORE_SP_ADDR_W];
  assign f_dram_addr   = insn_q[loom_pkg::STORE_DRAM_ADDR_LSB +: loom_pkg::STORE_DRAM_ADDR_W];
  assign f_rows        = insn_q[loom_pkg::STORE_ROWS_LSB +: loom_pkg::STORE_ROWS_W];
  assign f_cols        = insn_q[loom_pkg::STORE_COLS_LSB +: loom_pkg::STORE_COLS_W];
  assign f_dram_stride = insn_q[loom_pkg::STORE_DRAM_STRIDE_LSB +: loom_pkg::STORE_DRAM_STRIDE_W];
  assign f_sp_stride   = insn_q[loom_pkg::STORE_SP_STRIDE_LSB +: loom_pkg::STORE_SP_STRIDE_W];
  assign f_pop_prev    = insn_q[loom_pkg::INSN_POP_PREV_LSB];
  assign f_push_prev   = insn_q[loom_pkg::INSN_PUSH_PREV_LSB];
  assign f_is_acc      = (f_buf == 3'(loom_pkg::BufAcc));

  // ---------------------------------------------------------------------------
  // Checks (StCheck), on the latched fields, in the golden model's order.
  // ---------------------------------------------------------------------------
  logic [43:0] sp_span, sp_size;
  logic [49:0] dram_span;
  logic        chk_illegal, chk_oob, chk_window;

  always_comb begin
    chk_illegal = 1'b0;
    sp_size     = 44'(OutBytes);
    unique case (f_buf)
      3'(loom_pkg::BufOut): sp_size = 44'(OutBytes);
      3'(loom_pkg::BufAcc): begin
        sp_size     = 44'(AccBytes);
        chk_illegal = (f_sp_addr[1:0] != 2'b00) || (f_sp_stride[1:0] != 2'b00);
      end
      default:              chk_illegal = 1'b1;
    endcase
  end

  // span_2d(rows, stride, cols) = rows == 0 || cols == 0 ? 0 : (rows - 1) * stride + cols
  assign sp_span    = (f_rows == '0 || f_cols == '0) ? '0
                    : (44'(f_rows) - 44'd1) * 44'(f_sp_stride) + 44'(f_cols);
  assign dram_span  = (f_rows == '0 || f_cols == '0) ? '0
                    : (50'(f_rows) - 50'd1) * 50'(f_dram_stride) + 50'(f_cols);
  assign chk_oob    = (sp_span != '0) && ((44'(f_sp_addr) > sp_size) || (sp_span > sp_size - 44'(f_sp_addr)));
  assign chk_window = (dram_span != '0) && ((f_dram_addr < 48'(win_base_i)) ||
                      (50'(f_dram_addr) + dram_span > 50'(win_limit_i)));

  // ---------------------------------------------------------------------------
  // Row and burst walker.
  // ---------------------------------------------------------------------------
  logic [15:0]            rows_left_d, rows_left_q;   // rows not yet set up
  logic [AddrW-1:0]       next_d_d, next_d_q;         // dram address of the next row
  logic [23:0]            next_s_d, next_s_q;         // scratchpad address of the next row
  logic [23:0]            cur_s_d, cur_s_q;           // scratchpad address of the current row
  logic [AddrW-1:0]       beat_addr_d, beat_addr_q;   // next beat address (aligned)
  logic signed [PosW-1:0] pos_d, pos_q;               // beat_addr - dram row address
  logic [BeatW-1:0]       beats_row_d, beats_row_q;   // beats of the row not yet started in a burst
  logic [8:0]             beats_burst_d, beats_burst_q; // beats of the announced burst not yet read
  logic                   awvalid_d, awvalid_q;
  logic [AddrW-1:0]       awaddr_d, awaddr_q;
  logic [7:0]             awlen_d, awlen_q;
  logic [OutW-1:0]        outst_d, outst_q;           // bursts announced, B not yet received
  logic [OutW-1:0]        aw_ahead_d, aw_ahead_q;     // AW accepted, WLAST not yet sent

  logic [AddrW:0]         row_end;
  logic [BeatW-1:0]       row_beats, to4k, burst_beats;
  logic                   aw_fire, w_fire, b_fire, run, issuing;

  assign aw_fire = m_axi_awvalid && m_axi_awready;
  assign w_fire  = m_axi_wvalid && m_axi_wready;
  assign b_fire  = m_axi_bvalid && m_axi_bready;
  assign run     = (state_q == StRun);
  // Beats of an announced burst are read in every busy state, so a burst
  // whose AW is out always gets its W beats.
  assign issuing = (state_q == StRun || state_q == StErr || state_q == StDrain) && (beats_burst_q != '0);

  assign row_end   = (AddrW+1)'(next_d_q) + (AddrW+1)'(f_cols) - (AddrW+1)'(1);
  assign row_beats = BeatW'((row_end >> MemOffW) - ((AddrW+1)'(next_d_q) >> MemOffW)) + BeatW'(1);
  assign to4k      = BeatW'(Beats4k) - BeatW'(beat_addr_q[11:MemOffW]);

  always_comb begin
    burst_beats = beats_row_q;
    if (burst_beats > BeatW'(256)) burst_beats = BeatW'(256);
    if (burst_beats > to4k) burst_beats = to4k;
  end

  // ---------------------------------------------------------------------------
  // Scratchpad reads and the W FIFO.
  // ---------------------------------------------------------------------------
  logic                      p_valid_d, p_valid_q;   // read granted last cycle
  logic [MemBytes-1:0]       p_strb_d, p_strb_q;
  logic                      p_last_d, p_last_q;
  logic [NW-1:0]             p_n_d, p_n_q;
  logic [MemBytes-1:0]       strb;
  logic [NW-1:0]             strb_n;
  logic [FifoCntW-1:0]       fcnt_d, fcnt_q;
  logic [FifoPtrW-1:0]       fwr_d, fwr_q, frd_d, frd_q;
  logic [FifoDepth*EntryW-1:0] fifo_d, fifo_q;
  logic [EntryW-1:0]         f_head;
  logic                      rd_req, rd_gnt, rd_fire, credit;
  logic [23:0]               rd_addr;
  logic [SpW*8-1:0]          rd_data;

  // Byte b of the beat belongs to the row when 0 <= pos + b < cols.
  logic signed [PosW-1:0] bpos;
  always_comb begin
    strb_n = '0;
    bpos   = pos_q;
    for (int unsigned b = 0; b < MemBytes; b++) begin
      bpos    = pos_q + $signed(PosW'(b));
      strb[b] = !bpos[PosW-1] && (bpos < $signed(PosW'(f_cols)));
      strb_n  = strb_n + NW'(strb[b]);
    end
  end

  assign credit  = (32'(fcnt_q) + 32'(p_valid_q)) < FifoDepth;
  assign rd_req  = issuing && credit;
  assign rd_addr = cur_s_q + 24'(pos_q);
  assign rd_gnt  = f_is_acc ? acc_rd_gnt_i : out_rd_gnt_i;
  assign rd_fire = rd_req && rd_gnt;
  assign rd_data = f_is_acc ? acc_rd_data_i : out_rd_data_i;

  assign out_rd_req_o  = rd_req && !f_is_acc;
  assign out_rd_addr_o = OutAddrW'(rd_addr);
  assign acc_rd_req_o  = rd_req && f_is_acc;
  assign acc_rd_addr_o = AccAddrW'(rd_addr);

  assign f_head = fifo_q[frd_q*EntryW +: EntryW];

  // ---------------------------------------------------------------------------
  // Errors and retire.
  // ---------------------------------------------------------------------------
  logic                    err_d, err_q;
  logic [NumErrCauses-1:0] cause_d, cause_q;
  logic                    b_err, axi_quiet, all_done, retire;

  assign b_err     = run && b_fire && m_axi_bresp[1];
  assign axi_quiet = (beats_burst_q == '0) && !p_valid_q && (fcnt_q == '0) && !awvalid_q && (outst_q == '0);
  assign all_done  = run && (rows_left_q == '0) && (beats_row_q == '0) && axi_quiet;
  assign retire    = all_done && !halt_i && !flush_i;

  // ---------------------------------------------------------------------------
  // Next state.
  // ---------------------------------------------------------------------------
  always_comb begin
    state_d       = state_q;
    err_d         = 1'b0;
    cause_d       = '0;
    rows_left_d   = rows_left_q;
    next_d_d      = next_d_q;
    next_s_d      = next_s_q;
    cur_s_d       = cur_s_q;
    beat_addr_d   = beat_addr_q;
    pos_d         = pos_q;
    beats_row_d   = beats_row_q;
    beats_burst_d = beats_burst_q;
    awvalid_d     = awvalid_q && !aw_fire;
    awaddr_d      = awaddr_q;
    awlen_d       = awlen_q;
    outst_d       = outst_q + OutW'(aw_fire) - OutW'(b_fire);
    aw_ahead_d    = aw_ahead_q + OutW'(aw_fire) - OutW'(w_fire && m_axi_wlast);
    p_valid_d     = rd_fire;
    p_strb_d      = strb;
    p_last_d      = (beats_burst_q == 9'd1);
    p_n_d         = strb_n;
    fifo_d        = fifo_q;
    fwr_d         = fwr_q;
    frd_d         = frd_q;
    fcnt_d        = fcnt_q + FifoCntW'(p_valid_q) - FifoCntW'(w_fire);

    // W FIFO: read data arrives the cycle after the grant.
    if (p_valid_q) begin
      fifo_d[fwr_q*EntryW +: EntryW] = {p_n_q, p_last_q, p_strb_q, rd_data[MemBytes*8-1:0]};
      fwr_d = fwr_q + FifoPtrW'(1);
    end
    if (w_fire) begin
      frd_d = frd_q + FifoPtrW'(1);
    end

    // Beat reads of the announced burst.
    if (rd_fire) begin
      beat_addr_d   = beat_addr_q + AddrW'(MemBytes);
      pos_d         = pos_q + PosW'(MemBytes);
      beats_burst_d = beats_burst_q - 9'd1;
    end

    unique case (state_q)
      StIdle: begin
        if (accept) state_d = StCheck;
      end

      StCheck: begin
        rows_left_d   = (f_cols == '0) ? '0 : f_rows;
        next_d_d      = AddrW'(f_dram_addr);
        next_s_d      = f_sp_addr;
        beats_row_d   = '0;
        beats_burst_d = '0;
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
        if (!f_pop_prev || tok_prev_avail_i) state_d = StRun;
      end

      StRun: begin
        if (beats_burst_q == '0) begin
          if (beats_row_q == '0) begin
            if (rows_left_q != '0) begin
              // Next row: its aligned first beat, and how far it starts before the row.
              cur_s_d     = next_s_q;
              beat_addr_d = {next_d_q[AddrW-1:MemOffW], {MemOffW{1'b0}}};
              pos_d       = -$signed(PosW'(next_d_q[MemOffW-1:0]));
              beats_row_d = row_beats;
              next_d_d    = next_d_q + AddrW'(f_dram_stride);
              next_s_d    = next_s_q + f_sp_stride;
              rows_left_d = rows_left_q - 16'd1;
            end
          end else if (!awvalid_q && outst_q < OutW'(MaxOutstanding)) begin
            awvalid_d     = 1'b1;
            awaddr_d      = beat_addr_q;
            awlen_d       = 8'(burst_beats - BeatW'(1));
            beats_burst_d = 9'(burst_beats);
            beats_row_d   = beats_row_q - burst_beats;
          end
        end

        if (b_err) begin
          err_d   = 1'b1;
          cause_d[loom_pkg::ERR_AXI_SLVERR] = !m_axi_bresp[0];
          cause_d[loom_pkg::ERR_AXI_DECERR] = m_axi_bresp[0];
          state_d = StErr;
        end else if (all_done) begin
          state_d = StIdle;
        end
      end

      StErr: ;  // wait for halt_i; announced bursts finish meanwhile

      StDrain: begin
        if (axi_quiet) state_d = StIdle;
      end

      default: state_d = StIdle;
    endcase

    if (halt_i && state_q != StIdle) begin
      state_d = axi_quiet ? StIdle : StDrain;
      err_d   = 1'b0;
      // A burst launched this cycle is dropped: it was never offered.
      if (!awvalid_q && beats_burst_q == '0) begin
        awvalid_d     = 1'b0;
        beats_burst_d = '0;
      end
    end

    if (flush_i) begin
      state_d       = StIdle;
      err_d         = 1'b0;
      awvalid_d     = 1'b0;
      outst_d       = '0;
      aw_ahead_d    = '0;
      beats_burst_d = '0;
      p_valid_d     = 1'b0;
      fcnt_d        = '0;
      fwr_d         = '0;
      frd_d         = '0;
    end
  end

  // ---------------------------------------------------------------------------
  // Registers: control state with reset, datapath reset-free.
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q       <= StIdle;
      err_q         <= 1'b0;
      cause_q       <= '0;
      rows_left_q   <= '0;
      beats_row_q   <= '0;
      beats_burst_q <= '0;
      awvalid_q     <= 1'b0;
      outst_q       <= '0;
      aw_ahead_q    <= '0;
      p_valid_q     <= 1'b0;
      fcnt_q        <= '0;
      fwr_q         <= '0;
      frd_q         <= '0;
    end else begin
      state_q       <= state_d;
      err_q         <= err_d;
      cause_q       <= cause_d;
      rows_left_q   <= rows_left_d;
      beats_row_q   <= beats_row_d;
      beats_burst_q <= beats_burst_d;
      awvalid_q     <= awvalid_d;
      outst_q       <= outst_d;
      aw_ahead_q    <= aw_ahead_d;
      p_valid_q     <= p_valid_d;
      fcnt_q        <= fcnt_d;
      fwr_q         <= fwr_d;
      frd_q         <= frd_d;
    end
  end

  always_ff @(posedge clk_i) begin
    insn_q      <= insn_d;
    pc_q        <= pc_d;
    next_d_q    <= next_d_d;
    next_s_q    <= next_s_d;
    cur_s_q     <= cur_s_d;
    beat_addr_q <= beat_addr_d;
    pos_q       <= pos_d;
    awaddr_q    <= awaddr_d;
    awlen_q     <= awlen_d;
    p_strb_q    <= p_strb_d;
    p_last_q    <= p_last_d;
    p_n_q       <= p_n_d;
    fifo_q      <= fifo_d;
  end

  // ---------------------------------------------------------------------------
  // Outputs.
  // ---------------------------------------------------------------------------
  logic [NW-1:0] head_n;

  assign m_axi_awvalid = awvalid_q;
  assign m_axi_awaddr  = awaddr_q;
  assign m_axi_awlen   = awlen_q;
  assign m_axi_awsize  = 3'(MemOffW);
  assign m_axi_awburst = 2'b01;  // INCR
  assign m_axi_wvalid  = (fcnt_q != '0) && (aw_ahead_q != '0);
  assign {head_n, m_axi_wlast, m_axi_wstrb, m_axi_wdata} = f_head;
  assign m_axi_bready  = 1'b1;

  assign tok_next_pop_o  = 1'b0;
  assign tok_next_push_o = 1'b0;
  assign tok_prev_pop_o  = (state_q == StDep) && f_pop_prev && tok_prev_avail_i && !halt_i && !flush_i;
  assign tok_prev_push_o = retire && f_push_prev;

  assign busy_o      = (state_q != StIdle);
  assign retire_o    = retire;
  assign err_o       = err_q;
  assign err_cause_o = cause_q;
  assign err_pc_o    = pc_q;

  assign macs_inc_o     = '0;
  assign rd_bytes_inc_o = '0;
  assign wr_bytes_inc_o = w_fire ? 32'(head_n) : '0;
  assign active_o       = 1'b0;
  assign stall_mem_o    = run && ((m_axi_wvalid && !m_axi_wready) || (m_axi_awvalid && !m_axi_awready) ||
                                  (rows_left_q == '0 && beats_row_q == '0 && beats_burst_q == '0 &&
                                   !p_valid_q && fcnt_q == '0 && outst_q != '0));
  assign stall_dep_o    = (state_q == StDep) && f_pop_prev && !tok_prev_avail_i;

  // The store unit has no next neighbour; a beat uses MemBytes of the SpW read
  // bytes; addresses above a scratchpad's size are excluded by the bounds check.
  logic unused_inputs;
  assign unused_inputs = ^{tok_next_avail_i, insn_q, rd_data, rd_addr};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(MemBytesPow2_A, MemBytes >= 1 && (MemBytes & (MemBytes - 1)) == 0)
  `LOOM_ASSERT_INIT(SpWideEnough_A, SpW >= MemBytes)
  `LOOM_ASSERT_INIT(OutstandingLegal_A, MaxOutstanding >= 1)
  `LOOM_ASSERT(AwHeld_A, m_axi_awvalid && !m_axi_awready && !flush_i |=>
                         m_axi_awvalid && $stable({m_axi_awaddr, m_axi_awlen}))
  `LOOM_ASSERT(WHeld_A, m_axi_wvalid && !m_axi_wready && !flush_i |=>
                        m_axi_wvalid && $stable({m_axi_wdata, m_axi_wstrb, m_axi_wlast}))
  `LOOM_ASSERT(AwNo4kCross_A, m_axi_awvalid |->
                              32'(m_axi_awaddr[11:0]) + (32'(m_axi_awlen) + 1) * MemBytes <= 4096)
  `LOOM_ASSERT(AwAligned_A, m_axi_awvalid |-> m_axi_awaddr[MemOffW-1:0] == '0)
  `LOOM_ASSERT(FifoNoOverflow_A, fcnt_q <= FifoCntW'(FifoDepth))
  `LOOM_ASSERT(BExpected_A, m_axi_bvalid |-> outst_q != '0)
  `LOOM_ASSERT(AwOnlyWhenChecked_A, m_axi_awvalid |-> state_q inside {StRun, StErr, StDrain})


  // Cover points (coverage build only): states, burst lengths, bursts in flight, stalls.
  `LOOM_COVER_STATES(c_state, state_q, 6)
  `LOOM_COVER_BURST(c_aw, aw_fire, m_axi_awlen)
  `LOOM_COVER_LEVEL(c_outst, outst_q, MaxOutstanding)
  `LOOM_COVER(c_aw_stall, m_axi_awvalid && !m_axi_awready)
  `LOOM_COVER(c_w_stall, m_axi_wvalid && !m_axi_wready)
  `LOOM_COVER(c_b_stall, m_axi_bvalid && !m_axi_bready)

endmodule
