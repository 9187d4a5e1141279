// Reading and writing tensors as NumPy .npy and ONNX TensorProto .pb files.
#include "common/tensor_io.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "common/temp_files.h"

namespace loom {

static_assert(std::endian::native == std::endian::little, "tensor data is stored little-endian");

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A cursor over the Python-literal dict that forms an .npy header.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool quoted(std::string* out) {
    ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) return false;
    *out = std::string(s_.substr(i_, end - i_));
    i_ = end + 1;
    return true;
  }
  bool word(std::string_view w) {
    ws();
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool integer(int64_t* out) {
    ws();
    const size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const int d = s_[i_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return false;
      v = v * 10 + d;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
    *out = v;
    return i_ > start;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

Error npy_error(const std::string& source, const std::string& what) { return make_error(source, what); }

bool npy_descr(const std::string& d, DType* t) {
  if (d == "|i1" || d == "i1") {
    *t = DType::I8;
  } else if (d == "|u1" || d == "u1") {
    *t = DType::U8;
  } else if (d == "<i4") {
    *t = DType::I32;
  } else if (d == "<f4") {
    *t = DType::F32;
  } else {
    return false;
  }
  return true;
}

const char* npy_descr_of(DType t) {
  switch (t) {
    case DType::I8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::I32:
      return "<i4";
    case DType::F32:
      return "<f4";
  }
  return "?";
}

uint32_t read_le(std::string_view b, size_t off, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(uint8_t(b[off + i])) << (8 * i);
  return v;
}

// Fills `t` (whose shape is already checked) from the typed repeated fields
// that ONNX writers use instead of raw_data.
template <class Field>
Status copy_typed(const Field& f, Tensor* t, const std::string& src, const char* field) {
  if (int64_t(f.size()) != t->numel()) {
    return make_error(src, std::string("field '") + field + "' holds " + std::to_string(f.size()) + " values, shape " +
                               shape_str(t->shape) + " needs " + std::to_string(t->numel()));
  }
  for (int i = 0; i < f.size(); ++i) {
    const auto v = f.Get(i);
    if (t->dtype == DType::F32) {
      const float x = float(v);
      std::memcpy(t->data.data() + 4 * size_t(i), &x, 4);
    } else if (t->dtype == DType::I32) {
      const int32_t x = int32_t(v);
      std::memcpy(t->data.data() + 4 * size_t(i), &x, 4);
    } else {
      const int64_t x = int64_t(v);
      const int64_t lo = t->dtype == DType::I8 ? -128 : 0;
      const int64_t hi = t->dtype == DType::I8 ? 127 : 255;
      if (x < lo || x > hi) {
        return make_error(src, std::string("field '") + field + "' value " + std::to_string(x) + " at index " +
                                   std::to_string(i) + " is outside the " + std::string(dtype_name(t->dtype)) +
                                   " range");
      }
      t->data[size_t(i)] = uint8_t(int8_t(x));
    }
  }
  return {};
}

}  // namespace

Expected<int64_t> checked_numel(const std::vector<int64_t>& shape) {
  if (shape.size() > limits::kMaxRank)
    return make_error("", std::to_string(shape.size()) + " dimensions, above the limit of " +
                              std::to_string(limits::kMaxRank) + " (docs/security.md)");
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) return make_error("", "dimension " + std::to_string(i) + " is negative (" + std::to_string(d) + ")");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return make_error("", "shape " + shape_str(shape) + " has more elements than fit in int64");
    }
    n *= d;
  }
  return n;
}

namespace {
// Opens `path` for reading only if it is a regular file: FIFOs, devices and
// directories are refused (O_NONBLOCK keeps the open of a FIFO from waiting
// for a writer). Returns the descriptor and the file's size.
Expected<std::pair<int, uint64_t>> open_regular(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return make_error(path, std::string("cannot open for reading: ") + std::strerror(errno));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    const bool dir = S_ISDIR(sb.st_mode);
    ::close(fd);
    return make_error(path, dir ? "is a directory, not a file" : "is not a regular file (a pipe, socket or device)");
  }
  return std::pair<int, uint64_t>{fd, uint64_t(sb.st_size)};
}

Status read_exact(int fd, const std::string& path, uint64_t offset, std::string& out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t r = ::pread(fd, out.data() + done, out.size() - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(path, std::string("read error: ") + std::strerror(errno));
    if (r == 0) return make_error(path, "the file shrank while it was read");
    done += size_t(r);
  }
  return {};
}
}  // namespace

std::string size_str(uint64_t bytes) {
  char buf[32];
  if (bytes >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1 << 30));
  else if (bytes >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

Expected<std::string> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  auto fd = open_regular(path);
  if (!fd) return fd.error();
  const auto [f, size] = *fd;
  if (size > max_bytes) {
    ::close(f);
    return make_error(path, "is " + size_str(size) + ", above the limit of " + size_str(max_bytes) +
                                " for this kind of file (docs/security.md)");
  }
  std::string out(size, '\0');
  Status st = read_exact(f, path, 0, out);
  ::close(f);
  if (!st) return st.error();
  return out;
}

Expected<std::string> read_file_range(const std::string& path, uint64_t offset, uint64_t length, uint64_t* file_size) {
  auto fd = open_regular(path);
  if (!fd) return fd.error();
  const auto [f, size] = *fd;
  if (file_size) *file_size = size;
  if (offset > size || length > size - offset) {
    ::close(f);
    return make_error(path, "bytes " + std::to_string(offset) + ".." + std::to_string(offset + length) +
                                " lie beyond the end of the file (" + std::to_string(size) + " bytes)");
  }
  if (length > limits::kMaxTensorBytes) {
    ::close(f);
    return make_error(path, "a range of " + size_str(length) + " is above the tensor limit of " +
                                size_str(limits::kMaxTensorBytes) + " (docs/security.md)");
  }
  std::string out(length, '\0');
  Status st = read_exact(f, path, offset, out);
  ::close(f);
  if (!st) return st.error();
  return out;
}

namespace {
Status write_all(int fd, const std::string& path, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(path, std::string("write failed: ") + std::strerror(errno));
    }
    done += size_t(w);
  }
  return {};
}
}  // namespace

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  // A path that names a device or a pipe (/dev/null, /dev/stdout, a FIFO) is
  // written in place: a rename would replace the special file with a regular one.
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode)) return make_error(path, "is a directory");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return make_error(path, std::string("cannot open for writing: ") + std::strerror(errno));
    Status st = write_all(fd, path, bytes);
    ::close(fd);
    return st;
  }
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const TempPath in_flight(tmp);  // an interrupt removes it
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(path, std::string("cannot create temporary file: ") + std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string msg = std::string(what) + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(make_error(path, msg));
  };
  if (Status st = write_all(fd, path, bytes); !st) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    const std::string msg = std::string("close failed: ") + std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(path, msg);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = std::string("cannot rename temporary file into place: ") + std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(path, msg);
  }
  return {};
}

// ---------------------------------------------------------------- .npy

Expected<Tensor> decode_npy(std::string_view b, const std::string& src) {
  if (b.size() < kNpyMagicLen + 2 || b.substr(0, kNpyMagicLen) != std::string_view(kNpyMagic, kNpyMagicLen)) {
    return npy_error(src, "not a .npy file (missing \\x93NUMPY magic)");
  }
  const int major = uint8_t(b[6]);
  const int minor = uint8_t(b[7]);
  size_t len_bytes = 0;
  if (major == 1 && minor == 0) {
    len_bytes = 2;
  } else if (major == 2 && minor == 0) {
    len_bytes = 4;
  } else {
    return npy_error(src, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                              " (1.0 and 2.0 are supported)");
  }
  if (b.size() < 8 + len_bytes) return npy_error(src, "truncated .npy header");
  const size_t hlen = read_le(b, 8, len_bytes);
  const size_t data_off = 8 + len_bytes + hlen;
  if (b.size() < data_off) {
    return npy_error(src, "truncated .npy header: declares " + std::to_string(hlen) + " bytes, file has " +
                              std::to_string(b.size() - 8 - len_bytes));
  }
  const std::string_view header = b.substr(8 + len_bytes, hlen);

  HeaderParser p(header);
  std::string descr;
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::vector<int64_t> shape;
  const std::string bad = "malformed .npy header '" + excerpt(header) + "'";
  if (!p.eat('{')) return npy_error(src, bad);
  while (!p.eat('}')) {
    std::string key;
    if (!p.quoted(&key) || !p.eat(':')) return npy_error(src, bad);
    if (key == "descr") {
      if (!p.quoted(&descr)) return npy_error(src, bad);
      have_descr = true;
    } else if (key == "fortran_order") {
      if (p.word("True")) {
        fortran = true;
      } else if (!p.word("False")) {
        return npy_error(src, bad);
      }
      have_order = true;
    } else if (key == "shape") {
      if (!p.eat('(')) return npy_error(src, bad);
      while (!p.eat(')')) {
        int64_t d = 0;
        if (!p.integer(&d)) return npy_error(src, bad + " (shape must be non-negative integers that fit in int64)");
        shape.push_back(d);
        if (!p.eat(',')) {
          if (!p.eat(')')) return npy_error(src, bad);
          break;
        }
      }
      have_shape = true;
    } else {
      return npy_error(src, "unsupported key '" + excerpt(key) + "' in .npy header");
    }
    if (!p.eat(',')) {
      if (!p.eat('}')) return npy_error(src, bad);
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) {
    return npy_error(src, "incomplete .npy header (needs 'descr', 'fortran_order' and 'shape')");
  }
  Tensor t;
  if (!npy_descr(descr, &t.dtype)) {
    return npy_error(src, "unsupported dtype '" + excerpt(descr) + "' (supported: |i1 |u1 <i4 <f4)");
  }
  if (fortran) return npy_error(src, "fortran_order arrays are not supported (save in C order)");
  auto n = checked_numel(shape);
  if (!n) return npy_error(src, n.error().what);
  const uint64_t size = dtype_size(t.dtype);
  if (uint64_t(*n) > (std::numeric_limits<uint64_t>::max() / size)) return npy_error(src, "shape too large");
  const uint64_t need = uint64_t(*n) * size;
  const uint64_t have = b.size() - data_off;
  if (have < need) {
    return npy_error(src, "truncated data: shape " + shape_str(shape) + " " + std::string(dtype_name(t.dtype)) +
                              " needs " + std::to_string(need) + " bytes, file has " + std::to_string(have));
  }
  if (have > need) {
    return npy_error(src,
                     std::to_string(have - need) + " unexpected bytes after the data of shape " + shape_str(shape));
  }
  t.shape = std::move(shape);
  t.data.assign(b.begin() + std::ptrdiff_t(data_off), b.end());
  return t;
}

std::string encode_npy(const Tensor& t) {
  std::string dict = std::string("{'descr': '") + npy_descr_of(t.dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(t.shape[i]);
  dict += t.shape.size() == 1 ? ",), }" : "), }";  // Python's one-element tuple
  // Pad so that the data starts 64-byte aligned, as NumPy does.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const size_t prefix = 8 + (v2 ? 4 : 2);
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kNpyMagic, kNpyMagicLen);
  out += char(v2 ? 2 : 1);
  out += char(0);
  const uint32_t hlen = uint32_t(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += char((hlen >> (8 * i)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

Expected<Tensor> read_npy(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return decode_npy(*bytes, path);
}

Status write_npy(const Tensor& t, const std::string& path) {
  if (uint64_t(t.numel()) * dtype_size(t.dtype) != t.data.size()) {
    return make_error(path, "tensor data size does not match shape " + shape_str(t.shape));
  }
  return write_file_atomic(path, encode_npy(t));
}

// ---------------------------------------------------------------- .pb

Expected<Tensor> decode_onnx_tensor(std::string_view b, const std::string& src, std::string* name) {
  onnx::TensorProto p;
  if (b.size() > size_t(std::numeric_limits<int>::max()) || !p.ParseFromArray(b.data(), int(b.size()))) {
    return make_error(src, "not a valid ONNX TensorProto");
  }
  Tensor t;
  switch (p.data_type()) {
    case onnx::TensorProto::INT8:
      t.dtype = DType::I8;
      break;
    case onnx::TensorProto::UINT8:
      t.dtype = DType::U8;
      break;
    case onnx::TensorProto::INT32:
      t.dtype = DType::I32;
      break;
    case onnx::TensorProto::FLOAT:
      t.dtype = DType::F32;
      break;
    default:
      return make_error(src, "unsupported ONNX data_type " + std::to_string(p.data_type()) +
                                 " (supported: FLOAT=1, UINT8=2, INT8=3, INT32=6)");
  }
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0) {
    return make_error(src, "tensors with external data are not supported");
  }
  if (p.has_segment())  // one part of a tensor split across several protos: not the whole value
    return make_error(src + ": field 'segment'", "segmented tensors are not supported");
  t.shape.assign(p.dims().begin(), p.dims().end());
  auto n = checked_numel(t.shape);
  if (!n) return make_error(src, "field 'dims': " + n.error().what);
  const uint64_t need = uint64_t(*n) * dtype_size(t.dtype);
  if (p.has_raw_data()) {
    if (p.raw_data().size() != need) {
      return make_error(src, "field 'raw_data' holds " + std::to_string(p.raw_data().size()) + " bytes, shape " +
                                 shape_str(t.shape) + " " + std::string(dtype_name(t.dtype)) + " needs " +
                                 std::to_string(need));
    }
    t.data.assign(p.raw_data().begin(), p.raw_data().end());
  } else {
    // Only allocate once the typed field is known to hold numel values, so a
    // forged shape cannot request an enormous buffer.
    const int64_t have = t.dtype == DType::F32 ? p.float_data_size() : p.int32_data_size();
    const char* field = t.dtype == DType::F32 ? "float_data" : "int32_data";
    if (have != *n) {
      return make_error(src, std::string("field '") + field + "' holds " + std::to_string(have) + " values, shape " +
                                 shape_str(t.shape) + " needs " + std::to_string(*n));
    }
    t.data.assign(need, 0);
    LOOM_TRY(t.dtype == DType::F32 ? copy_typed(p.float_data(), &t, src, field)
                                   : copy_typed(p.int32_data(), &t, src, field));
  }
  if (name) *name = p.name();
  return t;
}

std::string encode_onnx_tensor(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  if (!name.empty()) p.set_name(name);
  for (int64_t d : t.shape) p.add_dims(d);
  switch (t.dtype) {
    case DType::I8:
      p.set_data_type(onnx::TensorProto::INT8);
      break;
    case DType::U8:
      p.set_data_type(onnx::TensorProto::UINT8);
      break;
    case DType::I32:
      p.set_data_type(onnx::TensorProto::INT32);
      break;
    case DType::F32:
      p.set_data_type(onnx::TensorProto::FLOAT);
      break;
  }
  p.set_raw_data(t.data.data(), t.data.size());
  return p.SerializeAsString();
}

Expected<Tensor> read_onnx_tensor(const std::string& path, std::string* name) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return decode_onnx_tensor(*bytes, path, name);
}

Status write_onnx_tensor(const Tensor& t, const std::string& path, const std::string& name) {
  if (uint64_t(t.numel()) * dtype_size(t.dtype) != t.data.size()) {
    return make_error(path, "tensor data size does not match shape " + shape_str(t.shape));
  }
  return write_file_atomic(path, encode_onnx_tensor(t, name));
}

// ---------------------------------------------------------------- by extension

Expected<Tensor> read_tensor(const std::string& path) {
  if (ends_with(path, ".npy")) return read_npy(path);
  if (ends_with(path, ".pb")) return read_onnx_tensor(path);
  return make_error(path, "unknown tensor file type (expected a .npy or .pb extension)");
}

Status write_tensor(const Tensor& t, const std::string& path, const std::string& name) {
  if (ends_with(path, ".npy")) return write_npy(t, path);
  if (ends_with(path, ".pb")) return write_onnx_tensor(t, path, name);
  return make_error(path, "unknown tensor file type (expected a .npy or .pb extension)");
}

}  // namespace loom
