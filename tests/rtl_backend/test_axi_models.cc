// Unit tests of the rtl backend's AXI pieces against scripted traffic, without
// any RTL: pin access, the AXI4 slave memory model, the protocol checker and
// the AXI4-Lite master.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <deque>
#include <random>
#include <vector>

#include "hw/memory.h"
#include "hw/verilated/axi_checker.h"
#include "hw/verilated/axi_lite_master.h"
#include "hw/verilated/axi_memory.h"
#include "hw/verilated/pins.h"

namespace loom::hw {
namespace {

// ---------------------------------------------------------------- pins

/// Same shape as Verilator's VlWide<N> (32-bit words, word 0 least significant).
template <size_t N>
struct FakeWide {
  std::array<uint32_t, N> w{};
  uint32_t& at(size_t i) { return w[i]; }
  const uint32_t& at(size_t i) const { return w[i]; }
  uint32_t* data() { return w.data(); }
  const uint32_t* data() const { return w.data(); }
};

TEST(Pins, IntegralFields) {
  uint8_t valid = 0;
  pins::set(valid, 1, 1, 1);
  EXPECT_EQ(valid, 2);
  EXPECT_EQ(pins::get(valid, 1, 1), 1u);
  EXPECT_EQ(pins::get(valid, 0, 1), 0u);
  uint64_t addr = 0;
  pins::set(addr, 0, 64, 0x1234'5678'9ABC'DEF0ull);
  EXPECT_EQ(pins::get(addr, 0, 64), 0x1234'5678'9ABC'DEF0ull);
  uint16_t ids = 0;
  pins::set(ids, 4, 4, 0xA);
  pins::set(ids, 0, 4, 0x5);
  EXPECT_EQ(ids, 0xA5);
}

TEST(Pins, WideFieldsAndBytes) {
  // Two ports of 64-bit addresses: [1][63:0] is words 2..3.
  FakeWide<4> addr;
  pins::set(addr, 64, 64, 0x0000'BEEF'0000'1000ull);
  pins::set(addr, 0, 64, 0x10ull);
  EXPECT_EQ(pins::get(addr, 64, 64), 0x0000'BEEF'0000'1000ull);
  EXPECT_EQ(pins::get(addr, 0, 64), 0x10ull);
  EXPECT_EQ(addr.w[2], 0x1000u);
  EXPECT_EQ(addr.w[3], 0xBEEFu);
  // Data lanes of port 1 with 16-byte beats start at byte 16.
  FakeWide<8> data;
  std::array<uint8_t, 16> in{}, out{};
  for (unsigned i = 0; i < 16; ++i) in[i] = uint8_t(0xA0 + i);
  pins::set_bytes(data, 16, std::span<const uint8_t>(in));
  pins::get_bytes(data, 16, std::span<uint8_t>(out));
  EXPECT_EQ(in, out);
  EXPECT_EQ(data.w[4], 0xA3A2A1A0u);
  EXPECT_EQ(data.w[0], 0u);
  // Integral data (one 8-byte port) by bytes.
  uint64_t q = 0;
  pins::set_bytes(q, 0, std::span<const uint8_t>(in.data(), 8));
  EXPECT_EQ(q, 0xA7A6A5A4A3A2A1A0ull);
}

// ---------------------------------------------------------------- scripted master

struct Burst {
  uint64_t addr;
  uint8_t len;
  uint8_t id;
  uint8_t size;
  uint8_t burst = kBurstIncr;
};
struct WBeat {
  std::array<uint8_t, kMaxBeatBytes> data{};
  uint64_t strb = ~0ull;
  bool last = false;
};
struct RBeat {
  uint8_t id;
  uint8_t resp;
  bool last;
  uint64_t cycle;
  std::array<uint8_t, kMaxBeatBytes> data;
};

/// A well-behaved AXI4 master fed from queues; ready on R and B is random.
class ScriptMaster {
 public:
  explicit ScriptMaster(uint64_t seed, double ready_prob = 1.0) : rng_(seed), ready_prob_(ready_prob) {}
  std::deque<Burst> ar, aw;
  std::deque<WBeat> w;
  std::vector<RBeat> r;
  std::vector<std::pair<uint8_t, uint8_t>> b;  // id, resp
  std::vector<uint64_t> ar_cycles;

  void drive(AxiPins& p) {
    p.arvalid = !ar.empty();
    if (p.arvalid) p.araddr = ar.front().addr, p.arlen = ar.front().len, p.arid = ar.front().id,
                   p.arsize = ar.front().size, p.arburst = ar.front().burst;
    p.awvalid = !aw.empty();
    if (p.awvalid) p.awaddr = aw.front().addr, p.awlen = aw.front().len, p.awid = aw.front().id,
                   p.awsize = aw.front().size, p.awburst = aw.front().burst;
    p.wvalid = !w.empty();
    if (p.wvalid) p.wdata = w.front().data, p.wstrb = w.front().strb, p.wlast = w.front().last;
    p.rready = coin();
    p.bready = coin();
  }
  void edge(const AxiPins& p, uint64_t cycle) {
    if (p.arvalid && p.arready) ar.pop_front(), ar_cycles.push_back(cycle);
    if (p.awvalid && p.awready) aw.pop_front();
    if (p.wvalid && p.wready) w.pop_front();
    if (p.rvalid && p.rready) r.push_back(RBeat{p.rid, p.rresp, p.rlast, cycle, p.rdata});
    if (p.bvalid && p.bready) b.emplace_back(p.bid, p.bresp);
  }
  bool done() const { return ar.empty() && aw.empty() && w.empty(); }

 private:
  bool coin() { return std::uniform_real_distribution<double>(0, 1)(rng_) < ready_prob_; }
  std::mt19937_64 rng_;
  double ready_prob_;
};

struct Bench {
  explicit Bench(unsigned beat_bytes, const AxiMemoryOptions& o = {}, double ready_prob = 1.0, uint64_t seed = 3)
      : bytes(beat_bytes), model(mem, beat_bytes, o), checker("test", beat_bytes), master(seed, ready_prob) {
    std::printf("bench seed %llu\n", static_cast<unsigned long long>(seed));
  }
  /// Runs until the master has issued everything and the model went idle.
  uint64_t run(uint64_t max_cycles = 100000) {
    uint64_t c = 0;
    for (; c < max_cycles; ++c) {
      AxiPins p;
      model.drive(p);
      master.drive(p);
      checker.edge(p);
      model.edge(p);
      master.edge(p, c);
      if (master.done() && model.idle()) break;
    }
    return c;
  }
  void write_burst(uint64_t addr, const std::vector<uint8_t>& data, uint8_t id) {
    const unsigned beats = unsigned(data.size() / bytes);
    master.aw.push_back(Burst{addr, uint8_t(beats - 1), id, size_log2()});
    for (unsigned i = 0; i < beats; ++i) {
      WBeat wb;
      std::copy_n(data.begin() + i * bytes, bytes, wb.data.begin());
      wb.strb = bytes >= 64 ? ~0ull : (1ull << bytes) - 1;
      wb.last = i + 1 == beats;
      master.w.push_back(wb);
    }
  }
  uint8_t size_log2() const {
    uint8_t s = 0;
    while ((1u << s) < bytes) ++s;
    return s;
  }
  unsigned bytes;
  DeviceMemory mem;
  AxiMemoryModel model;
  AxiChecker checker;
  ScriptMaster master;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + 7 * i);
  return v;
}

// ---------------------------------------------------------------- memory model

TEST(AxiMemory, ReadBurstHonoursLatency) {
  AxiMemoryOptions o;
  o.read_latency = 10;
  Bench t(8, o);
  const uint64_t a = *t.mem.alloc(4096, 4096);
  const auto data = pattern(64, 1);
  ASSERT_TRUE(t.mem.host_write(a, data).is_ok());
  t.master.ar.push_back(Burst{a, 7, 1, 3});
  t.run();
  ASSERT_EQ(t.master.r.size(), 8u);
  EXPECT_GE(t.master.r[0].cycle, t.master.ar_cycles[0] + 10);
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(t.master.r[i].last, i == 7);
    EXPECT_EQ(t.master.r[i].resp, kRespOkay);
    for (unsigned b = 0; b < 8; ++b) EXPECT_EQ(t.master.r[i].data[b], data[8 * i + b]);
  }
  EXPECT_TRUE(t.checker.status().is_ok()) << t.checker.status().str();
}

TEST(AxiMemory, WriteWithStrobesThenRead) {
  Bench t(16);
  const uint64_t a = *t.mem.alloc(4096, 4096);
  t.write_burst(a, pattern(64, 9), 2);
  // A second burst that writes only the odd bytes of one beat.
  t.master.aw.push_back(Burst{a + 64, 0, 2, 4});
  WBeat wb;
  wb.data.fill(0xEE);
  wb.strb = 0xAAAA;
  wb.last = true;
  t.master.w.push_back(wb);
  t.run();
  ASSERT_EQ(t.master.b.size(), 2u);
  EXPECT_EQ(t.master.b[0], std::make_pair(uint8_t(2), kRespOkay));
  std::vector<uint8_t> got(80);
  ASSERT_TRUE(t.mem.host_read(a, got).is_ok());
  const auto want = pattern(64, 9);
  for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(got[i], want[i]);
  for (unsigned i = 64; i < 80; ++i) EXPECT_EQ(got[i], (i % 2) ? 0xEE : 0x00) << i;
  EXPECT_TRUE(t.checker.status().is_ok()) << t.checker.status().str();
}

TEST(AxiMemory, OutstandingBurstsStallsAndReorderKeepPerIdOrder) {
  AxiMemoryOptions o;
  o.read_latency = 7;
  o.write_latency = 3;
  o.stall_prob = 0.3;
  o.reorder_ids = true;
  o.max_reads = 6;
  o.seed = 11;
  Bench t(8, o, 0.6, 5);
  const uint64_t a = *t.mem.alloc(1 << 16, 4096);
  const auto data = pattern(1 << 16, 3);
  ASSERT_TRUE(t.mem.host_write(a, data).is_ok());
  // 40 bursts over 4 IDs, lengths 1..16 beats, never crossing 4 KiB.
  struct Want {
    uint8_t id;
    uint64_t addr;
    unsigned beats;
  };
  std::vector<Want> want;
  for (unsigned i = 0; i < 40; ++i) {
    const unsigned beats = 1 + (i * 5) % 16;
    const uint64_t addr = a + uint64_t(i) * 256;
    const uint8_t id = uint8_t(i % 4);
    t.master.ar.push_back(Burst{addr, uint8_t(beats - 1), id, 3});
    want.push_back({id, addr, beats});
  }
  t.run();
  EXPECT_TRUE(t.checker.status().is_ok()) << t.checker.status().str();
  // Regroup beats per ID: each ID's bursts must come back in issue order.
  std::array<std::vector<const RBeat*>, 4> per_id;
  for (const auto& r : t.master.r) per_id[r.id].push_back(&r);
  bool reordered = false;
  for (size_t i = 1; i < t.master.r.size(); ++i) reordered |= t.master.r[i].id < t.master.r[i - 1].id && t.master.r[i - 1].last;
  EXPECT_TRUE(reordered) << "reorder_ids never answered out of issue order";
  std::array<size_t, 4> pos{};
  for (const auto& w : want) {
    for (unsigned k = 0; k < w.beats; ++k) {
      ASSERT_LT(pos[w.id], per_id[w.id].size());
      const RBeat& r = *per_id[w.id][pos[w.id]++];
      EXPECT_EQ(r.last, k + 1 == w.beats);
      for (unsigned b = 0; b < 8; ++b) ASSERT_EQ(r.data[b], data[w.addr - a + 8 * k + b]);
    }
  }
}

TEST(AxiMemory, BandwidthLimitsBeatRate) {
  AxiMemoryOptions o;
  o.beats_per_cycle = 0.25;
  o.max_reads = 16;
  Bench t(8, o);
  const uint64_t a = *t.mem.alloc(8192, 4096);
  for (unsigned i = 0; i < 8; ++i) t.master.ar.push_back(Burst{a + i * 128, 15, 0, 3});
  const uint64_t cycles = t.run();
  ASSERT_EQ(t.master.r.size(), 128u);
  EXPECT_GE(cycles, 4u * 127u);
  EXPECT_LE(cycles, 4u * 128u + 16u);
  EXPECT_TRUE(t.checker.status().is_ok());
}

TEST(AxiMemory, ErrorResponses) {
  Bench t(8);
  const uint64_t a = *t.mem.alloc(4096, 4096);
  ASSERT_TRUE(t.mem.host_write(a, pattern(4096, 5)).is_ok());
  t.mem.inject_fault(a + 100, 1, FaultKind::SlvErr);
  t.mem.inject_fault(a + 200, 8, FaultKind::DecErr);
  // Read: beat 12 (bytes 96..103) has the SLVERR byte; beat 25 the DECERR range.
  t.master.ar.push_back(Burst{a + 64, 31, 1, 3});
  // Unallocated memory past the allocation: DECERR on every beat.
  t.master.ar.push_back(Burst{a + 4096, 1, 2, 3});
  // A write over the fault is not performed and answers SLVERR.
  t.write_burst(a + 96, std::vector<uint8_t>(16, 0xCC), 3);
  t.run();
  ASSERT_EQ(t.master.r.size(), 34u);
  for (unsigned i = 0; i < 32; ++i) {
    const uint8_t want = i == 4 ? kRespSlvErr : i == 17 ? kRespDecErr : kRespOkay;
    EXPECT_EQ(t.master.r[i].resp, want) << "beat " << i;
  }
  EXPECT_EQ(t.master.r[32].resp, kRespDecErr);
  EXPECT_EQ(t.master.r[33].resp, kRespDecErr);
  ASSERT_EQ(t.master.b.size(), 1u);
  EXPECT_EQ(t.master.b[0].second, kRespSlvErr);
  std::vector<uint8_t> got(8);
  ASSERT_TRUE(t.mem.host_read(a + 96, got).is_ok());
  EXPECT_NE(got[0], 0xCC);  // the faulting beat was not written
  std::vector<uint8_t> ok(8);
  ASSERT_TRUE(t.mem.host_read(a + 104, ok).is_ok());
  EXPECT_EQ(ok[0], 0xCC);   // the clean beat was
  EXPECT_EQ(t.model.stats().decerr, 3u);
  EXPECT_TRUE(t.checker.status().is_ok()) << t.checker.status().str();
}

// ---------------------------------------------------------------- protocol checker

/// Feeds hand-written wire values cycle by cycle.
struct Wires {
  AxiChecker chk{"m_axi[0]", 8};
  void cycle(const AxiPins& p) { chk.edge(p); }
};

AxiPins ar(uint64_t addr, uint8_t len, bool ready, uint8_t id = 0, uint8_t size = 3, uint8_t burst = kBurstIncr) {
  AxiPins p;
  p.arvalid = true;
  p.arready = ready;
  p.araddr = addr;
  p.arlen = len;
  p.arid = id;
  p.arsize = size;
  p.arburst = burst;
  return p;
}

TEST(AxiChecker, LegalTrafficIsClean) {
  Wires w;
  w.cycle(ar(0x1000, 1, false));
  w.cycle(ar(0x1000, 1, true));
  AxiPins r;
  r.rvalid = r.rready = true;
  w.cycle(r);
  r.rlast = true;
  w.cycle(r);
  EXPECT_EQ(w.chk.violations(), 0u) << w.chk.status().str();
}

TEST(AxiChecker, ValidDroppedOrPayloadChanged) {
  Wires w;
  w.cycle(ar(0x1000, 1, false));
  w.cycle(AxiPins{});  // dropped
  EXPECT_EQ(w.chk.violations(), 1u);
  w.cycle(ar(0x2000, 1, false));
  w.cycle(ar(0x2040, 1, true));  // address changed while waiting
  EXPECT_EQ(w.chk.violations(), 2u);
  EXPECT_NE(w.chk.status().str().find("AR dropped or changed"), std::string::npos);
}

TEST(AxiChecker, IllegalBursts) {
  Wires w;
  w.cycle(ar(0x1000, 0, true, 0, 3, 0));  // FIXED
  EXPECT_EQ(w.chk.violations(), 1u);
  w.cycle(ar(0x1000, 0, true, 0, 2));     // narrow
  EXPECT_EQ(w.chk.violations(), 2u);
  w.cycle(ar(0x1FC0, 15, true));          // 128 bytes from 0x1FC0 crosses 0x2000
  EXPECT_EQ(w.chk.violations(), 3u);
  w.cycle(ar(0x1004, 0, true));           // unaligned
  EXPECT_EQ(w.chk.violations(), 4u);
  EXPECT_NE(w.chk.status().str().find("4 KiB"), std::string::npos);
}

TEST(AxiChecker, WlastMustEndTheBurst) {
  Wires w;
  AxiPins aw;
  aw.awvalid = aw.awready = true;
  aw.awaddr = 0x1000;
  aw.awlen = 2;
  aw.awsize = 3;
  aw.awburst = kBurstIncr;
  w.cycle(aw);
  AxiPins wb;
  wb.wvalid = wb.wready = true;
  wb.wlast = true;  // on beat 1 of 3
  w.cycle(wb);
  EXPECT_EQ(w.chk.violations(), 1u);
  // W leading AW, missing WLAST on the last beat.
  Wires v;
  wb.wlast = false;
  v.cycle(wb);
  v.cycle(wb);
  aw.awlen = 1;
  v.cycle(aw);
  v.cycle(wb);  // beat 3 of a 2-beat burst
  EXPECT_GE(v.chk.violations(), 1u);
}

TEST(AxiChecker, ResponsesNeedIssuedIds) {
  Wires w;
  AxiPins b;
  b.bvalid = b.bready = true;
  b.bid = 5;
  w.cycle(b);
  EXPECT_EQ(w.chk.violations(), 1u);
  AxiPins r;
  r.rvalid = r.rready = true;
  r.rlast = true;
  r.rid = 3;
  w.cycle(r);
  EXPECT_EQ(w.chk.violations(), 2u);
  // RLAST early on a two-beat read.
  w.cycle(ar(0x1000, 1, true, 3));
  w.cycle(r);
  EXPECT_EQ(w.chk.violations(), 3u);
}

TEST(AxiChecker, CatchesAMisbehavingSlave) {
  // The checker also watches the memory model: a slave that drops RVALID.
  Wires w;
  w.cycle(ar(0x1000, 1, true));
  AxiPins r;
  r.rvalid = true;  // not taken
  w.cycle(r);
  w.cycle(AxiPins{});
  EXPECT_EQ(w.chk.violations(), 1u);
  EXPECT_NE(w.chk.messages()[0].find("slave: R dropped"), std::string::npos);
}

// ---------------------------------------------------------------- AXI4-Lite master

/// A register slave with random ready delays.
struct LiteSlave {
  std::mt19937 rng{7};
  std::array<uint32_t, 1024> regs{};
  bool bvalid = false, rvalid = false;
  uint32_t rdata = 0;
  void drive(LitePins& p) {
    p.awready = !bvalid && rng() % 3 == 0;
    p.wready = p.awready;
    p.arready = !rvalid && rng() % 2 == 0;
    p.bvalid = bvalid;
    p.rvalid = rvalid;
    p.rdata = rdata;
  }
  void edge(const LitePins& p) {
    if (p.bvalid && p.bready) bvalid = false;
    if (p.rvalid && p.rready) rvalid = false;
    if (p.awvalid && p.awready && p.wvalid && p.wready) {
      regs[p.awaddr / 4] = p.wdata;
      bvalid = true;
    }
    if (p.arvalid && p.arready) {
      rdata = regs[p.araddr / 4];
      rvalid = true;
    }
  }
};

TEST(AxiLiteMaster, WritesAndReadsBack) {
  LiteSlave s;
  AxiLiteMaster m;
  auto run = [&] {
    for (int c = 0; c < 100 && m.busy(); ++c) {
      LitePins p;
      s.drive(p);
      m.drive(p);
      s.edge(p);
      m.edge(p);
    }
    return !m.busy();
  };
  for (uint32_t i = 0; i < 20; ++i) {
    m.start_write(4 * i, 0x1000u + i);
    ASSERT_TRUE(run());
  }
  for (uint32_t i = 0; i < 20; ++i) {
    m.start_read(4 * i);
    ASSERT_TRUE(run());
    EXPECT_EQ(m.rdata(), 0x1000u + i);
    EXPECT_EQ(m.resp(), kRespOkay);
  }
}

}  // namespace
}  // namespace loom::hw
