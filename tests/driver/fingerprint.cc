#include "driver/fingerprint.h"

namespace loom::driver {

/// Everything a run and a report read from a program, as bytes.
std::string fingerprint(const plan::Program& p) {
  std::string s;
  for (const auto& st : p.steps) s += std::to_string(st.segment) + ":" + std::to_string(st.host) + ";";
  for (const auto& h : p.host_ops) s += h.node + "|" + h.op + "|" + h.why + "|" + std::to_string(h.elements) + ";";
  for (const auto& n : p.notes) s += n + ";";
  for (const auto& seg : p.segments) {
    s += plan::encode_plan(seg.plan);
    for (const auto& o : seg.ops) s += o + ",";
    s += std::to_string(seg.predicted_cycles) + ";";
    for (const auto& d : seg.decisions) s += d.pass + d.node + d.text + ";";
  }
  return s;
}

/// Option sets that change every pass's choices.
std::vector<compiler::CompileOptions> option_sets() {
  std::vector<compiler::CompileOptions> v(5);
  v[1].fusion = compiler::Fusion::None;
  v[2].num_cores = 2;
  v[2].placement = compiler::Placement::Pipeline;
  v[3].num_cores = 1;
  v[3].placement = compiler::Placement::Dynamic;
  v[4].exact_host = true;
  return v;
}

}  // namespace loom::driver
