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
#include "runtime/device.h"
#include "runtime/executor.h"

namespace loom::onnxfe {

struct ProgramOptions {
  bool use_device = true;  // false: every op on the host (the conformance oracle)
  // Every device segment compiles with these (the one CompileOptions of
  // `loom compile` and `loom run`). A segment that compiles with the
  // defaults but not with these is an error naming it, not a host fallback.
  compiler::CompileOptions compile;
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

/// One device segment's run: its step, and the executor's report (per-core
/// counters, cycles, per-layer cycles; outputs moved into the program's
/// values).
struct SegmentRun {
  int segment = 0;
  runtime::RunResult result;
};

struct ProgramRun {
  std::vector<std::pair<std::string, Value>> outputs;  // graph output order
  std::vector<SegmentRun> segments;                     // step order
  uint64_t device_cycles = 0;
  bool has_time = false;
  uint64_t instructions = 0;
  std::vector<std::pair<std::string, int64_t>> mismatches;  // with check: outputs differing from the reference
};

/// Runs the program on one device: host ops on the CPU, every segment on
/// `dev` in turn. With `check`, every segment's outputs are also compared,
/// bit for bit, with loom's direct reference (ir::run_reference) on the same
/// inputs; the segments then need their graphs.
Expected<ProgramRun> run_program(const Program& p, runtime::Device& dev, const std::map<std::string, Value>& inputs,
                                 bool check = false, const runtime::RunOptions& ro = {});
/// The same on a new device of `backend`.
Expected<ProgramRun> run_program(const Program& p, const std::string& backend, const spec::HwConfig& cfg,
                                 const std::map<std::string, Value>& inputs, bool check = false);

/// Seeded random values for every graph input of `m` (deterministic): int8
/// and uint8 over their whole range, floats in [-1, 1), bools, and small
/// non-negative integers for int32/int64 inputs. An input without a known
/// type and fixed shape is an error naming it (give it with --inputs).
Expected<std::map<std::string, Value>> random_inputs(const Model& m, uint64_t seed);

}  // namespace loom::onnxfe
