// The program: what a whole model compiles to, and what one run executes;
// the one compiled artifact of every input kind (driver/compile.h).
// Device segments (one plan each) and host steps, in the order they run,
// with what the compiler predicted and decided for each segment and why
// each host op is not on the device. A JSON graph is a program of one
// segment and no host steps; an ONNX model adds the ops the fabric does not
// run as host steps, which its frontend executes behind runtime::HostSteps
// from the program's HostModel (the runtime links no frontend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "ir/graph.h"
#include "plan/plan.h"

namespace loom::plan {

/// An option a pass weighed and did not choose, with the cost model's
/// prediction for it where it made one.
struct Alternative {
  std::string choice;
  std::optional<uint64_t> predicted_cycles;
};

/// A decision of a pass, as a record: what it chose for which node, the
/// prediction the choice rests on and the options it weighed. `--explain`
/// prints `text`; tools (`loom tune`, `loom bench fusion`) compare `choice`.
struct Decision {
  std::string node;    // layer name ('+'-joined when fused)
  std::string pass;    // pass that took the decision
  std::string choice;  // what was chosen, without the numbers that justify it ("kept separate", a tile)
  std::string text;    // the explanation: the choice, then why
  std::optional<uint64_t> predicted_cycles;  // of the choice, when the pass predicted it
  std::vector<Alternative> alternatives;     // weighed and not chosen
};

/// The cost model's prediction for one emitted layer (fused group).
struct LayerPrediction {
  std::string name;
  uint64_t cycles = 0, dram_read = 0, dram_written = 0, insns = 0;
  uint64_t core_insns = 0;  // the busiest core's instructions (CostParams::correction's argument)
};

/// One device segment: its plan, and the program values its plan's inputs
/// and outputs are, in the plan's binding order (the same names). The
/// compile record below is empty for a program read from a file.
struct Segment {
  Plan plan;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> ops;            // the source ops it runs (ONNX node names), in order
  ir::Graph graph;                         // what the plan compiles (the reference of --check; empty: not known)
  std::vector<LayerPrediction> predicted;  // per emitted layer, plan order
  uint64_t predicted_cycles = 0;           // the compiler's prediction of one run of the plan
  std::vector<Decision> decisions;         // every pass's decisions, in pipeline order
  std::vector<std::pair<std::string, int64_t>> stats;  // "<pass>.<statistic>", in pipeline order
};

/// An op that runs on the host, and why (`--explain`, `host_ops` in
/// `--json`); `elements`: of its outputs (the serving host-time model).
struct HostOp {
  std::string node, op, why;
  uint64_t elements = 0;
};

/// The frontend's side of a program's host steps: what they compute and how
/// boundary tensors convert (the ONNX frontend's model and layouts). The
/// runtime and the plan library never look inside; the frontend that made
/// it runs it (onnxfe::host_model).
class HostModel {
 public:
  virtual ~HostModel() = default;
  virtual const char* kind() const = 0;  // "onnx"
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
  std::vector<HostOp> host_ops;     // one per host step, in step order
  std::vector<std::string> notes;   // why an op that could be a device op is not
  std::shared_ptr<HostModel> host;  // null: no host steps (a JSON graph, gemm_chain)
  /// "node (Op)" of every host op, in order.
  std::vector<std::string> fallback_ops() const;
  /// The compiler's prediction of the device segments, one run each step.
  uint64_t predicted_cycles() const;
  /// Every segment's decisions, in step order of first run.
  std::vector<Decision> decisions() const;
};

/// The program of one plan: one segment, one step, no host steps.
Program single_segment(Plan p);

/// Checks what the runtime relies on: step indices name segments, every
/// segment runs at least once, and a segment's value names are its plan's
/// bindings. Errors are one line naming `where` and the segment or step.
Status validate(const Program& p, const std::string& where);

}  // namespace loom::plan
