#include "common/json_read.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace loom {

namespace {

/// Thrown by the parser callback to stop at the first level too deep.
struct TooDeep {};

template <class Json>
Expected<Json> parse_bounded(std::string_view text, const std::string& where, int max_depth) {
  try {
    Json j = Json::parse(
        text.begin(), text.end(),
        [max_depth](int depth, typename Json::parse_event_t ev, Json&) {
          if ((ev == Json::parse_event_t::object_start || ev == Json::parse_event_t::array_start) && depth >= max_depth)
            throw TooDeep{};
          return true;
        },
        /*allow_exceptions=*/false);
    if (j.is_discarded()) return make_error(where, "not valid JSON");
    return j;
  } catch (const TooDeep&) {
    return make_error(where, "nested deeper than " + std::to_string(max_depth) + " levels (docs/security.md)");
  }
}

}  // namespace

Expected<nlohmann::ordered_json> parse_json(std::string_view text, const std::string& where, int max_depth) {
  return parse_bounded<nlohmann::ordered_json>(text, where, max_depth);
}

Expected<nlohmann::json> parse_json_sorted(std::string_view text, const std::string& where, int max_depth) {
  return parse_bounded<nlohmann::json>(text, where, max_depth);
}

Expected<nlohmann::ordered_json> read_json_file(const std::string& path, uint64_t max_bytes, int max_depth) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return make_error(path, "not a regular file");
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(path, "cannot read its size");
  if (size > max_bytes) return make_error(path, "larger than " + std::to_string(max_bytes >> 20) + " MiB");
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(path, "cannot open");
  std::ostringstream text;
  text << f.rdbuf();
  return parse_json(text.str(), path, max_depth);
}

const nlohmann::ordered_json& field(const nlohmann::ordered_json& o, const std::string& key) {
  static const nlohmann::ordered_json null_value;
  if (!o.is_object()) return null_value;
  const auto it = o.find(key);
  return it == o.end() ? null_value : *it;
}

}  // namespace loom
