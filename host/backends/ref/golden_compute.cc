// The golden model's compute unit: GEMM on the systolic array and the
// post-op unit (POSTOP, POOL, ELTWISE), bit-exact per docs/spec/isa.yaml.
#include <algorithm>

#include "backends/ref/golden.h"
#include "common/quant.h"

namespace loom::ref {
namespace {

using spec::Buffer;

bool is_word_aligned(uint64_t v) { return (v & 3) == 0; }
bool shift_ok(int64_t shift) { return shift >= kMinShift && shift <= kMaxShift; }

int32_t i8_at(const std::vector<uint8_t>& b, uint64_t a) { return int8_t(b[a]); }

uint32_t u32_at(const std::vector<uint8_t>& b, uint64_t a) {
  return uint32_t(b[a]) | uint32_t(b[a + 1]) << 8 | uint32_t(b[a + 2]) << 16 | uint32_t(b[a + 3]) << 24;
}
int32_t i32_at(const std::vector<uint8_t>& b, uint64_t a) { return int32_t(u32_at(b, a)); }

void put_u32(std::vector<uint8_t>& b, uint64_t a, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[a + i] = uint8_t(v >> (8 * i));
}

/// The clamp every post-op output goes through; callers have checked lo <= hi.
uint8_t clamp_out(int64_t y, int64_t lo, int64_t hi) { return uint8_t(int8_t(std::clamp(y, lo, hi))); }

}  // namespace

uint32_t exec_gemm(CoreState& s, const spec::GemmInsn& g) {
  if (!is_word_aligned(g.acc_addr) || !is_word_aligned(g.ldc)) return spec::err::ILLEGAL_INSN;
  const auto& a = s.buf(Buffer::IN);
  const auto& b = s.buf(Buffer::WGT);
  auto& acc = s.buf(Buffer::ACC);
  // An operand is only addressed when it contributes: with k_len = 0 the
  // result is the empty sum (0), so an overwriting GEMM clears the tile.
  const uint64_t k = g.k_len;
  if (!in_scratchpad(a.size(), g.in_addr, g.n == 0 ? 0 : span_2d(g.m, g.lda, k)) ||
      !in_scratchpad(b.size(), g.wgt_addr, g.m == 0 ? 0 : span_2d(k, g.ldb, g.n)) ||
      !in_scratchpad(acc.size(), g.acc_addr, span_2d(g.m, g.ldc, 4 * g.n)))
    return spec::err::SCRATCHPAD_OOB;

  const int32_t azp = int32_t(g.a_zp);
  const int32_t bzp = int32_t(g.b_zp);
  // Products of zero-point-shifted int8 values fit int32 (|x| <= 255); the
  // sum wraps modulo 2^32, so it is kept in uint32 to stay defined.
  for (uint64_t i = 0; i < g.m; ++i) {
    for (uint64_t j = 0; j < g.n; ++j) {
      const uint64_t c_at = g.acc_addr + i * g.ldc + 4 * j;
      uint32_t sum = g.accumulate ? u32_at(acc, c_at) : 0u;
      for (uint64_t kk = 0; kk < k; ++kk) {
        const int32_t x = i8_at(a, g.in_addr + i * g.lda + kk) - azp;
        const int32_t w = i8_at(b, g.wgt_addr + kk * g.ldb + j) - bzp;
        sum += uint32_t(x * w);
      }
      put_u32(acc, c_at, sum);
    }
  }
  s.counter(spec::Counter::MACS) += g.m * g.n * k;
  return 0;
}

uint32_t exec_postop(CoreState& s, const spec::PostopInsn& p) {
  if (!is_word_aligned(p.acc_addr) || !is_word_aligned(p.param_addr) || p.clip_lo > p.clip_hi)
    return spec::err::ILLEGAL_INSN;
  if (p.residual && !shift_ok(int64_t(p.res_shift))) return spec::err::ILLEGAL_INSN;
  const uint64_t mn = p.m * p.n;
  if (mn == 0) return 0;
  const auto& acc = s.buf(Buffer::ACC);
  const auto& in = s.buf(Buffer::IN);
  const auto& par = s.buf(Buffer::PARAM);
  auto& out = s.buf(Buffer::OUT);
  if (!in_scratchpad(acc.size(), p.acc_addr, 4 * mn) || !in_scratchpad(out.size(), p.out_addr, mn) ||
      !in_scratchpad(par.size(), p.param_addr, uint64_t(spec::kParamBytesPerChannel) * p.n) ||
      (p.residual && !in_scratchpad(in.size(), p.res_addr, mn)))
    return spec::err::SCRATCHPAD_OOB;
  // A per-channel shift outside 1..62 is an illegal parameter table; check
  // every channel before writing any output.
  for (uint64_t j = 0; j < p.n; ++j)
    if (!shift_ok(i32_at(par, p.param_addr + 12 * j + 8))) return spec::err::ILLEGAL_INSN;

  for (uint64_t j = 0; j < p.n; ++j) {
    const uint64_t pj = p.param_addr + 12 * j;
    const uint32_t bias = u32_at(par, pj);
    const int32_t mult = i32_at(par, pj + 4);
    const int shift = i32_at(par, pj + 8);
    for (uint64_t i = 0; i < p.m; ++i) {
      const uint64_t e = i * p.n + j;
      const int32_t v = int32_t(u32_at(acc, p.acc_addr + 4 * e) + bias);  // int32 wrap of acc + bias
      int64_t y = int64_t(requantize(v, mult, shift)) + p.out_zp;
      if (p.residual) {
        const int64_t r = int64_t(i8_at(in, p.res_addr + e)) - p.res_zp;
        y += requantize(r, int32_t(p.res_mult), int(p.res_shift));
      }
      out[p.out_addr + e] = clamp_out(y, p.clip_lo, p.clip_hi);
    }
  }
  return 0;
}

uint32_t exec_pool(CoreState& s, const spec::PoolInsn& p) {
  if (p.clip_lo > p.clip_hi || (p.avg && !shift_ok(int64_t(p.shift)))) return spec::err::ILLEGAL_INSN;
  // An empty window has no maximum, so win = 0 is a no-op like p = 0 or c = 0.
  if (p.p == 0 || p.win == 0 || p.c == 0) return 0;
  const auto& in = s.buf(Buffer::IN);
  auto& out = s.buf(Buffer::OUT);
  if (!in_scratchpad(in.size(), p.in_addr, p.p * p.win * p.c) || !in_scratchpad(out.size(), p.out_addr, p.p * p.c))
    return spec::err::SCRATCHPAD_OOB;

  for (uint64_t i = 0; i < p.p; ++i) {
    for (uint64_t ch = 0; ch < p.c; ++ch) {
      int64_t best = -128;
      int64_t sum = 0;  // |sum| <= 255 * 65535, well inside int32 as requantize expects
      for (uint64_t w = 0; w < p.win; ++w) {
        const int64_t x = i8_at(in, p.in_addr + (i * p.win + w) * p.c + ch);
        best = std::max(best, x);
        sum += x - p.in_zp;
      }
      const int64_t y = p.avg ? int64_t(requantize(sum, int32_t(p.mult), int(p.shift))) + p.out_zp : best;
      out[p.out_addr + i * p.c + ch] = clamp_out(y, p.clip_lo, p.clip_hi);
    }
  }
  return 0;
}

uint32_t exec_eltwise(CoreState& s, const spec::EltwiseInsn& e) {
  // Both shifts are checked even when a multiplier is 0 (unary use), so
  // validity never depends on data values.
  if (!shift_ok(int64_t(e.a_shift)) || !shift_ok(int64_t(e.b_shift)) || e.clip_lo > e.clip_hi)
    return spec::err::ILLEGAL_INSN;
  if (e.count == 0) return 0;
  const auto& in = s.buf(Buffer::IN);
  auto& out = s.buf(Buffer::OUT);
  if (!in_scratchpad(in.size(), e.a_addr, e.count) || !in_scratchpad(in.size(), e.b_addr, e.count) ||
      !in_scratchpad(out.size(), e.out_addr, e.count))
    return spec::err::SCRATCHPAD_OOB;

  for (uint64_t i = 0; i < e.count; ++i) {
    const int64_t a = int64_t(i8_at(in, e.a_addr + i)) - e.a_zp;
    const int64_t b = int64_t(i8_at(in, e.b_addr + i)) - e.b_zp;
    const int64_t y = int64_t(requantize(a, int32_t(e.a_mult), int(e.a_shift))) +
                      requantize(b, int32_t(e.b_mult), int(e.b_shift)) + e.out_zp;
    out[e.out_addr + i] = clamp_out(y, e.clip_lo, e.clip_hi);
  }
  return 0;
}

}  // namespace loom::ref
