// An ONNX model prepared to run: QDQ patterns folded into quantized ops, the
// nodes partitioned into device segments (compiled into plans by loom's
// compiler) and host fallback ops, executed in topological order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "compiler/compiler.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"
#include "ir/graph.h"
#include "plan/plan.h"

namespace loom::onnxfe {

struct ProgramOptions {
  bool use_device = true;  // false: every op on the host (the conformance oracle)
  int cores = 0;
  // Every device segment compiles with these (`loom compile model.onnx
  // --placement P --tasks-per-core T --hls H`). A segment that compiles with
  // the defaults but not with these is an error naming it, not a host
  // fallback.
  compiler::Placement placement = compiler::Placement::Static;
  int tasks_per_core = 1;
  compiler::Hls hls = compiler::Hls::Off;
  compiler::Fusion fusion = compiler::Fusion::Cost;
};

/// A maximal run of consecutive device ops (topological order), as one
/// loom graph in NHWC int8 and its compiled plan.
struct Segment {
  ir::Graph graph;
  plan::Plan plan;
  std::vector<std::string> nodes;    // ONNX node names
  std::vector<std::string> inputs;   // ONNX tensor names = graph inputs, in order
  std::vector<std::string> outputs;  // ONNX tensor names = graph outputs, in order
  std::map<std::string, bool> nhwc;  // boundary tensor stored NHWC on the device (ONNX side NCHW)
  std::map<std::string, bool> u8;    // boundary tensor is uint8 on the ONNX side (device holds x - 128)
  std::vector<compiler::Decision> decisions;
};

struct Step {
  int segment = -1;  // >= 0: run that segment; else the host node below
  size_t node = 0;
};

struct Program {
  Model model;
  std::vector<Segment> segments;
  std::vector<Step> steps;
  std::vector<std::string> fallback_ops;  // "node (Op)" of every host op, in order
  std::vector<std::string> notes;         // why an op that could be a device op is not
  int folded_qdq = 0;                     // QDQ groups folded into quantized ops
  size_t onnx_nodes = 0;                  // nodes of the model after folding
};

/// Folds QDQ patterns, partitions and compiles. `known` are values bound at
/// run time (graph inputs): they count as constants for weights and
/// quantization parameters. An op neither the fabric nor the host can run is
/// an error naming the op, node and file.
Expected<Program> build_program(Model m, const std::map<std::string, Value>& known, const spec::HwConfig& cfg,
                                const ProgramOptions& opt);

struct ProgramRun {
  std::vector<std::pair<std::string, Value>> outputs;  // graph output order
  uint64_t device_cycles = 0;
  bool has_time = false;
  uint64_t instructions = 0;
  std::vector<std::pair<std::string, int64_t>> mismatches;  // with check: outputs differing from the reference
};

/// Runs the program: host ops on the CPU, segments on a `backend` device.
/// With `check`, every segment's outputs are also compared, bit for bit,
/// with loom's direct reference (ir::run_reference) on the same inputs.
Expected<ProgramRun> run_program(const Program& p, const std::string& backend, const spec::HwConfig& cfg,
                                 const std::map<std::string, Value>& inputs, bool check = false);

}  // namespace loom::onnxfe
