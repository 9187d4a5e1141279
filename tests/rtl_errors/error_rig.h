// Shared rig for the error-path tests: one tiny device (rtl or ref) driven
// through the Device interface as a host driver would, instruction builders,
// and small self-checking workloads that keep a core busy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "loom/spec_gen.h"
#include "support/insn_builders.h"

namespace loom::rtl_errors {

using spec::Buffer;
using spec::Insn;
namespace cr = spec::core_reg;

// Per-core STATUS bits (docs/spec/regs.md).
constexpr uint32_t kBusy = 1, kDone = 2, kError = 4, kBlocked = 8;

inline const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

/// Whether the loom_fabric of `config` was verilated into this build.
inline bool rtl_built(std::string_view config = "tiny") {
  for (auto n : rtl::rtl_configs())
    if (n == config) return true;
  return false;
}

/// Memory options of the rtl runs: the configuration's DRAM latency, fixed seed.
inline rtl::RtlOptions rtl_options(const spec::HwConfig& cfg = tiny()) {
  rtl::RtlOptions opt;
  opt.mem.read_latency = cfg.mem_latency_cycles;
  opt.mem.write_latency = cfg.mem_latency_cycles;
  opt.mem.seed = 11;
  return opt;
}

/// One device (of the tiny configuration unless told) with a 256-entry ring
/// per core and a window covering all of device memory.
class Rig {
 public:
  static constexpr uint32_t kRingSize = 256;

  explicit Rig(std::string_view backend, const spec::HwConfig& cfg = tiny()) : cfg_(cfg) {
    if (backend == "rtl") {
      auto made = rtl::make_rtl_device(cfg, rtl_options(cfg));
      if (!made.is_ok()) {
        ADD_FAILURE() << made.error().str();
        return;
      }
      rtl_ = made->get();
      dev_ = std::move(*made);
    } else {
      auto r = std::make_unique<ref::RefDevice>(cfg);
      ref_ = r.get();
      dev_ = std::move(r);
    }
    for (unsigned c = 0; c < cfg.cores; ++c) {
      ring_[c] = alloc(uint64_t(kRingSize) * spec::kInsnBytes, 32);
      set_ring_base(c, ring_[c]);
      wcreg(c, cr::RING_SIZE, kRingSize);
      set_window(c, hw::DeviceMemory::kBase, hw::DeviceMemory::kBase + hw::DeviceMemory::kCapacity);
    }
  }

  bool ok() const { return dev_ != nullptr; }
  const spec::HwConfig& config() const { return cfg_; }
  /// Device address of core `c`'s command ring.
  uint64_t ring(unsigned c) const { return ring_[c]; }
  /// Moves core `c`'s command ring to `base` (32-byte aligned, kRingSize
  /// entries there); submit() writes there from now on.
  void move_ring(unsigned c, uint64_t base) {
    ring_[c] = base;
    set_ring_base(c, base);
  }
  void set_ring_base(unsigned c, uint64_t base) {
    wcreg(c, cr::RING_BASE_LO, uint32_t(base));
    wcreg(c, cr::RING_BASE_HI, uint32_t(base >> 32));
  }
  bool is_rtl() const { return rtl_ != nullptr; }
  runtime::Device& dev() { return *dev_; }
  rtl::RtlDevice* rtl() { return rtl_; }

  // ---- memory ----
  uint64_t alloc(uint64_t bytes, uint64_t align = 64) {
    auto a = dev_->alloc(bytes, align);
    EXPECT_TRUE(a.is_ok()) << (a.is_ok() ? "" : a.error().str());
    return a.is_ok() ? *a : 0;
  }
  uint64_t put(const std::vector<uint8_t>& bytes) {
    const uint64_t a = alloc(bytes.size());
    EXPECT_TRUE(dev_->write(a, bytes).is_ok());
    return a;
  }
  void fill(uint64_t addr, const std::vector<uint8_t>& bytes) { EXPECT_TRUE(dev_->write(addr, bytes).is_ok()); }
  std::vector<uint8_t> get(uint64_t addr, uint64_t n) {
    std::vector<uint8_t> out(n);
    EXPECT_TRUE(dev_->read(addr, out).is_ok());
    return out;
  }

  // ---- registers ----
  uint32_t greg(uint32_t off) { return dev_->read_reg(off); }
  void wgreg(uint32_t off, uint32_t v) { dev_->write_reg(off, v); }
  uint32_t reg(unsigned c, uint32_t off) { return dev_->read_reg(spec::core_reg_addr(c, off)); }
  void wcreg(unsigned c, uint32_t off, uint32_t v) { dev_->write_reg(spec::core_reg_addr(c, off), v); }
  uint32_t err(unsigned c) { return reg(c, cr::ERR_CAUSE); }
  uint32_t err_pc(unsigned c) { return reg(c, cr::ERR_PC); }
  uint32_t status(unsigned c) { return reg(c, cr::STATUS); }
  uint64_t counter(unsigned c, spec::Counter k) {
    const uint32_t off = spec::counter_offset(k);
    const uint32_t lo = reg(c, off), hi = reg(c, off + 4);
    return uint64_t(lo) | uint64_t(hi) << 32;
  }
  std::array<uint64_t, spec::kNumCounters> counters(unsigned c) {
    std::array<uint64_t, spec::kNumCounters> v{};
    for (unsigned k = 0; k < spec::kNumCounters; ++k) v[k] = counter(c, spec::Counter(k));
    return v;
  }

  void set_window(unsigned c, uint64_t base, uint64_t limit) {
    wcreg(c, cr::WIN_BASE_LO, uint32_t(base));
    wcreg(c, cr::WIN_BASE_HI, uint32_t(base >> 32));
    wcreg(c, cr::WIN_LIMIT_LO, uint32_t(limit));
    wcreg(c, cr::WIN_LIMIT_HI, uint32_t(limit >> 32));
  }

  // ---- command ring (the host side of the protocol) ----
  void submit(unsigned c, const std::vector<Insn>& insns) {
    uint32_t tail = reg(c, cr::RING_TAIL);
    const uint32_t head = reg(c, cr::RING_HEAD);
    for (const Insn& in : insns) {
      std::vector<uint8_t> raw(spec::kInsnBytes);
      for (unsigned w = 0; w < spec::kInsnWords; ++w)
        for (unsigned b = 0; b < 4; ++b) raw[4 * w + b] = uint8_t(in.w[w] >> (8 * b));
      fill(ring_[c] + uint64_t(spec::kInsnBytes) * tail, raw);
      tail = (tail + 1) % kRingSize;
      EXPECT_NE(tail, head) << "test overfilled the ring";
    }
    wcreg(c, cr::RING_TAIL, tail);
    wcreg(c, cr::DOORBELL, 1);
  }
  void run(unsigned c, const std::vector<Insn>& insns) {
    submit(c, insns);
    idle();
  }
  /// Lets the device run until nothing can progress.
  void idle(uint64_t timeout = 2'000'000) {
    const Status s = dev_->run_until_idle(timeout);
    EXPECT_TRUE(s.is_ok()) << s.str();
  }
  /// rtl: clocks `n` cycles; ref (untimed): runs until idle.
  void advance(uint64_t n) {
    if (rtl_)
      rtl_->step(n);
    else
      idle();
  }
  void soft_reset(unsigned c) { wgreg(spec::reg::SOFT_RESET, 1u << c); }

  // ---- backend hooks ----
  void inject_fault(uint64_t addr, uint64_t len, hw::FaultKind k) {
    if (rtl_)
      rtl_->inject_fault(addr, len, k);
    else
      ref_->inject_fault(addr, len, k);
  }
  void clear_faults() {
    if (rtl_)
      rtl_->clear_faults();
    else
      ref_->clear_faults();
  }
  bool irq_line() const { return rtl_ ? rtl_->irq_line() : ref_->irq_line(); }
  /// The semaphore backdoor of either backend; false when it is missing.
  bool preload_semaphore(unsigned i, uint32_t v) {
    return rtl_ ? rtl_->preload_semaphore(i, v) : ref_->fabric().preload_semaphore(i, v);
  }
  uint32_t semaphore(unsigned i) { return greg(spec::reg::SEM_VALUE + 4 * i); }
  /// Memory-port statistics summed over ports (rtl only; zeros on ref).
  hw::AxiMemoryStats mem_stats() const {
    hw::AxiMemoryStats s;
    if (!rtl_) return s;
    for (unsigned p = 0; p < rtl_->mem_ports(); ++p) {
      const auto& q = rtl_->memory_port(p).stats();
      s.read_bursts += q.read_bursts;
      s.write_bursts += q.write_bursts;
      s.read_beats += q.read_beats;
      s.write_beats += q.write_beats;
      s.slverr += q.slverr;
      s.decerr += q.decerr;
    }
    return s;
  }
  /// Protocol checkers, RTL assertions and register accesses (rtl); ok on ref.
  Status health() const { return rtl_ ? rtl_->health() : Status::ok(); }

 private:
  const spec::HwConfig& cfg_;
  std::unique_ptr<runtime::Device> dev_;
  rtl::RtlDevice* rtl_ = nullptr;
  ref::RefDevice* ref_ = nullptr;
  uint64_t ring_[spec::kMaxCores] = {};
};

/// Parameterized over the backend; rtl cases skip when the model is absent.
class OnBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "rtl" && !rtl_built()) GTEST_SKIP() << "tiny loom_fabric not verilated into this build";
  }
  bool rtl() const { return GetParam() == "rtl"; }
};

inline std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

/// Parameterized over (backend, configuration); rtl cases skip when that
/// configuration's model is absent.
class OnConfig : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    if (backend() == "rtl" && !rtl_built(config_name()))
      GTEST_SKIP() << config_name() << " loom_fabric not verilated into this build";
  }
  const std::string& backend() const { return std::get<0>(GetParam()); }
  const std::string& config_name() const { return std::get<1>(GetParam()); }
  const spec::HwConfig& config() const { return *spec::find_config(config_name()); }
};
/// tiny and small, each on rtl and ref.
inline auto every_config() {
  return ::testing::Combine(::testing::Values("rtl", "ref"), ::testing::Values("tiny", "small"));
}
inline std::string config_case_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

// ---- instruction builders: tests/support/insn_builders.h, plus GEMM ----
using namespace loom::test;

/// C[m x n] (int32 in ACC at `acc`, row pitch 4n) = A[m x k] (IN at `in`) * B[k x n] (WGT at `wgt`).
inline Insn gemm(uint64_t in, uint64_t wgt, uint64_t acc, uint64_t m, uint64_t n, uint64_t k) {
  spec::GemmInsn g;
  g.in_addr = in;
  g.wgt_addr = wgt;
  g.acc_addr = acc;
  g.m = m;
  g.n = n;
  g.k_len = k;
  g.lda = k;
  g.ldb = n;
  g.ldc = 4 * n;
  return g.encode();
}


/// A self-checking stream for one core: `pairs` LOAD->FENCE->STORE copies of
/// `bytes` bytes through OUT, then one 4x4x8 GEMM stored from ACC, then END
/// (unless `with_end` is false). Knows its results and retired-instruction
/// counters.
struct Work {
  std::vector<Insn> prog;
  uint64_t copy_dst = 0, gemm_dst = 0;
  std::vector<uint8_t> copy_want, gemm_want;
  uint64_t loads = 0, stores = 0, computes = 0, syncs = 0, bytes_rd = 0, bytes_wr = 0, macs = 0;

  static Work make(Rig& r, unsigned pairs, unsigned bytes, uint32_t seed, bool with_end = true) {
    constexpr unsigned kM = 4, kN = 4, kK = 8;
    constexpr unsigned kOutBytes = 8 * 1024;
    Work w;
    std::mt19937 rng(seed);
    w.copy_want = random_bytes(rng, size_t(pairs) * bytes);
    const uint64_t src = r.put(w.copy_want);
    w.copy_dst = r.put(std::vector<uint8_t>(w.copy_want.size(), 0xDD));
    const unsigned regions = kOutBytes / bytes;
    const unsigned cols = std::min(bytes, 64u), rows = bytes / cols;
    for (unsigned i = 0; i < pairs; ++i) {
      const uint64_t sp = uint64_t(i % regions) * bytes;
      w.prog.push_back(load(Buffer::OUT, sp, src + uint64_t(i) * bytes, rows, cols));
      w.prog.push_back(fence());
      w.prog.push_back(store(Buffer::OUT, sp, w.copy_dst + uint64_t(i) * bytes, rows, cols));
    }
    const auto a = random_bytes(rng, kM * kK), b = random_bytes(rng, kK * kN);
    const uint64_t a_addr = r.put(a), b_addr = r.put(b);
    w.gemm_dst = r.put(std::vector<uint8_t>(kM * kN * 4, 0xDD));
    w.prog.push_back(load(Buffer::IN, 0, a_addr, kM, kK));
    w.prog.push_back(load(Buffer::WGT, 0, b_addr, kK, kN));
    w.prog.push_back(fence());
    w.prog.push_back(gemm(0, 0, 0, kM, kN, kK));
    w.prog.push_back(fence());
    w.prog.push_back(store(Buffer::ACC, 0, w.gemm_dst, kM, 4 * kN));
    if (with_end) w.prog.push_back(end_insn());
    for (unsigned i = 0; i < kM; ++i)
      for (unsigned j = 0; j < kN; ++j) {
        int32_t s = 0;
        for (unsigned k = 0; k < kK; ++k) s += int32_t(int8_t(a[i * kK + k])) * int32_t(int8_t(b[k * kN + j]));
        for (unsigned q = 0; q < 4; ++q) w.gemm_want.push_back(uint8_t(uint32_t(s) >> (8 * q)));
      }
    w.loads = pairs + 2;
    w.stores = pairs + 1;
    w.computes = 1;
    w.syncs = pairs + 2 + (with_end ? 1 : 0);
    w.bytes_rd = uint64_t(pairs) * bytes + kM * kK + kK * kN;
    w.bytes_wr = uint64_t(pairs) * bytes + kM * kN * 4;
    w.macs = kM * kN * kK;
    return w;
  }

  /// Checks the results in memory.
  void expect_results(Rig& r) const {
    EXPECT_EQ(r.get(copy_dst, copy_want.size()), copy_want) << "copy results";
    EXPECT_EQ(r.get(gemm_dst, gemm_want.size()), gemm_want) << "GEMM results";
  }
  /// Checks the architectural counters of core `c`: `base` (a snapshot
  /// taken before the stream) plus this stream plus `extra_syncs`.
  void expect_counters(Rig& r, unsigned c, uint64_t extra_syncs = 0,
                       const std::array<uint64_t, spec::kNumCounters>& base = {}) const {
    using K = spec::Counter;
    const auto at = [&](K k) { return base[size_t(k)]; };
    EXPECT_EQ(r.counter(c, K::INSN_LOAD), at(K::INSN_LOAD) + loads);
    EXPECT_EQ(r.counter(c, K::INSN_STORE), at(K::INSN_STORE) + stores);
    EXPECT_EQ(r.counter(c, K::INSN_COMPUTE), at(K::INSN_COMPUTE) + computes);
    EXPECT_EQ(r.counter(c, K::INSN_SYNC), at(K::INSN_SYNC) + syncs + extra_syncs);
    EXPECT_EQ(r.counter(c, K::BYTES_RD), at(K::BYTES_RD) + bytes_rd);
    EXPECT_EQ(r.counter(c, K::BYTES_WR), at(K::BYTES_WR) + bytes_wr);
    EXPECT_EQ(r.counter(c, K::MACS), at(K::MACS) + macs);
  }
  /// This stream's architectural counter increments, as a counter array.
  std::array<uint64_t, spec::kNumCounters> counts(uint64_t extra_syncs = 0) const {
    using K = spec::Counter;
    std::array<uint64_t, spec::kNumCounters> v{};
    v[size_t(K::INSN_LOAD)] = loads;
    v[size_t(K::INSN_STORE)] = stores;
    v[size_t(K::INSN_COMPUTE)] = computes;
    v[size_t(K::INSN_SYNC)] = syncs + extra_syncs;
    v[size_t(K::BYTES_RD)] = bytes_rd;
    v[size_t(K::BYTES_WR)] = bytes_wr;
    v[size_t(K::MACS)] = macs;
    return v;
  }
  /// Concatenation helper: this stream's instructions followed by `tail`.
  std::vector<Insn> then(std::vector<Insn> tail) const {
    std::vector<Insn> v = prog;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  }
};

/// Architectural (untimed) counters: identical on every backend.
inline bool architectural(unsigned k) {
  using K = spec::Counter;
  switch (spec::Counter(k)) {
    case K::MACS:
    case K::BYTES_RD:
    case K::BYTES_WR:
    case K::INSN_LOAD:
    case K::INSN_COMPUTE:
    case K::INSN_STORE:
    case K::INSN_SYNC:
      return true;
    default:
      return false;
  }
}

}  // namespace loom::rtl_errors
