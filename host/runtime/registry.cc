// The backend registry: backends register a factory under their CLI name.
#include <algorithm>
#include <map>

#include "device/device.h"

namespace loom::runtime {
namespace {

struct Entry {
  std::string description;
  DeviceFactory factory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

}  // namespace

void register_backend(std::string name, std::string description, DeviceFactory f) {
  registry()[std::move(name)] = Entry{std::move(description), std::move(f)};
}

Expected<std::unique_ptr<Device>> make_device(std::string_view backend, const spec::HwConfig& cfg,
                                              const DeviceOptions& opt) {
  auto it = registry().find(std::string(backend));
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, e] : registry()) known += (known.empty() ? "" : ", ") + n;
    return make_error("--backend", "unknown backend '" + std::string(backend) + "' (available: " + known + ")");
  }
  return it->second.factory(cfg, opt);
}

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> v;
  for (const auto& [n, e] : registry()) v.push_back({n, e.description});
  return v;
}

}  // namespace loom::runtime
