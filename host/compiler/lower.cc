// Lowering of conv2d/gemm (implicit GEMM), pooling (gathered windows) and
// elementwise layers to LOAD / GEMM / POSTOP / POOL / ELTWISE / STORE.
#include "compiler/lower.h"

#include <algorithm>

#include "ir/op_quant.h"

namespace loom::compiler {
namespace {

/// Where NHWC images live and how output pixels map onto them: H x W input
/// and OH x OW output pixels an image, C channels a pixel, the pixels P
/// elements apart in memory (P > C inside a concat's buffer). Output pixel p
/// of a gather is pixel p % (OH * OW) of image img + p / (OH * OW), so the
/// pixels of a folded batch (MacGeom::images) may span images.
struct GatherGeom {
  int64_t H, W, C, OH, OW, sh, sw, pt, pl, P;
  /// The first pixel of the input row that kernel row `kh` of output row
  /// `oh` (counted from image `img`'s first) reads, or -1 where that row is
  /// padding: outside its own image.
  int64_t row_pixel(int64_t img, int64_t oh, int64_t kh) const {
    const int64_t ih = (oh % OH) * sh - pt + kh;
    return ih < 0 || ih >= H ? -1 : ((img + oh / OH) * H + ih) * W;
  }
};

/// im2col gather of kernel position (kh, kw) for output pixels [p0, p0+np)
/// of image `img`: one LOAD per run of pixels in one output row; pixels whose
/// input column falls outside the image become pad_lo/pad_hi rows filled with
/// `pad`, and a row outside the image is all padding.
void gather(LayerStream& ls, const GatherGeom& g, uint64_t x_base, int64_t img, int64_t p0, int64_t np, int64_t kh,
            int64_t kw, int64_t ch0, int64_t cols, uint64_t sp0, int64_t sp_stride, int pad) {
  for (int64_t p = p0; p < p0 + np;) {
    const int64_t oh = p / g.OW, ow0 = p % g.OW;
    const int64_t run = std::min(g.OW - ow0, p0 + np - p);
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.pad_value = pad;
    ld.sp_addr = sp0 + uint64_t((p - p0) * sp_stride);
    ld.sp_stride = uint64_t(sp_stride);
    ld.cols = uint64_t(cols);
    ld.dram_stride = uint64_t(g.sw * g.P);
    ld.dram_addr = x_base;  // a valid address even when nothing is read
    const int64_t row = g.row_pixel(img, oh, kh);
    // Output columns whose input column iw = ow*sw - pl + kw is inside [0, W).
    const int64_t lo_num = g.pl - kw, hi_num = g.W + g.pl - kw;
    const int64_t first_ok = lo_num <= 0 ? 0 : ceil_div(lo_num, g.sw);
    const int64_t end_ok = hi_num <= 0 ? 0 : ceil_div(hi_num, g.sw);
    const int64_t a = std::max(ow0, first_ok), b = std::min(ow0 + run, end_ok);
    if (row < 0 || a >= b) {
      ld.rows = 0;
      ld.pad_lo = uint64_t(run);
    } else {
      ld.pad_lo = uint64_t(a - ow0);
      ld.rows = uint64_t(b - a);
      ld.pad_hi = uint64_t(ow0 + run - b);
      ld.dram_addr = x_base + uint64_t((row + (a * g.sw - g.pl + kw)) * g.P + ch0);
    }
    ls.load(ld);
    p += run;
  }
}

/// im2col gather of the kernel positions (kh, kw0) ... (kh, kw0 + nkw - 1)
/// of one kernel row, all C channels each (cols = C): for an output pixel
/// they are nkw * C consecutive bytes of the NHWC image and nkw * C
/// consecutive bytes of its im2col row, so pixels whose whole window row lies
/// inside the image take one LOAD of nkw * C-byte rows per pixel run instead
/// of nkw LOADs of C-byte rows (ResNet's stem: 21-byte instead of 3-byte
/// rows). Pixels at the left and right edge, whose window row reaches into
/// the padding, are gathered per position as before; an output row whose
/// input row is padding is one LOAD of padding rows. The scratchpad bytes are
/// exactly those of the per-position gather.
void gather_row(LayerStream& ls, const GatherGeom& g, uint64_t x_base, int64_t img, int64_t p0, int64_t np, int64_t kh,
                int64_t kw0, int64_t nkw, uint64_t sp0, int64_t sp_stride, int pad) {
  if (nkw == 1) {
    gather(ls, g, x_base, img, p0, np, kh, kw0, 0, g.C, sp0, sp_stride, pad);
    return;
  }
  const int64_t kw1 = kw0 + nkw - 1;
  // Output columns whose input columns for kw0 and for kw1 are both in [0, W).
  const int64_t lo_num = g.pl - kw0, hi_num = g.W + g.pl - kw1;
  const int64_t first_ok = lo_num <= 0 ? 0 : ceil_div(lo_num, g.sw);
  const int64_t end_ok = hi_num <= 0 ? 0 : ceil_div(hi_num, g.sw);
  for (int64_t p = p0; p < p0 + np;) {
    const int64_t oh = p / g.OW, ow0 = p % g.OW;
    const int64_t run = std::min(g.OW - ow0, p0 + np - p);
    const int64_t row = g.row_pixel(img, oh, kh);
    const uint64_t sp = sp0 + uint64_t((p - p0) * sp_stride);
    const int64_t a = std::max(ow0, first_ok), b = std::min(ow0 + run, end_ok);
    if (row < 0 || a >= b) {
      if (row < 0) {
        spec::LoadInsn ld;
        ld.buf = uint64_t(spec::Buffer::IN);
        ld.pad_value = pad;
        ld.sp_addr = sp;
        ld.sp_stride = uint64_t(sp_stride);
        ld.cols = uint64_t(nkw * g.C);
        ld.dram_stride = uint64_t(g.sw * g.P);
        ld.dram_addr = x_base;
        ld.pad_lo = uint64_t(run);
        ls.load(ld);
      } else {
        for (int64_t kw = kw0; kw <= kw1; ++kw)
          gather(ls, g, x_base, img, p, run, kh, kw, 0, g.C, sp + uint64_t((kw - kw0) * g.C), sp_stride, pad);
      }
      p += run;
      continue;
    }
    // Left edge [ow0, a), interior [a, b), right edge [b, ow0 + run).
    for (int64_t kw = kw0; kw <= kw1 && a > ow0; ++kw)
      gather(ls, g, x_base, img, p, a - ow0, kh, kw, 0, g.C, sp + uint64_t((kw - kw0) * g.C), sp_stride, pad);
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.pad_value = pad;
    ld.sp_addr = sp + uint64_t((a - ow0) * sp_stride);
    ld.sp_stride = uint64_t(sp_stride);
    ld.cols = uint64_t(nkw * g.C);
    ld.dram_stride = uint64_t(g.sw * g.P);
    ld.rows = uint64_t(b - a);
    ld.dram_addr = x_base + uint64_t((row + (a * g.sw - g.pl + kw0)) * g.P);
    ls.load(ld);
    for (int64_t kw = kw0; kw <= kw1 && b < ow0 + run; ++kw)
      gather(ls, g, x_base, img, p + (b - ow0), ow0 + run - b, kh, kw, 0, g.C,
             sp + uint64_t((b - ow0) * sp_stride + (kw - kw0) * g.C), sp_stride, pad);
    p += run;
  }
}

/// A LOAD of `bytes` padding bytes (one row, nothing read) at IN address `sp`.
void pad_load(LayerStream& ls, uint64_t x, uint64_t sp, int64_t bytes, int pad) {
  if (bytes <= 0) return;
  spec::LoadInsn ld;
  ld.buf = uint64_t(spec::Buffer::IN);
  ld.pad_value = pad;
  ld.sp_addr = sp;
  ld.dram_addr = x;  // a valid address even when nothing is read
  ld.rows = 0;
  ld.pad_lo = 1;
  ld.cols = uint64_t(bytes);
  ld.dram_stride = ld.cols;
  ld.sp_stride = ld.cols;
  ls.load(ld);
}

/// The PARAM slice of output channels [n0, n0 + n) of `group` into PARAM at `pa`.
void load_params(LayerStream& ls, const Layer& l, const Tile& t, uint64_t pa) {
  spec::LoadInsn lp;
  lp.buf = uint64_t(spec::Buffer::PARAM);
  lp.sp_addr = pa;
  lp.dram_addr = l.param_offset + uint64_t(12 * (t.group * l.mac.Ng + t.n0));
  lp.rows = 1;
  lp.cols = uint64_t(12 * t.n);
  lp.dram_stride = lp.cols;
  lp.sp_stride = lp.cols;
  ls.load(lp);
}

/// The tile's dense m x n OUT rows into the NHWC output at `y`.
void store_tile(LayerStream& ls, const MacGeom& m, const Tile& t, uint64_t y, uint64_t out) {
  spec::StoreInsn sto;
  sto.buf = uint64_t(spec::Buffer::OUT);
  sto.sp_addr = out;
  sto.dram_addr = y + uint64_t((t.img * m.M() + t.m0) * m.out_pitch() + t.group * m.Ng + t.n0);
  sto.rows = uint64_t(t.m);
  sto.cols = uint64_t(t.n);
  sto.dram_stride = uint64_t(m.out_pitch());
  sto.sp_stride = uint64_t(t.n);
  ls.store(sto, true);
}

/// POSTOP of an m x n int32 tile at ACC `acc` into dense OUT rows at `out`,
/// with the layer's bias, requantization and clamp from PARAM at `pa`.
spec::PostopInsn mac_postop(const ir::MacQuant& q, uint64_t acc, uint64_t out, uint64_t pa, int64_t m, int64_t n) {
  spec::PostopInsn po;
  po.acc_addr = acc;
  po.out_addr = out;
  po.param_addr = pa;
  po.m = uint64_t(m);
  po.n = uint64_t(n);
  po.out_zp = q.y_zp;
  po.clip_lo = q.lo;
  po.clip_hi = q.hi;
  po.res_shift = kMinShift;  // unused without `residual`, but kept in the legal range
  po.even = q.even;
  return po;
}

/// Input row `ih` of image `img`, channels [c0, c0 + Cg) of each pixel,
/// padded to window_pitch(m) bytes at IN address `row`: LOADs of padding for
/// the left and right edge columns around one LOAD of the image's pixels (one
/// contiguous row when Cg is every channel, else W rows of Cg bytes a pixel
/// apart), or one LOAD of padding when the row lies outside the image.
void load_input_row(LayerStream& ls, const MacGeom& m, uint64_t x, int64_t img, int64_t c0, int64_t ih, uint64_t row,
                    int pad) {
  const int64_t pitch = window_pitch(m), wp = pitch / m.Cg;
  const int64_t wr = std::max<int64_t>(0, std::min(m.W, wp - m.pl));
  const auto pad_row = [&](uint64_t sp, int64_t bytes) { pad_load(ls, x, sp, bytes, pad); };
  if (ih < 0 || ih >= m.H || wr == 0) {
    pad_row(row, pitch);
    return;
  }
  pad_row(row, std::min(m.pl, wp) * m.Cg);
  spec::LoadInsn ld;
  ld.buf = uint64_t(spec::Buffer::IN);
  ld.sp_addr = row + uint64_t(m.pl * m.Cg);
  ld.dram_addr = x + uint64_t(((img * m.H + ih) * m.W) * m.in_pitch() + c0);
  const bool whole = m.Cg == m.C && m.in_pitch() == m.C;
  ld.rows = whole ? 1 : uint64_t(wr);
  ld.cols = uint64_t(whole ? wr * m.C : m.Cg);
  ld.dram_stride = whole ? ld.cols : uint64_t(m.in_pitch());
  ld.sp_stride = ld.cols;
  ls.load(ld);
  pad_row(row + uint64_t((m.pl + wr) * m.Cg), (wp - m.pl - wr) * m.Cg);
}

/// Image bands: input row `ih` of image `img` (the group's channels of each
/// pixel) into its s column-phase planes, plane kappa's row at IN address
/// `row[kappa]`: padded column c = kappa + s * u at pixel u. LOADs of padding
/// around one LOAD of the image's pixels of that phase (a pixel stride s * C
/// apart; one contiguous row when s = 1 and ungrouped), or one LOAD of
/// padding when the row lies outside the image.
void load_band_row(LayerStream& ls, const MacGeom& m, uint64_t x, int64_t img, int64_t group, int64_t ih,
                   const std::vector<uint64_t>& row, int pad) {
  const int64_t wq = band_wq(m), sw = m.sw;
  const auto pad_row = [&](uint64_t sp, int64_t bytes) { pad_load(ls, x, sp, bytes, pad); };
  for (int64_t kappa = 0; kappa < sw; ++kappa) {
    // Pixels u whose input column kappa + s * u - pl lies in [0, W).
    const int64_t lo_num = m.pl - kappa, hi_num = m.W - 1 + m.pl - kappa;
    const int64_t u0 = std::min(wq, lo_num <= 0 ? 0 : ceil_div(lo_num, sw));
    const int64_t u1 = hi_num < 0 ? 0 : std::min(wq, hi_num / sw + 1);
    if (ih < 0 || ih >= m.H || u0 >= u1) {
      pad_row(row[size_t(kappa)], wq * m.Cg);
      continue;
    }
    pad_row(row[size_t(kappa)], u0 * m.Cg);
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.sp_addr = row[size_t(kappa)] + uint64_t(u0 * m.Cg);
    ld.dram_addr = x + uint64_t(((img * m.H + ih) * m.W + kappa + sw * u0 - m.pl) * m.in_pitch() + group * m.Cg);
    const bool whole = sw == 1 && m.Cg == m.C && m.in_pitch() == m.C;
    ld.rows = whole ? 1 : uint64_t(u1 - u0);
    ld.cols = uint64_t(whole ? (u1 - u0) * m.C : m.Cg);
    ld.dram_stride = whole ? ld.cols : uint64_t(sw * m.in_pitch());
    ld.sp_stride = ld.cols;
    ls.load(ld);
    pad_row(row[size_t(kappa)] + uint64_t(u1 * m.Cg), (wq - u1) * m.Cg);
  }
}

/// Image bands (band_ok in pass.h): per tile one step; the s x s phase
/// planes of the input rows of its output rows, the whole K x n weight tile
/// (with s > 1 reordered by column phase, one LOAD per kernel position) and
/// the PARAM slice; then one GEMM per kernel row and column phase over every
/// GEMM row of the tile, one POSTOP per output row, and one STORE.
Status lower_band(const CompileState& s, const Layer& l, const ir::MacQuant& q, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  const MacGeom& m = l.mac;
  const Budget& b = s.budget;
  const uint64_t x = s.tensor_offset.at(n.inputs[0]);
  const uint64_t y = s.tensor_offset.at(l.out_tensor(s.graph));
  const uint64_t w = l.wgt_offset;
  const int64_t st = m.sh, wq = band_wq(m), phases = std::min(st, m.KW);
  // Weight rows of column phase kappa within a kernel row: after those of
  // the phases before it.
  std::vector<int64_t> phase_row(size_t(phases) + 1, 0);
  for (int64_t k = 0; k < phases; ++k) phase_row[size_t(k) + 1] = phase_row[size_t(k)] + band_phase_cols(m, k) * m.Cg;
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    const int64_t oh0 = t.m0 / m.OW, oh1 = (t.m0 + t.m - 1) / m.OW, first = t.m0 % m.OW;
    const int64_t rows = band_gemm_rows(m, t.m0, t.m), in_rows = band_in_rows(m, oh1 - oh0 + 1);
    const uint64_t plane = uint64_t(band_plane_bytes(m, oh1 - oh0 + 1));
    const uint64_t slot = uint64_t(ls.in_slot());
    const uint64_t in = slot * uint64_t(b.in), wg = slot * uint64_t(b.wgt), pa = slot * uint64_t(b.param);
    const auto plane_at = [&](int64_t rho, int64_t kappa) { return in + uint64_t(rho * st + kappa) * plane; };
    ls.begin_step();
    std::vector<uint64_t> row(static_cast<size_t>(st), 0);
    for (int64_t r = 0; r < in_rows; ++r) {
      for (int64_t kappa = 0; kappa < st; ++kappa)
        row[size_t(kappa)] = plane_at(r % st, kappa) + uint64_t((r / st) * wq * m.Cg);
      load_band_row(ls, m, x, t.img, t.group, oh0 * st - m.pt + r, row, q.x_zp);
    }
    spec::LoadInsn lw;
    lw.buf = uint64_t(spec::Buffer::WGT);
    lw.cols = uint64_t(t.n);
    lw.dram_stride = uint64_t(m.Ng);
    lw.sp_stride = uint64_t(t.n);
    if (st == 1) {
      lw.sp_addr = wg;
      lw.dram_addr = w + uint64_t(t.group * m.K() * m.Ng + t.n0);
      lw.rows = uint64_t(m.K());
      ls.load(lw);
    } else {
      for (int64_t kh = 0; kh < m.KH; ++kh)
        for (int64_t kw = 0; kw < m.KW; ++kw) {
          const int64_t at = kh * m.KW * m.Cg + phase_row[size_t(kw % st)] + (kw / st) * m.Cg;
          lw.sp_addr = wg + uint64_t(at * t.n);
          lw.dram_addr = w + uint64_t((t.group * m.K() + (kh * m.KW + kw) * m.Cg) * m.Ng + t.n0);
          lw.rows = uint64_t(m.Cg);
          ls.load(lw);
        }
    }
    load_params(ls, l, t, pa);
    bool first_gemm = true;
    // LOADs of the next tile that read memory: its rows' phase planes, the
    // weights and the PARAM slice.
    const int64_t gemms = m.KH * phases, data_loads = in_rows * st + (st == 1 ? 1 : m.KH * m.KW) + 1;
    for (int64_t kh = 0; kh < m.KH; ++kh)
      for (int64_t kappa = 0; kappa < phases; ++kappa) {
        spec::GemmInsn gm;
        gm.accumulate = !first_gemm;
        gm.in_addr = plane_at(kh % st, kappa) + uint64_t(((kh / st) * wq + first) * m.Cg);
        gm.wgt_addr = wg + uint64_t((kh * m.KW * m.Cg + phase_row[size_t(kappa)]) * t.n);
        gm.acc_addr = 0;
        gm.m = uint64_t(rows);
        gm.n = uint64_t(t.n);
        gm.k_len = uint64_t(band_phase_cols(m, kappa) * m.Cg);
        gm.a_zp = q.x_zp;
        gm.b_zp = q.w_zp;
        gm.lda = uint64_t(m.Cg);
        gm.ldb = uint64_t(t.n);
        gm.ldc = uint64_t(4 * t.n);
        if (first_gemm) ls.compute_first();
        ls.compute(gm);
        // The other GEMMs are spread over the next tile's input-row loads,
        // which then run while this tile computes; its POSTOPs and STORE
        // follow them.
        if (first_gemm) ls.defer(true, int(std::max<int64_t>(1, data_loads / gemms)));
        first_gemm = false;
      }
    // One POSTOP per output row, from its GEMM rows to dense OUT rows, so
    // one STORE takes the tile (the rows between output rows stay in ACC).
    const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t p0 = std::max(t.m0, oh * m.OW), p1 = std::min(t.m0 + t.m, (oh + 1) * m.OW);
      const spec::PostopInsn po = mac_postop(q, uint64_t(4 * ((oh - oh0) * wq + p0 % m.OW - first) * t.n),
                                             out + uint64_t((p0 - t.m0) * t.n), pa, p1 - p0, t.n);
      if (oh == oh0) ls.out_producer();
      if (oh == oh1) ls.compute_release(), ls.out_ready();
      ls.compute(po);
    }
    store_tile(ls, m, t, y, out);
  }
  ls.flush();
  return Status::ok();
}

/// Depthwise mode (depthwise_ok in pass.h): per tile one step; the padded
/// input rows of its output rows (channels [n0, n0 + n) of each pixel), the
/// KH * KW taps of those channels and their PARAM slice; one DWCONV, one
/// POSTOP, one STORE.
Status lower_dw(const CompileState& s, const Layer& l, const ir::MacQuant& q, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  const MacGeom& m = l.mac;
  const Budget& b = s.budget;
  const uint64_t x = s.tensor_offset.at(n.inputs[0]);
  const uint64_t y = s.tensor_offset.at(l.out_tensor(s.graph));
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    MacGeom v = m;  // the tile's channel slice, as load_input_row reads it
    v.Cg = t.n;
    const int64_t oh0 = t.m0 / m.OW, rows = t.m / m.OW, pitch = dw_pitch(m, t.n);
    const uint64_t slot = uint64_t(ls.in_slot());
    const uint64_t in = slot * uint64_t(b.in), wg = slot * uint64_t(b.wgt), pa = slot * uint64_t(b.param);
    ls.begin_step();
    for (int64_t r = 0; r < band_in_rows(m, rows); ++r)
      load_input_row(ls, v, x, t.img, t.n0, oh0 * m.sh - m.pt + r, in + uint64_t(r * pitch), q.x_zp);
    spec::LoadInsn lw;
    lw.buf = uint64_t(spec::Buffer::WGT);
    lw.sp_addr = wg;
    lw.dram_addr = l.wgt_offset + uint64_t(t.n0);
    lw.rows = uint64_t(m.KH * m.KW);
    lw.cols = uint64_t(t.n);
    lw.dram_stride = uint64_t(m.C);
    lw.sp_stride = uint64_t(t.n);
    ls.load(lw);
    load_params(ls, l, t, pa);
    spec::DwconvInsn d;
    d.kh = uint64_t(m.KH), d.kw = uint64_t(m.KW), d.stride = uint64_t(m.sh);
    d.in_addr = in, d.wgt_addr = wg, d.acc_addr = 0;
    d.c = uint64_t(t.n), d.ow = uint64_t(m.OW), d.oh = uint64_t(rows);
    d.a_zp = q.x_zp, d.b_zp = q.w_zp;
    d.ldi = uint64_t(pitch);
    ls.compute_first();
    ls.compute(d);
    // The POSTOP and STORE wait for the next tile's loads, which then run
    // while this tile computes.
    ls.defer();
    const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
    const spec::PostopInsn po = mac_postop(q, 0, out, pa, t.m, t.n);
    ls.out_producer();
    ls.compute_release(), ls.out_ready();
    ls.compute(po);
    store_tile(ls, m, t, y, out);
  }
  ls.flush();
  return Status::ok();
}

/// The K step's B tile of tile `t` into WGT at `wg`: tk rows of t.n bytes
/// from b [group][K][Ng] at `w`, or with b_trans t.n rows of tk bytes from
/// its transpose [group][Ng][K].
void load_b_tile(LayerStream& ls, const MacGeom& m, const Tile& t, const KStep& st, uint64_t w, uint64_t wg) {
  const int64_t tk = st.len();
  spec::LoadInsn lw;
  lw.buf = uint64_t(spec::Buffer::WGT);
  lw.sp_addr = wg;
  if (m.b_trans) {
    lw.dram_addr = w + uint64_t((t.group * m.Ng + t.n0) * m.K() + st.c0);
    lw.rows = uint64_t(t.n);
    lw.cols = uint64_t(tk);
    lw.dram_stride = uint64_t(m.K());
  } else {
    lw.dram_addr = w + uint64_t((t.group * m.K() + st.pos0 * m.Cg + st.c0) * m.Ng + t.n0);
    lw.rows = uint64_t(tk);
    lw.cols = uint64_t(t.n);
    lw.dram_stride = uint64_t(m.Ng);
  }
  lw.sp_stride = lw.cols;
  ls.load(lw);
}

/// The A tile of step `st` of tile `t` into IN at `in`: a row window (one
/// padded input row per output-row run), one gather per kernel row (whole
/// channels of an ungrouped conv), or one gather per kernel position.
void load_a_tile(LayerStream& ls, const MacGeom& m, const GatherGeom& gg, uint64_t x, const Tile& t, const KStep& st,
                 uint64_t in, bool window, int32_t x_zp) {
  const int64_t tk = st.len(), pitch = window_pitch(m);
  if (window) {
    // Row windows: run j of the tile gets the input row of kernel row
    // kh, padded to `pitch` bytes, at in + j * pitch.
    const int64_t kh = st.pos0 / m.KW;
    int64_t j = 0;
    for (int64_t p = t.m0; p < t.m0 + t.m; ++j) {
      const int64_t oh = p / m.OW, run = std::min(m.OW - p % m.OW, t.m0 + t.m - p);
      load_input_row(ls, m, x, t.img, t.group * m.Cg, oh * m.sh - m.pt + kh, in + uint64_t(j * pitch), x_zp);
      p += run;
    }
  } else if (row_gather(m, st)) {
    // Whole channels of an ungrouped conv: one gather per kernel row.
    for (int64_t pos = st.pos0; pos < st.pos0 + st.npos;) {
      const int64_t kh = pos / m.KW, kw0 = pos % m.KW;
      const int64_t nkw = std::min(m.KW - kw0, st.pos0 + st.npos - pos);
      gather_row(ls, gg, x, t.img, t.m0, t.m, kh, kw0, nkw, in + uint64_t((pos - st.pos0) * st.cc), tk, x_zp);
      pos += nkw;
    }
  } else {
    for (int64_t pos = st.pos0; pos < st.pos0 + st.npos; ++pos)
      gather(ls, gg, x, t.img, t.m0, t.m, pos / m.KW, pos % m.KW, t.group * m.Cg + st.c0, st.cc,
             in + uint64_t((pos - st.pos0) * st.cc), tk, x_zp);
  }
}

/// POSTOP rescale's operands of tile `t`, after its PARAM triples at `pa`:
/// the (a_mult, a_shift) pair and, for a folded residual add, the m x n
/// residual tile from `r` into IN at `res_in` (a repeated row: rows 0 apart).
void load_rescale_operands(LayerStream& ls, const Layer& l, const Tile& t, uint64_t pa, uint64_t res_in, uint64_t r) {
  const MacGeom& m = l.mac;
  if (l.res.on || l.rescale.on) {  // the rescale's (a_mult, a_shift) after the tile's triples
    spec::LoadInsn la;
    la.buf = uint64_t(spec::Buffer::PARAM);
    la.rows = 1;
    la.sp_addr = pa + uint64_t(12 * t.n);
    la.dram_addr = l.param_offset + uint64_t(12 * m.Cout);
    la.cols = la.dram_stride = la.sp_stride = 8;
    ls.load(la);
  }
  if (l.res.on) {  // the residual tile
    spec::LoadInsn lr;
    lr.buf = uint64_t(spec::Buffer::IN);
    lr.sp_addr = res_in;
    // A row of channels repeats over the pixels: its rows 0 apart.
    const uint64_t pixel = l.res.row ? 0 : uint64_t((t.img * m.M() + t.m0) * m.Cout);
    lr.dram_addr = r + pixel + uint64_t(t.group * m.Ng + t.n0);
    lr.rows = uint64_t(t.m);
    lr.cols = uint64_t(t.n);
    lr.dram_stride = l.res.row ? 0 : uint64_t(m.Cout);
    lr.sp_stride = uint64_t(t.n);
    ls.load(lr);
  }
}

/// POSTOP's rescale fields: a folded residual add (the conv keeps its zero
/// point and clamp; the add's follow), or a concat's requantizing copy (a zero
/// residual term: its multiplier 0, the IN bytes at `res_in` reserved).
void set_rescale(spec::PostopInsn& po, const Layer& l, uint64_t res_in) {
  if (l.res.on) {
    po.residual = 1;
    po.res_addr = res_in;
    po.res_zp = l.res.zp;
    po.res_mult = l.res.mult;
    po.res_shift = uint64_t(l.res.a_shift);  // checked, not used: the sum rounds once at a_shift
    po.rescale = 1;                          // the conv keeps its zero point and clamp; the add's follow
    po.a_zp = l.res.a_zp;
    po.add_zp = l.res.out_zp;
    po.add_lo = l.res.lo;
    po.add_hi = l.res.hi;
  } else if (l.rescale.on) {
    // The concat's copy: the rescale of the clamped result with a zero
    // residual term (its multiplier 0; the IN bytes it reads are the
    // reserved residual space and count for nothing).
    const Layer::Rescale& rs = l.rescale;
    po.residual = 1;
    po.res_addr = res_in;
    po.res_zp = 0;
    po.res_mult = 0;
    po.res_shift = uint64_t(rs.a_shift);
    po.rescale = 1;
    po.a_zp = rs.a_zp;
    po.add_zp = rs.zp;
    po.add_lo = rs.lo;
    po.add_hi = rs.hi;
  }
}

Status lower_mac(const CompileState& s, const Layer& l, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  auto q = ir::mac_quant(s.graph, n);
  if (!q) return Status(q.error()).context("node '" + l.name + "'");
  const MacGeom& m = l.mac;
  const Budget& b = s.budget;
  const GatherGeom gg{m.img_h(), m.W, m.C, m.img_oh(), m.OW, m.sh, m.sw, m.pt, m.pl, m.in_pitch()};
  const uint64_t x = s.tensor_offset.at(n.inputs[0]);
  const uint64_t y = s.tensor_offset.at(l.out_tensor(s.graph));
  // A folded residual add: the m x n residual tile sits in IN after the
  // largest A tile of the step.
  const uint64_t r = l.res.on ? s.tensor_offset.at(l.res.tensor) : 0;
  int64_t max_tk = 0;
  for (const auto& k : l.tiling.ksteps) max_tk = std::max(max_tk, k.len());
  const bool window = l.tiling.row_window;
  const int64_t pitch = window_pitch(m);
  const uint64_t res_off = uint64_t(window ? window_in_bytes(m, l.tiling.tm) : l.tiling.tm * max_tk);
  const uint64_t w = m.b_const ? l.wgt_offset : s.tensor_offset.at(n.inputs[1]);
  if (l.tiling.band) return lower_band(s, l, *q, core, ls);
  if (l.tiling.depthwise) return lower_dw(s, l, *q, core, ls);
  const auto& ks = l.tiling.ksteps;
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    for (size_t k = 0; k < ks.size(); ++k) {
      const KStep& st = ks[k];
      const bool last = k + 1 == ks.size();
      const uint64_t slot = uint64_t(ls.in_slot());
      const uint64_t in = slot * uint64_t(b.in), wg = slot * uint64_t(b.wgt), pa = slot * uint64_t(b.param);
      const int64_t tk = st.len();
      ls.begin_step();
      load_a_tile(ls, m, gg, x, t, st, in, window, q->x_zp);
      load_b_tile(ls, m, t, st, w, wg);
      if (last) {
        load_params(ls, l, t, pa);
        load_rescale_operands(ls, l, t, pa, in + res_off, r);
      }
      spec::GemmInsn gm;
      gm.accumulate = k > 0;
      gm.in_addr = in;
      gm.wgt_addr = wg;
      gm.acc_addr = 0;  // ACC is private to the in-order compute unit: one tile suffices
      gm.m = uint64_t(t.m);
      gm.n = uint64_t(t.n);
      gm.k_len = uint64_t(tk);
      gm.a_zp = q->x_zp;
      gm.b_zp = q->w_zp;
      gm.lda = uint64_t(tk);
      gm.ldb = uint64_t(m.b_trans ? tk : t.n);
      gm.b_trans = m.b_trans;
      gm.ldc = uint64_t(4 * t.n);
      if (window) {
        // One GEMM per run: pixel ow's window starts at byte ow * sw * Cg of
        // its run's row, so rows of A overlap (lda = sw * Cg).
        const int64_t nruns = row_runs(t.m0, t.m, m.OW);
        int64_t j = 0;
        for (int64_t p = t.m0; p < t.m0 + t.m; ++j) {
          const int64_t ow0 = p % m.OW, run = std::min(m.OW - ow0, t.m0 + t.m - p);
          spec::GemmInsn gr = gm;
          gr.in_addr = in + uint64_t(j * pitch + ow0 * m.sw * m.Cg);
          gr.lda = uint64_t(m.sw * m.Cg);
          gr.m = uint64_t(run);
          gr.acc_addr = uint64_t(4 * (p - t.m0) * t.n);
          if (j == 0) ls.compute_first();
          if (!last && j + 1 == nruns) ls.compute_release();
          ls.compute(gr);
          // The step's other GEMMs are dripped between the next step's
          // loads, so those loads are issued while this step computes.
          if (j == 0) ls.defer(true);
          p += run;
        }
      } else {
        ls.compute_first();
        if (!last) ls.compute_release();
        ls.compute(gm);
      }
      if (!last) continue;
      ls.defer(window);  // the tile's POSTOP and STORE follow the next tile's first loads
      const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
      spec::PostopInsn po = mac_postop(*q, 0, out, pa, t.m, t.n);
      set_rescale(po, l, in + res_off);
      ls.compute_release();
      ls.out_producer();
      ls.compute(po);
      store_tile(ls, m, t, y, out);
    }
  }
  ls.flush();
  return Status::ok();
}

Status lower_pool(const CompileState& s, const Layer& l, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  auto q = ir::pool_quant(s.graph, n);
  if (!q) return Status(q.error()).context("node '" + l.name + "'");
  const PoolGeom& g = l.pool;
  const Budget& b = s.budget;
  const bool avg = l.props->pool_avg;
  const GatherGeom gg{g.H, g.W, g.C, g.OH, g.OW, g.sh, g.sw, g.pt, g.pl, g.in_pitch()};
  const uint64_t x = s.tensor_offset.at(n.inputs[0]);
  const uint64_t y = s.tensor_offset.at(n.outputs[0]);
  const int64_t win = g.win();
  // Padding must not win a max and must add nothing to an average.
  const int pad = avg ? q->x_zp : -128;
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    const uint64_t in = uint64_t(ls.in_slot()) * uint64_t(b.in);
    ls.begin_step();
    if (g.global) {
      // The window of the only output pixel is the whole image: one LOAD.
      spec::LoadInsn ld;
      ld.buf = uint64_t(spec::Buffer::IN);
      ld.sp_addr = in;
      ld.dram_addr = x + uint64_t(t.img * g.H * g.W * g.in_pitch() + t.n0);
      ld.rows = uint64_t(g.H * g.W);
      ld.cols = uint64_t(t.n);
      ld.dram_stride = uint64_t(g.in_pitch());
      ld.sp_stride = uint64_t(t.n);
      ls.load(ld);
    } else {
      for (int64_t pos = 0; pos < win; ++pos)
        gather(ls, gg, x, t.img, t.m0, t.m, pos / g.KW, pos % g.KW, t.n0, t.n, in + uint64_t(pos * t.n), win * t.n,
               pad);
    }
    const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
    spec::PoolInsn po;
    po.avg = avg;
    po.shift = avg ? uint64_t(q->avg.shift) : uint64_t(kMinShift);
    po.mult = avg ? q->avg.mult : 0;
    po.in_addr = in;
    po.out_addr = out;
    po.p = uint64_t(t.m);
    po.win = uint64_t(win);
    po.c = uint64_t(t.n);
    po.in_zp = q->x_zp;
    po.out_zp = q->y_zp;
    po.clip_lo = q->lo;
    po.clip_hi = q->hi;
    ls.compute_first();
    ls.compute_release();
    ls.out_producer();
    ls.compute(po);
    spec::StoreInsn st;
    st.buf = uint64_t(spec::Buffer::OUT);
    st.sp_addr = out;
    st.dram_addr = y + uint64_t((t.img * g.OH * g.OW + t.m0) * g.out_pitch() + t.n0);
    st.rows = uint64_t(t.m);
    st.cols = uint64_t(t.n);
    st.dram_stride = uint64_t(g.out_pitch());
    st.sp_stride = uint64_t(t.n);
    ls.defer();  // the STORE follows the next tile's loads
    ls.store(st, true);
  }
  ls.flush();
  return Status::ok();
}

/// Output elements [m0, m0 + m) of a transpose gathered into IN at `sp`, in
/// output order: one LOAD per stretch of whole runs along the row dim
/// (rows = runs, cols = run, dram_stride = the row dim's input stride), one
/// LOAD of one row for a piece of a run at a chunk's edge.
void gather_permuted(LayerStream& ls, const Permute& pm, uint64_t x, int64_t m0, int64_t m, uint64_t sp) {
  constexpr int64_t kMaxRows = 65535;  // the LOAD rows/cols fields are 16 bits
  const int64_t run = pm.run(), nrow = pm.row_count(), end = m0 + m;
  const size_t r = pm.dims.size();
  for (int64_t p = m0; p < end;) {
    // The input element of output element p (row-major over pm.dims).
    int64_t rest = p, src = 0, row_idx = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t i = rest % pm.dims[d];
      rest /= pm.dims[d];
      src += i * pm.stride[d];
      if (d + 2 == r) row_idx = i;
    }
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.sp_addr = sp + uint64_t(p - m0);
    ld.dram_addr = x + uint64_t(src);
    const int64_t in_run = p % run;
    if (in_run == 0 && p + run <= end && run <= kMaxRows) {
      const int64_t rows = std::min({(end - p) / run, nrow - row_idx, kMaxRows});
      ld.rows = uint64_t(rows);
      ld.cols = uint64_t(run);
      ld.dram_stride = uint64_t(pm.row_stride());
      ld.sp_stride = uint64_t(run);
      p += rows * run;
    } else {
      const int64_t cols = std::min({run - in_run, end - p, kMaxRows});
      ld.rows = 1;
      ld.cols = ld.dram_stride = ld.sp_stride = uint64_t(cols);
      p += cols;
    }
    ls.load(ld);
  }
}

/// A transpose: no arithmetic, so ELTWISE copies IN to OUT exactly
/// (rq(v, 2^30, 30) = v; the second operand weighs 0).
ir::EltQuant copy_quant() {
  ir::EltQuant q;
  q.a.mult = int32_t(1) << 30;
  q.a.shift = 30;
  q.b.mult = 0;
  q.b.shift = kMinShift;
  return q;
}

/// Elements [m0, m0 + m) of a tensor seen as rows of `width` elements, in
/// pieces a DMA moves in one go: whole rows (`rows` > 1 or a full row, col
/// 0), or the piece of a row at the chunk's edge (rows 1, cols < width).
/// `emit(e, col, rows, cols)` gets the piece's first element and its column.
template <typename Emit>
void row_pieces(int64_t width, int64_t m0, int64_t m, Emit emit) {
  constexpr int64_t kMaxRows = 65535;  // the LOAD/STORE rows/cols fields are 16 bits
  const int64_t end = m0 + m;
  for (int64_t e = m0; e < end;) {
    const int64_t col = e % width;
    if (col == 0 && e + width <= end && width <= kMaxRows) {
      const int64_t rows = std::min((end - e) / width, kMaxRows);
      emit(e, col, rows, width);
      e += rows * width;
    } else {
      const int64_t cols = std::min({width - col, end - e, kMaxRows});
      emit(e, col, int64_t(1), cols);
      e += cols;
    }
  }
}

/// Elements [m0, m0 + m) of a tensor that repeats every `period` elements
/// (b of a broadcast add or mul), read from its one copy at `src` into IN at
/// `sp`: whole periods as one LOAD of rows `dram_stride` 0 apart.
void load_repeated(LayerStream& ls, uint64_t src, int64_t period, int64_t m0, int64_t m, uint64_t sp) {
  row_pieces(period, m0, m, [&](int64_t e, int64_t col, int64_t rows, int64_t cols) {
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.sp_addr = sp + uint64_t(e - m0);
    ld.dram_addr = src + uint64_t(col);
    ld.rows = uint64_t(rows);
    ld.cols = ld.sp_stride = uint64_t(cols);
    ld.dram_stride = rows > 1 ? 0 : uint64_t(cols);
    ls.load(ld);
  });
}

/// A concat part's input tile, elements [m0, m0 + m) of an input whose rows
/// of `width` elements lie `in_pitch` apart at `x`, into IN at `sp`.
void load_part_input(LayerStream& ls, const Layer::ConcatPart& cp, uint64_t x, uint64_t sp, int64_t m0, int64_t m) {
  row_pieces(cp.width, m0, m, [&](int64_t e, int64_t col, int64_t rows, int64_t cols) {
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.sp_addr = sp + uint64_t(e - m0);
    ld.dram_addr = x + uint64_t((e / cp.width) * cp.in_pitch + col);
    ld.rows = uint64_t(rows);
    ld.cols = ld.sp_stride = uint64_t(cols);
    ld.dram_stride = rows > 1 ? uint64_t(cp.in_pitch) : uint64_t(cols);
    ls.load(ld);
  });
}

/// A concat part's output tile, elements [m0, m0 + m) of its input, from
/// OUT at `out` into its slice of the output at `y`: whole rows as one
/// STORE of rows `dram_stride` = the output's pitch apart.
void store_part(LayerStream& ls, const Layer::ConcatPart& cp, uint64_t y, uint64_t out, int64_t m0, int64_t m) {
  bool first = true;
  row_pieces(cp.width, m0, m, [&](int64_t e, int64_t, int64_t rows, int64_t cols) {
    spec::StoreInsn st;
    st.buf = uint64_t(spec::Buffer::OUT);
    st.sp_addr = out + uint64_t(e - m0);
    st.dram_addr = y + uint64_t(cp.out_elem(e));
    st.rows = uint64_t(rows);
    st.cols = st.sp_stride = uint64_t(cols);
    st.dram_stride = rows > 1 ? uint64_t(cp.pitch) : uint64_t(cols);
    ls.store(st, first);
    first = false;
  });
}

Status lower_eltwise(const CompileState& s, const Layer& l, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  // A transpose or slice copies; a lookup's table holds its results (lo/hi:
  // no clamp); a concat part requantizes its input to the output's scale.
  const bool lut = n.op == ir::OpKind::Lut;
  auto q = l.permute.on() || lut ? Expected<ir::EltQuant>(copy_quant())
           : l.part.on           ? ir::concat_quant(s.graph, n, l.part.input)
                                 : ir::elt_quant(s.graph, n);
  if (!q) return Status(q.error()).context("node '" + l.name + "'");
  const bool binary = n.op == ir::OpKind::Add || n.op == ir::OpKind::Mul;
  const Budget& b = s.budget;
  const uint64_t a_src = s.tensor_offset.at(n.inputs[l.part.on ? l.part.input : 0]);
  const uint64_t b_src = binary ? s.tensor_offset.at(n.inputs[1]) : a_src;
  const uint64_t y = s.tensor_offset.at(n.outputs[0]);
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    const uint64_t in = uint64_t(ls.in_slot()) * uint64_t(b.in);
    const uint64_t in_b = binary || lut ? in + uint64_t(l.tiling.tm) : in;
    ls.begin_step();
    auto load = [&](uint64_t src, uint64_t sp) {
      spec::LoadInsn ld;
      ld.buf = uint64_t(spec::Buffer::IN);
      ld.sp_addr = sp;
      ld.dram_addr = src + uint64_t(t.m0);
      ld.rows = 1;
      ld.cols = uint64_t(t.m);
      ld.dram_stride = ld.cols;
      ld.sp_stride = ld.cols;
      ls.load(ld);
    };
    if (l.permute.on())
      gather_permuted(ls, l.permute, a_src + uint64_t(l.permute.base), t.m0, t.m, in);
    else if (l.part.in_pitch)
      load_part_input(ls, l.part, a_src, in, t.m0, t.m);
    else
      load(a_src, in);
    if (binary && l.repeat) {
      load_repeated(ls, b_src, l.repeat, t.m0, t.m, in_b);
    } else if (binary) {
      load(b_src, in_b);
    }
    if (lut) {
      spec::LoadInsn ld;
      ld.buf = uint64_t(spec::Buffer::IN);
      ld.sp_addr = in_b;
      ld.dram_addr = s.tensor_offset.at(n.inputs[1]);
      ld.rows = 1;
      ld.cols = ld.dram_stride = ld.sp_stride = 256;
      ls.load(ld);
    }
    const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
    spec::EltwiseInsn e;
    e.a_addr = in;
    e.b_addr = in_b;
    e.out_addr = out;
    e.count = uint64_t(t.m);
    e.a_zp = q->a_zp;
    e.b_zp = q->b_zp;
    e.out_zp = q->y_zp;
    e.a_mult = q->a.mult;
    e.a_shift = uint64_t(q->a.shift);
    e.mul = q->mul;
    e.lut = lut;
    e.b_mult = binary && !q->mul ? q->b.mult : 0;
    e.b_shift = binary && !q->mul ? uint64_t(q->b.shift) : uint64_t(kMinShift);
    e.clip_lo = q->lo;
    e.clip_hi = q->hi;
    ls.compute_first();
    ls.compute_release();
    ls.out_producer();
    ls.compute(e);
    ls.defer();  // the STORE follows the next chunk's loads
    if (l.part.on) {
      store_part(ls, l.part, y, out, t.m0, t.m);
      continue;
    }
    spec::StoreInsn st;
    st.buf = uint64_t(spec::Buffer::OUT);
    st.sp_addr = out;
    st.dram_addr = y + uint64_t(t.m0);
    st.rows = 1;
    st.cols = uint64_t(t.m);
    st.dram_stride = st.cols;
    st.sp_stride = st.cols;
    ls.store(st, true);
  }
  ls.flush();
  return Status::ok();
}

/// softmax / layernorm: per chunk of whole rows, LOAD the rows into IN,
/// one ROWNORM, STORE; the table or the channel triples are loaded into
/// PARAM at 0 with the core's first chunk and kept for the layer (layers
/// are separated by barriers, so nothing else uses PARAM meanwhile).
Status lower_rows(const CompileState& s, const Layer& l, int core, LayerStream& ls) {
  const ir::Node& n = s.node(l);
  auto q = ir::row_quant(s.graph, n);
  if (!q) return Status(q.error()).context("node '" + l.name + "'");
  const Budget& b = s.budget;
  const uint64_t x = s.tensor_offset.at(n.inputs[0]);
  const uint64_t y = s.tensor_offset.at(n.outputs[0]);
  const uint64_t row = uint64_t(l.row);
  bool first = true;
  for (size_t ti = 0; ti < l.tiles.size(); ++ti) {
    if (l.core_of_tile[ti] != core) continue;
    const Tile& t = l.tiles[ti];
    const uint64_t rows = uint64_t(t.m) / row;
    const uint64_t in = uint64_t(ls.in_slot()) * uint64_t(b.in);
    ls.begin_step();
    if (first) {
      spec::LoadInsn lp;
      lp.buf = uint64_t(spec::Buffer::PARAM);
      lp.sp_addr = 0;
      lp.dram_addr = l.param_offset;
      lp.rows = 1;
      lp.cols = lp.dram_stride = lp.sp_stride = q->ln ? 12 * row : 512;
      ls.load(lp);
      first = false;
    }
    spec::LoadInsn ld;
    ld.buf = uint64_t(spec::Buffer::IN);
    ld.sp_addr = in;
    ld.dram_addr = x + uint64_t(t.m0);
    ld.rows = rows;
    ld.cols = ld.dram_stride = ld.sp_stride = row;
    ls.load(ld);
    const uint64_t out = uint64_t(ls.out_slot()) * uint64_t(b.out);
    spec::RownormInsn r;
    r.ln = q->ln;
    r.in_addr = in;
    r.out_addr = out;
    r.param_addr = 0;
    r.m = rows;
    r.n = row;
    r.in_zp = q->x_zp;
    r.out_zp = q->y_zp;
    r.clip_lo = q->lo;
    r.clip_hi = q->hi;
    r.eps = q->eps;
    r.mult = q->ln ? 0 : q->softmax.mult;
    r.shift = uint64_t(q->ln ? kMinShift : q->softmax.shift);
    ls.compute_first();
    ls.compute_release();
    ls.out_producer();
    ls.compute(r);
    spec::StoreInsn st;
    st.buf = uint64_t(spec::Buffer::OUT);
    st.sp_addr = out;
    st.dram_addr = y + uint64_t(t.m0);
    st.rows = rows;
    st.cols = st.dram_stride = st.sp_stride = row;
    ls.defer();
    ls.store(st, true);
  }
  ls.flush();
  return Status::ok();
}

}  // namespace

Status lower_layer(const CompileState& s, const Layer& l, int core, std::vector<AnyInsn>& out) {
  LayerStream ls(out, s.budget.slots);
  Status st;
  switch (l.props->kind) {
    case LayerKind::Mac:
      st = lower_mac(s, l, core, ls);
      break;
    case LayerKind::Pool:
      st = lower_pool(s, l, core, ls);
      break;
    case LayerKind::Eltwise:
      st = l.row > 0 ? lower_rows(s, l, core, ls) : lower_eltwise(s, l, core, ls);
      break;
    case LayerKind::Alias:
      break;
  }
  if (!st) return st;
  ls.finalize();
  return Status::ok();
}

}  // namespace loom::compiler
