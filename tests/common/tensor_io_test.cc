// Tests of tensor.h helpers and the .npy / ONNX .pb readers and writers,
// including real files from Debian's libonnx-testdata and malformed input.
#include "common/tensor_io.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/parse.h"
#include "common/tensor.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TensorIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom_tensor_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }
  void put(const std::string& f, const std::string& bytes) const { std::ofstream(path(f), std::ios::binary) << bytes; }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    return out;
  }
  fs::path dir_;
};

Tensor sample(DType t, std::vector<int64_t> shape) {
  Tensor x(t, std::move(shape));
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = uint8_t(i * 37 + 11);
  return x;
}

// A .npy file as NumPy writes it, with header `dict` padded to 64 bytes.
std::string npy_bytes(const std::string& dict, const std::string& payload, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + char(0);
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += char((h.size() >> (8 * i)) & 0xff);
  return out + h + payload;
}

void expect_one_line_error(const std::string& msg, const std::string& file, const std::string& what) {
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(Tensor, DtypeNamesRoundTrip) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::F32}) {
    DType back = DType::I8;
    ASSERT_TRUE(parse_dtype(dtype_name(t), &back)) << dtype_name(t);
    EXPECT_EQ(back, t);
  }
  DType d = DType::I8;
  EXPECT_FALSE(parse_dtype("int4", &d));
  EXPECT_FALSE(parse_dtype("", &d));
  EXPECT_EQ(dtype_name(DType::F32), "float32");
  EXPECT_EQ(shape_str({1, 16, 16, 8}), "[1,16,16,8]");
  EXPECT_EQ(shape_str({}), "[]");
}

TEST(Tensor, CheckedNumel) {
  EXPECT_EQ(*checked_numel({2, 3, 4}), 24);
  EXPECT_EQ(*checked_numel({}), 1);
  EXPECT_EQ(*checked_numel({5, 0}), 0);
  EXPECT_FALSE(checked_numel({1 << 30, 1 << 30, 1 << 30}).is_ok());
  EXPECT_FALSE(checked_numel({2, -1}).is_ok());
}

TEST_F(TensorIo, NpyRoundTripEveryDtype) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::F32}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{2, 3, 4}, {7}, {}, {0, 3}}) {
      const Tensor x = sample(t, shape);
      const std::string f = path("t.npy");
      ASSERT_TRUE(write_tensor(x, f).is_ok());
      auto back = read_tensor(f);
      ASSERT_TRUE(back.is_ok()) << back.error().str();
      EXPECT_EQ(*back, x) << dtype_name(t) << " " << shape_str(shape);
    }
  }
}

TEST_F(TensorIo, NpyHeaderMatchesNumpyLayout) {
  Tensor x(DType::I32, {2, 3});
  const std::string bytes = encode_npy(x);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ((bytes.size() - x.data.size()) % 64, 0u);  // data is 64-byte aligned
  EXPECT_NE(bytes.find("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_NE(encode_npy(Tensor(DType::I8, {5})).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(encode_npy(Tensor(DType::I8, {})).find("'shape': ()"), std::string::npos);
}

TEST_F(TensorIo, NpyReadsVersion2AndNumpyStyleHeaders) {
  const std::string payload("\x01\x00\x00\x00\xff\xff\xff\xff", 8);
  put("v2.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", payload, 2));
  auto t = read_tensor(path("v2.npy"));
  ASSERT_TRUE(t.is_ok()) << t.error().str();
  EXPECT_EQ(t->dtype, DType::I32);
  EXPECT_EQ(t->shape, std::vector<int64_t>{2});
  EXPECT_EQ(t->i32()[0], 1);
  EXPECT_EQ(t->i32()[1], -1);
  // Key order and spacing are not fixed by the format.
  put("k.npy", npy_bytes("{'shape':(1,1),'fortran_order':False,'descr':'|u1'}", "\xfe"));
  auto u = read_tensor(path("k.npy"));
  ASSERT_TRUE(u.is_ok()) << u.error().str();
  EXPECT_EQ(u->dtype, DType::U8);
  EXPECT_EQ(u->data[0], 0xfe);
}

TEST_F(TensorIo, NpyRejectsBadFiles) {
  struct Case {
    const char* file;
    std::string bytes;
    const char* what;
  };
  const std::string ok_dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }";
  const Case cases[] = {
      {"fortran.npy", npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0')),
       "fortran_order"},
      {"f8.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0')),
       "unsupported dtype '<f8'"},
      {"be.npy", npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')),
       "unsupported dtype '>i4'"},
      {"short.npy", npy_bytes(ok_dict, std::string(15, '\0')), "truncated data"},
      {"long.npy", npy_bytes(ok_dict, std::string(17, '\0')), "unexpected bytes"},
      {"magic.npy", "PK\x03\x04 not numpy", "not a .npy file"},
      {"v3.npy", npy_bytes(ok_dict, std::string(16, '\0'), 3), "unsupported .npy format version 3.0"},
      {"hdr.npy", npy_bytes(ok_dict, "").substr(0, 30), "truncated .npy header"},
      {"garbage.npy", npy_bytes("{'descr': <i4}", ""), "malformed .npy header"},
      {"neg.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }", ""), "malformed"},
      {"huge.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
       "int64"},
  };
  for (const auto& c : cases) {
    put(c.file, c.bytes);
    auto t = read_tensor(path(c.file));
    ASSERT_FALSE(t.is_ok()) << c.file;
    expect_one_line_error(t.error().str(), c.file, c.what);
  }
}

TEST_F(TensorIo, PbRoundTripEveryDtypeKeepsName) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::F32}) {
    const Tensor x = sample(t, {3, 1, 2});
    ASSERT_TRUE(write_tensor(x, path("t.pb"), "input_0").is_ok());
    std::string name;
    auto back = read_onnx_tensor(path("t.pb"), &name);
    ASSERT_TRUE(back.is_ok()) << back.error().str();
    EXPECT_EQ(*back, x);
    EXPECT_EQ(name, "input_0");
  }
}

TEST_F(TensorIo, PbReadsTypedFields) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT8);
  p.add_dims(3);
  for (int v : {-128, 0, 127}) p.add_int32_data(v);
  put("i8.pb", p.SerializeAsString());
  auto t = read_tensor(path("i8.pb"));
  ASSERT_TRUE(t.is_ok()) << t.error().str();
  EXPECT_EQ(t->i8()[0], -128);
  EXPECT_EQ(t->i8()[2], 127);

  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-2.25f);
  put("f.pb", f.SerializeAsString());
  auto u = read_tensor(path("f.pb"));
  ASSERT_TRUE(u.is_ok()) << u.error().str();
  float v[2];
  std::memcpy(v, u->data.data(), 8);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -2.25f);
}

TEST_F(TensorIo, PbRejectsBadFiles) {
  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(1);
  i64.add_int64_data(5);
  put("i64.pb", i64.SerializeAsString());

  onnx::TensorProto short_raw;
  short_raw.set_data_type(onnx::TensorProto::INT32);
  short_raw.add_dims(4);
  short_raw.set_raw_data(std::string(12, '\0'));
  put("short.pb", short_raw.SerializeAsString());

  onnx::TensorProto range;
  range.set_data_type(onnx::TensorProto::UINT8);
  range.add_dims(1);
  range.add_int32_data(300);
  put("range.pb", range.SerializeAsString());

  onnx::TensorProto count;
  count.set_data_type(onnx::TensorProto::INT32);
  count.add_dims(1000000000);
  count.add_dims(1000000000);
  count.add_int32_data(1);
  put("count.pb", count.SerializeAsString());

  put("junk.pb", "\xff\xff\xff\xff\xff");

  // One part of a tensor split across several protos: never read as the whole.
  onnx::TensorProto seg;
  seg.set_data_type(onnx::TensorProto::INT8);
  seg.add_dims(2);
  seg.set_raw_data(std::string(2, '\0'));
  seg.mutable_segment()->set_begin(0);
  seg.mutable_segment()->set_end(2);
  put("seg.pb", seg.SerializeAsString());

  const std::pair<const char*, const char*> cases[] = {
      {"i64.pb", "unsupported ONNX data_type 7"},  {"short.pb", "'raw_data' holds 12 bytes"},
      {"range.pb", "outside the uint8 range"},     {"count.pb", "'int32_data' holds 1 values"},
      {"junk.pb", "not a valid ONNX TensorProto"}, {"seg.pb", "field 'segment': segmented tensors are not supported"},
  };
  for (const auto& [file, what] : cases) {
    auto t = read_tensor(path(file));
    ASSERT_FALSE(t.is_ok()) << file;
    expect_one_line_error(t.error().str(), file, what);
  }
}

TEST_F(TensorIo, ReadsOnnxBackendTestData) {
  const std::string root = LOOM_ONNX_TESTDATA;
  const std::string a = root + "/test_qlinearmatmul_2D/test_data_set_0/input_0.pb";
  if (!fs::exists(a)) GTEST_SKIP() << "libonnx-testdata is not installed (" << a << ")";
  std::string name;
  auto t = read_onnx_tensor(a, &name);
  ASSERT_TRUE(t.is_ok()) << t.error().str();
  EXPECT_EQ(name, "a");
  EXPECT_EQ(t->dtype, DType::U8);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(t->data, (std::vector<uint8_t>{208, 236, 0, 238, 3, 214, 255, 29}));

  auto y = read_tensor(root + "/test_matmulinteger/test_data_set_0/output_0.pb");
  ASSERT_TRUE(y.is_ok()) << y.error().str();
  EXPECT_EQ(y->dtype, DType::I32);
  EXPECT_EQ(y->shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(y->i32()[0], -38);
  EXPECT_EQ(y->i32()[7], -128);

  auto x = read_tensor(root + "/test_clip_default_int8_min/test_data_set_0/input_0.pb");
  ASSERT_TRUE(x.is_ok()) << x.error().str();
  EXPECT_EQ(x->dtype, DType::I8);
  EXPECT_EQ(x->shape, (std::vector<int64_t>{3, 4, 5}));

  // And it survives a round trip through loom's writer unchanged.
  ASSERT_TRUE(write_tensor(*t, path("copy.pb"), "a").is_ok());
  EXPECT_EQ(*read_tensor(path("copy.pb")), *t);
}

TEST_F(TensorIo, UnknownExtensionIsAnError) {
  auto t = read_tensor(path("x.bin"));
  ASSERT_FALSE(t.is_ok());
  expect_one_line_error(t.error().str(), "x.bin", ".npy or .pb");
  Status s = write_tensor(Tensor(DType::I8, {1}), path("x.txt"));
  ASSERT_FALSE(s.is_ok());
  expect_one_line_error(s.str(), "x.txt", ".npy or .pb");
  EXPECT_TRUE(listing().empty());
}

TEST_F(TensorIo, MissingFileIsAnError) {
  auto t = read_tensor(path("absent.npy"));
  ASSERT_FALSE(t.is_ok());
  expect_one_line_error(t.error().str(), "absent.npy", "cannot open");
}

TEST_F(TensorIo, AtomicWriteReplacesAndLeavesNothingOnError) {
  const Tensor a = sample(DType::I8, {4});
  const Tensor b = sample(DType::I32, {2, 2});
  ASSERT_TRUE(write_tensor(a, path("t.npy")).is_ok());
  ASSERT_TRUE(write_tensor(b, path("t.npy")).is_ok());
  EXPECT_EQ(*read_tensor(path("t.npy")), b);
  EXPECT_EQ(listing(), std::vector<std::string>{"t.npy"});

  // The target is a directory: refused before anything is written, and no
  // temporary file is left.
  fs::create_directory(path("busy.npy"));
  fs::create_directory(path("busy.npy/inner"));
  Status s = write_tensor(a, path("busy.npy"));
  ASSERT_FALSE(s.is_ok());
  expect_one_line_error(s.str(), "busy.npy", "is a directory");
  EXPECT_EQ(listing().size(), 2u);  // t.npy and the directory, no temporary

  Status d = write_tensor(a, path("no/such/dir/t.npy"));
  ASSERT_FALSE(d.is_ok());
  expect_one_line_error(d.str(), "no/such/dir/t.npy", "cannot create");

  Tensor bad(DType::I32, {3});
  bad.data.resize(5);
  ASSERT_FALSE(write_tensor(bad, path("bad.pb")).is_ok());
  EXPECT_EQ(listing().size(), 2u);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST_F(TensorIo, ReadFileRefusesSpecialFilesWithoutBlocking) {
  const std::string fifo = (dir_ / "p.npy").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = read_file_bytes(fifo);  // would block forever if it waited for a writer
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().str().find("not a regular file"), std::string::npos) << f.error().str();
  auto z = read_file_bytes("/dev/zero");
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().str().find("not a regular file"), std::string::npos);
  auto d = read_file_bytes(dir_.string());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().str().find("is a directory"), std::string::npos);
  auto t = read_tensor(fifo);
  EXPECT_FALSE(t);
}

TEST_F(TensorIo, ReadFileChecksTheLimitBeforeReading) {
  const std::string p = (dir_ / "big.bin").string();
  std::ofstream(p, std::ios::binary) << std::string(1000, 'x');
  auto ok = read_file_bytes(p, 1000);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->size(), 1000u);
  auto over = read_file_bytes(p, 999);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().str().find("above the limit"), std::string::npos) << over.error().str();
}

TEST_F(TensorIo, ReadFileRangeChecksTheRangeAgainstTheSize) {
  const std::string p = (dir_ / "ext.bin").string();
  std::ofstream(p, std::ios::binary) << "0123456789";
  auto mid = read_file_range(p, 2, 5);
  ASSERT_TRUE(mid);
  EXPECT_EQ(*mid, "23456");
  uint64_t size = 0;
  EXPECT_TRUE(read_file_range(p, 10, 0, &size));
  EXPECT_EQ(size, 10u);
  for (auto [off, len] : {std::pair<uint64_t, uint64_t>{11, 0}, {5, 6}, {1, UINT64_MAX}, {UINT64_MAX, 2}}) {
    auto r = read_file_range(p, off, len);
    ASSERT_FALSE(r) << off << " " << len;
    EXPECT_NE(r.error().str().find("beyond the end"), std::string::npos) << r.error().str();
  }
}

TEST(StrictParse, WholeTextOrNothing) {
  EXPECT_EQ(parse_int64("42"), 42);
  EXPECT_EQ(parse_int64("+7"), 7);
  EXPECT_EQ(parse_int64("-9223372036854775808"), INT64_MIN);
  for (const char* bad : {"", "12abc", " 1", "1 ", "0x10", "+-1", "++1", "1e3", "9223372036854775808", "-"})
    EXPECT_FALSE(parse_int64(bad)) << bad;
  EXPECT_EQ(parse_double("2.5"), 2.5);
  EXPECT_EQ(parse_double("1e3"), 1000.0);
  for (const char* bad : {"", "1.5x", "nan", "inf", "-inf", "1e400", " 2", "0x1p3"})
    EXPECT_FALSE(parse_double(bad)) << bad;
}

TEST(StrictParse, Utf8) {
  EXPECT_TRUE(valid_utf8("plain ascii"));
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  for (const char* bad : {"\x99", "\xc3", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xff"})
    EXPECT_FALSE(valid_utf8(bad)) << bad;
}

TEST(ErrorText, IsOneBoundedLine) {
  EXPECT_EQ(one_line("a\nb\r\nc  "), "a b  c");
  EXPECT_EQ(one_line(std::string(3000, 'x'), 100).size(), 103u);
  EXPECT_EQ(exception_text("[json.exception.parse_error.101] parse error at line 1"), "parse error at line 1");
  EXPECT_EQ(excerpt("ab\x01" "c", 60), "ab?c");
}

}  // namespace
}  // namespace loom
