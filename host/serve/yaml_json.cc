#include "serve/yaml_json.h"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/limits.h"
#include "common/tensor_io.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;

json scalar(const yaml_event_t& e) {
  const std::string s(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return s;
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s.empty() || s == "~" || s == "null") return nullptr;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0') return int64_t(i);
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (errno == 0 && end && *end == '\0') return d;
  return s;
}

std::string text_of(const unsigned char* p) { return p ? reinterpret_cast<const char*>(p) : ""; }

/// A converted node: its value, the nodes it holds (itself included) and
/// its height, so an alias of it costs what expanding it would.
struct Built {
  json value;
  int64_t nodes = 1;
  int height = 0;
};

/// A sequence or mapping being read.
struct Frame {
  Built built;
  std::string anchor;
  size_t line = 0;                 // where it starts (1-based)
  std::optional<std::string> key;  // a mapping's key waiting for its value
};

/// Builds JSON from libyaml's events in one pass: anchors in a hash map (an
/// alias is found in constant time), nesting and alias expansion bounded as
/// they happen, so no input takes more than linear time before it is refused.
class Builder {
 public:
  explicit Builder(std::string source) : source_(std::move(source)) {}

  /// Takes one event; the root once the document's last node ends.
  Status take(const yaml_event_t& e, std::optional<Built>* root) {
    const size_t line = e.start_mark.line + 1;
    switch (e.type) {
      case YAML_SCALAR_EVENT:
        if (!stack_.empty() && stack_.back().built.value.is_object() && !stack_.back().key) {
          const std::string key(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
          if (stack_.back().built.value.contains(key))
            return make_error(source_ + ":" + std::to_string(line), "duplicate key '" + key + "'");
          stack_.back().key = key;
          return Status::ok();
        }
        return done(Built{scalar(e), 1, 0}, text_of(e.data.scalar.anchor), root);
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        LOOM_TRY(expect_value(line));
        if (int(stack_.size()) + 1 > kMaxDepth) return too_deep();
        const bool seq = e.type == YAML_SEQUENCE_START_EVENT;
        Frame f;
        f.built.value = seq ? json::array() : json::object();
        f.anchor = text_of(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor);
        f.line = line;
        stack_.push_back(std::move(f));
        return Status::ok();
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        return done(std::move(f.built), f.anchor, root);
      }
      case YAML_ALIAS_EVENT: {
        LOOM_TRY(expect_value(line));
        auto it = anchors_.find(text_of(e.data.alias.anchor));
        if (it == anchors_.end()) return make_error(source_ + ":" + std::to_string(line), "unknown alias");
        if (int(stack_.size()) + it->second.height > kMaxDepth) return too_deep();
        return done(it->second, "", root);
      }
      default:
        return Status::ok();
    }
  }

 private:
  static constexpr int kMaxDepth = 64;

  /// A node may start here: not as a mapping's key.
  Status expect_value(size_t line) const {
    if (!stack_.empty() && stack_.back().built.value.is_object() && !stack_.back().key)
      return make_error(source_ + ":" + std::to_string(stack_.back().line), "mapping keys must be scalars");
    (void)line;
    return Status::ok();
  }
  Status too_deep() const { return make_error(source_, "nesting deeper than 64 levels"); }

  /// A finished node: counted against the budget, remembered under its
  /// anchor, and placed in its parent (or returned as the root).
  Status done(Built b, const std::string& anchor, std::optional<Built>* root) {
    budget_ -= b.nodes;
    if (budget_ < 0)
      return make_error(source_, "more than " + std::to_string(limits::kMaxYamlNodes) +
                                     " YAML nodes after alias expansion (docs/security.md)");
    if (!anchor.empty()) anchors_[anchor] = b;
    if (stack_.empty()) {
      *root = std::move(b);
      return Status::ok();
    }
    Frame& p = stack_.back();
    p.built.nodes += b.nodes;
    p.built.height = std::max(p.built.height, b.height + 1);
    if (p.built.value.is_array()) {
      p.built.value.push_back(std::move(b.value));
    } else {
      p.built.value[*p.key] = std::move(b.value);
      p.key.reset();
    }
    return Status::ok();
  }

  std::string source_;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, Built> anchors_;
  int64_t budget_ = limits::kMaxYamlNodes;
};

}  // namespace

Expected<json> parse_yaml_text(const std::string& text, const std::string& source) {
  if (text.size() > limits::kMaxTextBytes)
    return make_error(source, "is " + size_str(text.size()) + " of YAML, above the limit of " +
                                  size_str(limits::kMaxTextBytes) + " (docs/security.md)");
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return make_error(source, "cannot initialise the YAML parser");
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> pg(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  Builder b(source);
  std::optional<Built> root;
  for (;;) {
    yaml_event_t e;
    if (!yaml_parser_parse(&parser, &e)) {
      const auto& m = parser.problem_mark;
      return make_error(source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1),
                        std::string("malformed YAML: ") + (parser.problem ? parser.problem : "parse error"));
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> eg(&e, yaml_event_delete);
    // The first document only, as a loader reads it.
    if (e.type == YAML_STREAM_END_EVENT || e.type == YAML_DOCUMENT_END_EVENT) break;
    LOOM_TRY(b.take(e, &root));
  }
  if (!root) return make_error(source, "empty YAML document");
  return std::move(root->value);
}

Expected<json> load_yaml(const std::string& path) {
  auto text = read_file_bytes(path, limits::kMaxTextBytes);
  if (!text) return text.error();
  return parse_yaml_text(*text, path);
}

}  // namespace loom::serve
