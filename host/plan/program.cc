#include "plan/program.h"

namespace loom::plan {
namespace {

bool same_names_in_order(const std::vector<std::string>& names, const std::vector<TensorBinding>& bindings) {
  if (names.size() != bindings.size()) return false;
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] != bindings[k].name) return false;
  return true;
}

}  // namespace

Program single_segment(Plan p) {
  Program prog;
  Segment s;
  for (const auto& b : p.inputs) s.inputs.push_back(b.name);
  for (const auto& b : p.outputs) s.outputs.push_back(b.name);
  s.plan = std::move(p);
  prog.segments.push_back(std::move(s));
  prog.steps.push_back(Step{0, 0});
  return prog;
}

std::vector<std::string> Program::fallback_ops() const {
  std::vector<std::string> out;
  for (const auto& h : host_ops) out.push_back(h.node + " (" + h.op + ")");
  return out;
}

uint64_t Program::predicted_cycles() const {
  uint64_t sum = 0;
  for (const auto& st : steps)
    if (st.on_device() && size_t(st.segment) < segments.size()) sum += segments[size_t(st.segment)].predicted_cycles;
  return sum;
}

std::vector<Decision> Program::decisions() const {
  std::vector<Decision> out;
  for (const auto& s : segments) out.insert(out.end(), s.decisions.begin(), s.decisions.end());
  return out;
}

Status validate(const Program& p, const std::string& where) {
  std::vector<bool> ran(p.segments.size(), false);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& st = p.steps[k];
    if (!st.on_device()) continue;
    if (size_t(st.segment) >= p.segments.size())
      return make_error(where + ": step " + std::to_string(k),
                        "names segment " + std::to_string(st.segment) + " of " + std::to_string(p.segments.size()));
    ran[size_t(st.segment)] = true;
  }
  for (size_t k = 0; k < p.segments.size(); ++k) {
    const Segment& s = p.segments[k];
    const std::string w = where + ": segment " + std::to_string(k);
    if (!ran[k]) return make_error(w, "is run by no step");
    if (!same_names_in_order(s.inputs, s.plan.inputs))
      return make_error(w, "its inputs are not the inputs of its plan");
    if (!same_names_in_order(s.outputs, s.plan.outputs))
      return make_error(w, "its outputs are not the outputs of its plan");
  }
  return {};
}

}  // namespace loom::plan
