#include "serve/yaml_json.h"

#include <yaml.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/limits.h"
#include "common/tensor_io.h"

namespace loom::serve {

namespace {

using json = nlohmann::ordered_json;

json scalar(const yaml_node_t* n) {
  const std::string s(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return s;
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

// `budget` counts the nodes still allowed: an alias is expanded each time it
// is used, so a few lines of nested aliases could otherwise grow without end.
Expected<json> convert(yaml_document_t* doc, yaml_node_t* n, const std::string& source, int depth, int64_t& budget) {
  if (depth > 64) return make_error(source, "nesting deeper than 64 levels");
  if (!n) return make_error(source, "empty YAML node");
  if (--budget < 0)
    return make_error(source, "more than " + std::to_string(limits::kMaxYamlNodes) +
                                  " YAML nodes after alias expansion (docs/security.md)");
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return scalar(n);
    case YAML_SEQUENCE_NODE: {
      json a = json::array();
      for (auto* it = n->data.sequence.items.start; it < n->data.sequence.items.top; ++it) {
        auto v = convert(doc, yaml_document_get_node(doc, *it), source, depth + 1, budget);
        if (!v) return v;
        a.push_back(std::move(*v));
      }
      return a;
    }
    case YAML_MAPPING_NODE: {
      json o = json::object();
      for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
        yaml_node_t* k = yaml_document_get_node(doc, p->key);
        if (!k || k->type != YAML_SCALAR_NODE)
          return make_error(source + ":" + std::to_string(n->start_mark.line + 1), "mapping keys must be scalars");
        const std::string key(reinterpret_cast<const char*>(k->data.scalar.value), k->data.scalar.length);
        if (o.contains(key))
          return make_error(source + ":" + std::to_string(k->start_mark.line + 1), "duplicate key '" + key + "'");
        auto v = convert(doc, yaml_document_get_node(doc, p->value), source, depth + 1, budget);
        if (!v) return v;
        o[key] = std::move(*v);
      }
      return o;
    }
    default:
      return make_error(source, "empty YAML node");
  }
}

}  // namespace

Expected<json> parse_yaml_text(const std::string& text, const std::string& source) {
  if (text.size() > limits::kMaxTextBytes)
    return make_error(source, "is " + size_str(text.size()) + " of YAML, above the limit of " +
                                  size_str(limits::kMaxTextBytes) + " (docs/security.md)");
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return make_error(source, "cannot initialise the YAML parser");
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> pg(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    const auto& m = parser.problem_mark;
    return make_error(source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1),
                      std::string("malformed YAML: ") + (parser.problem ? parser.problem : "parse error"));
  }
  std::unique_ptr<yaml_document_t, void (*)(yaml_document_t*)> dg(&doc, yaml_document_delete);
  yaml_node_t* root = yaml_document_get_root_node(&doc);
  if (!root) return make_error(source, "empty YAML document");
  int64_t budget = limits::kMaxYamlNodes;
  return convert(&doc, root, source, 0, budget);
}

Expected<json> load_yaml(const std::string& path) {
  auto text = read_file_bytes(path, limits::kMaxTextBytes);
  if (!text) return text.error();
  return parse_yaml_text(*text, path);
}

}  // namespace loom::serve
