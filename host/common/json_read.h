// JSON from outside the process (result files, sweep folders, plan metadata):
// read with bounded size and nesting depth, and looked up without ever
// inserting or reading past what is there.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/status.h"

namespace loom {

/// `text` parsed as JSON, refused in one line (naming `where`) when it is
/// not JSON or nests deeper than `max_depth` (checked while parsing: the
/// parser is iterative, but writing or walking a deep value would recurse).
Expected<nlohmann::ordered_json> parse_json(std::string_view text, const std::string& where,
                                            int max_depth = limits::kMaxJsonDepth);

/// As parse_json, into nlohmann::json (keys sorted), for readers built on
/// it (plan metadata).
Expected<nlohmann::json> parse_json_sorted(std::string_view text, const std::string& where,
                                           int max_depth = limits::kMaxJsonDepth);

/// The JSON file `path`: a regular file of at most `max_bytes`, then as
/// parse_json.
Expected<nlohmann::ordered_json> read_json_file(const std::string& path, uint64_t max_bytes,
                                                int max_depth = limits::kMaxJsonDepth);

/// o[key] when `o` is an object holding `key`, else null: a lookup on
/// untrusted JSON that neither inserts nor reads out of bounds.
const nlohmann::ordered_json& field(const nlohmann::ordered_json& o, const std::string& key);

}  // namespace loom
