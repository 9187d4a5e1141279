// Assertion and cover macros for loom RTL: simulation-only, skipped by synthesis tools.
//
// LOOM_ASSERT(name, prop) checks a property on every rising edge of clk_i
// while rst_ni is high; LOOM_ASSERT_INIT(name, prop) checks a parameter-level
// condition once at time zero. Both compile away under SYNTHESIS (Yosys
// defines it implicitly), and run in Verilator when it is given --assert.
//
// LOOM_COVER(name, prop) counts the rising edges (out of reset) on which prop
// holds. LOOM_COVER_STATES(name, state_q, n) covers each value 0..n-1 of an
// enum-typed state register (points name_s0 .. name_s<n-1>, at most 32) and
// checks at time zero that the enum has exactly those n values, so a state
// added later cannot go uncovered unnoticed. Every point has its own label:
// points that share a label and a line are added up into one, which is why no
// generate loop makes them. rtl/include/loom_cover.svh adds one point per
// opcode and per error cause. LOOM_COVER_BURST(name, fire, len) buckets an
// AXI burst length field on its handshake (name_len1, _len2to4, _len5to16,
// _len17up beats); LOOM_COVER_LEVEL(name, cnt, max) buckets a counter that
// runs 0..max (name_0, _1, _mid strictly between 1 and max when max > 2,
// _max). Cover points count only in a coverage build
// (--coverage-user; cmake -DLOOM_RTL_COVERAGE=ON); other builds drop them,
// and synthesis never sees them.
`ifndef LOOM_ASSERT_SVH
`define LOOM_ASSERT_SVH

`ifndef SYNTHESIS
`define LOOM_ASSERT(name, prop) \
  name: assert property (@(posedge clk_i) disable iff (!rst_ni) (prop)) \
    else $error("%m: assertion failed: %s", `"prop`");
`define LOOM_ASSERT_INIT(name, prop) \
  initial begin : name \
    assert (prop) else $fatal(1, "%m: parameter check failed: %s", `"prop`"); \
  end
`define LOOM_COVER(name, prop) \
  name: cover property (@(posedge clk_i) disable iff (!rst_ni) (prop));
`define LOOM_COVER_STATE(name, state_q, n, k) \
  if ((k) < (n)) begin : name``_g``k \
    name``_s``k: cover property (@(posedge clk_i) disable iff (!rst_ni) (32'(state_q) == (k))); \
  end
`define LOOM_COVER_STATES(name, state_q, n) \
  `LOOM_COVER_STATE(name, state_q, n, 0) \
  `LOOM_COVER_STATE(name, state_q, n, 1) \
  `LOOM_COVER_STATE(name, state_q, n, 2) \
  `LOOM_COVER_STATE(name, state_q, n, 3) \
  `LOOM_COVER_STATE(name, state_q, n, 4) \
  `LOOM_COVER_STATE(name, state_q, n, 5) \
  `LOOM_COVER_STATE(name, state_q, n, 6) \
  `LOOM_COVER_STATE(name, state_q, n, 7) \
  `LOOM_COVER_STATE(name, state_q, n, 8) \
  `LOOM_COVER_STATE(name, state_q, n, 9) \
  `LOOM_COVER_STATE(name, state_q, n, 10) \
  `LOOM_COVER_STATE(name, state_q, n, 11) \
  `LOOM_COVER_STATE(name, state_q, n, 12) \
  `LOOM_COVER_STATE(name, state_q, n, 13) \
  `LOOM_COVER_STATE(name, state_q, n, 14) \
  `LOOM_COVER_STATE(name, state_q, n, 15) \
  `LOOM_COVER_STATE(name, state_q, n, 16) \
  `LOOM_COVER_STATE(name, state_q, n, 17) \
  `LOOM_COVER_STATE(name, state_q, n, 18) \
  `LOOM_COVER_STATE(name, state_q, n, 19) \
  `LOOM_COVER_STATE(name, state_q, n, 20) \
  `LOOM_COVER_STATE(name, state_q, n, 21) \
  `LOOM_COVER_STATE(name, state_q, n, 22) \
  `LOOM_COVER_STATE(name, state_q, n, 23) \
  `LOOM_COVER_STATE(name, state_q, n, 24) \
  `LOOM_COVER_STATE(name, state_q, n, 25) \
  `LOOM_COVER_STATE(name, state_q, n, 26) \
  `LOOM_COVER_STATE(name, state_q, n, 27) \
  `LOOM_COVER_STATE(name, state_q, n, 28) \
  `LOOM_COVER_STATE(name, state_q, n, 29) \
  `LOOM_COVER_STATE(name, state_q, n, 30) \
  `LOOM_COVER_STATE(name, state_q, n, 31) \
  initial begin : name``_all \
    assert ((n) <= 32 && state_q.num() == (n) && 32'(state_q.last()) == (n) - 1) \
      else $fatal(1, "%m: %s has %0d states, the cover names %0d", `"state_q`", state_q.num(), (n)); \
  end
`define LOOM_COVER_BURST(name, fire, len) \
  `LOOM_COVER(name``_len1, (fire) && (len) == 8'd0) \
  `LOOM_COVER(name``_len2to4, (fire) && (len) >= 8'd1 && (len) <= 8'd3) \
  `LOOM_COVER(name``_len5to16, (fire) && (len) >= 8'd4 && (len) <= 8'd15) \
  `LOOM_COVER(name``_len17up, (fire) && (len) >= 8'd16)
`define LOOM_COVER_LEVEL(name, cnt, max) \
  `LOOM_COVER(name``_0, 32'(cnt) == 0) \
  `LOOM_COVER(name``_1, 32'(cnt) == 1) \
  if ((max) > 2) begin : name``_g_mid \
    `LOOM_COVER(name``_mid, 32'(cnt) > 1 && 32'(cnt) < (max)) \
  end \
  if ((max) > 1) begin : name``_g_max \
    `LOOM_COVER(name``_max, 32'(cnt) == (max)) \
  end
`else
`define LOOM_ASSERT(name, prop)
`define LOOM_ASSERT_INIT(name, prop)
`define LOOM_COVER(name, prop)
`define LOOM_COVER_STATES(name, state_q, n)
`define LOOM_COVER_BURST(name, fire, len)
`define LOOM_COVER_LEVEL(name, cnt, max)
`endif

`endif  // LOOM_ASSERT_SVH
