// Tensor files: NumPy .npy and ONNX TensorProto .pb (the format of ONNX's
// backend test data), so inputs and outputs can be exchanged with NumPy and
// ONNX Runtime without conversion scripts.
//
// Supported dtypes: int8, uint8, int32, float32, C (row-major) order only.
// Every error names the file and says what is wrong, on one line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/status.h"
#include "common/tensor.h"

namespace loom {

/// Reads a .npy or .pb file, chosen by extension.
Expected<Tensor> read_tensor(const std::string& path);
/// Writes a .npy or .pb file, chosen by extension, atomically (temporary file
/// + rename; on error nothing is left behind). `name` is stored in .pb files.
Status write_tensor(const Tensor& t, const std::string& path, const std::string& name = "");

/// NumPy format v1.0/v2.0 ('|i1', '|u1', '<i4', '<f4'). `source` names the
/// bytes in error messages.
Expected<Tensor> decode_npy(std::string_view bytes, const std::string& source);
std::string encode_npy(const Tensor& t);
Expected<Tensor> read_npy(const std::string& path);
Status write_npy(const Tensor& t, const std::string& path);

/// ONNX TensorProto: int8/uint8/int32/float data in raw_data or the typed
/// fields on read; always raw_data on write. `name` (optional) receives the
/// tensor's name.
Expected<Tensor> decode_onnx_tensor(std::string_view bytes, const std::string& source, std::string* name = nullptr);
std::string encode_onnx_tensor(const Tensor& t, const std::string& name = "");
Expected<Tensor> read_onnx_tensor(const std::string& path, std::string* name = nullptr);
Status write_onnx_tensor(const Tensor& t, const std::string& path, const std::string& name = "");

/// Reads a whole regular file of at most `max_bytes`. FIFOs, devices and
/// directories are refused without blocking, and a file above the limit is
/// refused before anything is allocated (limits.h, docs/security.md).
Expected<std::string> read_file_bytes(const std::string& path, uint64_t max_bytes = limits::kMaxFileBytes);
/// Reads bytes [offset, offset + length) of a regular file, after checking the
/// range against the file's size (at most limits::kMaxTensorBytes);
/// `file_size` (optional) receives the size.
Expected<std::string> read_file_range(const std::string& path, uint64_t offset, uint64_t length,
                                      uint64_t* file_size = nullptr);
/// "512 bytes", "3.2 MiB", "2.0 GiB".
std::string size_str(uint64_t bytes);
/// Writes through a temporary file in the same directory and renames it over
/// `path`, so readers never see a partial file; on error nothing is left.
Status write_file_atomic(const std::string& path, std::string_view bytes);

/// Checks that every dim is >= 0 and the element count fits in int64;
/// returns the element count.
Expected<int64_t> checked_numel(const std::vector<int64_t>& shape);

}  // namespace loom
