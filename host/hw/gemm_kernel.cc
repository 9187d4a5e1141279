// The golden model's int8 GEMM kernel (gemm_kernel.h). With SSE2 (every
// x86-64 CPU) a multiply-add of int16 pairs takes 2 k of 4 columns at once,
// the sums of 4 rows x 8 columns held in registers over all of k; elsewhere
// the same sums in plain C++.
#include "hw/gemm_kernel.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace loom::hw {

namespace {
constexpr uint64_t kCols = 4;  // columns a group
constexpr uint64_t kLanes = 2 * kCols;
}  // namespace

PackedB::PackedB(const int8_t* b, uint64_t ldb, uint64_t k, uint64_t n, bool b_trans)
    : k_(k), n_(n), pairs_((k + 1) / 2), groups_((n + kCols - 1) / kCols) {
  p_.assign(groups_ * pairs_ * kLanes, 0);
  for (uint64_t kk = 0; kk < k; ++kk)
    for (uint64_t j = 0; j < n; ++j) {
      const int8_t v = b_trans ? b[j * ldb + kk] : b[kk * ldb + j];
      p_[((j / kCols) * pairs_ + kk / 2) * kLanes + (j % kCols) * 2 + kk % 2] = v;
    }
}

namespace {

/// The pair (a[kk], a[kk + 1]) of one row as two int16 in one int32 (the
/// second 0 past k).
inline int32_t pair_of(const int8_t* a, uint64_t kk, uint64_t k) {
  const uint16_t lo = uint16_t(int16_t(a[kk]));
  const uint16_t hi = kk + 1 < k ? uint16_t(int16_t(a[kk + 1])) : 0;
  return int32_t(uint32_t(lo) | uint32_t(hi) << 16);
}

}  // namespace

void PackedB::sums(const int8_t* a, uint64_t lda, uint64_t rows, int32_t* out) const {
  const int16_t* p = p_.data();
#if defined(__SSE2__)
  if (rows == 4) {
    // The four rows' k pairs side by side: xp[4 q + r] is row r's pair q.
    std::vector<int32_t> xp(4 * pairs_);
    for (uint64_t r = 0; r < 4; ++r)
      for (uint64_t q = 0; q < pairs_; ++q) xp[4 * q + r] = pair_of(a + r * lda, 2 * q, k_);
    for (uint64_t g = 0; g < groups_; g += 2) {
      const bool two = g + 1 < groups_;
      const int16_t* b0 = p + g * pairs_ * kLanes;
      const int16_t* b1 = two ? b0 + pairs_ * kLanes : b0;
      __m128i s00 = _mm_setzero_si128(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
      for (uint64_t q = 0; q < pairs_; ++q) {
        const __m128i w0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + q * kLanes));
        const __m128i w1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + q * kLanes));
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(xp.data() + 4 * q));
        const __m128i x0 = _mm_shuffle_epi32(x, 0x00), x1 = _mm_shuffle_epi32(x, 0x55), x2 = _mm_shuffle_epi32(x, 0xAA),
                      x3 = _mm_shuffle_epi32(x, 0xFF);
        s00 = _mm_add_epi32(s00, _mm_madd_epi16(x0, w0)), s01 = _mm_add_epi32(s01, _mm_madd_epi16(x0, w1));
        s10 = _mm_add_epi32(s10, _mm_madd_epi16(x1, w0)), s11 = _mm_add_epi32(s11, _mm_madd_epi16(x1, w1));
        s20 = _mm_add_epi32(s20, _mm_madd_epi16(x2, w0)), s21 = _mm_add_epi32(s21, _mm_madd_epi16(x2, w1));
        s30 = _mm_add_epi32(s30, _mm_madd_epi16(x3, w0)), s31 = _mm_add_epi32(s31, _mm_madd_epi16(x3, w1));
      }
      // Columns [g * 4, g * 4 + 8) of each row, cut at n.
      const uint64_t j0 = g * kCols, cnt = std::min<uint64_t>(two ? 2 * kCols : kCols, n_ - j0);
      const __m128i rows_sums[4][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}};
      for (uint64_t r = 0; r < 4; ++r) {
        int32_t tmp[2 * kCols];
        std::memcpy(tmp, &rows_sums[r][0], sizeof(__m128i));
        std::memcpy(tmp + kCols, &rows_sums[r][1], sizeof(__m128i));
        std::memcpy(out + r * n_ + j0, tmp, cnt * sizeof(int32_t));
      }
    }
    return;
  }
#endif
  for (uint64_t r = 0; r < rows; ++r) {
    const int8_t* ar = a + r * lda;
    int32_t* sr = out + r * n_;
    for (uint64_t g = 0; g < groups_; ++g) {
      int32_t acc[kCols] = {};
      const int16_t* bg = p + g * pairs_ * kLanes;
      for (uint64_t q = 0; q < pairs_; ++q) {
        const int32_t x0 = ar[2 * q], x1 = 2 * q + 1 < k_ ? ar[2 * q + 1] : 0;
        for (uint64_t c = 0; c < kCols; ++c) acc[c] += x0 * bg[q * kLanes + 2 * c] + x1 * bg[q * kLanes + 2 * c + 1];
      }
      const uint64_t j0 = g * kCols, cnt = std::min<uint64_t>(kCols, n_ - j0);
      std::memcpy(sr + j0, acc, cnt * sizeof(int32_t));
    }
  }
}

}  // namespace loom::hw
