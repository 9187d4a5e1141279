// `loom bench`: GEMM and convolution benchmarks on any backend, reported
// against the roofline of the chosen configuration.
#include <chrono>
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "driver/compile.h"
#include "ir/builder.h"
#include "runtime/executor.h"

namespace loom::cli {
namespace {

struct ConvShape {
  const char* name;
  int64_t hw, cin, cout, k, stride, pad;
};

// Every distinct convolution shape of ResNet-50 v1.5 (batch 1, 224x224 input).
constexpr ConvShape kResnet50[] = {
    {"conv1", 224, 3, 64, 7, 2, 3},
    {"res2_1x1_64_64", 56, 64, 64, 1, 1, 0},
    {"res2_3x3_64", 56, 64, 64, 3, 1, 1},
    {"res2_1x1_64_256", 56, 64, 256, 1, 1, 0},
    {"res2_1x1_256_64", 56, 256, 64, 1, 1, 0},
    {"res3_1x1_256_128", 56, 256, 128, 1, 1, 0},
    {"res3_3x3_128_s2", 56, 128, 128, 3, 2, 1},
    {"res3_3x3_128", 28, 128, 128, 3, 1, 1},
    {"res3_1x1_128_512", 28, 128, 512, 1, 1, 0},
    {"res3_1x1_512_128", 28, 512, 128, 1, 1, 0},
    {"res3_down_256_512_s2", 56, 256, 512, 1, 2, 0},
    {"res4_1x1_512_256", 28, 512, 256, 1, 1, 0},
    {"res4_3x3_256_s2", 28, 256, 256, 3, 2, 1},
    {"res4_3x3_256", 14, 256, 256, 3, 1, 1},
    {"res4_1x1_256_1024", 14, 256, 1024, 1, 1, 0},
    {"res4_1x1_1024_256", 14, 1024, 256, 1, 1, 0},
    {"res4_down_512_1024_s2", 28, 512, 1024, 1, 2, 0},
    {"res5_1x1_1024_512", 14, 1024, 512, 1, 1, 0},
    {"res5_3x3_512_s2", 14, 512, 512, 3, 2, 1},
    {"res5_3x3_512", 7, 512, 512, 3, 1, 1},
    {"res5_1x1_512_2048", 7, 512, 2048, 1, 1, 0},
    {"res5_1x1_2048_512", 7, 2048, 512, 1, 1, 0},
    {"res5_down_1024_2048_s2", 14, 1024, 2048, 1, 2, 0},
};

struct Common {
  // A timed backend by default: ref computes the same bits but counts no cycles.
#ifdef LOOM_HAVE_TLM
  std::string backend = "tlm", config = "default";
#else
  std::string backend = "ref", config = "default";
#endif
  bool json = false, check = false;
  uint64_t seed = 1;
  int cores = 0;
  std::string fusion = "cost";
  DeviceFlags device;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("--backend", c.backend, "Backend (see `loom info`)")->capture_default_str();
  cmd->add_option("--config", c.config, "Hardware configuration")->capture_default_str();
  cmd->add_option("--seed", c.seed, "Seed for weights and inputs")->capture_default_str();
  cmd->add_option("--cores", c.cores, "Cores to use (0: all)")->check(CLI::Range(0, 64));
  cmd->add_option("--fusion", c.fusion, "Fusion policy: none, greedy or cost")->capture_default_str();
  cmd->add_flag("--check", c.check, "Also check the outputs bit for bit against the direct reference");
  cmd->add_flag("--json", c.json, "Print JSON");
  add_device_flags(cmd, c.device);
}

/// Compiles and runs `g`, then reports cycles against the roofline:
/// roofline_cycles = max(MACs / peak MACs per cycle, compulsory bytes / bytes per cycle).
int bench_graph(ir::Graph& g, const Common& c, uint64_t macs, uint64_t bytes, ordered_json j) {
  auto cfg = find_config(c.config);
  if (!cfg) return fail(cfg.error());
  Status vs = ir::validate(g);
  if (!vs) return fail(vs.error());
  compiler::CompileOptions opt;
  opt.num_cores = c.cores;
  auto fusion = compiler::parse_fusion(c.fusion);
  if (!fusion) return fail(fusion.error());
  opt.fusion = *fusion;
  auto prog = driver::compile_program(driver::Source::graph_of(g), **cfg, opt);
  if (!prog) return fail(prog.error());
  const plan::Segment* comp = &prog->segments.at(0);
  const auto inputs = ir::random_inputs(g, c.seed);
  auto dev = open_backend(c.backend, **cfg, c.device);
  if (!dev) return fail(dev.error());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = runtime::execute(**dev, comp->plan, inputs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!res) return fail(res.error());

  const auto& hw = **cfg;
  const uint32_t cores = uint32_t(comp->plan.cores.size());
  const double peak = double(cores) * hw.array_rows * hw.array_cols;
  const double bw = double(hw.mem_ports) * hw.mem_width_bits / 8.0;
  const double roof = std::max(double(macs) / peak, double(bytes) / bw);
  uint64_t insns = 0, counted_macs = 0;
  for (const auto& cr : res->cores) {
    insns += cr.instructions;
    counted_macs += cr.counters[size_t(spec::Counter::MACS)];
  }
  j["backend"] = c.backend;
  j["config"] = hw.name;
  j["cores"] = cores;
  j["macs"] = macs;
  j["counted_macs"] = counted_macs;
  j["compulsory_bytes"] = bytes;
  j["peak_macs_per_cycle"] = peak;
  j["bytes_per_cycle"] = bw;
  j["roofline_cycles"] = roof;
  j["instructions"] = insns;
  j["has_time"] = res->has_time;
  if (res->has_time) {
    j["cycles"] = res->cycles;
    j["roofline_fraction"] = res->cycles ? roof / double(res->cycles) : 0.0;
    j["sim_cycles_per_second"] = wall > 0 ? double(res->cycles) / wall : 0.0;
  } else {
    j["cycles"] = nullptr;
    j["roofline_fraction"] = nullptr;
    j["sim_cycles_per_second"] = nullptr;
  }
  j["wall_seconds"] = wall;
  bool exact = true;
  if (c.check) {
    auto ref = ir::run_reference(g, inputs);
    if (!ref) return fail(ref.error());
    for (const auto& [name, t] : res->outputs) exact = exact && ref->count(name) && ref->at(name) == t;
    j["bit_exact"] = exact;
  }
  if (c.json) {
    std::cout << versioned("bench", j).dump(2) << "\n";
  } else {
    std::cout << j["bench"].get<std::string>() << " on " << c.backend << "/" << hw.name << ": " << macs << " MACs, "
              << insns << " instructions";
    if (res->has_time)
      std::cout << ", " << res->cycles << " cycles, roofline " << uint64_t(roof) << " cycles ("
                << j["roofline_fraction"].get<double>() << " of roofline)";
    if (c.check) std::cout << (exact ? ", bit-exact" : ", MISMATCH");
    std::cout << "\n";
  }
  if (c.check && !exact) return fail("outputs differ from the direct reference");
  return 0;
}

}  // namespace

void register_bench_fusion(CLI::App* bench);  // cmd_bench_fusion.cc

void register_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks reported against the configuration's roofline");
  bench->require_subcommand(1);
  register_bench_fusion(bench);

  struct GemmOpts {
    Common c;
    int64_t m = 256, n = 256, k = 256;
  };
  auto go = std::make_shared<GemmOpts>();
  auto* gemm = bench->add_subcommand("gemm", "GEMM (M x K) * (K x N) of int8 with bias and requantization");
  gemm->add_option("--m", go->m, "Rows of A and C")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  gemm->add_option("--n", go->n, "Columns of B and C")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  gemm->add_option("--k", go->k, "Reduction length")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  add_common(gemm, go->c);
  gemm->callback([go] {
    ir::GraphBuilder b("gemm", go->c.seed);
    const auto a = b.input("a", {go->m, go->k});
    b.output(b.gemm("fc", a, go->n));
    ordered_json j{{"bench", "gemm"}, {"m", go->m}, {"n", go->n}, {"k", go->k}};
    const uint64_t macs = uint64_t(go->m * go->n * go->k);
    const uint64_t bytes = uint64_t(go->m * go->k + go->k * go->n + go->m * go->n + 12 * go->n);
    const int rc = bench_graph(b.graph(), go->c, macs, bytes, j);
    if (rc) return defer_exit(rc);
  });

  struct ConvOpts {
    Common c;
    std::string layer;
    int64_t hw = 56, cin = 64, cout = 64, kernel = 3, stride = 1, pad = 1;
    bool list = false;
  };
  auto co = std::make_shared<ConvOpts>();
  auto* conv = bench->add_subcommand("conv", "Convolution of int8 (NHWC), e.g. a ResNet-50 layer");
  conv->add_option("--layer", co->layer, "A ResNet-50 layer shape by name (see --list)");
  conv->add_flag("--list", co->list, "List the ResNet-50 layer shapes");
  conv->add_option("--hw", co->hw, "Input height and width")->check(CLI::Range(1, 4096))->capture_default_str();
  conv->add_option("--cin", co->cin, "Input channels")->check(CLI::Range(1, 65536))->capture_default_str();
  conv->add_option("--cout", co->cout, "Output channels")->check(CLI::Range(1, 65536))->capture_default_str();
  conv->add_option("--kernel", co->kernel, "Kernel size")->check(CLI::Range(1, 15))->capture_default_str();
  conv->add_option("--stride", co->stride, "Stride")->check(CLI::Range(1, 8))->capture_default_str();
  conv->add_option("--pad", co->pad, "Padding")->check(CLI::Range(0, 14))->capture_default_str();
  add_common(conv, co->c);
  conv->callback([co] {
    if (co->list) {
      for (const auto& s : kResnet50)
        std::cout << s.name << ": " << s.hw << "x" << s.hw << "x" << s.cin << " -> " << s.cout << ", " << s.k << "x"
                  << s.k << " stride " << s.stride << " pad " << s.pad << "\n";
      return;
    }
    ConvShape s{"custom", co->hw, co->cin, co->cout, co->kernel, co->stride, co->pad};
    if (!co->layer.empty()) {
      const ConvShape* f = nullptr;
      for (const auto& r : kResnet50)
        if (co->layer == r.name) f = &r;
      if (!f) return defer_exit(fail("--layer: unknown ResNet-50 layer '" + co->layer + "' (see --list)"));
      s = *f;
    }
    if (s.pad >= s.k) return defer_exit(fail("--pad: must be smaller than --kernel"));
    ir::GraphBuilder b("conv", co->c.seed);
    const auto x = b.input("x", {1, s.hw, s.hw, s.cin});
    ir::ConvSpec cs;
    cs.cout = s.cout, cs.kh = cs.kw = s.k, cs.stride = s.stride, cs.pad = s.pad;
    b.output(b.conv("conv", x, cs));
    const int64_t o = (s.hw + 2 * s.pad - s.k) / s.stride + 1;
    const uint64_t macs = uint64_t(o * o * s.cout * s.k * s.k * s.cin);
    const uint64_t bytes = uint64_t(s.hw * s.hw * s.cin + s.k * s.k * s.cin * s.cout + o * o * s.cout + 12 * s.cout);
    ordered_json j{{"bench", "conv"}, {"layer", s.name}, {"hw", s.hw},         {"cin", s.cin},
                   {"cout", s.cout},  {"kernel", s.k},   {"stride", s.stride}, {"pad", s.pad}};
    const int rc = bench_graph(b.graph(), co->c, macs, bytes, j);
    if (rc) return defer_exit(rc);
  });
}

}  // namespace loom::cli
