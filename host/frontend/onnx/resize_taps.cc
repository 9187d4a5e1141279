// Resize by whole factors as phases of integer taps (resize_taps.h).
#include "frontend/onnx/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/quant.h"

namespace loom::onnxfe {
namespace {

/// Largest factor an axis takes on the fabric: each phase is a slice of
/// the wide input and its own filter.
constexpr int64_t kMaxFactor = 16;
/// Largest tap weight: the depthwise unit's weights are int8 codes minus a
/// zero point of -128, so 0..255.
constexpr int64_t kMaxWeight = 255;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }
int64_t ceil_div_signed(int64_t a, int64_t b) { return -floor_div(-a, b); }

/// Output phase p's input coordinate j + num / den along an axis resized by
/// F, or den 0 when the mode has no such form.
void phase_coord(const std::string& coord, int64_t F, int64_t p, int64_t* num, int64_t* den) {
  if (coord == "asymmetric") {
    *num = p, *den = F;
  } else if (coord == "tf_half_pixel_for_nn") {
    *num = 2 * p + 1, *den = 2 * F;
  } else if (coord == "half_pixel" || coord == "pytorch_half_pixel") {
    *num = 2 * p + 1 - F, *den = 2 * F;  // (o + 1/2) / F - 1/2 with o = F j + p
  } else {
    *den = 0;
  }
}

/// ONNX's nearest_mode on num / den (den > 0).
int64_t nearest_index(const std::string& nm, int64_t num, int64_t den) {
  if (nm == "floor") return floor_div(num, den);
  if (nm == "ceil") return ceil_div_signed(num, den);
  if (nm == "round_prefer_ceil") return floor_div(2 * num + den, 2 * den);  // floor(x + 1/2)
  return ceil_div_signed(2 * num - den, 2 * den);                           // ceil(x - 1/2): round_prefer_floor
}

std::string axis_taps(const std::string& mode, const std::string& coord, const std::string& nm, int64_t in, int64_t out,
                      ResizeAxis* a) {
  if (out < in || out % in != 0)
    return "a factor of " + std::to_string(out) + "/" + std::to_string(in) + " is not whole (1 or more)";
  const int64_t F = out / in;
  if (F > kMaxFactor) return "a factor of " + std::to_string(F) + " (the fabric takes up to 16)";
  a->factor = F;
  a->phases.assign(size_t(F), {});
  if (F == 1) {
    a->den = 1;
    a->phases[0] = {0, {1}};
    return "";
  }
  if (coord == "align_corners" && in > 1) return "align_corners coordinates do not repeat with the factor";
  for (int64_t p = 0; p < F; ++p) {
    int64_t num = 0, den = 0;
    if (coord == "align_corners") {
      num = 0, den = 1;  // a single input pixel: every output reads it
    } else {
      phase_coord(coord, F, p, &num, &den);
    }
    if (den == 0) return "coordinate_transformation_mode '" + coord + "'";
    ResizePhase& ph = a->phases[size_t(p)];
    if (mode == "nearest") {
      ph = {nearest_index(nm, num, den), {1}};
      continue;
    }
    const int64_t d = floor_div(num, den), frac = num - d * den;
    ph = {d, {den - frac, frac}};
    a->den = den;
  }
  if (mode == "nearest") {
    a->den = 1;
    return "";
  }
  // One scale for the axis: the weights' common divisor taken out.
  int64_t g = a->den;
  for (const auto& ph : a->phases)
    for (int64_t w : ph.w) g = std::gcd(g, w);
  a->den /= g;
  for (auto& ph : a->phases)
    for (int64_t& w : ph.w) w /= g;
  return "";
}

}  // namespace

std::string resize_taps(const std::string& mode, const std::string& coord, const std::string& nearest,
                        const std::vector<int64_t>& in, const std::vector<int64_t>& out, ResizeTaps* t) {
  if (in.size() != 4 || out.size() != 4) return "only a rank-4 NCHW Resize runs on the fabric";
  if (in[0] != out[0] || in[1] != out[1]) return "N or C is resized";
  if (mode != "nearest" && mode != "linear") return "mode '" + mode + "'";
  if (in[2] < 1 || in[3] < 1) return "an empty input";
  for (int k = 0; k < 2; ++k) {
    std::string why = axis_taps(mode, coord, nearest, in[size_t(2 + k)], out[size_t(2 + k)], k ? &t->w : &t->h);
    if (!why.empty()) return why;
  }
  int64_t top = 0;
  for (const auto& ph : t->h.phases)
    for (const auto& pw : t->w.phases)
      for (int64_t a : ph.w)
        for (int64_t b : pw.w) top = std::max(top, a * b);
  if (top > kMaxWeight)
    return "a linear tap weight of " + std::to_string(top) + "/" + std::to_string(t->den()) +
           " (the fabric's weights reach 255)";
  return "";
}

std::string resize_taps(const Node& n, int opset, const Known& known, const std::vector<int64_t>& xsh,
                        ResizeTaps* out) {
  if (xsh.size() != 4) return "only a rank-4 NCHW Resize runs on the fabric";
  const std::string mode = n.get_s("mode", "nearest");
  const std::string coord = opset < 11 ? "asymmetric" : n.get_s("coordinate_transformation_mode", "half_pixel");
  const std::string nm = opset < 11 ? "floor" : n.get_s("nearest_mode", "round_prefer_floor");
  const size_t scales_at = opset < 11 ? 1 : 2;
  std::vector<int64_t> ysh = xsh;
  const Value* sizes = opset >= 11 && !n.in(3).empty() ? known(n.in(3)) : nullptr;
  const Value* scales = !n.in(scales_at).empty() ? known(n.in(scales_at)) : nullptr;
  if (sizes && sizes->numel() > 0) {
    if (sizes->numel() != 4) return "sizes of another rank";
    for (size_t k = 0; k < 4; ++k) ysh[k] = sizes->i[k];
  } else if (scales && scales->numel() == 4) {
    for (size_t k = 0; k < 4; ++k) {
      // A whole factor exactly: the coordinates then repeat with it.
      const double s = scales->at(int64_t(k));
      if (!(s >= 1) || s != std::floor(s)) return "a scale that is not a whole factor";
      if (s > double(kMaxFactor))
        return "a factor of " + std::to_string(int64_t(std::min(s, 1e9))) + " (the fabric takes up to 16)";
      ysh[k] = xsh[k] * int64_t(s);
    }
  } else {
    return "scales or sizes that are not constants";
  }
  return resize_taps(mode, coord, nm, xsh, ysh, out);
}

std::vector<int64_t> resize_integer(const std::vector<int64_t>& x, const std::vector<int64_t>& xsh, const ResizeTaps& t,
                                    double xs, int64_t xz, double ys, int64_t yz, int64_t lo, int64_t hi) {
  const int64_t N = xsh[0], C = xsh[1], H = xsh[2], W = xsh[3];
  const int64_t OH = H * t.h.factor, OW = W * t.w.factor;
  Multiplier m;
  quantize_multiplier(xs * (1.0 / double(t.den())) / ys, &m);  // the order ir::mac_quant multiplies in
  std::vector<int64_t> y(size_t(N * C * OH * OW));
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        const ResizePhase& ph = t.h.phases[size_t(oy % t.h.factor)];
        const ResizePhase& pw = t.w.phases[size_t(ox % t.w.factor)];
        int64_t acc = 0;
        for (size_t a = 0; a < ph.w.size(); ++a)
          for (size_t b = 0; b < pw.w.size(); ++b) {
            const int64_t iy = std::clamp<int64_t>(oy / t.h.factor + ph.d + int64_t(a), 0, H - 1);
            const int64_t ix = std::clamp<int64_t>(ox / t.w.factor + pw.d + int64_t(b), 0, W - 1);
            acc += ph.w[a] * pw.w[b] * (x[size_t((nc * H + iy) * W + ix)] - xz);
          }
        y[size_t((nc * OH + oy) * OW + ox)] = std::clamp<int64_t>(requantize_even(acc, m.mult, m.shift) + yz, lo, hi);
      }
  return y;
}

}  // namespace loom::onnxfe
