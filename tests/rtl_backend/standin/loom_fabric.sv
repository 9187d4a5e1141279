// Test stand-in for loom_fabric with the real port list: a register block and a
// one-burst-at-a-time copy engine on core 0, enough to exercise the rtl
// backend's AXI4-Lite driver, memory model, checker and idle detection.
module loom_fabric #(
  parameter int unsigned NumCores   = 2,
  parameter int unsigned Rows       = 4,
  parameter int unsigned Cols       = 4,
  parameter int unsigned InBytes    = 16384,
  parameter int unsigned WgtBytes   = 16384,
  parameter int unsigned AccBytes   = 16384,
  parameter int unsigned OutBytes   = 8192,
  parameter int unsigned ParamBytes = 4096,
  parameter int unsigned MemPorts   = 1,
  parameter int unsigned MemBytes   = 8,
  parameter int unsigned SpW        = 16,
  parameter int unsigned NumSems    = 8,
  parameter int unsigned RingDepth  = 256
) (
  input  logic                               clk_i,
  input  logic                               rst_ni,
  input  logic                               s_axi_control_awvalid,
  output logic                               s_axi_control_awready,
  input  logic [11:0]                        s_axi_control_awaddr,
  input  logic                               s_axi_control_wvalid,
  output logic                               s_axi_control_wready,
  input  logic [31:0]                        s_axi_control_wdata,
  input  logic [3:0]                         s_axi_control_wstrb,
  output logic                               s_axi_control_bvalid,
  input  logic                               s_axi_control_bready,
  output logic [1:0]                         s_axi_control_bresp,
  input  logic                               s_axi_control_arvalid,
  output logic                               s_axi_control_arready,
  input  logic [11:0]                        s_axi_control_araddr,
  output logic                               s_axi_control_rvalid,
  input  logic                               s_axi_control_rready,
  output logic [31:0]                        s_axi_control_rdata,
  output logic [1:0]                         s_axi_control_rresp,
  output logic [MemPorts-1:0]                m_axi_awvalid,
  input  logic [MemPorts-1:0]                m_axi_awready,
  output logic [MemPorts-1:0][63:0]          m_axi_awaddr,
  output logic [MemPorts-1:0][7:0]           m_axi_awlen,
  output logic [MemPorts-1:0][2:0]           m_axi_awsize,
  output logic [MemPorts-1:0][1:0]           m_axi_awburst,
  output logic [MemPorts-1:0][3:0]           m_axi_awid,
  output logic [MemPorts-1:0]                m_axi_wvalid,
  input  logic [MemPorts-1:0]                m_axi_wready,
  output logic [MemPorts-1:0][MemBytes*8-1:0] m_axi_wdata,
  output logic [MemPorts-1:0][MemBytes-1:0]  m_axi_wstrb,
  output logic [MemPorts-1:0]                m_axi_wlast,
  input  logic [MemPorts-1:0]                m_axi_bvalid,
  output logic [MemPorts-1:0]                m_axi_bready,
  input  logic [MemPorts-1:0][1:0]           m_axi_bresp,
  input  logic [MemPorts-1:0][3:0]           m_axi_bid,
  output logic [MemPorts-1:0]                m_axi_arvalid,
  input  logic [MemPorts-1:0]                m_axi_arready,
  output logic [MemPorts-1:0][63:0]          m_axi_araddr,
  output logic [MemPorts-1:0][7:0]           m_axi_arlen,
  output logic [MemPorts-1:0][2:0]           m_axi_arsize,
  output logic [MemPorts-1:0][1:0]           m_axi_arburst,
  output logic [MemPorts-1:0][3:0]           m_axi_arid,
  input  logic [MemPorts-1:0]                m_axi_rvalid,
  output logic [MemPorts-1:0]                m_axi_rready,
  input  logic [MemPorts-1:0][MemBytes*8-1:0] m_axi_rdata,
  input  logic [MemPorts-1:0][1:0]           m_axi_rresp,
  input  logic [MemPorts-1:0]                m_axi_rlast,
  input  logic [MemPorts-1:0][3:0]           m_axi_rid,
  output logic                               interrupt_o
);
  localparam int unsigned Beats = 32 / MemBytes;  // one 32-byte instruction per burst
  localparam logic [2:0] Size = 3'($clog2(MemBytes));

  // Registers (core 0 only has a copy engine; other cores only hold values).
  logic [31:0] scratch_q, irq_en_q, irq_st_q;
  logic [63:0] ring_base_q, win_base_q;
  logic [15:0] ring_size_q, head_q, tail_q;
  logic        busy_q, done_q;
  logic [6:0]  err_q;

  // AXI4-Lite: take AW and W together, one response at a time.
  logic        wr_fire, rd_fire;
  logic [31:0] rd_val;
  assign s_axi_control_awready = s_axi_control_awvalid && s_axi_control_wvalid && !s_axi_control_bvalid;
  assign s_axi_control_wready  = s_axi_control_awready;
  assign wr_fire = s_axi_control_awready;
  assign s_axi_control_arready = !s_axi_control_rvalid;
  assign rd_fire = s_axi_control_arvalid && s_axi_control_arready;
  assign s_axi_control_bresp = 2'b00;
  assign s_axi_control_rresp = 2'b00;

  always_comb begin
    unique case (s_axi_control_araddr)
      12'h000: rd_val = 32'h4C4F4F4D;
      12'h004: rd_val = 32'h0001_0000;
      12'h008: rd_val = {8'(MemPorts), 8'(Cols), 8'(Rows), 8'(NumCores)};
      12'h00C: rd_val = scratch_q;
      12'h010: rd_val = {16'd0, 7'd0, |err_q, 7'd0, busy_q};
      12'h014: rd_val = irq_en_q;
      12'h018: rd_val = irq_st_q;
      12'h100: rd_val = ring_base_q[31:0];
      12'h104: rd_val = ring_base_q[63:32];
      12'h108: rd_val = {16'd0, ring_size_q};
      12'h10C: rd_val = {16'd0, head_q};
      12'h110: rd_val = {16'd0, tail_q};
      12'h118: rd_val = {28'd0, 1'b0, |err_q, done_q, busy_q};
      12'h11C: rd_val = {25'd0, err_q};
      12'h124: rd_val = win_base_q[31:0];
      12'h128: rd_val = win_base_q[63:32];
      default: rd_val = 32'd0;
    endcase
  end

  // Copy engine: AR -> R beats -> AW -> W beats -> B, per instruction.
  typedef enum logic [2:0] {StIdle, StAr, StR, StAw, StW, StB} state_e;
  state_e      st_q;
  logic [255:0] buf_q;
  logic [7:0]  beat_q;
  logic [63:0] src, dst;
  assign src = ring_base_q + 64'(head_q) * 64'd32;
  assign dst = win_base_q + 64'(head_q) * 64'd32;

  always_comb begin
    m_axi_awvalid = '0; m_axi_awaddr = '0; m_axi_awlen = '0; m_axi_awsize = '0; m_axi_awburst = '0;
    m_axi_awid = '0; m_axi_wvalid = '0; m_axi_wdata = '0; m_axi_wstrb = '0; m_axi_wlast = '0;
    m_axi_bready = '0; m_axi_arvalid = '0; m_axi_araddr = '0; m_axi_arlen = '0; m_axi_arsize = '0;
    m_axi_arburst = '0; m_axi_arid = '0; m_axi_rready = '0;
    m_axi_arvalid[0] = st_q == StAr;
    m_axi_araddr[0]  = src;
    m_axi_arlen[0]   = 8'(Beats - 1);
    m_axi_arsize[0]  = Size;
    m_axi_arburst[0] = 2'b01;
    m_axi_rready[0]  = st_q == StR;
    m_axi_awvalid[0] = st_q == StAw;
    m_axi_awaddr[0]  = dst;
    m_axi_awlen[0]   = 8'(Beats - 1);
    m_axi_awsize[0]  = Size;
    m_axi_awburst[0] = 2'b01;
    m_axi_wvalid[0]  = st_q == StW;
    m_axi_wdata[0]   = buf_q[beat_q*MemBytes*8 +: MemBytes*8];
    m_axi_wstrb[0]   = '1;
    m_axi_wlast[0]   = 32'(beat_q) == Beats - 1;
    m_axi_bready[0]  = st_q == StB;
  end

  assign interrupt_o = |(irq_st_q & irq_en_q);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      scratch_q <= '0; irq_en_q <= '0; irq_st_q <= '0; ring_base_q <= '0; win_base_q <= '0;
      ring_size_q <= '0; head_q <= '0; tail_q <= '0; busy_q <= 1'b0; done_q <= 1'b0; err_q <= '0;
      st_q <= StIdle; buf_q <= '0; beat_q <= '0;
      s_axi_control_bvalid <= 1'b0; s_axi_control_rvalid <= 1'b0; s_axi_control_rdata <= '0;
    end else begin
      if (s_axi_control_bvalid && s_axi_control_bready) s_axi_control_bvalid <= 1'b0;
      if (s_axi_control_rvalid && s_axi_control_rready) s_axi_control_rvalid <= 1'b0;
      if (rd_fire) begin
        s_axi_control_rvalid <= 1'b1;
        s_axi_control_rdata  <= rd_val;
      end
      if (wr_fire) begin
        s_axi_control_bvalid <= 1'b1;
        unique case (s_axi_control_awaddr)
          12'h00C: scratch_q <= s_axi_control_wdata;
          12'h014: irq_en_q <= s_axi_control_wdata;
          12'h018: irq_st_q <= irq_st_q & ~s_axi_control_wdata;
          12'h01C: if (s_axi_control_wdata[0]) begin
            head_q <= '0; tail_q <= '0; busy_q <= 1'b0; done_q <= 1'b0; err_q <= '0; st_q <= StIdle;
          end
          12'h100: ring_base_q[31:0] <= s_axi_control_wdata;
          12'h104: ring_base_q[63:32] <= s_axi_control_wdata;
          12'h108: ring_size_q <= s_axi_control_wdata[15:0];
          12'h110: tail_q <= s_axi_control_wdata[15:0];
          12'h114: if (s_axi_control_wdata[0] && err_q == '0 && head_q != tail_q) begin
            busy_q <= 1'b1; done_q <= 1'b0; st_q <= StAr;
          end
          12'h11C: err_q <= err_q & ~s_axi_control_wdata[6:0];
          12'h124: win_base_q[31:0] <= s_axi_control_wdata;
          12'h128: win_base_q[63:32] <= s_axi_control_wdata;
          default: ;
        endcase
      end
      unique case (st_q)
        StAr: if (m_axi_arready[0]) begin st_q <= StR; beat_q <= '0; end
        StR: if (m_axi_rvalid[0]) begin
          buf_q[beat_q*MemBytes*8 +: MemBytes*8] <= m_axi_rdata[0];
          beat_q <= beat_q + 8'd1;
          if (m_axi_rresp[0] == 2'b10) err_q[1] <= 1'b1;
          if (m_axi_rresp[0] == 2'b11) err_q[2] <= 1'b1;
          if (m_axi_rlast[0]) begin
            beat_q <= '0;
            st_q <= (m_axi_rresp[0] != 2'b00 || err_q != '0) ? StIdle : StAw;
            if (m_axi_rresp[0] != 2'b00 || err_q != '0) begin busy_q <= 1'b0; irq_st_q[8] <= 1'b1; end
          end
        end
        StAw: if (m_axi_awready[0]) st_q <= StW;
        StW: if (m_axi_wready[0]) begin
          beat_q <= beat_q + 8'd1;
          if (32'(beat_q) == Beats - 1) begin beat_q <= '0; st_q <= StB; end
        end
        StB: if (m_axi_bvalid[0]) begin
          if (m_axi_bresp[0] != 2'b00) begin
            err_q[m_axi_bresp[0] == 2'b10 ? 1 : 2] <= 1'b1;
            busy_q <= 1'b0; irq_st_q[8] <= 1'b1; st_q <= StIdle;
          end else if (((head_q + 16'd1) & (ring_size_q - 16'd1)) == tail_q) begin
            head_q <= tail_q; busy_q <= 1'b0; done_q <= 1'b1; irq_st_q[0] <= 1'b1; st_q <= StIdle;
          end else begin
            head_q <= (head_q + 16'd1) & (ring_size_q - 16'd1); st_q <= StAr;
          end
        end
        default: ;
      endcase
    end
  end

  // Parameters the stand-in does not use, consumed so lint stays quiet.
  logic unused;
  assign unused = ^{InBytes, WgtBytes, AccBytes, OutBytes, ParamBytes, SpW, NumSems, RingDepth,
                    s_axi_control_wstrb, m_axi_bid, m_axi_rid};
endmodule
