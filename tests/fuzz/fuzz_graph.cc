// JSON graph -> validate -> compile -> ref run, differential: whatever the
// compiler accepts must run on the golden model and match the direct
// reference bit for bit.
#include <vector>

#include "backends/ref/ref_device.h"
#include "compiler/compiler.h"
#include "fuzz_util.h"
#include "runtime/executor.h"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = ir::parse_graph_json_text(std::string(fuzz::bytes(data, size)), "fuzz.json");
  if (!g) return fuzz::check_error(g.error()), 0;
  if (Status s = ir::validate(*g); !s) return fuzz::check_error(s.error()), 0;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& [name, t] : g->tensors) shapes.push_back(t.shape);
  if (fuzz::total_elems(shapes) > fuzz::kRunElems) return 0;
  auto r = compiler::compile(*g, fuzz::tiny(), {});
  if (!r) return fuzz::check_error(r.error()), 0;
  const auto in = fuzz::inputs_for(*g);
  auto want = ir::run_reference(*g, in);
  if (!want) return fuzz::check_error(want.error()), 0;
  auto dev = ref::make_ref_device(fuzz::tiny());
  if (!dev) std::abort();
  auto got = runtime::execute(**dev, r->plan, in);
  if (!got) {
    std::fprintf(stderr, "compiled plan fails on ref: %s\n", got.error().str().c_str());
    std::abort();
  }
  for (const auto& [name, t] : got->outputs) {
    auto it = want->find(name);
    if (it == want->end() || it->second.data != t.data) {
      std::fprintf(stderr, "output '%s' differs from the direct reference\n", name.c_str());
      std::abort();
    }
  }
  return 0;
}
