// Harness for loom_core testbenches: a C++ AXI memory holding the command ring, semaphores and CSR-side helpers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include "Vloom_core.h"
#include "rtl_harness.h"

namespace loom::coretest {

constexpr unsigned kNumCounters = 12;
enum Ctr : unsigned {
  CYCLES_BUSY, CYCLES_COMPUTE, CYCLES_STALL_MEM, CYCLES_STALL_DEP, MACS, BYTES_RD, BYTES_WR,
  INSN_LOAD, INSN_COMPUTE, INSN_STORE, INSN_SYNC, QUEUE_HWM
};
enum Err : unsigned { ILLEGAL = 1u << 0, SLVERR = 1u << 1, DECERR = 1u << 2, WINDOW = 1u << 3,
                      TIMEOUT = 1u << 4, OOB = 1u << 5 };
enum Op : uint32_t { NOP = 0, LOAD = 1, STORE = 2, GEMM = 3, POSTOP = 4, POOL = 5, ELTWISE = 6,
                     SEM_SIGNAL = 7, SEM_WAIT = 8, FENCE = 9, END = 10, ROWNORM = 11, DWCONV = 12 };
enum Flag : uint32_t { POP_PREV = 1u << 6, POP_NEXT = 1u << 7, PUSH_PREV = 1u << 8, PUSH_NEXT = 1u << 9 };

/// A 256-bit instruction. Unit instructions carry the stand-in units'
/// test fields: latency (bits 32..47), AXI beats (112..119) at dram address
/// (64..111), and an injected error (bit 255, cause bits 248..254).
struct Insn {
  uint32_t w[8] = {};
  static Insn op(uint32_t opcode, uint32_t flags = 0) {
    Insn i;
    i.w[0] = opcode | flags;
    return i;
  }
  static Insn unit(uint32_t opcode, uint32_t flags, uint32_t latency, uint32_t beats = 0, uint64_t addr = 0) {
    Insn i = op(opcode, flags);
    i.w[1] = latency & 0xFFFF;
    i.w[2] = uint32_t(addr);
    i.w[3] = uint32_t(addr >> 32) & 0xFFFF;
    i.w[3] |= (beats & 0xFF) << 16;
    return i;
  }
  static Insn sem(uint32_t opcode, uint32_t id, uint32_t count = 0) {
    Insn i = op(opcode);
    i.w[0] |= (id & 0xFF) << 16;
    i.w[1] = count;
    return i;
  }
  Insn& fail(uint32_t cause) {
    w[7] |= 0x80000000u | ((cause & 0x7F) << 24);
    return *this;
  }
};

class CoreTb {
 public:
  static constexpr unsigned kMemBytes = LOOM_MEM_BYTES;  // AXI data width
  static constexpr unsigned kFifoDepth = 4;
  static constexpr unsigned kNumSems = 8;
  static constexpr uint64_t kMemSize = 1 << 20;

  CoreTb(int argc, char** argv, const rtltest::Options& opt)
      : sim_(argc, argv, opt), rng_(opt.seed), mem_(kMemSize, 0) {
    auto& m = sim_.m();
    m.flush_i = 0;
    m.doorbell_i = 0;
    m.ctr_clear_i = 0;
    m.err_clear_i = 0;
    m.watchdog_i = 0;
    m.win_base_i = 0;
    m.win_limit_i = kMemSize;
    m.ring_base_i = 0;
    m.ring_size_i = 0;
    m.ring_tail_i = 0;
    m.m_axi_arready = 0;
    m.m_axi_rvalid = 0;
    m.m_axi_awready = 0;
    m.m_axi_wready = 0;
    m.m_axi_bvalid = 0;
    sim_.reset();
  }

  // --- checks -------------------------------------------------------------
  uint64_t checked = 0, errors = 0;
  bool check(bool ok, const char* what) {
    ++checked;
    if (!ok) {
      ++errors;
      std::printf("  FAIL [%s] cycle %llu: %s\n", scenario_, (unsigned long long)sim_.cycles(), what);
    }
    return ok;
  }
  bool check_eq(uint64_t got, uint64_t want, const char* what) {
    ++checked;
    if (got != want) {
      ++errors;
      std::printf("  FAIL [%s] cycle %llu: %s: got %llu want %llu\n", scenario_, (unsigned long long)sim_.cycles(),
                  what, (unsigned long long)got, (unsigned long long)want);
      return false;
    }
    return true;
  }
  void begin(const char* name) {
    scenario_ = name;
    std::printf("scenario %s\n", name);
  }

  // --- memory and ring ----------------------------------------------------
  uint64_t ring_base = 0;
  uint32_t ring_size = 0;
  uint32_t tail = 0;
  /// Addresses in [lo, hi) answer with this response (2 SLVERR, 3 DECERR).
  uint64_t err_lo = 0, err_hi = 0;
  uint32_t err_resp = 0;
  unsigned latency = 4;      // cycles from AR to first R beat
  double r_gap = 0.2;        // probability of an idle cycle between R beats
  double ready_stall = 0.2;  // probability arready/awready/wready low
  bool hold_aw = false;      // keep awready low (a write request stays pending)
  std::vector<uint32_t> sems = std::vector<uint32_t>(kNumSems, 0);
  unsigned sem_signals = 0, irq_done = 0, irq_err = 0;
  uint64_t fetch_bursts = 0;

  uint8_t& byte(uint64_t addr) { return mem_[addr]; }
  void set_ring(uint64_t base, uint32_t size) {
    ring_base = base;
    ring_size = size;
    sim_->ring_base_i = base;
    sim_->ring_size_i = size;
  }
  void put(uint32_t idx, const Insn& insn) {
    for (unsigned w = 0; w < 8; ++w)
      for (unsigned b = 0; b < 4; ++b) mem_[ring_base + 32ull * idx + 4 * w + b] = uint8_t(insn.w[w] >> (8 * b));
  }
  /// Appends instructions at the tail and rings the doorbell.
  void push(const std::vector<Insn>& prog, bool ring = true) {
    for (const Insn& i : prog) {
      put(tail, i);
      tail = (tail + 1) % ring_size;
    }
    sim_->ring_tail_i = tail;
    if (ring) doorbell();
  }
  void doorbell() {
    sim_->doorbell_i = 1;
    step();
    sim_->doorbell_i = 0;
  }
  void flush() {
    sim_->flush_i = 1;
    step();
    sim_->flush_i = 0;
    tail = 0;
    sim_->ring_tail_i = 0;
  }

  // --- status ---------------------------------------------------------------
  uint64_t ctr(unsigned i) {
    return uint64_t(sim_.m().counters_o[2 * i]) | uint64_t(sim_.m().counters_o[2 * i + 1]) << 32;
  }
  bool busy() { return sim_.m().busy_o; }
  bool done() { return sim_.m().done_o; }
  bool blocked() { return sim_.m().blocked_o; }
  bool error() { return sim_.m().error_o; }
  uint32_t cause() { return sim_.m().err_cause_o; }
  uint32_t err_pc() { return sim_.m().err_pc_o; }
  uint32_t head() { return sim_.m().ring_head_o; }
  uint64_t cycles() { return sim_.cycles(); }
  Vloom_core& m() { return sim_.m(); }

  /// Runs until pred() holds (checked after each cycle) or max cycles pass.
  bool run_until(const std::function<bool()>& pred, uint64_t max, const char* what) {
    for (uint64_t i = 0; i < max; ++i) {
      if (pred()) return true;
      step();
    }
    return check(pred(), what);
  }
  void run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) step();
  }
  /// Idle after a doorbell: the core dropped busy (END, error or empty ring).
  bool wait_idle(uint64_t max = 20000) {
    return run_until([&] { return !busy(); }, max, "core did not go idle");
  }
  std::function<void()> on_cycle;  // called after every cycle (observers)

  /// One clock cycle with the AXI memory and semaphores answering.
  void step() {
    auto& m = sim_.m();
    std::bernoulli_distribution stall(ready_stall), gap(r_gap);
    // Drive slave outputs for this cycle.
    m.m_axi_arready = !stall(rng_);
    m.m_axi_awready = !stall(rng_) && !hold_aw;
    m.m_axi_wready = !stall(rng_);
    if (!r_cur_) pick_r_beat(gap(rng_));
    for (unsigned i = 0; i < kNumSems; ++i) m.sem_value_i[i] = sems[i];
    if (!b_pending_.empty() && b_pending_.front().due <= sim_.cycles()) {
      m.m_axi_bvalid = 1;
      m.m_axi_bresp = b_pending_.front().resp;
    } else {
      m.m_axi_bvalid = 0;
    }
    sim_.settle();
    // Sample handshakes before the edge.
    const bool ar = m.m_axi_arvalid && m.m_axi_arready;
    const bool r = m.m_axi_rvalid && m.m_axi_rready;
    const bool aw = m.m_axi_awvalid && m.m_axi_awready;
    const bool w = m.m_axi_wvalid && m.m_axi_wready;
    const bool b = m.m_axi_bvalid && m.m_axi_bready;
    Burst nb{};
    if (ar) {
      nb = Burst{m.m_axi_arid, m.m_axi_araddr, unsigned(m.m_axi_arlen) + 1, 0, sim_.cycles() + latency};
      check_ar(nb);
    }
    if (aw) aw_q_.push_back(Burst{m.m_axi_awid, m.m_axi_awaddr, unsigned(m.m_axi_awlen) + 1, 0, 0});
    bool wlast = w && m.m_axi_wlast;
    uint8_t w_data[kMemBytes];
    uint64_t w_strb = 0;
    if (w) {
      load_data(m.m_axi_wdata, w_data, kMemBytes);
      w_strb = uint64_t(m.m_axi_wstrb);
    }
    if (m.sem_signal_o) {
      if (m.sem_id_o < kNumSems && sems[m.sem_id_o] != 0xFFFFFFFFu) ++sems[m.sem_id_o];
      ++sem_signals;
    }
    sim_.tick();
    if (m.irq_done_o) ++irq_done;
    if (m.irq_err_o) ++irq_err;
    if (ar) r_q_[nb.id & 1].push_back(nb);
    if (r) {
      Burst& cur = r_q_[r_id_].front();
      if (++cur.beat == cur.beats) r_q_[r_id_].pop_front();
      r_cur_ = false;
      m.m_axi_rvalid = 0;
    }
    if (w) {
      // Store the beat under its strobes at the open AW's address.
      if (!aw_q_.empty()) {
        const uint64_t a = aw_q_.front().addr + uint64_t(w_beats_) * kMemBytes;
        for (unsigned i = 0; i < kMemBytes; ++i)
          if (((w_strb >> i) & 1) && a + i < kMemSize && resp_for(a) == 0) mem_[a + i] = w_data[i];
      }
      w_beats_++;
    }
    if (wlast) {
      check(!aw_q_.empty(), "W burst before its AW");
      if (!aw_q_.empty()) {
        const Burst bb = aw_q_.front();
        aw_q_.pop_front();
        check_eq(w_beats_, bb.beats, "W beats match AWLEN");
        b_pending_.push_back(BResp{sim_.cycles() + 3, resp_for(bb.addr)});
      }
      w_beats_ = 0;
    }
    if (b) b_pending_.pop_front();
    if (on_cycle) on_cycle();
  }

  bool assertion_failed() { return sim_.assertion_failed(); }
  /// Read bursts of an ID still owed data, and write bursts owed a response.
  size_t reads_in_flight(unsigned id) const { return r_q_[id & 1].size(); }
  size_t writes_in_flight() const { return aw_q_.size() + b_pending_.size(); }

 private:
  struct Burst {
    uint32_t id;
    uint64_t addr;
    unsigned beats, beat;
    uint64_t ready_at;
  };
  struct BResp {
    uint64_t due;
    uint32_t resp;
  };

  // A beat answers with an error if any of its bytes lies in the error range.
  uint32_t resp_for(uint64_t addr) const {
    return (addr < err_hi && addr + kMemBytes > err_lo) ? err_resp : 0;
  }

  void check_ar(const Burst& b) {
    const uint64_t bytes = uint64_t(b.beats) * kMemBytes;
    check((b.addr % kMemBytes) == 0, "AR address aligned to the beat");
    check((b.addr >> 12) == ((b.addr + bytes - 1) >> 12), "AR burst crosses a 4 KiB boundary");
    check(b.beats <= 256, "AR burst longer than 256 beats");
    if (b.id == 0) {
      ++fetch_bursts;
      const uint64_t lo = ring_base & ~uint64_t(kMemBytes - 1);
      check(b.addr >= lo && b.addr + bytes <= ring_base + 32ull * ring_size + kMemBytes - 1,
            "fetch burst outside the ring");
      check(bytes <= 32ull * kFifoDepth + kMemBytes, "fetch burst larger than the FIFO");
    }
  }

  // Chooses the next R beat; bursts of different IDs may interleave.
  void pick_r_beat(bool idle) {
    auto& m = sim_.m();
    m.m_axi_rvalid = 0;
    if (idle) return;
    std::vector<unsigned> ids;
    for (unsigned id = 0; id < 2; ++id)
      if (!r_q_[id].empty() && r_q_[id].front().ready_at <= sim_.cycles()) ids.push_back(id);
    if (ids.empty()) return;
    r_id_ = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng_)];
    const Burst& b = r_q_[r_id_].front();
    const uint64_t a = b.addr + uint64_t(b.beat) * kMemBytes;
    m.m_axi_rvalid = 1;
    m.m_axi_rid = r_id_;
    m.m_axi_rlast = (b.beat + 1 == b.beats);
    m.m_axi_rresp = resp_for(a);
    set_rdata(a);
    r_cur_ = true;
  }

  static void store_data(QData& d, const uint8_t* p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    d = v;
  }
  template <std::size_t N>
  static void store_data(VlWide<N>& d, const uint8_t* p, unsigned n) {
    for (unsigned w = 0; w < n / 4; ++w)
      d[w] = uint32_t(p[4 * w]) | uint32_t(p[4 * w + 1]) << 8 | uint32_t(p[4 * w + 2]) << 16 |
             uint32_t(p[4 * w + 3]) << 24;
  }
  static void load_data(QData d, uint8_t* p, unsigned n) {
    for (unsigned i = 0; i < n; ++i) p[i] = uint8_t(d >> (8 * i));
  }
  template <std::size_t N>
  static void load_data(const VlWide<N>& d, uint8_t* p, unsigned n) {
    for (unsigned i = 0; i < n; ++i) p[i] = uint8_t(d[i / 4] >> (8 * (i % 4)));
  }
  void set_rdata(uint64_t a) {
    uint8_t buf[kMemBytes];
    for (unsigned i = 0; i < kMemBytes; ++i) buf[i] = (a + i < kMemSize) ? mem_[a + i] : 0;
    store_data(sim_.m().m_axi_rdata, buf, kMemBytes);
  }

  rtltest::Sim<Vloom_core> sim_;
  std::mt19937_64 rng_;
  std::vector<uint8_t> mem_;
  const char* scenario_ = "";
  std::deque<Burst> r_q_[2];
  std::deque<Burst> aw_q_;
  std::deque<BResp> b_pending_;
  unsigned w_beats_ = 0;
  unsigned r_id_ = 0;
  bool r_cur_ = false;
};

}  // namespace loom::coretest
