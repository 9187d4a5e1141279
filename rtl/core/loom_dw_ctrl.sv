// DWCONV controller of the compute unit: depthwise convolution, SpW channels a cycle, into ACC.
//
// Every product of a depthwise convolution belongs to one channel, so the
// controller works lane by lane: SpW lanes, lane j holding channel j0 + j of
// the chunk in flight. A cycle reads SpW input bytes of one window pixel
// (IN) and the SpW weights of the matching tap (WGT) side by side; the
// cycle after, each lane forms (x - a_zp) * (w - b_zp), a 9 x 9-bit signed
// product, and adds it to its accumulator. The walk is the golden model's:
// output pixels in order, each in chunks of SpW channels (the last one
// partial: its lanes past c are computed but never written), and inside a
// chunk the kh * kw taps row-major, so a chunk takes kh * kw reads.
//
// With the chunk's last product the sums go straight into a result register
// (the accumulators restart from the next chunk's first product), and a
// writer stores them to ACC as ceil(4 * len / SpW) SpW-byte writes, the
// last byte-masked, while the next chunk accumulates. The output is dense
// (pixel after pixel, c words each), so the write address just runs on from
// acc_addr. The reader stalls a chunk's last read until the writer will be
// done with the result register when that read's product lands: a countdown
// loaded with the chunk's writes minus one at its last read. So a chunk
// costs max(taps, writes of the chunk before) cycles; with 3 x 3 kernels
// (9 taps, at most 4 writes) the reader never waits.
//
// |x - a_zp| and |w - b_zp| are at most 255 and there are at most 225 taps,
// so a channel's sum has at most 25 significant bits: the accumulators and
// the result register are 25 bits a lane, sign-extended to 32 when written
// (the golden model's sums are exact in int32, so nothing wraps).
//
// Address generation uses only incremental adders, modulo the scratchpad
// size (the unit's bounds check has already placed every access inside):
// the window pixel steps by c, the tap row by ldi, the chunk by SpW, the
// WGT pointer by c from tap to tap. The pixel step stride * c and the row
// step stride * ldi are formed once per instruction by a shift-and-add over
// stride's four bits (the start cycle and three setup cycles), so no
// multiplier sits on an address.
//
// abort_i (halt/flush) drops the walk, the product in flight and the
// writer's remaining writes at once; the next instruction's first product
// restarts the accumulators, so nothing stale can reach it.
`include "loom_assert.svh"

module loom_dw_ctrl #(
  parameter int unsigned SpW   = 16,
  parameter int unsigned InAw  = 14,
  parameter int unsigned WgtAw = 14,
  parameter int unsigned AccAw = 14
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,

  input  logic                 start_i,    // insn_i holds a checked, non-empty DWCONV, stable until idle
  input  logic                 abort_i,    // halt/flush: stop and go idle
  input  logic [255:0]         insn_i,
  output logic                 busy_o,
  output logic                 done_o,     // 1-cycle pulse: every result is written
  output logic                 active_o,
  output logic [31:0]          macs_inc_o,

  output logic                 in_rd_req_o,
  output logic [InAw-1:0]      in_rd_addr_o,
  input  logic [SpW*8-1:0]     in_rd_data_i,

  output logic                 wgt_rd_req_o,
  output logic [WgtAw-1:0]     wgt_rd_addr_o,
  input  logic [SpW*8-1:0]     wgt_rd_data_i,

  output logic                 acc_wr_req_o,
  output logic [AccAw-1:0]     acc_wr_addr_o,
  output logic [SpW*8-1:0]     acc_wr_data_o,
  output logic [SpW-1:0]       acc_wr_mask_o
);

  localparam int unsigned SumW  = 25;               // a lane's sum (see header)
  localparam int unsigned LenW  = $clog2(SpW) + 1;  // chunk length 1..SpW
  localparam int unsigned WbW   = $clog2(SpW) + 3;  // writer bytes left, 0..4 * SpW
  localparam int unsigned OffW  = $clog2(SpW);
  localparam int unsigned Words = SpW / 4;          // int32 words a write

  typedef enum logic [1:0] {
    DIdle,
    DSetup,  // stride * c and stride * ldi, one bit of stride a cycle
    DRun,    // one IN and one WGT read a cycle
    DWait    // every read issued: wait for the last product and the writer
  } dw_e;

  // ---------------------------------------------------------------------------
  // Instruction fields.
  // ---------------------------------------------------------------------------
  logic [3:0]        f_kh, f_kw, f_stride;
  logic [InAw-1:0]   f_in, f_ldi, f_c_in;
  logic [WgtAw-1:0]  f_wgt, f_c_wgt;
  logic [AccAw-1:0]  f_acc;
  logic [15:0]       f_c, f_ow, f_oh;
  logic signed [7:0] f_azp, f_bzp;
  assign f_kh     = insn_i[loom_pkg::DWCONV_KH_LSB +: loom_pkg::DWCONV_KH_W];
  assign f_kw     = insn_i[loom_pkg::DWCONV_KW_LSB +: loom_pkg::DWCONV_KW_W];
  assign f_stride = insn_i[loom_pkg::DWCONV_STRIDE_LSB +: loom_pkg::DWCONV_STRIDE_W];
  assign f_in     = insn_i[loom_pkg::DWCONV_IN_ADDR_LSB +: InAw];
  assign f_wgt    = insn_i[loom_pkg::DWCONV_WGT_ADDR_LSB +: WgtAw];
  assign f_acc    = insn_i[loom_pkg::DWCONV_ACC_ADDR_LSB +: AccAw];
  assign f_ldi    = insn_i[loom_pkg::DWCONV_LDI_LSB +: InAw];
  assign f_c      = insn_i[loom_pkg::DWCONV_C_LSB +: loom_pkg::DWCONV_C_W];
  assign f_ow     = insn_i[loom_pkg::DWCONV_OW_LSB +: loom_pkg::DWCONV_OW_W];
  assign f_oh     = insn_i[loom_pkg::DWCONV_OH_LSB +: loom_pkg::DWCONV_OH_W];
  assign f_azp    = insn_i[loom_pkg::DWCONV_A_ZP_LSB +: loom_pkg::DWCONV_A_ZP_W];
  assign f_bzp    = insn_i[loom_pkg::DWCONV_B_ZP_LSB +: loom_pkg::DWCONV_B_ZP_W];
  // c modulo the address spaces (addresses wrap; the check keeps them inside).
  assign f_c_in   = InAw'(32'(f_c));
  assign f_c_wgt  = WgtAw'(32'(f_c));

  // ---------------------------------------------------------------------------
  // State. Control state is reset; the walk and the lanes are not.
  // ---------------------------------------------------------------------------
  dw_e                 st_d, st_q;
  logic [1:0]          sbit_d, sbit_q;          // next stride bit of the setup
  logic [InAw-1:0]     sx_d, sx_q, sy_d, sy_q;  // stride * c, stride * ldi
  // Reader: output row and pixel corners, chunk base, tap row, read pointers.
  logic [InAw-1:0]     row_d, row_q, pix_d, pix_q, cin_d, cin_q, trow_d, trow_q, iptr_d, iptr_q;
  logic [WgtAw-1:0]    wch_d, wch_q, wptr_d, wptr_q;
  logic [15:0]         crem_d, crem_q;          // channels from this chunk on
  logic [15:0]         ox_d, ox_q, oy_d, oy_q;
  logic [3:0]          kx_d, kx_q, ky_d, ky_q;
  logic [1:0]          gap_d, gap_q;            // cycles before a chunk's last read may go
  // Product stage: the data of the read issued last cycle is on the ports.
  logic                p1_d, p1_q, p1_first_d, p1_first_q, p1_last_d, p1_last_q;
  logic [LenW-1:0]     p1_len_d, p1_len_q;
  logic [SpW*SumW-1:0] acc_d, acc_q, res_d, res_q;
  // Writer.
  logic [WbW-1:0]      wb_d, wb_q;              // bytes of the result still to write
  logic [1:0]          wk_d, wk_q;              // next SpW-byte word of the result
  logic [AccAw-1:0]    wa_d, wa_q;

  // The chunk being read: its length, its writes minus one.
  logic [LenW-1:0] len;
  logic [1:0]      wlast;
  logic            tap_first, tap_last, kx_end, ky_end, more_chunks, ox_end, oy_end;
  assign len         = (crem_q > 16'(SpW)) ? LenW'(SpW) : LenW'(crem_q);
  assign wlast       = 2'((({2'b00, len} << 2) - (LenW + 2)'(1)) >> OffW);
  assign kx_end      = (kx_q == f_kw - 4'd1);
  assign ky_end      = (ky_q == f_kh - 4'd1);
  assign tap_first   = (kx_q == 4'd0) && (ky_q == 4'd0);
  assign tap_last    = kx_end && ky_end;
  assign more_chunks = (crem_q > 16'(SpW));
  assign ox_end      = (ox_q == f_ow - 16'd1);
  assign oy_end      = (oy_q == f_oh - 16'd1);

  logic issue;
  assign issue = (st_q == DRun) && !(tap_last && gap_q != 2'd0);

  // ---------------------------------------------------------------------------
  // Reader.
  // ---------------------------------------------------------------------------
  always_comb begin
    st_d       = st_q;
    sbit_d     = sbit_q;
    sx_d       = sx_q;
    sy_d       = sy_q;
    row_d      = row_q;
    pix_d      = pix_q;
    cin_d      = cin_q;
    trow_d     = trow_q;
    iptr_d     = iptr_q;
    wch_d      = wch_q;
    wptr_d     = wptr_q;
    crem_d     = crem_q;
    ox_d       = ox_q;
    oy_d       = oy_q;
    kx_d       = kx_q;
    ky_d       = ky_q;
    gap_d      = (gap_q != 2'd0) ? gap_q - 2'd1 : 2'd0;
    p1_d       = 1'b0;
    p1_first_d = tap_first;
    p1_last_d  = tap_last;
    p1_len_d   = len;
    done_o     = 1'b0;
    macs_inc_o = '0;
    in_rd_req_o   = issue;
    in_rd_addr_o  = iptr_q;
    wgt_rd_req_o  = issue;
    wgt_rd_addr_o = wptr_q;

    unique case (st_q)
      DIdle: begin
        if (start_i) begin
          // Stride's top bit; DSetup adds the other three.
          sx_d   = f_stride[3] ? f_c_in : '0;
          sy_d   = f_stride[3] ? f_ldi : '0;
          sbit_d = 2'd2;
          row_d  = f_in;
          pix_d  = f_in;
          cin_d  = f_in;
          trow_d = f_in;
          iptr_d = f_in;
          wch_d  = f_wgt;
          wptr_d = f_wgt;
          crem_d = f_c;
          ox_d   = '0;
          oy_d   = '0;
          kx_d   = '0;
          ky_d   = '0;
          gap_d  = '0;
          st_d   = DSetup;
        end
      end

      DSetup: begin
        sx_d   = {sx_q[InAw-2:0], 1'b0} + (f_stride[sbit_q] ? f_c_in : '0);
        sy_d   = {sy_q[InAw-2:0], 1'b0} + (f_stride[sbit_q] ? f_ldi : '0);
        sbit_d = sbit_q - 2'd1;
        if (sbit_q == 2'd0) begin
          st_d = DRun;
        end
      end

      DRun: begin
        if (issue) begin
          p1_d       = 1'b1;
          macs_inc_o = 32'(len);
          if (!tap_last) begin
            wptr_d = wptr_q + f_c_wgt;
            if (!kx_end) begin
              kx_d   = kx_q + 4'd1;
              iptr_d = iptr_q + f_c_in;
            end else begin
              kx_d   = '0;
              ky_d   = ky_q + 4'd1;
              trow_d = trow_q + f_ldi;
              iptr_d = trow_d;
            end
          end else begin
            // The chunk's last read: its result must wait for the writer.
            gap_d = wlast;
            kx_d  = '0;
            ky_d  = '0;
            if (more_chunks) begin
              crem_d = crem_q - 16'(SpW);
              cin_d  = cin_q + InAw'(SpW);
              wch_d  = wch_q + WgtAw'(SpW);
            end else begin
              crem_d = f_c;
              wch_d  = f_wgt;
              if (!ox_end) begin
                ox_d  = ox_q + 16'd1;
                pix_d = pix_q + sx_q;
              end else begin
                ox_d  = '0;
                oy_d  = oy_q + 16'd1;
                row_d = row_q + sy_q;
                pix_d = row_d;
                if (oy_end) begin
                  st_d = DWait;
                end
              end
              cin_d = pix_d;
            end
            trow_d = cin_d;
            iptr_d = cin_d;
            wptr_d = wch_d;
          end
        end
      end

      DWait: begin
        if (!p1_q && wb_q == '0) begin
          done_o = 1'b1;
          st_d   = DIdle;
        end
      end

      default: st_d = DIdle;
    endcase

    if (abort_i && st_q != DIdle) begin
      st_d = DIdle;
    end
  end

  // ---------------------------------------------------------------------------
  // Lanes: one product a lane into the accumulators; the chunk's last goes
  // into the result register instead.
  // ---------------------------------------------------------------------------
  for (genvar l = 0; l < SpW; l++) begin : g_lane
    logic signed [8:0]      x, w;
    logic signed [17:0]     prod;
    logic signed [SumW-1:0] base, sum;
    assign x    = 9'(signed'(in_rd_data_i[8*l +: 8])) - 9'(f_azp);
    assign w    = 9'(signed'(wgt_rd_data_i[8*l +: 8])) - 9'(f_bzp);
    assign prod = x * w;
    assign base = p1_first_q ? '0 : signed'(acc_q[SumW*l +: SumW]);
    assign sum  = base + SumW'(prod);
    assign acc_d[SumW*l +: SumW] = (p1_q && !p1_last_q) ? sum : acc_q[SumW*l +: SumW];
    assign res_d[SumW*l +: SumW] = (p1_q && p1_last_q) ? sum : res_q[SumW*l +: SumW];
  end

  // ---------------------------------------------------------------------------
  // Writer: ceil(4 * len / SpW) writes of SpW bytes from the result register,
  // the last one masked to what is left.
  // ---------------------------------------------------------------------------
  logic [WbW-1:0] wb_step;
  assign wb_step = (wb_q > WbW'(SpW)) ? WbW'(SpW) : wb_q;

  always_comb begin
    wb_d = (wb_q > WbW'(SpW)) ? wb_q - WbW'(SpW) : '0;
    wk_d = wk_q + 2'd1;
    wa_d = wa_q + AccAw'(wb_step);
    if (st_q == DIdle && start_i) begin
      wa_d = f_acc;
    end
    if (p1_q && p1_last_q) begin
      wb_d = WbW'({p1_len_q, 2'b00});
      wk_d = '0;
    end
    if (abort_i) begin
      wb_d = '0;
    end
    acc_wr_req_o  = (wb_q != '0);
    acc_wr_addr_o = wa_q;
    for (int unsigned b = 0; b < SpW; b++) begin
      acc_wr_mask_o[b] = (WbW'(b) < wb_q);
    end
    for (int unsigned j = 0; j < Words; j++) begin
      acc_wr_data_o[32*j +: 32] = 32'(signed'(res_q[SumW*(32'(wk_q)*Words + j) +: SumW]));
    end
  end

  // ---------------------------------------------------------------------------
  // Registers.
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q  <= DIdle;
      p1_q  <= 1'b0;
      wb_q  <= '0;
      gap_q <= '0;
    end else begin
      st_q  <= st_d;
      p1_q  <= p1_d && !abort_i;
      wb_q  <= wb_d;
      gap_q <= gap_d;
    end
  end

  always_ff @(posedge clk_i) begin
    sbit_q     <= sbit_d;
    sx_q       <= sx_d;
    sy_q       <= sy_d;
    row_q      <= row_d;
    pix_q      <= pix_d;
    cin_q      <= cin_d;
    trow_q     <= trow_d;
    iptr_q     <= iptr_d;
    wch_q      <= wch_d;
    wptr_q     <= wptr_d;
    crem_q     <= crem_d;
    ox_q       <= ox_d;
    oy_q       <= oy_d;
    kx_q       <= kx_d;
    ky_q       <= ky_d;
    p1_first_q <= p1_first_d;
    p1_last_q  <= p1_last_d;
    p1_len_q   <= p1_len_d;
    acc_q      <= acc_d;
    res_q      <= res_d;
    wk_q       <= wk_d;
    wa_q       <= wa_d;
  end

  assign busy_o   = (st_q != DIdle) || p1_q || (wb_q != '0);
  assign active_o = busy_o;

  logic unused_insn;
  assign unused_insn = ^{insn_i[255:216], insn_i[127:96+AccAw], insn_i[95:64+WgtAw], insn_i[63:32+InAw],
                         insn_i[215:192+InAw], insn_i[31:0]};

  // ---------------------------------------------------------------------------
  // Assertions.
  // ---------------------------------------------------------------------------
  `LOOM_ASSERT_INIT(SpwPow2_A, SpW >= 16 && (SpW & (SpW - 1)) == 0)
  `LOOM_ASSERT_INIT(AddrFitsField_A, InAw <= 24 && WgtAw <= 24 && AccAw <= 24)
  `LOOM_ASSERT(NoStartWhileBusy_A, start_i |-> st_q == DIdle && !p1_q && wb_q == '0)
  // A result lands only when the writer is on its last write of the one before, or idle.
  `LOOM_ASSERT(WriterFree_A, p1_q && p1_last_q |-> wb_q <= WbW'(SpW))
  `LOOM_ASSERT(NoReadOutsideRun_A, (in_rd_req_o || wgt_rd_req_o) |-> st_q == DRun)


  // Cover points (coverage build only).
  `LOOM_COVER_STATES(c_state, st_q, 4)

endmodule
