// Reads and writes the versioned plan container (docs/plan-format.md).
#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/hash.h"
#include "common/json_read.h"
#include "common/tensor_io.h"
#include "plan/json_read.h"

namespace loom::plan {
namespace {

using nlohmann::json;

constexpr size_t kHeaderBytes = 40;  // magic 8, version 4, flags 4, meta_len 8, payload_len 8, checksum 8

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }
uint32_t get_u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t get_u64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

json binding_json(const TensorBinding& t) {
  return json{{"name", t.name},
              {"dtype", std::string(dtype_name(t.dtype))},
              {"shape", t.shape},
              {"scale", t.scale},
              {"zero_point", t.zero_point},
              {"offset", t.offset}};
}

// Typed field access that records which field was wrong.
struct Reader {
  const std::string& path;
  std::string ctx;
  std::optional<Error> err;

  template <class T>
  bool get(const json& j, const char* key, T* out) {
    if (err) return false;
    auto it = j.find(key);
    if (it == j.end()) {
      err = make_error(path + ": " + ctx, std::string("missing field '") + key + "'");
      return false;
    }
    if (!read_strict(*it, out)) {
      err = make_error(path + ": " + ctx, std::string("field '") + key + "' has the wrong type or is out of range");
      return false;
    }
    return true;
  }
};

bool read_binding(Reader& r, const json& j, TensorBinding* t) {
  if (!j.is_object()) {
    r.err = make_error(r.path + ": " + r.ctx, "expected an object");
    return false;
  }
  std::string dt;
  if (!(r.get(j, "name", &t->name) && r.get(j, "dtype", &dt) && r.get(j, "shape", &t->shape) &&
        r.get(j, "scale", &t->scale) && r.get(j, "zero_point", &t->zero_point) && r.get(j, "offset", &t->offset)))
    return false;
  if (!parse_dtype(dt, &t->dtype)) {
    r.err = make_error(r.path + ": " + r.ctx, "field 'dtype': unknown dtype '" + dt + "'");
    return false;
  }
  for (auto d : t->shape)
    if (d <= 0 || d > (int64_t(1) << 32)) {
      r.err = make_error(r.path + ": " + r.ctx, "field 'shape': dimension out of range");
      return false;
    }
  // The quantization a binding converts with: a positive finite scale, and
  // an int8 tensor's zero point among its values.
  if (!(std::isfinite(t->scale) && t->scale > 0)) {
    r.err = make_error(r.path + ": " + r.ctx, "field 'scale': " + std::to_string(t->scale) + " is not finite and > 0");
    return false;
  }
  if (t->dtype == DType::I8 && (t->zero_point < -128 || t->zero_point > 127)) {
    r.err = make_error(r.path + ": " + r.ctx,
                       "field 'zero_point': " + std::to_string(t->zero_point) + " is outside int8's -128..127");
    return false;
  }
  return true;
}

/// What the payload holds: the constants, then each core's stream.
struct Layout {
  uint64_t const_bytes = 0;
  std::vector<uint64_t> counts;  // instructions per core
};

/// The scalar fields and the configuration they name.
Expected<const spec::HwConfig*> read_scalars(Reader& r, const json& meta, Plan& p, Layout& l) {
  r.get(meta, "config", &p.config);
  r.get(meta, "graph", &p.graph_name);
  r.get(meta, "compiler", &p.compiler);
  r.get(meta, "graph_source", &p.graph_source);
  r.get(meta, "graph_hash", &p.graph_hash);
  r.get(meta, "memory_bytes", &p.memory_bytes);
  r.get(meta, "constants_offset", &p.constants_offset);
  r.get(meta, "constants_bytes", &l.const_bytes);
  r.get(meta, "semaphores_used", &p.semaphores_used);
  if (r.err) return *r.err;
  const auto* cfg = spec::find_config(p.config);
  if (!cfg) return make_error(r.path + ": metadata", "field 'config': unknown configuration '" + p.config + "'");
  if (p.semaphores_used > cfg->semaphores)
    return make_error(r.path + ": metadata", "field 'semaphores_used': exceeds the configuration's semaphores");
  return cfg;
}

/// `inputs` or `outputs`: each binding valid and inside the plan's memory.
Status read_bindings(Reader& r, const json& meta, const char* key, Plan& p) {
  json arr;
  r.ctx = "metadata";
  if (!r.get(meta, key, &arr)) return *r.err;
  if (!arr.is_array()) return make_error(r.path + ": metadata", std::string("field '") + key + "' is not an array");
  for (size_t i = 0; i < arr.size(); ++i) {
    TensorBinding t;
    r.ctx = std::string(key) + "[" + std::to_string(i) + "]";
    if (!read_binding(r, arr[i], &t)) return *r.err;
    uint64_t bytes = dtype_size(t.dtype);
    for (auto d : t.shape) bytes = (bytes > (uint64_t(1) << 40)) ? bytes : bytes * uint64_t(d);
    if (t.offset > p.memory_bytes || bytes > p.memory_bytes - t.offset)
      return make_error(r.path + ": " + r.ctx, "field 'offset': tensor lies outside the plan's memory");
    (std::string(key) == "inputs" ? p.inputs : p.outputs).push_back(std::move(t));
  }
  return {};
}

/// `cores`: one stream length per core, the payload exactly constants and
/// streams.
Status read_cores(Reader& r, const json& meta, const spec::HwConfig& cfg, uint64_t payload_len, Layout& l) {
  json cores;
  r.ctx = "metadata";
  if (!r.get(meta, "cores", &cores)) return *r.err;
  if (!cores.is_array() || cores.empty() || cores.size() > cfg.cores)
    return make_error(r.path + ": metadata", "field 'cores': expected 1.." + std::to_string(cfg.cores) + " cores");
  uint64_t need = l.const_bytes;
  for (size_t i = 0; i < cores.size(); ++i) {
    uint64_t n = 0;
    r.ctx = "cores[" + std::to_string(i) + "]";
    if (!r.get(cores[i], "insns", &n)) return *r.err;
    if (n > payload_len / spec::kInsnBytes) return make_error(r.path + ": " + r.ctx, "field 'insns': too large");
    l.counts.push_back(n);
    need += n * spec::kInsnBytes;
  }
  if (need != payload_len)
    return make_error(r.path + ": metadata", "payload size " + std::to_string(payload_len) +
                                                 " does not match constants and streams (" + std::to_string(need) +
                                                 ")");
  return {};
}

/// `layers` (optional): per-core instruction ranges inside the streams
/// (reports and `loom tune` index the streams with them).
Status read_layers(Reader& r, const json& meta, const std::vector<uint64_t>& counts, Plan& p) {
  r.ctx = "metadata";
  if (!meta.contains("layers")) return {};
  json layers;
  if (!r.get(meta, "layers", &layers)) return *r.err;
  if (!layers.is_array()) return make_error(r.path + ": metadata", "field 'layers' is not an array");
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerInfo l;
    const json& j = layers[i];
    r.ctx = "layers[" + std::to_string(i) + "]";
    if (!(r.get(j, "name", &l.name) && r.get(j, "op", &l.op) && r.get(j, "macs", &l.macs) &&
          r.get(j, "bytes_read", &l.bytes_read) && r.get(j, "bytes_written", &l.bytes_written) &&
          r.get(j, "insn_begin", &l.insn_begin) && r.get(j, "insn_end", &l.insn_end)))
      return *r.err;
    if (l.insn_begin.size() != counts.size() || l.insn_end.size() != counts.size())
      return make_error(r.path + ": " + r.ctx, "fields 'insn_begin'/'insn_end': expected one index per core");
    for (size_t k = 0; k < counts.size(); ++k)
      if (l.insn_begin[k] > l.insn_end[k] || l.insn_end[k] > counts[k])
        return make_error(r.path + ": " + r.ctx, "fields 'insn_begin'/'insn_end': core " + std::to_string(k) +
                                                     " indices out of order or past its stream");
    p.layers.push_back(std::move(l));
  }
  return {};
}

/// One unit call: pointers inside the plan's memory, start/wait indices in
/// order inside the streams, after the previous call is waited for.
Status check_unit_call(const UnitCallInfo& u, const Plan& p, const std::vector<uint64_t>& counts,
                       const std::string& where) {
  if (u.ptr_args > u.args.size()) return make_error(where, "field 'ptr_args': more than the arguments");
  for (uint32_t a = 0; a < u.ptr_args; ++a)
    if (u.args[a] < 0 || uint64_t(u.args[a]) > p.memory_bytes)
      return make_error(where, "field 'args': pointer " + std::to_string(a) + " outside the plan's memory");
  if (u.start_at.size() != counts.size() || u.wait_at.size() != counts.size())
    return make_error(where, "fields 'start_at'/'wait_at': expected one index per core");
  for (size_t k = 0; k < counts.size(); ++k)
    if (u.start_at[k] > u.wait_at[k] || u.wait_at[k] > counts[k])
      return make_error(
          where, "fields 'start_at'/'wait_at': core " + std::to_string(k) + " indices out of order or past its stream");
  if (!p.unit_calls.empty())
    for (size_t k = 0; k < counts.size(); ++k)
      if (u.start_at[k] < p.unit_calls.back().wait_at[k])
        return make_error(where, "field 'start_at': starts before the previous unit call is waited for");
  return {};
}

/// `unit_calls` (optional: plans without units read as before).
Status read_unit_calls(Reader& r, const json& meta, const std::vector<uint64_t>& counts, Plan& p) {
  if (!meta.contains("unit_calls")) return {};
  json calls;
  r.ctx = "metadata";
  if (!r.get(meta, "unit_calls", &calls)) return *r.err;
  if (!calls.is_array()) return make_error(r.path + ": metadata", "field 'unit_calls' has the wrong type");
  for (size_t i = 0; i < calls.size(); ++i) {
    UnitCallInfo u;
    const json& j = calls[i];
    r.ctx = "unit_calls[" + std::to_string(i) + "]";
    if (!(r.get(j, "layer", &u.layer) && r.get(j, "kernel", &u.kernel) && r.get(j, "unit", &u.unit) &&
          r.get(j, "ptr_args", &u.ptr_args) && r.get(j, "args", &u.args) && r.get(j, "start_at", &u.start_at) &&
          r.get(j, "wait_at", &u.wait_at) && r.get(j, "cycles", &u.cycles)))
      return *r.err;
    LOOM_TRY(check_unit_call(u, p, counts, r.path + ": " + r.ctx));
    p.unit_calls.push_back(std::move(u));
  }
  return {};
}

/// `tasks` of a dynamic plan: inside the task pool (cores[0]), waiting only
/// for earlier tasks, on a memory port the configuration has.
Status read_tasks(Reader& r, const json& meta, const spec::HwConfig& cfg, uint64_t pool, Plan& p) {
  json tasks;
  if (!r.get(meta, "tasks", &tasks)) return *r.err;
  if (!tasks.is_array()) return make_error(r.path + ": metadata", "field 'tasks' is not an array");
  for (size_t i = 0; i < tasks.size(); ++i) {
    Task t;
    const json& j = tasks[i];
    r.ctx = "tasks[" + std::to_string(i) + "]";
    const std::string where = r.path + ": " + r.ctx;
    if (!(r.get(j, "begin", &t.begin) && r.get(j, "end", &t.end) && r.get(j, "deps", &t.deps) &&
          r.get(j, "layer", &t.layer) && r.get(j, "port", &t.port) && r.get(j, "cycles", &t.cycles)))
      return *r.err;
    if (t.begin > t.end || t.end > pool)
      return make_error(where, "fields 'begin'/'end': outside the task pool (cores[0])");
    for (auto d : t.deps)
      if (d >= i) return make_error(where, "field 'deps': a task may only wait for an earlier task");
    if (t.port >= cfg.mem_ports)
      return make_error(where,
                        "field 'port': the configuration has " + std::to_string(cfg.mem_ports) + " memory ports");
    p.tasks.push_back(std::move(t));
  }
  return {};
}

/// Placement, compile options and tasks (absent from plans written before
/// they existed: those are static).
Status read_placement(Reader& r, const json& meta, const spec::HwConfig& cfg, const std::vector<uint64_t>& counts,
                      Plan& p) {
  const std::string md = r.path + ": metadata";
  r.ctx = "metadata";
  if (meta.contains("placement")) {
    if (!r.get(meta, "placement", &p.placement)) return *r.err;
    if (p.placement != "static" && p.placement != "pipeline" && p.placement != "dynamic")
      return make_error(md, "field 'placement': unknown placement '" + p.placement + "'");
  }
  // How it was compiled (compiler/options.h; checked field by field by
  // whoever acts on it): an object, absent from older plans.
  if (const auto it = meta.find("compile_options"); it != meta.end()) {
    if (!it->is_object()) return make_error(md, "field 'compile_options' is not an object");
    p.compile_options = it->dump();
  }
  if (meta.contains("tasks")) LOOM_TRY(read_tasks(r, meta, cfg, counts[0], p));
  if ((p.placement == "dynamic") != !p.tasks.empty())
    return make_error(md, "field 'tasks': a dynamic plan needs tasks and only a dynamic plan has them");
  if (p.placement == "dynamic" && p.semaphores_used < counts.size())
    return make_error(md, "field 'semaphores_used': a dynamic plan needs one semaphore per core");
  return {};
}

/// The constants and streams out of the payload (its size checked).
void read_streams(const std::string& b, const Layout& l, Plan& p) {
  p.constants.assign(b.begin(), b.begin() + std::ptrdiff_t(l.const_bytes));
  size_t at = l.const_bytes;
  for (const uint64_t n : l.counts) {
    std::vector<spec::Insn> s(n);
    for (auto& insn : s) {
      std::memcpy(insn.w.data(), b.data() + at, spec::kInsnBytes);
      at += spec::kInsnBytes;
    }
    p.cores.push_back(std::move(s));
  }
}

}  // namespace

std::string encode_container(uint32_t version, std::string_view m, std::string_view payload) {
  std::vector<uint8_t> buf(kHeaderBytes + m.size() + payload.size());
  std::memcpy(buf.data(), kMagic, 8);
  put_u32(buf, 8, version);
  put_u32(buf, 12, 0);
  put_u64(buf, 16, m.size());
  put_u64(buf, 24, payload.size());
  if (!m.empty()) std::memcpy(buf.data() + kHeaderBytes, m.data(), m.size());
  if (!payload.empty()) std::memcpy(buf.data() + kHeaderBytes + m.size(), payload.data(), payload.size());
  put_u64(buf, 32, fnv1a64(buf.data() + kHeaderBytes, buf.size() - kHeaderBytes));
  return std::string(reinterpret_cast<const char*>(buf.data()), buf.size());
}

std::string encode_plan(const Plan& p) {
  json meta;
  meta["config"] = p.config;
  meta["graph"] = p.graph_name;
  meta["compiler"] = p.compiler;
  meta["graph_source"] = p.graph_source;
  meta["graph_hash"] = p.graph_hash;
  meta["memory_bytes"] = p.memory_bytes;
  meta["constants_offset"] = p.constants_offset;
  meta["constants_bytes"] = p.constants.size();
  meta["semaphores_used"] = p.semaphores_used;
  meta["inputs"] = json::array();
  for (const auto& t : p.inputs) meta["inputs"].push_back(binding_json(t));
  meta["outputs"] = json::array();
  for (const auto& t : p.outputs) meta["outputs"].push_back(binding_json(t));
  meta["cores"] = json::array();
  for (const auto& c : p.cores) meta["cores"].push_back(json{{"insns", c.size()}});
  meta["layers"] = json::array();
  for (const auto& l : p.layers)
    meta["layers"].push_back(json{{"name", l.name},
                                  {"op", l.op},
                                  {"macs", l.macs},
                                  {"bytes_read", l.bytes_read},
                                  {"bytes_written", l.bytes_written},
                                  {"insn_begin", l.insn_begin},
                                  {"insn_end", l.insn_end}});
  meta["placement"] = p.placement;
  if (!p.compile_options.empty())
    if (json o = json::parse(p.compile_options, nullptr, false); o.is_object()) meta["compile_options"] = std::move(o);
  if (!p.tasks.empty()) {
    meta["tasks"] = json::array();
    for (const auto& t : p.tasks)
      meta["tasks"].push_back(json{{"begin", t.begin},
                                   {"end", t.end},
                                   {"deps", t.deps},
                                   {"layer", t.layer},
                                   {"port", t.port},
                                   {"cycles", t.cycles}});
  }
  if (!p.unit_calls.empty()) {  // optional: plans without units read as before
    meta["unit_calls"] = json::array();
    for (const auto& u : p.unit_calls)
      meta["unit_calls"].push_back(json{{"layer", u.layer},
                                        {"kernel", u.kernel},
                                        {"unit", u.unit},
                                        {"ptr_args", u.ptr_args},
                                        {"args", u.args},
                                        {"start_at", u.start_at},
                                        {"wait_at", u.wait_at},
                                        {"cycles", u.cycles}});
  }
  // Names are checked as UTF-8 where they come in; a dump must never throw.
  const std::string m = meta.dump(-1, ' ', false, json::error_handler_t::replace);

  std::string payload(p.constants.begin(), p.constants.end());
  for (const auto& c : p.cores)
    for (const auto& insn : c) payload.append(reinterpret_cast<const char*>(insn.w.data()), spec::kInsnBytes);
  return encode_container(kPlanFormatVersion, m, payload);
}

Status write_plan(const Plan& p, const std::string& path) { return write_file_atomic(path, encode_plan(p)); }

bool looks_like_plan(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char m[8] = {};
  f.read(m, 8);
  return f.gcount() == 8 && std::memcmp(m, kMagic, 8) == 0;
}

uint32_t plan_format_version(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char h[12] = {};
  f.read(h, 12);
  if (f.gcount() != 12 || std::memcmp(h, kMagic, 8) != 0) return 0;
  uint32_t v;
  std::memcpy(&v, h + 8, 4);
  return v;
}

Expected<Container> decode_container(std::string_view bytes, const std::string& path) {
  const std::vector<uint8_t> b(bytes.begin(), bytes.begin() + std::ptrdiff_t(std::min(bytes.size(), kHeaderBytes)));
  if (b.size() < kHeaderBytes)
    return make_error(path, "truncated plan: " + std::to_string(bytes.size()) + " bytes, header needs " +
                                std::to_string(kHeaderBytes));
  if (std::memcmp(b.data(), kMagic, 8) != 0) return make_error(path, "not a loom plan (bad magic)");
  const uint32_t version = get_u32(b, 8);
  if (const uint32_t flags = get_u32(b, 12); flags != 0)
    return make_error(path, "field 'flags': " + std::to_string(flags) + " (no flags are defined; a plan has 0)");
  if (version != kPlanFormatVersion && version != kOnnxProgramFormatVersion && version != kProgramFormatVersion)
    return make_error(path, "field 'format_version': unsupported plan format version " + std::to_string(version) +
                                " (this loom reads " + std::to_string(kPlanFormatVersion) + ", " +
                                std::to_string(kOnnxProgramFormatVersion) + " and " +
                                std::to_string(kProgramFormatVersion) + ")");
  const uint64_t meta_len = get_u64(b, 16), payload_len = get_u64(b, 24);
  if (meta_len > bytes.size() || payload_len > bytes.size() || kHeaderBytes + meta_len + payload_len != bytes.size())
    return make_error(path, "truncated or padded plan: header announces " +
                                std::to_string(kHeaderBytes + meta_len + payload_len) + " bytes, file has " +
                                std::to_string(bytes.size()));
  if (fnv1a64(reinterpret_cast<const uint8_t*>(bytes.data()) + kHeaderBytes, bytes.size() - kHeaderBytes) !=
      get_u64(b, 32))
    return make_error(path, "checksum mismatch: the plan is corrupted");
  Container c;
  c.version = version;
  c.meta = std::string(bytes.substr(kHeaderBytes, meta_len));
  c.payload = std::string(bytes.substr(kHeaderBytes + meta_len));
  return c;
}

Expected<Plan> read_plan(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return decode_plan(*bytes, path);
}

Expected<Plan> decode_plan(std::string_view bytes, const std::string& path) {
  auto c = decode_container(bytes, path);
  if (!c) return c.error();
  return decode_plan(*c, path);
}

Expected<Plan> decode_plan(const Container& c, const std::string& path) {
  if (c.version != kPlanFormatVersion)
    return make_error(path, "field 'format_version': a program plan (format " + std::to_string(c.version) +
                                ": device segments and host steps), not one plan; `loom run` runs it");
  // Nesting bounded while parsing: a deep value would recurse when dumped.
  auto parsed = parse_json_sorted(c.meta, path + ": metadata");
  if (!parsed) return parsed.error();
  const json& meta = *parsed;
  if (!meta.is_object()) return make_error(path, "metadata is not a JSON object");

  Plan p;
  Reader r{path, "metadata", {}};
  Layout l;
  auto cfg = read_scalars(r, meta, p, l);
  if (!cfg) return cfg.error();
  for (const char* key : {"inputs", "outputs"}) LOOM_TRY(read_bindings(r, meta, key, p));
  if (l.const_bytes > p.memory_bytes || p.constants_offset > p.memory_bytes - l.const_bytes)
    return make_error(path + ": metadata", "field 'constants_offset': constants lie outside the plan's memory");
  LOOM_TRY(read_cores(r, meta, **cfg, c.payload.size(), l));
  LOOM_TRY(read_layers(r, meta, l.counts, p));
  LOOM_TRY(read_unit_calls(r, meta, l.counts, p));
  LOOM_TRY(read_placement(r, meta, **cfg, l.counts, p));
  read_streams(c.payload, l, p);
  return p;
}

}  // namespace loom::plan
