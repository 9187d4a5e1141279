// Random-instruction testbench body for loom_compute_unit, checked byte for byte against the golden model's exec_*.
//
// The five scratchpads are modelled here behind the loom_spad port contract
// (data the cycle after a granted read, SpW-byte windows that wrap at the
// end, byte-masked writes), on a loom::hw::CoreState, so the golden model's
// exec_gemm/exec_postop/exec_pool/exec_eltwise/exec_rownorm/exec_dwconv run on an exact copy of what
// the RTL sees. Grants on the shared ports (ACC read, OUT write) drop at
// random. Each instruction checks: the scratchpads after it, the error cause
// and pc, token pops (only when available, once, before any write) and
// pushes (once, with retire), the MAC count, and that no masked write byte
// falls past a scratchpad's end. ROWNORMs and DWCONVs that pop no token run
// with every grant and must take exactly host/hw/timing.h's rownorm_cycles
// and dwconv_cycles.
#pragma once

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "hw/golden.h"
#include "hw/timing.h"
#include "rtl_harness.h"

namespace loom::rtltest::compute {

using spec::Buffer;
using hw::CoreState;
using hw::exec_gemm;
using hw::exec_postop;
using hw::exec_pool;
using hw::exec_eltwise;
using hw::exec_rownorm;
using hw::exec_dwconv;
using hw::span_2d;

struct TbConfig {
  const char* name;      // test name printed in PASS/FAIL lines
  const char* hw;        // spec configuration (sizes, array)
  unsigned spw;          // scratchpad port width in bytes
  int per_opcode;        // random instructions per opcode
  uint64_t default_seed;
};

template <typename W>
uint8_t wide_byte(const W& w, unsigned b) {
  return uint8_t(w[b / 4] >> (8 * (b % 4)));
}

template <typename W>
void set_wide(W& w, const std::vector<uint8_t>& mem, uint64_t addr, unsigned nbytes) {
  for (unsigned i = 0; i < nbytes / 4; ++i) {
    uint32_t v = 0;
    for (unsigned k = 0; k < 4; ++k) v |= uint32_t(mem[(addr + 4 * i + k) % mem.size()]) << (8 * k);
    w[i] = v;
  }
}

template <typename W>
void set_wide_random(W& w, unsigned nbytes, std::mt19937_64& rng) {
  for (unsigned i = 0; i < nbytes / 4; ++i) w[i] = uint32_t(rng());
}

template <typename Model>
class Bench {
 public:
  Bench(int argc, char** argv, const TbConfig& tc, const Options& opt)
      : tc_(tc), opt_(opt), hw_(*spec::find_config(tc.hw)), argv0_(argv[0]), sim_(argc, argv, opt), rng_(opt.seed) {
    s_.buf(Buffer::IN).assign(uint64_t(hw_.in_kib) * 1024, 0);
    s_.buf(Buffer::WGT).assign(uint64_t(hw_.wgt_kib) * 1024, 0);
    s_.buf(Buffer::ACC).assign(uint64_t(hw_.acc_kib) * 1024, 0);
    s_.buf(Buffer::OUT).assign(uint64_t(hw_.out_kib) * 1024, 0);
    s_.buf(Buffer::PARAM).assign(uint64_t(hw_.param_kib) * 1024, 0);
    randomize_all();
    Model& m = sim_.m();
    m.flush_i = 0;
    m.halt_i = 0;
    m.insn_valid_i = 0;
    m.tok_prev_avail_i = 0;
    m.tok_next_avail_i = 0;
    m.acc_rd_gnt_i = 1;
    m.out_wr_gnt_i = 1;
    sim_.reset();
  }

  int run();

 private:
  struct Result {
    bool retired = false, errored = false, aborted = false;
    uint32_t cause = 0, err_pc = 0;
    uint64_t macs = 0;
  };

  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void randomize_all() {
    for (auto& b : s_.sp)
      for (auto& x : b) x = uint8_t(rng_());
  }
  uint64_t rnd(uint64_t lo, uint64_t hi) { return lo + rng_() % (hi - lo + 1); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  uint64_t size(Buffer b) const { return s_.buf(b).size(); }
  // An address for `span` bytes inside buffer b (aligned to `align`), or past its end when oob.
  uint64_t place(Buffer b, uint64_t span, uint64_t align, bool oob) {
    const uint64_t sz = size(b);
    if (oob) return std::min<uint64_t>((sz - std::min(sz, span) + rnd(1, 64)) & ~(align - 1), (1u << 24) - align);
    if (span >= sz) return 0;
    return rnd(0, sz - span) & ~(align - 1);
  }

  spec::Insn gen_gemm(bool* long_running);
  spec::Insn gen_postop(bool* long_running);
  spec::Insn gen_pool(bool* long_running);
  spec::Insn gen_eltwise(bool* long_running);
  spec::Insn gen_rownorm(bool* long_running);
  spec::Insn gen_dwconv(bool* long_running);
  void set_tokens(const spec::Insn& in);

  uint32_t golden(CoreState& st, const spec::Insn& in) {
    switch (spec::Opcode(in.w[0] & 63)) {
      case spec::Opcode::GEMM: return exec_gemm(st, spec::GemmInsn::decode(in));
      case spec::Opcode::POSTOP: return exec_postop(st, spec::PostopInsn::decode(in));
      case spec::Opcode::POOL: return exec_pool(st, spec::PoolInsn::decode(in));
      case spec::Opcode::ELTWISE: return exec_eltwise(st, spec::EltwiseInsn::decode(in));
      case spec::Opcode::ROWNORM: return exec_rownorm(st, spec::RownormInsn::decode(in));
      case spec::Opcode::DWCONV: return exec_dwconv(st, spec::DwconvInsn::decode(in));
      default: return spec::err::ILLEGAL_INSN;
    }
  }

  void cycle(Result& r, bool popped_needed, bool* popped);
  Result execute(const spec::Insn& in, uint32_t pc, bool abort_midway);
  void check_insn(const spec::Insn& in, int op_idx, int n, bool long_running);

  const TbConfig& tc_;
  const Options& opt_;
  const spec::HwConfig& hw_;
  const char* argv0_;
  Sim<Model> sim_;
  std::mt19937_64 rng_;
  CoreState s_;
  uint64_t checked_ = 0, errors_ = 0;
  std::string ctx_;
  // Token model: counters the dispatcher would hold, and pending release.
  uint64_t tok_prev_ = 0, tok_next_ = 0;
  int release_at_ = -1;
  uint32_t want_pop_prev_ = 0, want_pop_next_ = 0;
  std::map<std::string, int> coverage_;
  bool full_grants_ = false;  // timed instructions: the shared ports always granted
  // Read data for the next cycle (captured at the edge).
  bool rd_in_ = false, rd_wgt_ = false, rd_par_ = false, rd_acc_ = false;
  uint64_t a_in_ = 0, a_wgt_ = 0, a_par_ = 0, a_acc_ = 0;
};

template <typename Model>
void Bench<Model>::fail(const char* fmt, ...) {
  ++errors_;
  if (errors_ > 20) return;
  std::printf("  [%s] ", ctx_.c_str());
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::printf("\n");
}

// One clock: sample the outputs, apply the scratchpad side effects, tick, drive read data.
template <typename Model>
void Bench<Model>::cycle(Result& r, bool pops_pending, bool* popped) {
  Model& m = sim_.m();
  const unsigned W = tc_.spw;
  m.acc_rd_gnt_i = full_grants_ || chance(0.8);
  m.out_wr_gnt_i = full_grants_ || chance(0.8);
  m.tok_prev_avail_i = tok_prev_ > 0;
  m.tok_next_avail_i = tok_next_ > 0;
  sim_.settle();

  // Tokens.
  if (m.tok_prev_pop_o) {
    if (!want_pop_prev_ || tok_prev_ == 0) fail("unexpected pop of prev token");
    else { --tok_prev_; --want_pop_prev_; }
  }
  if (m.tok_next_pop_o) {
    if (!want_pop_next_ || tok_next_ == 0) fail("unexpected pop of next token");
    else { --tok_next_; --want_pop_next_; }
  }
  if (m.tok_prev_pop_o || m.tok_next_pop_o) *popped = want_pop_prev_ == 0 && want_pop_next_ == 0;
  if ((m.tok_prev_push_o || m.tok_next_push_o) && !m.retire_o) fail("push without retire");

  // Reads (captured before this cycle's writes land: the model never reads a byte it writes in the same cycle).
  rd_in_ = m.in_rd_req_o;
  a_in_ = m.in_rd_addr_o;
  rd_wgt_ = m.wgt_rd_req_o;
  a_wgt_ = m.wgt_rd_addr_o;
  rd_par_ = m.param_rd_req_o;
  a_par_ = m.param_rd_addr_o;
  rd_acc_ = m.acc_rd_req_o && m.acc_rd_gnt_i;
  a_acc_ = m.acc_rd_addr_o;
  std::vector<uint8_t> in_snap, wgt_snap, par_snap, acc_snap;

  // Writes.
  auto apply = [&](Buffer b, uint64_t addr, const auto& data, uint64_t mask, const char* what) {
    if (pops_pending && !*popped) fail("%s write before the tokens were popped", what);
    auto& mem = s_.buf(b);
    for (unsigned i = 0; i < W; ++i) {
      if (!((mask >> i) & 1)) continue;
      if (addr + i >= mem.size()) {
        fail("%s write byte past the end (addr %" PRIu64 " + %u)", what, addr, i);
        continue;
      }
      mem[addr + i] = wide_byte(data, i);
    }
  };
  // Read data reflects memory before this edge's writes.
  if (rd_in_) { in_snap.resize(W); for (unsigned i = 0; i < W; ++i) in_snap[i] = s_.buf(Buffer::IN)[(a_in_ + i) % size(Buffer::IN)]; }
  if (rd_wgt_) { wgt_snap.resize(W); for (unsigned i = 0; i < W; ++i) wgt_snap[i] = s_.buf(Buffer::WGT)[(a_wgt_ + i) % size(Buffer::WGT)]; }
  if (rd_par_) { par_snap.resize(W); for (unsigned i = 0; i < W; ++i) par_snap[i] = s_.buf(Buffer::PARAM)[(a_par_ + i) % size(Buffer::PARAM)]; }
  if (rd_acc_) { acc_snap.resize(W); for (unsigned i = 0; i < W; ++i) acc_snap[i] = s_.buf(Buffer::ACC)[(a_acc_ + i) % size(Buffer::ACC)]; }
  if (m.acc_wr_req_o) apply(Buffer::ACC, m.acc_wr_addr_o, m.acc_wr_data_o, uint64_t(m.acc_wr_mask_o), "ACC");
  if (m.out_wr_req_o && m.out_wr_gnt_i) apply(Buffer::OUT, m.out_wr_addr_o, m.out_wr_data_o, uint64_t(m.out_wr_mask_o), "OUT");

  r.macs += m.macs_inc_o;
  if (m.retire_o) {
    if (r.retired) fail("second retire");
    r.retired = true;
  }
  if (m.err_o) {
    r.errored = true;
    r.cause = m.err_cause_o;
    r.err_pc = m.err_pc_o;
  }
  sim_.tick();

  auto drive = [&](auto& port, const std::vector<uint8_t>& snap) {
    if (snap.empty()) {
      set_wide_random(port, W, rng_);  // stale bus: must not be used
    } else {
      for (unsigned i = 0; i < W / 4; ++i)
        port[i] = uint32_t(snap[4 * i]) | uint32_t(snap[4 * i + 1]) << 8 | uint32_t(snap[4 * i + 2]) << 16 |
                  uint32_t(snap[4 * i + 3]) << 24;
    }
  };
  drive(m.in_rd_data_i, in_snap);
  drive(m.wgt_rd_data_i, wgt_snap);
  drive(m.param_rd_data_i, par_snap);
  drive(m.acc_rd_data_i, acc_snap);
}

template <typename Model>
void Bench<Model>::set_tokens(const spec::Insn& in) {
  want_pop_prev_ = (in.w[0] >> 6) & 1;
  want_pop_next_ = (in.w[0] >> 7) & 1;
  tok_prev_ = chance(0.5) ? rnd(1, 3) : 0;
  tok_next_ = chance(0.5) ? rnd(1, 3) : 0;
  release_at_ = int(rnd(0, 40));
}

template <typename Model>
typename Bench<Model>::Result Bench<Model>::execute(const spec::Insn& in, uint32_t pc, bool abort_midway) {
  Model& m = sim_.m();
  Result r;
  if (!m.insn_ready_o) fail("not ready while idle");
  for (unsigned i = 0; i < 8; ++i) m.insn_i[i] = in.w[i];
  m.pc_i = pc;
  m.insn_valid_i = 1;
  const bool pops = want_pop_prev_ || want_pop_next_;
  bool popped = !pops;
  cycle(r, pops, &popped);
  m.insn_valid_i = 0;
  const int abort_at = abort_midway ? int(rnd(5, 400)) : -1;
  for (int c = 0; c < 4000000; ++c) {
    if (c == release_at_) {
      // The producers deliver the tokens this instruction waits for.
      if (want_pop_prev_ && tok_prev_ == 0) tok_prev_ = 1;
      if (want_pop_next_ && tok_next_ == 0) tok_next_ = 1;
    }
    if (c == abort_at && m.busy_o) {
      m.halt_i = 1;
      sim_.settle();
      cycle(r, false, &popped);
      m.halt_i = 0;
      r.aborted = true;
      for (int d = 0; d < 100000 && m.busy_o; ++d) cycle(r, false, &popped);
      if (m.busy_o) fail("did not drain after halt");
      return r;
    }
    if (pops && !popped && c > 2 && !m.stall_dep_o && m.busy_o && !r.errored)
      fail("waiting for a token without stall_dep_o");
    if (r.retired || r.errored) break;
    cycle(r, pops, &popped);
  }
  if (r.errored) {
    // The unit holds after an error until the core halts it.
    for (int i = 0; i < 5; ++i) {
      if (!m.busy_o) fail("idle after an error before halt");
      cycle(r, pops, &popped);
    }
    m.halt_i = 1;
    cycle(r, pops, &popped);
    m.halt_i = 0;
    for (int d = 0; d < 100000 && m.busy_o; ++d) cycle(r, pops, &popped);
  }
  if (!r.retired && !r.errored) fail("instruction neither retired nor faulted");
  if (r.retired && !popped) fail("retired without popping its tokens");
  return r;
}

template <typename Model>
void Bench<Model>::check_insn(const spec::Insn& in, int op_idx, int n, bool long_running) {
  static const char* kNames[] = {"GEMM", "POSTOP", "POOL", "ELTWISE", "ROWNORM", "DWCONV"};
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s #%d", kNames[op_idx], n);
  ctx_ = buf;
  const uint32_t pc = uint32_t(rnd(0, 65535));
  set_tokens(in);
  CoreState want = s_;
  const uint32_t gerr = golden(want, in);
  const bool abort_midway = long_running && gerr == 0 && chance(0.04);
  // ELTWISE, ROWNORM and DWCONV without pops and with every grant: the
  // unit's cycles must be the tlm model's (host/hw/timing.h), cycle for cycle.
  // An empty ELTWISE never starts the element unit (not modelled).
  const bool empty_elt = op_idx == 3 && spec::EltwiseInsn::decode(in).count == 0;
  const bool timed = (op_idx >= 3 && op_idx <= 5) && !empty_elt && gerr == 0 && !abort_midway && !want_pop_prev_ &&
                     !want_pop_next_;
  full_grants_ = timed;
  const uint64_t c0 = sim_.cycles();
  const Result r = execute(in, pc, abort_midway);
  full_grants_ = false;
  if (timed && op_idx == 5) {
    const auto d = spec::DwconvInsn::decode(in);
    const uint64_t want_cycles = hw::dwconv_cycles(hw::TimingParams::from(hw_), d);
    if (sim_.cycles() - c0 != want_cycles)
      fail("DWCONV %dx%d stride %d oh=%d ow=%d c=%d: %" PRIu64 " cycles, dwconv_cycles says %" PRIu64, int(d.kh),
           int(d.kw), int(d.stride), int(d.oh), int(d.ow), int(d.c), sim_.cycles() - c0, want_cycles);
    ++coverage_["DWCONV timed"];
  }
  if (timed && op_idx == 3) {
    const auto e = spec::EltwiseInsn::decode(in);
    const uint64_t want_cycles = hw::eltwise_cycles(hw::TimingParams::from(hw_), e);
    if (sim_.cycles() - c0 != want_cycles)
      fail("ELTWISE mul=%d lut=%d count=%d: %" PRIu64 " cycles, eltwise_cycles says %" PRIu64, int(e.mul), int(e.lut),
           int(e.count), sim_.cycles() - c0, want_cycles);
    ++coverage_["ELTWISE timed"];
  }
  if (timed && op_idx == 4) {
    const auto rn = spec::RownormInsn::decode(in);
    const uint64_t want_cycles = hw::rownorm_cycles(hw::TimingParams::from(hw_), rn);
    if (sim_.cycles() - c0 != want_cycles)
      fail("ROWNORM ln=%d m=%d n=%d: %" PRIu64 " cycles, rownorm_cycles says %" PRIu64, int(rn.ln), int(rn.m),
           int(rn.n), sim_.cycles() - c0, want_cycles);
    ++coverage_["ROWNORM timed"];
  }
  ++checked_;
  if (r.aborted) {
    ++coverage_["abort"];
    return;  // what the RTL wrote before the halt stays; the next instruction must still be exact
  }
  const char* outcome = gerr == 0 ? " ok" : gerr == spec::err::ILLEGAL_INSN ? " illegal" : " oob";
  coverage_[std::string(kNames[op_idx]) + outcome]++;
  if (op_idx == 1 && spec::PostopInsn::decode(in).rescale) coverage_[std::string("POSTOP rescale") + outcome]++;
  if (op_idx == 3 && spec::EltwiseInsn::decode(in).mul) coverage_[std::string("ELTWISE mul") + outcome]++;
  if (op_idx == 3 && spec::EltwiseInsn::decode(in).lut) coverage_[std::string("ELTWISE lut") + outcome]++;
  if (op_idx == 3 && !spec::EltwiseInsn::decode(in).mul && !spec::EltwiseInsn::decode(in).lut)
    coverage_[std::string("ELTWISE add") + outcome]++;
  if (op_idx == 4 && spec::RownormInsn::decode(in).ln) coverage_[std::string("ROWNORM ln") + outcome]++;
  if (op_idx == 5 && gerr == 0) {
    // The partial-chunk lanes, and the reader waiting for the writer (a
    // chunk with fewer taps than the writes of the chunk before it).
    const auto d = spec::DwconvInsn::decode(in);
    const uint64_t W = tc_.spw, taps = d.kh * d.kw, chunks = d.oh * d.ow * ((d.c + W - 1) / W);
    const uint64_t max_w = d.c >= W ? 4 : (4 * d.c + W - 1) / W;
    if (chunks > 0 && d.c % W != 0) ++coverage_["DWCONV partial"];
    if (chunks > 1 && taps < max_w) ++coverage_["DWCONV stall"];
    if (chunks > 0 && taps == 1) ++coverage_["DWCONV 1x1"];
  }
  if (gerr != 0) {
    if (!r.errored) fail("expected error 0x%x, got none", gerr);
    else if (r.cause != gerr) fail("error cause 0x%x, expected 0x%x", r.cause, gerr);
    else if (r.err_pc != pc) fail("err_pc %u, expected %u", r.err_pc, pc);
    if (r.retired) fail("faulting instruction retired");
  } else {
    if (r.errored) fail("unexpected error 0x%x", r.cause);
    if (!r.retired) fail("did not retire");
  }
  const uint64_t want_macs = want.counter(spec::Counter::MACS) - s_.counter(spec::Counter::MACS);
  if (r.macs != want_macs) fail("macs %" PRIu64 ", expected %" PRIu64, r.macs, want_macs);
  s_.counters = want.counters;
  static const char* kBuf[] = {"IN", "WGT", "ACC", "OUT", "PARAM"};
  for (unsigned b = 0; b < spec::kNumBuffers; ++b) {
    const auto& got = s_.sp[b];
    const auto& exp = want.sp[b];
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != exp[i]) {
        fail("%s[%zu] = 0x%02x, expected 0x%02x", kBuf[b], i, got[i], exp[i]);
        s_.sp[b] = exp;  // report a buffer once, then continue from the golden state
        break;
      }
    }
  }
}

// ---- Instruction generators ----

template <typename Model>
spec::Insn Bench<Model>::gen_gemm(bool* long_running) {
  spec::GemmInsn g{};
  const unsigned R = hw_.array_rows, C = hw_.array_cols, W = tc_.spw;
  g.m = chance(0.05) ? 0 : rnd(1, 3 * R + 2);
  g.n = chance(0.05) ? 0 : rnd(1, 3 * C + 2);
  g.k_len = chance(0.06) ? 0 : chance(0.3) ? rnd(1, 4) : rnd(1, 3 * W);
  g.accumulate = chance(0.5);
  g.a_zp = int8_t(rng_());
  g.b_zp = int8_t(rng_());
  g.lda = chance(0.1) ? rnd(0, g.k_len) : g.k_len + rnd(0, 7);
  g.b_trans = chance(0.3);  // B stored as its transpose: n rows of k_len bytes
  const uint64_t b_row = g.b_trans ? g.k_len : g.n;
  g.ldb = chance(0.1) ? rnd(0, unsigned(b_row)) : b_row + rnd(0, 7);
  g.ldc = chance(0.1) ? 4 * rnd(0, g.n) : 4 * (g.n + rnd(0, 3));  // ldc < 4n: overlapping C rows
  const int bad = chance(0.12) ? int(rnd(0, 4)) : -1;
  if (bad == 3) g.ldc |= rnd(1, 3);
  const uint64_t a_len = g.n == 0 ? 0 : span_2d(g.m, g.lda, g.k_len);
  const uint64_t b_len = g.m == 0 ? 0 : g.b_trans ? span_2d(g.n, g.ldb, g.k_len) : span_2d(g.k_len, g.ldb, g.n);
  const uint64_t c_len = span_2d(g.m, g.ldc & ~3ull, 4 * g.n);
  g.in_addr = place(Buffer::IN, a_len, 1, bad == 0);
  g.wgt_addr = place(Buffer::WGT, b_len, 1, bad == 1);
  g.acc_addr = place(Buffer::ACC, c_len, 4, bad == 2);
  if (bad == 4) g.acc_addr |= rnd(1, 3);
  g.pop_prev = chance(0.3);
  g.pop_next = chance(0.3);
  g.push_prev = chance(0.3);
  g.push_next = chance(0.3);
  *long_running = g.m * g.n * g.k_len > 200;
  return g.encode();
}

template <typename Model>
spec::Insn Bench<Model>::gen_postop(bool* long_running) {
  spec::PostopInsn p{};
  const unsigned C = hw_.array_cols;
  p.m = chance(0.04) ? 0 : rnd(1, 12);
  p.n = chance(0.04) ? 0 : rnd(1, 3 * C + 3);
  int bad = chance(0.18) ? int(rnd(0, 14)) : -1;
  if (bad > 12) bad = 12;  // three times the weight: the PARAM boundary case is narrow
  p.residual = chance(0.5);
  p.rescale = p.residual && chance(0.45);  // the requantizing add needs the residual
  // The rescale faults: 9 without a residual, 10 add_lo > add_hi, 11 a bad a_shift
  // word, 12 a PARAM range that holds the triples but not the add's pair.
  if (bad == 9) p.residual = 0, p.rescale = 1;
  if (bad >= 10) p.residual = p.rescale = 1;
  if (bad == 12) p.m = std::max<uint64_t>(p.m, 1), p.n = std::max<uint64_t>(p.n, 1);  // an empty tile never faults
  p.res_shift = p.residual ? rnd(1, 62) : rnd(0, 63);
  p.out_zp = int8_t(rng_());
  int lo = int8_t(rng_()), hi = int8_t(rng_());
  if (lo > hi) std::swap(lo, hi);
  if (chance(0.2)) { lo = -128; hi = 127; }
  p.clip_lo = lo;
  p.clip_hi = hi;
  p.res_zp = int8_t(rng_());
  p.res_mult = int32_t(chance(0.7) ? rnd(1u << 30, (1u << 31) - 1) : uint32_t(rng_()));
  // The add's fields; without rescale they are don't-care, even an empty clamp.
  p.a_zp = int8_t(rng_());
  p.add_zp = int8_t(rng_());
  int alo = int8_t(rng_()), ahi = int8_t(rng_());
  if (p.rescale) {
    if (alo > ahi) std::swap(alo, ahi);
    if (chance(0.2)) alo = -128, ahi = 127;
    else if (chance(0.15)) alo = std::min<int>(int(p.add_zp), ahi);  // ReLU after the add
  }
  p.add_lo = alo;
  p.add_hi = ahi;
  if (bad == 10) {
    p.add_lo = int64_t(rnd(0, 254)) - 127;
    p.add_hi = p.add_lo - 1 - int64_t(rnd(0, uint64_t(p.add_lo + 127)));
  }
  const uint64_t mn = p.m * p.n;
  const uint64_t par_span = 12 * p.n + (p.rescale ? 8 : 0);
  p.acc_addr = place(Buffer::ACC, 4 * mn, 4, bad == 0);
  p.out_addr = place(Buffer::OUT, mn, 1, bad == 1);
  p.param_addr = place(Buffer::PARAM, par_span, 4, bad == 2);
  p.res_addr = place(Buffer::IN, p.residual ? mn : 0, 1, bad == 3 && p.residual);
  if (bad == 4) p.acc_addr |= rnd(1, 3);
  if (bad == 5) p.param_addr |= rnd(1, 3);
  if (bad == 6) std::swap(p.clip_lo, p.clip_hi), p.clip_lo += (p.clip_lo == p.clip_hi && p.clip_lo < 127);
  if (bad == 7 && p.residual) p.res_shift = chance(0.5) ? 0 : 63;
  // PARAM ending 4 bytes short of the pair (or holding none of it) faults; exactly flush is legal.
  if (bad == 12) p.param_addr = size(Buffer::PARAM) - 12 * p.n - (chance(0.7) ? 4 : 0);
  else if (bad < 0 && p.rescale && chance(0.1)) p.param_addr = size(Buffer::PARAM) - 12 * p.n - 8;
  // A well-formed parameter table, unless this instruction tests a bad shift.
  auto& par = s_.buf(Buffer::PARAM);
  if (bad != 2 && p.param_addr % 4 == 0) {
    for (uint64_t j = 0; j < p.n; ++j) {
      const uint64_t a = p.param_addr + 12 * j;
      if (a + 12 > par.size()) break;
      const uint32_t trip[3] = {uint32_t(chance(0.2) ? rng_() : rnd(0, 1 << 17) - (1 << 16)),
                                uint32_t(chance(0.8) ? rnd(1u << 30, (1u << 31) - 1) : uint32_t(rng_())),
                                uint32_t(chance(0.8) ? rnd(20, 40) : rnd(1, 62))};
      for (int w = 0; w < 3; ++w)
        for (int k = 0; k < 4; ++k) par[a + 4 * w + k] = uint8_t(trip[w] >> (8 * k));
    }
    // rescale: the add's (a_mult, a_shift) pair right after the triples, as far as it fits.
    if (p.rescale) {
      const uint64_t a = p.param_addr + 12 * p.n;
      // Bad words include ones whose low six bits (what the datapath uses) are a legal 30.
      const int32_t bad_shift[] = {0, 63, -1, 94, INT32_MIN + 30};
      const uint32_t pair[2] = {
          uint32_t(chance(0.8) ? rnd(1u << 30, (1u << 31) - 1) : uint32_t(rng_())),
          uint32_t(bad == 11 ? bad_shift[rnd(0, 4)] : int32_t(chance(0.8) ? rnd(26, 36) : rnd(1, 62)))};
      for (int w = 0; w < 2; ++w)
        if (a + 4 * w + 4 <= par.size())
          for (int k = 0; k < 4; ++k) par[a + 4 * w + k] = uint8_t(pair[w] >> (8 * k));
    }
    if (bad == 8 && p.n > 0) {
      const uint64_t a = p.param_addr + 12 * rnd(0, p.n - 1) + 8;
      const int32_t bad_shift[] = {0, 63, -1, 100, INT32_MIN};
      const uint32_t v = uint32_t(bad_shift[rnd(0, 4)]);
      if (a + 4 <= par.size())
        for (int k = 0; k < 4; ++k) par[a + k] = uint8_t(v >> (8 * k));
    }
  }
  // Accumulators: mostly moderate, sometimes full range (wrap with the bias).
  if (chance(0.5) && p.acc_addr % 4 == 0) {
    auto& acc = s_.buf(Buffer::ACC);
    for (uint64_t e = 0; e < mn && p.acc_addr + 4 * e + 4 <= acc.size(); ++e) {
      const uint32_t v = uint32_t(rnd(0, 1 << 21) - (1 << 20));
      for (int k = 0; k < 4; ++k) acc[p.acc_addr + 4 * e + k] = uint8_t(v >> (8 * k));
    }
  }
  p.pop_prev = chance(0.3);
  p.pop_next = chance(0.3);
  p.push_prev = chance(0.3);
  p.push_next = chance(0.3);
  *long_running = mn > 30;
  return p.encode();
}

template <typename Model>
spec::Insn Bench<Model>::gen_pool(bool* long_running) {
  spec::PoolInsn p{};
  const unsigned W = tc_.spw;
  p.avg = chance(0.5);
  p.p = chance(0.04) ? 0 : rnd(1, 6);
  p.win = chance(0.04) ? 0 : rnd(1, 9);
  p.c = chance(0.04) ? 0 : rnd(1, 2 * W + 5);
  p.shift = p.avg ? rnd(1, 62) : rnd(0, 63);
  if (p.avg && chance(0.7)) p.shift = rnd(20, 34);
  p.mult = int32_t(chance(0.7) ? rnd(1u << 28, (1u << 31) - 1) : uint32_t(rng_()));
  p.in_zp = int8_t(rng_());
  p.out_zp = int8_t(rng_());
  int lo = int8_t(rng_()), hi = int8_t(rng_());
  if (lo > hi) std::swap(lo, hi);
  if (chance(0.3)) { lo = -128; hi = 127; }
  p.clip_lo = lo;
  p.clip_hi = hi;
  const int bad = chance(0.12) ? int(rnd(0, 3)) : -1;
  p.in_addr = place(Buffer::IN, p.p * p.win * p.c, 1, bad == 0);
  p.out_addr = place(Buffer::OUT, p.p * p.c, 1, bad == 1);
  if (bad == 2 && p.clip_lo < 127) p.clip_hi = p.clip_lo - 1 < -128 ? -128 : p.clip_lo, p.clip_lo = p.clip_hi + 1;
  if (bad == 3 && p.avg) p.shift = chance(0.5) ? 0 : 63;
  p.pop_prev = chance(0.3);
  p.pop_next = chance(0.3);
  p.push_prev = chance(0.3);
  p.push_next = chance(0.3);
  *long_running = p.p * p.c > 30;
  return p.encode();
}

template <typename Model>
spec::Insn Bench<Model>::gen_eltwise(bool* long_running) {
  spec::EltwiseInsn e{};
  const unsigned W = tc_.spw;
  e.count = chance(0.04) ? 0 : rnd(1, 3 * W + 7);
  // mul: the product of two operands spans about 16 bits more, so its shift
  // is usually larger (an illegal b_shift is then not an error).
  e.mul = chance(0.3);
  e.lut = !e.mul && chance(0.35);  // a lookup reads the whole 256-byte table at b_addr
  e.a_shift = e.mul && chance(0.7) ? rnd(40, 48) : chance(0.7) ? rnd(28, 34) : rnd(1, 62);
  e.b_shift = chance(0.7) ? rnd(28, 34) : rnd(1, 62);
  e.a_mult = int32_t(chance(0.15) ? 0 : chance(0.7) ? rnd(1u << 30, (1u << 31) - 1) : uint32_t(rng_()));
  e.b_mult = int32_t(chance(0.15) ? 0 : chance(0.7) ? rnd(1u << 30, (1u << 31) - 1) : uint32_t(rng_()));
  // An add rounds once, at a_shift: powers of two on one grid make exact ties
  // of the sum (b_shift stays random: checked, not used).
  if (!e.mul && chance(0.25)) {
    e.a_mult = int32_t(1) << rnd(0, 30);
    e.b_mult = int32_t(1) << rnd(0, 30);
    e.a_shift = rnd(1, 32);
  }
  e.a_zp = int8_t(rng_());
  e.b_zp = int8_t(rng_());
  e.out_zp = int8_t(rng_());
  int lo = int8_t(rng_()), hi = int8_t(rng_());
  if (lo > hi) std::swap(lo, hi);
  if (chance(0.3)) { lo = -128; hi = 127; }
  e.clip_lo = lo;
  e.clip_hi = hi;
  // One in five is bad: with lookups in the mix, every (mode, outcome) bin stays likely on every seed.
  const int bad = chance(0.2) ? int(rnd(0, 5)) : -1;
  e.a_addr = place(Buffer::IN, e.count, 1, bad == 0);
  e.b_addr = place(Buffer::IN, e.lut ? 256 : e.count, 1, bad == 1);
  e.out_addr = place(Buffer::OUT, e.count, 1, bad == 2);
  if (bad == 3) e.a_shift = chance(0.5) ? 0 : 63;
  if (bad == 4) e.b_shift = chance(0.5) ? 0 : 63;
  if (bad == 5 && e.clip_lo < 127) e.clip_hi = e.clip_lo, e.clip_lo = e.clip_hi + 1;
  e.pop_prev = chance(0.3);
  e.pop_next = chance(0.3);
  e.push_prev = chance(0.3);
  e.push_next = chance(0.3);
  *long_running = e.count > 30;
  return e.encode();
}

template <typename Model>
spec::Insn Bench<Model>::gen_rownorm(bool* long_running) {
  spec::RownormInsn r{};
  const unsigned W = tc_.spw;
  r.ln = chance(0.5);
  r.m = chance(0.04) ? 0 : rnd(1, 5);
  r.n = chance(0.04) ? 0 : chance(0.8) ? rnd(1, 3 * W + 5) : rnd(1, 300);
  r.shift = chance(0.8) ? rnd(30, 40) : rnd(1, 62);
  r.mult = int32_t(chance(0.1) ? uint32_t(rng_()) : rnd(1u << 29, (1u << 31) - 1));
  r.in_zp = int8_t(rng_());
  r.out_zp = int8_t(rng_());
  int lo = int8_t(rng_()), hi = int8_t(rng_());
  if (lo > hi) std::swap(lo, hi);
  if (chance(0.3)) { lo = -128; hi = 127; }
  r.clip_lo = lo;
  r.clip_hi = hi;
  r.eps = chance(0.2) ? 0 : chance(0.8) ? rnd(0, 1 << 16) : uint32_t(rng_());
  // 0..2 out of bounds (IN, OUT, PARAM), 3 a misaligned table, 4 clip_lo > clip_hi,
  // 5 a bad softmax shift, 6 a bad layernorm channel shift.
  const int bad = chance(0.2) ? int(rnd(0, 6)) : -1;
  if (bad >= 0) r.m = std::max<uint64_t>(r.m, 1), r.n = std::max<uint64_t>(r.n, 1);
  if (bad == 6) r.ln = 1;
  if (bad == 5) r.ln = 0;
  const uint64_t mn = r.m * r.n;
  const uint64_t par_span = r.ln ? 12 * r.n : 512;
  r.in_addr = place(Buffer::IN, mn, 1, bad == 0);
  r.out_addr = place(Buffer::OUT, mn, 1, bad == 1);
  r.param_addr = place(Buffer::PARAM, par_span, 4, bad == 2);
  if (bad == 3) r.param_addr |= rnd(1, 3);
  if (bad == 4 && r.clip_lo < 127) r.clip_hi = r.clip_lo, r.clip_lo = r.clip_hi + 1;
  if (bad == 5) r.shift = chance(0.5) ? 0 : 63;
  auto& par = s_.buf(Buffer::PARAM);
  auto put32 = [&](uint64_t a, uint32_t v) {
    if (a + 4 <= par.size())
      for (int k = 0; k < 4; ++k) par[a + k] = uint8_t(v >> (8 * k));
  };
  if (!r.ln && bad != 2 && chance(0.8)) {
    // An exponent table: decreasing from 2^15 (at times all zero: S = 0).
    const double scale = std::ldexp(1.0, -int(rnd(0, 8)));
    const bool zero = chance(0.05);
    for (uint64_t d = 0; d < 256; ++d) {
      const uint64_t a = r.param_addr + 2 * d;
      const uint32_t v = zero ? 0 : uint32_t(std::llround(32768.0 * std::exp(-scale * double(d))));
      if (a + 2 <= par.size()) par[a] = uint8_t(v), par[a + 1] = uint8_t(v >> 8);
    }
  }
  if (r.ln && bad != 2 && r.param_addr % 4 == 0) {
    for (uint64_t j = 0; j < r.n; ++j) {
      const uint64_t a = r.param_addr + 12 * j;
      put32(a, uint32_t(chance(0.2) ? rng_() : rnd(0, 1 << 24) - (1 << 23)));
      put32(a + 4, uint32_t(chance(0.2) ? uint32_t(rng_()) : rnd(1 << 16, 1 << 24) * (chance(0.5) ? 1u : ~0u)));
      put32(a + 8, uint32_t(chance(0.8) ? rnd(20, 36) : rnd(1, 62)));
    }
    if (bad == 6) {
      const int32_t bad_shift[] = {0, 63, -1, 100, INT32_MIN + 30};
      put32(r.param_addr + 12 * rnd(0, r.n - 1) + 8, uint32_t(bad_shift[rnd(0, 4)]));
    }
  }
  // Rows: random bytes, or a narrow spread (small variance, many ties at the max).
  if (chance(0.3) && r.in_addr + mn <= size(Buffer::IN)) {
    auto& in = s_.buf(Buffer::IN);
    const int base = int(int8_t(rng_())), spread = int(rnd(0, 3));
    for (uint64_t e = 0; e < mn; ++e) in[r.in_addr + e] = uint8_t(std::clamp(base + int(rnd(0, spread)), -128, 127));
  }
  r.pop_prev = chance(0.3);
  r.pop_next = chance(0.3);
  r.push_prev = chance(0.3);
  r.push_next = chance(0.3);
  *long_running = mn > 30;
  return r.encode();
}

template <typename Model>
spec::Insn Bench<Model>::gen_dwconv(bool* long_running) {
  spec::DwconvInsn d{};
  const unsigned W = tc_.spw;
  d.kh = chance(0.2) ? 1 : rnd(1, 5);
  d.kw = chance(0.2) ? 1 : rnd(1, 5);
  if (chance(0.02)) d.kh = d.kw = 15;  // 225 taps: the widest sum a lane holds
  d.stride = chance(0.6) ? 1 : rnd(1, 3);
  d.oh = chance(0.04) ? 0 : rnd(1, 3);
  d.ow = chance(0.04) ? 0 : rnd(1, 4);
  // Partial chunks (c not a multiple of SpW), exact ones and several chunks a pixel.
  d.c = chance(0.04) ? 0 : chance(0.3) ? W * rnd(1, 3) : rnd(1, 3 * W + 5);
  if (d.kh * d.kw > 25 && d.c > W) d.c = rnd(1, W);  // keep the 15 x 15 case short
  d.a_zp = int8_t(rng_());
  d.b_zp = int8_t(rng_());
  // 0..2 out of bounds (IN, WGT, ACC), 3 a misaligned acc_addr, 4..6 kh, kw or stride 0.
  const int bad = chance(0.15) ? int(rnd(0, 6)) : -1;
  if (bad >= 0 && bad <= 2) {
    d.oh = std::max<uint64_t>(d.oh, 1), d.ow = std::max<uint64_t>(d.ow, 1), d.c = std::max<uint64_t>(d.c, 1);
  }
  const uint64_t row_bytes = ((d.ow == 0 ? 0 : d.ow - 1) * d.stride + d.kw) * d.c;
  // Rows usually a pixel row apart, at times closer (overlapping rows are legal).
  d.ldi = chance(0.15) ? rnd(0, row_bytes) : row_bytes + rnd(0, 9);
  const uint64_t pixels = d.oh * d.ow;
  const uint64_t in_span =
      pixels * d.c == 0 ? 0 : ((d.oh - 1) * d.stride + d.kh - 1) * d.ldi + ((d.ow - 1) * d.stride + d.kw - 1) * d.c + d.c;
  d.in_addr = place(Buffer::IN, in_span, 1, bad == 0);
  d.wgt_addr = place(Buffer::WGT, d.kh * d.kw * d.c, 1, bad == 1);
  d.acc_addr = place(Buffer::ACC, 4 * pixels * d.c, 4, bad == 2);
  if (bad == 3) d.acc_addr |= rnd(1, 3);
  if (bad == 4) d.kh = 0;
  if (bad == 5) d.kw = 0;
  if (bad == 6) d.stride = 0;
  // At times the extreme operands: every difference +-255, every product 65025.
  if (bad < 0 && chance(d.kh * d.kw == 225 ? 0.6 : 0.08) && d.in_addr + in_span <= size(Buffer::IN)) {
    const bool neg = chance(0.5);
    d.a_zp = neg ? 127 : -128;
    d.b_zp = chance(0.5) ? 127 : -128;
    auto& inb = s_.buf(Buffer::IN);
    auto& wb = s_.buf(Buffer::WGT);
    for (uint64_t e = 0; e < in_span; ++e) inb[d.in_addr + e] = neg ? 0x80 : 0x7f;
    for (uint64_t e = 0; e < d.kh * d.kw * d.c; ++e) wb[d.wgt_addr + e] = d.b_zp == 127 ? 0x80 : 0x7f;
  }
  d.pop_prev = chance(0.3);
  d.pop_next = chance(0.3);
  d.push_prev = chance(0.3);
  d.push_next = chance(0.3);
  *long_running = pixels * d.c * d.kh * d.kw > 200;
  return d.encode();
}

template <typename Model>
int Bench<Model>::run() {
  print_seed(tc_.name, opt_);
  std::printf("%s: %s config, Rows=%u Cols=%u SpW=%u\n", tc_.name, hw_.name.data(), hw_.array_rows,
              hw_.array_cols, tc_.spw);
  // Opcodes interleaved so each starts from whatever state the others left.
  std::array<int, 6> count{};
  const int total = 6 * tc_.per_opcode;
  for (int i = 0; i < total && errors_ <= 20; ++i) {
    const int op = int(rnd(0, 5));
    if (count[op] >= tc_.per_opcode) { --i; continue; }
    if (i % 64 == 63) randomize_all();
    bool long_running = false;
    spec::Insn in;
    switch (op) {
      case 0: in = gen_gemm(&long_running); break;
      case 1: in = gen_postop(&long_running); break;
      case 2: in = gen_pool(&long_running); break;
      case 3: in = gen_eltwise(&long_running); break;
      case 4: in = gen_rownorm(&long_running); break;
      default: in = gen_dwconv(&long_running); break;
    }
    check_insn(in, op, count[op]++, long_running);
  }
  // An opcode the unit is never sent still fails cleanly rather than hanging.
  {
    ctx_ = "foreign opcode";
    spec::Insn in{};
    in.w[0] = uint32_t(spec::Opcode::LOAD);
    want_pop_prev_ = want_pop_next_ = 0;
    const Result r = execute(in, 7, false);
    if (!r.errored || r.cause != spec::err::ILLEGAL_INSN) fail("LOAD sent to compute not rejected");
    ++checked_;
  }
  for (const auto& [k, v] : coverage_) std::printf("  %-24s %d\n", k.c_str(), v);
  for (const char* must : {"GEMM ok", "GEMM illegal", "GEMM oob", "POSTOP ok", "POSTOP illegal", "POSTOP oob",
                           "POSTOP rescale ok", "POSTOP rescale illegal", "POSTOP rescale oob",
                           "POOL ok", "POOL illegal", "POOL oob", "ELTWISE ok", "ELTWISE illegal", "ELTWISE oob",
                           "ELTWISE mul ok", "ELTWISE mul illegal", "ELTWISE mul oob", "ELTWISE add ok", "ROWNORM ok",
                           "ROWNORM illegal", "ROWNORM oob", "ROWNORM ln ok", "ROWNORM ln illegal", "ROWNORM ln oob",
                           "ROWNORM timed", "DWCONV ok", "DWCONV illegal", "DWCONV oob", "DWCONV timed",
                           "DWCONV partial", "DWCONV stall", "DWCONV 1x1"})
    if (coverage_[must] == 0) {
      std::printf("  coverage hole: %s\n", must);
      ++errors_;
    }
  if (sim_.assertion_failed()) {
    std::printf("  an RTL assertion fired\n");
    ++errors_;
  }
  std::printf("%s: %" PRIu64 " cycles\n", tc_.name, sim_.cycles());
  return report(tc_.name, argv0_, opt_, checked_, errors_);
}

template <typename Model>
int run_compute_tb(int argc, char** argv, const TbConfig& tc) {
  const Options opt = parse_options(argc, argv, tc.default_seed);
  Bench<Model> b(argc, argv, tc, opt);
  return b.run();
}

}  // namespace loom::rtltest::compute
