// YAML workloads and sweeps -> parse -> arrival generation. Every input is
// read as YAML the way sweep and command files are (serve::parse_yaml_text)
// and then as a workload; a workload that parses has its arrivals generated
// (the budgets of limits.h must stop any run that would not finish).
#include "fuzz_util.h"
#include "serve/server.h"
#include "serve/workload.h"
#include "serve/yaml_json.h"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::bytes(data, size));
  if (auto doc = serve::parse_yaml_text(text, "fuzz.yaml"); !doc) fuzz::check_error(doc.error());
  auto w = serve::parse_workload_text(text, "/nonexistent-fuzz/workload.yaml");
  if (!w) return fuzz::check_error(w.error()), 0;
  double n = 0;
  for (const auto& s : w->streams) n += serve::expected_requests(s, w->duration_ms, 1.0);
  if (n > 1e5) return 0;  // a legal long run is work, not a hang
  auto a = serve::arrival_counts(*w, 1.0);
  if (!a) fuzz::check_error(a.error());
  return 0;
}
