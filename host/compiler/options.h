// CompileOptions as a JSON object: the one record of how a plan was
// compiled. compile() writes it into every plan's metadata
// ("compile_options", docs/plan-format.md), program plans carry it too, and
// `loom run PLAN` checks the flags it is given against it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "compiler/compiler.h"

namespace loom::compiler {

/// Every field of `o`: cores, fusion, placement, tasks_per_core, hls,
/// double_buffer, row_windows, group_packing, image_bands, depthwise,
/// exact_host and cost_params
/// (null, or the refitted parameters {latency, layer_cycles, insn_cycles}).
nlohmann::ordered_json options_to_json(const CompileOptions& o);

/// Reads what options_to_json wrote, strictly: every value of its exact type
/// and range, no unknown field (a field left out keeps its default). Errors
/// are one line naming `where` and the field.
Expected<CompileOptions> options_from_json(const nlohmann::json& j, const spec::HwConfig& cfg,
                                           const std::string& where);

/// A decision record as `--explain --json` writes it: node, pass, choice,
/// decision (the explanation), predicted_cycles (when predicted) and
/// alternatives [{choice, predicted_cycles}].
nlohmann::ordered_json decision_to_json(const Decision& d);

/// The fields in which `a` and `b` differ, as "name a -> b" (empty: same).
std::vector<std::string> options_diff(const CompileOptions& a, const CompileOptions& b);

const char* row_windows_name(CompileOptions::RowWindows r);
const char* image_bands_name(CompileOptions::ImageBands b);
const char* batch_fold_name(CompileOptions::BatchFold b);
const char* depthwise_name(CompileOptions::Depthwise d);

}  // namespace loom::compiler
