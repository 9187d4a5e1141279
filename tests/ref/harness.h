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
#include "support/insn_builders.h"

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

/// A byte of device memory read as int8.
inline int8_t s8(uint8_t b) { return int8_t(b); }

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
      set_window(c, hw::DeviceMemory::kBase, hw::DeviceMemory::kBase + hw::DeviceMemory::kCapacity);
    }
  }

  RefDevice& dev() { return *dev_; }
  hw::CoreState& core(unsigned c) { return dev_->fabric().core(c); }

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

// Instruction builders: tests/support/insn_builders.h.
using namespace loom::test;


}  // namespace loom::ref::test
