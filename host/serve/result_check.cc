// Result files checked field by field before anything reads them (see
// result_check.h); scripts/report.py reads exactly what is checked here.
#include "serve/result_check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/json_read.h"
#include "serve/memo.h"

namespace loom::serve {

namespace {

// What a field may hold (bits, or-ed together).
enum Kind : unsigned { kNum = 1, kNull = 2, kStr = 4, kBool = 8, kObj = 16, kArr = 32 };
constexpr unsigned kScalar = kNum | kStr | kBool | kNull;
constexpr unsigned kAny = kScalar | kObj | kArr;

/// A number the report can draw and a dump writes back as a number. The
/// parser refuses text past the double range, but a value computed in memory
/// (the merge's rows) may be infinite, and a dump writes that as null.
bool finite(const ordered_json& v) { return v.is_number() && (!v.is_number_float() || std::isfinite(v.get<double>())); }

bool is(const ordered_json& v, unsigned k) {
  return ((k & kNum) && finite(v)) || ((k & kNull) && v.is_null()) || ((k & kStr) && v.is_string()) ||
         ((k & kBool) && v.is_boolean()) || ((k & kObj) && v.is_object()) || ((k & kArr) && v.is_array());
}

std::string kind_text(unsigned k) {
  if (k == kAny) return "a value";
  if (k == kScalar) return "a number, string, boolean or null";
  std::vector<std::string> names;
  for (auto [bit, name] : {std::pair{kNum, "a number"}, std::pair{kStr, "a string"}, std::pair{kBool, "true or false"},
                           std::pair{kObj, "an object"}, std::pair{kArr, "an array"}, std::pair{kNull, "null"}})
    if (k & bit) names.push_back(name);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? (i + 1 == names.size() ? " or " : ", ") : "") + names[i];
  return s;
}

/// What a value is, for a message.
std::string got(const ordered_json& v) {
  return v.is_number() && !finite(v) ? "a number out of range" : std::string(v.type_name());
}

/// Where a field is: the file and array elements on the way (`where`), and
/// the dotted path of objects inside the last element (`prefix`), so that
/// messages read "runs/3.json: streams[2]: field 'latency.p99_us': ...".
struct Loc {
  std::string where, prefix;
  std::string name(const std::string& key) const { return prefix + key; }
  Loc in(const std::string& key) const { return {where, prefix + key + "."}; }
  Loc item(const std::string& key, size_t i) const {
    return {where + ": " + prefix + key + "[" + std::to_string(i) + "]", ""};
  }
  /// The value of `key` of a mapping whose keys are names from the file.
  Loc entry(const std::string& key) const { return {where + ": " + prefix + excerpt(key), ""}; }
  Error err(const std::string& key, const std::string& what) const {
    return make_error(where + ": field '" + name(key) + "'", what);
  }
};

/// o[key] holds a value of kind `k`; `optional`: or is absent.
Status need(const ordered_json& o, const Loc& at, const std::string& key, unsigned k, bool optional = false) {
  if (!o.contains(key)) return optional ? Status::ok() : at.err(key, "missing (expected " + kind_text(k) + ")");
  const ordered_json& v = field(o, key);
  if (!is(v, k)) return at.err(key, "expected " + kind_text(k) + ", got " + got(v));
  return Status::ok();
}

Status opt(const ordered_json& o, const Loc& at, const std::string& key, unsigned k) {
  return need(o, at, key, k, true);
}

/// Every key of `keys` in `o`, each of kind `k`.
Status need_all(const ordered_json& o, const Loc& at, std::initializer_list<const char*> keys, unsigned k) {
  for (const char* key : keys) LOOM_TRY(need(o, at, key, k));
  return Status::ok();
}

/// o[key] an array (absent too when `optional`) whose elements are objects,
/// each passed to `each(element, its Loc)`.
template <class F>
Status objects(const ordered_json& o, const Loc& at, const std::string& key, F each, bool optional = false) {
  LOOM_TRY(need(o, at, key, kArr, optional));
  const ordered_json& a = field(o, key);
  for (size_t i = 0; i < a.size(); ++i) {
    const Loc el = at.item(key, i);
    if (!a[i].is_object()) return make_error(el.where, "expected an object, got " + std::string(a[i].type_name()));
    LOOM_TRY(each(a[i], el));
  }
  return Status::ok();
}

/// o[key], an array, holds objects only.
Status all_objects(const ordered_json& o, const Loc& at, const std::string& key) {
  return objects(o, at, key, [](const ordered_json&, const Loc&) { return Status::ok(); });
}

/// o[key] an array of numbers.
Status numbers(const ordered_json& o, const Loc& at, const std::string& key) {
  LOOM_TRY(need(o, at, key, kArr));
  const ordered_json& a = field(o, key);
  for (size_t i = 0; i < a.size(); ++i)
    if (!finite(a[i])) return make_error(at.item(key, i).where, "expected a number, got " + got(a[i]));
  return Status::ok();
}

/// o[key] an object, passed to `each(it, its Loc)`.
template <class F>
Status object(const ordered_json& o, const Loc& at, const std::string& key, F each, bool optional = false) {
  LOOM_TRY(need(o, at, key, kObj, optional));
  if (!o.contains(key)) return Status::ok();
  return each(field(o, key), at.in(key));
}

// ---- serve ----

/// Percentiles of a latency sample (null when the sample is empty).
Status serve_latency(const ordered_json& l, const Loc& at) {
  return need_all(l, at, {"p50_us", "p95_us", "p99_us", "p999_us", "max_us"}, kNum | kNull);
}

Status serve_stream(const ordered_json& s, const Loc& at) {
  LOOM_TRY(need(s, at, "name", kStr));
  LOOM_TRY(need_all(s, at, {"submitted", "slo_attainment"}, kNum));
  // The merge weighs each stream's attainment by its requests.
  if (const ordered_json& n = field(s, "submitted");
      !n.is_number_integer() || n.get<double>() < 0 || n.get<double>() > 0x1p53)
    return at.err("submitted", "expected a count of requests (an integer in 0..2^53)");
  if (const double a = field(s, "slo_attainment").get<double>(); !(a >= 0 && a <= 1))
    return at.err("slo_attainment", "expected a fraction in [0, 1]");
  LOOM_TRY(object(s, at, "latency", serve_latency));
  LOOM_TRY(need(s, at, "slo_ms", kNum));
  LOOM_TRY(numbers(s, at, "latency_cdf_us"));
  LOOM_TRY(object(s, at, "queue_wait", [](const ordered_json& q, const Loc& qa) -> Status {
    return objects(q, qa, "histogram", [](const ordered_json& b, const Loc& ba) -> Status {
      LOOM_TRY(need_all(b, ba, {"lo_us", "count"}, kNum));
      return need(b, ba, "hi_us", kNum | kNull);
    });
  }));
  return objects(
      s, at, "latency_over_time",
      [](const ordered_json& w, const Loc& wa) -> Status {
        LOOM_TRY(need_all(w, wa, {"start_ms", "end_ms"}, kNum));
        LOOM_TRY(need_all(w, wa, {"p50_us", "p99_us"}, kNum | kNull));
        if (field(w, "p99_us").is_number() && !field(w, "p50_us").is_number())
          return Status(wa.err("p50_us", "null in a window whose p99_us is a number"));
        return Status::ok();
      },
      /*optional=*/true);
}

Status serve_live(const ordered_json& l, const Loc& at) {
  LOOM_TRY(need_all(l, at,
                    {"device_runs", "checked_runs", "output_mismatches", "device_errors", "host_timeouts",
                     "retried_requests", "max_retries"},
                    kNum));
  LOOM_TRY(need(l, at, "completion", kStr));
  LOOM_TRY(objects(l, at, "faults_injected", [](const ordered_json& f, const Loc& fa) -> Status {
    LOOM_TRY(need(f, fa, "fault", kStr));
    LOOM_TRY(need(f, fa, "core", kNum));
    LOOM_TRY(need(f, fa, "applied_ms", kNum | kNull));
    LOOM_TRY(need(f, fa, "not_applied", kStr | kNull));
    return opt(f, fa, "lifted_ms", kNum | kNull);
  }));
  LOOM_TRY(objects(l, at, "failures", [](const ordered_json& f, const Loc& fa) -> Status {
    LOOM_TRY(need_all(f, fa, {"batches", "requests_failed"}, kNum));
    return need(f, fa, "reason", kStr);
  }));
  return objects(l, at, "rss_mib", [](const ordered_json& x, const Loc& xa) -> Status {
    return need_all(x, xa, {"requests", "mib"}, kNum);
  });
}

/// batch_sizes: {"<batch size>": count}.
Status batch_sizes(const ordered_json& b, const Loc& at) {
  for (const auto& [k, v] : b.items()) {
    if (k.empty() || k.size() > 18 || !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return make_error(at.where + ": field '" + at.prefix + excerpt(k) + "'", "expected a batch size (digits)");
    if (!finite(v)) return at.err(k, "expected a number, got " + got(v));
  }
  return Status::ok();
}

// ---- tune ----

/// A mapping of `loom tune`: per model an object, with its buckets or its
/// placements (every gang width weighed) when it has them.
Status tune_mapping(const ordered_json& m, const Loc& at) {
  for (const auto& [key, v] : m.items()) {
    const Loc ma = at.entry(key);
    if (!v.is_object()) return make_error(ma.where, "expected an object, got " + std::string(v.type_name()));
    if (v.contains("buckets")) {
      LOOM_TRY(objects(v, ma, "buckets", [](const ordered_json& b, const Loc& ba) -> Status {
        LOOM_TRY(need(b, ba, "seq", kNum));
        if (b.contains("requests_per_run")) LOOM_TRY(numbers(b, ba, "requests_per_run"));
        return need(b, ba, "choice", kScalar);
      }));
      LOOM_TRY(need(v, ma, "plans", kScalar));
      LOOM_TRY(need_all(v, ma, {"padding", "expected_cycles_per_request", "compile_ms"}, kNum));
    }
    LOOM_TRY(objects(
        v, ma, "placements",
        [](const ordered_json& x, const Loc& xa) -> Status {
          LOOM_TRY(need(x, xa, "modelled_latency_us", kNum | kStr));
          LOOM_TRY(need(x, xa, "service_us", kNum));
          return need_all(x, xa, {"cores", "servers", "chosen"}, kScalar);
        },
        /*optional=*/true));
  }
  return Status::ok();
}

/// A latency of `loom tune` (tune/report.cc latency_json).
Status tune_latency(const ordered_json& l, const Loc& at) {
  LOOM_TRY(need_all(l, at, {"mean_us", "p99_us"}, kNum));
  LOOM_TRY(opt(l, at, "p999_us", kNum | kNull));
  return numbers(l, at, "cdf_us");
}

/// A served run of `loom tune` (the baseline, the references, a round): its
/// latency after the swap point and the mapping it served with.
Status tune_served(const ordered_json& s, const Loc& at) {
  LOOM_TRY(object(s, at, "after_swap", tune_latency));
  // The offline re-map served again under the loop's batch caps.
  LOOM_TRY(object(
      s, at, "with_batch_cap",
      [](const ordered_json& w, const Loc& wa) { return object(w, wa, "after_swap", tune_latency); },
      /*optional=*/true));
  return object(s, at, "mapping", tune_mapping, /*optional=*/true);
}

/// A per-core timeline: batches, each with its layers when it carries them
/// ([name, start_us, end_us] each).
Status timeline(const ordered_json& o, const Loc& at) {
  return objects(
      o, at, "timeline",
      [](const ordered_json& b, const Loc& ba) -> Status {
        LOOM_TRY(need_all(b, ba, {"core", "stream", "start_us", "end_us"}, kNum));
        LOOM_TRY(opt(b, ba, "layers", kArr));
        const ordered_json& ls = field(b, "layers");
        for (size_t i = 0; i < ls.size(); ++i)
          if (!ls[i].is_array() || ls[i].size() != 3 || !ls[i][0].is_string() || !ls[i][1].is_number() ||
              !ls[i][2].is_number())
            return Status(make_error(ba.item("layers", i).where, "expected [name, start_us, end_us]"));
        return Status::ok();
      },
      /*optional=*/true);
}

/// The compile profile of a round's deployed plans: per plan, its layers'
/// predicted and measured cycles.
Status tune_profile(const ordered_json& p, const Loc& at) {
  LOOM_TRY(need_all(p, at, {"model", "choice"}, kScalar));
  return objects(p, at, "layers", [](const ordered_json& l, const Loc& la) -> Status {
    LOOM_TRY(need_all(l, la, {"name", "kind"}, kScalar));
    return need_all(l, la, {"predicted", "measured"}, kNum);
  });
}

/// The fabric's counters of a measured plan beside the predictions (sorted
/// by model, rows and choice).
Status tune_counters(const ordered_json& c, const Loc& at) {
  LOOM_TRY(need_all(c, at, {"model", "choice"}, kStr));
  LOOM_TRY(need_all(c, at, {"rows", "compute_share", "stall_mem_share"}, kNum));
  LOOM_TRY(
      object(c, at, "predicted", [](const ordered_json& p, const Loc& pa) { return need(p, pa, "cycles", kNum); }));
  for (const char* k : {"measured", "error"})
    LOOM_TRY(object(c, at, k, [](const ordered_json& m, const Loc& ma) {
      return need_all(m, ma, {"cycles", "macs", "bytes_rd", "bytes_wr"}, kNum);
    }));
  return Status::ok();
}

Status tune_round(const ordered_json& r, const Loc& at, bool attribution) {
  LOOM_TRY(need_all(r, at, {"round", "plan_error_before", "plan_error_after", "gap_recovered_mean"}, kNum));
  LOOM_TRY(object(r, at, "swap", [](const ordered_json& s, const Loc& sa) -> Status {
    return need_all(s, sa, {"at_ms", "submitted", "completed", "dropped", "lost", "reordered_within_stream"}, kNum);
  }));
  LOOM_TRY(objects(r, at, "profile", tune_profile, /*optional=*/true));
  LOOM_TRY(objects(r, at, "counters", tune_counters, /*optional=*/true));
  LOOM_TRY(objects(r, at, "decisions_changed", [](const ordered_json& d, const Loc& da) -> Status {
    return need_all(d, da, {"seq", "batch", "from", "to", "why"}, kScalar);
  }));
  LOOM_TRY(opt(r, at, "plans_recompiled", kArr));
  LOOM_TRY(tune_served(r, at));
  LOOM_TRY(objects(r, at, "prediction_error", [](const ordered_json& e, const Loc& ea) -> Status {
    LOOM_TRY(need(e, ea, "kind", kStr));
    return need_all(e, ea, {"rows", "error_before", "error_after"}, kNum);
  }));
  LOOM_TRY(objects(
      r, at, "compiler_decisions_changed",
      [](const ordered_json& d, const Loc& da) -> Status {
        return need_all(d, da, {"model", "choice", "pass", "node", "before", "after", "why"}, kScalar);
      },
      /*optional=*/true));
  LOOM_TRY(opt(r, at, "compiler_plans_compared", kNum));
  LOOM_TRY(object(
      r, at, "refit",
      [](const ordered_json& f, const Loc& fa) -> Status {
        LOOM_TRY(need(f, fa, "accepted", kBool));
        LOOM_TRY(need(f, fa, "reason", kStr));
        return need_all(f, fa, {"validation_plans", "validation_samples", "error_before", "error_after"}, kNum);
      },
      /*optional=*/true));
  LOOM_TRY(timeline(r, at));
  return object(
      r, at, "attribution",
      [](const ordered_json& a, const Loc& aa) -> Status {
        LOOM_TRY(opt(a, aa, "batch_cap_us", kNum));  // results before the batch cap have none
        LOOM_TRY(opt(a, aa, "batch_cap_p99_us", kNum));
        return need_all(
            a, aa,
            {"gain_us", "offline_recompile_us", "refit_us", "gain_p99_us", "offline_recompile_p99_us", "refit_p99_us"},
            kNum);
      },
      /*optional=*/!attribution);
}

// ---- sweep folders ----

/// What a point's params hold for a sweep axis of `kind` (SweepAxis).
unsigned json_kind(const std::string& kind) {
  if (kind == "bool") return kBool;
  if (kind == "int" || kind == "delay" || kind == "margin" || kind == "load" || kind == "seed") return kNum;
  return kStr;
}

bool strings(const ordered_json& a) {
  return a.is_array() && std::all_of(a.begin(), a.end(), [](const ordered_json& x) { return x.is_string(); });
}

Status serve_point(const ordered_json& p, const Loc& at, const ordered_json& first) {
  LOOM_TRY(need(p, at, "params", kObj));
  if (!strings(field(p, "args"))) return at.err("args", "expected an array of strings");
  const ordered_json& params = field(p, "params");
  for (const auto& [k, v] : params.items()) {
    (void)v;
    const SweepAxis* axis = nullptr;
    for (const auto& a : kSweepAxes)
      if (k == a.name) axis = &a;
    if (!axis) return make_error(at.where + ": field 'params'", "unknown setting '" + excerpt(k) + "'");
    LOOM_TRY(need(params, at.in("params"), k, json_kind(axis->kind)));
    if (!first.contains(k)) return at.err("params." + k, "not a setting of points[0] (every point has the same)");
  }
  if (params.size() != first.size())
    return at.err("params", "not the settings of points[0] (every point has the same)");
  return Status::ok();
}

/// One serve sweep's settings column: the param of `k`, else the result's.
const ordered_json& param_or(const ordered_json& params, const char* k, const ordered_json& def) {
  return params.contains(k) ? field(params, k) : def;
}

bool is_column_axis(const std::string& k) {
  return k != "configs" && k != "batching" && k != "scheduling" && k != "loads" && k != "seeds";
}

}  // namespace

Status check_manifest(const ordered_json& man, const std::string& where) {
  if (!man.is_object()) return make_error(where, "not a JSON object");
  const Loc at{where, ""};
  const ordered_json& kind = field(man, "kind");
  if (!kind.is_null() && kind != "serve" && kind != "commands")
    return at.err("kind", "expected \"serve\" or \"commands\"");
  LOOM_TRY(opt(man, at, "sweep", kStr));
  const ordered_json& points = field(man, "points");
  if (!points.is_array() || points.empty()) return make_error(where, "no points");
  for (size_t i = 0; i < points.size(); ++i) {
    const ordered_json& p = points[i];
    const Loc pa = at.item("points", i);
    if (!p.is_object()) return make_error(pa.where, "not an object");
    if (kind == "commands") {
      if (!field(p, "name").is_string() || !strings(field(p, "argv")) || field(p, "argv").empty())
        return make_error(pa.where, "needs a string 'name' and a non-empty string array 'argv'");
      continue;
    }
    LOOM_TRY(serve_point(p, pa, field(points[0], "params")));
  }
  return Status::ok();
}

Status check_serve_result(const ordered_json& r, const std::string& where) {
  if (!r.is_object()) return make_error(where, "not a JSON object");
  const Loc at{where, ""};
  // What merge reads first, then what the report adds.
  LOOM_TRY(object(r, at, "latency", serve_latency));
  LOOM_TRY(object(r, at, "scheduling", [](const ordered_json& s, const Loc& sa) -> Status {
    LOOM_TRY(need_all(s, sa, {"requested", "used"}, kStr));
    return opt(s, sa, "reason", kStr | kNull);
  }));
  LOOM_TRY(object(r, at, "fairness", [](const ordered_json& f, const Loc& fa) -> Status {
    return need_all(f, fa, {"jain", "antt", "stp"}, kNum);
  }));
  LOOM_TRY(need_all(r, at, {"submitted", "completed", "dropped", "throughput_rps", "core_imbalance"}, kNum));
  LOOM_TRY(opt(r, at, "failed", kNum));
  LOOM_TRY(objects(r, at, "streams", serve_stream));
  LOOM_TRY(need_all(r, at, {"workload", "backend", "config", "batching"}, kStr));
  LOOM_TRY(need_all(r, at, {"seed", "load_scale"}, kNum));
  LOOM_TRY(opt(r, at, "mode", kStr));
  LOOM_TRY(opt(r, at, "trace", kStr | kNull));
  LOOM_TRY(objects(r, at, "cores", [](const ordered_json& c, const Loc& ca) -> Status {
    return need_all(c, ca, {"core", "port", "utilization"}, kNum);
  }));
  LOOM_TRY(object(r, at, "batch_sizes", batch_sizes));
  return object(r, at, "live", serve_live, /*optional=*/true);
}

Status check_sweep_result(const ordered_json& r, const std::string& where) {
  if (!r.is_object()) return make_error(where, "not a JSON object");
  const Loc at{where, ""};
  LOOM_TRY(need(r, at, "runs", kArr));
  if (field(r, "runs").empty()) return at.err("runs", "a sweep result with no runs");
  LOOM_TRY(all_objects(r, at, "runs"));
  LOOM_TRY(need(r, at, "sweep", kStr | kNull));
  LOOM_TRY(opt(r, at, "settings", kArr));
  ordered_json settings = ordered_json::array({"config", "batching", "scheduling"});
  if (r.contains("settings")) {
    settings = field(r, "settings");
    if (!strings(settings)) return at.err("settings", "expected an array of strings");
  }
  return objects(r, at, "runs", [&settings](const ordered_json& run, const Loc& ra) -> Status {
    for (const auto& s : settings) LOOM_TRY(need(run, ra, s.get<std::string>(), kScalar));
    LOOM_TRY(need_all(run, ra, {"load_scale", "throughput_rps", "slo_attainment"}, kNum));
    LOOM_TRY(need(run, ra, "p99_us", kNum | kNull));
    return need_all(run, ra, {"scheduling_used", "seed", "stp", "antt"}, kScalar);
  });
}

Status check_tune_result(const ordered_json& r, const std::string& where) {
  if (!r.is_object()) return make_error(where, "not a JSON object");
  const Loc at{where, ""};
  LOOM_TRY(need(r, at, "rounds", kArr));
  if (field(r, "rounds").empty()) return at.err("rounds", "a tune result with no rounds");
  LOOM_TRY(all_objects(r, at, "rounds"));
  LOOM_TRY(need_all(r, at, {"workload", "backend", "config"}, kStr));
  LOOM_TRY(object(r, at, "initial_mapping", [](const ordered_json& m, const Loc& ma) -> Status {
    LOOM_TRY(tune_mapping(m, ma));
    for (const auto& [key, v] : m.items()) LOOM_TRY(need(v, ma.entry(key), "choice", kStr));
    return Status::ok();
  }));
  LOOM_TRY(object(r, at, "target", [](const ordered_json& t, const Loc& ta) -> Status {
    LOOM_TRY(need_all(t, ta, {"baseline_us", "best_per_shape_us", "recovered_after_last_round"}, kNum));
    return need(t, ta, "met", kBool);
  }));
  LOOM_TRY(object(r, at, "baseline", [](const ordered_json& b, const Loc& ba) -> Status {
    LOOM_TRY(tune_served(b, ba));
    return timeline(b, ba);
  }));
  LOOM_TRY(object(r, at, "best_per_shape", tune_served));
  LOOM_TRY(object(r, at, "offline_recompile", tune_served, /*optional=*/true));
  const bool attribution = field(field(r, "rounds")[0], "attribution").is_object();
  return objects(r, at, "rounds", [attribution](const ordered_json& x, const Loc& xa) -> Status {
    return tune_round(x, xa, attribution);
  });
}

Status check_result(const ordered_json& r, const std::string& where) {
  if (!r.is_object()) return make_error(where, "not a JSON result of loom serve, loom experiment or loom tune");
  const ordered_json& kind = field(r, "kind");
  if (kind == "serve") return check_serve_result(r, where);
  if (kind == "sweep") return check_sweep_result(r, where);
  if (kind == "tune") return check_tune_result(r, where);
  const std::string got = kind.is_string()       ? "'" + excerpt(kind.get<std::string>()) + "'"
                          : kind.is_structured() ? std::string("an ") + kind.type_name()
                                                 : kind.dump();
  return make_error(where, "field 'kind' is " + got + ", expected 'serve', 'sweep' or 'tune'");
}

std::vector<std::string> stream_names(const std::vector<ordered_json>& results) {
  std::vector<std::string> names;
  for (const auto& r : results)
    for (const auto& st : field(r, "streams")) {
      const std::string n = field(st, "name").get<std::string>();
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  return names;
}

ordered_json sweep_row(const ordered_json& params, const ordered_json& r, const std::vector<std::string>& streams,
                       size_t i) {
  ordered_json row;
  // The original columns keep their names and order.
  row["config"] = param_or(params, "configs", field(r, "config"));
  row["batching"] = param_or(params, "batching", field(r, "batching"));
  row["scheduling"] = param_or(params, "scheduling", field(field(r, "scheduling"), "requested"));
  row["scheduling_used"] = field(field(r, "scheduling"), "used");
  row["load_scale"] = param_or(params, "loads", field(r, "load_scale"));
  row["seed"] = param_or(params, "seeds", field(r, "seed"));
  for (const auto& [k, v] : params.items())
    if (is_column_axis(k))
      row[k] = k == "workload" ? ordered_json(std::filesystem::path(v.get<std::string>()).filename().string()) : v;
  for (const char* k : {"submitted", "completed", "dropped", "throughput_rps"}) row[k] = field(r, k);
  for (const char* p : {"p50_us", "p95_us", "p99_us", "p999_us"}) row[p] = field(field(r, "latency"), p);
  double met = 0, sub = 0;
  for (const auto& st : field(r, "streams")) {
    met += field(st, "slo_attainment").get<double>() * field(st, "submitted").get<double>();
    sub += field(st, "submitted").get<double>();
  }
  row["slo_attainment"] = sub > 0 ? met / sub : 1.0;
  for (const char* k : {"jain", "antt", "stp"}) row[k] = field(field(r, "fairness"), k);
  row["core_imbalance"] = field(r, "core_imbalance");
  for (const auto& n : streams) {
    const ordered_json* st = nullptr;
    for (const auto& s : field(r, "streams"))
      if (field(s, "name") == n) st = &s;
    for (const char* p : {"p50_us", "p99_us", "p999_us"})
      row[n + "." + p] = st ? field(field(*st, "latency"), p) : ordered_json(nullptr);
    row[n + ".slo_attainment"] = st ? field(*st, "slo_attainment") : ordered_json(nullptr);
  }
  row["result"] = "runs/" + std::to_string(i) + ".json";
  return row;
}

ordered_json sweep_result(const ordered_json& man, const std::vector<ordered_json>& results, ordered_json wall) {
  const ordered_json& points = field(man, "points");
  const std::vector<std::string> streams = stream_names(results);
  ordered_json rows = ordered_json::array();
  for (size_t i = 0; i < points.size() && i < results.size(); ++i)
    rows.push_back(sweep_row(field(points[i], "params"), results[i], streams, i));
  // The settings that tell points apart (a report groups by them, less load and seed).
  ordered_json settings = ordered_json::array({"config", "batching", "scheduling"});
  for (const auto& [k, v] : field(points[0], "params").items()) {
    (void)v;
    if (is_column_axis(k)) settings.push_back(k);
  }
  ordered_json memo = sweep_memo(rows, results, settings);
  return {{"kind", "sweep"},
          {"memo", std::move(memo)},
          {"sweep", field(man, "sweep")},
          {"points", points.size()},
          {"settings", settings},
          {"wall", std::move(wall)},
          {"runs", rows}};
}

std::pair<std::string, std::string> csv_line(const ordered_json& row) {
  std::string line, head;
  for (const auto& [k, v] : row.items()) {
    if (k == "result") continue;
    if (!line.empty()) line += ",", head += ",";
    head += k;
    line += v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump();
  }
  return {line, head};
}

}  // namespace loom::serve
