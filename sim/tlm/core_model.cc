// CoreModel: fetch, dispatch and unit threads of one core. Instructions
// execute functionally in the golden model when they issue (program order,
// as in ref), so outputs are bit-exact; the threads only decide when.
#include "tlm/core_model.h"

#include <algorithm>
#include <string>

namespace loom::tlm {
namespace {

using sc_core::sc_time;
using tlm_utils::tlm_quantumkeeper;

/// Token queues an instruction's pop_prev, pop_next, push_prev, push_next
/// flags refer to (the golden model's routing); -1 where there is none.
std::array<int, 4> token_routes(spec::Unit u) {
  using Q = hw::TokenQueue;
  switch (u) {
    case spec::Unit::Load:
      return {-1, int(Q::ComputeToLoad), -1, int(Q::LoadToCompute)};
    case spec::Unit::Compute:
      return {int(Q::LoadToCompute), int(Q::StoreToCompute), int(Q::ComputeToLoad), int(Q::ComputeToStore)};
    case spec::Unit::Store:
      return {int(Q::ComputeToStore), -1, int(Q::StoreToCompute), -1};
    case spec::Unit::Control:
      break;
  }
  return {-1, -1, -1, -1};
}

}  // namespace

CoreModel::CoreModel(sc_core::sc_module_name name, unsigned index, std::function<void()> sem_signal)
    : sc_core::sc_module(name), socket("socket"), index_(index), sem_signal_(std::move(sem_signal)), scratch_(4096) {
  SC_THREAD(fetch_thread);
  SC_THREAD(dispatch_thread);
  SC_THREAD(load_thread);
  SC_THREAD(compute_thread);
  SC_THREAD(store_thread);
}

void CoreModel::attach(DeviceState* st, const hw::TimingParams& tp, sc_time period) {
  st_ = st;
  trace_ = nullptr;
  tp_ = tp;
  period_ = period;
  reset();
}

void CoreModel::reset() {
  ++gen_;
  fifo_.clear();
  fetch_ptr_ = st_ ? st_->rings[index_].head : 0;
  const sc_time now = sc_core::sc_time_stamp();
  last_pop_ = now;
  for (auto& j : job_) j.reset();
  active_.fill(false);
  free_at_.fill(now);
  for (auto& q : tokens_) q.clear();
  busy_since_ = now;
  dep_counted_ = now;
  mem_counted_ = now;
  poke();
}

void CoreModel::start(bool was_running) {
  if (!was_running) {
    // A fresh start (or a restart after an error or an empty ring) fetches
    // from RING_HEAD; nothing of this core is in flight then.
    fifo_.clear();
    fetch_ptr_ = st_->rings[index_].head;
    busy_since_ = std::max(sc_core::sc_time_stamp(), units_free_at());
  }
  poke();
}

void CoreModel::record_span(runtime::TraceTrack track, spec::Opcode op, sc_time from, sc_time to, std::string_view name) {
  if (trace_ == nullptr || to <= from || from < trace_base_) return;
  if (name.empty())
    if (const spec::OpcodeInfo* info = spec::opcode_info(uint64_t(op))) name = info->name;
  trace_->interval(index_, track, name, to_cycles(from - trace_base_), to_cycles(to - trace_base_));
}

void CoreModel::count_once(spec::Counter c, sc_time& counted, sc_time from, sc_time to) {
  // The RTL counts a cycle once however many units wait in it, so only the
  // part of [from, to) after the latest wait counted so far is added.
  from = std::max(from, counted);
  if (to <= from) return;
  counter(c) += to_cycles(to - from);
  counted = to;
}

sc_time CoreModel::units_free_at() const { return std::max({free_at_[0], free_at_[1], free_at_[2]}); }

// ---- time helpers ----------------------------------------------------------

void CoreModel::sync(tlm_quantumkeeper& qk, uint64_t gen) {
  qk.sync();
  if (gen != gen_) throw Abandon{};
}

void CoreModel::poke() {
  for (auto& e : wake_) e.notify(sc_core::SC_ZERO_TIME);
}

void CoreModel::wait_change(tlm_quantumkeeper& qk, uint64_t gen, unsigned role) {
  // Local time catches up with simulated time first, so whatever wakes this
  // thread is seen at a time no earlier than the thread's own. Catching up is
  // itself a wait, during which the awaited change may happen: the caller
  // re-checks its condition before sleeping on the event.
  if (qk.get_local_time() != sc_core::SC_ZERO_TIME) {
    sync(qk, gen);
    return;
  }
  wait(wake_[role]);
  if (gen != gen_) throw Abandon{};
}

void CoreModel::at_least(tlm_quantumkeeper& qk, sc_time t) {
  if (t > qk.get_current_time()) qk.set(t - sc_core::sc_time_stamp());
}

void CoreModel::spend(tlm_quantumkeeper& qk, uint64_t gen, uint64_t cycles) {
  qk.inc(period_ * double(cycles));
  if (qk.need_sync()) sync(qk, gen);
}

void CoreModel::stop_running(sc_time at) {
  hw::RingCtl& r = st_->rings[index_];
  if (r.running && at > busy_since_) counter(spec::Counter::CYCLES_BUSY) += to_cycles(at - busy_since_);
  r.running = false;
  r.blocked = false;
  st_->last_core_stop = std::max(st_->last_core_stop, at);
}

void CoreModel::halt(uint32_t cause, uint32_t pc, sc_time at) {
  if (cause) st_->fabric.raise(index_, cause, pc);
  if (trace_ != nullptr && at >= trace_base_)
    trace_->instant(index_, "error", to_cycles(at - trace_base_), "ring slot " + std::to_string(pc));
  stop_running(at);
  st_->raise_irq(spec::reg::IRQ_STATUS_ERROR(index_));
  fifo_.clear();
  fetch_ptr_ = st_->rings[index_].head;
  poke();
}

// ---- fetch -----------------------------------------------------------------

void CoreModel::fetch_thread() {
  tlm_quantumkeeper qk;
  for (;;) {
    const uint64_t gen = gen_;
    qk.reset();
    try {
      for (;;) {
        bool was_full = false;
        for (;;) {
          if (st_ != nullptr) {
            const hw::RingCtl& r = st_->rings[index_];
            if (r.running && fetch_ptr_ != r.tail && fifo_.size() < kFifoDepth) break;
            was_full |= r.running && fifo_.size() >= kFifoDepth;
          }
          wait_change(qk, gen, 0);
        }
        if (was_full) at_least(qk, last_pop_);
        fetch_once(qk, gen);
        if (qk.need_sync()) sync(qk, gen);
      }
    } catch (const Abandon&) {
    }
  }
}

void CoreModel::fetch_once(tlm_quantumkeeper& qk, uint64_t gen) {
  const hw::RingCtl& r = st_->rings[index_];
  const uint64_t addr = r.base + uint64_t(spec::kInsnBytes) * fetch_ptr_;
  // One burst: up to the FIFO's free space, stopping at the tail, the ring's
  // end and 4 KiB boundaries.
  uint32_t n = std::min<uint32_t>(kFifoDepth - uint32_t(fifo_.size()), (r.tail - fetch_ptr_) & (r.size - 1));
  n = std::min(n, r.size - fetch_ptr_);
  n = std::min<uint32_t>(n, uint32_t((4096 - addr % 4096) / spec::kInsnBytes));
  n = std::max(n, 1u);

  std::vector<Fetched> got;
  for (uint32_t i = 0; i < n; ++i) {
    Fetched f;
    f.pc = (fetch_ptr_ + i) & (r.size - 1);
    const uint64_t a = addr + uint64_t(spec::kInsnBytes) * i;
    switch (st_->mem.probe(a, spec::kInsnBytes)) {
      case hw::AxiResp::Okay: {
        uint8_t raw[spec::kInsnBytes];
        st_->mem.read(a, raw);
        for (unsigned w = 0; w < spec::kInsnWords; ++w)
          f.insn.w[w] = uint32_t(raw[4 * w]) | uint32_t(raw[4 * w + 1]) << 8 | uint32_t(raw[4 * w + 2]) << 16 |
                        uint32_t(raw[4 * w + 3]) << 24;
        break;
      }
      case hw::AxiResp::SlvErr:
        f.fault = spec::err::AXI_SLVERR;
        break;
      case hw::AxiResp::DecErr:
        f.fault = spec::err::AXI_DECERR;
        break;
    }
    got.push_back(f);
    if (f.fault) break;  // the dispatcher halts on it; nothing after it matters
  }

  // Like DMA bursts, a fetch reaches the port at its simulated time, so it
  // never reserves the read channel ahead of other cores' earlier bursts.
  if (qk.get_local_time() != sc_core::SC_ZERO_TIME) {
    qk.sync();
    if (gen != gen_) throw Abandon{};
  }
  ::tlm::tlm_generic_payload gp;
  gp.set_command(::tlm::TLM_READ_COMMAND);
  gp.set_address(addr);
  gp.set_data_ptr(scratch_.data());
  gp.set_data_length(uint32_t(n * spec::kInsnBytes));
  gp.set_streaming_width(uint32_t(n * spec::kInsnBytes));
  gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = qk.get_local_time();
  socket->b_transport(gp, delay);
  qk.set(delay);

  const sc_time ready = qk.get_current_time();
  for (Fetched& f : got) {
    f.ready = ready;
    fifo_.push_back(f);
  }
  fetch_ptr_ = (fetch_ptr_ + uint32_t(got.size())) & (r.size - 1);
  poke();
}

// ---- dispatch --------------------------------------------------------------

void CoreModel::dispatch_thread() {
  tlm_quantumkeeper qk;
  for (;;) {
    const uint64_t gen = gen_;
    qk.reset();
    try {
      for (;;) dispatch_once(qk, gen);
    } catch (const Abandon&) {
    }
  }
}

void CoreModel::dispatch_once(tlm_quantumkeeper& qk, uint64_t gen) {
  // Work, or an empty ring with every unit idle (the core goes idle, not done).
  for (;;) {
    if (st_ != nullptr && st_->rings[index_].running) {
      if (!fifo_.empty()) break;
      if (fetch_ptr_ == st_->rings[index_].tail && units_idle()) {
        at_least(qk, units_free_at());
        stop_running(qk.get_current_time());
        poke();
      }
    }
    wait_change(qk, gen, 1);
  }
  hw::RingCtl& r = st_->rings[index_];
  const Fetched e = fifo_.front();
  at_least(qk, e.ready);
  if (e.fault) {
    fifo_.pop_front();
    halt(e.fault, e.pc, qk.get_current_time());
    return;
  }

  const spec::OpcodeInfo* info = spec::opcode_info(spec::get_bits(e.insn, 0, 6));
  const bool to_unit = info != nullptr && info->unit != spec::Unit::Control;
  const sc_time t0 = qk.get_current_time();
  if (to_unit) {
    // In-order issue: the dispatcher blocks while the target unit is busy.
    const unsigned u = unsigned(info->unit);
    while (job_[u]) wait_change(qk, gen, 1);
    at_least(qk, free_at_[u]);
  } else {
    // Control instructions (and illegal ones) drain the units first.
    while (!units_idle()) wait_change(qk, gen, 1);
    at_least(qk, units_free_at());
  }
  const sc_time drained = qk.get_current_time();
  if (info != nullptr && info->op == spec::Opcode::SEM_WAIT) {
    const auto w = spec::SemWaitInsn::decode(e.insn);
    if (w.sem_id < st_->sem_times.size() && w.count > 0) {
      r.blocked = true;
      // The watchdog (WATCHDOG cycles, 0: off): a wait that long retires
      // nothing, so it raises TIMEOUT, as the RTL's does.
      const uint32_t wd = st_->regs.read(spec::reg::WATCHDOG);
      const sc_time since = qk.get_current_time();
      while (st_->sem_times[w.sem_id].size() < w.count) {
        if (wd == 0) {
          wait_change(qk, gen, 1);
          continue;
        }
        const sc_time expire = since + period_ * double(wd);
        if (qk.get_current_time() >= expire) {
          r.blocked = false;
          halt(spec::err::TIMEOUT, e.pc, expire);
          return;
        }
        if (qk.get_local_time() != sc_core::SC_ZERO_TIME) {
          sync(qk, gen);
          continue;
        }
        wait(expire - sc_core::sc_time_stamp(), wake_[1]);
        if (gen != gen_) throw Abandon{};
      }
      r.blocked = false;
      std::vector<sc_time> ts = st_->sem_times[w.sem_id];
      std::nth_element(ts.begin(), ts.begin() + (w.count - 1), ts.end());
      at_least(qk, ts[w.count - 1]);
    }
  }
  if (!to_unit) {
    // Only the semaphore wait is a dependency stall (the RTL's d_blocked).
    stall_dep(drained, qk.get_current_time());
    record_span(runtime::TraceTrack::Dispatch, spec::Opcode::NOP, t0, drained, "drain units");
    record_span(runtime::TraceTrack::Dispatch, spec::Opcode::NOP, drained, qk.get_current_time(), "wait semaphore");
  }

  const hw::Outcome o = st_->fabric.execute(index_, e.insn, e.pc);
  if (o == hw::Outcome::Blocked) {
    // The functional semaphore lags the timed one only if the host cleared
    // it meanwhile; wait for the next signal and retry.
    r.blocked = true;
    wait_change(qk, gen, 1);
    return;
  }
  fifo_.pop_front();
  last_pop_ = qk.get_current_time();
  if (o == hw::Outcome::Faulted) {
    halt(0, e.pc, qk.get_current_time());
    return;
  }
  r.head = (r.head + 1) & (r.size - 1);
  if (to_unit) {
    job_[unsigned(info->unit)] = Job{e.insn, info->op, qk.get_current_time()};
  } else {
    const sc_time ts = qk.get_current_time();
    spend(qk, gen, 1);
    record_span(runtime::TraceTrack::Dispatch, info->op, ts, qk.get_current_time());
    if (info->op == spec::Opcode::SEM_SIGNAL) {
      const auto s = spec::SemSignalInsn::decode(e.insn);
      st_->sem_times[s.sem_id].push_back(qk.get_current_time());
      sem_signal_();
    }
    if (o == hw::Outcome::RetiredEnd) {
      stop_running(qk.get_current_time());
      r.done = true;
      st_->raise_irq(spec::reg::IRQ_STATUS_DONE(index_));
    }
  }
  poke();
}

// ---- units -----------------------------------------------------------------

void CoreModel::unit_thread(spec::Unit unit) {
  const unsigned u = unsigned(unit);
  tlm_quantumkeeper qk;
  for (;;) {
    const uint64_t gen = gen_;
    qk.reset();
    try {
      for (;;) {
        while (!job_[u] || active_[u]) wait_change(qk, gen, 2 + unsigned(unit));
        active_[u] = true;
        const Job j = *job_[u];
        at_least(qk, j.issue);
        run_job(unit, j, qk, gen);
        free_at_[u] = qk.get_current_time();
        job_[u].reset();
        active_[u] = false;
        poke();
      }
    } catch (const Abandon&) {
    }
  }
}

void CoreModel::run_job(spec::Unit unit, const Job& j, tlm_quantumkeeper& qk, uint64_t gen) {
  const std::array<int, 4> q = token_routes(unit);
  const sc_time t0 = qk.get_current_time();
  for (int i = 0; i < 2; ++i) {
    if (spec::get_bits(j.insn, 6 + i, 1) == 0 || q[i] < 0) continue;
    auto& tq = tokens_[unsigned(q[i])];
    while (tq.empty()) wait_change(qk, gen, 2 + unsigned(unit));
    at_least(qk, tq.front());
    tq.pop_front();
  }
  stall_dep(t0, qk.get_current_time());
  using runtime::TraceTrack;
  if (trace_ != nullptr) {
    const TraceTrack stall = unit == spec::Unit::Load      ? TraceTrack::StallLoad
                             : unit == spec::Unit::Compute ? TraceTrack::StallCompute
                                                           : TraceTrack::StallStore;
    record_span(stall, j.op, t0, qk.get_current_time(), "wait token");
  }

  spend(qk, gen, hw::kIssueCycles);
  const sc_time t_run = qk.get_current_time();
  switch (j.op) {
    case spec::Opcode::LOAD: {
      const auto l = spec::LoadInsn::decode(j.insn);
      dma_rows(false, l.dram_addr, l.rows, l.dram_stride, l.cols, qk, gen);
      // Padding rows are written into the scratchpad without memory traffic.
      const uint64_t pad = l.pad_lo + l.pad_hi;
      spend(qk, gen, pad * (hw::ceil_div(l.cols, tp_.mem_bytes) + hw::kRowGapCycles));
      break;
    }
    case spec::Opcode::STORE: {
      const auto s = spec::StoreInsn::decode(j.insn);
      dma_rows(true, s.dram_addr, s.rows, s.dram_stride, s.cols, qk, gen);
      break;
    }
    default: {
      uint64_t c = 0;
      if (j.op == spec::Opcode::GEMM) c = hw::gemm_cycles(tp_, spec::GemmInsn::decode(j.insn));
      if (j.op == spec::Opcode::POSTOP) c = hw::postop_cycles(tp_, spec::PostopInsn::decode(j.insn));
      if (j.op == spec::Opcode::POOL) c = hw::pool_cycles(tp_, spec::PoolInsn::decode(j.insn));
      if (j.op == spec::Opcode::ELTWISE) c = hw::eltwise_cycles(tp_, spec::EltwiseInsn::decode(j.insn));
      if (j.op == spec::Opcode::ROWNORM) c = hw::rownorm_cycles(tp_, spec::RownormInsn::decode(j.insn));
      if (j.op == spec::Opcode::DWCONV) c = hw::dwconv_cycles(tp_, spec::DwconvInsn::decode(j.insn));
      c -= std::min(c, hw::kIssueCycles);
      counter(spec::Counter::CYCLES_COMPUTE) += c;
      spend(qk, gen, c);
      break;
    }
  }
  if (trace_ != nullptr) {
    const TraceTrack t = unit == spec::Unit::Load    ? TraceTrack::Load
                         : unit == spec::Unit::Store ? TraceTrack::Store
                         : j.op == spec::Opcode::GEMM || j.op == spec::Opcode::DWCONV ? TraceTrack::Gemm
                                                      : TraceTrack::PostOp;
    record_span(t, j.op, t_run, qk.get_current_time());
  }
  if (qk.need_sync()) sync(qk, gen);
  for (int i = 2; i < 4; ++i)
    if (spec::get_bits(j.insn, 6 + i, 1) != 0 && q[i] >= 0) tokens_[unsigned(q[i])].push_back(qk.get_current_time());
}

void CoreModel::dma_rows(bool write, uint64_t addr, uint64_t rows, uint64_t stride, uint64_t cols,
                         tlm_quantumkeeper& qk, uint64_t gen) {
  // Two walkers as in the RTL units. The address walker (after the unit's
  // check and dependency states) spends a cycle setting up each row, then
  // launches a burst and holds it until the handshake, at most
  // kMaxOutstanding in flight; a slot frees when the burst's last read beat
  // (or its write response) arrives. A store's W beats follow one a cycle.
  // The row walker (load) consumes beats as they arrive, with one idle cycle
  // per row. The unit retires when both are done.
  std::vector<hw::Burst> bursts;
  std::deque<sc_time> inflight;
  ::tlm::tlm_generic_payload gp;
  gp.set_command(write ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND);
  gp.set_data_ptr(scratch_.data());
  const sc_time start = qk.get_current_time();
  const sc_time latency = period_ * double(tp_.latency);
  sc_time issue = start + period_ * double(hw::kDmaStartCycles);
  sc_time rows_done = issue;
  sc_time last = issue;
  for (uint64_t i = 0; i < rows; ++i) {
    hw::split_row(addr + i * stride, cols, tp_.mem_bytes, bursts);
    issue += period_ * double(hw::kRowSetupCycles);
    for (size_t bi = 0; bi < bursts.size(); ++bi) {
      const hw::Burst& b = bursts[bi];
      if (inflight.size() >= hw::kMaxOutstanding) {
        issue = std::max(issue, inflight.front());
        inflight.pop_front();
      }
      // The request reaches the memory kAddrCycles after the launch (the
      // handshake, then the memory registers it).
      const sc_time req = issue + period_ * double(hw::kAddrCycles);
      // Bursts reach the port in simulated-time order (the memory serves
      // them first come, first served, as the RTL's round-robin mux and
      // memory model do): the walker catches up with simulated time before
      // each one, so other cores' earlier bursts get in first.
      if (req > sc_core::sc_time_stamp()) {
        at_least(qk, req);
        sync(qk, gen);
      }
      const uint32_t bytes = b.beats * tp_.mem_bytes;
      gp.set_address(b.addr);
      gp.set_data_length(bytes);
      gp.set_streaming_width(bytes);
      gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
      sc_time delay = req - sc_core::sc_time_stamp();
      socket->b_transport(gp, delay);
      // A write response is registered a cycle after the memory's latency.
      const sc_time done = sc_core::sc_time_stamp() + delay + (write ? period_ : sc_core::SC_ZERO_TIME);
      const sc_time first_beat = done - period_ * double(b.beats) - (write ? latency + period_ : sc_core::SC_ZERO_TIME);
      // Memory stalls as the RTL counts them: the row walker waiting for a
      // burst's first read beat, or W beats waiting for the write channel.
      stall_mem(write ? req : rows_done, first_beat);
      inflight.push_back(done);
      last = std::max(last, done);
      // The next launch: after the handshake, or after this burst's W beats
      // (and the row gap after a row's last burst).
      const uint64_t w_beats = b.beats + (bi + 1 == bursts.size() ? hw::kRowGapCycles : 0);
      issue += period_ * double(write ? std::max<uint64_t>(w_beats, hw::kAddrCycles) : hw::kAddrCycles);
      if (!write) rows_done = std::max(rows_done + period_ * double(b.beats), done);
    }
    rows_done += period_ * double(hw::kReadRowGapCycles);
  }
  // A store also waits on memory for its last write responses.
  if (write) stall_mem(issue, last);
  const sc_time end = std::max({last, rows_done, issue}) + period_ * double(hw::kDmaRetireCycles);
  at_least(qk, end);
  if (qk.need_sync()) sync(qk, gen);
}

}  // namespace loom::tlm
