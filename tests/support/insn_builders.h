// Instruction builders and byte helpers shared by the tests that drive a
// device with hand-written command streams (field names as in docs/spec/isa.md).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "loom/spec_gen.h"

namespace loom::test {

using spec::Buffer;
using spec::Insn;

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
inline Insn fence() { return spec::FenceInsn{}.encode(); }
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

}  // namespace loom::test
