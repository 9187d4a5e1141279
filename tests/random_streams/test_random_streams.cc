// Seeded random command streams run on the golden model and on the Verilated
// fabric: the whole device-memory image and the architectural counters of
// every core must be identical, with plain and with stalling memory.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/ref/ref_device.h"
#include "backends/rtl/rtl_device.h"
#include "runtime/executor.h"
#include "stream_gen.h"

namespace loom::random_streams {
namespace {

constexpr std::array kArchCounters = {spec::Counter::INSN_LOAD, spec::Counter::INSN_COMPUTE,
                                      spec::Counter::INSN_STORE, spec::Counter::INSN_SYNC,
                                      spec::Counter::MACS,      spec::Counter::BYTES_RD,
                                      spec::Counter::BYTES_WR};

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

/// Seeds per configuration: LOOM_RANDOM_STREAMS overrides the defaults.
uint64_t seed_count(std::string_view cfg) {
  return env_u64("LOOM_RANDOM_STREAMS", cfg == "tiny" ? 200 : cfg == "small" ? 50 : 20);
}
uint64_t first_seed() { return env_u64("LOOM_RANDOM_STREAMS_SEED", 1); }

/// The rtl device's memory timing, randomised as `loom run` does it: from
/// LOOM_RTL_SEED and LOOM_RTL_STALL when they are set.
runtime::DeviceOptions rtl_options_from_env() {
  runtime::DeviceOptions o;
  if (const char* v = std::getenv("LOOM_RTL_SEED"); v && *v) o.seed = std::strtoull(v, nullptr, 0);
  if (const char* v = std::getenv("LOOM_RTL_STALL"); v && *v) o.axi_stall = std::strtod(v, nullptr);
  return o;
}

std::string repro(uint64_t seed) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return "LOOM_RANDOM_STREAMS_SEED=" + std::to_string(seed) +
         " LOOM_RANDOM_STREAMS=1 LOOM_RANDOM_STREAMS_DUMP=1 ./loom_random_streams_tests --gtest_filter='" +
         info->test_suite_name() + "." + info->name() + "'";
}

/// Runs `p` on ref; an error here means the generator produced an illegal stream.
Expected<runtime::RunResult> run_ref(const spec::HwConfig& cfg, const Program& p) {
  auto dev = ref::make_ref_device(cfg);
  if (!dev) return dev.error();
  return runtime::execute(**dev, p.plan, p.inputs);
}

/// The first difference between two runs, or empty.
std::string compare(const runtime::RunResult& want, const runtime::RunResult& got) {
  if (want.outputs.size() != got.outputs.size()) return "different number of outputs";
  for (size_t i = 0; i < want.outputs.size(); ++i) {
    const auto& w = want.outputs[i].second.data;
    const auto& h = got.outputs[i].second.data;
    if (w.size() != h.size()) return want.outputs[i].first + ": sizes differ";
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != h[k] && bad++ == 0) first = k;
    if (bad > 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: %zu of %zu bytes differ, first at offset %zu (ref 0x%02x, rtl 0x%02x)",
                    want.outputs[i].first.c_str(), bad, w.size(), first, w[first], h[first]);
      return buf;
    }
  }
  if (want.cores.size() != got.cores.size()) return "different number of cores";
  for (size_t c = 0; c < want.cores.size(); ++c)
    for (auto k : kArchCounters) {
      const uint64_t a = want.cores[c].counters[size_t(k)], b = got.cores[c].counters[size_t(k)];
      if (a != b)
        return "core " + std::to_string(c) + " counter " + std::string(spec::kCounterNames[size_t(k)]) + ": ref " +
               std::to_string(a) + ", rtl " + std::to_string(b);
    }
  return {};
}

struct Mode {
  const char* config;
  bool stress;
};

class RandomStreams : public ::testing::TestWithParam<Mode> {};

TEST_P(RandomStreams, RefAndRtlAgree) {
  const Mode mode = GetParam();
  const spec::HwConfig& cfg = *spec::find_config(mode.config);
  bool built = false;
  for (auto n : rtl::rtl_configs()) built |= n == cfg.name;
  if (!built) {
    auto made = rtl::make_rtl_device(cfg);
    GTEST_SKIP() << (made ? std::string("configuration not in rtl_configs()") : made.error().str());
  }

  const uint64_t first = first_seed(), count = seed_count(cfg.name);
  const bool dump = env_u64("LOOM_RANDOM_STREAMS_DUMP", 0) != 0;
  std::printf("%s%s: seeds %llu..%llu (LOOM_RANDOM_STREAMS=N, LOOM_RANDOM_STREAMS_SEED=first)\n", mode.config,
              mode.stress ? " under memory stress" : "", static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(first + count - 1));
  uint64_t failures = 0, insns = 0, cycles = 0;
  for (uint64_t seed = first; seed < first + count && failures < 5; ++seed) {
    const Program prog = generate(seed, cfg);
    std::string why = check_program(prog, cfg);
    Expected<runtime::RunResult> want = make_error("ref", "not run");
    if (why.empty()) {
      want = run_ref(cfg, prog);
      if (!want) why = "illegal stream, ref failed: " + want.error().str();
    }
    if (why.empty()) {
      std::unique_ptr<runtime::Device> dev;
      if (mode.stress) {
        // Slow, stalling memory answering IDs out of order, seeded per stream.
        rtl::RtlOptions opt;
        opt.mem.read_latency = 60;
        opt.mem.write_latency = 30;
        opt.mem.beats_per_cycle = 0.5;
        opt.mem.stall_prob = 0.3;
        opt.mem.reorder_ids = true;
        opt.mem.seed = seed;
        auto made = rtl::make_rtl_device(cfg, opt);
        if (made) dev = std::move(*made);
        else why = made.error().str();
      } else {
        auto made = rtl::make_rtl_device(cfg, rtl_options_from_env());
        if (made) dev = std::move(*made);
        else why = made.error().str();
      }
      if (dev) {
        runtime::RunOptions ro;
        ro.timeout_cycles = 20'000'000;
        auto got = runtime::execute(*dev, prog.plan, prog.inputs, ro);
        if (!got) {
          why = "rtl failed: " + got.error().str();
        } else {
          why = compare(*want, *got);
          cycles += got->cycles;
          const Status h = static_cast<rtl::RtlDevice&>(*dev).health();
          if (why.empty() && !h.is_ok()) why = "rtl health: " + h.str();
        }
      }
    }
    for (const auto& c : prog.plan.cores) insns += c.size();
    if (dump || !why.empty()) std::printf("seed %llu program:\n%s", static_cast<unsigned long long>(seed),
                                          disassemble(prog.plan).c_str());
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << why << "\n  reproduce: " << repro(seed);
    }
  }
  std::printf("%llu instructions, %llu rtl cycles\n", static_cast<unsigned long long>(insns),
              static_cast<unsigned long long>(cycles));
}

INSTANTIATE_TEST_SUITE_P(Configs, RandomStreams,
                         ::testing::Values(Mode{"tiny", false}, Mode{"tiny", true}, Mode{"small", false},
                                           Mode{"small", true}, Mode{"default", false}, Mode{"default", true}),
                         [](const auto& info) {
                           return std::string(info.param.config) + (info.param.stress ? "_stress" : "_plain");
                         });

// The generator on its own: legal for every configuration (statically and on
// the golden model), deterministic, and covering every opcode and POSTOP rescale.
TEST(RandomStreamGenerator, LegalOnRefAndCovering) {
  for (const auto& cfg : spec::kConfigs) {
    SCOPED_TRACE(std::string(cfg.name));
    std::array<uint64_t, 16> ops{};
    uint64_t multi_core = 0, failures = 0, wrote = 0, rescale = 0, mul = 0, dw = 0;
    for (uint64_t seed = 1; seed <= 300 && failures < 5; ++seed) {
      const Program prog = generate(seed, cfg);
      const std::string why = check_program(prog, cfg);
      if (!why.empty()) {
        ++failures;
        ADD_FAILURE() << "seed " << seed << ": " << why;
        continue;
      }
      auto res = run_ref(cfg, prog);
      if (!res) {
        ++failures;
        ADD_FAILURE() << "seed " << seed << ": " << res.error().str() << "\n" << disassemble(prog.plan);
        continue;
      }
      for (size_t c = 0; c < res->cores.size(); ++c) {
        uint64_t retired = 0;
        for (auto k : {spec::Counter::INSN_LOAD, spec::Counter::INSN_COMPUTE, spec::Counter::INSN_STORE,
                       spec::Counter::INSN_SYNC})
          retired += res->cores[c].counters[size_t(k)];
        EXPECT_EQ(retired, res->cores[c].instructions) << "seed " << seed << " core " << c;
      }
      multi_core += prog.plan.cores.size() > 1;
      wrote += res->cores[0].counters[size_t(spec::Counter::BYTES_WR)] > 0;
      for (const auto& st : prog.plan.cores)
        for (const auto& in : st) {
          ++ops[spec::get_bits(in, 0, 6) & 15];
          if (spec::get_bits(in, 0, 6) == uint64_t(spec::Opcode::ELTWISE)) {
            const auto e = spec::EltwiseInsn::decode(in);
            mul += e.mul && e.count > 0;
          }
          if (spec::get_bits(in, 0, 6) == uint64_t(spec::Opcode::DWCONV)) {
            const auto d = spec::DwconvInsn::decode(in);
            dw += d.oh * d.ow * d.c > 0;
          }
          if (spec::get_bits(in, 0, 6) != uint64_t(spec::Opcode::POSTOP)) continue;
          const auto p = spec::PostopInsn::decode(in);
          rescale += p.rescale && p.m * p.n > 0;
        }
    }
    for (const auto& o : spec::kOpcodes) EXPECT_GT(ops[size_t(o.op)], 0u) << o.name << " never generated";
    EXPECT_GT(multi_core, 0u);
    EXPECT_GT(rescale, 20u) << "POSTOP rescale with a non-empty tile";
    EXPECT_GT(mul, 20u) << "ELTWISE mul with elements";
    EXPECT_GT(dw, 20u) << "DWCONV with outputs";
    EXPECT_GT(wrote, 250u) << "most streams must store results";
  }
  const auto& tiny = *spec::find_config("tiny");
  EXPECT_EQ(disassemble(generate(42, tiny).plan), disassemble(generate(42, tiny).plan));
  EXPECT_NE(disassemble(generate(42, tiny).plan), disassemble(generate(43, tiny).plan));
}

// The comparison itself notices a flipped output byte and a counter change.
TEST(RandomStreamGenerator, CompareCatchesDifferences) {
  const auto& tiny = *spec::find_config("tiny");
  const Program prog = generate(5, tiny);
  auto a = run_ref(tiny, prog);
  auto b = run_ref(tiny, prog);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(compare(*a, *b), "");
  b->outputs.back().second.data[7] ^= 1;
  EXPECT_NE(compare(*a, *b).find("image: 1 of"), std::string::npos) << compare(*a, *b);
  b->outputs.back().second.data[7] ^= 1;
  ++b->cores[0].counters[size_t(spec::Counter::MACS)];
  EXPECT_NE(compare(*a, *b).find("counter macs"), std::string::npos) << compare(*a, *b);
}

}  // namespace
}  // namespace loom::random_streams
