// The JSON reader and validate(): one test per class of bad input, each
// checking that the single-line message names the file, node and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/tensor_io.h"
#include "graph_builder.h"
#include "ir/graph.h"
#include "ir/op_quant.h"

namespace loom::ir {
namespace {

using testing::json;

// conv1 (3x3, pad 1) -> relu1 over a [1,4,4,2] input.
json base() {
  return json::parse(R"({
    "format": "loom-graph", "version": 1, "name": "base",
    "tensors": {
      "x":  {"dtype": "int8", "shape": [1, 4, 4, 2], "scale": 0.1, "zero_point": 0},
      "w1": {"dtype": "int8", "shape": [3, 3, 2, 4], "scale": 0.01, "init": {"seed": 1, "low": -127, "high": 127}},
      "b1": {"dtype": "int32", "shape": [4], "init": {"seed": 2, "low": -100, "high": 100}},
      "c1": {"scale": 0.2, "zero_point": 0},
      "y":  {"scale": 0.2, "zero_point": -128}
    },
    "inputs": ["x"], "outputs": ["y"],
    "nodes": [
      {"name": "conv1", "op": "conv2d", "inputs": ["x", "w1", "b1"], "outputs": ["c1"],
       "attrs": {"kernel": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}},
      {"name": "relu1", "op": "relu", "inputs": ["c1"], "outputs": ["y"]}
    ]})");
}

std::string error_of(const std::string& text) {
  auto g = parse_graph_json_text(text, "bad.json");
  return g.is_ok() ? std::string("<parsed without error>") : g.error().str();
}

// The message starts with the file, is one line and names every part.
void expect_text_error(const std::string& text, std::initializer_list<std::string> parts) {
  const std::string msg = error_of(text);
  EXPECT_EQ(msg.rfind("bad.json: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing \"" << p << "\" in: " << msg;
}
void expect_error(const json& j, std::initializer_list<std::string> parts) { expect_text_error(j.dump(), parts); }

TEST(Parse, BaseGraphParsesAndInfersShapes) {
  auto g = parse_graph_json_text(base().dump(), "base.json");
  ASSERT_TRUE(g.is_ok()) << g.error().str();
  EXPECT_EQ(g->name, "base");
  EXPECT_EQ(g->source, "base.json");
  EXPECT_EQ(g->tensor("c1").shape, (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_EQ(g->tensor("y").shape, (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_TRUE(g->tensor("w1").is_const);
  EXPECT_EQ(g->nodes[0].attrs.pad_bottom, 1);
  // Seeded initializers are a fixed function of the seed.
  auto again = parse_graph_json_text(base().dump(), "base.json");
  EXPECT_EQ(g->tensor("w1").data, again->tensor("w1").data);
  // validate() is idempotent.
  EXPECT_TRUE(validate(*g).is_ok());
}

// A requantization ratio below 2^-32 keeps shift 62 with fewer multiplier
// bits (0.1 * 0.01 / 1e12 = 1e-15: mult 4612) instead of failing.
TEST(Parse, TinyRequantizationRatioKeepsShift62) {
  json j = base();
  j["tensors"]["c1"]["scale"] = 1e12;
  j["tensors"]["y"]["scale"] = 1e12;  // the relu after it keeps ratio 1
  auto g = parse_graph_json_text(j.dump(), "tiny.json");
  ASSERT_TRUE(g.is_ok()) << g.error().str();
  auto q = mac_quant(*g, g->nodes[0]);
  ASSERT_TRUE(q.is_ok()) << q.error().str();
  EXPECT_EQ(q->mult[0].shift, 62);
  EXPECT_NEAR(double(q->mult[0].mult), 1e-15 * std::ldexp(1.0, 62), 1.0);
}

TEST(Parse, NodesAreSortedTopologically) {
  json j = base();
  std::swap(j["nodes"][0], j["nodes"][1]);
  auto g = parse_graph_json_text(j.dump(), "t.json");
  ASSERT_TRUE(g.is_ok()) << g.error().str();
  EXPECT_EQ(g->nodes[0].name, "conv1");
  EXPECT_EQ(g->nodes[1].name, "relu1");
}

TEST(Parse, FusedActivationsSetIntegerRange) {
  json j = base();
  j["nodes"][0]["attrs"]["activation"] = "relu";
  auto g = parse_graph_json_text(j.dump(), "t.json");
  ASSERT_TRUE(g.is_ok()) << g.error().str();
  EXPECT_EQ(g->nodes[0].attrs.act.lo, 0);                          // c1 zero point
  j["nodes"][0]["attrs"]["activation"] = {{"clip", {-0.5, 1.3}}};  // scale 0.2: -2.5 -> -3, 6.5 -> 7
  g = parse_graph_json_text(j.dump(), "t.json");
  ASSERT_TRUE(g.is_ok()) << g.error().str();
  EXPECT_EQ(g->nodes[0].attrs.act.lo, -3);
  EXPECT_EQ(g->nodes[0].attrs.act.hi, 7);
  auto q = mac_quant(*g, g->nodes[0]);
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->lo, -3);
  EXPECT_EQ(q->hi, 7);
  auto e = elt_quant(*g, g->nodes[1]);  // relu with y_zp -128
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->lo, -128);
  EXPECT_EQ(e->b.mult, 0);
}

TEST(ParseErrors, MalformedJson) {
  const std::string text = base().dump(2);
  expect_text_error(text.substr(0, text.size() / 2), {"invalid JSON", "line ", "column "});
  expect_text_error("{\"format\": loom-graph}", {"invalid JSON", "line 1, column"});
  expect_text_error("", {"invalid JSON"});
  expect_text_error("[1, 2]", {"expected a JSON object"});
}

TEST(ParseErrors, UnknownOp) {
  json j = base();
  j["nodes"][0]["op"] = "conv3d";
  expect_error(j, {"node 'conv1'", "field 'op'", "unknown op 'conv3d'"});
}

TEST(ParseErrors, MissingField) {
  json j = base();
  j["nodes"][0].erase("outputs");
  expect_error(j, {"node 'conv1'", "field 'outputs'", "missing"});
  j = base();
  j["nodes"][1].erase("name");
  expect_error(j, {"node #1", "field 'name'", "missing"});
  j = base();
  j["tensors"]["c1"].erase("scale");
  expect_error(j, {"tensor 'c1'", "field 'scale'", "missing"});
  j = base();
  j.erase("nodes");
  expect_error(j, {"field 'nodes'", "missing"});
  j = base();
  j["nodes"].push_back({{"name", "p"}, {"op", "maxpool"}, {"inputs", {"y"}}, {"outputs", {"z"}}});
  expect_error(j, {"node 'p'", "field 'kernel'", "missing"});
}

TEST(ParseErrors, WrongTypes) {
  json j = base();
  j["nodes"][0]["attrs"]["strides"] = "1,1";
  expect_error(j, {"node 'conv1'", "field 'strides'", "expected an array of integers, got string"});
  j = base();
  j["nodes"][0]["attrs"]["groups"] = 1.5;
  expect_error(j, {"node 'conv1'", "field 'groups'", "expected an integer"});
  j = base();
  j["nodes"][0]["attrs"]["pads"] = {1, 1, 1};
  expect_error(j, {"node 'conv1'", "field 'pads'", "expected 4 values, got 3"});
  j = base();
  j["tensors"]["x"]["shape"] = "1x4x4x2";
  expect_error(j, {"tensor 'x'", "field 'shape'", "expected"});
  j = base();
  j["nodes"][1]["inputs"] = {7};
  expect_error(j, {"node 'relu1'", "field 'inputs[0]'", "expected a string"});
  j = base();
  j["version"] = 2;
  expect_error(j, {"field 'version'", "unsupported version 2"});
}

TEST(ParseErrors, ShapeMismatch) {
  json j = base();
  j["tensors"]["w1"]["shape"] = {3, 3, 3, 4};
  expect_error(j, {"node 'conv1'", "field 'inputs'", "input channels"});
  j = base();
  j["tensors"]["c1"]["shape"] = {1, 4, 4, 5};
  expect_error(j, {"node 'conv1'", "field 'outputs'", "declared with shape [1,4,4,5]", "[1,4,4,4]"});
  j = base();
  j["nodes"][0]["attrs"]["kernel"] = {5, 5};
  expect_error(j, {"node 'conv1'", "field 'kernel'", "does not match"});
  j = base();
  j["tensors"]["b1"]["shape"] = {3};
  expect_error(j, {"node 'conv1'", "field 'inputs'", "bias 'b1'"});
  j = base();
  j["nodes"].push_back({{"name", "add2"}, {"op", "add"}, {"inputs", {"y", "x"}}, {"outputs", {"z"}}});
  j["tensors"]["z"] = {{"scale", 0.1}};
  expect_error(j, {"node 'add2'", "field 'inputs'", "broadcasts b only over a's leading dims"});
  j = base();
  j["nodes"].push_back(
      {{"name", "rs"}, {"op", "reshape"}, {"inputs", {"y"}}, {"outputs", {"z"}}, {"attrs", {{"shape", {7, -1}}}}});
  j["tensors"]["z"] = {{"scale", 0.2}, {"zero_point", -128}};
  expect_error(j, {"node 'rs'", "field 'shape'", "cannot hold the 64 elements"});
}

TEST(ParseErrors, TransposeAndGroupedGemm) {
  json j = base();
  j["nodes"].push_back({{"name", "tp"}, {"op", "transpose"}, {"inputs", {"y"}}, {"outputs", {"z"}}});
  j["tensors"]["z"] = {{"scale", 0.2}, {"zero_point", -128}};
  expect_error(j, {"node 'tp'", "field 'perm'", "missing"});
  j["nodes"].back()["attrs"] = {{"perm", {0, 1, 3, 4}}};
  expect_error(j, {"node 'tp'", "field 'perm'", "not a permutation of 0..3"});
  j["nodes"].back()["attrs"] = {{"perm", {0, 1}}};
  expect_error(j, {"node 'tp'", "field 'perm'", "has rank 4"});
  j["nodes"].back()["attrs"] = {{"perm", {0, 2, 2, 1}}};
  expect_error(j, {"node 'tp'", "field 'perm'", "not a permutation"});

  testing::GraphBuilder g;
  g.act("a", {4, 6}, 0.1, 0, true).act("b", {3, 2, 5}, 0.1, 0, true).act("y", {}, 0.5, 0).out("y");
  g.node("mm", "matmul", {"a", "b"}, "y", {{"groups", 2}});
  expect_error(g.j, {"node 'mm'", "field 'inputs'", "do not make 2 groups"});
  g.j["nodes"][0]["attrs"]["groups"] = 0;
  expect_error(g.j, {"node 'mm'", "field 'groups'", "must be >= 1"});
}

TEST(ParseErrors, RowNormalizations) {
  json j = base();
  // layernorm: its params must be a constant int32 [C, 3] with shifts in 1..62, eps 32 bits.
  j["tensors"]["p"] = {{"dtype", "int32"}, {"shape", {4, 2}}, {"data", std::vector<int>(8, 1)}};  // y has 4 channels
  j["tensors"]["z"] = {{"scale", 0.2}, {"zero_point", 0}};
  j["nodes"].push_back({{"name", "ln"}, {"op", "layernorm"}, {"inputs", {"y", "p"}}, {"outputs", {"z"}}});
  expect_error(j, {"node 'ln'", "params 'p'", "constant int32 [4, 3]", "is [4,2]"});
  j["tensors"]["p"] = {{"dtype", "int32"}, {"shape", {4, 3}}, {"data", {0, 1, 20, 0, 1, 63, 0, 1, 20, 0, 1, 20}}};
  expect_error(j, {"node 'ln'", "params 'p'", "channel 1", "shift 63 is outside 1..62"});
  j["tensors"]["p"]["data"] = {0, 1, 20, 0, 1, 20, 0, 1, 20, 0, 1, 20};
  j["nodes"].back()["attrs"] = {{"eps", -1}};
  expect_error(j, {"node 'ln'", "field 'eps'", "outside 0..4294967295"});
  j["nodes"].back()["attrs"] = {{"eps", 5}};
  EXPECT_EQ(error_of(j.dump()), "<parsed without error>");
  // softmax: one input, rows of at most 65535 elements.
  testing::GraphBuilder g;
  g.act("a", {2, 70000}, 0.1, 0, true).act("y", {}, 1.0 / 256, -128).out("y");
  g.node("sm", "softmax", {"a"}, "y", json::object());
  expect_error(g.j, {"node 'sm'", "the last axis (the row) must hold 1..65535 elements"});
}

TEST(ParseErrors, ZeroOrNegativeDims) {
  json j = base();
  j["tensors"]["x"]["shape"] = {1, 0, 4, 2};
  expect_error(j, {"tensor 'x'", "field 'shape'", "dimension 1 is 0"});
  j = base();
  j["tensors"]["w1"]["shape"] = {3, -3, 2, 4};
  expect_error(j, {"tensor 'w1'", "field 'shape'", "dimension 1 is -3"});
  j = base();
  j["nodes"].push_back(
      {{"name", "rs"}, {"op", "reshape"}, {"inputs", {"y"}}, {"outputs", {"z"}}, {"attrs", {{"shape", {0, 64}}}}});
  j["tensors"]["z"] = {{"scale", 0.2}, {"zero_point", -128}};
  expect_error(j, {"node 'rs'", "field 'shape'", "dimension 0 is 0"});
}

TEST(ParseErrors, DimsOverflowInt64) {
  json j = base();
  j["tensors"]["x"]["shape"] = {int64_t(1) << 40, int64_t(1) << 40, 1, 2};
  expect_error(j, {"tensor 'x'", "field 'shape'", "int64"});
  j = base();
  j["tensors"]["w1"]["shape"] = {int64_t(1) << 62, 4, 2, 4};
  expect_error(j, {"tensor 'w1'", "field 'shape'", "int64"});
  j = base();
  j["tensors"]["x"]["shape"] = {json(uint64_t(1) << 63), 1, 1, 2};
  expect_error(j, {"tensor 'x'", "field 'shape[0]'", "out of range"});
}

TEST(ParseErrors, UnknownTensorReference) {
  json j = base();
  j["nodes"][1]["inputs"] = {"c2"};
  expect_error(j, {"node 'relu1'", "field 'inputs'", "unknown tensor 'c2'"});
  j = base();
  j["outputs"] = {"nothing"};
  expect_error(j, {"field 'outputs'", "unknown tensor 'nothing'"});
  j = base();
  j["tensors"]["orphan"] = {{"scale", 0.1}};
  j["nodes"][1]["inputs"] = {"orphan"};
  expect_error(j, {"node 'relu1'", "field 'inputs'", "'orphan' has no value"});
}

TEST(ParseErrors, DuplicateNames) {
  std::string text = base().dump();
  const std::string key = "\"tensors\":{";
  text.insert(text.find(key) + key.size(), R"("y":{"scale":0.5},)");
  expect_text_error(text, {"tensor 'y'", "declared twice"});
  json j = base();
  j["nodes"][1]["name"] = "conv1";
  expect_error(j, {"node 'conv1'", "field 'name'", "duplicate node name"});
  j = base();
  j["nodes"].push_back({{"name", "relu2"}, {"op", "relu"}, {"inputs", {"c1"}}, {"outputs", {"y"}}});
  expect_error(j, {"node 'relu2'", "field 'outputs'", "also produced by node 'relu1'"});
  std::string attrs = base().dump();
  const std::string at = "\"kernel\":[3,3]";
  attrs.insert(attrs.find(at), R"("groups":1,"groups":2,)");
  expect_text_error(attrs, {"field 'nodes.attrs'", "duplicate key 'groups'"});
}

TEST(ParseErrors, GraphCycle) {
  json j = base();
  j["tensors"]["t1"] = {{"scale", 0.2}};
  j["tensors"]["t2"] = {{"scale", 0.2}};
  j["nodes"][1]["inputs"] = {"t1"};
  j["nodes"].push_back({{"name", "ra"}, {"op", "relu"}, {"inputs", {"t2"}}, {"outputs", {"t1"}}});
  j["nodes"].push_back({{"name", "rb"}, {"op", "relu"}, {"inputs", {"t1"}}, {"outputs", {"t2"}}});
  expect_error(j, {"node 'r", "field 'inputs'", "cycle", "'ra' -> 'rb'"});
  j = base();
  j["nodes"][1]["inputs"] = {"y"};  // a node consuming its own output
  expect_error(j, {"node 'relu1'", "field 'inputs'", "cycle: 'relu1' -> 'relu1'"});
}

TEST(ParseErrors, DtypeErrors) {
  json j = base();
  j["tensors"]["x"]["dtype"] = "float32";
  expect_error(j, {"tensor 'x'", "field 'dtype'", "float32"});
  j = base();
  j["tensors"]["x"]["dtype"] = "int4";
  expect_error(j, {"tensor 'x'", "field 'dtype'", "unknown dtype 'int4'"});
  j = base();
  j["tensors"]["b1"]["dtype"] = "int8";
  j["tensors"]["b1"]["scale"] = 1.0;
  expect_error(j, {"node 'conv1'", "field 'inputs'", "'b1' is int8, expected int32"});
  j = base();
  j["tensors"]["c1"]["dtype"] = "int32";
  expect_error(j, {"tensor 'c1'", "field 'dtype'", "activations must be int8"});
}

TEST(ParseErrors, QuantizationOutOfRange) {
  json j = base();
  j["tensors"]["c1"]["scale"] = 0;
  expect_error(j, {"tensor 'c1'", "field 'scale'", "positive"});
  j["tensors"]["c1"]["scale"] = -0.5;
  expect_error(j, {"tensor 'c1'", "field 'scale'", "positive"});
  std::string inf = base().dump();
  inf.replace(inf.find("0.2"), 3, "1e400");
  expect_text_error(inf, {"invalid JSON", "line 1, column", "number overflow", "1e400"});
  j = base();
  j["tensors"]["x"]["zero_point"] = 200;
  expect_error(j, {"tensor 'x'", "field 'zero_point'", "int8 range"});
  j = base();
  j["tensors"]["y"]["scale"] = 1e-12;  // relu multiplier 2e11 needs a negative shift
  expect_error(j, {"node 'relu1'", "field 'scale'", "[1, 62]"});
  j = base();
  j["tensors"]["w1"]["scale"] = {0.01, 0.02, 0.03};
  expect_error(j, {"node 'conv1'", "tensor 'w1'", "field 'scale'", "has 3 values", "(4)"});
  j = base();
  j["tensors"]["x"]["scale"] = {0.1, 0.2};
  expect_error(j, {"tensor 'x'", "field 'scale'", "one scale"});
  j = base();
  j["tensors"]["b1"]["zero_point"] = 3;
  expect_error(j, {"tensor 'b1'", "field 'zero_point'", "must be 0"});
  j = base();
  j["nodes"].push_back(
      {{"name", "p"}, {"op", "maxpool"}, {"inputs", {"y"}}, {"outputs", {"z"}}, {"attrs", {{"kernel", {2, 2}}}}});
  j["tensors"]["z"] = {{"scale", 0.4}, {"zero_point", -128}};
  expect_error(j, {"node 'p'", "field 'outputs'", "equal input and output quantization"});
}

TEST(ParseErrors, UnsupportedAttributes) {
  json j = base();
  j["nodes"][0]["attrs"]["dilations"] = {2, 2};
  expect_error(j, {"node 'conv1'", "field 'dilations'", "dilation 2 is not supported"});
  j = base();
  j["nodes"][0]["attrs"]["dilation"] = {1, 1};
  expect_error(j, {"node 'conv1'", "field 'dilation'", "unsupported attribute for conv2d"});
  j = base();
  j["nodes"].push_back({{"name", "ap"},
                        {"op", "avgpool"},
                        {"inputs", {"y"}},
                        {"outputs", {"z"}},
                        {"attrs", {{"kernel", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"count_include_pad", false}}}});
  j["tensors"]["z"] = {{"scale", 0.2}, {"zero_point", -128}};
  expect_error(j, {"node 'ap'", "field 'count_include_pad'", "only supported without padding"});
  j = base();
  j["nodes"][0]["attrs"]["activation"] = "gelu";
  expect_error(j, {"node 'conv1'", "field 'activation'", "unknown activation 'gelu'"});
  j = base();
  j["nodes"][0]["attrs"]["pads"] = {3, 1, 1, 1};
  expect_error(j, {"node 'conv1'", "field 'pads'", "[0, kernel 3)"});
  j = base();
  j["nodes"][0]["attrs"]["strides"] = {0, 1};
  expect_error(j, {"node 'conv1'", "field 'strides'", "must be >= 1"});
  j = base();
  j["nodes"][0]["attrs"]["groups"] = 3;
  expect_error(j, {"node 'conv1'", "field 'groups'", "divide"});
}

TEST(ParseErrors, ConstantDataErrors) {
  json j = base();
  j["tensors"]["b1"].erase("init");
  j["tensors"]["b1"]["data"] = {1, 2, 3};
  expect_error(j, {"tensor 'b1'", "field 'data'", "holds 3 values", "needs 4"});
  j["tensors"]["b1"]["data"] = {1, 2, 3, int64_t(1) << 33};
  expect_error(j, {"tensor 'b1'", "field 'data[3]'", "outside the int32 range"});
  j = base();
  j["tensors"]["w1"]["init"]["low"] = 5;
  j["tensors"]["w1"]["init"]["high"] = 4;
  expect_error(j, {"tensor 'w1'", "field 'init'", "greater than high"});
  j["tensors"]["w1"]["init"]["high"] = 300;
  expect_error(j, {"tensor 'w1'", "field 'init.high'", "outside the int8 range"});
  j = base();
  j["tensors"]["w1"]["data"] = {1};
  expect_error(j, {"tensor 'w1'", "field 'init'", "not both"});
}

TEST(ParseErrors, MissingFileNamesThePath) {
  auto g = parse_graph_json("/nonexistent/dir/graph.json");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.error().str().find("/nonexistent/dir/graph.json"), std::string::npos) << g.error().str();
}

TEST(ParseErrors, FileErrorsNameTheFile) {
  const std::string path =
      std::filesystem::temp_directory_path() / ("loom_bad_" + std::to_string(::getpid()) + ".json");
  json j = base();
  j["nodes"][0]["op"] = "gelu";
  ASSERT_TRUE(write_file_atomic(path, j.dump()).is_ok());
  auto g = parse_graph_json(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.error().str().rfind(path + ": node 'conv1': field 'op'", 0), 0u) << g.error().str();
}

// Writing to a special file (-o /dev/null) writes through it and leaves it a
// device; a directory is refused in one line; a regular file is replaced whole.
TEST(FileWrite, SpecialFilesAreWrittenInPlace) {
  ASSERT_TRUE(write_file_atomic("/dev/null", "discarded").is_ok());
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  const auto dir = std::filesystem::temp_directory_path();
  auto st = write_file_atomic(dir.string(), "x");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().str(), dir.string() + ": is a directory");
  const std::string path = dir / ("loom_write_" + std::to_string(::getpid()) + ".txt");
  ASSERT_TRUE(write_file_atomic(path, "first, longer").is_ok());
  ASSERT_TRUE(write_file_atomic(path, "second").is_ok());
  auto back = read_file_bytes(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, "second");
}

// Truncations and byte corruptions of a real graph: every one must come back
// as a one-line error (or a valid graph), never a crash or an exception.
TEST(ParseErrors, CorruptedFilesNeverCrash) {
  auto text = read_file_bytes(LOOM_EXAMPLES "/demo_cnn.json");
  ASSERT_TRUE(text.is_ok()) << text.error().str();
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int errors = 0;
  for (size_t cut = 0; cut < text->size(); cut += 13) {
    const std::string msg = error_of(text->substr(0, cut));
    EXPECT_EQ(msg.rfind("bad.json: ", 0), 0u) << msg;
    ++errors;
  }
  const char junk[] = "{}[]\",:-0123456789eE.x \\";
  for (int i = 0; i < 400; ++i) {
    std::string t = *text;
    for (int k = 0; k < 3; ++k) t[next() % t.size()] = junk[next() % (sizeof junk - 1)];
    auto g = parse_graph_json_text(t, "bad.json");
    if (!g) {
      EXPECT_EQ(g.error().str().find('\n'), std::string::npos) << g.error().str();
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
}

}  // namespace
}  // namespace loom::ir
