// An AXI4 protocol checker for one fabric memory port: watches the wires every
// cycle and counts violations by master (fabric) or slave (memory model).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/status.h"
#include "hw/axi_types.h"

namespace loom::hw {

class AxiChecker {
 public:
  /// `name` prefixes every message (e.g. "m_axi[0]"); `beat_bytes` is MemBytes.
  AxiChecker(std::string name, unsigned beat_bytes, unsigned max_messages = 16);

  /// One cycle's values, sampled just before the rising edge (out of reset).
  void edge(const hw::AxiPins& p);
  /// Forgets outstanding state, e.g. across a fabric reset.
  void reset();

  uint64_t violations() const { return violations_; }
  uint64_t cycles() const { return cycle_; }
  /// The first `max_messages` violations, each with its cycle.
  const std::vector<std::string>& messages() const { return messages_; }
  /// Ok, or an error listing the violations.
  Status status() const;

 private:
  void fail(const std::string& what);
  void check_addr(const char* ch, uint64_t addr, uint8_t len, uint8_t size, uint8_t burst);

  struct Burst {
    uint8_t id = 0;
    uint32_t beats = 0;
    uint32_t done = 0;
  };

  std::string name_;
  unsigned beat_bytes_;
  unsigned size_log2_;
  unsigned max_messages_;
  uint64_t cycle_ = 0;
  uint64_t violations_ = 0;
  std::vector<std::string> messages_;

  hw::AxiPins prev_{};
  bool aw_wait_ = false, w_wait_ = false, b_wait_ = false, ar_wait_ = false, r_wait_ = false;

  std::deque<Burst> reads_;            // AR issued, R beats outstanding (any order across IDs)
  std::deque<uint32_t> aw_beats_;      // AW issued whose W data has not completed, in order
  std::deque<uint32_t> w_done_;        // W bursts completed before their AW arrived
  uint32_t w_count_ = 0;               // beats of the W burst in progress
  std::array<uint32_t, 16> b_owed_{};  // per ID: write bursts with data complete, B not yet seen
  std::deque<uint8_t> aw_ids_;         // IDs of AWs still waiting for their W data
};

}  // namespace loom::hw
