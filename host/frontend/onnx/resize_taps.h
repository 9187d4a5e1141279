// A Resize of an image's H and W by whole factors as phases of taps: the
// one description of an integer Resize that the QDQ fold, the device
// mapping (map_resize.cc) and the host kernel of loom.QLinearResize share
// (docs/onnx.md "Resize on the fabric").
//
// Along an axis resized by a whole factor F, output coordinate F * j + p
// reads input coordinates j + d_p, j + d_p + 1, ... (clamped to the axis,
// which is the edge value ONNX's coordinate clamp gives) with integer
// weights w_p[k] / den: a nearest Resize one tap of weight 1, a linear one
// two taps of the coordinate's fraction. The phases repeat with j, so the
// Resize is F depthwise filters, one per phase, interleaved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/onnx/model.h"
#include "frontend/onnx/qdq_fold.h"

namespace loom::onnxfe {

struct ResizePhase {
  int64_t d = 0;           // the first tap's input offset from j
  std::vector<int64_t> w;  // the taps' weights, over ResizeAxis::den
};

struct ResizeAxis {
  int64_t factor = 1, den = 1;
  std::vector<ResizePhase> phases;  // one per output coordinate mod factor
  int64_t taps() const { return int64_t(phases.front().w.size()); }
};

/// H and W of an NCHW tensor (N's and C's scales 1). The 2-D weights are
/// products of the axes' weights, over h.den * w.den.
struct ResizeTaps {
  ResizeAxis h, w;
  int64_t den() const { return h.den * w.den; }
};

/// The taps of Resize node `n` on an input of shape `xsh` with its constant
/// `scales`/`sizes` from `known`, or why it has none: not rank 4, N or C
/// resized, a factor that is not whole (or above 16), align_corners or
/// cubic, or a linear tap weight above 255 (the fabric's weight range).
std::string resize_taps(const Node& n, int opset, const Known& known, const std::vector<int64_t>& xsh, ResizeTaps* out);

/// The same from the Resize's modes and each axis's input and output
/// length (the host kernel's view of the node).
std::string resize_taps(const std::string& mode, const std::string& coord, const std::string& nearest,
                        const std::vector<int64_t>& in, const std::vector<int64_t>& out, ResizeTaps* t);

/// The quantized Resize's integer result (NCHW, int8 or uint8 codes):
/// y = clamp(rqe(sum of w * (x - xz), m) + yz), m = xs * (1 / den) / ys as
/// the fabric's depthwise convolution derives it, ties to even.
std::vector<int64_t> resize_integer(const std::vector<int64_t>& x, const std::vector<int64_t>& xsh, const ResizeTaps& t,
                                    double xs, int64_t xz, double ys, int64_t yz, int64_t lo, int64_t hi);

}  // namespace loom::onnxfe
