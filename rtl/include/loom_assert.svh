// Assertion macros for loom RTL: simulation-only, skipped by synthesis tools.
//
// LOOM_ASSERT(name, prop) checks a property on every rising edge of clk_i
// while rst_ni is high; LOOM_ASSERT_INIT(name, prop) checks a parameter-level
// condition once at time zero. Both compile away under SYNTHESIS (Yosys
// defines it implicitly), and run in Verilator when it is given --assert.
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
`else
`define LOOM_ASSERT(name, prop)
`define LOOM_ASSERT_INIT(name, prop)
`endif

`endif  // LOOM_ASSERT_SVH
