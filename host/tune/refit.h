// What a round of `loom tune` weighs after a refit: the corrected
// prediction of a measured plan and the prediction errors per layer kind,
// shape and plan (fit_cost_params and refit themselves are in tune.h).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "compiler/compiler.h"
#include "tune/tune.h"

namespace loom::tune {

/// The per-layer correction of compiler parameters `cp` summed over a plan,
/// plus the plan overhead.
double corrected_cycles(const PlanTelemetry& t, const compiler::CostParams& cp, double overhead);

/// Prediction errors (relative, absolute) over every measured plan: per
/// (kind, shape bucket) before (uncorrected) and after the refit, and summed
/// per plan.
struct FitErrors {
  nlohmann::ordered_json per_kind = nlohmann::ordered_json::array();
  double plan_raw = 0;   // the uncorrected cost model
  double plan_fit = 0;   // the refitted cost parameters
  double plan_line = 0;  // the per-kind lines of `cal`
};
FitErrors fit_errors(const std::vector<PlanTelemetry>& tel, const Calibration& cal, const compiler::CostParams& cp);

}  // namespace loom::tune
