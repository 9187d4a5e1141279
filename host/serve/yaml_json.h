// Reads a YAML file (libyaml) into a JSON value so workload and sweep files
// are checked with the same field-by-field code as every other loom input.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace loom::serve {

/// Plain scalars become integers, reals, booleans or null when they look like
/// one; quoted scalars stay strings. Errors name the file, line and column.
Expected<nlohmann::ordered_json> load_yaml(const std::string& path);
Expected<nlohmann::ordered_json> parse_yaml_text(const std::string& text, const std::string& source);

}  // namespace loom::serve
