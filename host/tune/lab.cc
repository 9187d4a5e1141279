// The lab of `loom tune`: compiles each choice (cached, predictions only) and
// measures it on the timed backend, whole and layer by layer.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "driver/compile.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "tune/report.h"
#include "tune/space.h"
#include "tune/tune.h"

namespace loom::tune {

Expected<const plan::Program*> Lab::compiled(const serve::ModelSpec& m, const Choice& c) {
  const std::string key = key_of(m, c);
  auto it = compiled_.find(key);
  if (it != compiled_.end()) return &it->second;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = build(m, c);
  if (!out) return out.error();
  compile_ms_[key] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Kept for its predictions, decisions and layer names only: the
  // instruction streams and constants of every choice of every round would
  // not fit in memory (measure() compiles again to run).
  for (auto& seg : out->segments) {
    std::vector<uint8_t>().swap(seg.plan.constants);
    std::vector<std::vector<spec::Insn>>().swap(seg.plan.cores);
    std::vector<plan::Task>().swap(seg.plan.tasks);
  }
  return &compiled_.emplace(key, std::move(*out)).first->second;
}

double Lab::compile_ms(const serve::ModelSpec& m, const Choice& c) const {
  auto it = compile_ms_.find(key_of(m, c));
  return it == compile_ms_.end() ? 0.0 : it->second;
}

Expected<uint64_t> Lab::predicted_cycles(const serve::ModelSpec& m, const Choice& c) {
  auto p = compiled(m, c);
  if (!p) return p.error();
  return (*p)->predicted_cycles() + host_cycles(**p);
}

Expected<plan::Program> Lab::build(const serve::ModelSpec& m, const Choice& c) {
  // A bucketed model: the program of the bucket's length for the requests
  // one run holds, its segments compiled with the choice's options, as
  // ServiceModel compiles it when it serves; a gemm_chain of the choice's rows.
  if (m.bucketed()) return sm_.compile_program(m.at_length(c.rows), c.rows, std::max(c.requests, 1), options_of(c));
  if (m.kind == serve::ModelSpec::Kind::Onnx)  // its program for a batch of `rows` requests
    return sm_.compile_program(m, 0, int(c.rows), options_of(c));
  return sm_.compile_program(m, c.rows, options_of(c));
}

Expected<const PlanTelemetry*> Lab::measure(const serve::ModelSpec& m, const Choice& c) {
  const std::string key = key_of(m, c);
  auto it = measured_.find(key);
  if (it != measured_.end()) return &it->second;
  auto full = build(m, c);  // runnable (compiled() keeps no streams); compiling is deterministic
  if (!full) return full.error();
  const plan::Program& prog = *full;
  auto dev = sm_.device();
  if (!dev) return dev.error();
  PlanTelemetry t;
  t.model = serve::model_key(m);
  t.choice = c.tag();
  t.rows = c.rows;
  runtime::RunOptions ro;
  ro.layer_cycles = true;
  for (size_t k = 0; k < prog.segments.size(); ++k) {
    const plan::Segment& part = prog.segments[k];
    const plan::Plan& p = part.plan;
    const auto inputs = ir::random_inputs(part.graph, 1);
    // The whole part as it serves, then layer by layer (released one layer
    // at a time, so the layers do not overlap: their sum can exceed the
    // whole; the difference is the plan overhead the refit sees). Pipeline
    // and dynamic plans overlap their layers: measured whole only.
    const bool per_layer = p.placement == "static" && p.tasks.empty() && p.unit_calls.empty();
    auto whole = runtime::execute(**dev, p, inputs);
    if (!whole) return whole.error();
    ++runs_;
    t.measured += whole->cycles;
    t.part_cycles.push_back(whole->cycles);
    t.part_layers.push_back(per_layer ? p.layers.size() : 0);
    for (const auto& core : whole->cores)
      for (size_t n = 0; n < spec::kNumCounters; ++n) t.counters[n] += core.counters[n];
    for (size_t li = 0; li < p.layers.size(); ++li) {
      t.predicted_macs += p.layers[li].macs;
      if (li < part.predicted.size())
        t.predicted_bytes_rd += part.predicted[li].dram_read, t.predicted_bytes_wr += part.predicted[li].dram_written;
    }
    if (!per_layer) {
      // The uncorrected prediction of the whole part (the correction is per layer).
      double pred = double(part.predicted_cycles);
      if (c.params)
        for (const auto& lp : part.predicted) pred -= c.params->correction(double(lp.core_insns));
      t.part_predicted.push_back(uint64_t(std::max(0.0, std::round(pred))));
      t.predicted += t.part_predicted.back();
      continue;
    }
    auto r = runtime::execute(**dev, p, inputs, ro);
    if (!r) return r.error();
    ++runs_;
    if (r->layer_cycles.size() != p.layers.size())
      return make_error("loom tune", "the backend gave no per-layer cycles for " + key);
    t.part_predicted.push_back(0);
    for (size_t li = 0; li < p.layers.size(); ++li) {
      const auto& L = p.layers[li];
      LayerSample ls;
      ls.name = L.name;
      ls.kind = layer_kind(L.op, L.name);
      ls.rows = c.rows;
      if (li < part.predicted.size()) {
        const auto& lp = part.predicted[li];
        ls.insns = lp.core_insns;
        // The uncorrected model's prediction of this plan's layer: the
        // compiler added the choice's correction for the busiest core's
        // instructions.
        const double corr = c.params ? c.params->correction(double(lp.core_insns)) : 0.0;
        ls.predicted = uint64_t(std::max(0.0, std::round(double(lp.cycles) - corr)));
      }
      ls.measured = r->layer_cycles[li];
      t.predicted += ls.predicted;
      t.part_predicted.back() += ls.predicted;
      t.layers.push_back(ls);
    }
  }
  return &measured_.emplace(key, std::move(t)).first->second;
}

Expected<std::vector<std::pair<std::string, double>>> Lab::run_layers(const serve::ModelSpec& m, const Choice& c) {
  auto cr = compiled(m, c);
  if (!cr) return cr.error();
  auto t = measure(m, c);
  if (!t) return t.error();
  std::vector<size_t> first(1, 0);  // each part's first layer in the telemetry
  for (size_t n : (*t)->part_layers) first.push_back(first.back() + n);
  std::vector<std::pair<std::string, double>> out;
  const serve::HostCost hc = sm_.host_cost(**cr);
  for (const auto& [part, host] : hc.order) {
    if (host > 0) out.push_back({"host ops", double(host)});
    if (part >= (*cr)->segments.size()) continue;
    const auto& layers = (*cr)->segments[part].plan.layers;
    if ((*t)->part_layers[part] == 0) {  // measured whole: one stretch
      out.push_back({whole_part_name(**cr, part) + " (" + c.placement_tag() + ")", double((*t)->part_cycles[part])});
      continue;
    }
    for (size_t li = 0; li < layers.size(); ++li)
      out.push_back({layers[li].name, double((*t)->layers[first[part] + li].measured)});
  }
  if (hc.host_after > 0) out.push_back({"host ops", double(hc.host_after)});
  return out;
}

Expected<double> Lab::predict(const serve::ModelSpec& m, const Choice& c, const Calibration& cal) {
  auto cr = compiled(m, c);
  if (!cr) return cr.error();
  double sum = cal.overhead + double(host_cycles(**cr));
  for (const auto& part : (*cr)->segments) {
    const plan::Plan& p = part.plan;
    for (size_t li = 0; li < p.layers.size() && li < part.predicted.size(); ++li) {
      const double x = double(part.predicted[li].cycles);
      auto f = cal.per_kind.find(layer_kind(p.layers[li].op, p.layers[li].name));
      sum += f == cal.per_kind.end() ? x : f->second.apply(x);
    }
  }
  return sum;
}

Expected<double> Lab::predict_compiled(const serve::ModelSpec& m, const Choice& c, double overhead) {
  auto pc = predicted_cycles(m, c);
  if (!pc) return pc.error();
  return double(*pc) + overhead;
}

}  // namespace loom::tune
