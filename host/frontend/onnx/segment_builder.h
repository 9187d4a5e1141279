// The device segment under construction while the ONNX nodes are mapped:
// layouts (permutations of dims, NHWC for images), the segment's loom graph
// and the helpers every mapper shares (views, reshapes, slices, quantization
// on the int8 fabric). Internal to the ONNX frontend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "frontend/onnx/qdq_fold.h"
#include "frontend/onnx/value.h"
#include "ir/graph.h"

namespace loom::onnxfe {

/// A permutation of dims: dim i of a view is dim p[i] of what it views.
using Perm = std::vector<int64_t>;
/// The permutation that keeps every dim where it is.
Perm identity(size_t rank);
/// Where a rank-4 tensor of a convolution network lives: NHWC.
Perm default_layout(size_t rank);
/// q with q[p[i]] = i.
Perm inverse(const Perm& p);
/// `s` viewed through `p`.
std::vector<int64_t> permuted(const std::vector<int64_t>& s, const Perm& p);
/// Whether viewing `s` through `p` keeps the row-major element order (the
/// dims larger than 1 stay in order): a reshape, not a data movement.
bool keeps_order(const std::vector<int64_t>& s, const Perm& p);

/// One device segment under construction: the loom graph of the ONNX nodes
/// mapped so far, with each tensor's ONNX shape, type and device layout.
/// The mappers (mappers.h) add nodes to it; build_program closes it.
struct SegBuilder {
  const Model& m;
  const Known& known;
  SegmentDraft seg;
  std::map<std::string, std::vector<int64_t>> onnx_shape;  // ONNX-side shape of every segment tensor
  std::map<std::string, int32_t> onnx_type;
  /// The device layout of every ONNX-named segment tensor: device dim i is
  /// ONNX dim layout[i]. NHWC for the rank-4 tensors of convolutions, the
  /// ONNX order for everything else (transformer tensors of any rank). Views
  /// in other orders (a grouped matmul's operands) are unnamed helpers.
  std::map<std::string, Perm> layout;
  /// PARAM bytes of the configuration (0: not checked here, the compiler does).
  uint64_t param_bytes = 0;

  std::vector<int64_t> shape_of(const std::string& t) const {
    if (const Value* v = known(t)) return v->shape;
    auto it = m.types.find(t);
    return it != m.types.end() && it->second.has_shape ? it->second.shape : std::vector<int64_t>{};
  }
  int32_t type_of(const std::string& t) const {
    if (const Value* v = known(t)) return v->type;
    auto it = m.types.find(t);
    return it != m.types.end() ? it->second.type : 0;
  }
  /// Declares activation `t` with quantization (scale, zp on the ONNX side),
  /// in layout `want` (default: NHWC at rank 4) when new. False when it
  /// already exists with different quantization.
  bool activation(const std::string& t, double scale, int64_t zp, bool* is_new, const Perm* want = nullptr);
  /// Declares the ONNX tensor `y` (shape `ysh`, `type`) produced on the
  /// device with quantization `q` (device side), in layout `l`.
  ir::TensorInfo& declare(const std::string& y, const std::vector<int64_t>& ysh, int32_t type, const ir::QParams& q,
                          const Perm& l);
  bool in_seg(const std::string& t) const { return seg.graph.tensors.count(t) != 0; }
  /// Makes `t` a segment input when a QuantizeLinear with constant per-tensor
  /// parameters produced it (its quantization is then known): a layout op
  /// right after the model's input Q runs on the fabric too.
  bool adopt(const std::string& t);

  /// The segment node that writes `t`, or null.
  const ir::Node* producer(const std::string& t) const {
    for (const auto& nd : seg.graph.nodes)
      if (nd.outputs[0] == t) return &nd;
    return nullptr;
  }
  /// Emits `out` = the device tensor `src` viewed through `p` (dim i of out
  /// is dim p[i] of src), as a device transpose or, where the element order
  /// stays, a reshape (no instructions). Looks through the transposes that
  /// made `src`, so a transpose undone (or completed) by a later one moves
  /// the data once or not at all; a transpose left unread is dropped when
  /// the segment closes.
  void permute_into(std::string src, Perm p, const std::string& out, const std::string& name);
  /// The device tensor holding ONNX tensor `t` with its dims in order `want`
  /// and shape `shape` (default: the permuted ONNX shape; any shape of the
  /// same element count and order): `t` itself or a helper view, whose
  /// nodes are named `reader` (the node and operand that read it).
  std::string view(const std::string& t, const Perm& want, const std::string& reader, std::vector<int64_t> shape = {});
};

/// The first value of a constant, as float or as integer.
inline float f0(const Value* v) { return v->f[0]; }
inline int64_t i0(const Value* v) { return v->i[0]; }
/// Whether every value is a single one (per-tensor quantization).
bool scalars(std::initializer_list<const Value*> vs);
/// Device-side quantization of scale `s` and zero point `z` (a uint8 zero
/// point is 128 lower on the int8 fabric).
ir::QParams device_q(const Value* s, const Value* z);
/// Device dim of ONNX axis `a` in layout `l`.
int64_t device_axis(const Perm& l, int64_t a);
/// `y` = the ONNX tensor `x` (in the segment) reshaped to `ysh`: a view in
/// ONNX order, then a free reshape (NHWC kept where the order is the same).
void reshape_into(SegBuilder& b, const std::string& x, const std::vector<int64_t>& ysh, const std::string& y,
                  const std::string& name);
/// `y` = x[starts : ends] (ONNX order, step 1) as a device slice in x's layout.
void slice_into(SegBuilder& b, const std::string& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::string& y, const std::string& name);

}  // namespace loom::onnxfe
