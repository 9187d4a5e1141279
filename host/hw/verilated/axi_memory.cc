// AxiMemoryModel: per-cycle channel logic of the AXI4 slave memory model.
#include "hw/verilated/axi_memory.h"

#include <algorithm>
#include <span>
#include <vector>

namespace loom::hw {

AxiMemoryModel::AxiMemoryModel(hw::MemoryPort& mem, unsigned beat_bytes, const AxiMemoryOptions& opt)
    : mem_(mem), beat_bytes_(std::clamp(beat_bytes, 1u, hw::kMaxBeatBytes)), opt_(opt), rng_(opt.seed) {
  opt_.beats_per_cycle = std::clamp(opt_.beats_per_cycle, 1e-6, 1.0);
  opt_.max_reads = std::max(opt_.max_reads, 1u);
  opt_.max_writes = std::max(opt_.max_writes, 1u);
}

uint64_t AxiMemoryModel::beat_addr(uint64_t start, uint32_t beat) const {
  // INCR: the first beat is at the start address, later beats at the
  // following bus-aligned addresses.
  if (beat == 0) return start;
  return (start & ~uint64_t(beat_bytes_ - 1)) + uint64_t(beat) * beat_bytes_;
}

uint8_t AxiMemoryModel::resp_of(hw::AxiResp r) {
  switch (r) {
    case hw::AxiResp::Okay:
      return hw::kRespOkay;
    case hw::AxiResp::SlvErr:
      return hw::kRespSlvErr;
    case hw::AxiResp::DecErr:
      return hw::kRespDecErr;
  }
  return hw::kRespDecErr;
}

int AxiMemoryModel::pick_read() {
  if (reads_.empty()) return -1;
  if (!opt_.reorder_ids) return reads_.front().ready_at <= now_ ? 0 : -1;
  // Oldest burst of each ID is eligible once due; pick among them at random
  // so that masters see responses of different IDs in any order. Per-ID
  // order is kept because only the oldest burst of an ID is a candidate.
  std::vector<int> cand;
  uint32_t seen = 0;  // 4-bit IDs
  for (size_t i = 0; i < reads_.size(); ++i) {
    const uint32_t bit = 1u << (reads_[i].id & 15u);
    if (seen & bit) continue;
    seen |= bit;
    if (reads_[i].ready_at <= now_) cand.push_back(int(i));
  }
  if (cand.empty()) return -1;
  return cand[size_t(rng_() % cand.size())];
}

int AxiMemoryModel::pick_bresp() {
  if (bresps_.empty()) return -1;
  if (!opt_.reorder_ids) return bresps_.front().ready_at <= now_ ? 0 : -1;
  std::vector<int> cand;
  uint32_t seen = 0;
  for (size_t i = 0; i < bresps_.size(); ++i) {
    const uint32_t bit = 1u << (bresps_[i].id & 15u);
    if (seen & bit) continue;
    seen |= bit;
    if (bresps_[i].ready_at <= now_) cand.push_back(int(i));
  }
  if (cand.empty()) return -1;
  return cand[size_t(rng_() % cand.size())];
}

void AxiMemoryModel::drive(hw::AxiPins& p) {
  // Address channels: room for another burst, unless a stall is injected.
  p.arready = reads_.size() < opt_.max_reads && !chance(opt_.stall_prob);
  p.awready = writes_.size() + bresps_.size() < opt_.max_writes && !chance(opt_.stall_prob);
  // W is accepted only for a burst whose AW has arrived (a slave may wait for
  // the address), at the configured data rate.
  const bool w_open = std::any_of(writes_.begin(), writes_.end(), [](const WriteBurst& w) { return w.done < w.beats; });
  p.wready = w_open && w_credit_ > 1.0 - 1e-9 && !chance(opt_.stall_prob);

  // R: keep an offered beat; otherwise maybe offer the next one.
  if (!r_offered_) {
    if (r_cur_ < 0) r_cur_ = pick_read();
    if (r_cur_ >= 0 && r_credit_ > 1.0 - 1e-9 && !chance(opt_.stall_prob)) {
      ReadBurst& rb = reads_[size_t(r_cur_)];
      const uint64_t a = beat_addr(rb.addr, rb.done);
      const uint64_t lane0 = a & ~uint64_t(beat_bytes_ - 1);
      // The whole bus-aligned beat is read: that is what the wires carry.
      r_resp_ = resp_of(mem_.probe(lane0, beat_bytes_));
      r_data_.fill(0);
      if (r_resp_ == hw::kRespOkay) mem_.read(lane0, std::span<uint8_t>(r_data_.data(), beat_bytes_));
      r_offered_ = true;
    }
  }
  p.rvalid = r_offered_;
  if (r_offered_) {
    const ReadBurst& rb = reads_[size_t(r_cur_)];
    p.rid = rb.id;
    p.rresp = r_resp_;
    p.rlast = rb.done + 1 == rb.beats;
    p.rdata = r_data_;
  } else {
    p.rid = 0;
    p.rresp = 0;
    p.rlast = false;
  }

  // B: same rule as R.
  if (b_cur_ < 0) {
    const int b = pick_bresp();
    if (b >= 0 && !chance(opt_.stall_prob)) b_cur_ = b;
  }
  p.bvalid = b_cur_ >= 0;
  p.bid = b_cur_ >= 0 ? bresps_[size_t(b_cur_)].id : 0;
  p.bresp = b_cur_ >= 0 ? bresps_[size_t(b_cur_)].resp : 0;
}

void AxiMemoryModel::edge(const hw::AxiPins& p) {
  if (p.rvalid && p.rready && r_offered_) {
    ReadBurst& rb = reads_[size_t(r_cur_)];
    ++stats_.read_beats;
    if (r_resp_ == hw::kRespSlvErr) ++stats_.slverr;
    if (r_resp_ == hw::kRespDecErr) ++stats_.decerr;
    r_credit_ -= 1.0;
    r_offered_ = false;
    if (++rb.done == rb.beats) {
      reads_.erase(reads_.begin() + r_cur_);
      r_cur_ = -1;
    }
  }
  if (p.arvalid && p.arready) {
    reads_.push_back(ReadBurst{p.arid, p.araddr, uint32_t(p.arlen) + 1, 0, now_ + 1 + opt_.read_latency});
    ++stats_.read_bursts;
  }

  if (p.bvalid && p.bready && b_cur_ >= 0) {
    bresps_.erase(bresps_.begin() + b_cur_);
    b_cur_ = -1;
  }
  if (p.awvalid && p.awready) {
    writes_.push_back(WriteBurst{p.awid, p.awaddr, uint32_t(p.awlen) + 1, 0, hw::kRespOkay});
    ++stats_.write_bursts;
  }
  if (p.wvalid && p.wready) {
    auto it = std::find_if(writes_.begin(), writes_.end(), [](const WriteBurst& w) { return w.done < w.beats; });
    if (it != writes_.end()) {
      WriteBurst& wb = *it;
      const uint64_t lane0 = beat_addr(wb.addr, wb.done) & ~uint64_t(beat_bytes_ - 1);
      const uint64_t strb = beat_bytes_ >= 64 ? p.wstrb : p.wstrb & ((uint64_t(1) << beat_bytes_) - 1);
      if (strb != 0) {
        // Probe exactly the strobed span so masked-off lanes next to an
        // allocation or fault do not turn a legal write into an error.
        const unsigned lo = unsigned(__builtin_ctzll(strb));
        const unsigned hi = 63u - unsigned(__builtin_clzll(strb));
        const uint8_t r = resp_of(mem_.probe(lane0 + lo, hi - lo + 1));
        if (r == hw::kRespOkay) {
          for (unsigned b = lo; b <= hi; ++b)
            if ((strb >> b) & 1u) mem_.write(lane0 + b, std::span<const uint8_t>(&p.wdata[b], 1));
        } else if (wb.resp == hw::kRespOkay) {
          wb.resp = r;  // the first error of the burst is its B response
        }
      }
      ++stats_.write_beats;
      w_credit_ -= 1.0;
      if (++wb.done == wb.beats) {
        if (wb.resp == hw::kRespSlvErr) ++stats_.slverr;
        if (wb.resp == hw::kRespDecErr) ++stats_.decerr;
        bresps_.push_back(BResp{wb.id, wb.resp, now_ + 1 + opt_.write_latency});
        writes_.erase(it);
      }
    }
  }
  // Refill after spending so that a rate of 1.0 allows a beat every cycle.
  r_credit_ = std::min(1.0, r_credit_ + opt_.beats_per_cycle);
  w_credit_ = std::min(1.0, w_credit_ + opt_.beats_per_cycle);
  ++now_;
}

}  // namespace loom::hw
