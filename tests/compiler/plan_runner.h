// Test helper: runs a compiled plan's per-core streams on the ref device the
// way a host does (memory, relocation, rings, windows, doorbells, refills)
// and reads the outputs back.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/ref/ref_device.h"
#include "common/status.h"
#include "plan/plan.h"

namespace loom::compiler::test {

/// Adds `base` to the device address of LOAD/STORE instructions.
inline spec::Insn relocate(spec::Insn in, uint64_t base) {
  const auto op = spec::Opcode(in.w[0] & 63u);
  if (op == spec::Opcode::LOAD) {
    auto d = spec::LoadInsn::decode(in);
    d.dram_addr += base;
    return d.encode();
  }
  if (op == spec::Opcode::STORE) {
    auto d = spec::StoreInsn::decode(in);
    d.dram_addr += base;
    return d.encode();
  }
  return in;
}

struct RunStats {
  uint64_t rounds = 0;  // run_until_idle calls (more than one: the rings were refilled)
};

inline Expected<std::map<std::string, Tensor>> run_plan(const plan::Plan& p, const spec::HwConfig& cfg,
                                                        const std::map<std::string, Tensor>& inputs,
                                                        uint32_t ring_size = 64, RunStats* stats = nullptr) {
  using namespace spec;
  auto made = ref::make_ref_device(cfg);
  if (!made) return made.error();
  runtime::Device& dev = **made;
  auto base_or = dev.alloc(std::max<uint64_t>(p.memory_bytes, 64), 4096);
  if (!base_or) return base_or.error();
  const uint64_t base = *base_or;
  LOOM_TRY(dev.write(base + p.constants_offset, p.constants));
  for (const auto& b : p.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) return make_error("run_plan", "missing input '" + b.name + "'");
    LOOM_TRY(dev.write(base + b.offset, it->second.data));
  }
  const unsigned ncores = unsigned(p.cores.size());
  std::vector<uint64_t> ring(ncores);
  std::vector<size_t> next(ncores, 0);
  for (unsigned c = 0; c < ncores; ++c) {
    auto r = dev.alloc(uint64_t(ring_size) * kInsnBytes, 32);
    if (!r) return r.error();
    ring[c] = *r;
    dev.write_reg(core_reg_addr(c, core_reg::RING_BASE_LO), uint32_t(ring[c]));
    dev.write_reg(core_reg_addr(c, core_reg::RING_BASE_HI), uint32_t(ring[c] >> 32));
    dev.write_reg(core_reg_addr(c, core_reg::RING_SIZE), ring_size);
    const uint64_t limit = base + std::max<uint64_t>(p.memory_bytes, 64);
    dev.write_reg(core_reg_addr(c, core_reg::WIN_BASE_LO), uint32_t(base));
    dev.write_reg(core_reg_addr(c, core_reg::WIN_BASE_HI), uint32_t(base >> 32));
    dev.write_reg(core_reg_addr(c, core_reg::WIN_LIMIT_LO), uint32_t(limit));
    dev.write_reg(core_reg_addr(c, core_reg::WIN_LIMIT_HI), uint32_t(limit >> 32));
  }
  dev.write_reg(reg::SEM_CLEAR, (1u << cfg.semaphores) - 1);
  std::vector<uint32_t> last_heads;
  for (uint64_t round = 0;; ++round) {
    bool wrote = false;
    for (unsigned c = 0; c < ncores; ++c) {
      const auto& s = p.cores[c];
      const uint32_t head = dev.read_reg(core_reg_addr(c, core_reg::RING_HEAD));
      uint32_t tail = dev.read_reg(core_reg_addr(c, core_reg::RING_TAIL));
      bool any = false;
      // One slot stays empty so a full ring is distinguishable from an empty one.
      while (next[c] < s.size() && (tail + 1) % ring_size != head) {
        const Insn in = relocate(s[next[c]++], base);
        std::vector<uint8_t> raw(kInsnBytes);
        for (unsigned w = 0; w < kInsnWords; ++w)
          for (unsigned b = 0; b < 4; ++b) raw[4 * w + b] = uint8_t(in.w[w] >> (8 * b));
        LOOM_TRY(dev.write(ring[c] + uint64_t(kInsnBytes) * tail, raw));
        tail = (tail + 1) % ring_size;
        any = true;
      }
      if (any) {
        dev.write_reg(core_reg_addr(c, core_reg::RING_TAIL), tail);
        dev.write_reg(core_reg_addr(c, core_reg::DOORBELL), 1);
        wrote = true;
      }
    }
    LOOM_TRY(dev.run_until_idle(100'000'000));
    bool all_done = true;
    for (unsigned c = 0; c < ncores; ++c) {
      const uint32_t err = dev.read_reg(core_reg_addr(c, core_reg::ERR_CAUSE));
      if (err) {
        std::string names;
        for (unsigned b = 0; b < kErrorNames.size(); ++b)
          if (err >> b & 1u) names += std::string(names.empty() ? "" : ",") + std::string(kErrorNames[b]);
        return make_error(
            "core " + std::to_string(c),
            "error " + names + " at ring index " + std::to_string(dev.read_reg(core_reg_addr(c, core_reg::ERR_PC))));
      }
      const bool done = dev.read_reg(core_reg_addr(c, core_reg::STATUS)) & 2u;
      all_done = all_done && done && next[c] == p.cores[c].size();
    }
    if (stats) stats->rounds = round + 1;
    if (all_done) break;
    std::vector<uint32_t> heads(ncores);
    for (unsigned c = 0; c < ncores; ++c) heads[c] = dev.read_reg(core_reg_addr(c, core_reg::RING_HEAD));
    if (!wrote && heads == last_heads) return make_error("run_plan", "the cores stopped before END (stuck)");
    last_heads = heads;
  }
  std::map<std::string, Tensor> out;
  for (const auto& b : p.outputs) {
    Tensor t(b.dtype, b.shape);
    LOOM_TRY(dev.read(base + b.offset, t.data));
    out[b.name] = std::move(t);
  }
  return out;
}

}  // namespace loom::compiler::test
