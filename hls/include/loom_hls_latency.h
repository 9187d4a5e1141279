// Latency model of the loom HLS kernels, in kernel clock cycles, as a
// function of the call's shape: the formulas of hls/README.md, derived from
// the kernels' loop structure (every PIPELINE II=1 loop at II=1, one element
// a cycle per AXI master), not measured with Vitis. The testbenches check the
// shape-dependent part against the loop trip counts of each C simulation.
// kDataflowOverhead (pipeline fill/drain plus the first AXI round trip) is
// an assumption until csynth/cosim reports give it.
#pragma once

#include <stdint.h>

namespace loom_hls {

constexpr uint64_t kDataflowOverhead = 100;

namespace latency_detail {
constexpr uint64_t lanes = 16;  // kGemmTileN == kConvTileM
constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
}  // namespace latency_detail

/// loom_hls_gemm: N (shift check) + per column tile: 3 x 16 (parameter
/// reads) + 16 K (weight fill) + M (K + 16) (MAC loop and post-op per row).
constexpr uint64_t gemm_cycles(uint64_t m, uint64_t n, uint64_t k) {
  using namespace latency_detail;
  return n + ceil_div(n, lanes) * (3 * lanes + lanes * k + m * (k + lanes)) + kDataflowOverhead;
}

/// loom_hls_conv: as gemm with R = KH KW C/groups taps per output pixel and
/// P = batch OH OW pixels, per group and tile of 16 output channels.
constexpr uint64_t conv_cycles(uint64_t batch, uint64_t oh, uint64_t ow, uint64_t c, uint64_t m, uint64_t kh,
                               uint64_t kw, uint64_t groups) {
  using namespace latency_detail;
  const uint64_t r = kh * kw * (c / groups), p = batch * oh * ow;
  const uint64_t tiles = groups * ceil_div(m / groups, lanes);
  return m + tiles * (3 * lanes + lanes * r + p * (r + lanes)) + kDataflowOverhead;
}

/// loom_hls_pool: C (reset) + per pixel: KH KW max(C, 8) (tap loop) + C (outputs).
constexpr uint64_t pool_cycles(uint64_t batch, uint64_t oh, uint64_t ow, uint64_t c, uint64_t kh, uint64_t kw) {
  const uint64_t pass = c > 8 ? c : 8;
  return c + batch * oh * ow * (kh * kw * pass + c) + kDataflowOverhead;
}

/// loom_hls_eltwise: one element a cycle.
constexpr uint64_t eltwise_cycles(uint64_t count) { return count + kDataflowOverhead; }

}  // namespace loom_hls
