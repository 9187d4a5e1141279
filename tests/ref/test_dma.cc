// LOAD and STORE: 2-D strides, row padding, an im2col convolution end to end,
// and the byte counters.
#include <gtest/gtest.h>

#include "harness.h"
#include "naive.h"

namespace loom::ref::test {
namespace {

TEST(RefLoad, StridePaddingAndByteCounter) {
  const uint32_t seed = test_seed(5);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Harness h;
    const unsigned rows = rand_in(rng, 0, 9), cols = rand_in(rng, 1, 20);
    const unsigned dstride = cols + rand_in(rng, 0, 7), sstride = cols + rand_in(rng, 0, 7);
    const unsigned pad_lo = rand_in(rng, 0, 3), pad_hi = rand_in(rng, 0, 3);
    const int pad_value = rand_in(rng, -128, 127);
    const unsigned sp_addr = rand_in(rng, 0, 200);
    const auto src = random_bytes(rng, std::max(1u, rows * dstride));
    const uint64_t dsrc = h.put(src);
    // Pre-fill so bytes between rows can be checked as untouched.
    auto& in = h.core(0).buf(Buffer::IN);
    std::fill(in.begin(), in.begin() + 1024, uint8_t(0x5A));
    h.run(0, {load(Buffer::IN, sp_addr, dsrc, rows, cols, dstride, sstride, pad_lo, pad_hi, pad_value), end_insn()});
    ASSERT_EQ(h.err(0), 0u);
    std::vector<uint8_t> expect(1024, 0x5A);
    for (unsigned i = 0; i < pad_lo + rows + pad_hi; ++i)
      for (unsigned j = 0; j < cols; ++j) {
        const bool real = i >= pad_lo && i < pad_lo + rows;
        expect[sp_addr + i * sstride + j] = real ? src[(i - pad_lo) * dstride + j] : uint8_t(int8_t(pad_value));
      }
    ASSERT_EQ(std::vector<uint8_t>(in.begin(), in.begin() + 1024), expect);
    EXPECT_EQ(h.counter(0, spec::Counter::BYTES_RD), uint64_t(rows) * cols);  // padding is not read
    EXPECT_EQ(h.counter(0, spec::Counter::INSN_LOAD), 1u);
  }
}

TEST(RefStore, StridedFromOutAndAcc) {
  Harness h;
  auto& out = h.core(0).buf(Buffer::OUT);
  auto& acc = h.core(0).buf(Buffer::ACC);
  for (int i = 0; i < 256; ++i) out[i] = uint8_t(i), acc[i] = uint8_t(255 - i);
  const uint64_t d = h.alloc(256);
  h.run(0, {store(Buffer::OUT, 3, d, 3, 5, 10, 16), store(Buffer::ACC, 8, d + 128, 2, 8, 12, 32), end_insn()});
  ASSERT_EQ(h.err(0), 0u);
  const auto got = h.get(d, 256);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(got[r * 10 + j], uint8_t(3 + r * 16 + j));
  EXPECT_EQ(got[5], 0);  // gap between strided rows untouched (zero-filled at alloc)
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(got[128 + r * 12 + j], uint8_t(255 - (8 + r * 32 + j)));
  EXPECT_EQ(h.counter(0, spec::Counter::BYTES_WR), 15u + 16u);
  EXPECT_EQ(h.counter(0, spec::Counter::INSN_STORE), 2u);
}

// A 3x3, pad-1, stride-1 convolution over an NHWC image: one LOAD per
// (output row, ky, kx) gathers im2col rows with horizontal padding from
// pad_lo/pad_hi and fully padded rows above and below the image; one GEMM
// computes all output pixels.
TEST(RefLoad, Im2colConvolutionMatchesDirectConvolution) {
  const uint32_t seed = test_seed(77);
  LOOM_SEED_TRACE(seed);
  std::mt19937 rng(seed);
  constexpr int H = 4, W = 5, C = 3, OC = 4, K = 9 * C;
  const int a_zp = rand_in(rng, -10, 10), b_zp = rand_in(rng, -10, 10);
  const auto img = random_bytes(rng, H * W * C), wgt = random_bytes(rng, K * OC);
  Harness h;
  const uint64_t dimg = h.put(img), dwgt = h.put(wgt), dout = h.alloc(H * W * OC * 4);
  std::vector<spec::Insn> prog;
  for (int oy = 0; oy < H; ++oy)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const int iy = oy + ky - 1;
        const uint64_t sp = uint64_t(oy * W) * K + (ky * 3 + kx) * C;
        if (iy < 0 || iy >= H) {
          prog.push_back(load(Buffer::IN, sp, 0, 0, C, C, K, W, 0, a_zp));  // a whole row of padding
          continue;
        }
        // Output pixel ox reads input column ox + kx - 1.
        const int first = std::max(0, kx - 1), last = std::min(W - 1, W - 1 + kx - 1);
        const uint64_t src = dimg + uint64_t((iy * W + first) * C);
        prog.push_back(load(Buffer::IN, sp, src, last - first + 1, C, C, K, kx == 0 ? 1 : 0, kx == 2 ? 1 : 0, a_zp));
      }
  spec::GemmInsn g;
  g.m = H * W;
  g.n = OC;
  g.k_len = K;
  g.lda = K;
  g.ldb = OC;
  g.ldc = 4 * OC;
  g.a_zp = a_zp;
  g.b_zp = b_zp;
  prog.push_back(load(Buffer::WGT, 0, dwgt, 1, K * OC));
  prog.push_back(g.encode());
  prog.push_back(store(Buffer::ACC, 0, dout, 1, H * W * OC * 4));
  prog.push_back(end_insn());
  h.run(0, prog);
  ASSERT_EQ(h.err(0), 0u);
  const auto got = from_le32(h.get(dout, H * W * OC * 4));
  for (int oy = 0; oy < H; ++oy)
    for (int ox = 0; ox < W; ++ox)
      for (int oc = 0; oc < OC; ++oc) {
        int64_t sum = 0;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx)
            for (int c = 0; c < C; ++c) {
              const int iy = oy + ky - 1, ix = ox + kx - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // padding equals a_zp: contributes 0
              const int x = int8_t(img[(iy * W + ix) * C + c]) - a_zp;
              const int w = int8_t(wgt[((ky * 3 + kx) * C + c) * OC + oc]) - b_zp;
              sum += int64_t(x) * w;
            }
        ASSERT_EQ(got[(oy * W + ox) * OC + oc], wrap32(sum)) << "oy=" << oy << " ox=" << ox << " oc=" << oc;
      }
}

TEST(RefLoad, ParamTableAndOutAreLoadTargets) {
  Harness h;
  const uint64_t d = h.put({1, 2, 3, 4, 5, 6, 7, 8});
  h.run(0, {load(Buffer::PARAM, 4, d, 1, 8), load(Buffer::OUT, 1, d, 2, 3, 4, 3), end_insn()});
  ASSERT_EQ(h.err(0), 0u);
  EXPECT_EQ(h.core(0).buf(Buffer::PARAM)[4], 1);
  EXPECT_EQ(h.core(0).buf(Buffer::PARAM)[11], 8);
  const auto& out = h.core(0).buf(Buffer::OUT);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 1, out.begin() + 7), (std::vector<uint8_t>{1, 2, 3, 5, 6, 7}));
}

}  // namespace
}  // namespace loom::ref::test
