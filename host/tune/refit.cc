// The refit of `loom tune`: the compiler's cost parameters and, for
// comparison, a line per layer kind, fitted by least squares to the
// measured layers (docs/tuning.md, "Refit: the compiler's cost parameters").
#include "tune/refit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

/// Ordinary least squares y ~ slope * x + offset. With fewer than two
/// distinct x only the means are identifiable (`identifiable` false, slope 0).
struct LeastSquares {
  double mean_x = 0, mean_y = 0, slope = 0, offset = 0;
  bool identifiable = false;
};

LeastSquares least_squares(const std::vector<std::pair<double, double>>& pts) {
  LeastSquares f;
  if (pts.empty()) return f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : pts) sx += x, sy += y, sxx += x * x, sxy += x * y;
  const double n = double(pts.size());
  const double den = n * sxx - sx * sx;
  f.mean_x = sx / n;
  f.mean_y = sy / n;
  f.identifiable = pts.size() >= 2 && std::fabs(den) > 1e-9 * std::max(1.0, n * sxx);
  if (f.identifiable) f.slope = (n * sxy - sx * sy) / den;
  f.offset = (sy - f.slope * sx) / n;
  return f;
}

}  // namespace

LinearFit fit_linear(const std::vector<std::pair<double, double>>& pts) {
  LinearFit f;
  f.n = int(pts.size());
  if (pts.empty()) return f;
  const LeastSquares ls = least_squares(pts);
  if (!ls.identifiable) {
    f.a = 1.0;  // one shape: only the offset is identifiable
    f.b = ls.mean_y - ls.mean_x;
    return f;
  }
  f.a = ls.slope;
  f.b = ls.offset;
  return f;
}

json Calibration::to_json() const {
  json j;
  json k = json::object();
  for (const auto& [name, f] : per_kind) k[name] = {{"a", f.a}, {"b", f.b}, {"points", f.n}};
  j["per_kind"] = k;
  j["plan_overhead_cycles"] = overhead;
  return j;
}

CostFit fit_cost_params(const std::vector<PlanTelemetry>& telemetry, const compiler::CostParams& base) {
  std::vector<std::pair<double, double>> pts;  // (insns, measured - predicted)
  for (const auto& t : telemetry)
    for (const auto& l : t.layers) pts.push_back({double(l.insns), double(l.measured) - double(l.predicted)});
  CostFit f;
  f.params = base;
  f.params.layer_cycles = 0;
  f.params.insn_cycles = 0;
  f.points = int(pts.size());
  if (pts.empty()) return f;
  const LeastSquares ls = least_squares(pts);
  const double n = double(pts.size());
  if (ls.slope > 0) {
    f.params.insn_cycles = ls.slope;
    f.params.layer_cycles = ls.offset;
  } else {
    // One instruction count (only the offset is identifiable), or a
    // negative slope: an instruction cannot save cycles, so the constrained
    // least squares keeps insn_cycles at 0 and fits the offset alone.
    f.params.layer_cycles = ls.mean_y;
    f.unconstrained_insn_cycles = ls.slope;
  }
  double e0 = 0, e1 = 0;
  for (auto [x, y] : pts) {
    const double r = y - f.params.correction(x);
    e0 += y * y, e1 += r * r;
  }
  f.rms_before = std::sqrt(e0 / n);
  f.rms_after = std::sqrt(e1 / n);
  return f;
}

HeldOutSplit split_held_out(const std::vector<PlanTelemetry>& telemetry) {
  HeldOutSplit s;
  for (size_t i = 0; i < telemetry.size(); ++i) (held_out(i) ? s.held : s.fit).push_back(telemetry[i]);
  return s;
}

double layer_error(const std::vector<PlanTelemetry>& tel, const compiler::CostParams& cp) {
  double sum = 0;
  size_t n = 0;
  for (const auto& t : tel)
    for (const auto& l : t.layers) {
      const double meas = double(std::max<uint64_t>(l.measured, 1));
      const double pred = std::max(0.0, double(l.predicted) + cp.correction(double(l.insns)));
      sum += std::fabs(pred - meas) / meas;
      ++n;
    }
  return n ? sum / double(n) : 0.0;
}

RefitCheck validate_refit(const std::vector<PlanTelemetry>& held, const compiler::CostParams& current,
                          const compiler::CostParams& candidate) {
  RefitCheck c;
  c.validation_plans = held.size();
  for (const auto& t : held) c.validation_samples += t.layers.size();
  if (!c.validation_samples) {
    c.reason = "not validated: no layer of a held-out plan (1 in " + std::to_string(kHoldOutEvery) +
               " plans measured is held out, from the 2nd)";
    return c;
  }
  c.error_before = layer_error(held, current);
  c.error_after = layer_error(held, candidate);
  c.accepted = c.error_after <= c.error_before;
  char buf[160];
  std::snprintf(buf, sizeof buf, "validation error %.2f %% %s %.2f %% with the parameters it would replace",
                100 * c.error_after, c.accepted ? "<=" : ">", 100 * c.error_before);
  c.reason = buf;
  return c;
}

json RefitCheck::to_json() const {
  return {{"accepted", accepted},
          {"validation_plans", validation_plans},
          {"validation_samples", validation_samples},
          {"error_before", error_before},
          {"error_after", error_after},
          {"reason", reason}};
}

std::string layer_kind(const std::string& op, const std::string& name) {
  return name.find('+') != std::string::npos ? op + "+fused" : op;
}

Calibration refit(const std::vector<PlanTelemetry>& telemetry) {
  std::map<std::string, std::vector<std::pair<double, double>>> pts;
  double over = 0;
  int plans = 0;
  for (const auto& t : telemetry) {
    uint64_t sum = 0;
    for (const auto& l : t.layers) {
      pts[l.kind].push_back({double(l.predicted), double(l.measured)});
      sum += l.measured;
    }
    over += double(t.measured) - double(sum);
    ++plans;
  }
  Calibration c;
  for (const auto& [k, v] : pts) c.per_kind[k] = fit_linear(v);
  c.overhead = plans ? over / plans : 0;
  return c;
}

double corrected_cycles(const PlanTelemetry& t, const compiler::CostParams& cp, double overhead) {
  double sum = overhead;
  for (const auto& l : t.layers) sum += std::max(0.0, double(l.predicted) + cp.correction(double(l.insns)));
  return sum;
}

FitErrors fit_errors(const std::vector<PlanTelemetry>& tel, const Calibration& cal, const compiler::CostParams& cp) {
  std::map<std::pair<std::string, int64_t>, std::array<double, 4>> err;  // n, sum|raw|, sum|params|, sum|line|
  double plan_raw = 0, plan_fit = 0, plan_line = 0;
  for (const auto& t : tel) {
    double line = cal.overhead;
    for (const auto& l : t.layers) {
      auto& e = err[{l.kind, l.rows}];
      const double meas = double(std::max<uint64_t>(l.measured, 1));
      auto f = cal.per_kind.find(l.kind);
      const double fl = f == cal.per_kind.end() ? double(l.predicted) : f->second.apply(double(l.predicted));
      const double fp = std::max(0.0, double(l.predicted) + cp.correction(double(l.insns)));
      e[0] += 1;
      e[1] += std::fabs(double(l.predicted) - meas) / meas;
      e[2] += std::fabs(fp - meas) / meas;
      e[3] += std::fabs(fl - meas) / meas;
      line += fl;
    }
    const double meas = double(std::max<uint64_t>(t.measured, 1));
    plan_raw += std::fabs(double(t.predicted) - meas) / meas;
    plan_fit += std::fabs(corrected_cycles(t, cp, cal.overhead) - meas) / meas;
    plan_line += std::fabs(line - meas) / meas;
  }
  json pe = json::array();
  for (const auto& [k, e] : err)
    pe.push_back({{"kind", k.first},
                  {"rows", k.second},
                  {"layers", int64_t(e[0])},
                  {"error_before", e[1] / e[0]},
                  {"error_after", e[2] / e[0]},
                  {"error_after_per_kind_line", e[3] / e[0]}});
  FitErrors out;
  out.per_kind = std::move(pe);
  out.plan_raw = plan_raw, out.plan_fit = plan_fit, out.plan_line = plan_line;
  return out;
}

}  // namespace loom::tune
