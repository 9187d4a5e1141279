// Test harness for the ref backend: drives a RefDevice through the runtime
// protocol (alloc, write memory, program ring and window, doorbell, run) and
// builds instructions from the generated spec structs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/ref/ref_device.h"
#include "loom/spec_gen.h"

namespace loom::ref::test {

using spec::Buffer;
using spec::Insn;

/// Seed for randomized tests: LOOM_SEED overrides the fixed default. The seed
/// and the command that reproduces a failure are printed and attached to
/// every assertion of the calling scope via SCOPED_TRACE.
inline uint32_t test_seed(uint32_t fixed) {
  uint32_t seed = fixed;
  if (const char* env = std::getenv("LOOM_SEED")) seed = uint32_t(std::strtoul(env, nullptr, 0));
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("seed=%u (reproduce: LOOM_SEED=%u ./loom_ref_tests --gtest_filter=%s.%s)\n", seed, seed,
              info->test_suite_name(), info->name());
  return seed;
}
#define LOOM_SEED_TRACE(seed) SCOPED_TRACE("seed=" + std::to_string(seed) + " (rerun with LOOM_SEED)")

inline const spec::HwConfig& config(const char* name) { return *spec::find_config(name); }

class Harness {
 public:
  static constexpr uint32_t kRingSize = 64;

  explicit Harness(const char* cfg_name = "tiny") : dev_(std::make_unique<RefDevice>(config(cfg_name))) {
    for (unsigned c = 0; c < dev_->config().cores; ++c) {
      ring_[c] = alloc(uint64_t(kRingSize) * spec::kInsnBytes, 32);
      dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::RING_BASE_LO), uint32_t(ring_[c]));
      dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::RING_BASE_HI), uint32_t(ring_[c] >> 32));
      dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::RING_SIZE), kRingSize);
      // Tests that do not care about isolation get the whole address space.
      set_window(c, DeviceMemory::kBase, DeviceMemory::kBase + DeviceMemory::kCapacity);
    }
  }

  RefDevice& dev() { return *dev_; }
  CoreState& core(unsigned c) { return dev_->fabric().core(c); }

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
  std::vector<uint8_t> get(uint64_t addr, uint64_t n) {
    std::vector<uint8_t> out(n);
    EXPECT_TRUE(dev_->read(addr, out).is_ok());
    return out;
  }

  void set_window(unsigned c, uint64_t base, uint64_t limit) {
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::WIN_BASE_LO), uint32_t(base));
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::WIN_BASE_HI), uint32_t(base >> 32));
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::WIN_LIMIT_LO), uint32_t(limit));
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::WIN_LIMIT_HI), uint32_t(limit >> 32));
  }

  /// Writes instructions into the core's ring after RING_TAIL, advances the
  /// tail and rings the doorbell (the host side of the protocol).
  void submit(unsigned c, const std::vector<Insn>& insns) {
    uint32_t tail = reg(c, spec::core_reg::RING_TAIL);
    for (const Insn& in : insns) {
      std::vector<uint8_t> raw(spec::kInsnBytes);
      for (unsigned w = 0; w < spec::kInsnWords; ++w)
        for (unsigned b = 0; b < 4; ++b) raw[4 * w + b] = uint8_t(in.w[w] >> (8 * b));
      EXPECT_TRUE(dev_->write(ring_[c] + uint64_t(spec::kInsnBytes) * tail, raw).is_ok());
      tail = (tail + 1) % kRingSize;
      EXPECT_NE(tail, reg(c, spec::core_reg::RING_HEAD)) << "test overfilled the ring";
    }
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::RING_TAIL), tail);
    dev_->write_reg(spec::core_reg_addr(c, spec::core_reg::DOORBELL), 1);
  }
  /// submit() then run_until_idle().
  void run(unsigned c, const std::vector<Insn>& insns) {
    submit(c, insns);
    idle();
  }
  void idle() { EXPECT_TRUE(dev_->run_until_idle(1'000'000).is_ok()); }

  uint32_t reg(unsigned c, uint32_t off) { return dev_->read_reg(spec::core_reg_addr(c, off)); }
  uint64_t counter(unsigned c, spec::Counter k) {
    const uint32_t off = spec::counter_offset(k);
    return uint64_t(reg(c, off)) | uint64_t(reg(c, off + 4)) << 32;
  }
  uint32_t err(unsigned c) { return reg(c, spec::core_reg::ERR_CAUSE); }
  uint32_t status(unsigned c) { return reg(c, spec::core_reg::STATUS); }

 private:
  std::unique_ptr<RefDevice> dev_;
  uint64_t ring_[spec::kMaxCores] = {};
};

constexpr uint32_t kBusy = 1, kDone = 2, kError = 4, kBlocked = 8;

// ---- instruction builders (field names as in docs/spec/isa.yaml) ----

inline Insn load(Buffer b, uint64_t sp, uint64_t dram, uint64_t rows, uint64_t cols, uint64_t dram_stride = 0,
                 uint64_t sp_stride = 0, uint64_t pad_lo = 0, uint64_t pad_hi = 0, int64_t pad_value = 0) {
  spec::LoadInsn l;
  l.buf = uint64_t(b);
  l.sp_addr = sp;
  l.dram_addr = dram;
  l.rows = rows;
  l.cols = cols;
  l.dram_stride = dram_stride ? dram_stride : cols;
  l.sp_stride = sp_stride ? sp_stride : cols;
  l.pad_lo = pad_lo;
  l.pad_hi = pad_hi;
  l.pad_value = pad_value;
  return l.encode();
}

inline Insn store(Buffer b, uint64_t sp, uint64_t dram, uint64_t rows, uint64_t cols, uint64_t dram_stride = 0,
                  uint64_t sp_stride = 0) {
  spec::StoreInsn s;
  s.buf = uint64_t(b);
  s.sp_addr = sp;
  s.dram_addr = dram;
  s.rows = rows;
  s.cols = cols;
  s.dram_stride = dram_stride ? dram_stride : cols;
  s.sp_stride = sp_stride ? sp_stride : cols;
  return s.encode();
}

inline Insn end_insn() { return spec::EndInsn{}.encode(); }
inline Insn nop() { return spec::NopInsn{}.encode(); }
inline Insn sem_signal(uint64_t id) {
  spec::SemSignalInsn s;
  s.sem_id = id;
  return s.encode();
}
inline Insn sem_wait(uint64_t id, uint64_t count) {
  spec::SemWaitInsn s;
  s.sem_id = id;
  s.count = count;
  return s.encode();
}

/// Sets the dependency-token flags of an encoded instruction.
inline Insn with_tokens(Insn in, bool pop_prev, bool pop_next, bool push_prev, bool push_next) {
  spec::set_bits(in, 6, 1, pop_prev);
  spec::set_bits(in, 7, 1, pop_next);
  spec::set_bits(in, 8, 1, push_prev);
  spec::set_bits(in, 9, 1, push_next);
  return in;
}

/// Little-endian int32 vector as bytes (PARAM tables, ACC images).
inline std::vector<uint8_t> le32(const std::vector<int32_t>& v) {
  std::vector<uint8_t> out;
  for (int32_t x : v)
    for (int b = 0; b < 4; ++b) out.push_back(uint8_t(uint32_t(x) >> (8 * b)));
  return out;
}
inline std::vector<int32_t> from_le32(const std::vector<uint8_t>& b) {
  std::vector<int32_t> out(b.size() / 4);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = int32_t(uint32_t(b[4 * i]) | uint32_t(b[4 * i + 1]) << 8 | uint32_t(b[4 * i + 2]) << 16 |
                     uint32_t(b[4 * i + 3]) << 24);
  return out;
}

inline std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = uint8_t(d(rng));
  return v;
}
inline int rand_in(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

}  // namespace loom::ref::test
