#include "serve/service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "common/limits.h"
#include "common/parse.h"
#include "common/temp_files.h"
#include "common/tensor_io.h"
#include "compiler/compiler.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "serve/live.h"

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

// One cycle count of a cache entry: a whole number in 1..kMaxCachedCycles
// (2^40, limits.h). Anything else is no measurement loom made.
std::optional<uint64_t> cached_cycles(std::string_view text) {
  const auto x = parse_int64(text);
  if (!x || *x <= 0 || *x > limits::kMaxCachedCycles) return std::nullopt;
  return uint64_t(*x);
}

// A cache entry is decimal numbers separated by spaces and a newline;
// anything else (a special file, a huge or a garbled one, a count out of
// bounds) is ignored and re-measured.
std::optional<uint64_t> read_cached(const std::string& file) {
  if (file.empty()) return std::nullopt;
  auto text = read_file_bytes(file, 64);  // a missing entry is an error too
  if (!text || text->empty() || text->back() != '\n') return std::nullopt;
  text->pop_back();
  return cached_cycles(*text);
}

// A cache entry of `n` counts ("A B C ...\n", each as cached_cycles reads
// it), or nothing.
std::optional<std::vector<uint64_t>> read_cached_list(const std::string& file, size_t n) {
  if (file.empty()) return std::nullopt;
  auto text = read_file_bytes(file, 256);
  if (!text) return std::nullopt;
  std::vector<uint64_t> v;
  size_t i = 0;
  while (i < text->size()) {
    const size_t j = text->find_first_of(" \n", i);
    if (j == std::string::npos) break;
    const auto x = cached_cycles(std::string_view(*text).substr(i, j - i));
    if (!x) break;
    v.push_back(*x);
    i = j + 1;
  }
  if (v.size() != n || i != text->size()) return std::nullopt;
  return v;
}

// A port-stretch entry loom could have measured: the batch alone on the port
// takes its service time (the live path adds at most a few cycles), and with
// k co-runners each phase takes at least that and at most k + 1 times it
// (the port is shared round-robin, so a batch gets at least 1 / (k + 1) of
// it). Counts in bounds but not consistent with each other are measured again.
bool stretch_consistent(uint64_t alone, const std::vector<uint64_t>& phases, uint64_t service, size_t co_runners) {
  const double slack = std::max(16.0, double(service) / 64.0);
  if (std::abs(double(alone) - double(service)) > slack) return false;
  for (uint64_t p : phases)
    if (double(p) + slack < double(alone) || double(p) > double(alone) * double(co_runners + 1) + slack) return false;
  return true;
}

void write_cached(const std::string& dir, const std::string& file, const std::vector<uint64_t>& values) {
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto tmp = file + ".tmp" + std::to_string(::getpid());
  const TempPath in_flight(tmp);  // an interrupt removes it
  {
    std::ofstream f(tmp);
    for (size_t i = 0; i < values.size(); ++i) f << (i ? " " : "") << values[i];
    f << "\n";
  }
  std::filesystem::rename(tmp, file, ec);  // atomic; a failed cache write only costs a re-measurement
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

driver::GemmChain gemm_chain(const ModelSpec& m, int64_t rows) { return {m.hidden, m.ffn, m.layers, rows}; }

HostCost host_cost(const plan::Program& p, const spec::HwConfig& cfg) {
  HostCost c;
  double host_ns = 0, since = 0;  // since: host ns since the last device step
  const auto to_cycles = [&](double ns) { return uint64_t(std::llround(ns * double(cfg.clock_mhz) / 1000.0)); };
  size_t host_op = 0;
  for (const auto& st : p.steps) {
    if (st.on_device()) {
      c.order.emplace_back(size_t(st.segment), to_cycles(since));
      since = 0;
      continue;
    }
    const double before = host_ns;
    host_ns += kHostOpNs;
    if (host_op < p.host_ops.size()) host_ns += kHostElemNs * double(p.host_ops[host_op++].elements);
    since += host_ns - before;
  }
  c.host_after = to_cycles(since);
  c.host_us = host_ns / 1000.0;
  c.host_cycles = to_cycles(host_ns);
  return c;
}

std::string model_key(const ModelSpec& m) {
  if (m.kind == ModelSpec::Kind::Graph) return m.name;
  if (m.kind == ModelSpec::Kind::Onnx) {
    std::string k = m.zoo_name.empty() ? m.path : m.name, sep = "|";
    for (const auto& [sym, v] : m.dims) k += std::exchange(sep, ",") + sym + "=" + std::to_string(v);
    return k;
  }
  return "gemm_chain(h=" + std::to_string(m.hidden) + ",f=" + std::to_string(m.ffn) + ",l=" + std::to_string(m.layers) +
         (m.cores_per_batch > 1 ? ",cores=" + std::to_string(m.cores_per_batch) : "") + ")";
}

compiler::CompileOptions unmapped_options(const ModelSpec& m) {
  compiler::CompileOptions co;
  co.num_cores = m.kind == ModelSpec::Kind::GemmChain ? std::max(1, m.cores_per_batch) : 1;
  co.placement = compiler::Placement::Static;
  return co;
}

ServiceModel::ServiceModel(const spec::HwConfig& cfg, std::string backend, std::string cache_dir,
                           runtime::DeviceOptions dev)
    : cfg_(cfg), backend_(std::move(backend)), cache_dir_(std::move(cache_dir)), dev_opts_(std::move(dev)) {}
ServiceModel::~ServiceModel() = default;

int ServiceModel::cores_per_port() const { return int(port0_cores(cfg_).size()); }

const Mapper* ServiceModel::mapper() const {
  const Mapper* mapper = nullptr;
  for (const auto& e : epochs_)
    if (e.at_us <= now_us_) mapper = &e.map;
  return mapper;
}

int ServiceModel::batch_cap(const ModelSpec& m) const {
  const BatchCap* cap = nullptr;
  for (const auto& e : epochs_)
    if (e.at_us <= now_us_) cap = e.cap ? &e.cap : nullptr;
  return cap ? std::max(0, (*cap)(m)) : 0;
}

Expected<ServiceModel::Bucket> ServiceModel::bucket(const ModelSpec& m, int64_t seq, int batch) const {
  Bucket b;
  b.batch = std::max(batch, 1);
  int64_t len = m.bucket_of(seq);
  if (const Mapper* mp = mapper()) {
    MappedRun mr = (*mp)(m, seq, b.batch);
    if (mr.rows > 0) len = mr.rows;
    b.options = mr.options;
    b.tag = mr.tag;
    b.requests = std::max(mr.requests, 0);
  }
  if (len < seq || !m.bucket_allowed(len))
    return make_error(m.name, "a batch of sequence length " + std::to_string(seq) + " has no bucket (got " +
                                  std::to_string(len) + "; buckets are " + m.allowed_lengths() + ")");
  b.model = m.at_length(len);
  return b;
}

Expected<uint64_t> ServiceModel::cycles(const ModelSpec& m, int64_t seq, int batch) {
  const std::string key = model_key(m);
  // One shape (a .json graph, an ONNX model whose dimension 0 is no batch):
  // a batch runs the plan `batch` times.
  auto can_batch = batchable(m);
  if (!can_batch) return can_batch.error();
  const bool fixed = !*can_batch;
  if (m.bucketed()) {
    // The bucket's program for the requests one run holds, run as often as the batch needs.
    auto b = bucket(m, seq, batch);
    if (!b) return b.error();
    const auto mk = std::make_tuple(key + "|batch " + std::to_string(b->per_run()), b->model.bound_length(), b->tag);
    if (auto mit = mapped_.find(mk); mit != mapped_.end()) return b->runs() * mit->second;
    auto r = measure(m, 0, key, seq, batch, b->options, b->tag);
    if (!r) return r;
    mapped_[mk] = *r;
    return b->runs() * *r;
  }
  if (auto ch = chunked(m, seq, batch, fixed)) {
    const int64_t rows = ch->rows;
    const uint64_t chunks = ch->runs;
    const MappedRun& mr = ch->run;
    auto mit = mapped_.find({key, rows, mr.tag});
    if (mit != mapped_.end()) return chunks * mit->second;
    // gemm_chain: a plan of `rows` rows; an ONNX model: its program for a
    // batch of `rows` requests.
    auto r = m.kind == ModelSpec::Kind::GemmChain ? measure(m, rows, key, rows, 1, mr.options, mr.tag)
                                                  : measure(m, 0, key, seq, int(rows), mr.options, mr.tag);
    if (!r) return r;
    mapped_[{key, rows, mr.tag}] = *r;
    return chunks * *r;
  }
  const int run_batch = fixed ? 1 : batch;  // gemm_chain or a re-batched ONNX model: one plan for the batch
  auto it = mem_.find({key, seq, run_batch});
  uint64_t c = 0;
  if (it != mem_.end()) {
    c = it->second;
  } else {
    auto r = measure(m, seq * run_batch, key, seq, run_batch, unmapped_options(m), {});
    if (!r) return r;
    c = *r;
    mem_[{key, seq, run_batch}] = c;
  }
  return fixed ? c * uint64_t(batch) : c;
}

std::optional<ServiceModel::Chunked> ServiceModel::chunked(const ModelSpec& m, int64_t seq, int batch,
                                                           bool fixed) const {
  const Mapper* mp = mapper();
  const bool onnx_batch = m.kind == ModelSpec::Kind::Onnx && !m.bucketed() && !fixed;
  if (!mp || (m.kind != ModelSpec::Kind::GemmChain && !onnx_batch)) return std::nullopt;
  Chunked c;
  c.run = (*mp)(m, seq, batch);
  if (onnx_batch && c.run.rows <= 0) return std::nullopt;  // not in the mapping
  const int64_t total = onnx_batch ? batch : seq * batch;  // an ONNX model's rows are its requests
  c.rows = c.run.rows > 0 ? c.run.rows : total;
  c.runs = uint64_t((total + c.rows - 1) / c.rows);
  return c;
}

Expected<ServiceModel::Loaded*> ServiceModel::load_chunk(const ModelSpec& m, const Chunked& ch) {
  if (m.kind == ModelSpec::Kind::GemmChain) return load(m, ch.rows, ch.run.options, ch.run.tag);
  return load(m, 0, ch.run.options, ch.run.tag, int(ch.rows));
}

Expected<uint64_t> ServiceModel::host_cycles(const ModelSpec& m, int64_t seq, int batch) {
  if (m.kind != ModelSpec::Kind::Onnx) return uint64_t(0);  // JSON graphs and gemm_chain run whole on the device
  auto can_batch = batchable(m);
  if (!can_batch) return can_batch.error();
  if (auto ch = chunked(m, seq, batch, !*can_batch)) {  // each run's host ops
    auto l = load_chunk(m, *ch);
    if (!l) return l.error();
    return (*l)->host.host_cycles * ch->runs;
  }
  // As cycles(): a fixed-shape model runs its plan `batch` times, a bucketed one as its bucket says.
  auto l = onnx(m, seq, *can_batch ? batch : 1);
  if (!l) return l.error();
  return (*l)->host.host_cycles * runs_of(m, seq, batch, *can_batch);
}

Expected<driver::Source> ServiceModel::source(const ModelSpec& m, int64_t rows, int batch) {
  switch (m.kind) {
    case ModelSpec::Kind::Graph:
      return driver::Source::graph_file(m.name);
    case ModelSpec::Kind::GemmChain:
      return driver::Source::gemm_chain(gemm_chain(m, rows));
    case ModelSpec::Kind::Onnx:
      break;
  }
  auto path = onnx_path(m);
  if (!path) return path.error();
  // A batch of `rows` requests runs the model re-batched (--batch), where
  // dimension 0 is a batch dimension; a stream's `dims` bind the rest.
  onnxfe::ShapeBinding shapes;
  shapes.dims = m.dims;
  auto batchable = this->batchable(m);
  if (!batchable) return batchable.error();
  if (*batchable) shapes.batch = std::max(batch, 1);
  return driver::Source::onnx_file(*path, shapes);
}

Expected<std::string> ServiceModel::onnx_path(const ModelSpec& m) {
  if (!m.path.empty()) return m.path;
  if (!zoo_builder_) return make_error(m.name, "zoo models are built by the loom command line (loom zoo build)");
  return zoo_builder_(m);
}

Expected<bool> ServiceModel::batchable(const ModelSpec& m) {
  if (m.kind != ModelSpec::Kind::Onnx) return m.kind == ModelSpec::Kind::GemmChain;
  if (m.bucketed() && !m.zoo_name.empty()) return true;  // the zoo BERT: [1, seq, hidden]
  const std::string key = model_key(m);
  if (auto it = batchable_.find(key); it != batchable_.end()) return it->second;
  auto path = onnx_path(m);
  if (!path) return path.error();
  auto b = onnxfe::has_batch_dim(*path, m.dims);  // a symbol the stream binds is no batch
  if (!b) return b.error();
  batchable_[key] = *b;
  return *b;
}

Expected<plan::Program> ServiceModel::compile_program(const ModelSpec& m, int64_t rows, int batch,
                                                      const compiler::CompileOptions& opt) {
  auto src = source(m, rows, batch);
  if (!src) return src.error();
  if (src->kind != driver::Source::Kind::Onnx) return driver::compile_program(std::move(*src), cfg_, opt);
  // Loaded and partitioned once: every choice, mapping and bucket compiles
  // the same model with other options.
  const std::string path = model_key(m) + "|batch " + std::to_string(std::max(batch, 1));
  auto it = reusable_.find(path);
  if (it == reusable_.end()) {
    auto r = driver::Reusable::prepare(std::move(*src), cfg_);
    if (!r) return Status(r.error()).context(model_key(m) + " at batch " + std::to_string(std::max(batch, 1)));
    it = reusable_.emplace(path, std::move(*r)).first;
  }
  return it->second.compile(opt);
}

Expected<std::unique_ptr<ServiceModel::Loaded>> ServiceModel::compile(const ModelSpec& m, int64_t rows,
                                                                      const compiler::CompileOptions& opts, int batch) {
  compiler::CompileOptions co = opts;
  co.num_cores = std::max(1, co.num_cores);  // one core unless a mapping places it on more
  auto prog = compile_program(m, rows, batch, co);
  if (!prog) return prog.error();
  auto l = std::make_unique<Loaded>();
  l->bucket = m.bound_length();
  l->batch = std::max(batch, 1);
  l->host = serve::host_cost(*prog, cfg_);
  for (const auto& seg : prog->segments) l->inputs.push_back(ir::random_inputs(seg.graph, 1));
  l->program = std::move(*prog);
  return l;
}

ServiceModel::LoadKey ServiceModel::load_key(const ModelSpec& m, int64_t rows, const std::string& tag, int batch) {
  // gemm_chain by its rows, an ONNX model by its batch (one shape otherwise).
  const int64_t shape = m.kind == ModelSpec::Kind::GemmChain ? rows : m.kind == ModelSpec::Kind::Onnx ? batch : 0;
  return {model_key(m), shape, tag};
}

Expected<ServiceModel::Loaded*> ServiceModel::load(const ModelSpec& m, int64_t rows,
                                                   const compiler::CompileOptions& opts, const std::string& tag,
                                                   int batch) {
  const LoadKey key = load_key(m, rows, tag, batch);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second.get();
  auto l = compile(m, rows, opts, batch);
  if (!l) return l.error();
  Loaded* raw = l->get();
  loaded_[key] = std::move(*l);
  return raw;
}

Expected<ServiceModel::Loaded*> ServiceModel::onnx(const ModelSpec& mm, int64_t seq, int batch) {
  if (!mm.bucketed()) return load(mm, 0, {}, {}, batch);
  auto b = bucket(mm, seq, batch);
  if (!b) return b.error();
  return load(b->model, 0, b->options, b->tag, b->per_run());
}

uint64_t ServiceModel::runs_of(const ModelSpec& m, int64_t seq, int batch, bool batchable) const {
  if (!batchable) return uint64_t(batch);
  if (!m.bucketed()) return 1;
  auto b = bucket(m, seq, batch);
  return b ? b->runs() : 1;  // an error here is the load's, reported there
}

Expected<const plan::Program*> ServiceModel::onnx_program(const ModelSpec& m, int64_t seq) {
  auto o = onnx(m, seq);
  if (!o) return o.error();
  return &(*o)->program;
}

Expected<runtime::Device*> ServiceModel::device() {
  if (!dev_) {
    auto d = runtime::make_device(backend_, cfg_, dev_opts_);
    if (!d) return d.error();
    dev_ = std::move(*d);
  }
  if (!dev_->has_time() && !wall_clock_)
    return make_error("--backend " + backend_,
                      "the backend models no time; simulated serving needs a timed backend "
                      "(tlm, rtl, cosim), or serve live (--mode live)");
  return dev_.get();
}

Expected<uint64_t> ServiceModel::measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq,
                                         int batch, const compiler::CompileOptions& opts, const std::string& tag) {
  // A gemm_chain shape is measured once: compiled for it alone, unless
  // live mode holds it already.
  std::unique_ptr<Loaded> own;
  Expected<Loaded*> l = nullptr;
  if (m.kind == ModelSpec::Kind::Onnx) {
    // Under a mapping (a tag), an ONNX model with a batch dimension compiles
    // with the mapping's options; a bucketed one finds them in its bucket.
    l = !m.bucketed() && !tag.empty() ? load(m, 0, opts, tag, batch) : onnx(m, seq, batch);
  } else if (m.kind == ModelSpec::Kind::Graph || loaded_.count(load_key(m, rows, tag))) {
    l = load(m, rows, opts, tag);
  } else {
    auto c = compile(m, rows, opts);
    if (!c) return c.error();
    own = std::move(*c);
    l = own.get();
  }
  if (!l) return l.error();
  if (m.bucketed()) seq = (*l)->bucket, batch = (*l)->batch;  // the table lists the shape that ran
  measuring_ = key + " seq " + std::to_string(seq) + " batch " + std::to_string(batch) +
               (m.kind == ModelSpec::Kind::GemmChain && rows != seq ? " (" + std::to_string(rows) + " rows)" : "");
  uint64_t total = (*l)->host.host_cycles;  // the host ops run on the CPU: no port contention
  bool disk = true;
  const plan::Program& prog = (*l)->program;
  for (size_t k = 0; k < prog.segments.size(); ++k) {
    bool d = false;
    auto c = time_plan(prog.segments[k].plan, (*l)->inputs[k], key, d);
    if (!c) return c;
    total += *c;
    disk = disk && d;
  }
  if (total == 0) return make_error("--backend " + backend_, "the backend reported 0 cycles for " + key);
  table_.push_back({key, seq, batch, total, disk, tag});
  return total;
}

Expected<uint64_t> ServiceModel::time_plan(const plan::Plan& p, const std::map<std::string, Tensor>& in,
                                           const std::string& key, bool& from_disk) {
  const std::string dk = dev_opts_.key();
  const std::string file = cache_file(plan_hash(p, dk.empty() ? backend_ : backend_ + "|" + dk), "cycles");
  from_disk = false;
  if (auto c = read_cached(file)) {
    ++disk_hits_;
    from_disk = true;
    return *c;
  }
  if (frozen_)
    return make_error("loom serve --mode live",
                      "service time of " + key + " was not measured before the live run (the device is serving)");
  if (on_measure_ && !measuring_.empty()) on_measure_(measuring_, false);
  measuring_.clear();  // one announcement for the segments of one program
  auto dev = device();
  if (!dev) return dev.error();
  auto res = runtime::execute(**dev, p, in);
  if (!res) return res.error();
  if (!(*dev)->has_time()) {
    // A card: the wall time of the run (the best of three), in cycles of the
    // configuration's clock.
    double best = 0;
    for (int k = 0; k < 3; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      auto again = runtime::execute(**dev, p, in);
      if (!again) return again.error();
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      best = k == 0 ? us : std::min(best, us);
    }
    res->cycles = std::max<uint64_t>(1, uint64_t(best * double(cfg_.clock_mhz)));
  }
  ++runs_;
  if (res->cycles == 0) return make_error("--backend " + backend_, "the backend reported 0 cycles for " + key);
  write_cached(cache_dir_, file, {res->cycles});
  return res->cycles;
}

std::string ServiceModel::cache_file(uint64_t h, const char* ext) const {
  if (cache_dir_.empty()) return {};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return (std::filesystem::path(cache_dir_) / (std::string(hex) + "." + ext)).string();
}

Expected<double> ServiceModel::stretch(const BatchShape& a, const std::vector<BatchShape>& with_all) {
  std::vector<BatchShape> with(
      with_all.begin(), with_all.begin() + std::min<ptrdiff_t>(ptrdiff_t(with_all.size()), cores_per_port() - 1));
  if (with.empty()) return 1.0;
  // The co-runners are a set: their order on the port does not matter.
  const auto key_of = [&](const BatchShape& b) {
    std::string k = model_key(*b.model);
    int64_t seq = b.seq;
    if (b.model->bucketed())  // a bucketed model runs the same program for every length of a bucket
      if (auto bk = bucket(*b.model, b.seq)) seq = bk->model.bound_length();
    k.append("|").append(std::to_string(seq)).append("|").append(std::to_string(b.batch));
    return k;
  };
  std::sort(with.begin(), with.end(), [&](const BatchShape& x, const BatchShape& y) { return key_of(x) < key_of(y); });
  std::string key = key_of(a) + " with";
  for (const auto& b : with) key.append(" ").append(key_of(b));
  for (const auto& e : epochs_)
    if (e.at_us <= now_us_) key.append(" @").append(std::to_string(e.at_us));  // the mapping in force
  if (auto it = stretch_.find(key); it != stretch_.end()) return it->second;
  auto m = measure_stretch(a, with);
  if (!m) return m.error();
  stretch_[key] = m->stretch;
  stretch_table_.push_back(std::move(*m));
  return stretch_table_.back().stretch;
}

Expected<StretchMeasurement> ServiceModel::measure_stretch(const BatchShape& a, const std::vector<BatchShape>& with) {
  StretchMeasurement sm;
  sm.model = model_key(*a.model);
  sm.seq = a.seq;
  sm.batch = a.batch;
  for (const auto& b : with) sm.with.emplace_back(model_key(*b.model), b.seq, b.batch);
  auto wa = live_work(*a.model, a.seq, a.batch);
  if (!wa) return wa.error();
  std::vector<LiveWork> wb;
  for (const auto& b : with) {
    auto w = live_work(*b.model, b.seq, b.batch);
    if (!w) return w.error();
    wb.push_back(std::move(*w));
  }
  // Disk cache: keyed by every plan that runs, the backend and its options.
  const std::string dk = dev_opts_.key();
  uint64_t h = 0x9e3779b97f4a7c15ull;
  const auto mix = [&](const LiveWork& w) {
    for (const auto& p : w.parts)
      h = fnv(h ^ plan_hash(*p.plan, dk.empty() ? backend_ : backend_ + "|" + dk), &p.host_cycles, 8);
    h = fnv(h, &w.host_cycles_after, 8) * 31 + 7;
  };
  mix(*wa);
  for (const auto& w : wb) mix(w);
  constexpr int kPhases = 4;
  const std::string file = cache_file(h, "stretch");
  if (auto v = read_cached_list(file, kPhases + 1)) {
    auto service = cycles(*a.model, a.seq, a.batch);
    if (!service) return service.error();
    const std::vector<uint64_t> phases(v->begin() + 1, v->end());
    if (stretch_consistent((*v)[0], phases, *service, with.size())) {
      ++disk_hits_;
      sm.alone = (*v)[0];
      sm.phases = phases;
      double sum = 0;
      for (uint64_t d : sm.phases) sum += double(d);
      sm.stretch = std::max(1.0, sum / kPhases / double(sm.alone));
      sm.from_disk = true;
      return sm;
    }
  }
  if (frozen_) return make_error("loom serve --mode live", "port stretch measured during the live run");
  if (on_measure_) {
    std::string what =
        "port stretch: " + sm.model + " seq " + std::to_string(sm.seq) + " batch " + std::to_string(sm.batch) + " with";
    for (const auto& [wm, ws, wb] : sm.with)
      what += " " + wm + " seq " + std::to_string(ws) + " batch " + std::to_string(wb);
    on_measure_(what, true);
  }
  auto dev = device();
  if (!dev) return dev.error();
  std::vector<int> cores = port0_cores(cfg_);
  // Predicted times for the host-side timeout (a hung run fails, never hangs),
  // measured before the engine takes the device.
  std::vector<double> pred;
  for (const BatchShape* b : [&] {
         std::vector<const BatchShape*> v{&a};
         for (const auto& x : with) v.push_back(&x);
         return v;
       }()) {
    auto c = cycles(*b->model, b->seq, b->batch);
    if (!c) return c.error();
    pred.push_back(cycles_to_us(*c));
  }
  LiveEngine eng(**dev, LiveOptions{});
  constexpr uint64_t kA = 1;
  // Runs until batch `id` ends, restarting the co-runners (ids 2..) while
  // `restart`; returns its end (us).
  const auto until_end = [&](uint64_t id, bool restart) -> Expected<double> {
    for (;;) {
      auto ends = eng.advance(std::numeric_limits<double>::infinity());
      if (!ends) return ends.error();
      if (ends->empty()) return make_error("port stretch", "the device went idle before the batch ended");
      std::optional<double> done;
      for (const auto& e : *ends) {
        if (!e.status) return Status(e.status).context("port stretch: " + sm.model);
        if (e.batch == id)
          done = e.end_us;
        else if (restart)
          LOOM_TRY(eng.start(e.core, wb[size_t(e.batch - 2)], e.batch, pred[size_t(e.batch - 1)]));
      }
      if (done) return *done;
    }
  };
  // A batch's time alone on the port through this path, once per batch shape.
  const auto run_alone = [&](int core, const LiveWork& w, uint64_t id, const BatchShape& b) -> Expected<double> {
    std::string k = model_key(*b.model);
    k.append("|").append(std::to_string(b.seq)).append("|").append(std::to_string(b.batch));
    for (const auto& e : epochs_)
      if (e.at_us <= now_us_) k.append(" @").append(std::to_string(e.at_us));
    if (auto it = live_alone_us_.find(k); it != live_alone_us_.end()) return it->second;
    const double t0 = eng.now_us();
    LOOM_TRY(eng.start(core, w, id, pred[size_t(id - 1)]));
    auto e = until_end(id, false);
    if (!e) return e.error();
    live_alone_us_[k] = *e - t0;
    return *e - t0;
  };
  auto alone = run_alone(cores[0], *wa, kA, a);
  if (!alone) return alone.error();
  auto b0 = run_alone(cores[1], wb[0], 2, with[0]);
  if (!b0) return b0.error();
  const double mhz = double(std::max(1u, cfg_.clock_mhz));
  sm.alone = std::max<uint64_t>(1, uint64_t(std::llround(*alone * mhz)));
  double sum = 0;
  for (int ph = 0; ph < kPhases; ++ph) {
    // The others first, the first of them `ph` quarters into its run (the
    // rest spread over it), then the batch.
    for (size_t i = 0; i < wb.size(); ++i) LOOM_TRY(eng.start(cores[i + 1], wb[i], 2 + i, pred[i + 1]));
    const double lead = *b0 * double(ph) / kPhases;
    for (const double until = eng.now_us() + lead; lead > 0;) {
      auto ends = eng.advance(until);
      if (!ends) return ends.error();
      if (ends->empty()) break;  // the lead has passed
      for (const auto& e : *ends) {
        if (!e.status) return Status(e.status).context("port stretch: " + sm.model);
        LOOM_TRY(eng.start(e.core, wb[size_t(e.batch - 2)], e.batch, pred[size_t(e.batch - 1)]));
      }
    }
    const double t0 = eng.now_us();
    LOOM_TRY(eng.start(cores[0], *wa, kA, pred[0]));
    auto end = until_end(kA, true);
    if (!end) return end.error();
    while (eng.running() > 0) {  // the others finish their current runs
      auto ends = eng.advance(std::numeric_limits<double>::infinity());
      if (!ends) return ends.error();
      for (const auto& e : *ends)
        if (!e.status) return Status(e.status).context("port stretch: " + sm.model);
    }
    const uint64_t d = std::max<uint64_t>(1, uint64_t(std::llround((*end - t0) * mhz)));
    sm.phases.push_back(d);
    sum += double(d);
  }
  ++runs_;
  sm.stretch = std::max(1.0, sum / kPhases / double(sm.alone));
  std::vector<uint64_t> rec{sm.alone};
  rec.insert(rec.end(), sm.phases.begin(), sm.phases.end());
  write_cached(cache_dir_, file, rec);
  return sm;
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

Status ServiceModel::golden_all(Loaded& l) {
  if (l.golden_done) return Status::ok();
  l.expected.resize(l.program.segments.size());
  bool all = true;
  for (size_t k = 0; k < l.program.segments.size(); ++k) {
    bool c = false;
    LOOM_TRY(golden(l.program.segments[k].plan, l.inputs[k], l.expected[k], c));
    all = all && c;
  }
  l.checked = all;
  l.golden_done = true;
  return Status::ok();
}

int ServiceModel::width(const ModelSpec& m, int64_t seq, int batch) const {
  const Mapper* mp = mapper();
  if (m.kind == ModelSpec::Kind::Onnx && !m.bucketed()) {  // mapped when it has a batch dimension
    if (!mp) return 1;
    const MappedRun mr = (*mp)(m, seq, batch);
    return mr.rows > 0 ? std::max(1, mr.options.num_cores) : 1;
  }
  if (m.kind == ModelSpec::Kind::Graph) return 1;
  if (!mp) return unmapped_options(m).num_cores;
  return std::max(1, (*mp)(m, seq, batch).options.num_cores);
}

Expected<LiveWork> ServiceModel::live_work(const ModelSpec& m, int64_t seq, int batch) {
  LiveWork w;
  // gemm_chain: one plan of seq x batch rows, or the mapping's chunks; an
  // ONNX model with a batch dimension: its program compiled for the batch;
  // otherwise one shape: a batch runs its plan `batch` times.
  auto can_batch = batchable(m);
  if (!can_batch) return can_batch.error();
  uint64_t runs = *can_batch ? 1 : uint64_t(batch);
  Expected<Loaded*> l = nullptr;
  if (auto ch = chunked(m, seq, batch, !*can_batch)) {
    runs = ch->runs;
    l = load_chunk(m, *ch);
  } else if (m.kind == ModelSpec::Kind::GemmChain) {
    runs = 1;
    l = load(m, seq * batch, unmapped_options(m), {});
  } else if (m.kind == ModelSpec::Kind::Graph) {  // one shape: its plan `batch` times
    l = load(m, 0, unmapped_options(m), {});
  } else {
    runs = runs_of(m, seq, batch, *can_batch);
    l = onnx(m, seq, *can_batch ? batch : 1);
  }
  if (!l) return l.error();
  Loaded& x = **l;
  for (const auto& seg : x.program.segments)
    if (!seg.plan.tasks.empty())
      return make_error("loom serve --mode live",
                        "a batch of " + m.name + " is mapped onto " + std::to_string(seg.plan.cores.size()) +
                            " cores with dynamic placement; live serving runs a gang's static or pipeline plan (the "
                            "host dispatches a dynamic plan's tile tasks, one plan at a time)");
  LOOM_TRY(golden_all(x));
  // Each run's host work after its last device step comes before the next
  // run's first.
  const auto& order = x.host.order;
  for (uint64_t b = 0; b < runs; ++b)
    for (size_t k = 0; k < order.size(); ++k) {
      const auto [seg, host] = order[k];
      w.parts.push_back({&x.program.segments[seg].plan, &x.inputs[seg], x.checked ? &x.expected[seg] : nullptr,
                         host + (k == 0 && b > 0 ? x.host.host_after : 0)});
    }
  w.host_cycles_after = x.host.host_after;
  return w;
}

}  // namespace loom::serve
