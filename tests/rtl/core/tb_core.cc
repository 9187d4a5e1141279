// Testbench for loom_core with stand-in units: ring protocol, tokens, control instructions, errors, watchdog, flush, counters.
//
// Usage: core [--seed N] [--trace f.fst] [--only SCENARIO]. Every scenario
// starts from a soft reset (flush_i), so each can run alone.
#include <cstring>
#include <string>

#include "core_tb.h"

using namespace loom::coretest;

namespace {

// Ring wrap-around, 4 KiB-split bursts and refills across several doorbells.
void scenario_ring(CoreTb& tb) {
  tb.begin("ring");
  tb.flush();
  // 16 entries starting 8 entries before a 4 KiB boundary.
  tb.set_ring(0x1F00, 16);
  uint64_t sync = 0, compute = 0;
  tb.push({Insn::op(NOP), Insn::unit(GEMM, 0, 3), Insn::op(FENCE), Insn::op(NOP), Insn::unit(GEMM, 0, 1)});
  sync += 3;
  compute += 2;
  tb.wait_idle();
  tb.check_eq(tb.head(), 5, "head after the first doorbell");
  tb.check(!tb.done() && !tb.error(), "ring ran empty: neither done nor error");
  // Refill 14 entries: wraps past the end of the ring.
  std::vector<Insn> prog;
  for (int i = 0; i < 14; ++i) prog.push_back(i % 3 == 0 ? Insn::unit(GEMM, 0, unsigned(i)) : Insn::op(NOP));
  for (int i = 0; i < 14; ++i) (i % 3 == 0 ? compute : sync)++;
  tb.push(prog);
  tb.wait_idle();
  tb.check_eq(tb.head(), 3, "head after wrapping");
  // Several small refills, each with its own doorbell, the last one ends.
  for (int round = 0; round < 6; ++round) {
    tb.push({Insn::op(NOP), Insn::unit(GEMM, 0, 2)});
    sync++;
    compute++;
    tb.wait_idle();
  }
  tb.check_eq(tb.head(), 15, "head after refills");
  tb.check_eq(tb.ctr(INSN_SYNC), sync, "INSN_SYNC");
  tb.check_eq(tb.ctr(INSN_COMPUTE), compute, "INSN_COMPUTE");
  tb.check(tb.ctr(QUEUE_HWM) >= 1 && tb.ctr(QUEUE_HWM) <= CoreTb::kFifoDepth, "QUEUE_HWM within the FIFO");
  tb.check(tb.fetch_bursts > 0, "fetch bursts seen");

  // END in the middle: instructions after it wait for the next doorbell.
  const unsigned irq0 = tb.irq_done;
  tb.push({Insn::op(NOP), Insn::op(END), Insn::unit(GEMM, 0, 1), Insn::op(NOP)});
  tb.wait_idle();
  tb.check(tb.done(), "done after END");
  tb.check_eq(tb.irq_done - irq0, 1, "one irq_done pulse");
  tb.check_eq(tb.head(), (15 + 2) % 16, "head just past END");
  tb.check_eq(tb.ctr(INSN_COMPUTE), compute, "nothing after END ran");
  tb.doorbell();
  tb.check(!tb.done(), "doorbell clears done");
  tb.wait_idle();
  tb.check_eq(tb.ctr(INSN_COMPUTE), compute + 1, "rest of the ring ran after the doorbell");
  tb.check_eq(tb.head(), tb.tail, "head caught up with tail");
  tb.check(!tb.done(), "no END: not done");
}

// A pop waits for the matching push; tokens flow around load->compute->store.
void scenario_tokens(CoreTb& tb) {
  tb.begin("tokens");
  tb.flush();
  tb.set_ring(0x4000, 64);
  uint64_t t_l1 = 0, t_c1 = 0, t_s1 = 0, t_c2 = 0, t_l2 = 0;
  tb.on_cycle = [&] {
    const uint64_t c = tb.cycles();
    if (!t_l1 && tb.ctr(INSN_LOAD) == 1) t_l1 = c;
    if (!t_l2 && tb.ctr(INSN_LOAD) == 2) t_l2 = c;
    if (!t_c1 && tb.ctr(INSN_COMPUTE) == 1) t_c1 = c;
    if (!t_c2 && tb.ctr(INSN_COMPUTE) == 2) t_c2 = c;
    if (!t_s1 && tb.ctr(INSN_STORE) == 1) t_s1 = c;
  };
  tb.push({Insn::unit(LOAD, PUSH_NEXT, 60),
           Insn::unit(GEMM, POP_PREV | PUSH_NEXT, 5),
           Insn::unit(STORE, POP_PREV | PUSH_PREV, 40),
           Insn::unit(GEMM, POP_NEXT | PUSH_PREV, 2),
           Insn::unit(LOAD, POP_NEXT, 1),
           Insn::op(END)});
  tb.wait_idle();
  tb.on_cycle = nullptr;
  tb.check(tb.done() && !tb.error(), "token stream completes");
  tb.check(t_l1 && t_c1 && t_s1 && t_c2 && t_l2, "every instruction retired");
  tb.check(t_l1 < t_c1, "compute waited for load's token");
  tb.check(t_c1 < t_s1, "store waited for compute's token");
  tb.check(t_s1 < t_c2, "compute waited for store's token");
  tb.check(t_c2 < t_l2, "load waited for compute's token");
  tb.check(tb.ctr(CYCLES_STALL_DEP) > 40, "dependency stalls counted");
}

// FENCE and END drain every unit before they act.
void scenario_fence(CoreTb& tb) {
  tb.begin("fence");
  tb.flush();
  tb.set_ring(0x5000, 32);
  bool early = false;
  tb.on_cycle = [&] {
    if (tb.ctr(INSN_COMPUTE) >= 1 && tb.ctr(INSN_LOAD) == 0) early = true;
    if (tb.done() && (tb.ctr(INSN_STORE) == 0 || tb.ctr(INSN_COMPUTE) < 2)) early = true;
  };
  tb.push({Insn::unit(LOAD, 0, 80), Insn::op(FENCE), Insn::unit(GEMM, 0, 1), Insn::unit(STORE, 0, 50),
           Insn::unit(GEMM, 0, 70), Insn::op(END)});
  tb.wait_idle();
  tb.on_cycle = nullptr;
  tb.check(!early, "FENCE/END waited for earlier instructions");
  tb.check(tb.done(), "done");
  tb.check_eq(tb.ctr(INSN_SYNC), 2, "FENCE and END counted as sync");
}

// SEM_WAIT blocks until the semaphore reaches count; SEM_SIGNAL pulses.
void scenario_sem(CoreTb& tb) {
  tb.begin("sem");
  tb.flush();
  tb.set_ring(0x6000, 32);
  tb.sems.assign(CoreTb::kNumSems, 0);
  const unsigned sig0 = tb.sem_signals;
  tb.push({Insn::sem(SEM_SIGNAL, 5), Insn::sem(SEM_WAIT, 2, 3), Insn::unit(GEMM, 0, 1), Insn::op(END)});
  tb.run(300);
  tb.check_eq(tb.sem_signals - sig0, 1, "SEM_SIGNAL pulsed once");
  tb.check_eq(tb.sems[5], 1, "semaphore 5 incremented");
  tb.check(tb.blocked() && tb.busy(), "SEM_WAIT blocks");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 0, "nothing after SEM_WAIT ran");
  tb.sems[2] = 2;
  tb.run(50);
  tb.check(tb.blocked(), "still blocked below count");
  tb.sems[2] = 3;
  tb.wait_idle();
  tb.check(!tb.blocked() && tb.done() && !tb.error(), "released at count");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 1, "compute after release");
  tb.check(tb.ctr(CYCLES_STALL_DEP) >= 300, "semaphore wait counted as a dependency stall");

  // Counts at the top of the range: every bit of every semaphore input
  // moves, and SEM_WAIT compares all 32 bits unsigned (0x7FFFFFFF is below
  // 0x80000000; a signed compare would release at once).
  tb.flush();
  tb.sems.assign(CoreTb::kNumSems, 0xFFFFFFFFu);
  tb.run(5);
  tb.sems.assign(CoreTb::kNumSems, 0);
  tb.sems[6] = 0x7FFFFFFFu;
  tb.push({Insn::sem(SEM_WAIT, 6, 0x80000000u), Insn::op(END)});
  tb.run(100);
  tb.check(tb.blocked() && tb.busy(), "SEM_WAIT 0x80000000 blocks at 0x7FFFFFFF");
  tb.sems[6] = 0x80000000u;
  tb.wait_idle();
  tb.check(!tb.blocked() && tb.done() && !tb.error(), "released at 0x80000000");

  // A semaphore id at or above NumSems is illegal.
  tb.flush();
  tb.push({Insn::op(NOP), Insn::sem(SEM_WAIT, CoreTb::kNumSems, 0)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), ILLEGAL, "sem id out of range: ILLEGAL_INSN");
  tb.check_eq(tb.err_pc(), 1, "sem id out of range: ERR_PC");
}

void expect_fault(CoreTb& tb, const std::vector<Insn>& prog, uint32_t cause, uint32_t pc, const char* what) {
  tb.flush();
  const unsigned irq0 = tb.irq_err;
  tb.push(prog);
  if (!tb.wait_idle()) {
    std::printf("  state: head %u tail %u sync %llu compute %llu hwm %llu arvalid %d rvalid %d rready %d\n", tb.head(),
                tb.tail, (unsigned long long)tb.ctr(INSN_SYNC), (unsigned long long)tb.ctr(INSN_COMPUTE),
                (unsigned long long)tb.ctr(QUEUE_HWM), tb.m().m_axi_arvalid, tb.m().m_axi_rvalid, tb.m().m_axi_rready);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: ERR_CAUSE", what);
  tb.check_eq(tb.cause(), cause, buf);
  std::snprintf(buf, sizeof buf, "%s: ERR_PC", what);
  tb.check_eq(tb.err_pc(), pc, buf);
  std::snprintf(buf, sizeof buf, "%s: error status and one irq", what);
  tb.check(tb.error() && !tb.done() && tb.irq_err - irq0 == 1, buf);
}

// Illegal opcode and flags, unit errors and fetch errors with the right ERR_PC.
void scenario_illegal(CoreTb& tb) {
  tb.begin("illegal");
  tb.set_ring(0x7000, 16);
  expect_fault(tb, {Insn::op(NOP), Insn::unit(GEMM, 0, 4), Insn::op(NOP), Insn::op(13), Insn::op(NOP)}, ILLEGAL, 3,
               "opcode 13");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 1, "earlier instruction retired before the fault");
  tb.check_eq(tb.ctr(INSN_SYNC), 2, "nothing after the fault retired");
  expect_fault(tb, {Insn::op(63)}, ILLEGAL, 0, "opcode 63");
  expect_fault(tb, {Insn::op(NOP), Insn::op(FENCE, PUSH_NEXT)}, ILLEGAL, 1, "FENCE with a flag");
  expect_fault(tb, {Insn::op(END, POP_PREV)}, ILLEGAL, 0, "END with a flag");
  expect_fault(tb, {Insn::op(NOP), Insn::op(NOP), Insn::unit(LOAD, POP_PREV, 1)}, ILLEGAL, 2, "LOAD pop_prev");
  expect_fault(tb, {Insn::unit(LOAD, PUSH_PREV, 1)}, ILLEGAL, 0, "LOAD push_prev");
  expect_fault(tb, {Insn::op(NOP), Insn::unit(STORE, POP_NEXT, 1)}, ILLEGAL, 1, "STORE pop_next");
  expect_fault(tb, {Insn::unit(STORE, PUSH_NEXT, 1)}, ILLEGAL, 0, "STORE push_next");
  // A later illegal instruction waits for an earlier unit error to win.
  expect_fault(tb, {Insn::unit(LOAD, 0, 30).fail(WINDOW), Insn::op(12)}, WINDOW, 0, "earlier unit error first");
  expect_fault(tb, {Insn::op(NOP), Insn::unit(GEMM, 0, 3).fail(OOB)}, OOB, 1, "compute OOB");

  // NOP ignores its flags.
  tb.flush();
  tb.push({Insn::op(NOP, POP_PREV | POP_NEXT | PUSH_PREV | PUSH_NEXT), Insn::op(END)});
  tb.wait_idle();
  tb.check(tb.done() && !tb.error(), "NOP with flags is legal");

  // AXI errors: on a unit's data burst and on instruction fetch.
  tb.err_lo = 0x20000;
  tb.err_hi = 0x20100;
  tb.err_resp = 3;
  expect_fault(tb, {Insn::op(NOP), Insn::unit(LOAD, 0, 1, 4, 0x20000)}, DECERR, 1, "load DECERR");
  tb.err_resp = 2;
  expect_fault(tb, {Insn::unit(STORE, 0, 1, 2, 0x20040)}, SLVERR, 0, "store SLVERR");
  tb.err_lo = 0x7000 + 32 * 3;  // slot 3 of the ring
  tb.err_hi = tb.err_lo + 32;
  // With beats wider than an instruction, slot 2 shares slot 3's beat.
  expect_fault(tb, {Insn::op(NOP), Insn::unit(GEMM, 0, 20), Insn::op(NOP), Insn::op(NOP), Insn::op(NOP)}, SLVERR,
               CoreTb::kMemBytes > 32 ? 2 : 3, "fetch SLVERR");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 1, "instructions before the bad fetch retired");
  tb.err_lo = tb.err_hi = 0;

  // An invalid ring (size not a power of two) faults at the doorbell.
  tb.flush();
  tb.set_ring(0x7000, 12);
  tb.push({Insn::op(NOP)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), ILLEGAL, "invalid ring size");
  // W1C clears the cause but the core stays halted until flush.
  tb.m().err_clear_i = ILLEGAL;
  tb.step();
  tb.m().err_clear_i = 0;
  tb.check_eq(tb.cause(), 0, "W1C cleared ERR_CAUSE");
  tb.set_ring(0x7000, 16);
  tb.doorbell();
  tb.run(50);
  tb.check_eq(tb.ctr(INSN_SYNC), 0, "halted core ignores doorbells");
}

// A pop that is never satisfied hangs; the watchdog raises TIMEOUT.
void scenario_watchdog(CoreTb& tb) {
  tb.begin("watchdog");
  tb.flush();
  tb.set_ring(0x8000, 16);
  tb.m().watchdog_i = 200;
  tb.push({Insn::op(NOP), Insn::unit(GEMM, 0, 10), Insn::unit(STORE, POP_PREV, 1), Insn::unit(GEMM, 0, 400)});
  const uint64_t t0 = tb.cycles();
  tb.wait_idle(5000);
  const uint64_t dt = tb.cycles() - t0;
  tb.check_eq(tb.cause(), TIMEOUT, "TIMEOUT");
  tb.check_eq(tb.err_pc(), 2, "ERR_PC of the stalled store");
  tb.check(dt >= 200 && dt < 600, "watchdog fired after about WATCHDOG idle cycles");
  tb.m().watchdog_i = 0;
}

// Soft reset in the middle of a busy stream, then a clean restart.
void scenario_flush(CoreTb& tb) {
  tb.begin("flush");
  tb.flush();
  tb.set_ring(0x9000, 32);
  tb.latency = 30;
  tb.push({Insn::unit(LOAD, PUSH_NEXT, 100, 8, 0x30000), Insn::unit(GEMM, POP_PREV, 50), Insn::op(NOP),
           Insn::op(NOP), Insn::op(NOP), Insn::op(NOP), Insn::op(END)});
  tb.run(40);
  tb.check(tb.busy(), "busy before flush");
  tb.flush();
  tb.check(!tb.busy() && !tb.done() && !tb.error(), "flush clears status");
  tb.check_eq(tb.head(), 0, "flush clears RING_HEAD");
  tb.check_eq(tb.ctr(INSN_SYNC) + tb.ctr(CYCLES_BUSY), 0, "flush clears counters");
  tb.run(200);  // let abandoned bursts drain
  tb.latency = 4;
  tb.push({Insn::unit(LOAD, PUSH_NEXT, 3, 2, 0x30000), Insn::unit(GEMM, POP_PREV, 3), Insn::op(END)});
  tb.wait_idle();
  tb.check(tb.done() && !tb.error(), "runs cleanly after flush");
  tb.check_eq(tb.ctr(INSN_LOAD) + tb.ctr(INSN_COMPUTE) + tb.ctr(INSN_SYNC), 3, "all retired after flush");
  tb.check_eq(tb.head(), 3, "head after restart");
  // Tokens were reset: a pop without a push after flush must hang.
  tb.flush();
  tb.m().watchdog_i = 100;
  tb.push({Insn::unit(GEMM, POP_PREV, 1)});
  tb.wait_idle();
  tb.check_eq(tb.cause(), TIMEOUT, "flush cleared the token counters");
  tb.m().watchdog_i = 0;
}

// Counters count what the stream did; CTR_CLEAR zeroes them.
void scenario_counters(CoreTb& tb) {
  tb.begin("counters");
  tb.flush();
  tb.set_ring(0xA000, 64);
  tb.push({Insn::unit(LOAD, 0, 2, 4, 0x40000), Insn::unit(LOAD, 0, 2, 3, 0x40100), Insn::unit(LOAD, 0, 0, 1, 0x40200),
           Insn::unit(GEMM, 0, 9), Insn::unit(POOL, 0, 4), Insn::unit(STORE, 0, 1, 5, 0x41000),
           Insn::unit(STORE, 0, 1, 2, 0x42000), Insn::op(NOP), Insn::op(FENCE), Insn::op(END)});
  tb.wait_idle();
  tb.check(tb.done(), "done");
  const uint64_t mb = CoreTb::kMemBytes;
  tb.check_eq(tb.ctr(INSN_LOAD), 3, "INSN_LOAD");
  tb.check_eq(tb.ctr(INSN_COMPUTE), 2, "INSN_COMPUTE");
  tb.check_eq(tb.ctr(INSN_STORE), 2, "INSN_STORE");
  tb.check_eq(tb.ctr(INSN_SYNC), 3, "INSN_SYNC");
  tb.check_eq(tb.ctr(BYTES_RD), 8 * mb, "BYTES_RD (instructions excluded)");
  tb.check_eq(tb.ctr(BYTES_WR), 7 * mb, "BYTES_WR");
  tb.check_eq(tb.ctr(MACS), 10 + 5, "MACS (stand-in: one per execute cycle)");
  tb.check_eq(tb.ctr(CYCLES_COMPUTE), 15, "CYCLES_COMPUTE");
  tb.check(tb.ctr(CYCLES_STALL_MEM) > 0, "CYCLES_STALL_MEM");
  tb.check(tb.ctr(CYCLES_BUSY) > 20, "CYCLES_BUSY");
  tb.check(tb.ctr(QUEUE_HWM) >= 2 && tb.ctr(QUEUE_HWM) <= CoreTb::kFifoDepth, "QUEUE_HWM");
  const uint64_t busy = tb.ctr(CYCLES_BUSY);
  tb.run(20);
  tb.check_eq(tb.ctr(CYCLES_BUSY), busy, "idle cycles are not busy");
  tb.m().ctr_clear_i = 1;
  tb.step();
  tb.m().ctr_clear_i = 0;
  uint64_t sum = 0;
  for (unsigned i = 0; i < kNumCounters; ++i) sum += tb.ctr(i);
  tb.check_eq(sum, 0, "CTR_CLEAR");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240611);
  std::string only;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  const std::string name = std::string(CoreTb::kMemBytes > 32 ? "rtl_core_wide" : "rtl_core") +
                           (only.empty() ? std::string() : "_" + only);
  print_seed(name.c_str(), opt);
  CoreTb tb(argc, argv, opt);
  struct S {
    const char* n;
    void (*f)(CoreTb&);
  };
  const S all[] = {{"ring", scenario_ring},         {"tokens", scenario_tokens},     {"fence", scenario_fence},
                   {"sem", scenario_sem},           {"illegal", scenario_illegal},   {"watchdog", scenario_watchdog},
                   {"flush", scenario_flush},       {"counters", scenario_counters}};
  for (const S& s : all)
    if (only.empty() || only == s.n) s.f(tb);
  if (tb.assertion_failed()) {
    std::printf("SystemVerilog assertion failed\n");
    ++tb.errors;
  }
  return report(name.c_str(), argv[0], opt, tb.checked, tb.errors);
}
