#include "serve/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json_read.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/tensor_io.h"
#include "frontend/onnx/shapes.h"
#include "loom/spec_gen.h"
#include "serve/yaml_json.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;

struct Reader {
  std::string where;
  Error err(const std::string& field, const std::string& what) const {
    return make_error(where + ": field '" + field + "'", what);
  }
};

Status check_keys(const json& o, const std::string& where, std::initializer_list<const char*> keys) {
  for (const auto& item : o.items()) {
    const std::string& k = item.key();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* a) { return k == a; }))
      return make_error(where, "unknown field '" + k + "'");
  }
  return {};
}

Expected<double> num(const json& o, const std::string& where, const char* key, double def, bool required, double lo = 0,
                     bool lo_open = false) {
  if (!o.contains(key)) {
    if (required) return make_error(where, "missing field '" + std::string(key) + "'");
    return def;
  }
  const auto& v = field(o, key);
  if (!v.is_number()) return make_error(where + ": field '" + key + "'", "expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || (lo_open && d == lo))
    return make_error(where + ": field '" + key + "'", "must be " + std::string(lo_open ? "> " : ">= ") +
                                                           std::to_string(int64_t(lo)) + ", got " + v.dump());
  return d;
}

// An integer field in [lo, hi] (checked before any conversion).
Expected<int64_t> integer(const json& o, const std::string& where, const char* key, int64_t def, int64_t lo,
                          int64_t hi) {
  if (!o.contains(key)) return def;
  const auto& v = field(o, key);
  const double d = v.is_number() ? v.get<double>() : 0.5;
  if (!v.is_number() || d != std::floor(d) || d < double(lo) || d > double(hi))
    return make_error(where + ": field '" + key + "'",
                      "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + v.dump());
  return int64_t(d);
}

Expected<std::string> str(const json& o, const std::string& where, const char* key, const std::string& def,
                          bool required) {
  if (!o.contains(key)) {
    if (required) return make_error(where, "missing field '" + std::string(key) + "'");
    return def;
  }
  if (!field(o, key).is_string()) return make_error(where + ": field '" + key + "'", "expected a string");
  return field(o, key).get<std::string>();
}

Expected<std::vector<double>> weights(const json& v, const std::string& where, size_t n) {
  if (!v.is_array() || v.size() != n) return make_error(where, "expected a list of " + std::to_string(n) + " weights");
  std::vector<double> w;
  double sum = 0;
  for (const auto& x : v) {
    if (!x.is_number() || !(x.get<double>() >= 0)) return make_error(where, "weights must be numbers >= 0");
    w.push_back(x.get<double>());
    sum += w.back();
  }
  if (!(sum > 0)) return make_error(where, "weights sum to 0");
  return w;
}

/// A trace's sequence lengths must fit the model: 1..`max_seq`, or none at
/// all when `max_seq` is 0 (a fixed-shape model); `bound` says whose bound.
Status parse_trace(Arrival& a, const std::string& path, int64_t max_seq, const std::string& bound) {
  auto text = read_file_bytes(path, limits::kMaxTextBytes);
  if (!text) return text.error();
  std::istringstream f(*text);
  std::string line;
  int ln = 0;
  double last = -1;
  while (std::getline(f, line)) {
    ++ln;
    const auto h = line.find('#');
    if (h != std::string::npos) line.resize(h);
    std::istringstream ls(line);
    std::string ts, qs, extra;
    if (!(ls >> ts)) continue;  // blank or comment-only line
    ls >> qs >> extra;
    const auto t_or = parse_double(ts);
    const auto q_or = qs.empty() ? std::optional<int64_t>(0) : parse_int64(qs);
    if (!t_or || !q_or || !extra.empty())
      return make_error(path + ":" + std::to_string(ln), "expected 'time_ms [seq_len]', got '" + excerpt(line) + "'");
    const double t = *t_or;
    const int64_t seq = *q_or;
    if (!qs.empty() && seq <= 0) return make_error(path + ":" + std::to_string(ln), "seq_len must be > 0");
    if (!qs.empty() && max_seq == 0)
      return make_error(path + ":" + std::to_string(ln), "seq_len " + qs + " given, but " + bound);
    if (seq > max_seq)
      return make_error(path + ":" + std::to_string(ln),
                        "seq_len " + qs + " is outside 1.." + std::to_string(max_seq) + " (" + bound + ")");
    if (!std::isfinite(t) || t < 0 || t < last)
      return make_error(path + ":" + std::to_string(ln), "times must be >= 0 and non-decreasing");
    last = t;
    a.trace_ms.push_back(t);
    a.trace_seq.push_back(seq);
  }
  if (a.trace_ms.empty()) return make_error(path, "the trace holds no arrivals");
  return {};
}

// The canonical name is the model's key: the same model, written either way,
// is measured once. zoo:bert without a length is the bucketed model.
void zoo_canonical_name(ModelSpec& m) {
  m.name = "zoo:" + m.zoo_name + (m.zoo_seq ? ":seq=" + std::to_string(m.zoo_seq) : "") +
           (m.zoo_slice.empty() ? "" : ":slice=" + m.zoo_slice);
}

// "zoo:NAME[:seq=L][:slice=S]" (docs/zoo.md lists the models, lengths and slices).
Status parse_zoo(const std::string& spec, const std::string& where, ModelSpec& m) {
  std::vector<std::string> parts;
  std::stringstream ss(spec.substr(4));
  for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
  if (parts.empty() || parts[0].empty())
    return make_error(where, "'" + spec + "': expected zoo:NAME[:seq=L][:slice=S]");
  m.zoo_name = parts[0];
  // As scripts/zoo.py MODELS: the three networks and one of each family.
  const std::vector<const char*> family{"small"};
  const std::pair<const char*, std::vector<const char*>> known[] = {
      {"resnet50", {"stem", "stage1", "stage2", "stage3", "stage4"}},
      {"mobilenetv2", {"stem", "block"}},
      {"bert", {}},
      {"resnext", family},
      {"regnet", family},
      {"efficientnet", family},
      {"mobilenetv3", family},
      {"squeezenet", family},
      {"googlenet", family},
      {"densenet", family},
      {"shufflenet", family},
      {"convnext", family},
      {"vit", family},
      {"encoder", family},
      {"lraspp", family}};
  const std::vector<const char*>* slices = nullptr;
  std::string names;
  for (const auto& [n, sl] : known) {
    if (m.zoo_name == n) slices = &sl;
    names += (names.empty() ? "" : ", ") + std::string(n);
  }
  if (!slices) return make_error(where, "unknown zoo model '" + m.zoo_name + "' (" + names + ")");
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& o = parts[i];
    if (o.rfind("seq=", 0) == 0 && m.zoo_name == "bert" && m.zoo_seq == 0) {
      const std::string v = o.substr(4);
      std::string list;
      for (int64_t l : kZooBertSeqs) {
        if (v == std::to_string(l)) m.zoo_seq = l;
        list += (list.empty()                                     ? ""
                 : l == kZooBertSeqs[std::size(kZooBertSeqs) - 1] ? " or "
                                                                  : ", ") +
                std::to_string(l);
      }
      if (m.zoo_seq == 0) return make_error(where, "'" + spec + "': seq must be " + list + ", got '" + v + "'");
    } else if (o.rfind("slice=", 0) == 0 && !slices->empty() && m.zoo_slice.empty()) {
      m.zoo_slice = o.substr(6);
      if (std::none_of(slices->begin(), slices->end(), [&](const char* x) { return m.zoo_slice == x; })) {
        std::string list;
        for (const char* x : *slices) list += (list.empty() ? "" : ", ") + std::string(x);
        return make_error(where,
                          "'" + spec + "': unknown slice '" + m.zoo_slice + "' of " + m.zoo_name + " (" + list + ")");
      }
    } else {
      return make_error(where, "'" + spec + "': unexpected '" + o + "' (" +
                                   (m.zoo_name == "bert" ? "bert takes seq=L" : m.zoo_name + " takes slice=S") + ")");
    }
  }
  zoo_canonical_name(m);
  return {};
}

// An ONNX stream's `dims: {SYMBOL: N}`, as `loom compile --dim SYMBOL=N`.
Status parse_dims(const json& d, const std::string& where, ModelSpec& m) {
  if (m.kind != ModelSpec::Kind::Onnx || !m.zoo_name.empty())
    return make_error(where,
                      "binds symbolic dimensions of an ONNX model file; model '" + excerpt(m.name) + "' has none");
  if (!d.is_object() || d.empty()) return make_error(where, "expected a mapping {SYMBOL: N, ...}");
  for (const auto& [sym, v] : d.items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > limits::kMaxTensorElems)
      return make_error(where + ": '" + excerpt(sym) + "'",
                        "expected an integer in 1.." + std::to_string(limits::kMaxTensorElems));
    m.dims[sym] = v.get<int64_t>();
  }
  return {};
}

/// "'a', 'b'": symbol names for a message.
std::string quoted_list(const std::vector<std::string>& v) {
  std::string t;
  for (const auto& x : v) t += (t.empty() ? "'" : ", '") + excerpt(x) + "'";
  return t;
}

/// An ONNX file's symbolic dimension that the stream's seq_len binds: the
/// one `seq_len.dim` names, else the one symbol of the graph inputs that is
/// neither the batch dimension (onnxfe::Signature::batch_symbol) nor bound
/// by `dims`.
Status resolve_seq_symbol(const json& q, const std::string& where, ModelSpec& m) {
  auto sig = onnxfe::read_signature(m.path);
  if (!sig) return sig.error();
  const std::string batch = sig->batch_symbol();
  std::vector<std::string> free;
  for (const auto& in : sig->inputs)
    for (const auto& d : in.dims)
      if (!d.symbol.empty() && d.symbol != batch && !m.dims.count(d.symbol) &&
          std::find(free.begin(), free.end(), d.symbol) == free.end())
        free.push_back(d.symbol);
  if (q.is_object() && q.contains("dim")) {
    const auto& d = field(q, "dim");
    const std::string dw = where + ": field 'dim'";
    if (!d.is_string()) return make_error(dw, "expected the name of a symbolic dimension");
    const std::string sym = d.get<std::string>();
    if (std::find(free.begin(), free.end(), sym) == free.end())
      return make_error(
          dw, "'" + excerpt(sym) + "' is not a free symbolic dimension of " + excerpt(m.name) +
                  (free.empty() ? " (it has none besides its batch dimension)" : " (free: " + quoted_list(free) + ")"));
    m.seq_symbol = sym;
    return {};
  }
  if (free.size() == 1) {
    m.seq_symbol = free[0];
    return {};
  }
  if (free.empty())
    return make_error(where, "model " + excerpt(m.name) +
                                 " has no free symbolic dimension for seq_len to bind (batch dimension: " +
                                 (batch.empty() ? "none" : "'" + batch + "'") + ")");
  return make_error(where, "model " + excerpt(m.name) + " has several free symbolic dimensions (" + quoted_list(free) +
                               "): name the one seq_len binds with seq_len.dim and bind the others with 'dims'");
}

/// Field 'model' of a stream: the built-in gemm_chain (with its sizes), a
/// .json graph or .onnx model path (relative to the workload's folder), or
/// zoo:NAME.
Status parse_model(const json& s, const std::string& where, const std::string& dir, Stream& out) {
  auto model = str(s, where, "model", "", true);
  if (!model) return model.error();
  out.model.name = *model;
  if (*model == "gemm_chain") {
    out.model.kind = ModelSpec::Kind::GemmChain;
    for (auto [key, dst] : {std::pair{"hidden", &out.model.hidden}, std::pair{"ffn", &out.model.ffn},
                            std::pair{"layers", &out.model.layers}}) {
      auto v = num(s, where, key, double(*dst), false, 1);
      if (!v) return v.error();
      if (*v != std::floor(*v) || *v > 4096)
        return make_error(where + ": field '" + key + "'", "expected an integer in 1..4096");
      *dst = int64_t(*v);
    }
    const int64_t bytes = out.model.layers * 2 * out.model.hidden * out.model.ffn;  // <= 2^37: no overflow
    if (bytes > limits::kMaxGemmChainBytes)
      return make_error(where, "gemm_chain of hidden " + std::to_string(out.model.hidden) + ", ffn " +
                                   std::to_string(out.model.ffn) + " and " + std::to_string(out.model.layers) +
                                   " layers holds " + size_str(uint64_t(bytes)) + " of weights, above the limit of " +
                                   size_str(uint64_t(limits::kMaxGemmChainBytes)) + " (docs/security.md)");
  } else if (model->size() > 5 && model->substr(model->size() - 5) == ".json") {
    out.model.kind = ModelSpec::Kind::Graph;
    std::filesystem::path p(*model);
    std::error_code ec;  // the non-throwing forms: a path too long for the OS is "not found", not an exception
    if (p.is_relative() && !std::filesystem::exists(p, ec)) p = std::filesystem::path(dir) / p;
    out.model.name = p.string();
    if (!std::filesystem::exists(p, ec))
      return make_error(where + ": field 'model'", "graph file " + excerpt(*model) + " not found");
  } else if (model->size() > 5 && model->substr(model->size() - 5) == ".onnx") {
    out.model.kind = ModelSpec::Kind::Onnx;
    std::filesystem::path p(*model);
    if (p.is_relative()) p = (std::filesystem::path(dir) / p).lexically_normal();
    out.model.path = p.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
      return make_error(where + ": field 'model'", "ONNX model " + excerpt(p.string(), 200) + " not found");
  } else if (model->rfind("zoo:", 0) == 0) {
    out.model.kind = ModelSpec::Kind::Onnx;
    LOOM_TRY(parse_zoo(*model, where + ": field 'model'", out.model));
  } else {
    return make_error(where + ": field 'model'", "unknown model '" + excerpt(*model) +
                                                     "' (built-in: gemm_chain; a .json graph or .onnx model path; "
                                                     "or zoo:NAME[:seq=L][:slice=S])");
  }
  return {};
}

/// A Poisson arrival's `drift: [{at_ms, rate}, ...]`: the rate from each
/// at_ms on (load drift), at_ms increasing, rates >= 0 (0: a pause).
Status parse_rate_drift(const json& d, const std::string& where, Arrival& a) {
  if (!d.is_array() || d.empty()) return make_error(where, "expected a non-empty list of {at_ms, rate}");
  if (d.size() > 1000) return make_error(where, "at most 1000 rate changes");
  double last = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    const std::string dw = where + "[" + std::to_string(i) + "]";
    if (!d[i].is_object()) return make_error(dw, "expected {at_ms, rate}");
    LOOM_TRY(check_keys(d[i], dw, {"at_ms", "rate"}));
    auto at = num(d[i], dw, "at_ms", 0, true, 0, true);
    if (!at) return at.error();
    if (*at <= last) return make_error(dw, "at_ms must be > 0 and increase");
    last = *at;
    auto r = num(d[i], dw, "rate", 0, true, 0);
    if (!r) return r.error();
    a.rate_drift.push_back({*at, *r});
  }
  return {};
}

/// Field 'arrival' of a stream: poisson, bursty or a trace file (its
/// sequence lengths bounded by what the stream's model can take).
Status parse_arrival(const json& s, const std::string& where, const std::string& dir, Stream& out) {
  if (!s.contains("arrival")) return make_error(where, "missing field 'arrival'");
  const auto& a = field(s, "arrival");
  const std::string aw = where + ": arrival";
  if (!a.is_object() || a.size() != 1)
    return make_error(aw, "expected one of poisson: {rate}, bursty: {on_rate, off_rate, on_ms, off_ms}, trace: {file}");
  const std::string kind = a.begin().key();
  const auto& av = a.begin().value();
  const std::string kw = aw + ": " + kind;
  if (!av.is_object()) return make_error(kw, "expected a mapping");
  if (kind == "poisson") {
    LOOM_TRY(check_keys(av, kw, {"rate", "drift"}));
    out.arrival.kind = Arrival::Kind::Poisson;
    auto r = num(av, kw, "rate", 0, true, 0, true);
    if (!r) return r.error();
    out.arrival.rate = *r;
    if (av.contains("drift")) LOOM_TRY(parse_rate_drift(field(av, "drift"), kw + ": field 'drift'", out.arrival));
  } else if (kind == "bursty") {
    LOOM_TRY(check_keys(av, kw, {"on_rate", "off_rate", "on_ms", "off_ms"}));
    out.arrival.kind = Arrival::Kind::Bursty;
    auto on = num(av, kw, "on_rate", 0, true, 0, true);
    if (!on) return on.error();
    auto off = num(av, kw, "off_rate", 0, true, 0);
    if (!off) return off.error();
    auto onm = num(av, kw, "on_ms", 0, true, 0, true);
    if (!onm) return onm.error();
    auto offm = num(av, kw, "off_ms", 0, true, 0, true);
    if (!offm) return offm.error();
    out.arrival.on_rate = *on, out.arrival.off_rate = *off, out.arrival.on_ms = *onm, out.arrival.off_ms = *offm;
  } else if (kind == "trace") {
    LOOM_TRY(check_keys(av, kw, {"file"}));
    out.arrival.kind = Arrival::Kind::Trace;
    auto f = str(av, kw, "file", "", true);
    if (!f) return f.error();
    std::filesystem::path p(*f);
    std::error_code ec;
    if (p.is_relative() && !std::filesystem::exists(p, ec)) p = std::filesystem::path(dir) / p;
    out.arrival.trace_file = p.string();
    if (out.model.bucketed())
      LOOM_TRY(parse_trace(out.arrival, out.arrival.trace_file, out.model.bucket_lengths().back(),
                           out.model.zoo_name.empty() ? "the longest bucket" : "the longest zoo BERT"));
    else if (out.model.kind == ModelSpec::Kind::GemmChain)
      LOOM_TRY(parse_trace(out.arrival, out.arrival.trace_file, 4096, "gemm_chain's sequence lengths"));
    else
      LOOM_TRY(parse_trace(out.arrival, out.arrival.trace_file, 0,
                           "model " + excerpt(out.model.name) + " has a fixed shape"));
  } else {
    return make_error(aw, "unknown arrival process '" + kind + "' (poisson, bursty, trace)");
  }
  return {};
}

/// Field 'seq_len' of a stream (gemm_chain, or zoo:bert padded to its
/// buckets): the lengths, their weights and their drift; without it, the
/// model's one length.
Status parse_seq_len(const json& s, const std::string& where, Stream& out) {
  if (s.contains("seq_len")) {
    const auto& q = field(s, "seq_len");
    const std::string qw = where + ": seq_len";
    if (out.model.kind == ModelSpec::Kind::Graph)
      return make_error(qw, "a .json graph has a fixed shape; seq_len applies to gemm_chain");
    if (out.model.kind == ModelSpec::Kind::Onnx && !out.model.bucketed())
      return make_error(qw,
                        "a zoo model has a fixed shape (zoo:bert:seq=L picks a length); seq_len applies to "
                        "gemm_chain, to zoo:bert without a length and to an ONNX file with a symbolic dimension "
                        "(padded to buckets)");
    if (!q.is_object()) return make_error(qw, "expected {values: [...], weights: [...], drift: [...]}");
    if (out.model.seq_symbol.empty())
      LOOM_TRY(check_keys(q, qw, {"values", "weights", "drift"}));
    else
      LOOM_TRY(check_keys(q, qw, {"dim", "values", "weights", "drift"}));
    if (!q.contains("values") || !field(q, "values").is_array() || field(q, "values").empty())
      return make_error(qw, "field 'values' must be a non-empty list");
    out.shapes.values.clear();
    const int64_t max_len = out.model.bucketed() ? out.model.bucket_lengths().back() : kMaxBucketLength;
    const bool zoo = !out.model.zoo_name.empty();
    for (const auto& v : field(q, "values")) {
      if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > max_len)
        return make_error(qw + ": field 'values'", "sequence lengths must be integers in 1.." +
                                                       std::to_string(max_len) +
                                                       (zoo ? " (the longest zoo BERT)" : ""));
      out.shapes.values.push_back(v.get<int64_t>());
    }
    const size_t n = out.shapes.values.size();
    if (q.contains("weights")) {
      auto w = weights(field(q, "weights"), qw + ": field 'weights'", n);
      if (!w) return w.error();
      out.shapes.weights = *w;
    } else {
      out.shapes.weights.assign(n, 1.0);
    }
    if (q.contains("drift")) {
      if (!field(q, "drift").is_array())
        return make_error(qw + ": field 'drift'", "expected a list of {at_ms, weights}");
      double last = -1;
      for (size_t i = 0; i < field(q, "drift").size(); ++i) {
        const auto& d = field(q, "drift")[i];
        const std::string dw = qw + ": drift[" + std::to_string(i) + "]";
        if (!d.is_object()) return make_error(dw, "expected {at_ms, weights}");
        LOOM_TRY(check_keys(d, dw, {"at_ms", "weights"}));
        auto at = num(d, dw, "at_ms", 0, true, 0);
        if (!at) return at.error();
        if (*at <= last) return make_error(dw, "at_ms must increase");
        last = *at;
        if (!d.contains("weights")) return make_error(dw, "missing field 'weights'");
        auto w = weights(field(d, "weights"), dw + ": field 'weights'", n);
        if (!w) return w.error();
        out.shapes.drift.push_back({*at, *w});
      }
    }
  } else if (out.model.kind == ModelSpec::Kind::GemmChain) {
    out.shapes.values = {16};
    out.shapes.weights = {1.0};
  } else if (out.model.bucketed()) {
    out.model.zoo_seq = 32;  // zoo:bert without seq_len: one fixed length, bert's default
    zoo_canonical_name(out.model);
  }
  return {};
}

Status parse_stream(const json& s, size_t idx, const std::string& src, const std::string& dir, Stream& out) {
  std::string where = src + ": streams[" + std::to_string(idx) + "]";
  if (!s.is_object()) return make_error(where, "expected a mapping");
  LOOM_TRY(check_keys(s, where,
                      {"name", "model", "hidden", "ffn", "layers", "priority", "slo_ms", "arrival", "seq_len", "cores",
                       "requests", "dims", "cores_per_batch"}));
  auto name = str(s, where, "name", "stream" + std::to_string(idx), false);
  if (!name) return name.error();
  out.name = *name;
  where = src + ": stream '" + out.name + "'";
  LOOM_TRY(parse_model(s, where, dir, out));
  if (s.contains("dims")) LOOM_TRY(parse_dims(field(s, "dims"), where + ": field 'dims'", out.model));
  auto pr = integer(s, where, "priority", 0, -1000, 1000);
  if (!pr) return pr.error();
  out.priority = int(*pr);
  auto slo = num(s, where, "slo_ms", 0, true, 0, true);
  if (!slo) return slo.error();
  out.slo_ms = *slo;
  auto cores = integer(s, where, "cores", 0, 0, 64);
  if (!cores) return cores.error();
  out.cores = int(*cores);
  auto req = integer(s, where, "requests", 0, 0, 1000000000);
  if (!req) return req.error();
  out.requests = *req;
  auto cpb = integer(s, where, "cores_per_batch", 1, 1, spec::kMaxCores);
  if (!cpb) return cpb.error();
  if (*cpb > 1 && out.model.kind != ModelSpec::Kind::GemmChain)
    return make_error(where + ": field 'cores_per_batch'",
                      "a batch runs on several cores for gemm_chain streams only; '" + excerpt(out.model.name) +
                          "' runs on one core");
  out.model.cores_per_batch = int(*cpb);
  if (s.contains("seq_len") && out.model.kind == ModelSpec::Kind::Onnx && out.model.zoo_name.empty())
    LOOM_TRY(resolve_seq_symbol(field(s, "seq_len"), where + ": seq_len", out.model));

  LOOM_TRY(parse_arrival(s, where, dir, out));
  return parse_seq_len(s, where, out);
}

}  // namespace

double expected_requests(const Stream& s, double duration_ms, double load_scale) {
  const auto& a = s.arrival;
  double n = 0;
  if (a.kind == Arrival::Kind::Poisson) {
    n = a.mean_rate(duration_ms) * load_scale * duration_ms / 1000.0;
  } else if (a.kind == Arrival::Kind::Bursty) {
    const double period = a.on_ms + a.off_ms;
    const double on_share = period > 0 ? a.on_ms / period : 0;
    n = (a.on_rate * on_share + a.off_rate * (1 - on_share)) * load_scale * duration_ms / 1000.0;
  } else {
    n = double(a.trace_ms.size());
  }
  if (s.requests > 0) n = std::min(n, double(s.requests));
  return n;
}

Status check_budget(const Workload& w, double load_scale) {
  double total = 0;
  for (const auto& s : w.streams) {
    const std::string where = w.source + ": stream '" + s.name + "'";
    const double n = expected_requests(s, w.duration_ms, load_scale);
    // Within 1 % of the limit counts as above it: the arrival count of a
    // Poisson stream scatters around its mean.
    if (!(n <= 0.99 * double(limits::kMaxRequestsPerStream)))
      return make_error(where, "expects about " + std::to_string(int64_t(std::min(n, 1e18))) +
                                   " requests (rate x duration_ms), above the limit of " +
                                   std::to_string(limits::kMaxRequestsPerStream) +
                                   " per stream (docs/security.md); shorten the run, lower the rate or set 'requests'");
    if (s.arrival.kind == Arrival::Kind::Bursty) {
      const double periods = w.duration_ms / (s.arrival.on_ms + s.arrival.off_ms);
      if (!(periods <= limits::kMaxPeriods))
        return make_error(where + ": arrival: bursty", "on_ms + off_ms is so short that duration_ms spans more than " +
                                                           std::to_string(int64_t(limits::kMaxPeriods)) +
                                                           " periods (docs/security.md)");
    }
    total += n;
  }
  if (!(total <= 0.99 * double(limits::kMaxRequestsTotal)))
    return make_error(w.source, "expects about " + std::to_string(int64_t(std::min(total, 1e18))) +
                                    " requests in all streams, above the limit of " +
                                    std::to_string(limits::kMaxRequestsTotal) + " per run (docs/security.md)");
  const double bytes = total * double(limits::kServeBytesPerRequest);
  if (!(bytes <= 0.99 * double(limits::kMaxServeBytes))) {
    char what[160];
    std::snprintf(what, sizeof what,
                  "expects about %.1f M requests in all streams: about %.1f GiB of request records at %lld bytes "
                  "each, above the limit of %.0f GiB per run (docs/security.md)",
                  total / 1e6, bytes / double(1 << 30), (long long)limits::kServeBytesPerRequest,
                  double(limits::kMaxServeBytes) / double(1 << 30));
    return make_error(w.source, std::string(what) + "; shorten the run or lower the rates");
  }
  return {};
}

bool valid_batching(const std::string& s) { return s == "none" || s == "fixed" || s == "deadline"; }
bool valid_scheduling(const std::string& s) { return s == "static" || s == "dynamic" || s == "auto"; }

Expected<Workload> parse_workload_text(const std::string& text, const std::string& source) {
  auto doc = parse_yaml_text(text, source);
  if (!doc) return doc.error();
  const json& j = *doc;
  if (!j.is_object()) return make_error(source, "expected a mapping at the top level");
  LOOM_TRY(check_keys(
      j, source,
      {"config", "streams", "duration_ms", "seed", "batching", "scheduling", "max_batch", "max_queue_delay_ms",
       "slack_margin", "shape_grouping", "admission", "port_contention", "max_per_port"}));
  Workload w;
  w.source = source;
  const std::string dir = std::filesystem::path(source).parent_path().string();
  auto cfg = str(j, source, "config", w.config, false);
  if (!cfg) return cfg.error();
  w.config = *cfg;
  auto dur = num(j, source, "duration_ms", 0, true, 0, true);
  if (!dur) return dur.error();
  if (*dur > limits::kMaxDurationMs)
    return make_error(source + ": field 'duration_ms'",
                      "must be at most " + std::to_string(int64_t(limits::kMaxDurationMs)) +
                          " (docs/security.md), got " + field(j, "duration_ms").dump());
  w.duration_ms = *dur;
  auto seed = integer(j, source, "seed", 1, 0, int64_t(1) << 53);
  if (!seed) return seed.error();
  w.seed = uint64_t(*seed);
  auto b = str(j, source, "batching", w.batching, false);
  if (!b) return b.error();
  if (!valid_batching(*b))
    return make_error(source + ": field 'batching'", "unknown batching policy '" + *b + "' (none, fixed, deadline)");
  w.batching = *b;
  auto sc = str(j, source, "scheduling", w.scheduling, false);
  if (!sc) return sc.error();
  if (!valid_scheduling(*sc))
    return make_error(source + ": field 'scheduling'",
                      "unknown scheduling policy '" + *sc + "' (static, dynamic, auto)");
  w.scheduling = *sc;
  auto mb = integer(j, source, "max_batch", w.max_batch, 1, 64);
  if (!mb) return mb.error();
  w.max_batch = int(*mb);
  auto md = num(j, source, "max_queue_delay_ms", w.max_queue_delay_ms, false, 0);
  if (!md) return md.error();
  w.max_queue_delay_ms = *md;
  auto sm = num(j, source, "slack_margin", w.slack_margin, false, 0);
  if (!sm) return sm.error();
  if (*sm >= 1) return make_error(source + ": field 'slack_margin'", "must be < 1");
  w.slack_margin = *sm;
  if (j.contains("shape_grouping")) {
    if (!field(j, "shape_grouping").is_boolean())
      return make_error(source + ": field 'shape_grouping'", "expected true or false");
    w.shape_grouping = field(j, "shape_grouping").get<bool>();
  }
  if (j.contains("admission")) {
    if (!field(j, "admission").is_boolean())
      return make_error(source + ": field 'admission'", "expected true or false");
    w.admission = field(j, "admission").get<bool>();
  }
  auto pc = num(j, source, "port_contention", w.port_contention, false, 0);
  if (!pc) return pc.error();
  w.port_contention = *pc;
  auto mp = integer(j, source, "max_per_port", 0, 0, 64);
  if (!mp) return mp.error();
  w.max_per_port = int(*mp);
  if (!j.contains("streams") || !field(j, "streams").is_array() || field(j, "streams").empty())
    return make_error(source, "field 'streams' must be a non-empty list");
  for (size_t i = 0; i < field(j, "streams").size(); ++i) {
    Stream s;
    LOOM_TRY(parse_stream(field(j, "streams")[i], i, source, dir, s));
    for (const auto& o : w.streams)
      if (o.name == s.name) return make_error(source + ": stream '" + s.name + "'", "duplicate stream name");
    w.streams.push_back(std::move(s));
  }
  LOOM_TRY(check_budget(w, 1.0));
  return w;
}

Expected<Workload> load_workload(const std::string& path) {
  auto text = read_file_bytes(path, limits::kMaxTextBytes);
  if (!text) return text.error();
  return parse_workload_text(*text, path);
}

double Arrival::mean_rate(double duration_ms) const {
  if (!(duration_ms > 0)) return rate;
  double area = 0, t = 0, r = rate;
  for (const auto& c : rate_drift) {
    if (c.at_ms >= duration_ms) break;
    area += r * (c.at_ms - t);
    t = c.at_ms, r = c.rate;
  }
  return (area + r * (duration_ms - t)) / duration_ms;
}

std::vector<int64_t> bucket_ladder() {
  std::vector<int64_t> v;
  for (int64_t p = 8; p <= kMaxBucketLength; p *= 2) {
    v.push_back(p);
    if (p + p / 2 < kMaxBucketLength) v.push_back(p + p / 2);
  }
  return v;
}

std::vector<int64_t> ModelSpec::bucket_lengths() const {
  if (!zoo_name.empty()) return {std::begin(kZooBertSeqs), std::end(kZooBertSeqs)};
  return bucket_ladder();
}

bool ModelSpec::bucket_allowed(int64_t len) const {
  if (!zoo_name.empty()) return bucket_of(len) == len;
  return len >= 1 && len <= kMaxBucketLength;
}

std::string ModelSpec::allowed_lengths() const {
  if (zoo_name.empty()) return "1.." + std::to_string(kMaxBucketLength);
  std::string s;
  for (int64_t b : bucket_lengths()) s += (s.empty() ? "" : ", ") + std::to_string(b);
  return s;
}

int64_t ModelSpec::bucket_of(int64_t seq) const {
  for (int64_t b : bucket_lengths())
    if (b >= seq) return b;
  return 0;
}

ModelSpec ModelSpec::at_length(int64_t len) const {
  ModelSpec b = *this;
  if (!zoo_name.empty()) {
    b.zoo_seq = len;
  } else {
    b.dims[seq_symbol] = len;
  }
  b.name = name + ":" + (zoo_name.empty() ? seq_symbol : std::string("seq")) + "=" + std::to_string(len);
  return b;
}

int64_t ModelSpec::bound_length() const {
  if (!zoo_name.empty()) return zoo_seq;
  auto it = dims.find(seq_symbol);
  return seq_symbol.empty() || it == dims.end() ? 0 : it->second;
}

}  // namespace loom::serve
