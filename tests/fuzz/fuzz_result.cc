// JSON result files -> the typed reader (serve/result_check.h) -> the merge.
// Every input is parsed as `loom report` and `loom experiment --merge` parse
// it, and checked as a result (any kind) and as a sweep folder's points.json.
// A document that passes both the manifest check and the serve-result check
// is merged as every point's result, and what the merge writes must read
// back as a sweep result that `loom report` accepts.
#include "common/json_read.h"
#include "fuzz_util.h"
#include "serve/result_check.h"

using namespace loom;

namespace {

void must_pass(const Status& s, const char* what) {
  if (s) return;
  std::fprintf(stderr, "%s refused: %s\n", what, s.str().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = parse_json(fuzz::bytes(data, size), "fuzz.json");
  if (!doc) return fuzz::check_error(doc.error()), 0;
  const Status result = serve::check_result(*doc, "fuzz.json");
  if (!result) fuzz::check_error(result.error());
  const Status man = serve::check_manifest(*doc, "fuzz.json");
  if (!man) fuzz::check_error(man.error());
  const Status serve = serve::check_serve_result(*doc, "fuzz.json");
  if (!serve) fuzz::check_error(serve.error());
  if (!man || !serve || field(*doc, "kind") == "commands") return 0;
  const size_t points = std::min<size_t>(field(*doc, "points").size(), 64);
  const std::vector<serve::ordered_json> results(points, *doc);
  const serve::ordered_json merged = serve::sweep_result(*doc, results, {{"launcher", "fuzz"}});
  for (const auto& row : field(merged, "runs")) (void)serve::csv_line(row);
  must_pass(serve::check_sweep_result(merged, "merged"), "the merged result");
  auto back = parse_json(merged.dump(2), "merged results.json");
  if (!back) must_pass(back.status(), "the merged result's text");
  must_pass(serve::check_result(*back, "merged results.json"), "the merged result read back");
  return 0;
}
