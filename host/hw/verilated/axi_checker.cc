// AxiChecker: handshake stability, burst legality, W/R beat counts and
// response-ID bookkeeping on one AXI4 port.
#include "hw/verilated/axi_checker.h"

#include <cstdio>

namespace loom::hw {
AxiChecker::AxiChecker(std::string name, unsigned beat_bytes, unsigned max_messages)
    : name_(std::move(name)), beat_bytes_(beat_bytes), size_log2_(0), max_messages_(max_messages) {
  while ((1u << size_log2_) < beat_bytes_) ++size_log2_;
}

void AxiChecker::reset() {
  prev_ = hw::AxiPins{};
  aw_wait_ = w_wait_ = b_wait_ = ar_wait_ = r_wait_ = false;
  reads_.clear();
  aw_beats_.clear();
  w_done_.clear();
  aw_ids_.clear();
  w_count_ = 0;
  b_owed_.fill(0);
}

void AxiChecker::fail(const std::string& what) {
  ++violations_;
  if (messages_.size() < max_messages_) messages_.push_back("cycle " + std::to_string(cycle_) + ": " + what);
}

Status AxiChecker::status() const {
  if (violations_ == 0) return Status::ok();
  std::string s = std::to_string(violations_) + " AXI4 protocol violation(s)";
  for (const auto& m : messages_) s += "; " + m;
  return make_error(name_, s);
}

void AxiChecker::check_addr(const char* ch, uint64_t addr, uint8_t len, uint8_t size, uint8_t burst) {
  const std::string at = std::string(ch) + " " + hex(addr) + " len " + std::to_string(len);
  if (burst != hw::kBurstIncr) fail(at + ": burst type " + std::to_string(burst) + ", only INCR is allowed");
  if (size != size_log2_)
    fail(at + ": size " + std::to_string(size) + ", expected log2(MemBytes) = " + std::to_string(size_log2_));
  if ((addr & (beat_bytes_ - 1)) != 0) fail(at + ": address not aligned to the bus width");
  if ((addr >> 48) != 0) fail(at + ": address bits above 47 are set");
  const uint64_t bytes = (uint64_t(len) + 1) * beat_bytes_;
  if ((addr & 0xFFF) + bytes > 0x1000) fail(at + ": burst crosses a 4 KiB boundary");
}

void AxiChecker::edge(const hw::AxiPins& p) {
  // Stability: a valid that was not taken must still be there, unchanged.
  const size_t nb = beat_bytes_;
  auto same = [nb](const auto& a, const auto& b) {
    for (size_t i = 0; i < nb; ++i)
      if (a[i] != b[i]) return false;
    return true;
  };
  if (aw_wait_ && (!p.awvalid || p.awaddr != prev_.awaddr || p.awlen != prev_.awlen || p.awsize != prev_.awsize ||
                   p.awburst != prev_.awburst || p.awid != prev_.awid))
    fail("AW dropped or changed before AWREADY");
  if (w_wait_ && (!p.wvalid || p.wlast != prev_.wlast || p.wstrb != prev_.wstrb || !same(p.wdata, prev_.wdata)))
    fail("W dropped or changed before WREADY");
  if (ar_wait_ && (!p.arvalid || p.araddr != prev_.araddr || p.arlen != prev_.arlen || p.arsize != prev_.arsize ||
                   p.arburst != prev_.arburst || p.arid != prev_.arid))
    fail("AR dropped or changed before ARREADY");
  if (b_wait_ && (!p.bvalid || p.bid != prev_.bid || p.bresp != prev_.bresp))
    fail("slave: B dropped or changed before BREADY");
  if (r_wait_ && (!p.rvalid || p.rid != prev_.rid || p.rresp != prev_.rresp || p.rlast != prev_.rlast ||
                  !same(p.rdata, prev_.rdata)))
    fail("slave: R dropped or changed before RREADY");

  // Responses first: a response in the same cycle as its request is a violation.
  // B: only for a write whose address and data were both issued.
  if (p.bvalid && p.bready) {
    const unsigned id = p.bid & 15u;
    if (b_owed_[id] == 0)
      fail("slave: B with ID " + std::to_string(id) + " but no completed write burst has that ID");
    else
      --b_owed_[id];
  }

  // R: beats go to the oldest outstanding burst of their ID; RLAST exactly on its last beat.
  if (p.rvalid && p.rready) {
    const uint8_t id = p.rid & 15u;
    auto it = reads_.begin();
    while (it != reads_.end() && it->id != id) ++it;
    if (it == reads_.end()) {
      fail("slave: R with ID " + std::to_string(id) + " but no read burst with that ID is outstanding");
    } else {
      const bool last = ++it->done == it->beats;
      if (p.rlast != last)
        fail("slave: RLAST " + std::string(p.rlast ? "on" : "missing on") + " beat " + std::to_string(it->done) +
             " of a burst of " + std::to_string(it->beats));
      if (last || p.rlast) reads_.erase(it);
    }
  }

  // Address channels.
  if (p.arvalid && p.arready) {
    check_addr("AR", p.araddr, p.arlen, p.arsize, p.arburst);
    reads_.push_back(Burst{uint8_t(p.arid & 15u), uint32_t(p.arlen) + 1, 0});
  }
  if (p.awvalid && p.awready) {
    check_addr("AW", p.awaddr, p.awlen, p.awsize, p.awburst);
    aw_beats_.push_back(uint32_t(p.awlen) + 1);
    aw_ids_.push_back(uint8_t(p.awid & 15u));
  }

  // W: beats counted per burst, matched with AWs in order (W may lead AW).
  if (p.wvalid && p.wready) {
    ++w_count_;
    const size_t burst = w_done_.size();  // index of the AW this W burst belongs to
    if (burst < aw_beats_.size() && w_count_ > aw_beats_[burst])
      fail("W beat " + std::to_string(w_count_) + " past the AW's " + std::to_string(aw_beats_[burst]) +
           " beats without WLAST");
    if (p.wlast) {
      w_done_.push_back(w_count_);
      w_count_ = 0;
    }
    if (w_count_ > 256) {
      fail("W burst longer than 256 beats");
      w_count_ = 0;
    }
  }
  while (!w_done_.empty() && !aw_beats_.empty()) {
    const uint32_t got = w_done_.front(), want = aw_beats_.front();
    if (got != want) fail("WLAST on beat " + std::to_string(got) + " of a burst of " + std::to_string(want) + " beats");
    ++b_owed_[aw_ids_.front()];
    w_done_.pop_front();
    aw_beats_.pop_front();
    aw_ids_.pop_front();
  }

  aw_wait_ = p.awvalid && !p.awready;
  w_wait_ = p.wvalid && !p.wready;
  ar_wait_ = p.arvalid && !p.arready;
  b_wait_ = p.bvalid && !p.bready;
  r_wait_ = p.rvalid && !p.rready;
  prev_ = p;
  ++cycle_;
}

}  // namespace loom::hw
