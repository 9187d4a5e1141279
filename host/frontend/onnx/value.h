// Host-side tensors of the ONNX frontend: every element type the importer and
// the host fallback handle, with conversions from and to ONNX TensorProto.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/tensor.h"

namespace onnx {
class TensorProto;
}

namespace loom::onnxfe {

// ONNX TensorProto.DataType codes loom handles.
enum ElemType : int32_t { kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9 };

std::string elem_name(int32_t t);
bool elem_supported(int32_t t);
bool elem_is_int(int32_t t);
/// Saturation range of an integer element type.
void elem_range(int32_t t, int64_t* lo, int64_t* hi);

/// A dense row-major tensor. Floats live in `f`, every integer type (and
/// bool) in `i`, so host kernels are written once per arithmetic kind.
struct Value {
  int32_t type = kFloat;
  std::vector<int64_t> shape;
  std::vector<float> f;
  std::vector<int64_t> i;

  int64_t numel() const;
  bool is_float() const { return type == kFloat; }
  static Value make(int32_t type, std::vector<int64_t> shape);
  double at(int64_t k) const { return is_float() ? double(f[size_t(k)]) : double(i[size_t(k)]); }
};

/// Limits on imported tensors: every dim >= 1 (zero-sized tensors are not
/// supported), products fit in int64, at most limits::kMaxTensorElems elements.
Status check_dims(const std::vector<int64_t>& dims, const std::string& where, bool allow_scalar = true);

/// Converts a TensorProto (typed fields or raw_data; external data already
/// resolved into `external` when non-empty).
Expected<Value> from_proto(const onnx::TensorProto& t, const std::string& where, const std::string* external = nullptr);
/// Serializes a value as a TensorProto (raw_data) named `name`.
std::string to_proto_bytes(const Value& v, const std::string& name);
/// The value as a loom tensor (int8, uint8, int32 or float32; other
/// element types are an error naming the type), e.g. for .npy files.
Expected<Tensor> to_tensor(const Value& v);
/// A tensor file: an ONNX TensorProto (.pb), or a NumPy array (.npy:
/// int8, uint8, int32, float32; no name).
Expected<Value> read_value(const std::string& path, std::string* name = nullptr);

}  // namespace loom::onnxfe
