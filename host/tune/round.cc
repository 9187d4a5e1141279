// A round of `loom tune`'s closed loop: measure the plans the last run used,
// refit, re-decide through the compiler (redecide.cc), hot-swap the new
// mapping into a run that starts with the initial one, and report the round.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "tune/loop.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

/// A round's figures from its refit and re-decision (the caller adds the errors and latencies).
TuneRound round_figures(int round, const RefitCheck& check, const Redecision& rd) {
  TuneRound tr;
  tr.round = round;
  tr.refit = check;
  tr.mapping_changed = rd.changed.size() + rd.caps_changed.size();
  for (const auto& c : rd.caps_changed)
    tr.batch_caps_changed.push_back(c["model"].get<std::string>() + ": " + c["from"].get<std::string>() + " -> " +
                                    c["to"].get<std::string>());
  tr.plans_recompiled = rd.recompiled.size();
  tr.compiler_decisions_changed = rd.compiler_changed.size();
  tr.compiler_decisions_deployed = rd.compiler_deployed;
  tr.compiler_plans_changed = rd.plans_changed;
  tr.compiler_plans_compared = rd.compared;
  return tr;
}

/// A cost fit as the round reports it.
json fit_json(const CostFit& f) {
  return json{{"layer_cycles", f.params.layer_cycles},
              {"insn_cycles", f.params.insn_cycles},
              {"points", f.points},
              {"insn_cycles_unconstrained", f.unconstrained_insn_cycles},
              {"rms_residual_before_cycles", f.rms_before},
              {"rms_residual_after_cycles", f.rms_after}};
}

}  // namespace

Expected<json> Loop::run_round(int round) {
  progress("round " + std::to_string(round) + " of " + std::to_string(o_.rounds) +
           ": measure, refit, re-decide, swap, serve");
  // 1. Telemetry of every plan the last run used.
  auto fresh = measure_new_plans();
  if (!fresh) return fresh.error();
  // 2. Refit: the compiler's cost parameters (they decide) and, for
  // comparison, a line per layer kind; prediction error per (kind, shape
  // bucket) before (uncorrected) and after.
  const Calibration before = cal_;
  cal_ = refit(tel_);
  const RoundRefit rf = refit_cost_params(round);
  const FitErrors fe = fit_errors(tel_, cal_, cfit_.params);
  // 3. Re-decide through the compiler with the cost parameters in force.
  auto rd = redecide(before);
  if (!rd) return rd.error();
  LOOM_TRY(cap_mapping(rd->next, rd->mapping, &rd->caps_changed));
  auto deployed = deployed_compiler_changes(rd->next);
  if (!deployed) return deployed.error();
  rd->compiler_deployed = *deployed;
  // 4. Hot swap into a run that starts with the initial mapping.
  auto r = serve_with({{0.0, &m0_}, {s_.swap_us, &rd->next}});
  if (!r) return r.error();
  runs_.push_back(std::move(*r));
  const Served& cur = runs_.back();
  bool ok = false;
  json sw = swap_check(cur.reqs, s_.swap_us, s_.w.streams.size(), ok);
  all_ok_ = all_ok_ && ok;
  // 5. The round's report; its mapping is the one the next round measures.
  auto jr = round_json(round, *fresh, fe, rf, *rd, std::move(sw), cur);
  if (!jr) return jr.error();
  prev_ = std::move(rd->next);
  last_ = &runs_.back();
  return jr;
}

RoundRefit Loop::refit_cost_params(int round) {
  // Fitted on the plans not held out; the held-out plans' layers judge it
  // against the parameters in force, which were never fitted on them either.
  const HeldOutSplit split = split_held_out(tel_);
  RoundRefit rf;
  rf.candidate = fit_cost_params(split.fit, base_cp_);
  rf.check = validate_refit(split.held, cfit_.params, rf.candidate.params);
  const compiler::CostParams& now = cfit_.params;
  const bool same =
      rf.candidate.params.layer_cycles == now.layer_cycles && rf.candidate.params.insn_cycles == now.insn_cycles;
  if (rf.check.accepted && !same) cfit_ = rf.candidate, params_round_ = round;
  return rf;
}

Expected<size_t> Loop::deployed_compiler_changes(const Mapping& m) {
  size_t n = 0;
  for (const auto& [key, spec] : s_.models) {
    std::set<std::string> seen;
    for (const auto& c : m.at(key).plans()) {
      if (!c.params || !seen.insert(c.tag()).second) continue;
      Choice c0 = c;
      c0.params.reset();
      c0.params_round = 0;
      auto a = lab_.compiled(spec, c0);
      if (!a) return a.error();
      auto b = lab_.compiled(spec, c);
      if (!b) return b.error();
      n += diff_decisions((*a)->decisions(), (*b)->decisions()).size();
    }
  }
  return n;
}

Expected<OutOfSample> Loop::measure_new_plans() {
  OutOfSample out;
  for (const auto& [key, spec] : s_.models) {
    for (const auto& c : prev_[key].plans()) {
      if (measured_tags_.count(key + "|" + c.tag())) continue;
      auto t = lab_.measure(spec, c);
      if (!t) return t.error();
      // Out of sample: the fit so far predicting a plan it has not seen.
      const double meas = double(std::max<uint64_t>((*t)->measured, 1));
      out.raw += std::fabs(double((*t)->predicted) - meas) / meas;
      out.fit += std::fabs(corrected_cycles(**t, cfit_.params, cal_.overhead) - meas) / meas;
      ++out.plans;
      tel_.push_back(**t);
      measured_tags_.insert(key + "|" + c.tag());
    }
  }
  return out;
}

Expected<json> Loop::round_json(int round, const OutOfSample& fresh, const FitErrors& fe, const RoundRefit& rf,
                                const Redecision& rd, json swap, const Served& cur) {
  json jr;
  jr["round"] = round;
  jr["refit"] = rf.check.to_json();
  jr["refit"]["candidate"] = fit_json(rf.candidate);
  // The parameters in force: the round's refit when accepted, else those it would have replaced.
  jr["cost_params"] = fit_json(cfit_);
  jr["cost_params"]["fitted_in_round"] = params_round_;
  jr["calibration"] = cal_.to_json();
  jr["plans_measured"] = tel_.size();
  jr["prediction_error"] = fe.per_kind;
  jr["counters"] = counters_json(tel_);
  const double err_before = tel_.empty() ? 0.0 : fe.plan_raw / double(tel_.size());
  const double err_after = tel_.empty() ? 0.0 : fe.plan_fit / double(tel_.size());
  jr["plan_error_before"] = err_before;
  jr["plan_error_after"] = err_after;
  jr["plan_error_after_per_kind_line"] = tel_.empty() ? 0.0 : fe.plan_line / double(tel_.size());
  jr["new_plans"] = fresh.plans;
  jr["new_plans_error_cost_model"] = fresh.plans ? fresh.raw / fresh.plans : 0.0;
  jr["new_plans_error_previous_fit"] = fresh.plans ? fresh.fit / fresh.plans : 0.0;
  jr["decisions_changed"] = rd.changed;
  jr["batch_caps_changed"] = rd.caps_changed;
  if (!rd.mapping.empty()) jr["mapping"] = rd.mapping;
  jr["plans_recompiled"] = rd.recompiled;
  jr["compiler_plans_compared"] = rd.compared;
  jr["compiler_plans_changed"] = rd.plans_changed;
  jr["compiler_decisions_changed"] = rd.compiler_changed;
  jr["compiler_decisions_deployed"] = rd.compiler_deployed;
  jr["swap"] = std::move(swap);
  auto after = add_latency(jr, cur.reqs, "run of round " + std::to_string(round));
  if (!after) return after.error();
  const serve::LatencySummary& lk = *after;
  auto profile = deployed_profile(rd.next);
  if (!profile) return profile.error();
  jr["profile"] = *profile;
  auto tl = timeline_json(cur.spans, s_.swap_us, tl_len_, layers_with(rd.next));
  if (!tl) return tl.error();
  jr["timeline"] = *tl;
  recovered_last_ = gap_recovered(l0_.mean, lbest_.mean, lk.mean);
  // The gain split: (a) re-compiling with the offline model, (b) the batch
  // caps on top of (a), (c) the refit's parameters and plan overhead on top
  // of both (negative: the refit lost).
  jr["attribution"] = {{"gain_us", minus(l0_.mean, lk.mean)},
                       {"offline_recompile_us", minus(l0_.mean, loff_.mean)},
                       {"batch_cap_us", minus(loff_.mean, lcap_.mean)},
                       {"refit_us", minus(lcap_.mean, lk.mean)},
                       {"gain_p99_us", minus(l0_.p99, lk.p99)},
                       {"offline_recompile_p99_us", minus(l0_.p99, loff_.p99)},
                       {"batch_cap_p99_us", minus(loff_.p99, lcap_.p99)},
                       {"refit_p99_us", minus(lcap_.p99, lk.p99)}};
  jr["gap_recovered_mean"] = json_of(recovered_last_);
  jr["gap_recovered_p99"] = json_of(gap_recovered(l0_.p99, lbest_.p99, lk.p99));
  const auto diff = [](const std::optional<double>& a, const std::optional<double>& b) -> std::optional<double> {
    return a && b ? std::optional<double>(*a - *b) : std::nullopt;
  };
  TuneRound tr = round_figures(round, rf.check, rd);
  tr.plan_error_before = err_before, tr.plan_error_after = err_after;
  tr.mean_us = lk.mean;
  tr.gap_recovered_mean = recovered_last_;
  tr.gain_us = diff(l0_.mean, lk.mean);
  tr.offline_recompile_us = diff(l0_.mean, loff_.mean);
  tr.batch_cap_us = diff(loff_.mean, lcap_.mean);
  tr.refit_us = diff(lcap_.mean, lk.mean);
  rounds_.push_back(std::move(tr));
  return jr;
}

Expected<json> Loop::deployed_profile(const Mapping& next) {
  // Per layer the offline (uncorrected) prediction and the measured cycles.
  json profile = json::array();
  for (const auto& [key, spec] : s_.models) {
    std::set<std::string> seen;
    for (const auto& c : next.at(key).plans()) {
      if (!seen.insert(c.tag()).second) continue;
      auto t = lab_.measure(spec, c);
      if (!t) return t.error();
      json ls = json::array();
      auto cr = lab_.compiled(spec, c);
      if (!cr) return cr.error();
      size_t first = 0;
      for (size_t k = 0; k < (*t)->part_layers.size(); ++k) {
        for (size_t li = first; li < first + (*t)->part_layers[k]; ++li) {
          const auto& l = (*t)->layers[li];
          ls.push_back({{"name", l.name}, {"kind", l.kind}, {"predicted", l.predicted}, {"measured", l.measured}});
        }
        first += (*t)->part_layers[k];
        if ((*t)->part_layers[k] > 0) continue;
        // A pipeline or dynamic part overlaps its layers: measured whole.
        ls.push_back({{"name", whole_part_name(**cr, k)},
                      {"kind", std::string("whole (") + c.placement_tag() + ")"},
                      {"predicted", (*t)->part_predicted[k]},
                      {"measured", (*t)->part_cycles[k]}});
      }
      profile.push_back({{"model", key}, {"choice", c.tag()}, {"layers", ls}});
    }
  }
  return profile;
}

}  // namespace loom::tune
