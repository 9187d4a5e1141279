// ONNX import -> partition -> compile: load_model_bytes (structure, opsets,
// attributes, quantization parameters, the ONNX checker and shape
// inference) and build_program (QDQ folding, partitioning, every device
// segment compiled for `tiny`).
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "fuzz_util.h"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // No folder: external data has nothing to resolve against.
  auto m = onnxfe::load_model_bytes(std::string(fuzz::bytes(data, size)), "fuzz.onnx", "/nonexistent-fuzz");
  if (!m) return fuzz::check_error(m.error()), 0;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& [name, t] : m->types) shapes.push_back(t.shape);
  if (fuzz::total_elems(shapes) > fuzz::kRunElems) return 0;
  auto p = onnxfe::build_program(std::move(*m), {}, fuzz::tiny(), {});
  if (!p) fuzz::check_error(p.error());
  return 0;
}
