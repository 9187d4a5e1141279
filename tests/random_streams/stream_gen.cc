// Builds legal random programs: a per-core shadow records which scratchpad
// bytes hold defined data (and the exact PARAM bytes, whose shift words must
// stay in 1..62), so that every compute and store reads only what an earlier
// instruction wrote, and dependency tokens order every cross-unit hazard.
#include "stream_gen.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace loom::random_streams {
namespace {

using spec::Buffer;
using spec::Insn;

constexpr uint64_t span_2d(uint64_t rows, uint64_t stride, uint64_t cols) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * stride + cols;
}
constexpr uint64_t align4(uint64_t v) { return v & ~uint64_t(3); }

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed * 0x9E3779B97F4A7C15ull + 0x5EED) {}
  int64_t range(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<int64_t>(lo, hi)(g_);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : uint64_t(range(0, int64_t(n) - 1)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(g_) < p; }
  int64_t i8() { return range(-128, 127); }
  int64_t i32() { return range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()); }
  /// A size in 1..hi, sometimes 0.
  uint64_t dim(uint64_t hi, double zero = 0.06) { return chance(zero) ? 0 : uint64_t(range(1, int64_t(hi))); }
  /// A clamp pair with lo <= hi: full range, ReLU-like or random.
  std::pair<int64_t, int64_t> clip(int64_t zp) {
    const int64_t r = range(0, 9);
    if (r < 3) return {-128, 127};
    if (r < 5) return {zp, 127};
    const int64_t lo = i8();
    return {lo, range(lo, 127)};
  }
  /// A requantization pair: realistic (mult in [2^30, 2^31), shift 20..45)
  /// or anything legal.
  std::pair<int64_t, int64_t> mult_shift() {
    if (chance(0.6)) return {range(int64_t(1) << 30, (int64_t(1) << 31) - 1), range(20, 45)};
    return {i32(), range(1, 62)};
  }

 private:
  std::mt19937_64 g_;
};

/// Device-memory layout of one program (offsets from the plan base).
struct Layout {
  uint64_t x_bytes = 0;       // random input bytes at offset 0
  uint64_t table_off = 0;     // PARAM triples (bias, mult, shift)
  uint64_t table_entries = 0;
  uint64_t readable_end = 0;  // [0, readable_end) is read-only for every core
  std::vector<uint64_t> out_off;
  uint64_t out_bytes = 0;
  uint64_t total = 0;
};

/// What the generator knows about one core's scratchpads.
struct Shadow {
  std::array<std::vector<uint8_t>, spec::kNumBuffers> def;  // 1 where defined
  std::vector<uint8_t> param;                               // exact PARAM bytes
  std::vector<std::pair<uint64_t, uint64_t>> tables;        // PARAM tables loaded (addr, channels)
  std::vector<std::array<uint64_t, 3>> tiles;               // dense ACC tiles written (addr, m, n)

  bool defined(Buffer b, uint64_t addr, uint64_t rows, uint64_t cols, uint64_t stride) const {
    const auto& d = def[size_t(b)];
    for (uint64_t i = 0; i < rows; ++i)
      for (uint64_t c = 0; c < cols; ++c)
        if (!d[addr + i * stride + c]) return false;
    return true;
  }
  void mark(Buffer b, uint64_t addr, uint64_t rows, uint64_t cols, uint64_t stride) {
    auto& d = def[size_t(b)];
    for (uint64_t i = 0; i < rows; ++i) std::fill_n(d.begin() + int64_t(addr + i * stride), cols, 1);
  }
  int32_t param_word(uint64_t a) const {
    return int32_t(uint32_t(param[a]) | uint32_t(param[a + 1]) << 8 | uint32_t(param[a + 2]) << 16 |
                   uint32_t(param[a + 3]) << 24);
  }
  /// Every channel's bias and mult defined and shift in 1..62.
  bool param_ok(uint64_t addr, uint64_t n) const {
    if (addr + 12 * n > param.size()) return false;
    if (!defined(Buffer::PARAM, addr, 1, 12 * n, 0)) return false;
    for (uint64_t j = 0; j < n; ++j) {
      const int32_t s = param_word(addr + 12 * j + 8);
      if (s < 1 || s > 62) return false;
    }
    return true;
  }
};

struct Job {
  std::vector<Insn> loads, computes, stores;
  bool loads_out = false;
  std::vector<std::pair<uint64_t, uint64_t>> param_ranges;  // PARAM bytes POSTOPs of this job read
  // The last region a compute wrote, as a store candidate.
  bool have_result = false;
  Buffer result_buf = Buffer::OUT;
  uint64_t result_addr = 0, result_rows = 0, result_cols = 0, result_stride = 0;
};

void set_flags(Insn& in, bool pop_prev, bool pop_next, bool push_prev, bool push_next) {
  spec::set_bits(in, 6, 1, pop_prev);
  spec::set_bits(in, 7, 1, pop_next);
  spec::set_bits(in, 8, 1, push_prev);
  spec::set_bits(in, 9, 1, push_next);
}
void or_flag(Insn& in, unsigned bit) { spec::set_bits(in, bit, 1, 1); }
constexpr unsigned kPopPrev = 6, kPopNext = 7, kPushPrev = 8, kPushNext = 9;

class Generator {
 public:
  Generator(uint64_t seed, const spec::HwConfig& cfg, const GenOptions& opt)
      : seed_(seed), cfg_(cfg), opt_(opt), rng_(seed) {}

  Program run();

 private:
  uint64_t size(Buffer b) const {
    switch (b) {
      case Buffer::IN:
        return uint64_t(cfg_.in_kib) * 1024;
      case Buffer::WGT:
        return uint64_t(cfg_.wgt_kib) * 1024;
      case Buffer::ACC:
        return uint64_t(cfg_.acc_kib) * 1024;
      case Buffer::OUT:
        return uint64_t(cfg_.out_kib) * 1024;
      case Buffer::PARAM:
        return uint64_t(cfg_.param_kib) * 1024;
    }
    return 0;
  }
  /// A start address for `span` bytes in a buffer, sometimes flush with its end.
  uint64_t place(Buffer b, uint64_t span, bool word) {
    const uint64_t sz = size(b);
    uint64_t a = rng_.chance(0.1) ? sz - span : rng_.below(sz - span + 1);
    return word ? align4(a) : a;
  }
  /// Device-memory source for `rows` rows of `cols` bytes `stride` apart in
  /// the read-only area; may shrink stride to fit.
  uint64_t dram_src(uint64_t rows, uint64_t cols, uint64_t* stride) {
    if (span_2d(rows, *stride, cols) > lay_.readable_end) *stride = cols;
    if (span_2d(rows, *stride, cols) > lay_.readable_end) *stride = 0;
    const uint64_t span = span_2d(rows, *stride, cols);
    if (rng_.chance(0.1)) return lay_.readable_end - span;
    return rng_.below(lay_.readable_end - span + 1);
  }
  uint64_t dram_stride(uint64_t cols) {
    const int64_t r = rng_.range(0, 19);
    if (r < 13) return cols + uint64_t(rng_.range(0, 40));
    if (r < 16) return rng_.below(cols + 1);
    return uint64_t(rng_.range(0, 700));
  }

  Insn load(Shadow& s, Buffer b, uint64_t sp, uint64_t dram, uint64_t rows, uint64_t cols, uint64_t ds,
            uint64_t ss, uint64_t pl, uint64_t ph, int64_t pv);
  void noise_load(Job& job, Shadow& s);
  void feed_2d(Job& job, Shadow& s, Buffer b, uint64_t addr, uint64_t rows, uint64_t cols, uint64_t stride);
  void feed_linear(Job& job, Shadow& s, Buffer b, uint64_t addr, uint64_t len);
  void feed_param(Job& job, Shadow& s, uint64_t addr, uint64_t n);
  /// A PARAM address whose n triples are loaded and legal, with `extra` free
  /// bytes after them that no other POSTOP of the job reads.
  uint64_t param_table(Job& job, Shadow& s, uint64_t n, uint64_t extra = 0);
  /// POSTOP rescale: a legal (a_mult, a_shift) pair at PARAM `addr`.
  void add_pair(Job& job, Shadow& s, uint64_t addr);

  /// One GEMM or an accumulate chain on one tile; returns (acc_addr, m, n).
  std::array<uint64_t, 3> gemm_group(Job& job, Shadow& s, bool dense);
  void postop(Job& job, Shadow& s);
  void pool(Job& job, Shadow& s);
  void eltwise(Job& job, Shadow& s);
  void rownorm(Job& job, Shadow& s);
  void dwconv(Job& job, Shadow& s);
  void stores(Job& job, Shadow& s, unsigned core);
  Job make_job(Shadow& s, unsigned core);

  Insn control_noise(std::vector<uint64_t>& own_signals);

  uint64_t seed_;
  const spec::HwConfig& cfg_;
  GenOptions opt_;
  Rng rng_;
  Layout lay_;
  std::vector<uint8_t> image_;
};

Insn Generator::load(Shadow& s, Buffer b, uint64_t sp, uint64_t dram, uint64_t rows, uint64_t cols, uint64_t ds,
                     uint64_t ss, uint64_t pl, uint64_t ph, int64_t pv) {
  spec::LoadInsn l;
  l.buf = uint64_t(b);
  l.sp_addr = sp;
  l.dram_addr = dram;
  l.rows = rows;
  l.cols = cols;
  l.dram_stride = ds;
  l.sp_stride = ss;
  l.pad_lo = pl;
  l.pad_hi = ph;
  l.pad_value = pv;
  const uint64_t total = pl + rows + ph;
  // Rows land in order, so overlapping rows hold the later row.
  for (uint64_t i = 0; i < total && cols > 0; ++i) {
    const uint64_t at = sp + i * ss;
    s.mark(b, at, 1, cols, 0);
    if (b != Buffer::PARAM) continue;
    for (uint64_t c = 0; c < cols; ++c)
      s.param[at + c] = (i < pl || i >= pl + rows) ? uint8_t(pv) : image_[dram + (i - pl) * ds + c];
  }
  return l.encode();
}

void Generator::noise_load(Job& job, Shadow& s) {
  static constexpr Buffer kBufs[] = {Buffer::IN, Buffer::IN, Buffer::IN, Buffer::WGT, Buffer::WGT,
                                     Buffer::OUT, Buffer::OUT, Buffer::PARAM};
  const Buffer b = kBufs[rng_.below(std::size(kBufs))];
  const bool word = b == Buffer::PARAM;
  for (int attempt = 0; attempt < 20; ++attempt) {
    uint64_t cols = rng_.chance(0.1) ? uint64_t(rng_.range(65, 256)) : uint64_t(rng_.range(1, 64));
    uint64_t rows = rng_.chance(0.1) ? uint64_t(rng_.range(13, 32)) : uint64_t(rng_.range(1, 12));
    if (rng_.chance(0.08)) (rng_.chance(0.5) ? rows : cols) = 0;
    uint64_t pl = rng_.chance(0.3) ? rng_.below(4) : 0;
    uint64_t ph = rng_.chance(0.3) ? rng_.below(4) : 0;
    uint64_t ss;
    const int64_t r = rng_.range(0, 99);
    if (opt_.overlapping_load_rows && r < 8 && cols > 1)
      ss = rng_.below(cols);
    else if (r < 25)
      ss = cols;
    else
      ss = cols + uint64_t(rng_.range(0, 24));
    if (word) ss = (ss + 3) & ~uint64_t(3);
    const uint64_t sp_span = span_2d(pl + rows + ph, ss, cols);
    if (sp_span > size(b)) continue;
    uint64_t ds = dram_stride(cols);
    const uint64_t dram = dram_src(rows, cols, &ds);
    const uint64_t sp = place(b, sp_span, word);
    job.loads.push_back(load(s, b, sp, dram, rows, cols, ds, ss, pl, ph, rng_.i8()));
    if (b == Buffer::OUT) job.loads_out = true;
    return;
  }
}

void Generator::feed_linear(Job& job, Shadow& s, Buffer b, uint64_t addr, uint64_t len) {
  if (len == 0) return;
  const uint64_t w = uint64_t(rng_.range(1, int64_t(std::min<uint64_t>(len, 64))));
  const uint64_t n = len / w, tail = len % w;
  const uint64_t pl = rng_.chance(0.25) ? rng_.below(std::min<uint64_t>(n, 3) + 1) : 0;
  const uint64_t ph = rng_.chance(0.25) ? rng_.below(std::min<uint64_t>(n - pl, 3) + 1) : 0;
  const uint64_t rows = n - pl - ph;
  uint64_t ds = dram_stride(w);
  const uint64_t dram = dram_src(rows, w, &ds);
  job.loads.push_back(load(s, b, addr, dram, rows, w, ds, w, pl, ph, rng_.i8()));
  if (tail) {
    uint64_t ds2 = 0;
    const uint64_t d2 = dram_src(1, tail, &ds2);
    job.loads.push_back(load(s, b, addr + n * w, d2, 1, tail, ds2, tail, 0, 0, 0));
  }
}

void Generator::feed_2d(Job& job, Shadow& s, Buffer b, uint64_t addr, uint64_t rows, uint64_t cols,
                        uint64_t stride) {
  if (rows == 0 || cols == 0) return;
  if (s.defined(b, addr, rows, cols, stride) && !rng_.chance(0.25)) return;
  if (stride < cols && rows > 1) return feed_linear(job, s, b, addr, span_2d(rows, stride, cols));
  if (rng_.chance(0.15)) return feed_linear(job, s, b, addr, span_2d(rows, stride, cols));
  const uint64_t pl = rng_.chance(0.3) ? rng_.below(std::min<uint64_t>(rows, 3) + 1) : 0;
  const uint64_t ph = rng_.chance(0.3) ? rng_.below(std::min<uint64_t>(rows - pl, 3) + 1) : 0;
  const uint64_t real = rows - pl - ph;
  uint64_t ds = dram_stride(cols);
  const uint64_t dram = dram_src(real, cols, &ds);
  job.loads.push_back(load(s, b, addr, dram, real, cols, ds, stride, pl, ph, rng_.i8()));
}

void Generator::feed_param(Job& job, Shadow& s, uint64_t addr, uint64_t n) {
  if (n == 0) return;
  const uint64_t t = lay_.table_entries;
  uint64_t rows, cols, ds, t0;
  const int64_t v = rng_.range(0, 2);
  if (v == 0) {  // one row per channel, channels picked `step` apart
    const uint64_t step = uint64_t(rng_.range(1, int64_t(std::max<uint64_t>(1, (t - 1) / std::max<uint64_t>(n - 1, 1)))));
    rows = n, cols = 12, ds = 12 * step;
    t0 = rng_.below(t - (n - 1) * step);
  } else if (v == 1 || n % 2 != 0) {  // one row holding every channel
    rows = 1, cols = 12 * n, ds = uint64_t(rng_.range(0, 64));
    t0 = rng_.below(t - n + 1);
  } else {  // two channels a row
    rows = n / 2, cols = 24, ds = 12 * uint64_t(rng_.range(2, 4));
    if (span_2d(rows, ds, cols) > 12 * t) ds = 24;
    t0 = rng_.below((12 * t - span_2d(rows, ds, cols)) / 12 + 1);
  }
  // Padding rows only where they overwrite no table another POSTOP of this job reads.
  uint64_t pl = rng_.chance(0.25) ? rng_.below(3) : 0, ph = rng_.chance(0.25) ? rng_.below(3) : 0;
  const uint64_t ss = cols;
  if (pl * ss > addr) pl = 0;
  if (addr + (rows + ph) * ss > size(Buffer::PARAM)) ph = 0;
  const uint64_t lo = addr - pl * ss, hi = addr + (rows + ph) * ss;
  for (const auto& [a, len] : job.param_ranges)
    if (lo < a + len && a < hi && (pl || ph)) pl = ph = 0;
  job.loads.push_back(load(s, Buffer::PARAM, addr - pl * ss, lay_.table_off + 12 * t0, rows, cols, ds, ss, pl, ph,
                           rng_.i8()));
}

uint64_t Generator::param_table(Job& job, Shadow& s, uint64_t n, uint64_t extra) {
  const uint64_t span = 12 * n + extra;
  auto overlaps = [&](uint64_t a) {
    for (const auto& [b, len] : job.param_ranges)
      if (a < b + len && b < a + span) return true;
    return false;
  };
  // Reuse a table loaded earlier when it is intact.
  if (rng_.chance(0.4)) {
    for (const auto& [a, ch] : s.tables)
      if (ch >= n && a + span <= size(Buffer::PARAM) && s.param_ok(a, n) && !overlaps(a)) return a;
  }
  uint64_t addr = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    addr = place(Buffer::PARAM, span, true);
    if (!overlaps(addr)) break;
  }
  feed_param(job, s, addr, n);
  if (!s.param_ok(addr, n)) {  // padding of this load clobbered part of it: reload plainly
    uint64_t ds = 12;
    job.loads.push_back(load(s, Buffer::PARAM, addr, lay_.table_off, n, 12, ds, 12, 0, 0, 0));
  }
  s.tables.push_back({addr, n});
  return addr;
}

void Generator::add_pair(Job& job, Shadow& s, uint64_t addr) {
  // Keep a legal pair already there half the time; otherwise load the (mult,
  // shift) words of a table entry, whose shift is legal.
  const bool legal = s.defined(Buffer::PARAM, addr, 1, 8, 0) && s.param_word(addr + 4) >= 1 &&
                     s.param_word(addr + 4) <= 62;
  if (legal && rng_.chance(0.5)) return;
  uint64_t ds = 0;
  const uint64_t t = rng_.below(lay_.table_entries);
  job.loads.push_back(load(s, Buffer::PARAM, addr, lay_.table_off + 12 * t + 4, 1, 8, ds, 8, 0, 0, 0));
}

std::array<uint64_t, 3> Generator::gemm_group(Job& job, Shadow& s, bool dense) {
  const uint64_t R = cfg_.array_rows, C = cfg_.array_cols;
  uint64_t m = 0, n = 0, ldc = 0, acc = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    m = rng_.dim(3 * R + 2);
    n = rng_.dim(3 * C + 2);
    ldc = dense ? 4 * n : 4 * (n + uint64_t(rng_.range(0, 3)));
    if (span_2d(m, ldc, 4 * n) <= size(Buffer::ACC)) break;
    m = n = 0;
  }
  acc = place(Buffer::ACC, span_2d(m, ldc, 4 * n), true);
  bool accumulate = s.defined(Buffer::ACC, acc, m, 4 * n, ldc) && rng_.chance(0.5);
  const int chain = rng_.chance(0.3) ? int(rng_.range(1, 2)) : 0;
  for (int g = 0; g <= chain; ++g) {
    spec::GemmInsn gi;
    const uint64_t k = rng_.dim(24);
    gi.m = m, gi.n = n, gi.k_len = k, gi.ldc = ldc, gi.acc_addr = acc, gi.accumulate = accumulate;
    gi.a_zp = rng_.chance(0.3) ? 0 : rng_.i8();
    gi.b_zp = rng_.chance(0.5) ? 0 : rng_.i8();
    gi.lda = rng_.chance(0.1) ? rng_.below(k + 1) : k + uint64_t(rng_.range(0, 8));
    // B as it lies (k rows of n bytes), or transposed (n rows of k bytes).
    gi.b_trans = rng_.chance(0.3);
    const uint64_t b_rows = gi.b_trans ? n : k, b_cols = gi.b_trans ? k : n;
    gi.ldb = rng_.chance(0.1) ? rng_.below(b_cols + 1) : b_cols + uint64_t(rng_.range(0, 8));
    const uint64_t span_a = n == 0 ? 0 : span_2d(m, gi.lda, k);
    const uint64_t span_b = m == 0 ? 0 : span_2d(b_rows, gi.ldb, b_cols);
    if (span_a > size(Buffer::IN)) gi.lda = k;
    if (span_b > size(Buffer::WGT)) gi.ldb = b_cols;
    gi.in_addr = place(Buffer::IN, n == 0 ? 0 : span_2d(m, gi.lda, k), false);
    gi.wgt_addr = place(Buffer::WGT, m == 0 ? 0 : span_2d(b_rows, gi.ldb, b_cols), false);
    if (n > 0) feed_2d(job, s, Buffer::IN, gi.in_addr, m, k, gi.lda);
    if (m > 0) feed_2d(job, s, Buffer::WGT, gi.wgt_addr, b_rows, b_cols, gi.ldb);
    job.computes.push_back(gi.encode());
    s.mark(Buffer::ACC, acc, m, 4 * n, ldc);
    accumulate = true;
  }
  if (m > 0 && n > 0) {
    job.have_result = true;
    job.result_buf = Buffer::ACC;
    job.result_addr = acc, job.result_rows = m, job.result_cols = 4 * n, job.result_stride = ldc;
    if (ldc == 4 * n) s.tiles.push_back({acc, m, n});
  }
  return {acc, m, n};
}

void Generator::postop(Job& job, Shadow& s) {
  std::array<uint64_t, 3> tile{};
  bool found = false;
  if (!s.tiles.empty() && rng_.chance(0.4)) {
    tile = s.tiles[rng_.below(s.tiles.size())];
    found = s.defined(Buffer::ACC, tile[0], 1, 4 * tile[1] * tile[2], 0);
  }
  if (!found) tile = gemm_group(job, s, true);
  const uint64_t elems = tile[1] * tile[2];
  // Any m' x n' with m'n' <= mn reads inside the dense tile.
  uint64_t n = tile[2];
  if (rng_.chance(0.3)) n = rng_.below(std::min<uint64_t>(elems, 3 * cfg_.array_cols + 2) + 1);
  n = std::min(n, lay_.table_entries);
  uint64_t m = n == 0 ? rng_.below(4) : elems / n;
  if (m > 0 && rng_.chance(0.3)) m = rng_.range(0, int64_t(m));
  if (m * n > size(Buffer::OUT)) m = 0;

  spec::PostopInsn p;
  p.m = m, p.n = n, p.acc_addr = tile[0];
  p.residual = rng_.chance(0.4);
  // rescale (a requantizing add behind the post-op) needs the residual; its
  // (a_mult, a_shift) pair follows the n triples in PARAM.
  p.rescale = p.residual && rng_.chance(0.5);
  const uint64_t extra = p.rescale ? 8 : 0;
  p.param_addr =
      (m * n == 0 && rng_.chance(0.5)) ? align4(rng_.below(size(Buffer::PARAM))) : param_table(job, s, n, extra);
  if (m * n > 0) {
    job.param_ranges.push_back({p.param_addr, 12 * n + extra});
    if (p.rescale) add_pair(job, s, p.param_addr + 12 * n);
  }
  p.out_addr = place(Buffer::OUT, m * n, false);
  p.out_zp = rng_.i8();
  const auto [lo, hi] = rng_.clip(p.out_zp);
  p.clip_lo = lo, p.clip_hi = hi;
  // Ties to even on half the post-ops, from a value already drawn, so the
  // streams of every seed stay as they were before the field.
  p.even = (p.out_zp & 1) != 0;
  if (p.rescale) {
    p.a_zp = rng_.i8(), p.add_zp = rng_.i8();
    const auto [alo, ahi] = rng_.clip(p.add_zp);
    p.add_lo = alo, p.add_hi = ahi;
  } else {  // unused fields hold anything, even an empty clamp
    p.a_zp = rng_.i8(), p.add_zp = rng_.i8(), p.add_lo = rng_.i8(), p.add_hi = rng_.i8();
  }
  if (p.residual) {
    p.res_addr = place(Buffer::IN, m * n, false);
    feed_2d(job, s, Buffer::IN, p.res_addr, m, n, n);
    const auto [rm, rs] = rng_.mult_shift();
    p.res_mult = rm, p.res_shift = uint64_t(rs);
    p.res_zp = rng_.i8();
  } else {  // unused fields hold anything
    p.res_addr = rng_.below(size(Buffer::IN));
    p.res_mult = rng_.i32();
    p.res_shift = rng_.below(64);
    p.res_zp = rng_.i8();
  }
  job.computes.push_back(p.encode());
  s.mark(Buffer::OUT, p.out_addr, 1, m * n, 0);
  if (m * n > 0) {
    job.have_result = true;
    job.result_buf = Buffer::OUT;
    job.result_addr = p.out_addr, job.result_rows = m, job.result_cols = n, job.result_stride = n;
  }
}

void Generator::pool(Job& job, Shadow& s) {
  spec::PoolInsn p;
  p.p = rng_.dim(6, 0.05);
  p.win = rng_.dim(9, 0.05);
  p.c = rng_.dim(2 * cfg_.array_cols + 4, 0.05);
  const uint64_t len = p.p * p.win * p.c;
  p.in_addr = place(Buffer::IN, len, false);
  p.out_addr = place(Buffer::OUT, p.p * p.c, false);
  if (len > 0) feed_2d(job, s, Buffer::IN, p.in_addr, p.p * p.win, p.c, p.c);
  p.avg = rng_.chance(0.5);
  if (p.avg && rng_.chance(0.5) && p.win > 0) {
    p.shift = uint64_t(rng_.range(8, 30));
    p.mult = int64_t((uint64_t(1) << p.shift) / p.win) * rng_.range(1, 3) / 2;
  } else {
    p.shift = p.avg ? uint64_t(rng_.range(1, 62)) : rng_.below(64);
    p.mult = rng_.i32();
  }
  p.in_zp = rng_.i8();
  p.out_zp = rng_.i8();
  const auto [lo, hi] = rng_.clip(p.out_zp);
  p.clip_lo = lo, p.clip_hi = hi;
  job.computes.push_back(p.encode());
  if (len > 0) {
    s.mark(Buffer::OUT, p.out_addr, 1, p.p * p.c, 0);
    job.have_result = true;
    job.result_buf = Buffer::OUT;
    job.result_addr = p.out_addr, job.result_rows = p.p, job.result_cols = p.c, job.result_stride = p.c;
  }
}

void Generator::eltwise(Job& job, Shadow& s) {
  spec::EltwiseInsn e;
  e.count = rng_.chance(0.05) ? 0 : rng_.chance(0.1) ? uint64_t(rng_.range(161, 600)) : uint64_t(rng_.range(1, 160));
  e.a_addr = place(Buffer::IN, e.count, false);
  // A lookup of A in the 256-byte table at b_addr (`mul` is then ignored).
  e.lut = rng_.chance(0.2);
  const uint64_t b_len = e.lut ? 256 : e.count;
  const int64_t alias = rng_.range(0, 9);
  if (alias == 0 && !e.lut)
    e.b_addr = e.a_addr;
  else if (alias == 1 && e.a_addr + b_len + 16 <= size(Buffer::IN))
    e.b_addr = e.a_addr + uint64_t(rng_.range(1, 16));
  else
    e.b_addr = place(Buffer::IN, b_len, false);
  e.out_addr = place(Buffer::OUT, e.count, false);
  feed_2d(job, s, Buffer::IN, e.a_addr, 1, e.count, 0);
  feed_2d(job, s, Buffer::IN, e.b_addr, 1, b_len, 0);
  auto [am, as] = rng_.mult_shift();
  auto [bm, bs] = rng_.mult_shift();
  if (rng_.chance(0.15)) am = 0;
  if (rng_.chance(0.15)) bm = 0;
  e.a_mult = am, e.a_shift = uint64_t(as), e.b_mult = bm, e.b_shift = uint64_t(bs);
  e.mul = rng_.chance(0.3);  // the product of A and B, requantized by (a_mult, a_shift)
  if (e.mul && as + 16 <= 62 && rng_.chance(0.7)) e.a_shift = uint64_t(as + 16);
  // An add rounds once, at a_shift: powers of two on one grid make exact ties
  // of the sum (b_shift stays random: checked, not used).
  if (!e.mul && rng_.chance(0.25)) {
    e.a_mult = int64_t(1) << rng_.range(0, 30), e.b_mult = int64_t(1) << rng_.range(0, 30);
    e.a_shift = uint64_t(rng_.range(1, 32));
  }
  e.a_zp = rng_.i8(), e.b_zp = rng_.i8(), e.out_zp = rng_.i8();
  const auto [lo, hi] = rng_.clip(e.out_zp);
  e.clip_lo = lo, e.clip_hi = hi;
  job.computes.push_back(e.encode());
  if (e.count > 0) {
    s.mark(Buffer::OUT, e.out_addr, 1, e.count, 0);
    job.have_result = true;
    job.result_buf = Buffer::OUT;
    job.result_addr = e.out_addr, job.result_rows = 1, job.result_cols = e.count, job.result_stride = 0;
  }
}

void Generator::rownorm(Job& job, Shadow& s) {
  spec::RownormInsn r;
  r.ln = rng_.chance(0.5);
  r.m = rng_.dim(4, 0.05);
  r.n = r.ln ? rng_.dim(lay_.table_entries, 0.05) : rng_.dim(rng_.chance(0.2) ? 200 : 40, 0.05);
  const uint64_t mn = r.m * r.n;
  r.in_addr = place(Buffer::IN, mn, false);
  r.out_addr = place(Buffer::OUT, mn, false);
  feed_2d(job, s, Buffer::IN, r.in_addr, r.m, r.n, r.n);
  if (r.ln) {
    // The (b, g, sh) triples are a table's (bias, mult, shift): every sh legal.
    r.param_addr = mn == 0 && rng_.chance(0.5) ? align4(rng_.below(size(Buffer::PARAM))) : param_table(job, s, r.n);
    if (mn > 0) job.param_ranges.push_back({r.param_addr, 12 * r.n});
  } else {
    // Any 512 bytes make a table; keep clear of the triples this job's POSTOPs read.
    uint64_t addr = 0;
    bool clear = false;
    for (int attempt = 0; attempt < 64 && !clear; ++attempt) {
      addr = place(Buffer::PARAM, 512, true);
      clear = true;
      for (const auto& [b, len] : job.param_ranges) clear = clear && !(addr < b + len && b < addr + 512);
    }
    if (!clear) r.m = 0;
    r.param_addr = addr;
    if (r.m * r.n > 0) {
      // One row (PARAM's sp_stride must stay a multiple of 4).
      if (!s.defined(Buffer::PARAM, addr, 1, 512, 0) || rng_.chance(0.25)) {
        uint64_t ds = 512;
        const uint64_t dram = dram_src(1, 512, &ds);
        job.loads.push_back(load(s, Buffer::PARAM, addr, dram, 1, 512, ds, 512, 0, 0, 0));
      }
      job.param_ranges.push_back({addr, 512});
    }
  }
  const auto [mult, shift] = rng_.mult_shift();
  r.mult = mult, r.shift = uint64_t(shift);
  if (!r.ln && rng_.chance(0.5)) r.mult = int64_t(rng_.range(1 << 29, (int64_t(1) << 31) - 1)), r.shift = 38;
  r.in_zp = rng_.i8(), r.out_zp = rng_.i8();
  r.eps = rng_.chance(0.3) ? 0 : uint64_t(rng_.range(0, 1 << 20));
  const auto [lo, hi] = rng_.clip(r.out_zp);
  r.clip_lo = lo, r.clip_hi = hi;
  job.computes.push_back(r.encode());
  if (r.m * r.n > 0) {
    s.mark(Buffer::OUT, r.out_addr, 1, r.m * r.n, 0);
    job.have_result = true;
    job.result_buf = Buffer::OUT;
    job.result_addr = r.out_addr, job.result_rows = r.m, job.result_cols = r.n, job.result_stride = r.n;
  }
}

void Generator::dwconv(Job& job, Shadow& s) {
  const uint64_t spw = std::max<uint64_t>(4 * cfg_.array_cols, cfg_.mem_width_bits / 8);
  spec::DwconvInsn d;
  uint64_t rows = 0, cols = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    // 3 x 3 most of the time; 1 x 1 and 2 x 2 leave the reader waiting for the writer.
    const int64_t k = rng_.range(0, 9);
    d.kh = k < 5 ? 3 : k < 7 ? 1 : uint64_t(rng_.range(1, 5));
    d.kw = k < 5 ? 3 : k < 7 ? 1 : uint64_t(rng_.range(1, 5));
    d.stride = rng_.chance(0.7) ? 1 : uint64_t(rng_.range(2, 3));
    d.oh = rng_.dim(3, 0.05), d.ow = rng_.dim(5, 0.05);
    // Partial chunks, whole ones and several a pixel.
    d.c = rng_.chance(0.3) ? spw * uint64_t(rng_.range(1, 2)) : rng_.dim(2 * spw + 5, 0.05);
    rows = d.oh == 0 ? 0 : (d.oh - 1) * d.stride + d.kh;
    cols = d.ow == 0 ? 0 : ((d.ow - 1) * d.stride + d.kw) * d.c;
    d.ldi = rng_.chance(0.2) ? cols + uint64_t(rng_.range(0, 16)) : cols;
    if (span_2d(rows, d.ldi, cols) <= size(Buffer::IN) && d.kh * d.kw * d.c <= size(Buffer::WGT) &&
        4 * d.oh * d.ow * d.c <= size(Buffer::ACC))
      break;
    d.oh = 0, rows = 0;
  }
  const uint64_t pixels = d.oh * d.ow, taps = d.kh * d.kw;
  const bool work = pixels * d.c > 0;
  d.in_addr = place(Buffer::IN, work ? span_2d(rows, d.ldi, cols) : 0, false);
  d.wgt_addr = place(Buffer::WGT, work ? taps * d.c : 0, false);
  d.acc_addr = place(Buffer::ACC, 4 * pixels * d.c, true);
  d.a_zp = rng_.chance(0.3) ? 0 : rng_.i8();
  d.b_zp = rng_.chance(0.5) ? 0 : rng_.i8();
  if (work) {
    feed_2d(job, s, Buffer::IN, d.in_addr, rows, cols, d.ldi);
    feed_2d(job, s, Buffer::WGT, d.wgt_addr, taps, d.c, d.c);
  }
  job.computes.push_back(d.encode());
  if (work) {
    // A dense pixels x c tile of int32, as a GEMM's: later POSTOPs may read it.
    s.mark(Buffer::ACC, d.acc_addr, 1, 4 * pixels * d.c, 0);
    s.tiles.push_back({d.acc_addr, pixels, d.c});
    job.have_result = true;
    job.result_buf = Buffer::ACC;
    job.result_addr = d.acc_addr, job.result_rows = pixels, job.result_cols = 4 * d.c, job.result_stride = 4 * d.c;
  }
}

void Generator::stores(Job& job, Shadow& s, unsigned core) {
  const int64_t count = rng_.chance(0.15) ? 0 : rng_.range(1, 3);
  for (int64_t k = 0; k < count; ++k) {
    spec::StoreInsn st;
    bool ok = false;
    if (job.have_result && rng_.chance(0.5)) {
      st.buf = uint64_t(job.result_buf);
      const uint64_t skip = rng_.below(job.result_rows);
      st.sp_addr = job.result_addr + skip * job.result_stride;
      st.rows = job.result_rows - skip;
      st.cols = job.result_cols;
      st.sp_stride = job.result_stride;
      if (st.rows > 1 && st.cols > 1 && rng_.chance(0.3)) st.cols = uint64_t(rng_.range(1, int64_t(st.cols)));
      ok = true;
    }
    for (int attempt = 0; !ok && attempt < 40; ++attempt) {
      const Buffer b = rng_.chance(0.6) ? Buffer::OUT : Buffer::ACC;
      const bool word = b == Buffer::ACC;
      st.buf = uint64_t(b);
      st.rows = uint64_t(rng_.range(1, 6));
      st.cols = uint64_t(rng_.range(1, 48));
      st.sp_stride = rng_.chance(0.25) ? rng_.below(st.cols) : st.cols + uint64_t(rng_.range(0, 16));
      if (word) st.sp_stride = align4(st.sp_stride + 3);
      const uint64_t span = span_2d(st.rows, st.sp_stride, st.cols);
      if (span > size(b)) continue;
      st.sp_addr = place(b, span, word);
      ok = s.defined(b, st.sp_addr, st.rows, st.cols, st.sp_stride);
    }
    if (!ok || rng_.chance(0.05)) {  // nothing found, or a zero-size store
      st.buf = uint64_t(rng_.chance(0.5) ? Buffer::OUT : Buffer::ACC);
      st.sp_addr = align4(rng_.below(size(Buffer(st.buf))));
      st.sp_stride = 4 * rng_.below(8);
      (rng_.chance(0.5) ? st.rows : st.cols) = 0;
    }
    // Rows never overlap in device memory; stores may overlap each other.
    st.dram_stride = st.cols + uint64_t(rng_.range(0, 24));
    if (span_2d(st.rows, st.dram_stride, st.cols) > lay_.out_bytes) st.dram_stride = st.cols;
    while (span_2d(st.rows, st.dram_stride, st.cols) > lay_.out_bytes) --st.rows;
    const uint64_t span = span_2d(st.rows, st.dram_stride, st.cols);
    st.dram_addr = lay_.out_off[core] + (rng_.chance(0.1) ? lay_.out_bytes - span : rng_.below(lay_.out_bytes - span + 1));
    job.stores.push_back(st.encode());
  }
}

Job Generator::make_job(Shadow& s, unsigned core) {
  Job job;
  const int64_t noise = rng_.range(0, 2);
  for (int64_t i = 0; i < noise; ++i) noise_load(job, s);
  const int64_t ops = rng_.range(1, 3);
  for (int64_t i = 0; i < ops; ++i) {
    const int64_t r = rng_.range(0, 11);
    if (r < 3)
      gemm_group(job, s, rng_.chance(0.5));
    else if (r < 6)
      postop(job, s);
    else if (r < 8)
      pool(job, s);
    else if (r < 10)
      eltwise(job, s);
    else if (r < 11)
      rownorm(job, s);
    else
      dwconv(job, s);
  }
  // Every job carries its tokens on at least one LOAD, possibly an empty one.
  if (job.loads.empty() || rng_.chance(0.05)) {
    const Buffer b = rng_.chance(0.5) ? Buffer::IN : Buffer::PARAM;
    const uint64_t pl = rng_.below(3);
    const uint64_t cols = pl ? 0 : uint64_t(rng_.range(0, 8));
    job.loads.push_back(load(s, b, align4(rng_.below(size(b) - 64)), rng_.below(lay_.readable_end), 0, cols,
                             rng_.below(64), 4, pl, 0, rng_.i8()));
  }
  stores(job, s, core);
  return job;
}

Insn Generator::control_noise(std::vector<uint64_t>& own_signals) {
  const int64_t r = rng_.range(0, 3);
  if (r == 0) return spec::FenceInsn{}.encode();
  if (r == 1) {
    Insn n = spec::NopInsn{}.encode();
    set_flags(n, rng_.chance(0.5), rng_.chance(0.5), rng_.chance(0.5), rng_.chance(0.5));
    return n;
  }
  spec::SemSignalInsn sig;
  sig.sem_id = rng_.below(cfg_.semaphores);
  if (r == 2) {
    ++own_signals[sig.sem_id];
    return sig.encode();
  }
  // A wait this core's own earlier signals already satisfy.
  spec::SemWaitInsn w;
  w.sem_id = sig.sem_id;
  w.count = rng_.below(own_signals[w.sem_id] + 1);
  return w.encode();
}

Program Generator::run() {
  Program prog;
  prog.seed = seed_;
  const unsigned ncores = rng_.chance(0.7) ? cfg_.cores : unsigned(rng_.range(1, cfg_.cores));

  // Layout and the initial device-memory image.
  lay_.x_bytes = uint64_t(rng_.range(1024, 4096));
  lay_.table_entries = 3 * cfg_.array_cols + 8;
  lay_.table_off = lay_.x_bytes + rng_.below(40);
  lay_.readable_end = lay_.table_off + 12 * lay_.table_entries;
  lay_.out_bytes = uint64_t(rng_.range(512, 2048));
  uint64_t at = lay_.readable_end;
  for (unsigned c = 0; c < ncores; ++c) {
    at += rng_.below(100);
    lay_.out_off.push_back(at);
    at += lay_.out_bytes;
  }
  lay_.total = at + rng_.below(40);
  image_.assign(lay_.total, 0);
  for (auto& b : image_) b = uint8_t(rng_.range(0, 255));
  for (uint64_t t = 0; t < lay_.table_entries; ++t) {
    const auto [mult, shift] = rng_.mult_shift();
    const int32_t words[3] = {int32_t(rng_.chance(0.5) ? rng_.range(-100000, 100000) : rng_.i32()), int32_t(mult),
                              int32_t(shift)};
    for (int w = 0; w < 3; ++w)
      for (int b = 0; b < 4; ++b) image_[lay_.table_off + 12 * t + 4 * w + b] = uint8_t(uint32_t(words[w]) >> (8 * b));
  }

  // Cross-core barriers: each core signals then waits for every core's signal.
  const unsigned nbar = ncores > 1 ? unsigned(rng_.range(0, opt_.max_barriers)) : 0;
  std::vector<uint64_t> bar_sem(nbar), bar_count(nbar);
  {
    std::vector<uint64_t> cum(cfg_.semaphores, 0);
    for (unsigned i = 0; i < nbar; ++i) {
      bar_sem[i] = rng_.below(cfg_.semaphores);
      cum[bar_sem[i]] += ncores;
      bar_count[i] = cum[bar_sem[i]];
    }
  }

  plan::Plan& p = prog.plan;
  p.config = std::string(cfg_.name);
  p.graph_name = "random_stream_" + std::to_string(seed_);
  p.compiler = "loom random_streams";
  p.memory_bytes = lay_.total;
  p.constants_offset = lay_.x_bytes;
  p.constants.assign(image_.begin() + int64_t(lay_.x_bytes), image_.end());
  p.semaphores_used = cfg_.semaphores;

  for (unsigned c = 0; c < ncores; ++c) {
    Shadow s;
    for (unsigned b = 0; b < spec::kNumBuffers; ++b) s.def[b].assign(size(Buffer(b)), 0);
    s.param.assign(size(Buffer::PARAM), 0);
    std::vector<uint64_t> own_signals(cfg_.semaphores, 0);
    const unsigned njobs = unsigned(rng_.range(opt_.min_jobs, opt_.max_jobs));
    std::vector<unsigned> slots(nbar);
    for (auto& sl : slots) sl = unsigned(rng_.range(0, njobs));
    std::sort(slots.begin(), slots.end());

    std::vector<Insn> out;
    unsigned next_bar = 0;
    bool cl = false, sc = false, prev_stores = false;  // pending compute->load / store->compute tokens
    auto barriers_at = [&](unsigned slot) {
      for (; next_bar < nbar && slots[next_bar] == slot; ++next_bar) {
        spec::SemSignalInsn sig;
        sig.sem_id = bar_sem[next_bar];
        ++own_signals[sig.sem_id];
        out.push_back(sig.encode());
        if (opt_.control_noise && rng_.chance(0.2)) out.push_back(spec::NopInsn{}.encode());
        spec::SemWaitInsn w;
        w.sem_id = bar_sem[next_bar];
        w.count = bar_count[next_bar];
        out.push_back(w.encode());
      }
    };
    auto maybe_nop = [&] {
      if (opt_.control_noise && rng_.chance(0.06)) {
        Insn n = spec::NopInsn{}.encode();
        set_flags(n, rng_.chance(0.5), rng_.chance(0.5), rng_.chance(0.5), rng_.chance(0.5));
        out.push_back(n);
      }
    };
    for (unsigned j = 0; j < njobs; ++j) {
      barriers_at(j);
      if (opt_.control_noise && rng_.chance(0.2)) out.push_back(control_noise(own_signals));
      Job job = make_job(s, c);
      const bool last = j + 1 == njobs;
      // A LOAD into OUT must not overtake the previous job's stores reading OUT.
      if (job.loads_out && prev_stores) out.push_back(spec::FenceInsn{}.encode());
      // load -> compute -> store, and back to the next job's compute and loads.
      if (cl) or_flag(job.loads.front(), kPopNext);
      or_flag(job.loads.back(), kPushNext);
      or_flag(job.computes.front(), kPopPrev);
      if (sc) or_flag(job.computes.front(), kPopNext);
      cl = !last;
      sc = !last && !job.stores.empty();
      if (cl) or_flag(job.computes.back(), kPushPrev);
      if (!job.stores.empty()) {
        or_flag(job.computes.back(), kPushNext);
        or_flag(job.stores.front(), kPopPrev);
      }
      if (sc) or_flag(job.stores.back(), kPushPrev);
      prev_stores = !job.stores.empty();
      for (auto* part : {&job.loads, &job.computes, &job.stores})
        for (const Insn& in : *part) {
          maybe_nop();
          out.push_back(in);
        }
    }
    barriers_at(njobs);
    if (opt_.control_noise && rng_.chance(0.2)) out.push_back(control_noise(own_signals));
    out.push_back(spec::EndInsn{}.encode());
    p.cores.push_back(std::move(out));
  }

  plan::TensorBinding x;
  x.name = "x";
  x.shape = {int64_t(lay_.x_bytes)};
  x.offset = 0;
  p.inputs.push_back(x);
  Tensor xt(DType::I8, x.shape);
  std::copy_n(image_.begin(), lay_.x_bytes, xt.data.begin());
  prog.inputs.emplace("x", std::move(xt));
  for (unsigned c = 0; c < ncores; ++c) {
    plan::TensorBinding o;
    o.name = "out" + std::to_string(c);
    o.shape = {int64_t(lay_.out_bytes)};
    o.offset = lay_.out_off[c];
    p.outputs.push_back(o);
  }
  plan::TensorBinding whole;
  whole.name = "image";
  whole.shape = {int64_t(lay_.total)};
  p.outputs.push_back(whole);
  return prog;
}

template <class T>
std::string fields(const Insn& in) {
  std::string s(spec::opcode_info(uint64_t(T::kOpcode))->name);
  for (const auto& f : T::kFields) {
    if (f.name == "opcode") continue;
    const uint64_t v = spec::get_bits(in, f.bit, f.width);
    if (v == 0 && f.bit >= 6 && f.bit <= 9) continue;
    char buf[96];
    if (f.is_signed)
      std::snprintf(buf, sizeof buf, " %.*s=%lld", int(f.name.size()), f.name.data(),
                    static_cast<long long>(spec::sign_extend(v, f.width)));
    else
      std::snprintf(buf, sizeof buf, " %.*s=%llu", int(f.name.size()), f.name.data(),
                    static_cast<unsigned long long>(v));
    s += buf;
  }
  return s;
}

template <class F>
auto visit_insn(const Insn& in, F&& f) {
  switch (spec::Opcode(spec::get_bits(in, 0, 6))) {
    case spec::Opcode::NOP:
      return f(spec::NopInsn::decode(in));
    case spec::Opcode::LOAD:
      return f(spec::LoadInsn::decode(in));
    case spec::Opcode::STORE:
      return f(spec::StoreInsn::decode(in));
    case spec::Opcode::GEMM:
      return f(spec::GemmInsn::decode(in));
    case spec::Opcode::POSTOP:
      return f(spec::PostopInsn::decode(in));
    case spec::Opcode::POOL:
      return f(spec::PoolInsn::decode(in));
    case spec::Opcode::ELTWISE:
      return f(spec::EltwiseInsn::decode(in));
    case spec::Opcode::ROWNORM:
      return f(spec::RownormInsn::decode(in));
    case spec::Opcode::DWCONV:
      return f(spec::DwconvInsn::decode(in));
    case spec::Opcode::SEM_SIGNAL:
      return f(spec::SemSignalInsn::decode(in));
    case spec::Opcode::SEM_WAIT:
      return f(spec::SemWaitInsn::decode(in));
    case spec::Opcode::FENCE:
      return f(spec::FenceInsn::decode(in));
    case spec::Opcode::END:
      break;
  }
  return f(spec::EndInsn::decode(in));
}

}  // namespace

Program generate(uint64_t seed, const spec::HwConfig& cfg, const GenOptions& opt) {
  return Generator(seed, cfg, opt).run();
}

std::string disassemble(const Insn& in) {
  if (!spec::opcode_info(spec::get_bits(in, 0, 6))) return "ILLEGAL opcode=" + std::to_string(spec::get_bits(in, 0, 6));
  return visit_insn(in, [&](const auto& d) { return fields<std::decay_t<decltype(d)>>(in); });
}

std::string disassemble(const plan::Plan& p) {
  std::string s;
  for (size_t c = 0; c < p.cores.size(); ++c) {
    s += "core " + std::to_string(c) + ":\n";
    for (size_t i = 0; i < p.cores[c].size(); ++i) s += "  " + std::to_string(i) + ": " + disassemble(p.cores[c][i]) + "\n";
  }
  return s;
}

std::string check_program(const Program& prog, const spec::HwConfig& cfg) {
  const plan::Plan& p = prog.plan;
  if (p.cores.empty() || p.cores.size() > cfg.cores) return "core count out of range";
  for (size_t c = 0; c < p.cores.size(); ++c) {
    const auto& st = p.cores[c];
    // Queues: load->compute, compute->load, compute->store, store->compute.
    int64_t q[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < st.size(); ++i) {
      const Insn& in = st[i];
      const std::string where = "core " + std::to_string(c) + " insn " + std::to_string(i) + " (" + disassemble(in) + "): ";
      const auto* info = spec::opcode_info(spec::get_bits(in, 0, 6));
      if (!info) return where + "illegal opcode";
      const std::string_view bad = visit_insn(in, [](const auto& d) { return d.invalid_field(); });
      if (!bad.empty()) return where + "field " + std::string(bad) + " does not fit";
      const bool f[4] = {spec::get_bits(in, 6, 1) != 0, spec::get_bits(in, 7, 1) != 0, spec::get_bits(in, 8, 1) != 0,
                         spec::get_bits(in, 9, 1) != 0};
      if ((info->op == spec::Opcode::END) != (i + 1 == st.size())) return where + "END must close the stream, once";
      if (info->op == spec::Opcode::NOP) continue;
      int route[4] = {-1, -1, -1, -1};  // pop_prev, pop_next, push_prev, push_next
      if (info->unit == spec::Unit::Load) route[1] = 1, route[3] = 0;
      if (info->unit == spec::Unit::Compute) route[0] = 0, route[1] = 3, route[2] = 1, route[3] = 2;
      if (info->unit == spec::Unit::Store) route[0] = 2, route[2] = 3;
      for (int k = 0; k < 4; ++k) {
        if (!f[k]) continue;
        if (route[k] < 0) return where + "token flag without a neighbour";
        if (k < 2 && q[route[k]]-- == 0) return where + "pop before any push";
      }
      for (int k = 2; k < 4; ++k)
        if (f[k]) ++q[route[k]];
      if (info->op == spec::Opcode::SEM_SIGNAL && spec::SemSignalInsn::decode(in).sem_id >= cfg.semaphores)
        return where + "semaphore id out of range";
      if (info->op == spec::Opcode::SEM_WAIT && spec::SemWaitInsn::decode(in).sem_id >= cfg.semaphores)
        return where + "semaphore id out of range";
      if (info->op == spec::Opcode::END && (q[0] || q[1] || q[2] || q[3])) return where + "tokens left at END";
    }
  }
  return {};
}

}  // namespace loom::random_streams
