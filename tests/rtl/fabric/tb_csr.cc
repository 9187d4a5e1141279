// Testbench for loom_csr: register semantics over AXI4-Lite against expectations built from the spec header (offsets, access types) and the golden model's rules.
#include <cinttypes>
#include <map>
#include <type_traits>
#include <vector>

#include "Vloom_csr.h"
#include "loom/spec_gen.h"
#include "rtl_harness.h"

namespace {

namespace spec = loom::spec;
namespace cr = loom::spec::core_reg;
using CsrSim = loom::rtltest::Sim<Vloom_csr>;

// Must match the -G parameters in CMakeLists.txt.
constexpr unsigned kCores = 2, kSems = 8, kRows = 4, kCols = 4, kPorts = 1;
constexpr unsigned kErrCauses = 7;

uint32_t core_addr(unsigned c, uint32_t off) { return spec::core_reg_addr(c, off); }

// Bit access to a Verilated port of any width (scalar or VlWide).
template <typename W>
uint64_t get_bits(const W& w, unsigned lsb, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    uint64_t bit;
    if constexpr (std::is_integral_v<W>)
      bit = (uint64_t(w) >> b) & 1u;
    else
      bit = (w[b / 32] >> (b % 32)) & 1u;
    v |= bit << i;
  }
  return v;
}
template <typename W>
void set_bits(W& w, unsigned lsb, unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    const bool one = (v >> i) & 1u;
    if constexpr (std::is_integral_v<W>) {
      const W m = W(W(1) << b);
      w = one ? W(w | m) : W(w & ~m);
    } else {
      const uint32_t m = 1u << (b % 32);
      w[b / 32] = one ? (w[b / 32] | m) : (w[b / 32] & ~m);
    }
  }
}

class Tb {
 public:
  Tb(CsrSim& sim, std::mt19937_64& rng) : sim_(sim), rng_(rng) {}

  uint64_t checked = 0, errors = 0;
  // Pulses seen since the last clear_pulses(): OR of values, and cycle counts.
  uint32_t soft_reset_seen = 0, sem_clear_seen = 0, doorbell_seen = 0, ctr_clear_seen = 0;
  uint32_t err_clear_seen = 0;
  int pulse_cycles = 0;

  void expect(bool ok, const char* what, uint64_t got = 0, uint64_t want = 0) {
    ++checked;
    if (!ok) {
      ++errors;
      if (errors < 20)
        std::printf("  mismatch: %s: got 0x%" PRIx64 " want 0x%" PRIx64 " (cycle %" PRIu64 ")\n", what, got, want,
                    sim_.cycles());
    }
  }

  void tick() {
    sim_.tick();
    auto& m = sim_.m();
    const bool any = m.soft_reset_o || m.sem_clear_o || m.doorbell_o || m.ctr_clear_o || m.err_clear_o;
    soft_reset_seen |= m.soft_reset_o;
    sem_clear_seen |= m.sem_clear_o;
    doorbell_seen |= m.doorbell_o;
    ctr_clear_seen |= m.ctr_clear_o;
    err_clear_seen |= m.err_clear_o;
    pulse_cycles += any ? 1 : 0;
  }
  void clear_pulses() {
    soft_reset_seen = sem_clear_seen = doorbell_seen = ctr_clear_seen = err_clear_seen = 0;
    pulse_cycles = 0;
  }

  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  int delay(int max) { return std::uniform_int_distribution<int>(0, max)(rng_); }

  // One write; AW and W arrive in a random order with random gaps, B is
  // accepted after a random stall.
  void write(uint32_t addr, uint32_t data, uint8_t strb = 0xF) {
    auto& m = sim_.m();
    const int order = delay(2);  // 0: AW first, 1: W first, 2: together
    const int gap = delay(3);
    bool aw_done = false, w_done = false;
    int t = 0;
    for (int guard = 0; !(aw_done && w_done); ++guard, ++t) {
      const bool aw_on = !aw_done && (order != 1 || t >= gap);
      const bool w_on = !w_done && (order != 0 || t >= gap);
      m.s_axi_control_awvalid = aw_on;
      m.s_axi_control_awaddr = addr;
      m.s_axi_control_wvalid = w_on;
      m.s_axi_control_wdata = data;
      m.s_axi_control_wstrb = strb;
      sim_.settle();
      const bool aw_hs = aw_on && m.s_axi_control_awready;
      const bool w_hs = w_on && m.s_axi_control_wready;
      m.s_axi_control_bready = 0;
      tick();
      aw_done |= aw_hs;
      w_done |= w_hs;
      if (guard > 50) {
        expect(false, "write handshake timeout");
        break;
      }
    }
    m.s_axi_control_awvalid = 0;
    m.s_axi_control_wvalid = 0;
    // Back-pressure on B: BVALID must hold until BREADY.
    int stall = delay(3);
    for (int guard = 0;; ++guard) {
      m.s_axi_control_bready = stall == 0;
      sim_.settle();
      const bool v = m.s_axi_control_bvalid;
      if (v) expect(m.s_axi_control_bresp == 0, "BRESP OKAY", m.s_axi_control_bresp, 0);
      tick();
      if (v && stall == 0) break;
      if (v) --stall;
      if (guard > 50) {
        expect(false, "B timeout");
        break;
      }
    }
    m.s_axi_control_bready = 0;
  }

  uint32_t read(uint32_t addr) {
    auto& m = sim_.m();
    m.s_axi_control_rready = 0;
    for (int guard = 0;; ++guard) {
      m.s_axi_control_arvalid = 1;
      m.s_axi_control_araddr = addr;
      sim_.settle();
      const bool hs = m.s_axi_control_arready;
      tick();
      if (hs) break;
      if (guard > 50) {
        expect(false, "AR timeout");
        return 0;
      }
    }
    m.s_axi_control_arvalid = 0;
    int stall = delay(3);
    uint32_t first = 0;
    bool seen = false;
    for (int guard = 0;; ++guard) {
      m.s_axi_control_rready = stall == 0;
      sim_.settle();
      const bool v = m.s_axi_control_rvalid;
      const uint32_t d = m.s_axi_control_rdata;
      if (v) {
        if (seen) expect(d == first, "RDATA stable under back-pressure", d, first);
        first = d;
        seen = true;
        expect(m.s_axi_control_rresp == 0, "RRESP OKAY", m.s_axi_control_rresp, 0);
      }
      tick();
      if (v && stall == 0) break;
      if (v) --stall;
      if (guard > 50) {
        expect(false, "R timeout");
        break;
      }
    }
    m.s_axi_control_rready = 0;
    return first;
  }

  void check_read(uint32_t addr, uint32_t want, const char* what) {
    const uint32_t got = read(addr);
    expect(got == want, what, got, want);
  }

 private:
  CsrSim& sim_;
  std::mt19937_64& rng_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240611);
  print_seed("rtl_csr", opt);
  std::mt19937_64 rng(opt.seed);

  CsrSim sim(argc, argv, opt);
  auto& m = sim.m();
  m.s_axi_control_awvalid = m.s_axi_control_wvalid = m.s_axi_control_arvalid = 0;
  m.s_axi_control_bready = m.s_axi_control_rready = 0;
  sim.reset();
  Tb tb(sim, rng);

  // Constants.
  tb.check_read(spec::reg::ID, spec::kIdValue, "ID");
  tb.check_read(spec::reg::VERSION, spec::kVersion, "VERSION");
  tb.check_read(spec::reg::HWCFG, kCores | kRows << 8 | kCols << 16 | kPorts << 24, "HWCFG");
  tb.write(spec::reg::ID, 0x12345678);
  tb.check_read(spec::reg::ID, spec::kIdValue, "ID ignores writes");

  // SCRATCH and byte strobes.
  tb.write(spec::reg::SCRATCH, 0xA5A55A5A);
  tb.check_read(spec::reg::SCRATCH, 0xA5A55A5A, "SCRATCH");
  tb.write(spec::reg::SCRATCH, 0x11223344, 0x5);
  tb.check_read(spec::reg::SCRATCH, 0xA5225A44, "SCRATCH with WSTRB 0101");

  // Global rw registers reach their outputs.
  tb.write(spec::reg::WATCHDOG, 1000);
  tb.expect(m.watchdog_o == 1000, "watchdog_o", m.watchdog_o, 1000);
  tb.check_read(spec::reg::WATCHDOG, 1000, "WATCHDOG");
  tb.write(spec::reg::IRQ_ENABLE, 0x0303);
  tb.expect(m.irq_enable_o == 0x0303, "irq_enable_o", m.irq_enable_o, 0x0303);

  // STATUS from core bits.
  m.core_busy_i = 0x2;
  m.core_error_i = 0x1;
  tb.check_read(spec::reg::STATUS, 0x0102, "STATUS busy/error");
  m.core_busy_i = 0;
  m.core_error_i = 0;

  // IRQ_STATUS: set by core event pulses, W1C.
  m.core_irq_done_i = 0x2;
  tb.tick();
  m.core_irq_done_i = 0;
  m.core_irq_err_i = 0x1;
  tb.tick();
  m.core_irq_err_i = 0;
  tb.check_read(spec::reg::IRQ_STATUS, 0x0102, "IRQ_STATUS after events");
  tb.expect(m.irq_status_o == 0x0102, "irq_status_o", m.irq_status_o, 0x0102);
  tb.write(spec::reg::IRQ_STATUS, 0x0002);
  tb.check_read(spec::reg::IRQ_STATUS, 0x0100, "IRQ_STATUS W1C");
  tb.write(spec::reg::IRQ_STATUS, 0x0000);
  tb.check_read(spec::reg::IRQ_STATUS, 0x0100, "IRQ_STATUS write 0 keeps");

  // SOFT_RESET: one pulse per written bit; clears the core's IRQ bits and RING_TAIL.
  tb.write(core_addr(0, cr::RING_TAIL), 7);
  tb.write(core_addr(1, cr::RING_TAIL), 9);
  tb.clear_pulses();
  tb.write(spec::reg::SOFT_RESET, 0x1);
  for (int i = 0; i < 2; ++i) tb.tick();
  tb.expect(tb.soft_reset_seen == 0x1, "soft_reset_o pulse", tb.soft_reset_seen, 0x1);
  tb.expect(tb.pulse_cycles == 1, "soft_reset_o lasts one cycle", tb.pulse_cycles, 1);
  tb.check_read(spec::reg::IRQ_STATUS, 0x0000, "IRQ_STATUS cleared by SOFT_RESET");
  tb.check_read(core_addr(0, cr::RING_TAIL), 0, "RING_TAIL cleared by SOFT_RESET");
  tb.check_read(core_addr(1, cr::RING_TAIL), 9, "other core's RING_TAIL kept");
  tb.check_read(spec::reg::SOFT_RESET, 0, "SOFT_RESET reads 0");

  // SEM_CLEAR pulses and SEM_VALUE reads (slots past NumSems read 0).
  tb.clear_pulses();
  tb.write(spec::reg::SEM_CLEAR, 0x1A5);
  for (int i = 0; i < 2; ++i) tb.tick();
  tb.expect(tb.sem_clear_seen == 0xA5, "sem_clear_o pulse (NumSems bits)", tb.sem_clear_seen, 0xA5);
  tb.expect(tb.pulse_cycles == 1, "sem_clear_o lasts one cycle", tb.pulse_cycles, 1);
  // Every bit of every semaphore through the read mux, each its own value.
  for (uint32_t pattern : {0xFFFFFFFFu, 0xAAAAAAAAu, 0x55555555u, 0x00000000u}) {
    for (unsigned i = 0; i < kSems; ++i) m.sem_value_i[i] = pattern ^ (i * 0x01010101u);
    for (unsigned i = 0; i < spec::reg::SEM_VALUE_COUNT; ++i)
      tb.check_read(spec::reg::SEM_VALUE + i * spec::reg::SEM_VALUE_STRIDE,
                    i < kSems ? pattern ^ (i * 0x01010101u) : 0, "SEM_VALUE[i], every bit");
  }
  for (unsigned i = 0; i < kSems; ++i) m.sem_value_i[i] = 0x1000u * (i + 1) + i;
  for (unsigned i = 0; i < spec::reg::SEM_VALUE_COUNT; ++i)
    tb.check_read(spec::reg::SEM_VALUE + i * spec::reg::SEM_VALUE_STRIDE, i < kSems ? 0x1000u * (i + 1) + i : 0,
                  "SEM_VALUE[i]");

  // Per-core registers.
  for (unsigned c = 0; c < kCores; ++c) {
    const uint32_t lo = 0x10000000u + c * 0x100, hi = 0xABCD0000u | (0x12 + c);
    tb.write(core_addr(c, cr::RING_BASE_LO), lo);
    tb.write(core_addr(c, cr::RING_BASE_HI), hi);
    tb.check_read(core_addr(c, cr::RING_BASE_LO), lo, "RING_BASE_LO");
    tb.check_read(core_addr(c, cr::RING_BASE_HI), hi & 0xFFFF, "RING_BASE_HI keeps bits [47:32]");
    const uint64_t base = get_bits(m.ring_base_o, c * 48, 48);
    tb.expect(base == (uint64_t(hi & 0xFFFF) << 32 | lo), "ring_base_o", base, uint64_t(hi & 0xFFFF) << 32 | lo);
    tb.write(core_addr(c, cr::WIN_BASE_LO), 0x2000 + c);
    tb.write(core_addr(c, cr::WIN_BASE_HI), 0x3 + c);
    tb.write(core_addr(c, cr::WIN_LIMIT_LO), 0x9000 + c);
    tb.write(core_addr(c, cr::WIN_LIMIT_HI), 0x7 + c);
    tb.expect(get_bits(m.win_base_o, c * 48, 48) == ((uint64_t(3 + c) << 32) | (0x2000 + c)), "win_base_o");
    tb.expect(get_bits(m.win_limit_o, c * 48, 48) == ((uint64_t(7 + c) << 32) | (0x9000 + c)), "win_limit_o");
    tb.check_read(core_addr(c, cr::WIN_LIMIT_HI), 7 + c, "WIN_LIMIT_HI");
    tb.write(core_addr(c, cr::RING_SIZE), 0x10040 + c);  // stored in full, as in the golden model
    tb.check_read(core_addr(c, cr::RING_SIZE), 0x10040 + c, "RING_SIZE");
    tb.expect(get_bits(m.ring_size_o, c * 32, 32) == 0x10040 + c, "ring_size_o");
    tb.write(core_addr(c, cr::RING_TAIL), 5 + c);
    tb.expect(get_bits(m.ring_tail_o, c * 32, 32) == 5 + c, "ring_tail_o");

    // Read-only values from the core; writes to them are ignored.
    set_bits(m.ring_head_i, c * 16, 16, 0x30 + c);
    set_bits(m.err_pc_i, c * 16, 16, 0x70 + c);
    tb.check_read(core_addr(c, cr::RING_HEAD), 0x30 + c, "RING_HEAD");
    tb.write(core_addr(c, cr::RING_HEAD), 0xFFFF);
    tb.check_read(core_addr(c, cr::RING_HEAD), 0x30 + c, "RING_HEAD ignores writes");
    tb.check_read(core_addr(c, cr::ERR_PC), 0x70 + c, "ERR_PC");
    for (unsigned bits = 0; bits < 16; ++bits) {
      m.core_busy_i = (bits & 1) << c;
      m.core_done_i = ((bits >> 1) & 1) << c;
      m.core_error_i = ((bits >> 2) & 1) << c;
      m.core_blocked_i = ((bits >> 3) & 1) << c;
      tb.check_read(core_addr(c, cr::STATUS), bits, "core STATUS {blocked,error,done,busy}");
    }
    m.core_busy_i = m.core_done_i = m.core_error_i = m.core_blocked_i = 0;

    // ERR_CAUSE: reads the core's sticky bits, W1C writes leave as clear pulses.
    const uint32_t cause = 0x29;
    m.err_cause_i = cause << (c * kErrCauses);
    tb.check_read(core_addr(c, cr::ERR_CAUSE), cause, "ERR_CAUSE");
    tb.clear_pulses();
    tb.write(core_addr(c, cr::ERR_CAUSE), 0xFFFFFF08);
    for (int i = 0; i < 2; ++i) tb.tick();
    tb.expect(tb.err_clear_seen == (0x08u << (c * kErrCauses)), "err_clear_o pulse", tb.err_clear_seen,
              0x08u << (c * kErrCauses));
    tb.expect(tb.pulse_cycles == 1, "err_clear_o lasts one cycle", tb.pulse_cycles, 1);
    m.err_cause_i = 0;

    // DOORBELL and CTR_CLEAR: bit 0 pulses; other bits and WSTRB 0 do nothing.
    tb.clear_pulses();
    tb.write(core_addr(c, cr::DOORBELL), 1);
    for (int i = 0; i < 2; ++i) tb.tick();
    tb.expect(tb.doorbell_seen == (1u << c) && tb.pulse_cycles == 1, "doorbell_o pulse", tb.doorbell_seen, 1u << c);
    tb.clear_pulses();
    tb.write(core_addr(c, cr::DOORBELL), 2);
    tb.write(core_addr(c, cr::DOORBELL), 1, 0xE);
    for (int i = 0; i < 2; ++i) tb.tick();
    tb.expect(tb.doorbell_seen == 0, "DOORBELL without bit 0 does nothing", tb.doorbell_seen, 0);
    tb.check_read(core_addr(c, cr::DOORBELL), 0, "DOORBELL reads 0");
    tb.clear_pulses();
    tb.write(core_addr(c, cr::CTR_CLEAR), 1);
    for (int i = 0; i < 2; ++i) tb.tick();
    tb.expect(tb.ctr_clear_seen == (1u << c) && tb.pulse_cycles == 1, "ctr_clear_o pulse", tb.ctr_clear_seen,
              1u << c);

    // Counters: LO at base + 8k, HI at + 4.
    for (unsigned k = 0; k < spec::kNumCounters; ++k) {
      const uint64_t v = (uint64_t(0xC0DE0000u + c * 0x100 + k) << 32) | (0x5EED0000u + k * 7 + c);
      set_bits(m.counters_i, (c * spec::kNumCounters + k) * 64, 64, v);
    }
    for (unsigned k = 0; k < spec::kNumCounters; ++k) {
      const uint64_t v = get_bits(m.counters_i, (c * spec::kNumCounters + k) * 64, 64);
      tb.check_read(core_addr(c, cr::COUNTERS + 8 * k), uint32_t(v), "counter LO");
      tb.check_read(core_addr(c, cr::COUNTERS + 8 * k + 4), uint32_t(v >> 32), "counter HI");
    }
  }

  // Unmapped, unaligned and absent-core addresses read 0 and ignore writes.
  tb.clear_pulses();
  const uint32_t holes[] = {0x028, 0x03C, 0x0FC, core_addr(0, 0x34), core_addr(0, 0xF4), core_addr(1, 0xFC),
                            core_addr(kCores, cr::RING_BASE_LO), core_addr(kCores, cr::DOORBELL), 0xFFC};
  for (uint32_t a : holes) {
    tb.write(a, 0xFFFFFFFF);
    tb.check_read(a, 0, "unmapped reads 0");
  }
  tb.write(core_addr(0, cr::RING_BASE_LO) + 1, 0xFFFFFFFF);
  tb.check_read(core_addr(0, cr::RING_BASE_LO) + 1, 0, "unaligned reads 0");
  tb.check_read(core_addr(0, cr::RING_BASE_LO), 0x10000000u, "unaligned write ignored");
  tb.write(spec::reg::SOFT_RESET + 2, 0xFFFFFFFF);
  for (int i = 0; i < 2; ++i) tb.tick();
  tb.expect(tb.pulse_cycles == 0, "no pulses from unmapped writes", tb.pulse_cycles, 0);

  // Random traffic on the rw registers against a model, with random strobes.
  std::vector<uint32_t> rw = {spec::reg::SCRATCH, spec::reg::IRQ_ENABLE, spec::reg::WATCHDOG};
  std::map<uint32_t, uint32_t> mask;
  for (uint32_t a : rw) mask[a] = 0xFFFFFFFF;
  for (unsigned c = 0; c < kCores; ++c) {
    for (uint32_t off : {cr::RING_BASE_LO, cr::RING_SIZE, cr::RING_TAIL, cr::WIN_BASE_LO, cr::WIN_LIMIT_LO})
      mask[core_addr(c, off)] = 0xFFFFFFFF;
    for (uint32_t off : {cr::RING_BASE_HI, cr::WIN_BASE_HI, cr::WIN_LIMIT_HI}) mask[core_addr(c, off)] = 0xFFFF;
  }
  std::map<uint32_t, uint32_t> model;
  for (auto& [a, mk] : mask) model[a] = tb.read(a);
  std::vector<uint32_t> addrs;
  for (auto& [a, mk] : mask) addrs.push_back(a);
  for (int i = 0; i < 400; ++i) {
    const uint32_t a = addrs[std::uniform_int_distribution<size_t>(0, addrs.size() - 1)(rng)];
    if (tb.coin(0.5)) {
      const uint32_t d = uint32_t(rng());
      const uint8_t s = uint8_t(rng() & 0xF);
      uint32_t bm = 0;
      for (int b = 0; b < 4; ++b)
        if (s >> b & 1) bm |= 0xFFu << (8 * b);
      tb.write(a, d, s);
      model[a] = ((model[a] & ~bm) | (d & bm)) & mask[a];
    } else {
      tb.check_read(a, model[a], "random rw traffic");
    }
  }

  const bool asserted = sim.assertion_failed();
  tb.expect(!asserted, "no assertion failures");
  return report("rtl_csr", argv[0], opt, tb.checked, tb.errors);
}
