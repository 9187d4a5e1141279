// The pin-level bridge of the cosim platform on one fabric memory port: an
// AXI4 slave on the wires that turns each burst into a TLM-2.0 generic
// payload (b_transport with delay annotation) towards the memory channel.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/axi_types.h"
#include "memory/mem_channel.h"

namespace loom::cosim {

/// The AXI4 slave side of one memory port. Every cycle the clock thread calls
/// drive() (slave outputs for the coming rising edge) and edge() (handshakes
/// sampled just before it). An AR handshake sends the whole burst as one read
/// payload; the R beats then go out one a cycle from the time the memory
/// channel answered, in order. W beats are collected and the burst is sent as
/// one write payload with its strobes when the last arrives; B follows at the
/// time the channel answered. Up to `kMaxBursts` reads and writes outstanding.
class AxiTlmBridge : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<AxiTlmBridge> socket;
  static constexpr unsigned kMaxBursts = 8;

  explicit AxiTlmBridge(sc_core::sc_module_name name);
  /// The payload would otherwise free() the member extension.
  ~AxiTlmBridge() override { gp_.clear_extension(&ext_); }

  /// New device: bus width, clock period; drops everything in flight.
  void reset(unsigned beat_bytes, sc_core::sc_time period);
  void drive(hw::AxiPins& p, uint64_t cycle) const;
  /// `local` is the clock thread's time offset from sc_time_stamp() at `cycle`.
  void edge(const hw::AxiPins& p, uint64_t cycle, sc_core::sc_time local);

  /// No burst accepted and unanswered.
  bool idle() const { return reads_.empty() && writes_.empty() && bresps_.empty(); }
  uint64_t read_bursts() const { return read_bursts_; }
  uint64_t write_bursts() const { return write_bursts_; }

 private:
  struct Read {
    uint8_t id = 0;
    uint32_t beats = 0, done = 0;
    uint64_t ready = 0;  // cycle from which the first beat may be offered
    std::vector<uint8_t> data;
    std::vector<uint8_t> resp;
  };
  struct Write {
    uint8_t id = 0;
    uint64_t addr = 0;
    uint32_t beats = 0, done = 0;
    uint64_t first = 0;  // cycle of the first W beat
    std::vector<uint8_t> data;
    std::vector<uint64_t> strb;
  };
  struct BResp {
    uint8_t id = 0, resp = 0;
    uint64_t ready = 0;
  };
  /// Cycles from `cycle` (time offset `local`) to the annotated `delay`.
  uint64_t cycle_of(sc_core::sc_time delay, uint64_t cycle, sc_core::sc_time local) const;

  unsigned bb_ = 8;
  sc_core::sc_time period_{1, sc_core::SC_NS};
  std::deque<Read> reads_;
  std::deque<Write> writes_;
  std::deque<BResp> bresps_;
  uint64_t read_bursts_ = 0, write_bursts_ = 0;
  ::tlm::tlm_generic_payload gp_;
  tlm::AxiBurstExt ext_;
};

}  // namespace loom::cosim
