// Dense tensors as they cross the CLI, the runtime and the reference model.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

enum class DType : uint8_t { I8, U8, I32, F32 };

constexpr size_t dtype_size(DType t) { return (t == DType::I8 || t == DType::U8) ? 1 : 4; }
std::string_view dtype_name(DType t);
/// Parses "int8", "uint8", "int32", "float32"; false when unknown.
bool parse_dtype(std::string_view s, DType* out);

/// Number of elements of a tensor of this shape (1 for a scalar's []).
inline int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

struct Tensor {
  DType dtype = DType::I8;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // row-major, little-endian

  Tensor() = default;
  Tensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)), data(numel() * dtype_size(t)) {}
  int64_t numel() const { return shape_numel(shape); }
  int8_t* i8() { return reinterpret_cast<int8_t*>(data.data()); }
  const int8_t* i8() const { return reinterpret_cast<const int8_t*>(data.data()); }
  int32_t* i32() { return reinterpret_cast<int32_t*>(data.data()); }
  const int32_t* i32() const { return reinterpret_cast<const int32_t*>(data.data()); }
  bool operator==(const Tensor& o) const { return dtype == o.dtype && shape == o.shape && data == o.data; }
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace loom
