#include "serve/service.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/parse.h"
#include "common/tensor_io.h"
#include "compiler/compiler.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace loom::serve {

namespace {

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t plan_hash(const plan::Plan& p, const std::string& backend) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, backend.data(), backend.size());
  h = fnv(h, p.config.data(), p.config.size());
  h = fnv(h, p.compiler.data(), p.compiler.size());
  h = fnv(h, &p.memory_bytes, sizeof p.memory_bytes);
  h = fnv(h, p.constants.data(), p.constants.size());
  for (const auto& c : p.cores)
    for (const auto& in : c) h = fnv(h, in.w.data(), in.w.size() * sizeof(uint32_t));
  return h;
}

// Cores of port 0 in order (spec::mem_port_of).
std::vector<int> port0_cores(const spec::HwConfig& cfg) {
  std::vector<int> v;
  for (unsigned c = 0; c < cfg.cores; ++c)
    if (spec::mem_port_of(cfg, c) == 0) v.push_back(int(c));
  return v;
}

// `copies` copies of a one-core plan as one plan: copy j runs on core
// cores[j] with its own image at j x stride from the base; every other core
// of the plan runs END only. Inputs are renamed "name@j".
// A one-core plan's semaphores (its layer barriers) are renumbered per copy:
// copy j uses sem_id + j x (highest id + 1), so no copy passes a barrier on
// another's signal (runtime::renumber_semaphores).
using runtime::max_semaphore;
using runtime::renumber_semaphores;

Expected<plan::Plan> replicate(const plan::Plan& p, const std::vector<int>& cores, int copies,
                               const std::string& key, uint32_t semaphores) {
  if (p.cores.size() != 1 || !p.tasks.empty() || !p.unit_calls.empty())
    return make_error("port contention: " + key,
                      "the plan is not one core stream (cores, tasks or HLS units); set port_contention in the workload");
  const uint64_t sems = p.semaphores_used ? max_semaphore(p.cores[0]) + 1 : 0;
  if (sems * uint64_t(copies) > semaphores)
    return make_error("port contention: " + key, std::to_string(copies) + " copies need " +
                                                     std::to_string(sems * uint64_t(copies)) + " semaphores, the fabric has " +
                                                     std::to_string(semaphores) + "; set port_contention in the workload");
  const uint64_t stride = (std::max<uint64_t>(p.memory_bytes, 1) + 4095) / 4096 * 4096;
  plan::Plan r;
  r.config = p.config;
  r.graph_name = p.graph_name + " x" + std::to_string(copies);
  r.compiler = p.compiler;
  r.memory_bytes = stride * uint64_t(copies - 1) + p.memory_bytes;
  r.constants_offset = p.constants_offset;
  if (!p.constants.empty()) {
    r.constants.assign(size_t(stride * uint64_t(copies - 1)) + p.constants.size(), 0);
    for (int j = 0; j < copies; ++j)
      std::copy(p.constants.begin(), p.constants.end(), r.constants.begin() + ptrdiff_t(stride * uint64_t(j)));
  }
  r.cores.assign(size_t(cores[size_t(copies - 1)] + 1), {spec::EndInsn{}.encode()});
  for (int j = 0; j < copies; ++j) {
    r.cores[size_t(cores[size_t(j)])] =
        renumber_semaphores(runtime::relocate(p.cores[0], stride * uint64_t(j)), sems * uint64_t(j));
    for (auto b : p.inputs) {
      b.name.append("@").append(std::to_string(j));
      b.offset += stride * uint64_t(j);
      r.inputs.push_back(b);
    }
  }
  for (int j = 0; j < copies; ++j)
    for (auto b : p.outputs) {
      b.name.append("@").append(std::to_string(j));
      b.offset += stride * uint64_t(j);
      r.outputs.push_back(b);
    }
  r.placement = p.placement;
  r.semaphores_used = uint32_t(sems * uint64_t(copies));
  return r;
}

}  // namespace

Expected<plan::Plan> replicate_on_port(const plan::Plan& one, const spec::HwConfig& cfg, int copies,
                                       const std::string& what) {
  const auto cores = port0_cores(cfg);
  if (copies < 1 || copies > int(cores.size()))
    return make_error("port contention: " + what, std::to_string(copies) + " copies, but port 0 of '" +
                                                      std::string(cfg.name) + "' has " + std::to_string(cores.size()) +
                                                      " cores");
  return replicate(one, cores, copies, what, cfg.semaphores);
}

/// An ONNX stream's program: its segments' plans and inputs, and the host ops.
struct ServiceModel::Onnx {
  OnnxInfo info;
  std::vector<std::pair<plan::Plan, std::map<std::string, Tensor>>> parts;
  uint64_t host_cycles = 0;
  // Live mode: the program's device steps in order (segment, host cycles
  // before it), the host cycles after the last, and each segment's golden
  // outputs (computed on first use).
  std::vector<std::pair<size_t, uint64_t>> order;
  uint64_t host_after = 0;
  std::vector<std::vector<std::pair<std::string, Tensor>>> expected;
  bool checked = false, golden_done = false;
};

ir::Graph gemm_chain(const ModelSpec& m, int64_t rows) {
  ir::GraphBuilder b("gemm_chain", 7);
  std::string x = b.input("x", {rows, m.hidden});
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string p = std::string("l").append(std::to_string(l));
    x = b.gemm(p + ".up", x, m.ffn);
    x = b.unary(p + ".relu", ir::OpKind::Relu, x);
    x = b.gemm(p + ".down", x, m.hidden);
  }
  b.output(x);
  return b.graph();
}

std::string model_key(const ModelSpec& m) {
  if (m.kind == ModelSpec::Kind::Graph) return m.name;
  if (m.kind == ModelSpec::Kind::Onnx) return m.zoo_name.empty() ? m.path : m.name;
  return "gemm_chain(h=" + std::to_string(m.hidden) + ",f=" + std::to_string(m.ffn) + ",l=" +
         std::to_string(m.layers) + ")";
}

ServiceModel::ServiceModel(const spec::HwConfig& cfg, std::string backend, std::string cache_dir,
                           runtime::DeviceOptions dev)
    : cfg_(cfg), backend_(std::move(backend)), cache_dir_(std::move(cache_dir)), dev_opts_(std::move(dev)) {}
ServiceModel::~ServiceModel() = default;

int ServiceModel::cores_per_port() const { return int(port0_cores(cfg_).size()); }

Expected<uint64_t> ServiceModel::cycles(const ModelSpec& m, int64_t seq, int batch, int port_cores) {
  const std::string key = model_key(m);
  const int k = std::clamp(port_cores, 1, cores_per_port());
  const bool fixed = m.kind != ModelSpec::Kind::GemmChain;  // one shape: a batch runs the plan batch times
  const Mapper* mapper = nullptr;
  for (const auto& [at, f] : epochs_)
    if (at <= now_us_) mapper = &f;
  if (mapper && !fixed) {
    const MappedRun mr = (*mapper)(m, seq, batch);
    const int64_t total = seq * batch, rows = mr.rows > 0 ? mr.rows : total;
    const uint64_t chunks = uint64_t((total + rows - 1) / rows);
    auto mit = mapped_.find({key, rows, mr.tag, k});
    if (mit != mapped_.end()) return chunks * mit->second;
    auto r = measure(m, rows, key, rows, 1, mr.options, mr.tag, k);
    if (!r) return r;
    mapped_[{key, rows, mr.tag, k}] = *r;
    return chunks * *r;
  }
  const int run_batch = fixed ? 1 : batch;
  auto it = mem_.find({key, seq, run_batch, k});
  uint64_t c = 0;
  if (it != mem_.end()) {
    c = it->second;
  } else {
    auto r = measure(m, seq * run_batch, key, seq, run_batch, {}, {}, k);
    if (!r) return r;
    c = *r;
    mem_[{key, seq, run_batch, k}] = c;
  }
  return fixed ? c * uint64_t(batch) : c;
}

Expected<ServiceModel::Onnx*> ServiceModel::onnx(const ModelSpec& m) {
  const std::string key = model_key(m);
  if (auto it = onnx_.find(key); it != onnx_.end()) return it->second.get();
  std::string path = m.path;
  if (path.empty()) {
    if (!zoo_builder_) return make_error(m.name, "zoo models are built by the loom command line (loom zoo build)");
    auto p = zoo_builder_(m);
    if (!p) return p.error();
    path = *p;
  }
  auto model = onnxfe::load_model(path);
  if (!model) return model.error();
  onnxfe::ProgramOptions po;
  po.compile.num_cores = 1;
  auto prog = onnxfe::build_program(std::move(*model), {}, cfg_, po);
  if (!prog) return prog.error();
  auto o = std::make_unique<Onnx>();
  o->info.path = path;
  o->info.segments = prog->segments.size();
  o->info.fallback_ops = prog->fallback_ops;
  double host_ns = 0, since = 0;  // since: host ns since the last device step
  const auto to_cycles = [&](double ns) { return uint64_t(std::llround(ns * double(cfg_.clock_mhz) / 1000.0)); };
  for (const auto& st : prog->program.steps) {
    if (st.on_device()) {
      o->order.emplace_back(size_t(st.segment), to_cycles(since));
      since = 0;
      continue;
    }
    const double before = host_ns;
    host_ns += kHostOpNs;
    for (const auto& out : prog->model.nodes[st.host].outputs) {
      auto t = prog->model.types.find(out);
      if (t == prog->model.types.end() || !t->second.has_shape) continue;
      double n = 1;
      for (int64_t d : t->second.shape) n *= double(std::max<int64_t>(d, 1));
      host_ns += kHostElemNs * n;
    }
    since += host_ns - before;
  }
  o->host_after = to_cycles(since);
  o->info.host_us = host_ns / 1000.0;
  o->host_cycles = uint64_t(std::llround(host_ns * double(cfg_.clock_mhz) / 1000.0));
  for (size_t k = 0; k < prog->segments.size(); ++k)
    o->parts.emplace_back(std::move(prog->program.segments[k].plan), ir::random_inputs(prog->segments[k].graph, 1));
  Onnx* raw = o.get();
  onnx_[key] = std::move(o);
  return raw;
}

Expected<const OnnxInfo*> ServiceModel::onnx_info(const ModelSpec& m) {
  auto o = onnx(m);
  if (!o) return o.error();
  return &(*o)->info;
}

Expected<runtime::Device*> ServiceModel::device() {
  if (!dev_) {
    auto d = runtime::make_device(backend_, cfg_, dev_opts_);
    if (!d) return d.error();
    dev_ = std::move(*d);
  }
  if (!dev_->has_time())
    return make_error("--backend " + backend_, "the backend models no time; serving needs a timed backend (tlm, rtl)");
  return dev_.get();
}

Expected<uint64_t> ServiceModel::measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq,
                                         int batch, const compiler::CompileOptions& opts, const std::string& tag,
                                         int copies) {
  uint64_t total = 0;
  bool disk = true;
  if (m.kind == ModelSpec::Kind::Onnx) {
    auto o = onnx(m);
    if (!o) return o.error();
    total = (*o)->host_cycles;  // the host ops run on the CPU: no port contention
    for (const auto& [p, in] : (*o)->parts) {
      bool d = false;
      auto c = time_plan(p, in, key, copies, d);
      if (!c) return c;
      total += *c;
      disk = disk && d;
    }
  } else {
    ir::Graph g;
    if (m.kind == ModelSpec::Kind::Graph) {
      auto r = ir::parse_graph_json(m.name);
      if (!r) return r.error();
      g = std::move(*r);
    } else {
      g = gemm_chain(m, rows);
    }
    if (Status s = ir::validate(g); !s) return s.error();
    compiler::CompileOptions co = opts;
    co.num_cores = 1;
    auto cr = compiler::compile(g, cfg_, co);
    if (!cr) return cr.error();
    auto c = time_plan(cr->plan, ir::random_inputs(g, 1), key, copies, disk);
    if (!c) return c;
    total = *c;
  }
  if (total == 0) return make_error("--backend " + backend_, "the backend reported 0 cycles for " + key);
  table_.push_back({key, seq, batch, total, disk, tag, copies});
  return total;
}

Expected<uint64_t> ServiceModel::time_plan(const plan::Plan& one, const std::map<std::string, Tensor>& inputs,
                                           const std::string& key, int copies, bool& from_disk) {
  plan::Plan merged;
  std::map<std::string, Tensor> merged_in;
  if (copies > 1) {
    auto r = replicate_on_port(one, cfg_, copies, key);
    if (!r) return r.error();
    merged = std::move(*r);
    for (int j = 0; j < copies; ++j)
      for (const auto& [n, t] : inputs) merged_in[n + "@" + std::to_string(j)] = t;
  }
  const plan::Plan& p = copies > 1 ? merged : one;
  const auto& in = copies > 1 ? merged_in : inputs;
  const std::string dk = dev_opts_.key();
  const uint64_t h = plan_hash(p, dk.empty() ? backend_ : backend_ + "|" + dk);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::filesystem::path file;
  from_disk = false;
  if (!cache_dir_.empty()) {
    file = std::filesystem::path(cache_dir_) / (std::string(hex) + ".cycles");
    // A cache entry is one decimal number and a newline; anything else (a
    // special file, a huge or a garbled one) is ignored and re-measured.
    auto text = read_file_bytes(file.string(), 64);  // a missing entry is an error too
    if (text && !text->empty() && text->back() == '\n') text->pop_back();
    const auto c = text ? parse_int64(*text) : std::nullopt;
    if (c && *c > 0) {
      ++disk_hits_;
      from_disk = true;
      return uint64_t(*c);
    }
  }
  if (frozen_)
    return make_error("loom serve --mode live", "service time of " + key +
                                                   " was not measured before the live run (the device is serving)");
  auto dev = device();
  if (!dev) return dev.error();
  auto res = runtime::execute(**dev, p, in);
  if (!res) return res.error();
  ++runs_;
  if (res->cycles == 0) return make_error("--backend " + backend_, "the backend reported 0 cycles for " + key);
  if (!file.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    const auto tmp = file.string() + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream f(tmp);
      f << res->cycles << "\n";
    }
    std::filesystem::rename(tmp, file, ec);  // atomic; a failed cache write only costs a re-measurement
  }
  return res->cycles;
}

Status ServiceModel::golden(const plan::Plan& p, const std::map<std::string, Tensor>& in,
                            std::vector<std::pair<std::string, Tensor>>& out, bool& checked) {
  checked = false;
  if (!ref_) {
    bool have = false;
    for (const auto& b : runtime::list_backends()) have = have || b.name == "ref";
    if (!have) return Status::ok();  // no golden model in this binary: runs go unchecked
    auto d = runtime::make_device("ref", cfg_);
    if (!d) return d.error();
    ref_ = std::move(*d);
  }
  auto r = runtime::execute(*ref_, p, in);
  if (!r) return Status(r.error()).context("golden model");
  out = std::move(r->outputs);
  checked = true;
  return Status::ok();
}

Expected<const ServiceModel::LivePlan*> ServiceModel::live_plan(const ModelSpec& m, int64_t rows,
                                                                const compiler::CompileOptions& opts,
                                                                const std::string& tag) {
  const std::string key = model_key(m);
  const int64_t r = m.kind == ModelSpec::Kind::GemmChain ? rows : 0;
  if (auto it = live_.find({key, r, tag}); it != live_.end()) return it->second.get();
  ir::Graph g;
  if (m.kind == ModelSpec::Kind::Graph) {
    auto pg = ir::parse_graph_json(m.name);
    if (!pg) return pg.error();
    g = std::move(*pg);
  } else {
    g = gemm_chain(m, rows);
  }
  if (Status s = ir::validate(g); !s) return s.error();
  compiler::CompileOptions co = opts;
  co.num_cores = 1;
  auto cr = compiler::compile(g, cfg_, co);
  if (!cr) return cr.error();
  auto lp = std::make_unique<LivePlan>();
  lp->plan = std::move(cr->plan);
  lp->inputs = ir::random_inputs(g, 1);
  LOOM_TRY(golden(lp->plan, lp->inputs, lp->expected, lp->checked));
  const LivePlan* raw = lp.get();
  live_[{key, r, tag}] = std::move(lp);
  return raw;
}

Expected<LiveWork> ServiceModel::live_work(const ModelSpec& m, int64_t seq, int batch) {
  LiveWork w;
  if (m.kind == ModelSpec::Kind::Onnx) {
    auto o = onnx(m);
    if (!o) return o.error();
    Onnx& x = **o;
    if (!x.golden_done) {
      x.expected.resize(x.parts.size());
      bool all = true;
      for (size_t k = 0; k < x.parts.size(); ++k) {
        bool c = false;
        LOOM_TRY(golden(x.parts[k].first, x.parts[k].second, x.expected[k], c));
        all = all && c;
      }
      x.checked = all;
      x.golden_done = true;
    }
    // One shape: a batch runs the program `batch` times, each request's host
    // work after its last device step coming before the next request's first.
    for (int b = 0; b < batch; ++b)
      for (size_t k = 0; k < x.order.size(); ++k) {
        const auto [seg, host] = x.order[k];
        w.parts.push_back({&x.parts[seg].first, &x.parts[seg].second, x.checked ? &x.expected[seg] : nullptr,
                           host + (k == 0 && b > 0 ? x.host_after : 0)});
      }
    w.host_cycles_after = x.host_after;
    return w;
  }
  if (m.kind == ModelSpec::Kind::Graph) {
    auto lp = live_plan(m, 0, {}, {});
    if (!lp) return lp.error();
    for (int b = 0; b < batch; ++b)
      w.parts.push_back({&(*lp)->plan, &(*lp)->inputs, (*lp)->checked ? &(*lp)->expected : nullptr, 0});
    return w;
  }
  // gemm_chain: one plan of seq x batch rows, or the mapping's chunks.
  const Mapper* mapper = nullptr;
  for (const auto& [at, f] : epochs_)
    if (at <= now_us_) mapper = &f;
  int64_t rows = seq * batch;
  uint64_t chunks = 1;
  compiler::CompileOptions co;
  std::string tag;
  if (mapper) {
    const MappedRun mr = (*mapper)(m, seq, batch);
    const int64_t total = seq * batch;
    rows = mr.rows > 0 ? mr.rows : total;
    chunks = uint64_t((total + rows - 1) / rows);
    co = mr.options;
    tag = mr.tag;
  }
  auto lp = live_plan(m, rows, co, tag);
  if (!lp) return lp.error();
  for (uint64_t k = 0; k < chunks; ++k)
    w.parts.push_back({&(*lp)->plan, &(*lp)->inputs, (*lp)->checked ? &(*lp)->expected : nullptr, 0});
  return w;
}

}  // namespace loom::serve
