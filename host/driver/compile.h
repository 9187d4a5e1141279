// The one compile driver: a JSON graph, an ONNX model (a zoo network is one
// once built) or the built-in gemm_chain, compiled into one plan::Program
// with every segment's predictions and decisions. The CLI, serve's service
// model and tune's lab call it, so what `loom serve` and `loom tune`
// measure is what `loom run` runs; nothing else builds device segments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"
#include "compiler/compiler.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/value.h"
#include "ir/graph.h"
#include "plan/program.h"

namespace loom::driver {

/// The built-in gemm_chain: `layers` times (up-projection to `ffn`, ReLU,
/// down-projection to `hidden`) over [rows, hidden] int8 activations.
struct GemmChain {
  int64_t hidden = 0, ffn = 0, layers = 0, rows = 0;
};
ir::Graph gemm_chain_graph(const GemmChain& c);

/// What to compile.
struct Source {
  enum class Kind { Graph, Onnx, GemmChain };
  Kind kind = Kind::Graph;
  std::string path;  // Graph: the .json file; Onnx: the .onnx model
  /// Graph: the graph, when built in memory (path empty: no file to record).
  std::optional<ir::Graph> graph;
  /// Onnx: the model, when the caller loaded it already (to read its
  /// inputs); else it is loaded from `path`.
  std::optional<onnxfe::Model> model;
  /// Onnx: shapes bound when the model is loaded from `path` (a model given
  /// loaded was bound by its caller). A model with a graph input dimension
  /// left unbound is refused.
  onnxfe::ShapeBinding shapes;
  GemmChain chain;

  static Source graph_file(std::string path);
  static Source graph_of(ir::Graph g);
  static Source onnx_file(std::string path, onnxfe::ShapeBinding shapes = {});
  static Source onnx_model(onnxfe::Model m);
  static Source gemm_chain(const GemmChain& c);
};

/// Compiles `src` for `cfg` with `opt` (every device segment with the same
/// options). An ONNX model's `bound` values (graph inputs given at run time)
/// count as constants for its weights and quantization parameters. A JSON
/// graph's plan records the file and its hash (`loom run --check` finds its
/// reference there). Errors are one line naming the input.
Expected<plan::Program> compile_program(Source src, const spec::HwConfig& cfg, const compiler::CompileOptions& opt,
                                        const std::map<std::string, onnxfe::Value>& bound = {});

/// A model compiled many times with different options (tune's choices,
/// serve's mappings): loaded, folded and partitioned once, then each
/// compile() compiles the segments' graphs again with its options. The
/// result is always the program compile_program(src, cfg, opt) gives: where
/// the partition could differ (a segment that did not compile when
/// prepared, or does not with `opt`; --exact-host, which folds otherwise),
/// the model is compiled from the start.
class Reusable {
 public:
  static Expected<Reusable> prepare(Source src, const spec::HwConfig& cfg);
  Expected<plan::Program> compile(const compiler::CompileOptions& opt) const;

 private:
  Source src_;
  const spec::HwConfig* cfg_ = nullptr;
  plan::Program base_;    // compiled with the default options
  bool partial_ = false;  // a segment of base_ did not compile: its ops went to the host
};

}  // namespace loom::driver
