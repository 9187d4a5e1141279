// The program: what a whole model compiles to, and what one run executes.
// Device segments (one plan each) and host steps, in the order they run.
// A JSON graph is a program of one segment and no host steps; an ONNX model
// adds the ops the fabric does not run as host steps, which its frontend
// executes behind runtime::HostSteps (the runtime links no frontend).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "plan/plan.h"

namespace loom::plan {

/// One device segment: its plan, and the program values its plan's inputs
/// and outputs are, in the plan's binding order (the same names).
struct Segment {
  Plan plan;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

/// One step of a run: a segment on the device, or a host step (an index the
/// frontend gives its host ops; an ONNX model's node index).
struct Step {
  int segment = -1;  // >= 0: run segments[segment]; else the host step below
  size_t host = 0;
  bool on_device() const { return segment >= 0; }
};

struct Program {
  std::vector<Segment> segments;
  std::vector<Step> steps;
};

/// The program of one plan: one segment, one step, no host steps.
Program single_segment(Plan p);

/// Checks what the runtime relies on: step indices name segments, every
/// segment runs at least once, and a segment's value names are its plan's
/// bindings. Errors are one line naming `where` and the segment or step.
Status validate(const Program& p, const std::string& where);

}  // namespace loom::plan
