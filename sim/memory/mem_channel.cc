// MemChannel: per-port read/write channel reservations behind b_transport,
// the fault plan, and data movement for bursts that carry an AxiBurstExt.
#include "memory/mem_channel.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <span>

#include "common/parse.h"
#include "hw/axi_types.h"

namespace loom::tlm {
namespace {

// A whole number in decimal or (with 0x) hex, nothing else: no sign, no
// blanks, no octal (a leading 0 of a decimal), nothing past 2^64 - 1.
bool parse_u64(const std::string& s, uint64_t& out) {
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* b = s.data() + (hex ? 2 : 0);
  const char* e = s.data() + s.size();
  if (b == e || (!hex && s.size() > 1 && s[0] == '0')) return false;
  const auto r = std::from_chars(b, e, out, hex ? 16 : 10);
  return r.ec == std::errc() && r.ptr == e;
}

bool parse_kind(const std::string& s, hw::FaultKind& k) {
  if (s == "slverr") k = hw::FaultKind::SlvErr;
  else if (s == "decerr") k = hw::FaultKind::DecErr;
  else return false;
  return true;
}

uint8_t resp_code(hw::AxiResp r) {
  switch (r) {
    case hw::AxiResp::Okay: return hw::kRespOkay;
    case hw::AxiResp::SlvErr: return hw::kRespSlvErr;
    case hw::AxiResp::DecErr: return hw::kRespDecErr;
  }
  return hw::kRespDecErr;
}

}  // namespace

Expected<FaultPlan> FaultPlan::from_options(const runtime::DeviceOptions& o) {
  const std::string& fault = o.mem_faults;
  const std::string& stall = o.mem_stall;
  const std::string fault_label = o.label("mem_faults"), stall_label = o.label("mem_stall");
  FaultPlan p;
  size_t pos = 0;
  while (pos < fault.size()) {
    size_t comma = fault.find(',', pos);
    if (comma == std::string::npos) comma = fault.size();
    const std::string item = fault.substr(pos, comma - pos);
    pos = comma + 1;
    const std::string shown = excerpt(fault), shown_item = excerpt(item);
    if (item.empty() || (comma + 1 == fault.size()))  // "a,,b", ",a" or "a,"
      return make_error(fault_label, "'" + shown + "': an empty item (items are separated by one comma)");
    const std::string bad = "'" + item + "' is not KIND@ADDR+LEN or KIND#N (KIND slverr or decerr)";
    const size_t at = item.find('@'), hash = item.find('#');
    hw::FaultKind kind{};
    if (at != std::string::npos) {
      const size_t plus = item.find('+', at);
      Range r;
      if (plus == std::string::npos || !parse_kind(item.substr(0, at), kind) ||
          !parse_u64(item.substr(at + 1, plus - at - 1), r.addr) || !parse_u64(item.substr(plus + 1), r.len) ||
          r.len == 0)
        return make_error(fault_label, bad);
      if (r.addr + (r.len - 1) < r.addr)
        return make_error(fault_label, "'" + shown_item + "': ADDR+LEN runs past the end of the 64-bit address space");
      r.kind = kind;
      p.ranges.push_back(r);
    } else if (hash != std::string::npos) {
      uint64_t n = 0;
      if (!parse_kind(item.substr(0, hash), kind) || !parse_u64(item.substr(hash + 1), n) || n == 0)
        return make_error(fault_label, bad);
      if (p.nth_burst != 0) return make_error(fault_label, "'" + item + "': only one KIND#N item is allowed");
      p.nth_burst = n;
      p.nth_kind = kind;
    } else {
      return make_error(fault_label, bad);
    }
  }
  if (!stall.empty()) {
    const size_t colon = stall.find(':');
    uint64_t cycles = 0;
    if (!parse_u64(stall.substr(0, colon), cycles) || cycles > 1'000'000)
      return make_error(stall_label, "'" + stall + "' is not CYCLES or CYCLES:PROB (CYCLES <= 1000000)");
    p.stall_cycles = uint32_t(cycles);
    if (colon != std::string::npos) {
      const auto v = parse_double(stall.substr(colon + 1));
      if (!v || !(*v >= 0.0 && *v <= 1.0))
        return make_error(stall_label, "'" + stall + "': PROB must be a number in [0, 1]");
      p.stall_prob = *v;
    }
  }
  if (o.seed) p.seed = *o.seed;
  return p;
}

MemChannel::MemChannel(sc_core::sc_module_name name) : sc_core::sc_module(name), socket("socket") {
  socket.register_b_transport(this, &MemChannel::b_transport);
  period_ = sc_core::sc_time(1, sc_core::SC_NS);
  latency_ = period_ * 40;
}

void MemChannel::configure(unsigned ports, unsigned beat_bytes, unsigned latency_cycles, sc_core::sc_time period) {
  nports_ = std::clamp(ports, 1u, unsigned(ports_.size()));
  beat_bytes_ = std::max(1u, beat_bytes);
  period_ = period;
  latency_ = period * double(latency_cycles);
  ports_.fill(Port{});
  set_faults(FaultPlan{});
}

void MemChannel::set_faults(const FaultPlan& plan) {
  plan_ = plan;
  rng_.seed(plan.seed);
  bursts_ = stalled_ = injected_ = 0;
}

void MemChannel::b_transport(int id, ::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  Port& p = ports_[unsigned(id) % nports_];
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time req = now + delay;
  const uint64_t beats = std::max<uint64_t>(1, (gp.get_data_length() + beat_bytes_ - 1) / beat_bytes_);
  const sc_core::sc_time xfer = period_ * double(beats);
  AxiBurstExt* ext = nullptr;
  gp.get_extension(ext);

  ++bursts_;
  // Faults and stalls only when configured: without them the timing is the
  // plain channel model (and no random numbers are drawn).
  sc_core::sc_time extra = sc_core::SC_ZERO_TIME;
  if (plan_.stall_cycles != 0 &&
      (plan_.stall_prob >= 1.0 || std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < plan_.stall_prob)) {
    extra = period_ * double(plan_.stall_cycles);
    ++stalled_;
  }
  uint8_t forced = hw::kRespOkay;
  if (plan_.nth_burst != 0 && bursts_ == plan_.nth_burst) {
    forced = plan_.nth_kind == hw::FaultKind::SlvErr ? hw::kRespSlvErr : hw::kRespDecErr;
    ++injected_;
  }

  sc_core::sc_time done;
  if (gp.is_read()) {
    const sc_core::sc_time first = req + latency_ + extra;
    const sc_core::sc_time start = std::max(first, p.rd_free);
    p.waited += uint64_t((start - first) / period_);
    p.rd_free = start + xfer;
    // A data-carrying read is answered from its first beat (the bridge
    // paces the rest on the wires), a cycle after the memory registers it.
    done = ext != nullptr ? start + period_ : p.rd_free;
  } else {
    const sc_core::sc_time start = std::max(req, p.wr_free);
    p.waited += uint64_t((start - req) / period_);
    p.wr_free = start + xfer;
    done = p.wr_free + latency_ + extra;  // write response after the last beat
  }
  p.beats += beats;
  delay = done - now;
  if (ext != nullptr && backing_ != nullptr) {
    move_data(gp, *ext, forced);
    return;
  }
  if (forced == hw::kRespOkay)
    gp.set_response_status(::tlm::TLM_OK_RESPONSE);
  else
    gp.set_response_status(forced == hw::kRespDecErr ? ::tlm::TLM_ADDRESS_ERROR_RESPONSE
                                                       : ::tlm::TLM_GENERIC_ERROR_RESPONSE);
}

void MemChannel::move_data(::tlm::tlm_generic_payload& gp, AxiBurstExt& ext, uint8_t forced) {
  // The burst is bus-aligned: beat i covers [address + i * bb, + bb), as the
  // rtl backend's memory model reads and writes whole bus lanes.
  const unsigned bb = std::max(1u, ext.beat_bytes);
  const uint64_t base = gp.get_address();
  const unsigned beats = unsigned(std::max<uint64_t>(1, gp.get_data_length() / bb));
  uint8_t* data = gp.get_data_ptr();
  if (gp.is_read()) {
    ext.resp.assign(beats, hw::kRespOkay);
    for (unsigned i = 0; i < beats; ++i) {
      const uint64_t a = base + uint64_t(i) * bb;
      const uint8_t r = forced != hw::kRespOkay ? forced : resp_code(backing_->probe(a, bb));
      ext.resp[i] = r;
      if (r == hw::kRespOkay)
        backing_->read(a, std::span<uint8_t>(data + size_t(i) * bb, bb));
      else
        std::memset(data + size_t(i) * bb, 0, bb);
    }
  } else {
    ext.bresp = forced;
    for (unsigned i = 0; forced == hw::kRespOkay && i < beats; ++i) {
      const uint64_t a = base + uint64_t(i) * bb;
      const uint64_t strb = i < ext.strb.size() ? (bb >= 64 ? ext.strb[i] : ext.strb[i] & ((uint64_t(1) << bb) - 1)) : 0;
      if (strb == 0) continue;
      // Probe exactly the strobed span, like the rtl memory model.
      const unsigned lo = unsigned(__builtin_ctzll(strb));
      const unsigned hi = 63u - unsigned(__builtin_clzll(strb));
      const uint8_t r = resp_code(backing_->probe(a + lo, hi - lo + 1));
      if (r == hw::kRespOkay) {
        for (unsigned b = lo; b <= hi; ++b)
          if ((strb >> b) & 1u) backing_->write(a + b, std::span<const uint8_t>(data + size_t(i) * bb + b, 1));
      } else if (ext.bresp == hw::kRespOkay) {
        ext.bresp = r;
      }
    }
  }
  gp.set_response_status(::tlm::TLM_OK_RESPONSE);  // AXI responses travel in the extension
}

}  // namespace loom::tlm
