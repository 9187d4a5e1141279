// AxiLiteMaster: the write (AW+W then B) and read (AR then R) sequences.
#include "hw/verilated/axi_lite_master.h"

namespace loom::hw {

void AxiLiteMaster::start_write(uint32_t addr, uint32_t data) {
  state_ = State::Write;
  addr_ = addr;
  data_ = data;
  aw_done_ = w_done_ = false;
}

void AxiLiteMaster::start_read(uint32_t addr) {
  state_ = State::Read;
  addr_ = addr;
  ar_done_ = false;
}

void AxiLiteMaster::drive(hw::LitePins& p) const {
  const bool wr = state_ == State::Write, rd = state_ == State::Read;
  p.awvalid = wr && !aw_done_;
  p.awaddr = wr ? addr_ : 0;
  p.wvalid = wr && !w_done_;
  p.wdata = wr ? data_ : 0;
  p.wstrb = wr ? 0xF : 0;
  p.bready = wr && aw_done_ && w_done_;
  p.arvalid = rd && !ar_done_;
  p.araddr = rd ? addr_ : 0;
  p.rready = rd && ar_done_;
}

void AxiLiteMaster::edge(const hw::LitePins& p) {
  if (state_ == State::Write) {
    if (p.bvalid && p.bready) {
      resp_ = p.bresp;
      state_ = State::Idle;
    }
    if (p.awvalid && p.awready) aw_done_ = true;
    if (p.wvalid && p.wready) w_done_ = true;
  } else if (state_ == State::Read) {
    if (p.rvalid && p.rready) {
      rdata_ = p.rdata;
      resp_ = p.rresp;
      state_ = State::Idle;
    }
    if (p.arvalid && p.arready) ar_done_ = true;
  }
}

}  // namespace loom::hw
