// The golden model's int8 GEMM inner kernel: raw sums of int8 products
// (no zero points) for a block of up to four rows of A against all columns
// of B, B packed once per GEMM. Exact integer arithmetic: every path gives
// the same sums.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::hw {

/// B (k x n int8) packed for the kernel: pairs of consecutive k as int16,
/// four columns a group, so one 128-bit multiply-add takes 2 k of 4 columns.
class PackedB {
 public:
  /// B(kk, j) = b_trans ? b[j * ldb + kk] : b[kk * ldb + j].
  PackedB(const int8_t* b, uint64_t ldb, uint64_t k, uint64_t n, bool b_trans);
  /// sums[r * n + j] = sum over kk < k of a[r * lda + kk] * B(kk, j), for
  /// r < rows (at most 4) and j < n; int32 does not wrap (|a*b| <= 2^14,
  /// k < 2^16).
  void sums(const int8_t* a, uint64_t lda, uint64_t rows, int32_t* sums) const;

 private:
  uint64_t k_ = 0, n_ = 0, pairs_ = 0, groups_ = 0;
  std::vector<int16_t> p_;  // [group][pair][column 0..3][k even, k odd]
};

}  // namespace loom::hw
