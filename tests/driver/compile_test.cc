// The compile driver: every input kind to one plan::Program, and a model
// partitioned once (driver::Reusable) compiling to exactly what a first
// compile gives under every option set.
#include "driver/compile.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "compiler/options.h"
#include "frontend/onnx/program.h"
#include "driver/fingerprint.h"

namespace loom::driver {
namespace {

const spec::HwConfig& tiny() { return *spec::find_config("tiny"); }

}  // namespace

namespace {

TEST(Driver, GemmChainIsOneSegmentWithItsCompileRecord) {
  auto p = compile_program(Source::gemm_chain({32, 64, 2, 16}), tiny(), {});
  ASSERT_TRUE(p) << p.error().str();
  ASSERT_EQ(p->segments.size(), 1u);
  ASSERT_EQ(p->steps.size(), 1u);
  EXPECT_TRUE(p->host_ops.empty());
  EXPECT_EQ(p->host, nullptr);
  const auto& s = p->segments[0];
  EXPECT_EQ(s.graph.nodes.size(), 6u);  // 2 x (up, relu, down)
  EXPECT_FALSE(s.decisions.empty());
  EXPECT_EQ(s.predicted.size(), s.plan.layers.size());
  EXPECT_GT(s.predicted_cycles, 0u);
  EXPECT_EQ(p->predicted_cycles(), s.predicted_cycles);
}

TEST(Driver, AGraphFileRecordsItsSourceAndABadOneIsOneLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("loom_driver_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = compile_program(Source::graph_file(std::string(LOOM_EXAMPLES) + "/demo_cnn.json"), tiny(), {});
  ASSERT_TRUE(p) << p.error().str();
  EXPECT_EQ(p->segments.at(0).plan.graph_source, std::string(LOOM_EXAMPLES) + "/demo_cnn.json");
  EXPECT_NE(p->segments.at(0).plan.graph_hash, 0u);
  const auto bad = (dir / "bad.txt").string();
  std::ofstream(bad) << "{}";
  auto b = compile_program(Source::graph_file(bad), tiny(), {});
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().str().find("unknown model format '.txt'"), std::string::npos) << b.error().str();
  std::filesystem::remove_all(dir);
}

TEST(Driver, ReusableCompilesWhatAFirstCompileGivesUnderEveryOptionSet) {
  // A JSON graph here; an ONNX model with host steps between two device
  // segments in onnx.program_file.ProgramFile.ReusableDriver*.
  const Source src = Source::graph_file(std::string(LOOM_EXAMPLES) + "/demo_cnn.json");
  auto r = Reusable::prepare(src, tiny());
  ASSERT_TRUE(r) << r.error().str();
  std::set<std::string> distinct;
  for (const auto& opt : option_sets()) {
    auto want = compile_program(src, tiny(), opt);
    auto got = r->compile(opt);
    ASSERT_EQ(bool(want), bool(got)) << compiler::options_to_json(opt).dump();
    if (!want) {
      EXPECT_EQ(want.error().str(), got.error().str());
      continue;
    }
    EXPECT_EQ(fingerprint(*want), fingerprint(*got)) << compiler::options_to_json(opt).dump();
    distinct.insert(fingerprint(*got));
  }
  EXPECT_GE(distinct.size(), 3u) << "the option sets change the program";
}

}  // namespace
}  // namespace loom::driver
