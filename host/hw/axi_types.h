// One cycle's values on an AXI4 memory port and on the AXI4-Lite control port,
// as the C++ slave models, checkers and drivers exchange them with the RTL.
#pragma once

#include <array>
#include <cstdint>

namespace loom::hw {

/// Widest memory data bus in the spec (mem_width_bits = 512); WSTRB fits in 64 bits.
inline constexpr unsigned kMaxBeatBytes = 64;

/// AXI burst type and response codes, as encoded on the wires.
inline constexpr uint8_t kBurstIncr = 1;
inline constexpr uint8_t kRespOkay = 0;
inline constexpr uint8_t kRespSlvErr = 2;
inline constexpr uint8_t kRespDecErr = 3;

/// An AXI4 port sampled just before a rising clock edge. The master (fabric)
/// drives the valid/payload fields of AW, W, AR and the ready of R and B; the
/// slave (memory model) drives the rest.
struct AxiPins {
  bool awvalid = false, awready = false;
  uint64_t awaddr = 0;
  uint8_t awlen = 0, awsize = 0, awburst = 0, awid = 0;

  bool wvalid = false, wready = false, wlast = false;
  std::array<uint8_t, kMaxBeatBytes> wdata{};
  uint64_t wstrb = 0;

  bool bvalid = false, bready = false;
  uint8_t bresp = 0, bid = 0;

  bool arvalid = false, arready = false;
  uint64_t araddr = 0;
  uint8_t arlen = 0, arsize = 0, arburst = 0, arid = 0;

  bool rvalid = false, rready = false, rlast = false;
  std::array<uint8_t, kMaxBeatBytes> rdata{};
  uint8_t rresp = 0, rid = 0;
};

/// The AXI4-Lite control port (s_axi_control), 12-bit addresses, 32-bit data.
struct LitePins {
  bool awvalid = false, awready = false;
  uint32_t awaddr = 0;
  bool wvalid = false, wready = false;
  uint32_t wdata = 0;
  uint8_t wstrb = 0;
  bool bvalid = false, bready = false;
  uint8_t bresp = 0;
  bool arvalid = false, arready = false;
  uint32_t araddr = 0;
  bool rvalid = false, rready = false;
  uint32_t rdata = 0;
  uint8_t rresp = 0;
};

}  // namespace loom::hw
