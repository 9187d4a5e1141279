// `loom bench fusion`: runs the fusion policies none / greedy / cost on
// network slices (built in, a JSON graph, or the device segments of an ONNX
// model) and reports measured cycles per policy, whether `cost` is within 2 %
// of the better of the other two, where `greedy` loses and the compiler's
// reason, and the cost model's predicted cycles against the backend per layer.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "driver/compile.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "ir/builder.h"
#include "runtime/executor.h"

namespace loom::cli {
namespace {

using ir::ConvSpec;
using ir::GraphBuilder;
using ir::OpKind;

/// ResNet-50 bottleneck: 1x1 reduce + relu, 3x3 + relu, 1x1 expand, residual add + relu.
ir::Graph bottleneck(int64_t hw, int64_t c, int64_t mid) {
  GraphBuilder b("resnet50_bottleneck_" + std::to_string(hw) + "x" + std::to_string(c));
  const auto x = b.input("x", {1, hw, hw, c});
  auto y = b.unary("relu1", OpKind::Relu, b.conv("conv1", x, {mid, 1, 1, 1, 0, 1}));
  y = b.unary("relu2", OpKind::Relu, b.conv("conv2", y, {mid, 3, 3, 1, 1, 1}));
  y = b.conv("conv3", y, {c, 1, 1, 1, 0, 1});
  b.output(b.unary("relu3", OpKind::Relu, b.add("add", y, x)));
  return std::move(b.graph());
}

/// MobileNetV2 inverted residual: 1x1 expand + relu6, 3x3 depthwise + relu6, 1x1 project, residual add.
ir::Graph inverted_residual(int64_t hw, int64_t c, int64_t expand) {
  GraphBuilder b("mobilenetv2_ir_" + std::to_string(hw) + "x" + std::to_string(c));
  const auto x = b.input("x", {1, hw, hw, c});
  const int64_t e = c * expand;
  auto y = b.unary("clip1", OpKind::Clip, b.conv("expand", x, {e, 1, 1, 1, 0, 1}), 0.0, 6.0);
  y = b.unary("clip2", OpKind::Clip, b.conv("dw", y, {e, 3, 3, 1, 1, e}), 0.0, 6.0);
  y = b.conv("project", y, {c, 1, 1, 1, 0, 1});
  b.output(b.add("add", y, x));
  return std::move(b.graph());
}

/// BERT encoder feed-forward GEMM chain: d -> 4d (+ relu in place of GELU) -> d, residual add.
ir::Graph bert_ffn(int64_t seq, int64_t d) {
  GraphBuilder b("bert_ffn_" + std::to_string(seq) + "x" + std::to_string(d));
  const auto x = b.input("x", {seq, d});
  auto y = b.gemm("attn_out", x, d);
  y = b.unary("act", OpKind::Relu, b.gemm("ffn1", y, 4 * d));
  y = b.gemm("ffn2", y, d);
  b.output(b.add("add", y, x));
  return std::move(b.graph());
}

/// Conv + residual add with the conv's output scale and weights in {-1, 0, 1}:
/// the add can be folded into POSTOP bit-exactly, so greedy and cost differ.
ir::Graph residual_exact(int64_t hw, int64_t c, int64_t k) {
  GraphBuilder b("residual_exact_" + std::to_string(hw) + "x" + std::to_string(c) + "_k" + std::to_string(k));
  const auto x = b.input("x", {1, hw, hw, c});
  const auto y = b.conv("conv", x, {c, k, k, 1, k / 2, 1});
  ir::TensorInfo& w = b.graph().tensor("conv.w");
  w.q.zero_point = 0;
  ir::Rng rng(5);
  for (int64_t i = 0; i < w.data.numel(); ++i) w.data.i8()[i] = int8_t(rng.range(-1, 1));
  const auto& yt = b.graph().tensor(y);
  b.output(b.add("add", y, x, yt.q.scale[0], yt.q.zero_point));
  return std::move(b.graph());
}

struct Workload {
  std::string model;
  ir::Graph g;
  int segment = -1;  // device segment of an ONNX model, -1 otherwise
};

/// The built-in slices at a few shapes; `size` "small" keeps every run short.
std::vector<Workload> builtin(const std::string& model, const std::string& size) {
  std::vector<Workload> v;
  const bool big = size == "full";
  if (model == "resnet50_bottleneck" || model == "all") {
    if (big) {
      v.push_back({"resnet50_bottleneck", bottleneck(56, 256, 64)});
      v.push_back({"resnet50_bottleneck", bottleneck(28, 512, 128)});
      v.push_back({"resnet50_bottleneck", bottleneck(14, 1024, 256)});
    } else {
      v.push_back({"resnet50_bottleneck", bottleneck(14, 64, 16)});
      v.push_back({"resnet50_bottleneck", bottleneck(7, 128, 32)});
    }
  }
  if (model == "mobilenetv2_ir" || model == "all") {
    if (big) {
      v.push_back({"mobilenetv2_ir", inverted_residual(56, 24, 6)});
      v.push_back({"mobilenetv2_ir", inverted_residual(14, 64, 6)});
    } else {
      v.push_back({"mobilenetv2_ir", inverted_residual(14, 16, 6)});
      v.push_back({"mobilenetv2_ir", inverted_residual(7, 32, 6)});
    }
  }
  if (model == "residual_exact" || model == "all") {
    for (auto [hw, c, k] : big ? std::vector<std::array<int64_t, 3>>{{28, 64, 1}, {14, 256, 3}, {28, 128, 3}}
                               : std::vector<std::array<int64_t, 3>>{{8, 64, 1}, {8, 128, 3}, {16, 32, 3}})
      v.push_back({"residual_exact", residual_exact(hw, c, k)});
  }
  if (model == "bert_ffn" || model == "all") {
    for (int64_t seq : big ? std::vector<int64_t>{32, 128, 384} : std::vector<int64_t>{16, 64})
      v.push_back({"bert_ffn", bert_ffn(seq, big ? 768 : 64)});
  }
  return v;
}

/// The single-node graph of `g.nodes[i]`: its activation inputs become graph inputs.
ir::Graph single_node(const ir::Graph& g, size_t i) {
  ir::Graph s;
  const ir::Node& n = g.nodes[i];
  s.name = g.name + "." + n.name;
  for (const auto& in : n.inputs) {
    if (in.empty()) continue;
    s.tensors[in] = g.tensor(in);
    if (!g.tensor(in).is_const && std::find(s.inputs.begin(), s.inputs.end(), in) == s.inputs.end())
      s.inputs.push_back(in);
  }
  for (const auto& out : n.outputs) {
    s.tensors[out] = g.tensor(out);
    s.outputs.push_back(out);
  }
  s.nodes.push_back(n);
  return s;
}

struct Opts {
  std::string model = "all", backend = "tlm", config = "tiny", size = "small";
  DeviceFlags device;
  bool json = false, per_layer = true;
  int cores = 0;
  uint64_t seed = 1;
};

struct RunOut {
  uint64_t cycles = 0, predicted = 0, insns = 0, dram = 0;
  bool exact = false;
  std::vector<std::string> why;               // the groups the cost policy refused, with the predicted numbers
  std::map<std::string, std::string> groups;  // fusion group -> the compiler's decision on it
};

/// A fusion decision (a group folded or kept separate), keyed by group.
bool is_fusion_decision(const compiler::Decision& d) {
  return d.choice.rfind("folded", 0) == 0 || d.choice.rfind("kept separate", 0) == 0;
}

Expected<RunOut> run_policy(const ir::Graph& g, const spec::HwConfig& cfg, const Opts& o, compiler::Fusion f,
                            const std::map<std::string, Tensor>& inputs, const std::map<std::string, Tensor>& ref) {
  compiler::CompileOptions opt;
  opt.num_cores = o.cores;
  opt.fusion = f;
  auto prog = driver::compile_program(driver::Source::graph_of(g), cfg, opt);
  if (!prog) return prog.error();
  const plan::Segment* comp = &prog->segments.at(0);
  auto dev = open_backend(o.backend, cfg, o.device);
  if (!dev) return dev.error();
  auto res = runtime::execute(**dev, comp->plan, inputs);
  if (!res) return res.error();
  RunOut r;
  for (const auto& d : comp->decisions) {
    if (d.choice == "kept separate (cost)") r.why.push_back(d.node + ": " + d.text);
    if (is_fusion_decision(d)) r.groups[d.node] = d.text;
  }
  r.cycles = res->has_time ? res->cycles : 0;
  r.predicted = comp->predicted_cycles;
  for (const auto& p : comp->predicted) r.insns += p.insns, r.dram += p.dram_read + p.dram_written;
  r.exact = true;
  for (const auto& [name, t] : res->outputs) r.exact = r.exact && ref.count(name) && ref.at(name) == t;
  return r;
}

/// The groups greedy and cost decided differently (one folds, the other
/// keeps separate), each with both decisions and the compiler's reason.
ordered_json differing_groups(const RunOut& greedy, const RunOut& cost) {
  ordered_json v = ordered_json::array();
  for (const auto& [group, gt] : greedy.groups) {
    const auto it = cost.groups.find(group);
    const std::string ct = it == cost.groups.end() ? std::string() : it->second;
    if (ct.rfind("folded", 0) == 0 && gt.rfind("folded", 0) == 0) continue;
    if (ct.rfind("kept", 0) == 0 && gt.rfind("kept", 0) == 0) continue;
    std::string reason = "the cost model predicts the fold slower";
    if (ct.find("residual tile in IN") != std::string::npos)
      reason =
          "scratchpad: the residual tile shares IN with the A tile, so the fused conv gets smaller tiles "
          "(more K steps and reloads) whose extra cycles exceed the separate add";
    v.push_back(ordered_json{{"group", group}, {"greedy", gt}, {"cost", ct}, {"reason", reason}});
  }
  return v;
}

/// The workloads of `--model`: built-in slices, a JSON graph, or the device
/// segments of an ONNX model (partitioned and folded as `loom run` does).
Expected<std::vector<Workload>> workloads(const Opts& o, const spec::HwConfig& cfg) {
  std::vector<Workload> work;
  if (o.model.size() > 5 && o.model.substr(o.model.size() - 5) == ".json") {
    auto g = load_graph(o.model);
    if (!g) return g.error();
    work.push_back({o.model, std::move(*g)});
  } else if (input_kind(o.model) == InputKind::Onnx) {
    compiler::CompileOptions co;
    co.num_cores = o.cores;
    auto prog = driver::compile_program(driver::Source::onnx_file(o.model), cfg, co);
    if (!prog) return prog.error();
    if (prog->segments.empty())
      return make_error("--model " + o.model, "has no device segment (every op runs on the host)");
    for (size_t k = 0; k < prog->segments.size(); ++k) {
      Workload w{o.model, std::move(prog->segments[k].graph), int(k)};
      w.g.name = std::filesystem::path(o.model).parent_path().filename().string() + "/segment" + std::to_string(k);
      work.push_back(std::move(w));
    }
  } else {
    work = builtin(o.model, o.size);
    if (work.empty())
      return make_error("--model", "unknown model '" + o.model +
                                       "' (resnet50_bottleneck, mobilenetv2_ir, bert_ffn, residual_exact, all, or a "
                                       ".json graph)");
  }
  return work;
}

int bench_fusion(const Opts& o) {
  auto cfg = find_config(o.config);
  if (!cfg) return fail(cfg.error());
  if (o.size != "small" && o.size != "full") return fail("--size: '" + o.size + "' is not small or full");
  auto wl = workloads(o, **cfg);
  if (!wl) return fail(wl.error());
  std::vector<Workload>& work = *wl;
  const compiler::Fusion pols[] = {compiler::Fusion::None, compiler::Fusion::Greedy, compiler::Fusion::Cost};
  ordered_json out{{"bench", "fusion"}, {"backend", o.backend}, {"config", (*cfg)->name}, {"size", o.size}};
  out["workloads"] = ordered_json::array();
  std::vector<double> errs;
  bool all_ok = true, all_exact = true;
  uint64_t total[3] = {0, 0, 0};
  for (auto& w : work) {
    Status vs = ir::validate(w.g);
    if (!vs) return fail(vs.error());
    const auto inputs = ir::random_inputs(w.g, o.seed);
    auto ref = ir::run_reference(w.g, inputs);
    if (!ref) return fail(ref.error());
    ordered_json jw{{"model", w.model}, {"graph", w.g.name}};
    if (w.segment >= 0) jw["segment"] = w.segment, jw["nodes"] = w.g.nodes.size();
    RunOut r[3];
    for (int i = 0; i < 3; ++i) {
      auto x = run_policy(w.g, **cfg, o, pols[i], inputs, *ref);
      if (!x) return fail(Status(x.error()).context(w.g.name + " fusion " + compiler::fusion_name(pols[i])).error());
      r[i] = *x;
      total[i] += r[i].cycles;
      jw[compiler::fusion_name(pols[i])] = ordered_json{{"cycles", r[i].cycles},
                                                        {"predicted_cycles", r[i].predicted},
                                                        {"instructions", r[i].insns},
                                                        {"predicted_dram_bytes", r[i].dram},
                                                        {"bit_exact", r[i].exact}};
      all_exact = all_exact && r[i].exact;
    }
    const uint64_t best = std::min(r[0].cycles, r[1].cycles);
    const bool ok = double(r[2].cycles) <= 1.02 * double(best);
    all_ok = all_ok && ok;
    jw["cost_within_2pct"] = ok;
    const bool loses = r[1].cycles > std::min(r[0].cycles, r[2].cycles);
    jw["greedy_loses"] = loses;
    jw["why"] = r[2].why;
    const ordered_json differ = differing_groups(r[1], r[2]);
    jw["groups_greedy_and_cost_decide_differently"] = differ;
    if (loses) {
      jw["greedy_loses_by_cycles"] = r[1].cycles - std::min(r[0].cycles, r[2].cycles);
      std::vector<std::string> because;
      for (const auto& d : differ)
        because.push_back(d["group"].get<std::string>() + ": " + d["reason"].get<std::string>());
      if (r[1].cycles > r[0].cycles)
        because.push_back("slower than none: " + std::to_string(r[1].groups.size()) +
                          " fusion decisions, the folds measure slower than the unfused plan");
      jw["greedy_loses_because"] = because;
    }
    jw["greedy_vs_none"] = r[0].cycles ? double(r[1].cycles) / double(r[0].cycles) : 0.0;
    jw["cost_vs_none"] = r[0].cycles ? double(r[2].cycles) / double(r[0].cycles) : 0.0;
    if (o.per_layer) {
      // Predicted against measured per layer: each node compiled and run alone.
      ordered_json layers = ordered_json::array();
      for (size_t i = 0; i < w.g.nodes.size(); ++i) {
        ir::Graph s = single_node(w.g, i);
        Status ss = ir::validate(s);
        if (!ss) return fail(ss.error());
        const auto in = ir::random_inputs(s, o.seed);
        auto rr = ir::run_reference(s, in);
        if (!rr) return fail(rr.error());
        auto x = run_policy(s, **cfg, o, compiler::Fusion::None, in, *rr);
        if (!x) return fail(x.error());
        if (x->insns == 0) {  // reshape/flatten: an alias, no instructions to predict
          layers.push_back(ordered_json{{"layer", w.g.nodes[i].name}, {"alias", true}});
          continue;
        }
        const double err = x->cycles ? (double(x->predicted) - double(x->cycles)) / double(x->cycles) : 0.0;
        if (x->cycles) errs.push_back(std::fabs(err));
        layers.push_back(ordered_json{{"layer", w.g.nodes[i].name},
                                      {"op", ir::op_name(w.g.nodes[i].op)},
                                      {"measured", x->cycles},
                                      {"predicted", x->predicted},
                                      {"error", err}});
      }
      jw["layers"] = layers;
    }
    if (!o.json) {
      std::cout << w.g.name << ": none " << r[0].cycles << ", greedy " << r[1].cycles << ", cost " << r[2].cycles
                << " cycles (predicted " << r[0].predicted << " / " << r[1].predicted << " / " << r[2].predicted << ")"
                << (ok ? "" : "  COST > 1.02 x best") << (loses ? "  greedy loses" : "") << "\n";
      for (const auto& d : differ)
        std::cout << "  " << d["group"].get<std::string>()
                  << ": greedy folds, cost keeps separate: " << d["reason"].get<std::string>() << "\n";
    }
    out["workloads"].push_back(jw);
  }
  if (!work.empty() && work[0].segment >= 0) {
    // The whole model: its device segments one after the other.
    const uint64_t best = std::min(total[0], total[1]);
    out["model"] = ordered_json{{"model", o.model}, {"segments", work.size()},
                                {"none", total[0]}, {"greedy", total[1]},
                                {"cost", total[2]}, {"cost_within_2pct", double(total[2]) <= 1.02 * double(best)}};
    if (!o.json)
      std::cout << o.model << " (" << work.size() << " device segments): none " << total[0] << ", greedy " << total[1]
                << ", cost " << total[2] << " cycles\n";
  }
  double mean = 0, worst = 0;
  for (double e : errs) mean += e, worst = std::max(worst, e);
  if (!errs.empty()) mean /= double(errs.size());
  out["layer_error_mean"] = mean;
  out["layer_error_worst"] = worst;
  out["layers_measured"] = errs.size();
  out["cost_within_2pct_everywhere"] = all_ok;
  out["bit_exact"] = all_exact;
  if (o.json)
    std::cout << versioned("bench_fusion", out).dump(2) << "\n";
  else if (o.per_layer)
    std::cout << "per-layer predicted vs " << o.backend << ": mean |error| " << mean * 100 << " %, worst "
              << worst * 100 << " % over " << errs.size() << " layers\n";
  if (!all_exact) return fail("a compiled plan differs from the direct reference");
  return 0;
}

}  // namespace

void register_bench_fusion(CLI::App* bench) {
  auto o = std::make_shared<Opts>();
  auto* cmd = bench->add_subcommand("fusion", "Fusion policies none/greedy/cost on network slices, measured");
  cmd->add_option("--model", o->model,
                  "Slice: resnet50_bottleneck, mobilenetv2_ir, bert_ffn, residual_exact, all, a .json graph, "
                  "or an .onnx model (its device segments)")
      ->capture_default_str();
  cmd->add_option("--size", o->size, "Shapes of the built-in slices: small or full")->capture_default_str();
  cmd->add_option("--backend", o->backend, "Backend (see `loom info`)")->capture_default_str();
  cmd->add_option("--config", o->config, "Hardware configuration")->capture_default_str();
  cmd->add_option("--cores", o->cores, "Cores to use (0: all)")->check(CLI::Range(0, 64));
  cmd->add_option("--seed", o->seed, "Seed for inputs")->capture_default_str();
  add_device_flags(cmd, o->device);
  cmd->add_flag("!--no-layers", o->per_layer, "Skip the per-layer predicted-vs-measured runs");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    if (int rc = bench_fusion(*o); rc != 0) return defer_exit(rc);
  });
}

}  // namespace loom::cli
