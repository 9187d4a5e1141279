// Reader for loom's JSON graph format (docs/graph-format.md): syntax, field
// types and initializers here, graph semantics in validate().
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/tensor_io.h"
#include "ir/graph.h"
#include "ir/ir_util.h"

namespace loom::ir {

using detail::field_where;
using detail::join_where;
using json = nlohmann::json;

namespace detail {
std::string fmt_real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace detail

const char* op_name(OpKind k) {
  for (const auto& o : detail::kOps)
    if (o.kind == k) return o.name;
  return "?";
}

namespace {

// Short, single-line rendering of a JSON value for "got ..." messages.
std::string describe(const json& v) {
  std::string d = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (d.size() > 40) d = d.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + d;
}

Error type_error(const std::string& where, const char* expected, const json& v) {
  return make_error(where, std::string("expected ") + expected + ", got " + describe(v));
}

// Extends the field named at the end of `where`: field 'init' -> field 'init.low'.
std::string sub(const std::string& where, const std::string& suffix) {
  if (!where.empty() && where.back() == '\'') return where.substr(0, where.size() - 1) + suffix + "'";
  return where + suffix;
}

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status as_int(const json& v, const std::string& where, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
      return make_error(where, "integer " + v.dump() + " is out of range");
    }
  } else if (!v.is_number_integer()) {
    return type_error(where, "an integer", v);
  }
  *out = v.get<int64_t>();
  return {};
}

Status as_real(const json& v, const std::string& where, double* out) {
  if (!v.is_number()) return type_error(where, "a number", v);
  *out = v.get<double>();
  if (!std::isfinite(*out)) return make_error(where, "value is not finite");
  return {};
}

Status as_string(const json& v, const std::string& where, std::string* out) {
  if (!v.is_string()) return type_error(where, "a string", v);
  *out = v.get<std::string>();
  return {};
}

Status as_int_list(const json& v, const std::string& where, size_t want, std::vector<int64_t>* out) {
  if (!v.is_array()) return type_error(where, "an array of integers", v);
  if (want && v.size() != want) {
    return make_error(where, "expected " + std::to_string(want) + " values, got " + std::to_string(v.size()));
  }
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t x = 0;
    LOOM_TRY(as_int(v[i], sub(where, std::string("[").append(std::to_string(i)).append("]")), &x));
    out->push_back(x);
  }
  return {};
}

Status as_name_list(const json& v, const std::string& where, std::vector<std::string>* out) {
  if (!v.is_array()) return type_error(where, "an array of tensor names", v);
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string s;
    LOOM_TRY(as_string(v[i], sub(where, std::string("[").append(std::to_string(i)).append("]")), &s));
    out->push_back(std::move(s));
  }
  return {};
}

Status check_keys(const json& obj, const std::string& where, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      return make_error(field_where(where, it.key()), "unknown field (expected one of: " + list + ")");
    }
  }
  return {};
}

Status require(const json& obj, const char* key, const std::string& where, const json** out) {
  *out = member(obj, key);
  if (!*out) return make_error(field_where(where, key), "required field is missing");
  return {};
}

// Integer range of each graph dtype, for data, init and zero points.
void dtype_range(DType t, int64_t* lo, int64_t* hi) {
  if (t == DType::I32) {
    *lo = std::numeric_limits<int32_t>::min();
    *hi = std::numeric_limits<int32_t>::max();
  } else {
    *lo = -128;
    *hi = 127;
  }
}

void store(Tensor* t, int64_t i, int64_t v) {
  if (t->dtype == DType::I32) {
    t->i32()[i] = int32_t(v);
  } else {
    t->i8()[i] = int8_t(v);
  }
}

Status parse_tensor(const std::string& name, const json& j, const std::string& src, TensorInfo* ti) {
  const std::string where = join_where(src, "tensor '" + name + "'");
  if (!j.is_object()) return type_error(where, "an object", j);
  LOOM_TRY(check_keys(j, where, {"dtype", "shape", "scale", "zero_point", "data", "init", "doc"}));
  ti->name = name;
  if (const json* d = member(j, "dtype")) {
    std::string s;
    LOOM_TRY(as_string(*d, field_where(where, "dtype"), &s));
    if (!parse_dtype(s, &ti->dtype)) {
      return make_error(field_where(where, "dtype"), "unknown dtype '" + s + "' (graphs use int8 and int32)");
    }
  }
  if (const json* s = member(j, "shape")) LOOM_TRY(as_int_list(*s, field_where(where, "shape"), 0, &ti->shape));
  if (const json* s = member(j, "scale")) {
    const std::string fw = field_where(where, "scale");
    ti->q.scale.clear();
    if (s->is_array()) {
      if (s->empty()) return make_error(fw, "expected at least one scale");
      for (size_t i = 0; i < s->size(); ++i) {
        double x = 0;
        LOOM_TRY(as_real((*s)[i], sub(fw, "[" + std::to_string(i) + "]"), &x));
        ti->q.scale.push_back(x);
      }
    } else {
      double x = 0;
      LOOM_TRY(as_real(*s, fw, &x));
      ti->q.scale.push_back(x);
    }
  } else if (ti->dtype == DType::I8) {
    return make_error(field_where(where, "scale"), "required field is missing (int8 tensors need a scale)");
  }
  if (const json* z = member(j, "zero_point")) {
    int64_t zp = 0;
    LOOM_TRY(as_int(*z, field_where(where, "zero_point"), &zp));
    // Range is checked by validate(); keep the value visible in its message.
    if (zp < std::numeric_limits<int32_t>::min() || zp > std::numeric_limits<int32_t>::max()) {
      return make_error(field_where(where, "zero_point"), std::to_string(zp) + " is outside the int32 range");
    }
    ti->q.zero_point = int32_t(zp);
  }

  const json* data = member(j, "data");
  const json* init = member(j, "init");
  if (data && init) return make_error(field_where(where, "init"), "give either 'data' or 'init', not both");
  if (!data && !init) return {};
  const std::string which = data ? "data" : "init";
  ti->is_const = true;
  if (!member(j, "shape"))
    return make_error(field_where(where, "shape"), "required field is missing (constants need a shape)");
  if (ti->dtype != DType::I8 && ti->dtype != DType::I32) {
    return make_error(field_where(where, "dtype"),
                      "constants must be int8 or int32, got " + std::string(dtype_name(ti->dtype)));
  }
  for (size_t i = 0; i < ti->shape.size(); ++i) {
    if (ti->shape[i] < 1) {
      return make_error(field_where(where, "shape"), "dimension " + std::to_string(i) + " is " +
                                                         std::to_string(ti->shape[i]) + "; dims must be >= 1");
    }
  }
  auto n = checked_numel(ti->shape);
  if (!n) return make_error(field_where(where, "shape"), n.error().what);
  if (*n > limits::kMaxTensorElems) {
    return make_error(field_where(where, "shape"), "constant of " + std::to_string(*n) + " elements is too large");
  }
  int64_t lo = 0, hi = 0;
  dtype_range(ti->dtype, &lo, &hi);
  const std::string dt(dtype_name(ti->dtype));
  if (data) {
    const std::string fw = field_where(where, "data");
    if (!data->is_array()) return type_error(fw, "an array of integers", *data);
    if (int64_t(data->size()) != *n) {
      return make_error(fw, "holds " + std::to_string(data->size()) + " values, shape " + shape_str(ti->shape) +
                                " needs " + std::to_string(*n));
    }
    ti->data = Tensor(ti->dtype, ti->shape);
    for (int64_t i = 0; i < *n; ++i) {
      int64_t v = 0;
      LOOM_TRY(as_int((*data)[size_t(i)], sub(fw, "[" + std::to_string(i) + "]"), &v));
      if (v < lo || v > hi) {
        return make_error(sub(fw, "[" + std::to_string(i) + "]"),
                          std::to_string(v) + " is outside the " + dt + " range");
      }
      store(&ti->data, i, v);
    }
    return {};
  }
  const std::string fw = field_where(where, "init");
  if (!init->is_object()) return type_error(fw, "an object {seed, low, high}", *init);
  LOOM_TRY(check_keys(*init, fw, {"seed", "low", "high"}));
  const json *js = nullptr, *jl = nullptr, *jh = nullptr;
  LOOM_TRY(require(*init, "seed", fw, &js));
  LOOM_TRY(require(*init, "low", fw, &jl));
  LOOM_TRY(require(*init, "high", fw, &jh));
  if (!js->is_number_unsigned()) return type_error(sub(fw, ".seed"), "a non-negative integer", *js);
  int64_t l = 0, h = 0;
  LOOM_TRY(as_int(*jl, sub(fw, ".low"), &l));
  LOOM_TRY(as_int(*jh, sub(fw, ".high"), &h));
  if (l < lo || l > hi) return make_error(sub(fw, ".low"), std::to_string(l) + " is outside the " + dt + " range");
  if (h < lo || h > hi) return make_error(sub(fw, ".high"), std::to_string(h) + " is outside the " + dt + " range");
  if (l > h) return make_error(fw, "low " + std::to_string(l) + " is greater than high " + std::to_string(h));
  ti->data = Tensor(ti->dtype, ti->shape);
  detail::SplitMix64 rng(js->get<uint64_t>());
  for (int64_t i = 0; i < *n; ++i) store(&ti->data, i, rng.in_range(l, h));
  return {};
}

Status parse_pair(const json& v, const std::string& where, int64_t* a, int64_t* b) {
  std::vector<int64_t> xs;
  LOOM_TRY(as_int_list(v, where, 2, &xs));
  *a = xs[0];
  *b = xs[1];
  return {};
}

int32_t real_to_q(double r, const TensorInfo* y) {
  return detail::real_to_q(r, y && !y->q.scale.empty() ? y->q.scale[0] : 1.0, y ? y->q.zero_point : 0);
}

Status parse_activation(const json& v, const std::string& where, const TensorInfo* y, Activation* act) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") return {};
    if (s == "relu") {
      act->lo = std::max<int32_t>(y ? y->q.zero_point : 0, -128);
      act->hi = 127;
      return {};
    }
    return make_error(where, "unknown activation '" + s + "' (expected \"none\", \"relu\" or {\"clip\": [min, max]})");
  }
  if (v.is_object() && v.size() == 1 && v.contains("clip")) {
    const json& c = *v.find("clip");
    if (!c.is_array() || c.size() != 2) return type_error(sub(where, ".clip"), "[min, max]", c);
    double lo = 0, hi = 0;
    LOOM_TRY(as_real(c[0], sub(where, ".clip[0]"), &lo));
    LOOM_TRY(as_real(c[1], sub(where, ".clip[1]"), &hi));
    if (lo > hi)
      return make_error(where, "clip min " + detail::fmt_real(lo) + " is greater than max " + detail::fmt_real(hi));
    act->lo = real_to_q(lo, y);
    act->hi = real_to_q(hi, y);
    return {};
  }
  return type_error(where, "\"relu\", \"none\" or {\"clip\": [min, max]}", v);
}

Status parse_attrs(const json& j, const std::string& where, const detail::OpInfo& op, const Graph& g, Node* n) {
  if (!j.is_object()) return type_error(field_where(where, "attrs"), "an object", j);
  Attrs& a = n->attrs;
  bool have_kernel = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    const std::string fw = field_where(where, k);
    if (!detail::op_has_attr(op, k)) {
      return make_error(fw, std::string("unsupported attribute for ") + op.name +
                                (*op.attrs ? std::string(" (supported: ") + op.attrs + ")" : " (it takes none)"));
    }
    if (k == "kernel") {
      LOOM_TRY(parse_pair(v, fw, &a.kernel_h, &a.kernel_w));
      have_kernel = true;
    } else if (k == "strides") {
      LOOM_TRY(parse_pair(v, fw, &a.stride_h, &a.stride_w));
    } else if (k == "pads") {
      std::vector<int64_t> p;
      LOOM_TRY(as_int_list(v, fw, 4, &p));
      a.pad_top = p[0], a.pad_left = p[1], a.pad_bottom = p[2], a.pad_right = p[3];
    } else if (k == "dilations") {
      std::vector<int64_t> d;
      LOOM_TRY(as_int_list(v, fw, 2, &d));
      for (int64_t x : d) {
        if (x != 1) return make_error(fw, "dilation " + std::to_string(x) + " is not supported (only 1)");
      }
    } else if (k == "groups") {
      LOOM_TRY(as_int(v, fw, &a.groups));
    } else if (k == "trans_b") {
      if (!v.is_boolean()) return type_error(fw, "true or false", v);
      a.trans_b = v.get<bool>();
    } else if (k == "round_even") {
      if (!v.is_boolean()) return type_error(fw, "true or false", v);
      a.round_even = v.get<bool>();
    } else if (k == "count_include_pad") {
      if (v.is_boolean()) {
        a.count_include_pad = v.get<bool>();
      } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
        a.count_include_pad = v.get<int64_t>() == 1;
      } else {
        return type_error(fw, "true or false", v);
      }
    } else if (k == "min") {
      LOOM_TRY(as_real(v, fw, &a.clip_min));
    } else if (k == "max") {
      LOOM_TRY(as_real(v, fw, &a.clip_max));
    } else if (k == "shape") {
      LOOM_TRY(as_int_list(v, fw, 0, &a.shape));
    } else if (k == "perm") {
      LOOM_TRY(as_int_list(v, fw, 0, &a.perm));
    } else if (k == "axis") {
      LOOM_TRY(as_int(v, fw, &a.axis));
    } else if (k == "starts") {
      LOOM_TRY(as_int_list(v, fw, 0, &a.starts));
    } else if (k == "ends") {
      LOOM_TRY(as_int_list(v, fw, 0, &a.ends));
    } else if (k == "eps") {
      LOOM_TRY(as_int(v, fw, &a.eps));
      if (a.eps < 0 || a.eps > int64_t(UINT32_MAX))
        return make_error(fw, std::to_string(a.eps) + " is outside 0..4294967295");
    } else if (k == "activation") {
      const TensorInfo* y = nullptr;
      if (n->outputs.size() == 1) {
        auto t = g.tensors.find(n->outputs[0]);
        if (t != g.tensors.end()) y = &t->second;
      }
      LOOM_TRY(parse_activation(v, fw, y, &a.act));
    }
  }
  if (op.kind == OpKind::Clip) {
    if (!j.contains("min")) a.clip_min = -std::numeric_limits<double>::infinity();
    if (!j.contains("max")) a.clip_max = std::numeric_limits<double>::infinity();
    if (a.clip_min > a.clip_max) {
      return make_error(field_where(where, "min"),
                        "min " + detail::fmt_real(a.clip_min) + " is greater than max " + detail::fmt_real(a.clip_max));
    }
  }
  if ((op.kind == OpKind::MaxPool || op.kind == OpKind::AvgPool) && !have_kernel) {
    return make_error(field_where(where, "kernel"), "required field is missing");
  }
  if (op.kind == OpKind::Slice && (!j.contains("starts") || !j.contains("ends"))) {
    return make_error(field_where(where, j.contains("starts") ? "ends" : "starts"), "required field is missing");
  }
  if (op.kind == OpKind::Transpose && !j.contains("perm")) {
    return make_error(field_where(where, "perm"), "required field is missing");
  }
  if (op.kind == OpKind::Reshape && !j.contains("shape")) {
    return make_error(field_where(where, "shape"), "required field is missing");
  }
  // The conv kernel is implied by the weights; an explicit one is checked
  // against them by validate().
  if (op.kind == OpKind::Conv2d && !have_kernel && n->inputs.size() >= 2) {
    auto w = g.tensors.find(n->inputs[1]);
    if (w != g.tensors.end() && w->second.shape.size() == 4) {
      a.kernel_h = w->second.shape[0];
      a.kernel_w = w->second.shape[1];
    }
  }
  return {};
}

Status parse_node(const json& j, size_t index, const Graph& g, Node* n) {
  std::string where = join_where(g.source, "node #" + std::to_string(index));
  if (!j.is_object()) return type_error(where, "an object", j);
  const json* v = nullptr;
  LOOM_TRY(require(j, "name", where, &v));
  LOOM_TRY(as_string(*v, field_where(where, "name"), &n->name));
  if (n->name.empty()) return make_error(field_where(where, "name"), "node names must not be empty");
  where = join_where(g.source, "node '" + n->name + "'");
  LOOM_TRY(check_keys(j, where, {"name", "op", "inputs", "outputs", "attrs", "doc"}));
  std::string op;
  LOOM_TRY(require(j, "op", where, &v));
  LOOM_TRY(as_string(*v, field_where(where, "op"), &op));
  const detail::OpInfo* info = detail::find_op(op);
  if (!info) {
    std::string known;
    for (const auto& o : detail::kOps) known += std::string(known.empty() ? "" : ", ") + o.name;
    return make_error(field_where(where, "op"), "unknown op '" + op + "' (known: " + known + ")");
  }
  n->op = info->kind;
  LOOM_TRY(require(j, "inputs", where, &v));
  LOOM_TRY(as_name_list(*v, field_where(where, "inputs"), &n->inputs));
  if (int(n->inputs.size()) < info->min_inputs || int(n->inputs.size()) > info->max_inputs) {
    const std::string want = info->min_inputs == info->max_inputs
                                 ? std::to_string(info->min_inputs)
                                 : std::to_string(info->min_inputs) + " or " + std::to_string(info->max_inputs);
    return make_error(field_where(where, "inputs"),
                      std::string(info->name) + " takes " + want + " inputs, got " + std::to_string(n->inputs.size()));
  }
  LOOM_TRY(require(j, "outputs", where, &v));
  LOOM_TRY(as_name_list(*v, field_where(where, "outputs"), &n->outputs));
  if (const json* a = member(j, "attrs")) {
    LOOM_TRY(parse_attrs(*a, where, *info, g, n));
  } else {
    LOOM_TRY(parse_attrs(json::object(), where, *info, g, n));
  }
  return {};
}

// Records the first duplicate key while nlohmann parses (it would otherwise
// keep the last value silently, hiding e.g. a tensor declared twice).
struct DuplicateKeys {
  struct Frame {
    std::set<std::string> keys;
    std::string last;
  };
  std::vector<Frame> frames;
  std::string key, path;

  bool on_event(json::parse_event_t ev, const json& parsed) {
    if (ev == json::parse_event_t::object_start) {
      frames.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      if (!frames.empty()) frames.pop_back();
    } else if (ev == json::parse_event_t::key && !frames.empty()) {
      Frame& f = frames.back();
      f.last = parsed.get<std::string>();
      if (!f.keys.insert(f.last).second && key.empty()) {
        key = f.last;
        for (size_t i = 0; i + 1 < frames.size(); ++i) path += (i ? "." : "") + frames[i].last;
      }
    }
    return true;
  }
};

Expected<Graph> parse_document(const std::string& text, const std::string& src) {
  DuplicateKeys dups;
  json j;
  try {
    j = json::parse(text, [&dups](int, json::parse_event_t ev, json& parsed) { return dups.on_event(ev, parsed); });
  } catch (const json::parse_error& e) {
    std::string msg = exception_text(e.what());
    if (msg.find("line ") == std::string::npos) msg += " (at byte " + std::to_string(e.byte) + ")";
    return make_error(src, "invalid JSON: " + msg);
  } catch (const json::out_of_range& e) {
    // A number too large for a double (e.g. 1e400): nlohmann gives no
    // position, so locate the quoted token in the text.
    std::string msg = exception_text(e.what());
    const size_t q0 = msg.find('\''), q1 = msg.rfind('\'');
    if (q0 != std::string::npos && q1 > q0) {
      const size_t at = text.find(msg.substr(q0 + 1, q1 - q0 - 1));
      if (at != std::string::npos) {
        const size_t line = size_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n')) + 1;
        const size_t bol = text.rfind('\n', at);
        const size_t col = at - (bol == std::string::npos ? 0 : bol + 1) + 1;
        msg = "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg;
      }
    }
    return make_error(src, "invalid JSON: " + msg);
  }
  if (!dups.key.empty()) {
    if (dups.path == "tensors") return make_error(join_where(src, "tensor '" + dups.key + "'"), "declared twice");
    return make_error(dups.path.empty() ? src : field_where(src, dups.path), "duplicate key '" + dups.key + "'");
  }

  Graph g;
  g.source = src;
  if (!j.is_object()) return type_error(src, "a JSON object at the top level", j);
  LOOM_TRY(check_keys(j, src, {"format", "version", "name", "doc", "tensors", "inputs", "outputs", "nodes"}));
  const json* v = nullptr;
  std::string format;
  LOOM_TRY(require(j, "format", src, &v));
  LOOM_TRY(as_string(*v, field_where(src, "format"), &format));
  if (format != "loom-graph")
    return make_error(field_where(src, "format"), "expected \"loom-graph\", got \"" + format + "\"");
  int64_t version = 0;
  LOOM_TRY(require(j, "version", src, &v));
  LOOM_TRY(as_int(*v, field_where(src, "version"), &version));
  if (version != 1)
    return make_error(field_where(src, "version"),
                      "unsupported version " + std::to_string(version) + " (this reader knows 1)");
  if (const json* nm = member(j, "name")) LOOM_TRY(as_string(*nm, field_where(src, "name"), &g.name));

  LOOM_TRY(require(j, "tensors", src, &v));
  if (!v->is_object()) return type_error(field_where(src, "tensors"), "an object of tensor declarations", *v);
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it.key().empty()) return make_error(field_where(src, "tensors"), "tensor names must not be empty");
    TensorInfo ti;
    LOOM_TRY(parse_tensor(it.key(), it.value(), src, &ti));
    g.tensors.emplace(it.key(), std::move(ti));
  }
  LOOM_TRY(require(j, "inputs", src, &v));
  LOOM_TRY(as_name_list(*v, field_where(src, "inputs"), &g.inputs));
  LOOM_TRY(require(j, "outputs", src, &v));
  LOOM_TRY(as_name_list(*v, field_where(src, "outputs"), &g.outputs));
  LOOM_TRY(require(j, "nodes", src, &v));
  if (!v->is_array()) return type_error(field_where(src, "nodes"), "an array of nodes", *v);
  for (size_t i = 0; i < v->size(); ++i) {
    Node n;
    LOOM_TRY(parse_node((*v)[i], i, g, &n));
    g.nodes.push_back(std::move(n));
  }
  LOOM_TRY(validate(g));
  return g;
}

}  // namespace

Expected<Graph> parse_graph_json_text(const std::string& text, const std::string& source) {
  // The library promises errors as values: nothing thrown by the JSON
  // library or an allocation escapes.
  try {
    return parse_document(text, source);
  } catch (const std::exception& e) {
    return make_error(source, "cannot read graph: " + exception_text(e.what()));
  }
}

Expected<Graph> parse_graph_json(const std::string& path) {
  auto text = read_file_bytes(path);
  if (!text) return text.error();
  return parse_graph_json_text(*text, path);
}

}  // namespace loom::ir
