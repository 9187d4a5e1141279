// Testbench for loom_axi_mux: random read/write bursts from three masters into a C++ memory, checking routing, burst integrity on W and handshake rules.
#include <cinttypes>
#include <deque>
#include <vector>

#include "Vloom_axi_mux.h"
#include "rtl_harness.h"

namespace {

using MuxSim = loom::rtltest::Sim<Vloom_axi_mux>;

// Must match the -G parameters in CMakeLists.txt.
constexpr unsigned kMasters = 3, kTagBase = 1, kTagStride = 2;
constexpr unsigned tag_of(unsigned j) { return kTagBase + j * kTagStride; }

uint64_t rdata_of(uint64_t addr, unsigned beat) { return (addr * 0x9E3779B97F4A7C15ull) ^ (beat * 0x1234567ull); }
uint64_t wdata_of(unsigned m, uint64_t addr, unsigned beat) { return (addr << 8) ^ (uint64_t(m) << 60) ^ beat; }

struct Burst {
  uint64_t addr;
  unsigned len;  // beats - 1
  unsigned id;
};

struct Master {
  std::deque<Burst> ar_todo, aw_todo;
  std::deque<Burst> w_todo;  // bursts whose W beats are still to send, in AW order
  unsigned w_beat = 0;
  std::deque<Burst> r_wait[2], b_wait[2];  // per own ID, in issue order
  unsigned r_beat[2] = {0, 0};
  bool ar_on = false, aw_on = false;
  unsigned reads_done = 0, writes_done = 0;
};

struct MemBurst {
  Burst b;
  unsigned fid;  // full ID as seen on the port
  unsigned beat = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::rtltest;
  const Options opt = parse_options(argc, argv, 20240612);
  print_seed("rtl_axi_mux", opt);
  std::mt19937_64 rng(opt.seed);
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };

  MuxSim sim(argc, argv, opt);
  auto& m = sim.m();
  sim.reset();

  uint64_t checked = 0, errors = 0;
  auto expect = [&](bool ok, const char* what, uint64_t got = 0, uint64_t want = 0) {
    ++checked;
    if (!ok && ++errors < 20)
      std::printf("  mismatch: %s: got 0x%" PRIx64 " want 0x%" PRIx64 " (cycle %" PRIu64 ")\n", what, got, want,
                  sim.cycles());
  };

  // Work: each master gets a random list of bursts on both channels.
  const unsigned kBursts = 150;
  std::vector<Master> ms(kMasters);
  unsigned total_r = 0, total_w = 0;
  for (unsigned j = 0; j < kMasters; ++j) {
    for (unsigned n = 0; n < kBursts; ++n) {
      const Burst b{(uint64_t(j + 1) << 40) | (uint64_t(n) << 12) | (rng() & 0xF8), unsigned(rng() % 8),
                    unsigned(rng() & 1)};
      if (coin(0.5)) {
        ms[j].ar_todo.push_back(b);
        ++total_r;
      } else {
        ms[j].aw_todo.push_back(b);
        ++total_w;
      }
    }
  }

  std::deque<MemBurst> mem_r, mem_w;  // accepted by the memory, in order
  std::deque<MemBurst> mem_b;         // write bursts complete, response pending
  unsigned got_r = 0, got_w = 0;
  // Previous-cycle stalled handshakes on the port: payload must not change.
  bool ar_stall = false, aw_stall = false, w_stall = false;
  uint64_t ar_prev = 0, aw_prev = 0, w_prev = 0;

  for (uint64_t cyc = 0; cyc < 200000 && (got_r < total_r || got_w < total_w); ++cyc) {
    // ---- drive master inputs ----
    uint32_t arvalid = 0, awvalid = 0, wvalid = 0, wlast = 0, rready = 0, bready = 0;
    for (unsigned j = 0; j < kMasters; ++j) {
      Master& s = ms[j];
      // A presented request stays until accepted (AXI); new ones start at random.
      if (!s.ar_on && !s.ar_todo.empty() && coin(0.4)) s.ar_on = true;
      if (!s.aw_on && !s.aw_todo.empty() && coin(0.4)) s.aw_on = true;
      if (s.ar_on) {
        const Burst& b = s.ar_todo.front();
        arvalid |= 1u << j;
        const unsigned sh = j * 48;
        for (unsigned i = 0; i < 48; ++i) {
          const uint32_t bit = (b.addr >> i) & 1;
          auto& w = m.s_araddr_i[(sh + i) / 32];
          w = bit ? (w | (1u << ((sh + i) % 32))) : (w & ~(1u << ((sh + i) % 32)));
        }
        m.s_arlen_i = (m.s_arlen_i & ~(0xFFu << (8 * j))) | (b.len << (8 * j));
        m.s_arsize_i = (m.s_arsize_i & ~(7u << (3 * j))) | (3u << (3 * j));
        m.s_arburst_i = (m.s_arburst_i & ~(3u << (2 * j))) | (1u << (2 * j));
        m.s_arid_i = (m.s_arid_i & ~(1u << j)) | (b.id << j);
      }
      if (s.aw_on) {
        const Burst& b = s.aw_todo.front();
        awvalid |= 1u << j;
        const unsigned sh = j * 48;
        for (unsigned i = 0; i < 48; ++i) {
          const uint32_t bit = (b.addr >> i) & 1;
          auto& w = m.s_awaddr_i[(sh + i) / 32];
          w = bit ? (w | (1u << ((sh + i) % 32))) : (w & ~(1u << ((sh + i) % 32)));
        }
        m.s_awlen_i = (m.s_awlen_i & ~(0xFFu << (8 * j))) | (b.len << (8 * j));
        m.s_awsize_i = (m.s_awsize_i & ~(7u << (3 * j))) | (3u << (3 * j));
        m.s_awburst_i = (m.s_awburst_i & ~(3u << (2 * j))) | (1u << (2 * j));
        m.s_awid_i = (m.s_awid_i & ~(1u << j)) | (b.id << j);
      }
      if (!s.w_todo.empty()) {
        const Burst& b = s.w_todo.front();
        // Once offered, a W beat is held (the mux may not be listening yet).
        wvalid |= 1u << j;
        const uint64_t d = wdata_of(j, b.addr, s.w_beat);
        m.s_wdata_i[2 * j] = uint32_t(d);
        m.s_wdata_i[2 * j + 1] = uint32_t(d >> 32);
        m.s_wstrb_i = (m.s_wstrb_i & ~(0xFFull << (8 * j))) | (uint64_t(0xFF) << (8 * j));
        if (s.w_beat == b.len) wlast |= 1u << j;
      }
      if (coin(0.7)) rready |= 1u << j;
      if (coin(0.7)) bready |= 1u << j;
    }
    m.s_arvalid_i = arvalid;
    m.s_awvalid_i = awvalid;
    m.s_wvalid_i = wvalid;
    m.s_wlast_i = wlast;
    m.s_rready_i = rready;
    m.s_bready_i = bready;

    // ---- drive memory inputs ----
    m.m_arready_i = coin(0.6);
    m.m_awready_i = coin(0.6);
    m.m_wready_i = coin(0.7);
    const bool r_on = !mem_r.empty() && coin(0.7);
    m.m_rvalid_i = r_on;
    if (r_on) {
      // Interleave: serve the oldest or (sometimes) the second-oldest burst of another ID.
      size_t k = 0;
      if (mem_r.size() > 1 && mem_r[1].fid != mem_r[0].fid && coin(0.3)) k = 1;
      std::swap(mem_r[0], mem_r[k]);
      const MemBurst& r = mem_r.front();
      const uint64_t d = rdata_of(r.b.addr, r.beat);
      m.m_rdata_i = d;
      m.m_rresp_i = 0;
      m.m_rlast_i = r.beat == r.b.len;
      m.m_rid_i = r.fid;
    }
    const bool b_on = !mem_b.empty() && coin(0.7);
    m.m_bvalid_i = b_on;
    if (b_on) {
      m.m_bid_i = mem_b.front().fid;
      m.m_bresp_i = 0;
    }
    sim.settle();

    // ---- protocol checks on the port ----
    const uint64_t ar_now = m.m_araddr_o ^ (uint64_t(m.m_arid_o) << 50) ^ (uint64_t(m.m_arlen_o) << 54);
    const uint64_t aw_now = m.m_awaddr_o ^ (uint64_t(m.m_awid_o) << 50) ^ (uint64_t(m.m_awlen_o) << 54);
    const uint64_t w_now = m.m_wdata_o ^ m.m_wlast_o;
    if (ar_stall) expect(m.m_arvalid_o && ar_now == ar_prev, "AR held while stalled");
    if (aw_stall) expect(m.m_awvalid_o && aw_now == aw_prev, "AW held while stalled");
    if (w_stall) expect(m.m_wvalid_o && w_now == w_prev, "W held while stalled");
    ar_stall = m.m_arvalid_o && !m.m_arready_i;
    aw_stall = m.m_awvalid_o && !m.m_awready_i;
    w_stall = m.m_wvalid_o && !m.m_wready_i;
    ar_prev = ar_now;
    aw_prev = aw_now;
    w_prev = w_now;

    // ---- sample handshakes before the edge ----
    const uint32_t s_arready = m.s_arready_o, s_awready = m.s_awready_o, s_wready = m.s_wready_o;
    const uint32_t s_rvalid = m.s_rvalid_o, s_bvalid = m.s_bvalid_o;
    const bool port_ar = m.m_arvalid_o && m.m_arready_i;
    const bool port_aw = m.m_awvalid_o && m.m_awready_i;
    const bool port_w = m.m_wvalid_o && m.m_wready_i;
    const bool port_r = r_on && m.m_rready_o;
    const bool port_b = b_on && m.m_bready_o;

    expect(__builtin_popcount(s_rvalid) <= 1 && __builtin_popcount(s_bvalid) <= 1, "one response target");
    expect(__builtin_popcount(s_arready & arvalid) <= 1 && __builtin_popcount(s_awready & awvalid) <= 1,
           "one address grant per cycle");

    if (port_ar) {
      const unsigned fid = m.m_arid_o;
      const Burst b{m.m_araddr_o, m.m_arlen_o, fid & 1};
      unsigned j = 0;
      while (j < kMasters && tag_of(j) != (fid >> 1)) ++j;
      expect(j < kMasters, "AR tag names a master", fid >> 1);
      expect(j < kMasters && (arvalid & s_arready) == (1u << j), "AR handshake matches the master's");
      expect(m.m_arsize_o == 3 && m.m_arburst_o == 1, "AR size/burst passed");
      mem_r.push_back(MemBurst{b, fid});
    }
    if (port_aw) {
      const unsigned fid = m.m_awid_o;
      unsigned j = 0;
      while (j < kMasters && tag_of(j) != (fid >> 1)) ++j;
      expect(j < kMasters && (awvalid & s_awready) == (1u << j), "AW handshake matches the master's");
      mem_w.push_back(MemBurst{Burst{m.m_awaddr_o, m.m_awlen_o, fid & 1}, fid});
    }
    if (port_w) {
      // W beats must belong to the oldest accepted write burst, in order.
      expect(!mem_w.empty(), "W without an accepted AW");
      if (!mem_w.empty()) {
        MemBurst& w = mem_w.front();
        unsigned j = 0;
        while (j < kMasters && tag_of(j) != (w.fid >> 1)) ++j;
        const uint64_t want = wdata_of(j, w.b.addr, w.beat);
        expect(m.m_wdata_o == want, "W data from the AW's master, in order", m.m_wdata_o, want);
        expect(m.m_wstrb_o == 0xFF, "WSTRB passed");
        expect(bool(m.m_wlast_o) == (w.beat == w.b.len), "WLAST on the last beat", m.m_wlast_o, w.beat == w.b.len);
        expect((wvalid & s_wready) == (1u << j), "W handshake matches the master's");
        if (++w.beat > w.b.len) {
          mem_b.push_back(w);
          mem_w.pop_front();
        }
      }
    } else {
      expect((wvalid & s_wready) == 0, "no W handshake at a master without one on the port");
    }
    if (r_on) {
      const MemBurst r = mem_r.front();
      unsigned j = 0;
      while (j < kMasters && tag_of(j) != (r.fid >> 1)) ++j;
      expect(s_rvalid == (1u << j), "R routed to its master", s_rvalid, 1u << j);
      expect(bool(port_r) == bool(rready >> j & 1), "RREADY from the target master");
      if (port_r) {
        Master& s = ms[j];
        const unsigned id = m.s_rid_o;
        expect(id == (r.fid & 1), "RID restored to the master's ID");
        expect(!s.r_wait[id].empty(), "R for an outstanding read");
        if (!s.r_wait[id].empty()) {
          const Burst& b = s.r_wait[id].front();
          expect(m.s_rdata_o == rdata_of(b.addr, s.r_beat[id]), "R data in order per ID");
          expect(bool(m.s_rlast_o) == (s.r_beat[id] == b.len), "RLAST");
          if (s.r_beat[id]++ == b.len) {
            s.r_beat[id] = 0;
            s.r_wait[id].pop_front();
            ++got_r;
          }
        }
        if (++mem_r.front().beat > r.b.len) mem_r.pop_front();
      }
    }
    if (b_on) {
      const MemBurst b = mem_b.front();
      unsigned j = 0;
      while (j < kMasters && tag_of(j) != (b.fid >> 1)) ++j;
      expect(s_bvalid == (1u << j), "B routed to its master", s_bvalid, 1u << j);
      if (port_b) {
        Master& s = ms[j];
        const unsigned id = m.s_bid_o;
        expect(id == (b.fid & 1), "BID restored");
        expect(!s.b_wait[id].empty() && s.b_wait[id].front().addr == b.b.addr, "B for the oldest write of that ID");
        if (!s.b_wait[id].empty()) s.b_wait[id].pop_front();
        mem_b.pop_front();
        ++got_w;
      }
    }
    // Master-side state updates.
    for (unsigned j = 0; j < kMasters; ++j) {
      Master& s = ms[j];
      if ((arvalid & s_arready) >> j & 1) {
        s.r_wait[s.ar_todo.front().id].push_back(s.ar_todo.front());
        s.ar_todo.pop_front();
        s.ar_on = false;
      }
      if ((awvalid & s_awready) >> j & 1) {
        s.w_todo.push_back(s.aw_todo.front());
        s.b_wait[s.aw_todo.front().id].push_back(s.aw_todo.front());
        s.aw_todo.pop_front();
        s.aw_on = false;
      }
      if ((wvalid & s_wready) >> j & 1) {
        if (s.w_beat++ == s.w_todo.front().len) {
          s.w_beat = 0;
          s.w_todo.pop_front();
        }
      }
    }
    sim.tick();
  }

  expect(got_r == total_r, "all read bursts answered", got_r, total_r);
  expect(got_w == total_w, "all write bursts answered", got_w, total_w);
  expect(!sim.assertion_failed(), "no assertion failures");
  std::printf("rtl_axi_mux: %u read and %u write bursts in %" PRIu64 " cycles\n", got_r, got_w, sim.cycles());
  return report("rtl_axi_mux", argv[0], opt, checked, errors);
}
