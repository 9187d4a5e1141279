// Builds small JSON graphs in tests, so every case also goes through the
// reader exactly as a user's file would.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace loom::ir::testing {

using json = nlohmann::json;

struct GraphBuilder {
  json j = {{"format", "loom-graph"},
            {"version", 1},
            {"name", "t"},
            {"tensors", json::object()},
            {"inputs", json::array()},
            {"outputs", json::array()},
            {"nodes", json::array()}};

  // An int8 activation; `input` makes it a graph input (with its shape).
  GraphBuilder& act(const std::string& name, std::vector<int64_t> shape, double scale, int zp, bool input = false) {
    json t = {{"dtype", "int8"}, {"scale", scale}, {"zero_point", zp}};
    if (!shape.empty()) t["shape"] = shape;
    j["tensors"][name] = t;
    if (input) j["inputs"].push_back(name);
    return *this;
  }
  GraphBuilder& out(const std::string& name) {
    j["outputs"].push_back(name);
    return *this;
  }
  GraphBuilder& weight(const std::string& name, std::vector<int64_t> shape, std::vector<int64_t> data, json scale,
                       int zp = 0) {
    j["tensors"][name] = {{"dtype", "int8"}, {"shape", shape}, {"scale", scale}, {"zero_point", zp}, {"data", data}};
    return *this;
  }
  GraphBuilder& bias(const std::string& name, std::vector<int64_t> data) {
    j["tensors"][name] = {{"dtype", "int32"}, {"shape", {int64_t(data.size())}}, {"data", data}};
    return *this;
  }
  GraphBuilder& node(const std::string& name, const std::string& op, std::vector<std::string> in,
                     const std::string& output, json attrs = json::object()) {
    json n = {{"name", name}, {"op", op}, {"inputs", in}, {"outputs", {output}}};
    if (!attrs.empty()) n["attrs"] = attrs;
    j["nodes"].push_back(n);
    return *this;
  }
  Expected<Graph> parse(const std::string& source = "t.json") const { return parse_graph_json_text(j.dump(), source); }
};

inline Tensor i8_tensor(std::vector<int64_t> shape, const std::vector<int>& values) {
  Tensor t(DType::I8, std::move(shape));
  EXPECT_EQ(int64_t(values.size()), t.numel());
  for (size_t i = 0; i < values.size() && int64_t(i) < t.numel(); ++i) t.i8()[i] = int8_t(values[i]);
  return t;
}

inline std::vector<int> values(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.i8()[i]);
  return v;
}

// Parses, runs the reference on one input "x" and returns output "y".
inline std::vector<int> run1(const GraphBuilder& b, const Tensor& x) {
  auto g = b.parse();
  EXPECT_TRUE(g.is_ok()) << g.error().str();
  if (!g) return {};
  auto r = run_reference(*g, {{"x", x}});
  EXPECT_TRUE(r.is_ok()) << r.error().str();
  if (!r) return {};
  return values(r->at("y"));
}

}  // namespace loom::ir::testing
