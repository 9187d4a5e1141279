// Public entry point of the compiler: a validated graph and a hardware
// configuration in, a plan (per-core instruction streams + memory plan) out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "compiler/cost_model.h"
#include "ir/graph.h"
#include "loom/spec_gen.h"
#include "plan/plan.h"
#include "plan/program.h"

namespace loom::compiler {

/// Which producer-consumer groups fuse: none, every legal one (greedy), or
/// those the cost model predicts to be faster (cost, the default).
enum class Fusion : uint8_t { None, Greedy, Cost };
const char* fusion_name(Fusion f);
/// Parses "none" / "greedy" / "cost".
Expected<Fusion> parse_fusion(const std::string& s);

/// How layers and tiles are spread over the cores (docs/compiler.md,
/// "Placement"): every layer's tiles over every core with a barrier between
/// layers (static), contiguous layer stages on core groups synchronised per
/// image by semaphores (pipeline), or tile tasks with dependencies that the
/// runtime hands to whichever core is free (dynamic).
enum class Placement : uint8_t { Static, Pipeline, Dynamic };
const char* placement_name(Placement p);
/// Parses "static" / "pipeline" / "dynamic".
Expected<Placement> parse_placement(const std::string& s);

/// HLS compute units beside the cores (hls/README.md "As compute units"):
/// off (every layer on the cores), or auto (the hls-placement pass moves a
/// layer, or part of its output pixels, to a unit when the models predict it
/// faster).
enum class Hls : uint8_t { Off, Auto };
const char* hls_name(Hls h);
/// Parses "off" / "auto".
Expected<Hls> parse_hls(const std::string& s);

struct CompileOptions {
  int num_cores = 0;          // 0: all cores of the config
  bool double_buffer = true;  // two IN/WGT/OUT/PARAM slots so load, compute and store overlap
  Fusion fusion = Fusion::Cost;
  Hls hls = Hls::Off;
  Placement placement = Placement::Static;
  int tasks_per_core = 1;  // dynamic: tasks per core and layer (balance against a drain per task)
  /// Row windows (pass.h, Tiling::row_window) for convolutions that allow
  /// them: weighed by the cost model (Auto), never (Off), or always (On).
  enum class RowWindows { Auto, Off, On } row_windows = RowWindows::Auto;
  /// Group packing (pass.h, MacGeom::pack) of grouped convolutions: how many
  /// groups each GEMM packs is weighed by the cost model; false keeps one
  /// group a GEMM.
  bool group_packing = true;
  /// Image bands (pass.h, Tiling::band) for convolutions that allow
  /// them: weighed by the cost model (Auto), never (Off), or always (On).
  enum class ImageBands { Auto, Off, On } image_bands = ImageBands::Auto;
  /// Depthwise convolutions on the cores' depthwise unit (DWCONV, pass.h
  /// depthwise_ok) or on the array (group packing): weighed by the cost
  /// model (Auto), always the array (Off), or the unit wherever a tile fits (On).
  enum class Depthwise { Auto, Off, On } depthwise = Depthwise::Auto;
  /// Batch folding (pass.h, MacGeom::images) of convolutions whose windows
  /// meet at the seams between images: weighed against image-by-image tiles
  /// by the cost model (Auto), never (Off), or wherever it fits (On).
  /// Convolutions without seams (1x1, unpadded, stride stepping evenly
  /// through the images) are always folded.
  enum class BatchFold { Auto, Off, On } batch_fold = BatchFold::Auto;
  /// ONNX models: keep Softmax and LayerNormalization between their Q/DQ on
  /// the host in float (what ONNX Runtime computes) instead of folding them
  /// into the fabric's integer row normalizations (ROWNORM, approximations
  /// of a few 2^-16): exactness for speed.
  bool exact_host = false;
  /// The cost model's parameters the fusion and tiling passes decide with
  /// (e.g. refitted by `loom tune`); empty: the configuration's, uncorrected.
  std::optional<CostParams> cost_params;
  CostParams cost(const spec::HwConfig& cfg) const { return cost_params ? *cost_params : CostParams::from(cfg); }
};

/// A CompileOptions field a pass reads, named as options_to_json names it.
/// num_cores and double_buffer are read once, into the state every pass
/// shares (cores, scratchpad budgets); exact_host by the ONNX frontend.
enum class PassOption : uint8_t {
  Fusion,
  Hls,
  Placement,
  TasksPerCore,
  RowWindows,
  GroupPacking,
  ImageBands,
  Depthwise,
  BatchFold,
  CostParams
};
const char* pass_option_name(PassOption o);

/// A statistic a pass keeps: its key, and what it counts. A key ending in
/// ".*" is a family keyed by what follows the dot (`insn.GEMM`).
struct PassStatistic {
  const char* key;
  const char* counts;
};

/// What a pass is, declared beside it as MLIR's pass definitions are: its
/// name, the CompileOptions fields it reads and the statistics it keeps.
/// compile() holds every pass to it: reading an option or keeping a
/// statistic the pass does not declare fails the compile with an internal
/// error naming the pass and the field.
struct PassInfo {
  const char* name;
  std::vector<PassOption> options;
  std::vector<PassStatistic> statistics;
  bool reads(PassOption o) const;
  bool keeps(const std::string& key) const;
};

/// The pipeline's passes in order, as each declares itself (`loom info --passes`).
std::vector<PassInfo> pipeline_passes();

/// A pass's decisions and the cost model's layer predictions are part of the
/// compiled program (plan/program.h), where every tool reads them.
using Alternative = plan::Alternative;
using Decision = plan::Decision;
using LayerPrediction = plan::LayerPrediction;

struct CompileResult {
  plan::Plan plan;
  std::vector<LayerPrediction> predicted;  // per emitted layer, plan order
  uint64_t predicted_cycles = 0;           // sum over layers (pipeline placement: the pipeline's prediction)
  std::vector<Decision> decisions;
  std::vector<std::pair<std::string, int64_t>> stats;  // "<pass>.<statistic>", in pipeline order
};

/// The program segment of a compiled graph: `r`'s plan (bound by its
/// tensors' names), predictions and decisions, with `g`, the graph compiled.
plan::Segment segment_of(CompileResult r, ir::Graph g);

/// Compiles `g` (already validated by ir::validate) for `cfg`. Errors name the
/// node and, when an instruction field overflows, the field.
Expected<CompileResult> compile(const ir::Graph& g, const spec::HwConfig& cfg, const CompileOptions& opt);

}  // namespace loom::compiler
