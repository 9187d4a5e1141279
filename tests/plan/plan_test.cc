// Plan container: round trip, and every kind of damage is refused with a
// message naming the file and the field.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "plan/plan.h"

using namespace loom;

namespace {

plan::Plan sample() {
  plan::Plan p;
  p.config = "tiny";
  p.graph_name = "g";
  p.compiler = "loom test";
  p.memory_bytes = 4096;
  p.constants_offset = 0;
  p.constants = {1, 2, 3, 4, 5};
  p.inputs.push_back({"x", DType::I8, {1, 4, 4, 2}, 0.5, -3, 1024});
  p.outputs.push_back({"y", DType::I8, {1, 8}, 0.25, 1, 2048});
  spec::LoadInsn l;
  l.rows = 3;
  l.dram_addr = 1024;
  spec::EndInsn e;
  p.cores = {{l.encode(), e.encode()}, {e.encode()}};
  plan::LayerInfo li;
  li.name = "conv";
  li.op = "conv2d";
  li.macs = 99;
  li.insn_begin = {0, 0};
  li.insn_end = {1, 0};
  p.layers.push_back(li);
  return p;
}

std::string tmp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

std::vector<char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void dump(const std::string& path, const std::vector<char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(b.data(), std::streamsize(b.size()));
}

}  // namespace

TEST(Plan, RoundTrip) {
  const auto path = tmp("loom_plan_rt.plan");
  ASSERT_TRUE(plan::write_plan(sample(), path).is_ok());
  EXPECT_TRUE(plan::looks_like_plan(path));
  auto r = plan::read_plan(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->config, "tiny");
  EXPECT_EQ(r->constants, sample().constants);
  ASSERT_EQ(r->cores.size(), 2u);
  EXPECT_EQ(r->cores[0], sample().cores[0]);
  EXPECT_EQ(r->inputs[0].zero_point, -3);
  EXPECT_EQ(r->outputs[0].offset, 2048u);
  EXPECT_EQ(r->layers[0].macs, 99u);
  std::filesystem::remove(path);
}

TEST(Plan, EveryTruncationIsRefused) {
  const auto path = tmp("loom_plan_tr.plan");
  ASSERT_TRUE(plan::write_plan(sample(), path).is_ok());
  const auto full = slurp(path);
  for (size_t n = 0; n < full.size(); n += 7) {
    dump(path, std::vector<char>(full.begin(), full.begin() + std::ptrdiff_t(n)));
    auto r = plan::read_plan(path);
    ASSERT_FALSE(r) << "accepted a plan truncated to " << n << " bytes";
    EXPECT_NE(r.error().str().find(path), std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST(Plan, CorruptionFailsTheChecksum) {
  const auto path = tmp("loom_plan_cs.plan");
  ASSERT_TRUE(plan::write_plan(sample(), path).is_ok());
  auto b = slurp(path);
  b[b.size() - 3] ^= 0x40;
  dump(path, b);
  auto r = plan::read_plan(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("checksum"), std::string::npos) << r.error().str();
  std::filesystem::remove(path);
}

TEST(Plan, NewerFormatVersionIsNamed) {
  const auto path = tmp("loom_plan_ver.plan");
  ASSERT_TRUE(plan::write_plan(sample(), path).is_ok());
  auto b = slurp(path);
  b[8] = 9;
  dump(path, b);
  auto r = plan::read_plan(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("format_version"), std::string::npos) << r.error().str();
  std::filesystem::remove(path);
}

TEST(Plan, UnknownConfigIsNamed) {
  auto p = sample();
  p.config = "huge";
  const auto path = tmp("loom_plan_cfg.plan");
  ASSERT_TRUE(plan::write_plan(p, path).is_ok());
  auto r = plan::read_plan(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("'config'"), std::string::npos) << r.error().str();
  std::filesystem::remove(path);
}

TEST(Plan, BindingOutsideMemoryIsRefused) {
  auto p = sample();
  p.outputs[0].offset = 4090;
  const auto path = tmp("loom_plan_bind.plan");
  ASSERT_TRUE(plan::write_plan(p, path).is_ok());
  auto r = plan::read_plan(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().str().find("outputs[0]"), std::string::npos) << r.error().str();
  std::filesystem::remove(path);
}

TEST(Plan, WriteFailureLeavesNothing) {
  const auto dir = tmp("loom_plan_no_such_dir");
  std::filesystem::remove_all(dir);
  Status s = plan::write_plan(sample(), dir + "/x.plan");
  EXPECT_FALSE(s.is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir));
}
