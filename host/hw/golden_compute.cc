// The golden model's compute unit: GEMM on the systolic array, DWCONV on the
// depthwise unit and the post-op unit (POSTOP, POOL, ELTWISE, ROWNORM),
// bit-exact per docs/spec/isa.yaml.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>

#include "common/quant.h"
#include "common/rownorm.h"
#include "hw/gemm_kernel.h"
#include "hw/golden.h"

namespace loom::hw {
namespace {

using spec::Buffer;

bool shift_ok(int64_t shift) { return shift >= kMinShift && shift <= kMaxShift; }

int32_t i8_at(const std::vector<uint8_t>& b, uint64_t a) { return int8_t(b[a]); }

uint32_t u32_at(const std::vector<uint8_t>& b, uint64_t a) {
  return uint32_t(b[a]) | uint32_t(b[a + 1]) << 8 | uint32_t(b[a + 2]) << 16 | uint32_t(b[a + 3]) << 24;
}
int32_t i32_at(const std::vector<uint8_t>& b, uint64_t a) { return int32_t(u32_at(b, a)); }

/// Little-endian 32-bit words at raw scratchpad addresses.
uint32_t load_le32(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  } else {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
}
void store_le32(uint8_t* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
  }
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
  const uint64_t m = g.m, n = g.n, k = g.k_len;
  if (!in_scratchpad(a.size(), g.in_addr, n == 0 ? 0 : span_2d(m, g.lda, k)) ||
      !in_scratchpad(b.size(), g.wgt_addr,
                     m == 0      ? 0
                     : g.b_trans ? span_2d(n, g.ldb, k)
                                 : span_2d(k, g.ldb, n)) ||
      !in_scratchpad(acc.size(), g.acc_addr, span_2d(m, g.ldc, 4 * n)))
    return spec::err::SCRATCHPAD_OOB;
  s.counter(spec::Counter::MACS) += m * n * k;
  if (m == 0 || n == 0) return 0;

  // C[i][j] (+)= sum_k (A[i][k] - az)(B[k][j] - bz), modulo 2^32. Expanded,
  //   sum_k A*B - bz * rowsum(A)[i] - az * colsum(B)[j] + k * az * bz,
  // which is exact in uint32 arithmetic. The raw int8 products fit int16
  // and sum_k A*B fits int32 without wrapping (|A*B| <= 2^14, k < 2^16),
  // so the kernel sums raw int8 products (gemm_kernel.h) and the zero
  // points enter as corrections. Operand pointers are only formed when k > 0 (the checks
  // above then guarantee every row is inside its scratchpad).
  const uint32_t az = uint32_t(g.a_zp);
  const uint32_t bz = uint32_t(g.b_zp);
  const uint32_t kzz = uint32_t(k) * az * bz;
  const int8_t* const pa = k == 0 ? nullptr : reinterpret_cast<const int8_t*>(a.data() + g.in_addr);
  const int8_t* const pb = k == 0 ? nullptr : reinterpret_cast<const int8_t*>(b.data() + g.wgt_addr);

  // Per-column correction - az * colsum(B)[j] + k * az * bz.
  std::vector<uint32_t> col_corr(n, kzz);
  if (k != 0 && az != 0) {
    std::vector<int32_t> colsum(n, 0);
    for (uint64_t kk = 0; kk < k; ++kk) {
      for (uint64_t j = 0; j < n; ++j) colsum[j] += g.b_trans ? pb[j * g.ldb + kk] : pb[kk * g.ldb + j];
    }
    for (uint64_t j = 0; j < n; ++j) col_corr[j] -= az * uint32_t(colsum[j]);
  }

  // Rows are produced kRows at a time against B packed once (gemm_kernel.h)
  // and written back by blocks of kCols columns, the rows of a block in
  // order, each row read-modify-write in turn, so overlapping C rows
  // (ldc < 4n) end as the fabric writes them.
  constexpr uint64_t kRows = 4;
  constexpr uint64_t kCols = 512;
  std::optional<PackedB> packed;
  if (k != 0) packed.emplace(pb, g.ldb, k, n, g.b_trans);
  std::vector<int32_t> sums(kRows * n, 0);
  uint8_t* const pc = acc.data() + g.acc_addr;
  for (uint64_t i0 = 0; i0 < m; i0 += kRows) {
    const uint64_t rows = std::min(kRows, m - i0);
    // Per-row correction - bz * rowsum(A)[i].
    std::array<uint32_t, kRows> row_corrs{};
    for (uint64_t r = 0; r < rows && k != 0 && bz != 0; ++r) {
      const int8_t* ar = pa + (i0 + r) * g.lda;
      int32_t rowsum = 0;
      for (uint64_t kk = 0; kk < k; ++kk) rowsum += ar[kk];
      row_corrs[r] = 0u - bz * uint32_t(rowsum);
    }
    if (packed) packed->sums(pa + i0 * g.lda, g.lda, rows, sums.data());
    for (uint64_t j0 = 0; j0 < n; j0 += kCols) {
      const uint64_t cols = std::min(kCols, n - j0);
      for (uint64_t r = 0; r < rows; ++r) {
        const uint32_t row_corr = row_corrs[r];
        const int32_t* sr = sums.data() + r * n + j0;
        uint8_t* c = pc + (i0 + r) * g.ldc + 4 * j0;
        for (uint64_t j = 0; j < cols; ++j) {
          const uint32_t v = uint32_t(sr[j]) + row_corr + col_corr[j0 + j];
          store_le32(c + 4 * j, g.accumulate ? load_le32(c + 4 * j) + v : v);
        }
      }
    }
  }
  return 0;
}

uint32_t exec_postop(CoreState& s, const spec::PostopInsn& p) {
  if (!is_word_aligned(p.acc_addr) || !is_word_aligned(p.param_addr) || p.clip_lo > p.clip_hi)
    return spec::err::ILLEGAL_INSN;
  if (p.residual && !shift_ok(int64_t(p.res_shift))) return spec::err::ILLEGAL_INSN;
  if (p.rescale && (!p.residual || p.add_lo > p.add_hi)) return spec::err::ILLEGAL_INSN;
  const uint64_t mn = p.m * p.n;
  if (mn == 0) return 0;
  const auto& acc = s.buf(Buffer::ACC);
  const auto& in = s.buf(Buffer::IN);
  const auto& par = s.buf(Buffer::PARAM);
  auto& out = s.buf(Buffer::OUT);
  if (!in_scratchpad(acc.size(), p.acc_addr, 4 * mn) || !in_scratchpad(out.size(), p.out_addr, mn) ||
      !in_scratchpad(par.size(), p.param_addr, uint64_t(spec::kParamBytesPerChannel) * p.n + (p.rescale ? 8 : 0)) ||
      (p.residual && !in_scratchpad(in.size(), p.res_addr, mn)))
    return spec::err::SCRATCHPAD_OOB;
  // A per-channel shift outside 1..62 is an illegal parameter table; check
  // every channel before writing any output.
  for (uint64_t j = 0; j < p.n; ++j)
    if (!shift_ok(i32_at(par, p.param_addr + 12 * j + 8))) return spec::err::ILLEGAL_INSN;
  // rescale: the add's (a_mult, a_shift) pair follows the channel triples.
  const uint64_t pa = p.param_addr + 12 * p.n;
  const int32_t a_mult = p.rescale ? i32_at(par, pa) : 0;
  const int32_t a_shift = p.rescale ? i32_at(par, pa + 4) : 1;
  if (p.rescale && !shift_ok(a_shift)) return spec::err::ILLEGAL_INSN;

  // Each output depends on its own accumulator word only and the buffers are
  // distinct, so the tile is walked row by row (contiguous in ACC and OUT)
  // with the per-channel parameters decoded once.
  std::vector<uint32_t> bias(p.n);
  std::vector<int32_t> mult(p.n);
  std::vector<int> shift(p.n);
  for (uint64_t j = 0; j < p.n; ++j) {
    const uint64_t pj = p.param_addr + 12 * j;
    bias[j] = u32_at(par, pj);
    mult[j] = i32_at(par, pj + 4);
    shift[j] = i32_at(par, pj + 8);
  }
  const uint8_t* const pacc = acc.data() + p.acc_addr;
  const uint8_t* const pres = p.residual ? in.data() + p.res_addr : nullptr;
  uint8_t* const pout = out.data() + p.out_addr;
  const int32_t res_mult = int32_t(p.res_mult);
  const int res_shift = int(p.res_shift);
  for (uint64_t i = 0; i < p.m; ++i) {
    for (uint64_t j = 0; j < p.n; ++j) {
      const uint64_t e = i * p.n + j;
      const int32_t v = int32_t(load_le32(pacc + 4 * e) + bias[j]);  // int32 wrap of acc + bias
      int64_t y = int64_t(p.even ? requantize_even(v, mult[j], shift[j]) : requantize(v, mult[j], shift[j])) + p.out_zp;
      const int64_t r = pres ? int64_t(int8_t(pres[e])) - p.res_zp : 0;
      if (p.rescale) {  // a requantizing add of the clamped result, rounded once
        const int64_t x = int64_t(int8_t(clamp_out(y, p.clip_lo, p.clip_hi)));
        y = int64_t(requantize_sum(x - p.a_zp, a_mult, r, res_mult, a_shift)) + p.add_zp;
        pout[e] = clamp_out(y, p.add_lo, p.add_hi);
        continue;
      }
      if (pres) y += requantize(r, res_mult, res_shift);
      pout[e] = clamp_out(y, p.clip_lo, p.clip_hi);
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
      const int64_t y = p.avg ? int64_t(requantize_even(sum, int32_t(p.mult), int(p.shift))) + p.out_zp : best;
      out[p.out_addr + i * p.c + ch] = clamp_out(y, p.clip_lo, p.clip_hi);
    }
  }
  return 0;
}

uint32_t exec_eltwise(CoreState& s, const spec::EltwiseInsn& e) {
  // Both shifts of an add are checked even when a multiplier is 0 (unary
  // use), so validity never depends on data values; mul uses a_shift only.
  if (!shift_ok(int64_t(e.a_shift)) || (!e.mul && !shift_ok(int64_t(e.b_shift))) || e.clip_lo > e.clip_hi)
    return spec::err::ILLEGAL_INSN;
  if (e.count == 0) return 0;
  const auto& in = s.buf(Buffer::IN);
  auto& out = s.buf(Buffer::OUT);
  // With lut, B is the whole 256-byte table.
  if (!in_scratchpad(in.size(), e.a_addr, e.count) || !in_scratchpad(in.size(), e.b_addr, e.lut ? 256 : e.count) ||
      !in_scratchpad(out.size(), e.out_addr, e.count))
    return spec::err::SCRATCHPAD_OOB;

  if (e.lut) {
    for (uint64_t i = 0; i < e.count; ++i)
      out[e.out_addr + i] =
          clamp_out(i8_at(in, e.b_addr + uint64_t(i8_at(in, e.a_addr + i) + 128)), e.clip_lo, e.clip_hi);
    return 0;
  }
  for (uint64_t i = 0; i < e.count; ++i) {
    const int64_t a = int64_t(i8_at(in, e.a_addr + i)) - e.a_zp;
    const int64_t b = int64_t(i8_at(in, e.b_addr + i)) - e.b_zp;
    // |a * b| <= 255 * 255: the product is exact in int32. The add rounds
    // once, at a_shift (b_shift is checked above but not used).
    const int64_t y =
        e.mul ? int64_t(requantize(a * b, int32_t(e.a_mult), int(e.a_shift))) + e.out_zp
              : int64_t(requantize_sum(a, int32_t(e.a_mult), b, int32_t(e.b_mult), int(e.a_shift))) + e.out_zp;
    out[e.out_addr + i] = clamp_out(y, e.clip_lo, e.clip_hi);
  }
  return 0;
}

uint32_t exec_dwconv(CoreState& s, const spec::DwconvInsn& d) {
  if (d.kh == 0 || d.kw == 0 || d.stride == 0 || !is_word_aligned(d.acc_addr)) return spec::err::ILLEGAL_INSN;
  const uint64_t taps = d.kh * d.kw, pixels = d.oh * d.ow, c = d.c;
  if (pixels * c == 0) return 0;
  const auto& in = s.buf(Buffer::IN);
  const auto& w = s.buf(Buffer::WGT);
  auto& acc = s.buf(Buffer::ACC);
  // The last window's last byte; every field is at most 24 bits wide, so the
  // sums stay far below 2^64.
  const uint64_t in_span = ((d.oh - 1) * d.stride + d.kh - 1) * d.ldi + ((d.ow - 1) * d.stride + d.kw - 1) * c + c;
  if (!in_scratchpad(in.size(), d.in_addr, in_span) || !in_scratchpad(w.size(), d.wgt_addr, taps * c) ||
      !in_scratchpad(acc.size(), d.acc_addr, 4 * pixels * c))
    return spec::err::SCRATCHPAD_OOB;
  s.counter(spec::Counter::MACS) += pixels * c * taps;
  const int8_t* const pw = reinterpret_cast<const int8_t*>(w.data() + d.wgt_addr);
  uint8_t* const pacc = acc.data() + d.acc_addr;
  // |(x - a_zp)(w - b_zp)| <= 255^2 and taps <= 225: the sums are exact in int32.
  std::vector<int32_t> sum(c);
  for (uint64_t oy = 0; oy < d.oh; ++oy)
    for (uint64_t ox = 0; ox < d.ow; ++ox) {
      std::fill(sum.begin(), sum.end(), 0);
      for (uint64_t ky = 0; ky < d.kh; ++ky)
        for (uint64_t kx = 0; kx < d.kw; ++kx) {
          const int8_t* px = reinterpret_cast<const int8_t*>(in.data() + d.in_addr + (oy * d.stride + ky) * d.ldi +
                                                             (ox * d.stride + kx) * c);
          const int8_t* pt = pw + (ky * d.kw + kx) * c;
          for (uint64_t j = 0; j < c; ++j)
            sum[j] += (int32_t(px[j]) - int32_t(d.a_zp)) * (int32_t(pt[j]) - int32_t(d.b_zp));
        }
      for (uint64_t j = 0; j < c; ++j) store_le32(pacc + 4 * ((oy * d.ow + ox) * c + j), uint32_t(sum[j]));
    }
  return 0;
}

uint32_t exec_rownorm(CoreState& s, const spec::RownormInsn& r) {
  if (!is_word_aligned(r.param_addr) || r.clip_lo > r.clip_hi || (!r.ln && !shift_ok(int64_t(r.shift))))
    return spec::err::ILLEGAL_INSN;
  const uint64_t mn = r.m * r.n;
  if (mn == 0) return 0;
  const auto& in = s.buf(Buffer::IN);
  const auto& par = s.buf(Buffer::PARAM);
  auto& out = s.buf(Buffer::OUT);
  const uint64_t param_len = r.ln ? uint64_t(spec::kParamBytesPerChannel) * r.n : 512;
  if (!in_scratchpad(in.size(), r.in_addr, mn) || !in_scratchpad(out.size(), r.out_addr, mn) ||
      !in_scratchpad(par.size(), r.param_addr, param_len))
    return spec::err::SCRATCHPAD_OOB;
  const int8_t* const px = reinterpret_cast<const int8_t*>(in.data() + r.in_addr);
  int8_t* const py = reinterpret_cast<int8_t*>(out.data() + r.out_addr);
  if (!r.ln) {
    std::array<uint16_t, 256> table;
    for (uint64_t d = 0; d < 256; ++d)
      table[d] = uint16_t(par[r.param_addr + 2 * d] | par[r.param_addr + 2 * d + 1] << 8);
    for (uint64_t i = 0; i < r.m; ++i)
      softmax_row(px + i * r.n, r.n, table.data(), int32_t(r.mult), int(r.shift), r.out_zp, r.clip_lo, r.clip_hi,
                  py + i * r.n);
    return 0;
  }
  // Every channel's shift is checked before any output is written.
  std::vector<LayerNormChannel> ch(r.n);
  for (uint64_t j = 0; j < r.n; ++j) {
    const uint64_t pj = r.param_addr + 12 * j;
    ch[j] = {i32_at(par, pj), i32_at(par, pj + 4), i32_at(par, pj + 8)};
    if (!shift_ok(ch[j].sh)) return spec::err::ILLEGAL_INSN;
  }
  for (uint64_t i = 0; i < r.m; ++i)
    layernorm_row(px + i * r.n, r.n, r.in_zp, uint32_t(r.eps), ch.data(), r.out_zp, r.clip_lo, r.clip_hi, py + i * r.n);
  return 0;
}

}  // namespace loom::hw
