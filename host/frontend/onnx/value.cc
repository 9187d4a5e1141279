// TensorProto <-> Value conversions with the checks every imported tensor gets.
#include "frontend/onnx/value.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "common/tensor_io.h"

namespace loom::onnxfe {

std::string elem_name(int32_t t) {
  switch (t) {
    case kFloat:
      return "float32";
    case kUint8:
      return "uint8";
    case kInt8:
      return "int8";
    case kInt32:
      return "int32";
    case kInt64:
      return "int64";
    case kBool:
      return "bool";
    default:
      break;
  }
  if (onnx::TensorProto_DataType_IsValid(t)) return onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(t));
  return "type " + std::to_string(t);
}

bool elem_supported(int32_t t) {
  return t == kFloat || t == kUint8 || t == kInt8 || t == kInt32 || t == kInt64 || t == kBool;
}
bool elem_is_int(int32_t t) { return elem_supported(t) && t != kFloat; }

void elem_range(int32_t t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case kUint8:
      *lo = 0, *hi = 255;
      return;
    case kInt8:
      *lo = -128, *hi = 127;
      return;
    case kInt32:
      *lo = INT32_MIN, *hi = INT32_MAX;
      return;
    case kBool:
      *lo = 0, *hi = 1;
      return;
    default:
      *lo = INT64_MIN, *hi = INT64_MAX;
      return;
  }
}

int64_t Value::numel() const { return shape_numel(shape); }

Value Value::make(int32_t type, std::vector<int64_t> shape) {
  // The one place host values are allocated: a shape computed from hostile
  // attributes or inputs (a Reshape, a broadcast) is refused here.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > limits::kMaxTensorElems / d))
      throw std::length_error("a host value of shape " + shape_str(shape) + " has more than " +
                              std::to_string(limits::kMaxTensorElems) + " elements (docs/security.md)");
    n *= d;
  }
  Value v;
  v.type = type;
  v.shape = std::move(shape);
  if (type == kFloat) {
    v.f.assign(size_t(v.numel()), 0.0f);
  } else {
    v.i.assign(size_t(v.numel()), 0);
  }
  return v;
}

Status check_dims(const std::vector<int64_t>& dims, const std::string& where, bool allow_scalar) {
  if (dims.size() > limits::kMaxRank)
    return make_error(where, std::to_string(dims.size()) + " dimensions, above the limit of " +
                                 std::to_string(limits::kMaxRank) + " (docs/security.md)");
  if (dims.empty() && !allow_scalar) return make_error(where, "a scalar is not allowed here");
  int64_t n = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0) {
      return make_error(
          where, "dimension " + std::to_string(k) + " is " + std::to_string(dims[k]) + "; dimensions must be >= 1");
    }
    if (dims[k] == 0) {
      return make_error(where, "dimension " + std::to_string(k) +
                                   " is 0; zero-sized tensors are not supported (dimensions must be >= 1)");
    }
    if (n > std::numeric_limits<int64_t>::max() / dims[k]) {
      return make_error(where, "the product of the dimensions " + shape_str(dims) + " overflows int64");
    }
    n *= dims[k];
  }
  if (n > limits::kMaxTensorElems) {
    return make_error(where, "tensor of " + std::to_string(n) + " elements exceeds the limit of " +
                                 std::to_string(limits::kMaxTensorElems) + " (docs/security.md)");
  }
  return {};
}

namespace {

template <class T>
void from_raw(const std::string& raw, int64_t n, std::vector<int64_t>* out) {
  out->resize(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    T v;
    std::memcpy(&v, raw.data() + size_t(k) * sizeof(T), sizeof(T));
    (*out)[size_t(k)] = int64_t(v);
  }
}

size_t elem_bytes(int32_t t) {
  switch (t) {
    case kUint8:
    case kInt8:
    case kBool:
      return 1;
    case kInt64:
      return 8;
    default:
      return 4;
  }
}

}  // namespace

Expected<Value> from_proto(const onnx::TensorProto& t, const std::string& where, const std::string* external) {
  if (!elem_supported(t.data_type())) {
    return make_error(where + ": field 'data_type'", elem_name(t.data_type()) + " tensors are not supported (" +
                                                         "float32, uint8, int8, int32, int64, bool are)");
  }
  if (t.has_segment())  // one part of a tensor split across several protos: not the whole value
    return make_error(where + ": field 'segment'", "segmented tensors are not supported");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  LOOM_TRY(check_dims(dims, where + ": field 'dims'"));
  Value v = Value::make(t.data_type(), dims);
  const int64_t n = v.numel();
  const std::string* raw = external ? external : (t.has_raw_data() ? &t.raw_data() : nullptr);
  if (raw) {
    const uint64_t want = uint64_t(n) * elem_bytes(t.data_type());
    if (raw->size() != want) {
      return make_error(where + ": field '" + std::string(external ? "external_data" : "raw_data") + "'",
                        "holds " + std::to_string(raw->size()) + " bytes; " + elem_name(t.data_type()) + " " +
                            shape_str(dims) + " needs " + std::to_string(want));
    }
    switch (t.data_type()) {
      case kFloat:
        std::memcpy(v.f.data(), raw->data(), size_t(want));
        break;
      case kUint8:
        from_raw<uint8_t>(*raw, n, &v.i);
        break;
      case kInt8:
        from_raw<int8_t>(*raw, n, &v.i);
        break;
      case kBool:
        from_raw<uint8_t>(*raw, n, &v.i);
        break;
      case kInt32:
        from_raw<int32_t>(*raw, n, &v.i);
        break;
      case kInt64:
        from_raw<int64_t>(*raw, n, &v.i);
        break;
      default:
        break;
    }
    return v;
  }
  auto count_err = [&](const char* field, int64_t got) {
    return make_error(where + ": field '" + field + "'", "holds " + std::to_string(got) + " values; " +
                                                             elem_name(t.data_type()) + " " + shape_str(dims) +
                                                             " needs " + std::to_string(n));
  };
  switch (t.data_type()) {
    case kFloat:
      if (t.float_data_size() != n) return count_err("float_data", t.float_data_size());
      for (int64_t k = 0; k < n; ++k) v.f[size_t(k)] = t.float_data(int(k));
      break;
    case kInt64:
      if (t.int64_data_size() != n) return count_err("int64_data", t.int64_data_size());
      for (int64_t k = 0; k < n; ++k) v.i[size_t(k)] = t.int64_data(int(k));
      break;
    default: {
      if (t.int32_data_size() != n) return count_err("int32_data", t.int32_data_size());
      int64_t lo, hi;
      elem_range(t.data_type(), &lo, &hi);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t x = t.int32_data(int(k));
        if (x < lo || x > hi) {
          return make_error(where + ": field 'int32_data'", "value " + std::to_string(x) + " at " + std::to_string(k) +
                                                                " is outside the " + elem_name(t.data_type()) +
                                                                " range");
        }
        v.i[size_t(k)] = x;
      }
    }
  }
  return v;
}

std::string to_proto_bytes(const Value& v, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(v.type);
  for (auto d : v.shape) t.add_dims(d);
  std::string raw;
  const int64_t n = v.numel();
  raw.resize(size_t(n) * elem_bytes(v.type));
  for (int64_t k = 0; k < n; ++k) {
    char* p = raw.data() + size_t(k) * elem_bytes(v.type);
    switch (v.type) {
      case kFloat:
        std::memcpy(p, &v.f[size_t(k)], 4);
        break;
      case kUint8:
      case kBool: {
        uint8_t x = uint8_t(v.i[size_t(k)]);
        std::memcpy(p, &x, 1);
        break;
      }
      case kInt8: {
        int8_t x = int8_t(v.i[size_t(k)]);
        std::memcpy(p, &x, 1);
        break;
      }
      case kInt32: {
        int32_t x = int32_t(v.i[size_t(k)]);
        std::memcpy(p, &x, 4);
        break;
      }
      default: {
        int64_t x = v.i[size_t(k)];
        std::memcpy(p, &x, 8);
        break;
      }
    }
  }
  t.set_raw_data(raw);
  return t.SerializeAsString();
}

namespace {

Value from_tensor(const Tensor& t) {
  static constexpr int32_t kTypes[] = {kInt8, kUint8, kInt32, kFloat};
  Value v = Value::make(kTypes[int(t.dtype)], t.shape);
  for (int64_t k = 0; k < v.numel(); ++k) {
    const size_t i = size_t(k);
    switch (t.dtype) {
      case DType::I8:
        v.i[i] = t.i8()[k];
        break;
      case DType::U8:
        v.i[i] = t.data[i];
        break;
      case DType::I32:
        v.i[i] = t.i32()[k];
        break;
      case DType::F32:
        std::memcpy(&v.f[i], t.data.data() + 4 * i, 4);
        break;
    }
  }
  return v;
}

}  // namespace

Expected<Value> read_value(const std::string& path, std::string* name) {
  if (std::filesystem::path(path).extension() == ".npy") {
    auto t = read_npy(path);
    if (!t) return t.error();
    if (name) name->clear();
    return from_tensor(*t);
  }
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  onnx::TensorProto t;
  if (!t.ParseFromString(*bytes)) return make_error(path, "not a valid ONNX TensorProto (protobuf parse failed)");
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return make_error(path + ": field 'data_location'", "external data is not supported in tensor files");
  if (name) *name = t.name();
  return from_proto(t, path);
}

Expected<Tensor> to_tensor(const Value& v) {
  DType d;
  switch (v.type) {
    case kInt8:
      d = DType::I8;
      break;
    case kUint8:
      d = DType::U8;
      break;
    case kInt32:
      d = DType::I32;
      break;
    case kFloat:
      d = DType::F32;
      break;
    default:
      return make_error("tensor",
                        "element type " + elem_name(v.type) + " has no loom tensor form (int8, uint8, int32, float32)");
  }
  Tensor t(d, v.shape);
  for (int64_t k = 0; k < v.numel(); ++k) {
    const size_t i = size_t(k);
    switch (d) {
      case DType::I8:
        t.i8()[k] = int8_t(v.i[i]);
        break;
      case DType::U8:
        t.data[i] = uint8_t(v.i[i]);
        break;
      case DType::I32:
        t.i32()[k] = int32_t(v.i[i]);
        break;
      case DType::F32:
        std::memcpy(t.data.data() + 4 * i, &v.f[i], 4);
        break;
    }
  }
  return t;
}

}  // namespace loom::onnxfe
