// An ONNX model prepared to run: QDQ patterns folded into quantized ops, the
// nodes partitioned into device segments (compiled into plans by loom's
// compiler) and host fallback ops, in topological order: a plan::Program
// whose host steps are ONNX nodes, run by runtime::run_program with the
// frontend's values behind runtime::HostSteps.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/program.h"
#include "runtime/executor.h"
#include "runtime/program.h"

namespace loom::onnxfe {

struct ProgramOptions {
  bool use_device = true;  // false: every op on the host (the conformance oracle)
  // Every device segment compiles with these (the one CompileOptions of
  // `loom compile` and `loom run`). A segment that compiles with the
  // defaults but not with these is an error naming it, not a host fallback.
  compiler::CompileOptions compile;
};

/// How a device segment's boundary tensors look on the ONNX side: stored
/// NHWC on the device (NCHW on the ONNX side), uint8 on the ONNX side (the
/// device holds x - 128).
struct SegmentLayout {
  std::map<std::string, bool> nhwc;
  std::map<std::string, bool> u8;

  /// The ONNX-side type and shape of boundary tensor `b` (uint8 where
  /// flagged u8, NCHW where the device holds it NHWC): what the host steps
  /// give the segment or read from it.
  TensorType host_type(const plan::TensorBinding& b) const;
};

/// The ONNX frontend's side of a plan::Program: the model whose nodes its
/// host steps are (a host step's index is the node's index in model.nodes),
/// and the layout of every segment's boundary tensors.
class HostModel final : public plan::HostModel {
 public:
  const char* kind() const override { return "onnx"; }
  Model model;
  std::vector<SegmentLayout> layouts;  // one per program segment
  int folded_qdq = 0;                  // QDQ groups folded into quantized ops, DequantizeLinear of constants folded
  size_t onnx_nodes = 0;               // nodes of the model after folding
  int segments_on_host = 0;            // segments that did not compile for the fabric (their ops on the host)
};

/// The ONNX host model of `p`, or an error naming `where` when `p` has none
/// (a program of a JSON graph) or its layouts do not match its segments.
Expected<const HostModel*> host_model(const plan::Program& p, const std::string& where);

/// The elements of `n`'s outputs whose shapes are known (a dynamic dim
/// counts as 1): what the serving model charges a host op for.
uint64_t output_elements(const Model& m, const Node& n);

/// A device segment while it is built: its loom graph and boundary layouts.
struct SegmentDraft {
  ir::Graph graph;
  SegmentLayout layout;
};

/// Folds QDQ patterns, partitions and compiles. `known` are values bound at
/// run time (graph inputs): they count as constants for weights and
/// quantization parameters. An op neither the fabric nor the host can run is
/// an error naming the op, node and file.
Expected<plan::Program> build_program(Model m, const std::map<std::string, Value>& known, const spec::HwConfig& cfg,
                                      const ProgramOptions& opt);

/// The segment graphs of a model whose partition is known: `nodes` lists
/// each segment's node names (after QDQ folding, in model order), as a
/// program plan records them. Nothing is compiled; a node that is missing or
/// no longer maps to the fabric is an error naming it. `loom run PLAN
/// --check` gets its reference this way. `exact_host`: the compile option
/// the plan was compiled with (Softmax/LayerNormalization left unfolded).
Expected<std::vector<SegmentDraft>> segment_graphs(Model m, const std::vector<std::vector<std::string>>& nodes,
                                                   bool exact_host = false);

/// The values of one run of a program: the graph inputs (checked against
/// the model's types), host ops run on them by the CPU fallback, device
/// tensors converted at segment boundaries (NCHW <-> NHWC, uint8 <-> int8).
class ProgramValues final : public runtime::HostSteps {
 public:
  /// Binds `inputs` to `p`'s graph inputs; a missing input, or one of
  /// another type or shape than the model declares, is an error naming it.
  static Expected<std::unique_ptr<ProgramValues>> bind(const plan::Program& p,
                                                       const std::map<std::string, Value>& inputs);
  Status run_host(size_t index) override;
  Expected<Tensor> to_device(int segment, const plan::TensorBinding& b) override;
  Status from_device(int segment, const plan::TensorBinding& b, Tensor t) override;
  /// The graph outputs in graph output order, once the program ran.
  Expected<std::vector<std::pair<std::string, Value>>> outputs() const;

 private:
  ProgramValues(const HostModel& h, std::map<std::string, Value> env) : h_(h), env_(std::move(env)) {}
  const HostModel& h_;
  std::map<std::string, Value> env_;
};

struct ProgramRun {
  std::vector<std::pair<std::string, Value>> outputs;  // graph output order
  runtime::ProgramRun device;  // per segment: counters, cycles, layer cycles; with check, the mismatches
};

/// Runs the program on one device through runtime::run_program: host ops on
/// the CPU, every segment on `dev` in turn. With `check`, every segment's
/// outputs are also compared with loom's direct reference
/// (runtime::RunOptions::check); the segments then need their graphs.
Expected<ProgramRun> run_program(const plan::Program& p, runtime::Device& dev,
                                 const std::map<std::string, Value>& inputs, bool check = false,
                                 const runtime::RunOptions& ro = {});
/// The same on a new device of `backend`.
Expected<ProgramRun> run_program(const plan::Program& p, const std::string& backend, const spec::HwConfig& cfg,
                                 const std::map<std::string, Value>& inputs, bool check = false);

/// Seeded random values for every graph input of `m` (deterministic): int8
/// and uint8 over their whole range, floats in [-1, 1), bools, and small
/// non-negative integers for int32/int64 inputs. An input without a known
/// type and fixed shape is an error naming it (give it with --inputs).
Expected<std::map<std::string, Value>> random_inputs(const Model& m, uint64_t seed);
/// The values in `files` (.pb or .npy, read_value), one for each graph input
/// of `m` in order; a count that differs is an error naming --inputs.
Expected<std::map<std::string, Value>> read_inputs(const Model& m, const std::vector<std::string>& files);

}  // namespace loom::onnxfe
