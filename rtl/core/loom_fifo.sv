// Small synchronous FIFO built from flops: the fetch unit's instruction queue.
//
// Depth is a few entries, so flops (not a RAM) keep the read combinational:
// the dispatcher decodes the head entry in the cycle it becomes valid.
`include "loom_assert.svh"

module loom_fifo #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 4,
  localparam int unsigned PtrW = (Depth > 1) ? $clog2(Depth) : 1,
  localparam int unsigned CntW = $clog2(Depth + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             flush_i,   // drop every entry

  input  logic             push_i,
  input  logic [Width-1:0] wdata_i,
  output logic             full_o,

  input  logic             pop_i,
  output logic [Width-1:0] rdata_o,
  output logic             empty_o,

  output logic [CntW-1:0]  count_o
);

  // Flat storage: Debian's Yosys 0.23 rejects multi-dimensional packed arrays.
  logic [Depth*Width-1:0] mem_d, mem_q;
  logic [PtrW-1:0]             wptr_d, wptr_q, rptr_d, rptr_q;
  logic [CntW-1:0]             cnt_d, cnt_q;

  logic do_push, do_pop;
  assign do_push = push_i && (cnt_q != CntW'(Depth));
  assign do_pop  = pop_i && (cnt_q != '0);

  function automatic logic [PtrW-1:0] ptr_inc(logic [PtrW-1:0] p);
    // Assignment to the name, not `return`: Yosys 0.23 reads only this form.
    ptr_inc = (p == PtrW'(Depth - 1)) ? '0 : p + PtrW'(1);
  endfunction

  always_comb begin
    mem_d  = mem_q;
    wptr_d = wptr_q;
    rptr_d = rptr_q;
    cnt_d  = cnt_q;
    if (do_push) begin
      mem_d[wptr_q*Width +: Width] = wdata_i;
      wptr_d        = ptr_inc(wptr_q);
    end
    if (do_pop) begin
      rptr_d = ptr_inc(rptr_q);
    end
    unique case ({do_push, do_pop})
      2'b10:   cnt_d = cnt_q + CntW'(1);
      2'b01:   cnt_d = cnt_q - CntW'(1);
      default: cnt_d = cnt_q;
    endcase
    if (flush_i) begin
      wptr_d = '0;
      rptr_d = '0;
      cnt_d  = '0;
    end
  end

  // The storage has no reset: an entry is only read after it was written.
  always_ff @(posedge clk_i) begin
    mem_q <= mem_d;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wptr_q <= '0;
      rptr_q <= '0;
      cnt_q  <= '0;
    end else begin
      wptr_q <= wptr_d;
      rptr_q <= rptr_d;
      cnt_q  <= cnt_d;
    end
  end

  assign rdata_o = mem_q[rptr_q*Width +: Width];
  assign full_o  = (cnt_q == CntW'(Depth));
  assign empty_o = (cnt_q == '0);
  assign count_o = cnt_q;

  `LOOM_ASSERT_INIT(a_depth_legal, Depth >= 1)
  `LOOM_ASSERT(a_no_overflow, !(push_i && full_o && !flush_i))
  `LOOM_ASSERT(a_no_underflow, !(pop_i && empty_o && !flush_i))

endmodule : loom_fifo
