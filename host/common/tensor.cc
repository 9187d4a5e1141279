// Names and printing for the dtypes and shapes declared in tensor.h.
#include "common/tensor.h"

namespace loom {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::I8:
      return "int8";
    case DType::U8:
      return "uint8";
    case DType::I32:
      return "int32";
    case DType::F32:
      return "float32";
  }
  return "?";
}

bool parse_dtype(std::string_view s, DType* out) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::F32}) {
    if (s == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  // A hostile file can declare thousands of dimensions: messages show the
  // first eight and the rank.
  constexpr size_t kShown = 8;
  std::string s = "[";
  for (size_t i = 0; i < shape.size() && i < kShown; ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  if (shape.size() > kShown) s += ",... (" + std::to_string(shape.size()) + " dimensions)";
  return s + "]";
}

}  // namespace loom
