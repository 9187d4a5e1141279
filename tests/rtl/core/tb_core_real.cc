// Testbench for loom_core with the real load, store and compute units and scratchpads: DMA copies through OUT, tokens, errors, flush.
#include <cstring>
#include <string>

#include "core_tb.h"

using namespace loom::coretest;

namespace {

void set_bits(Insn& i, unsigned lsb, unsigned width, uint64_t v) {
  for (unsigned b = 0; b < width; ++b) {
    const unsigned pos = lsb + b;
    if ((v >> b) & 1) i.w[pos / 32] |= 1u << (pos % 32);
  }
}

// LOAD/STORE with the ISA's field positions (docs/spec/isa.md).
Insn dma(uint32_t opcode, uint32_t flags, uint32_t buf, uint32_t sp_addr, uint64_t dram, uint32_t rows, uint32_t cols,
         uint32_t dram_stride, uint32_t sp_stride) {
  Insn i = Insn::op(opcode, flags);
  set_bits(i, 10, 3, buf);
  set_bits(i, 32, 24, sp_addr);
  set_bits(i, 64, 48, dram);
  set_bits(i, 112, 16, rows);
  set_bits(i, 128, 16, cols);
  set_bits(i, 176, 32, dram_stride);
  set_bits(i, 208, 24, sp_stride);
  return i;
}

// GEMM of zero size: touches nothing, passes tokens.
Insn gemm_empty(uint32_t flags) { return Insn::op(GEMM, flags); }

constexpr uint32_t kBufOut = 3, kBufAcc = 2;

void fill(CoreTb& tb, uint64_t addr, uint64_t n, std::mt19937_64& rng) {
  for (uint64_t i = 0; i < n; ++i) tb.byte(addr + i) = uint8_t(rng());
}

// Copies rows x cols bytes from src (stride ss) to dst (stride ds) via OUT and checks every byte.
void copy_and_check(CoreTb& tb, std::mt19937_64& rng, uint64_t src, uint64_t dst, uint32_t rows, uint32_t cols,
                    uint32_t ss, uint32_t ds, bool tokens, const char* what) {
  fill(tb, src, uint64_t(rows) * ss + cols, rng);
  for (uint64_t i = 0; i < uint64_t(rows) * ds + cols + 64; ++i) tb.byte(dst + i) = 0xEE;
  if (tokens) {
    tb.push({dma(LOAD, PUSH_NEXT, kBufOut, 0x40, src, rows, cols, ss, cols), gemm_empty(POP_PREV | PUSH_NEXT),
             dma(STORE, POP_PREV, kBufOut, 0x40, dst, rows, cols, ds, cols), Insn::op(END)});
  } else {
    tb.push({dma(LOAD, 0, kBufOut, 0x40, src, rows, cols, ss, cols), Insn::op(FENCE),
             dma(STORE, 0, kBufOut, 0x40, dst, rows, cols, ds, cols), Insn::op(END)});
  }
  tb.wait_idle(200000);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: done without error (cause %u pc %u)", what, tb.cause(), tb.err_pc());
  tb.check(tb.done() && !tb.error(), buf);
  uint64_t bad = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c)
      if (tb.byte(dst + uint64_t(r) * ds + c) != tb.byte(src + uint64_t(r) * ss + c)) ++bad;
    // Bytes between rows stay untouched (WSTRB masks them).
    if (r + 1 < rows)
      for (uint32_t c = cols; c < ds; ++c)
        if (tb.byte(dst + uint64_t(r) * ds + c) != 0xEE) ++bad;
  }
  std::snprintf(buf, sizeof buf, "%s: copied bytes", what);
  tb.check_eq(bad, 0, buf);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240612);
  print_seed("rtl_core_real", opt);
  CoreTb tb(argc, argv, opt);
  std::mt19937_64 rng(opt.seed ^ 0x5eed);

  tb.begin("copy");
  tb.set_ring(0x1000, 32);
  copy_and_check(tb, rng, 0x50003, 0x60005, 5, 37, 41, 48, false, "fenced copy, unaligned");
  tb.check_eq(tb.ctr(INSN_LOAD), 1, "INSN_LOAD");
  tb.check_eq(tb.ctr(INSN_STORE), 1, "INSN_STORE");
  tb.check(tb.ctr(BYTES_RD) >= 5 * 37, "BYTES_RD counts the rows");
  tb.check(tb.ctr(BYTES_WR) >= 5 * 37, "BYTES_WR counts the rows");
  copy_and_check(tb, rng, 0x51000, 0x61000, 3, 16, 16, 16, true, "token copy");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 1, "token GEMM retired");
  // Across a 4 KiB boundary on both sides.
  copy_and_check(tb, rng, 0x52FF0, 0x63FF8, 2, 100, 200, 300, false, "copy across 4 KiB");

  tb.begin("window");
  tb.flush();
  tb.m().win_base_i = 0x50000;
  tb.m().win_limit_i = 0x58000;
  tb.push({Insn::op(NOP), dma(LOAD, 0, kBufOut, 0, 0x57FF0, 2, 32, 32, 32), Insn::op(END)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), WINDOW, "LOAD outside the window");
  tb.check_eq(tb.err_pc(), 1, "ERR_PC of the LOAD");
  tb.m().win_base_i = 0;
  tb.m().win_limit_i = CoreTb::kMemSize;

  tb.begin("illegal_buf");
  tb.flush();
  tb.push({dma(STORE, 0, 0 /* IN */, 0, 0x60000, 1, 4, 4, 4), Insn::op(END)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), ILLEGAL, "STORE from IN");
  tb.check_eq(tb.err_pc(), 0, "ERR_PC of the STORE");

  tb.begin("axi_error");
  tb.flush();
  tb.err_lo = 0x54000;
  tb.err_hi = 0x54040;
  tb.err_resp = 3;
  tb.push({dma(LOAD, 0, kBufOut, 0, 0x54000, 4, 64, 64, 64), Insn::op(END)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), DECERR, "LOAD DECERR");
  tb.err_lo = tb.err_hi = 0;

  tb.begin("flush_mid_dma");
  tb.flush();
  tb.latency = 20;
  tb.push({dma(LOAD, 0, kBufOut, 0, 0x55000, 64, 128, 128, 128), dma(STORE, 0, kBufOut, 0, 0x66000, 64, 128, 128, 128),
           Insn::op(END)});
  tb.run(150);
  tb.check(tb.busy(), "busy mid-transfer");
  tb.check(tb.reads_in_flight(1) > 0, "load bursts in flight at the flush");
  // Hold AR back so the load unit has a request up when the flush comes.
  tb.ready_stall = 1.0;
  tb.run_until([&] { return tb.m().m_axi_arvalid && tb.m().m_axi_arid == 1; }, 2000, "load AR pending");
  tb.flush();
  tb.ready_stall = 0.2;
  tb.latency = 4;
  tb.run(1500);  // the core absorbs the orphaned responses (up to 16 bursts of 16 beats)
  tb.check_eq(tb.reads_in_flight(1) + tb.writes_in_flight(), 0, "orphaned bursts drained");
  tb.set_ring(0x1000, 32);
  copy_and_check(tb, rng, 0x56001, 0x67003, 4, 50, 64, 64, false, "copy after flush");

  // The same with the store unit's write bursts in flight.
  tb.flush();
  tb.push({dma(STORE, 0, kBufOut, 0, 0x68000, 64, 128, 128, 128), Insn::op(END)});
  tb.run_until([&] { return tb.writes_in_flight() > 0; }, 2000, "store bursts started");
  tb.run(7);
  tb.check(tb.writes_in_flight() > 0, "store bursts in flight at the flush");
  tb.hold_aw = true;
  tb.run_until([&] { return bool(tb.m().m_axi_awvalid); }, 2000, "store AW pending");
  tb.flush();
  tb.hold_aw = false;
  tb.run(300);
  tb.check_eq(tb.reads_in_flight(1) + tb.writes_in_flight(), 0, "orphaned write bursts completed");
  tb.set_ring(0x1000, 32);
  copy_and_check(tb, rng, 0x57001, 0x69003, 3, 70, 80, 96, true, "copy after a flush during STORE");

  if (tb.assertion_failed()) {
    std::printf("SystemVerilog assertion failed\n");
    ++tb.errors;
  }
  return report("rtl_core_real", argv[0], opt, tb.checked, tb.errors);
}
