#include "serve/service.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler/compiler.h"
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

}  // namespace

ir::Graph gemm_chain(const ModelSpec& m, int64_t rows) {
  ir::GraphBuilder b("gemm_chain", 7);
  std::string x = b.input("x", {rows, m.hidden});
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string p = "l" + std::to_string(l);
    x = b.gemm(p + ".up", x, m.ffn);
    x = b.unary(p + ".relu", ir::OpKind::Relu, x);
    x = b.gemm(p + ".down", x, m.hidden);
  }
  b.output(x);
  return b.graph();
}

std::string model_key(const ModelSpec& m) {
  if (m.kind == ModelSpec::Kind::Graph) return m.name;
  return "gemm_chain(h=" + std::to_string(m.hidden) + ",f=" + std::to_string(m.ffn) + ",l=" +
         std::to_string(m.layers) + ")";
}

ServiceModel::ServiceModel(const spec::HwConfig& cfg, std::string backend, std::string cache_dir)
    : cfg_(cfg), backend_(std::move(backend)), cache_dir_(std::move(cache_dir)) {}
ServiceModel::~ServiceModel() = default;

Expected<uint64_t> ServiceModel::cycles(const ModelSpec& m, int64_t seq, int batch) {
  const std::string key = model_key(m);
  const bool graph = m.kind == ModelSpec::Kind::Graph;
  const Mapper* mapper = nullptr;
  for (const auto& [at, f] : epochs_)
    if (at <= now_us_) mapper = &f;
  if (mapper && !graph) {
    const MappedRun mr = (*mapper)(m, seq, batch);
    const int64_t total = seq * batch, rows = mr.rows > 0 ? mr.rows : total;
    const uint64_t chunks = uint64_t((total + rows - 1) / rows);
    auto mit = mapped_.find({key, rows, mr.tag});
    if (mit != mapped_.end()) return chunks * mit->second;
    auto r = measure(m, rows, key, rows, 1, mr.options, mr.tag);
    if (!r) return r;
    mapped_[{key, rows, mr.tag}] = *r;
    return chunks * *r;
  }
  const int run_batch = graph ? 1 : batch;
  auto it = mem_.find({key, seq, run_batch});
  uint64_t c = 0;
  if (it != mem_.end()) {
    c = it->second;
  } else {
    auto r = measure(m, seq * run_batch, key, seq, run_batch);
    if (!r) return r;
    c = *r;
    mem_[{key, seq, run_batch}] = c;
  }
  return graph ? c * uint64_t(batch) : c;
}

Expected<runtime::Device*> ServiceModel::device() {
  if (!dev_) {
    auto d = runtime::make_device(backend_, cfg_);
    if (!d) return d.error();
    dev_ = std::move(*d);
  }
  if (!dev_->has_time())
    return make_error("--backend " + backend_, "the backend models no time; serving needs a timed backend (tlm, rtl)");
  return dev_.get();
}

Expected<uint64_t> ServiceModel::measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq,
                                         int batch, const compiler::CompileOptions& opts, const std::string& tag) {
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
  const uint64_t h = plan_hash(cr->plan, backend_);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::filesystem::path file;
  if (!cache_dir_.empty()) {
    file = std::filesystem::path(cache_dir_) / (std::string(hex) + ".cycles");
    std::ifstream f(file);
    uint64_t c = 0;
    if (f >> c && c > 0) {
      ++disk_hits_;
      table_.push_back({key, seq, batch, c, true, tag});
      return c;
    }
  }
  auto dev = device();
  if (!dev) return dev.error();
  auto res = runtime::execute(**dev, cr->plan, ir::random_inputs(g, 1));
  if (!res) return res.error();
  ++runs_;
  if (res->cycles == 0) return make_error("--backend " + backend_, "the backend reported 0 cycles for " + key);
  table_.push_back({key, seq, batch, res->cycles, false, tag});
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

}  // namespace loom::serve
