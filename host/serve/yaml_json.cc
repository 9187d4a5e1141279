#include "serve/yaml_json.h"

#include <yaml.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

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

Expected<json> convert(yaml_document_t* doc, yaml_node_t* n, const std::string& source, int depth) {
  if (depth > 64) return make_error(source, "nesting deeper than 64 levels");
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return scalar(n);
    case YAML_SEQUENCE_NODE: {
      json a = json::array();
      for (auto* it = n->data.sequence.items.start; it < n->data.sequence.items.top; ++it) {
        auto v = convert(doc, yaml_document_get_node(doc, *it), source, depth + 1);
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
        auto v = convert(doc, yaml_document_get_node(doc, p->value), source, depth + 1);
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
  return convert(&doc, root, source, 0);
}

Expected<json> load_yaml(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(path, "cannot open the file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_yaml_text(ss.str(), path);
}

}  // namespace loom::serve
