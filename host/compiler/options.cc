#include "compiler/options.h"

#include <cmath>

#include "plan/json_read.h"

namespace loom::compiler {

using ordered_json = nlohmann::ordered_json;

namespace {

/// The name of an auto / off / on option's value.
template <class E>
const char* auto_off_on(E e) {
  switch (e) {
    case E::Auto:
      return "auto";
    case E::Off:
      return "off";
    case E::On:
      return "on";
  }
  return "?";
}

}  // namespace

const char* row_windows_name(CompileOptions::RowWindows r) { return auto_off_on(r); }
const char* image_bands_name(CompileOptions::ImageBands b) { return auto_off_on(b); }
const char* depthwise_name(CompileOptions::Depthwise d) { return auto_off_on(d); }
const char* batch_fold_name(CompileOptions::BatchFold b) { return auto_off_on(b); }

ordered_json decision_to_json(const Decision& d) {
  ordered_json j{{"node", d.node}, {"pass", d.pass}, {"choice", d.choice}, {"decision", d.text}};
  if (d.predicted_cycles) j["predicted_cycles"] = *d.predicted_cycles;
  if (!d.alternatives.empty()) {
    ordered_json alts = ordered_json::array();
    for (const auto& a : d.alternatives) {
      ordered_json x{{"choice", a.choice}};
      if (a.predicted_cycles) x["predicted_cycles"] = *a.predicted_cycles;
      alts.push_back(std::move(x));
    }
    j["alternatives"] = std::move(alts);
  }
  return j;
}

ordered_json options_to_json(const CompileOptions& o) {
  ordered_json j;
  j["cores"] = o.num_cores;
  j["fusion"] = fusion_name(o.fusion);
  j["placement"] = placement_name(o.placement);
  j["tasks_per_core"] = o.tasks_per_core;
  j["hls"] = hls_name(o.hls);
  j["double_buffer"] = o.double_buffer;
  j["row_windows"] = row_windows_name(o.row_windows);
  j["group_packing"] = o.group_packing;
  j["image_bands"] = image_bands_name(o.image_bands);
  j["depthwise"] = depthwise_name(o.depthwise);
  j["batch_fold"] = batch_fold_name(o.batch_fold);
  j["exact_host"] = o.exact_host;
  if (o.cost_params) {
    j["cost_params"] = ordered_json{{"latency", o.cost_params->latency},
                                    {"layer_cycles", o.cost_params->layer_cycles},
                                    {"insn_cycles", o.cost_params->insn_cycles}};
  } else {
    j["cost_params"] = nullptr;
  }
  return j;
}

namespace {

template <class E>
bool parse_name(const std::string& s, E* out, std::initializer_list<E> all, const char* (*name)(E)) {
  for (E e : all)
    if (s == name(e)) return *out = e, true;
  return false;
}

}  // namespace

Expected<CompileOptions> options_from_json(const nlohmann::json& j, const spec::HwConfig& cfg,
                                           const std::string& where) {
  if (!j.is_object()) return make_error(where, "field 'compile_options' is not an object");
  CompileOptions o;
  const auto bad = [&](const std::string& k, const std::string& what) {
    return make_error(where, "field 'compile_options." + k + "': " + what);
  };
  for (const auto& [k, v] : j.items()) {
    std::string s;
    if (k == "cores") {
      if (!plan::read_strict(v, &o.num_cores) || o.num_cores < 0 || uint32_t(o.num_cores) > cfg.cores)
        return bad(k, "must be an integer in [0, " + std::to_string(cfg.cores) + "]");
    } else if (k == "tasks_per_core") {
      if (!plan::read_strict(v, &o.tasks_per_core) || o.tasks_per_core < 1 || o.tasks_per_core > 64)
        return bad(k, "must be an integer in [1, 64]");
    } else if (k == "double_buffer" || k == "group_packing" || k == "exact_host") {
      if (!plan::read_strict(v, k == "double_buffer"   ? &o.double_buffer
                                : k == "group_packing" ? &o.group_packing
                                                       : &o.exact_host))
        return bad(k, "must be true or false");
    } else if (k == "fusion") {
      if (!plan::read_strict(v, &s) ||
          !parse_name(s, &o.fusion, {Fusion::None, Fusion::Greedy, Fusion::Cost}, fusion_name))
        return bad(k, "must be none, greedy or cost");
    } else if (k == "placement") {
      if (!plan::read_strict(v, &s) ||
          !parse_name(s, &o.placement, {Placement::Static, Placement::Pipeline, Placement::Dynamic}, placement_name))
        return bad(k, "must be static, pipeline or dynamic");
    } else if (k == "hls") {
      if (!plan::read_strict(v, &s) || !parse_name(s, &o.hls, {Hls::Off, Hls::Auto}, hls_name))
        return bad(k, "must be off or auto");
    } else if (k == "row_windows") {
      using R = CompileOptions::RowWindows;
      if (!plan::read_strict(v, &s) || !parse_name(s, &o.row_windows, {R::Auto, R::Off, R::On}, row_windows_name))
        return bad(k, "must be auto, off or on");
    } else if (k == "image_bands") {
      using B = CompileOptions::ImageBands;
      if (!plan::read_strict(v, &s) || !parse_name(s, &o.image_bands, {B::Auto, B::Off, B::On}, image_bands_name))
        return bad(k, "must be auto, off or on");
    } else if (k == "depthwise") {
      using D = CompileOptions::Depthwise;
      if (!plan::read_strict(v, &s) || !parse_name(s, &o.depthwise, {D::Auto, D::Off, D::On}, depthwise_name))
        return bad(k, "must be auto, off or on");
    } else if (k == "batch_fold") {
      using F = CompileOptions::BatchFold;
      if (!plan::read_strict(v, &s) || !parse_name(s, &o.batch_fold, {F::Auto, F::Off, F::On}, batch_fold_name))
        return bad(k, "must be auto, off or on");
    } else if (k == "cost_params") {
      if (v.is_null()) continue;
      if (!v.is_object()) return bad(k, "must be null or an object");
      CostParams p = CostParams::from(cfg);
      for (const auto& [f, x] : v.items()) {
        if (f == "latency") {
          if (!plan::read_strict(x, &p.latency) || p.latency > 100000)
            return bad(k + "." + f, "must be an integer number of cycles in 0..100000");
        } else if (f == "layer_cycles" || f == "insn_cycles") {
          double d = 0;
          if (!plan::read_strict(x, &d) || std::fabs(d) > 1e9)
            return bad(k + "." + f, "must be a finite number of cycles (|x| <= 1e9)");
          (f == "layer_cycles" ? p.layer_cycles : p.insn_cycles) = d;
        } else {
          return bad(k + "." + f, "unknown field");
        }
      }
      o.cost_params = p;
    } else {
      return make_error(where, "field 'compile_options." + k + "': unknown field");
    }
  }
  return o;
}

std::vector<std::string> options_diff(const CompileOptions& a, const CompileOptions& b) {
  const ordered_json ja = options_to_json(a), jb = options_to_json(b);
  std::vector<std::string> d;
  for (const auto& [k, v] : ja.items())
    if (jb[k] != v) d.push_back(k + " " + v.dump() + " -> " + jb[k].dump());
  return d;
}

}  // namespace loom::compiler
