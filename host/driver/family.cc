#include "driver/family.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/tensor_io.h"
#include "compiler/options.h"
#include "driver/compile.h"
#include "frontend/onnx/host_codec.h"

namespace loom::driver {

namespace fs = std::filesystem;

namespace {

std::string sizes_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  s += sizes_text(v);
  s += ']';
  return s;
}

/// Every symbol of the graph inputs, with the first input and dimension that has it.
std::map<std::string, std::string> input_symbols(const onnxfe::Signature& sig) {
  std::map<std::string, std::string> r;
  for (const auto& t : sig.inputs)
    for (size_t j = 0; j < t.dims.size(); ++j)
      if (!t.dims[j].symbol.empty())
        r.emplace(t.dims[j].symbol, "input '" + t.name + "' dimension " + std::to_string(j));
  return r;
}

/// Each symbol's value in `shapes`, checked against what the model states.
Expected<std::map<std::string, int64_t>> observe(const onnxfe::Signature& sig,
                                                 const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::map<std::string, int64_t> seen;
  std::map<std::string, std::string> where;
  for (const auto& t : sig.inputs) {
    auto it = shapes.find(t.name);
    if (it == shapes.end()) return make_error("input '" + t.name + "'", "no tensor given for it");
    const auto& got = it->second;
    if (!t.shaped) return make_error("input '" + t.name + "'", "the model states no shape for it");
    if (got.size() != t.dims.size())
      return make_error("input '" + t.name + "'", "rank " + std::to_string(got.size()) + " " + shape_text(got) +
                                                      ", the model states rank " + std::to_string(t.dims.size()));
    for (size_t j = 0; j < got.size(); ++j) {
      const auto& d = t.dims[j];
      const std::string at = "input '" + t.name + "' dimension " + std::to_string(j);
      if (d.value > 0 && got[j] != d.value)
        return make_error(at, "is " + std::to_string(got[j]) + ", the model fixes it at " + std::to_string(d.value));
      if (d.symbol.empty()) continue;
      auto [s, fresh] = seen.emplace(d.symbol, got[j]);
      if (fresh) where[d.symbol] = at;
      if (s->second != got[j])
        return make_error(at, "symbol '" + d.symbol + "' is " + std::to_string(got[j]) + " here and " +
                                  std::to_string(s->second) + " at " + where[d.symbol]);
    }
  }
  return seen;
}

/// Two JSON texts with the same value (a file's object keys come back sorted).
bool same_json(const std::string& a, const std::string& b) {
  return nlohmann::json::parse(a, nullptr, false) == nlohmann::json::parse(b, nullptr, false);
}

}  // namespace

Status parse_bucket(const std::string& text, Buckets& b) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return make_error("--bucket", "expected SYMBOL=A,B,..., got '" + text + "'");
  const std::string sym = text.substr(0, eq);
  if (b.count(sym)) return make_error("--bucket", "symbol '" + sym + "' is given twice");
  std::vector<int64_t> sizes;
  size_t at = eq + 1;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    auto v = parse_int64(std::string_view(text).substr(at, comma - at));
    if (!v || *v < 1 || *v > limits::kMaxTensorElems)
      return make_error("--bucket", "expected sizes from 1 to " + std::to_string(limits::kMaxTensorElems) + " in '" +
                                        text + "', got '" + text.substr(at, comma - at) + "'");
    sizes.push_back(*v);
    if (sizes.size() > 64) return make_error("--bucket", "at most 64 sizes per symbol in '" + text + "'");
    at = comma + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  b[sym] = std::move(sizes);
  return {};
}

std::string FamilyShape::text() const {
  std::string s;
  for (const auto& [sym, v] : observed) {
    auto it = binding.dims.find(sym);
    const int64_t to = it == binding.dims.end() ? v : it->second;
    s += (s.empty() ? "" : ", ") + sym + "=" + std::to_string(v);
    if (to != v) s += " -> " + std::to_string(to) + " (padded)";
  }
  return s;
}

Expected<ProgramFamily> ProgramFamily::open(const std::string& path, const spec::HwConfig& cfg,
                                            const compiler::CompileOptions& opt, Buckets buckets,
                                            std::string cache_dir) {
  ProgramFamily f;
  auto sig = onnxfe::read_signature(path);
  if (!sig) return sig.error();
  const auto symbols = input_symbols(*sig);
  for (const auto& [sym, sizes] : buckets)
    if (!symbols.count(sym)) {
      std::string have;
      for (const auto& [s, where] : symbols) have += (have.empty() ? "" : ", ") + s;
      return make_error("--bucket", "no graph input of " + path + " has a symbolic dimension '" + sym + "' (" +
                                        (have.empty() ? std::string("it has none") : "it has: " + have) + ")");
    }
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  f.model_hash_ = fnv1a64(bytes->data(), bytes->size());
  f.path_ = path;
  f.cfg_ = &cfg;
  f.opt_ = opt;
  f.buckets_ = std::move(buckets);
  f.sig_ = std::move(*sig);
  f.cache_dir_ = std::move(cache_dir);
  return f;
}

Expected<FamilyShape> ProgramFamily::pick(const std::map<std::string, std::vector<int64_t>>& shapes) const {
  auto seen = observe(sig_, shapes);
  if (!seen) return seen.error();
  FamilyShape s;
  s.observed = *seen;
  const std::string batch = sig_.batch_symbol();
  for (const auto& [sym, v] : s.observed) {
    auto b = buckets_.find(sym);
    if (b == buckets_.end()) {
      s.binding.dims[sym] = v;  // no buckets: compiled at the value itself
      continue;
    }
    const auto& sizes = b->second;
    auto fit = std::lower_bound(sizes.begin(), sizes.end(), v);
    if (fit == sizes.end())
      return make_error("--bucket",
                        sym + "=" + std::to_string(v) + " is above the largest bucket (" + sizes_text(sizes) + ")");
    if (*fit != v && sym != batch)
      return make_error("--bucket", sym + "=" + std::to_string(v) + " is in no bucket (" + sizes_text(sizes) +
                                        ") and '" + sym +
                                        "' is not the batch dimension (dimension 0 of every graph input and output), "
                                        "so it cannot be padded");
    s.binding.dims[sym] = *fit;
    if (sym == batch) s.batch_symbol = sym, s.batch = v, s.padded_batch = *fit;
  }
  return s;
}

Expected<std::vector<FamilyRun>> ProgramFamily::split(const std::map<std::string, std::vector<int64_t>>& shapes) const {
  auto seen = observe(sig_, shapes);
  if (!seen) return seen.error();
  const std::string batch = sig_.batch_symbol();
  auto b = batch.empty() ? buckets_.end() : buckets_.find(batch);
  const int64_t largest = b == buckets_.end() ? 0 : b->second.back();
  if (b == buckets_.end() || seen->at(batch) <= largest) {
    auto one = pick(shapes);
    if (!one) return one.error();
    return std::vector<FamilyRun>{FamilyRun{std::move(*one), 0}};
  }
  const int64_t total = seen->at(batch);
  if ((total + largest - 1) / largest > int64_t(kMaxFamilyRuns))
    return make_error("--bucket", batch + "=" + std::to_string(total) + " needs more than " +
                                      std::to_string(kMaxFamilyRuns) + " runs of the largest bucket (" +
                                      std::to_string(largest) + "); give a larger bucket");
  std::vector<FamilyRun> runs;
  for (int64_t first = 0; first < total; first += largest) {
    auto part = shapes;  // every input's dimension 0 is the batch
    for (auto& [name, shape] : part) shape[0] = std::min(largest, total - first);
    auto one = pick(part);
    if (!one) return one.error();
    runs.push_back(FamilyRun{std::move(*one), first});
  }
  return runs;
}

std::string runs_text(const std::vector<FamilyRun>& runs) {
  if (runs.size() == 1) return runs[0].shape.text();
  const FamilyShape& s = runs[0].shape;
  std::string t = s.batch_symbol + "=" + std::to_string(runs.back().first + runs.back().shape.batch) + " split into ";
  for (size_t k = 0; k < runs.size(); ++k) {
    const FamilyShape& r = runs[k].shape;
    t += (k ? ", " : "") + std::to_string(r.batch);
    if (r.padded_batch != r.batch) t += " -> " + std::to_string(r.padded_batch) + " (padded)";
  }
  for (const auto& [sym, v] : s.observed)
    if (sym != s.batch_symbol) t += ", " + sym + "=" + std::to_string(v);
  return t;
}

Expected<std::vector<FamilyShape>> ProgramFamily::every_bucket() const {
  const auto symbols = input_symbols(sig_);
  size_t count = 1;
  for (const auto& [sym, at] : symbols) {
    auto b = buckets_.find(sym);
    if (b == buckets_.end())
      return make_error("--bucket", "symbol '" + sym + "' (" + at +
                                        ") has no buckets; compiling a family ahead of time needs them for every "
                                        "symbolic dimension");
    count *= b->second.size();
    if (count > kMaxFamilyPrograms)
      return make_error("--bucket", "the buckets make more than " + std::to_string(kMaxFamilyPrograms) +
                                        " programs; give fewer sizes");
  }
  const std::string batch = sig_.batch_symbol();
  std::vector<FamilyShape> out(1);
  for (const auto& [sym, at] : symbols) {
    std::vector<FamilyShape> next;
    for (const auto& s : out)
      for (int64_t v : buckets_.at(sym)) {
        FamilyShape t = s;
        t.observed[sym] = v;
        t.binding.dims[sym] = v;
        if (sym == batch) t.batch_symbol = sym, t.batch = v, t.padded_batch = v;
        next.push_back(std::move(t));
      }
    out = std::move(next);
  }
  return out;
}

std::string ProgramFamily::key(const onnxfe::ShapeBinding& b) const {
  std::string k = std::to_string(model_hash_) + "|" + onnxfe::shapes_json(b) + "|" +
                  compiler::options_to_json(opt_).dump() + "|" + std::string(cfg_->name) + "|" + LOOM_VERSION;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(k.data(), k.size())));
  return hex;
}

Expected<FamilyMember> ProgramFamily::member(const FamilyShape& s) {
  const std::string k = key(s.binding);
  FamilyMember m;
  if (!cache_dir_.empty()) m.cache_file = (fs::path(cache_dir_) / ("program-" + k + ".loom")).string();
  if (auto it = memory_.find(k); it != memory_.end()) return it->second;
  plan::ProgramInfo info;
  info.config = std::string(cfg_->name);
  info.compiler = std::string("loom ") + LOOM_VERSION;
  std::error_code ec;
  const auto abs = fs::absolute(path_, ec);
  info.source = ec ? path_ : abs.lexically_normal().string();
  info.source_hash = model_hash_;
  info.compile_options = compiler::options_to_json(opt_).dump();
  info.input_shapes = onnxfe::shapes_json(s.binding);
  if (!m.cache_file.empty() && fs::exists(m.cache_file, ec)) {
    // An entry that cannot be read or was compiled otherwise is compiled again.
    auto pf = plan::read_program(m.cache_file, &onnxfe::host_codec());
    if (pf && pf->info.source_hash == info.source_hash && same_json(pf->info.compile_options, info.compile_options) &&
        same_json(pf->info.input_shapes, info.input_shapes) && pf->info.config == info.config) {
      m.file = std::move(*pf);
      m.from_disk = true;
      return memory_[k] = std::move(m);
    }
  }
  auto prog = compile_program(Source::onnx_file(path_, s.binding), *cfg_, opt_);
  if (!prog) return prog.error();
  m.file.version = plan::kProgramFormatVersion;
  m.file.info = info;
  m.file.program = std::move(*prog);
  if (!m.cache_file.empty()) {
    fs::create_directories(cache_dir_, ec);
    if (ec) return make_error("--cache " + cache_dir_, "cannot create the folder: " + ec.message());
    LOOM_TRY(plan::write_program(m.file.program, info, m.cache_file, &onnxfe::host_codec()));
  }
  return memory_[k] = std::move(m);
}

onnxfe::Value pad_batch(const onnxfe::Value& v, int64_t rows) {
  onnxfe::Value r = v;
  if (v.shape.empty() || rows <= v.shape[0]) return r;
  const int64_t row = v.shape[0] > 0 ? v.numel() / v.shape[0] : 0;
  r.shape[0] = rows;
  if (v.is_float())
    r.f.resize(size_t(rows * row), 0.0f);
  else
    r.i.resize(size_t(rows * row), 0);
  return r;
}

onnxfe::Value slice_batch(const onnxfe::Value& v, int64_t first, int64_t rows) {
  onnxfe::Value r = v;
  if (v.shape.empty()) return r;
  const int64_t row = v.shape[0] > 0 ? v.numel() / v.shape[0] : 0;
  r.shape[0] = rows;
  const auto from = size_t(first * row), to = size_t((first + rows) * row);
  if (v.is_float())
    r.f.assign(v.f.begin() + std::ptrdiff_t(from), v.f.begin() + std::ptrdiff_t(to));
  else
    r.i.assign(v.i.begin() + std::ptrdiff_t(from), v.i.begin() + std::ptrdiff_t(to));
  return r;
}

Expected<onnxfe::Value> join_batch(const std::vector<onnxfe::Value>& parts) {
  if (parts.empty()) return make_error("join_batch", "no parts");
  onnxfe::Value r = parts[0];
  if (r.shape.empty()) return make_error("join_batch", "a scalar has no batch dimension");
  for (size_t k = 1; k < parts.size(); ++k) {
    const onnxfe::Value& p = parts[k];
    if (p.type != r.type || p.shape.size() != r.shape.size() ||
        !std::equal(p.shape.begin() + 1, p.shape.end(), r.shape.begin() + 1))
      return make_error("join_batch", "run " + std::to_string(k) + "'s output " + shape_text(p.shape) +
                                          " does not continue run 0's " + shape_text(parts[0].shape) +
                                          " along the batch");
    r.shape[0] += p.shape[0];
    r.f.insert(r.f.end(), p.f.begin(), p.f.end());
    r.i.insert(r.i.end(), p.i.begin(), p.i.end());
  }
  return r;
}

}  // namespace loom::driver
