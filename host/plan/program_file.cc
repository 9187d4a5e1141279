// Program files: the container, segments, steps, notes and file-level checks
// of every program, whatever its frontend; the host steps go through the
// frontend's HostCodec. Older formats are read by mapping them onto this one.
#include "plan/program_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_read.h"
#include "common/limits.h"
#include "common/tensor_io.h"
#include "plan/json_read.h"

namespace loom::plan {

namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }  // never throws

// ---- writing ---------------------------------------------------------------

/// The `host` metadata object: the codec's fields, its name and length.
Expected<json> host_meta(const HostBytes& h, const char* codec, const std::string& where) {
  json j = json::parse(h.meta, nullptr, false);
  if (!j.is_object()) return make_error(where, std::string("the ") + codec + " codec's metadata is not a JSON object");
  j["codec"] = codec;
  j["bytes"] = h.bytes.size();
  return j;
}

/// Metadata fields of the program itself (not of its segments or steps).
json info_meta(const ProgramInfo& info) {
  json meta;
  meta["kind"] = "program";
  meta["config"] = info.config;
  meta["compiler"] = info.compiler;
  meta["graph_source"] = info.source;
  meta["graph_hash"] = info.source_hash;
  if (!info.compile_options.empty())
    if (json o = json::parse(info.compile_options, nullptr, false); o.is_object())
      meta["compile_options"] = std::move(o);
  if (!info.input_shapes.empty())
    if (json o = json::parse(info.input_shapes, nullptr, false); o.is_object()) meta["input_shapes"] = std::move(o);
  return meta;
}

Status check_writable(const Program& p, const ProgramInfo& info, const HostCodec* codec, const std::string& where) {
  LOOM_TRY(validate(p, where));
  for (size_t k = 0; k < p.segments.size(); ++k)
    if (p.segments[k].plan.config != info.config)
      return make_error(where + ": segment " + std::to_string(k),
                        "compiled for '" + p.segments[k].plan.config + "', the program for '" + info.config + "'");
  if (!p.host) {
    for (size_t k = 0; k < p.steps.size(); ++k)
      if (!p.steps[k].on_device())
        return make_error(where + ": step " + std::to_string(k), "a host step in a program without a host model");
    return {};
  }
  if (!codec || std::strcmp(codec->kind(), p.host->kind()) != 0)
    return make_error(where, std::string("host steps of kind '") + p.host->kind() + "' need their codec, and " +
                                 (codec ? "'" + std::string(codec->kind()) + "' was given" : "none was given"));
  return {};
}

}  // namespace

ProgramInfo info_of(const Plan& p) {
  return ProgramInfo{p.config, p.compiler, p.graph_source, p.graph_hash, p.compile_options, {}};
}

Expected<std::string> encode_program(const Program& p, const ProgramInfo& info, const std::string& where,
                                     const HostCodec* codec) {
  LOOM_TRY(check_writable(p, info, codec, where));
  HostBytes host;
  json meta = info_meta(info);
  if (p.host) {
    auto h = codec->encode(p, where);
    if (!h) return h.error();
    host = std::move(*h);
    if (host.index.size() != p.steps.size())
      return make_error(where, std::string("the ") + codec->kind() + " codec indexed " +
                                   std::to_string(host.index.size()) + " of " + std::to_string(p.steps.size()) +
                                   " steps");
    auto hm = host_meta(host, codec->kind(), where);
    if (!hm) return hm.error();
    meta["host"] = std::move(*hm);
  }
  std::string payload = host.bytes;
  meta["segments"] = json::array();
  for (const Segment& s : p.segments) {
    const std::string b = encode_plan(s.plan);
    payload += b;
    meta["segments"].push_back(
        json{{"plan_bytes", b.size()}, {"nodes", s.ops}, {"inputs", s.inputs}, {"outputs", s.outputs}});
  }
  meta["steps"] = json::array();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& st = p.steps[k];
    meta["steps"].push_back(st.on_device() ? json{{"segment", st.segment}} : json{{"host", host.index[k]}});
  }
  meta["fallback_ops"] = p.fallback_ops();
  meta["notes"] = p.notes;
  return encode_container(kProgramFormatVersion, dump(meta), payload);
}

Status write_program(const Program& p, const ProgramInfo& info, const std::string& path, const HostCodec* codec) {
  auto bytes = encode_program(p, info, path, codec);
  if (!bytes) return Status(bytes.error()).context("nothing written");
  return write_file_atomic(path, *bytes);
}

// ---- reading ---------------------------------------------------------------

namespace {

/// What the container reads of a program file's metadata before its
/// segments and steps.
struct Header {
  ProgramInfo info;
  std::vector<std::string> notes, fallback_ops;
  json segments, steps;
  json host;  // null: no host steps
};

/// Format 2 (an ONNX model's program plan) as format-3 metadata: its host
/// fields move into `host` (codec "onnx": the host model's length, the
/// report counters and each segment's boundary layouts), its `{"node": i}`
/// steps become `{"host": i}`. Everything is checked afterwards, as in a
/// format-3 file; what format 2 required is required here.
Expected<json> upgrade_onnx_program(json meta, const std::string& path) {
  Fields r{path, {}};
  std::string kind;
  uint64_t host_bytes = 0;
  json opts;
  r.get(meta, "metadata", "kind", &kind);
  r.get(meta, "metadata", "host_model_bytes", &host_bytes);
  r.get(meta, "metadata", "compile_options", &opts);  // format 2 always recorded it
  if (r.err) return *r.err;
  if (kind != "onnx_program")
    return make_error(path + ": metadata", "field 'kind': '" + excerpt(kind) + "' is not 'onnx_program'");
  json host{{"codec", "onnx"}, {"bytes", host_bytes}, {"layouts", json::array()}};
  for (const char* key : {"model", "onnx_nodes", "folded_qdq"})
    if (meta.contains(key)) host[key] = meta.at(key);
  if (auto segs = meta.find("segments"); segs != meta.end() && segs->is_array())
    for (const json& s : *segs) {
      json layout = json::object();
      for (const char* key : {"nhwc", "u8"})
        if (s.is_object() && s.contains(key)) layout[key] = s.at(key);
      host["layouts"].push_back(std::move(layout));
    }
  if (auto steps = meta.find("steps"); steps != meta.end() && steps->is_array())
    for (json& s : *steps)
      if (s.is_object() && !s.contains("segment") && s.contains("node")) s = json{{"host", s.at("node")}};
  meta["kind"] = "program";
  meta["host"] = std::move(host);
  meta.erase("host_model_bytes");
  return meta;
}

Expected<Header> read_header(const json& meta, const std::string& path) {
  Header h;
  Fields r{path, {}};
  std::string kind;
  r.get(meta, "metadata", "kind", &kind);
  r.get(meta, "metadata", "config", &h.info.config);
  r.get(meta, "metadata", "compiler", &h.info.compiler);
  r.get(meta, "metadata", "graph_source", &h.info.source);
  r.get(meta, "metadata", "graph_hash", &h.info.source_hash);
  r.get(meta, "metadata", "fallback_ops", &h.fallback_ops);
  r.get(meta, "metadata", "notes", &h.notes);
  r.get(meta, "metadata", "segments", &h.segments);
  r.get(meta, "metadata", "steps", &h.steps);
  if (r.err) return *r.err;
  const std::string md = path + ": metadata";
  if (kind != "program") return make_error(md, "field 'kind': '" + excerpt(kind) + "' is not 'program'");
  if (!spec::find_config(h.info.config))
    return make_error(md, "field 'config': unknown configuration '" + excerpt(h.info.config) + "'");
  // How it was compiled (compiler/options.h; checked field by field by
  // whoever acts on it): an object, absent when not recorded.
  if (const auto it = meta.find("compile_options"); it != meta.end()) {
    if (!it->is_object()) return make_error(md, "field 'compile_options' is not an object");
    h.info.compile_options = it->dump();
  }
  if (const auto it = meta.find("input_shapes"); it != meta.end()) {
    if (!it->is_object()) return make_error(md, "field 'input_shapes' is not an object");
    h.info.input_shapes = it->dump();
  }
  if (!h.segments.is_array()) return make_error(md, "field 'segments' is not an array");
  if (!h.steps.is_array()) return make_error(md, "field 'steps' is not an array");
  if (const auto it = meta.find("host"); it != meta.end()) {
    if (!it->is_object()) return make_error(md, "field 'host' is not an object");
    h.host = *it;
  }
  return h;
}

/// The host steps' bytes (at the start of the payload) and the codec's
/// metadata, once the codec is known to be the one the file names.
Expected<HostBytes> read_host(const json& host, std::string_view payload, const HostCodec* codec,
                              const std::string& path) {
  Fields r{path, {}};
  std::string name;
  uint64_t n = 0;
  r.get(host, "host", "codec", &name);
  r.get(host, "host", "bytes", &n);
  if (r.err) return *r.err;
  const std::string w = path + ": host";
  if (!codec || name != codec->kind())
    return make_error(w, "field 'codec': host steps of '" + excerpt(name) + "', which " +
                             (codec ? "the '" + std::string(codec->kind()) + "' codec does not read"
                                    : std::string("this reader was given no codec for")));
  if (n > payload.size())
    return make_error(w, "field 'bytes': " + std::to_string(n) + " exceeds the payload (" +
                             std::to_string(payload.size()) + " bytes)");
  HostBytes h;
  h.bytes = std::string(payload.substr(0, n));
  h.meta = host.dump();
  return h;
}

bool same_name_set(const std::vector<std::string>& names, const std::vector<TensorBinding>& b) {
  std::set<std::string> x(names.begin(), names.end()), y;
  for (const auto& t : b) y.insert(t.name);
  return x == y && x.size() == names.size();
}

/// Segment `k`: its entry in the metadata and its plan, `*at` bytes into
/// the payload.
Expected<Segment> read_segment(const json& j, size_t k, std::string_view payload, size_t* at, const ProgramInfo& info,
                               const std::string& path) {
  const std::string ctx = "segments[" + std::to_string(k) + "]";
  const std::string w = path + ": " + ctx;
  Fields r{path, {}};
  Segment s;
  uint64_t n = 0;
  r.get(j, ctx, "plan_bytes", &n);
  r.get(j, ctx, "nodes", &s.ops);
  r.get(j, ctx, "inputs", &s.inputs);
  r.get(j, ctx, "outputs", &s.outputs);
  if (r.err) return *r.err;
  if (n > payload.size() - *at)
    return make_error(w, "field 'plan_bytes': " + std::to_string(n) + " bytes run past the end of the payload");
  auto plan = decode_plan(payload.substr(*at, n), w);
  if (!plan) return plan.error();
  *at += n;
  s.plan = std::move(*plan);
  if (s.plan.config != info.config)
    return make_error(w, "field 'config': the segment was compiled for '" + s.plan.config + "', the program for '" +
                             info.config + "'");
  // The boundary tensors are the plan's bindings, by name.
  if (!same_name_set(s.inputs, s.plan.inputs))
    return make_error(w, "field 'inputs': not the inputs of the segment's plan");
  if (!same_name_set(s.outputs, s.plan.outputs))
    return make_error(w, "field 'outputs': not the outputs of the segment's plan");
  if (s.outputs.empty()) return make_error(w, "field 'outputs': a segment with no outputs");
  // Held in the plan's binding order, whatever order the file lists them in.
  s.inputs.clear();
  s.outputs.clear();
  for (const auto& b : s.plan.inputs) s.inputs.push_back(b.name);
  for (const auto& b : s.plan.outputs) s.outputs.push_back(b.name);
  return s;
}

/// Steps: each a segment (in range, run exactly once) or a host step (its
/// index the codec's to check).
Status read_steps(const json& steps, bool has_host, Program& p, const std::string& path) {
  Fields r{path, {}};
  std::vector<int> seen(p.segments.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    const std::string ctx = "steps[" + std::to_string(k) + "]";
    const std::string w = path + ": " + ctx;
    Step st;
    if (steps[k].is_object() && steps[k].contains("segment")) {
      int64_t i = -1;
      if (!r.get(steps[k], ctx, "segment", &i)) return *r.err;
      if (i < 0 || i >= int64_t(p.segments.size()))
        return make_error(w, "field 'segment': " + std::to_string(i) + " is out of range (the plan has " +
                                 std::to_string(p.segments.size()) + " segments)");
      if (seen[size_t(i)]++) return make_error(w, "field 'segment': segment " + std::to_string(i) + " runs twice");
      st.segment = int(i);
    } else {
      uint64_t i = 0;
      if (!r.get(steps[k], ctx, "host", &i)) return *r.err;
      if (!has_host) return make_error(w, "field 'host': a host step in a program without host steps (no 'host')");
      st.host = size_t(i);
    }
    p.steps.push_back(st);
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) return make_error(path + ": metadata", "field 'steps': segment " + std::to_string(k) + " never runs");
  return {};
}

/// A format-3 program (or an older one mapped onto it) from its metadata
/// and payload.
Expected<ProgramFile> read_program_meta(const json& meta, std::string_view payload, const HostCodec* codec,
                                        const std::string& path) {
  auto header = read_header(meta, path);
  if (!header) return header.error();
  const Header& hd = *header;
  ProgramFile f;
  f.info = hd.info;
  Program& p = f.program;
  p.notes = hd.notes;
  HostBytes host;
  if (!hd.host.is_null()) {
    auto h = read_host(hd.host, payload, codec, path);
    if (!h) return h.error();
    host = std::move(*h);
  }
  size_t at = host.bytes.size();
  for (size_t k = 0; k < hd.segments.size(); ++k) {
    auto s = read_segment(hd.segments[k], k, payload, &at, f.info, path);
    if (!s) return s.error();
    p.segments.push_back(std::move(*s));
  }
  const std::string md = path + ": metadata";
  if (at != payload.size())
    return make_error(md, "payload size " + std::to_string(payload.size()) +
                              " does not match the host steps and segment plans (" + std::to_string(at) + ")");
  LOOM_TRY(read_steps(hd.steps, !hd.host.is_null(), p, path));
  if (!hd.host.is_null()) LOOM_TRY(codec->decode(host, p, path));
  if (hd.fallback_ops != p.fallback_ops())
    return make_error(md, "field 'fallback_ops': not the ops of the host steps, in step order");
  return f;
}

}  // namespace

Expected<ProgramFile> decode_program(std::string_view bytes, const std::string& path, const HostCodec* codec) {
  auto c = decode_container(bytes, path);
  if (!c) return c.error();
  if (c->version == kPlanFormatVersion) {  // one graph's plan: a program of one segment
    auto pl = decode_plan(*c, path);
    if (!pl) return pl.error();
    ProgramFile f;
    f.version = c->version;
    f.info = info_of(*pl);
    f.program = single_segment(std::move(*pl));
    return f;
  }
  // Nesting bounded while parsing: a deep value would recurse when dumped.
  auto meta = parse_json_sorted(c->meta, path + ": metadata");
  if (!meta) return meta.error();
  if (!meta->is_object()) return make_error(path, "metadata is not a JSON object");
  if (c->version == kOnnxProgramFormatVersion) {
    auto up = upgrade_onnx_program(std::move(*meta), path);
    if (!up) return up.error();
    *meta = std::move(*up);
  }
  auto f = read_program_meta(*meta, c->payload, codec, path);
  if (f) f->version = c->version;
  return f;
}

Expected<ProgramFile> read_program(const std::string& path, const HostCodec* codec) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error();
  return decode_program(*bytes, path, codec);
}

std::string host_codec_of(const std::string& path) {
  const uint32_t v = plan_format_version(path);
  if (v == kOnnxProgramFormatVersion) return "onnx";
  if (v != kProgramFormatVersion) return "";
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  const auto size = uint64_t(std::max<std::streamoff>(f.tellg(), 0));
  char h[24] = {};
  f.seekg(0);
  f.read(h, 24);
  uint64_t meta_len = 0;
  std::memcpy(&meta_len, h + 16, 8);
  if (f.gcount() != 24 || size < 40 || meta_len > size - 40 || meta_len > limits::kMaxFileBytes) return "";
  f.seekg(40);
  std::string text(meta_len, '\0');
  f.read(text.data(), std::streamsize(meta_len));
  if (uint64_t(f.gcount()) != meta_len) return "";
  auto meta = parse_json_sorted(text, path);
  if (!meta || !meta->is_object()) return "";
  const auto host = meta->find("host");
  if (host == meta->end() || !host->is_object()) return "";
  const auto codec = host->find("codec");
  return codec != host->end() && codec->is_string() ? codec->get<std::string>() : "";
}

}  // namespace loom::plan
