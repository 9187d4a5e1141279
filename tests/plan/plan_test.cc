// Plan container and program files: round trip, files of the older formats
// still read, and every kind of damage is refused with a message naming the
// file and the field.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "plan/plan.h"
#include "plan/program_file.h"

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

namespace {

std::string fixture(const std::string& name) { return std::string(LOOM_SOURCE_DIR) + "/tests/plan/fixtures/" + name; }

/// The program file at `path` with its metadata edited by `edit`, resealed.
void tamper(const std::string& path, void (*edit)(nlohmann::json&)) {
  const auto b = slurp(path);
  auto c = plan::decode_container(std::string_view(b.data(), b.size()), path);
  ASSERT_TRUE(c) << c.error().str();
  nlohmann::json meta = nlohmann::json::parse(c->meta);
  edit(meta);
  const std::string out = plan::encode_container(c->version, meta.dump(), c->payload);
  dump(path, std::vector<char>(out.begin(), out.end()));
}

}  // namespace

TEST(ProgramFile, AGraphsProgramRoundTrips) {
  // A JSON graph's program: one segment, no host steps, in format 3.
  const auto path = tmp("loom_program_rt.plan");
  plan::Plan p = sample();
  p.graph_source = "g.json";
  p.graph_hash = 77;
  p.compile_options = R"({"cores":2})";
  ASSERT_TRUE(plan::write_program(plan::single_segment(p), plan::info_of(p), path).is_ok());
  EXPECT_EQ(plan::plan_format_version(path), plan::kProgramFormatVersion);
  EXPECT_EQ(plan::host_codec_of(path), "");
  auto r = plan::read_program(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->version, plan::kProgramFormatVersion);
  EXPECT_EQ(r->info.config, "tiny");
  EXPECT_EQ(r->info.source, "g.json");
  EXPECT_EQ(r->info.source_hash, 77u);
  EXPECT_EQ(r->info.compile_options, R"({"cores":2})");
  ASSERT_EQ(r->program.segments.size(), 1u);
  ASSERT_EQ(r->program.steps.size(), 1u);
  EXPECT_EQ(r->program.host, nullptr);
  EXPECT_EQ(r->program.segments[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(plan::encode_plan(r->program.segments[0].plan), plan::encode_plan(p));
  // The single-plan reader reads only format 1, and says so.
  auto one = plan::read_plan(path);
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().str().find("field 'format_version': a program plan (format 3"), std::string::npos)
      << one.error().str();
  std::filesystem::remove(path);
}

TEST(ProgramFile, FormatOnePlanReadsAsAProgramOfOneSegment) {
  // demo_cnn for tiny as loom wrote it before program files.
  const auto path = fixture("demo_cnn.tiny.v1.plan");
  auto r = plan::read_program(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->version, plan::kPlanFormatVersion);
  EXPECT_EQ(r->info.config, "tiny");
  EXPECT_EQ(r->info.source, "examples/demo_cnn.json");
  EXPECT_NE(r->info.compile_options.find("\"fusion\""), std::string::npos);
  ASSERT_EQ(r->program.segments.size(), 1u);
  ASSERT_EQ(r->program.steps.size(), 1u);
  EXPECT_TRUE(r->program.steps[0].on_device());
  auto p = plan::read_plan(path);
  ASSERT_TRUE(p) << p.error().str();
  EXPECT_EQ(plan::encode_plan(r->program.segments[0].plan), plan::encode_plan(*p));
}

TEST(ProgramFile, HostStepsWithoutTheirCodecAreRefused) {
  // An ONNX program plan (format 2): its host steps need the ONNX codec.
  const auto path = fixture("two_segments.tiny.v2.plan");
  EXPECT_EQ(plan::host_codec_of(path), "onnx");
  auto r = plan::read_program(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().str(), path + ": host: field 'codec': host steps of 'onnx', which this reader was given no codec for");
}

TEST(ProgramFile, DamageIsRefusedInOneLine) {
  const auto path = tmp("loom_program_bad.plan");
  const plan::Plan p = sample();
  const auto write = [&] { ASSERT_TRUE(plan::write_program(plan::single_segment(p), plan::info_of(p), path).is_ok()); };
  write();
  const auto full = slurp(path);
  for (size_t n = 0; n < full.size(); n += 7) {
    dump(path, std::vector<char>(full.begin(), full.begin() + std::ptrdiff_t(n)));
    auto r = plan::read_program(path);
    ASSERT_FALSE(r) << "accepted a program truncated to " << n << " bytes";
    EXPECT_NE(r.error().str().find(path), std::string::npos);
  }
  const std::pair<void (*)(nlohmann::json&), const char*> cases[] = {
      {[](nlohmann::json& m) { m["steps"].push_back({{"host", 0}}); },
       "steps[1]: field 'host': a host step in a program without host steps"},
      {[](nlohmann::json& m) { m["steps"].push_back({{"segment", 0}}); }, "steps[1]: field 'segment': segment 0 runs twice"},
      {[](nlohmann::json& m) { m["steps"] = nlohmann::json::array(); }, "field 'steps': segment 0 never runs"},
      {[](nlohmann::json& m) { m["segments"][0]["inputs"] = {"z"}; }, "segments[0]: field 'inputs'"},
      {[](nlohmann::json& m) { m["segments"][0]["plan_bytes"] = 1u << 30; }, "segments[0]: field 'plan_bytes'"},
      {[](nlohmann::json& m) { m["kind"] = "onnx_program"; }, "field 'kind': 'onnx_program' is not 'program'"},
      {[](nlohmann::json& m) { m["config"] = "small"; }, "the segment was compiled for 'tiny', the program for 'small'"},
      {[](nlohmann::json& m) { m["fallback_ops"] = {"x (Relu)"}; }, "field 'fallback_ops': not the ops of the host steps"},
      {[](nlohmann::json& m) { m["compile_options"] = 3; }, "field 'compile_options' is not an object"},
      {[](nlohmann::json& m) { m.erase("notes"); }, "metadata: missing field 'notes'"},
  };
  for (const auto& [edit, needle] : cases) {
    write();
    tamper(path, edit);
    auto r = plan::read_program(path);
    ASSERT_FALSE(r) << "accepted; expected: " << needle;
    EXPECT_NE(r.error().str().find(needle), std::string::npos) << r.error().str();
  }
  std::filesystem::remove(path);
}

TEST(ProgramFile, WriterRefusesWhatNoReaderReads) {
  const auto path = tmp("loom_program_w.plan");
  std::filesystem::remove(path);
  plan::Plan p = sample();
  plan::ProgramInfo info = plan::info_of(p);
  info.config = "small";
  Status s = plan::write_program(plan::single_segment(p), info, path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().str().find("compiled for 'tiny', the program for 'small'"), std::string::npos) << s.str();
  plan::Program prog = plan::single_segment(p);
  prog.steps.push_back(plan::Step{-1, 0});
  s = plan::write_program(prog, plan::info_of(p), path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().str().find("a host step in a program without a host model"), std::string::npos) << s.str();
  EXPECT_FALSE(std::filesystem::exists(path));
}
