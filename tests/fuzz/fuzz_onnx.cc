// ONNX import -> partition -> compile: load_model_bytes (structure, opsets,
// attributes, quantization parameters, the ONNX checker and shape
// inference) and build_program (QDQ folding, partitioning, every device
// segment compiled for `tiny`). What compiles must also load: the program
// plan `loom compile` would write is read back as `loom run` reads it.
#include <unistd.h>

#include <cstdio>

#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "frontend/onnx/host_codec.h"
#include "fuzz_util.h"
#include "plan/program_file.h"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // No folder: external data has nothing to resolve against.
  auto m = onnxfe::load_model_bytes(std::string(fuzz::bytes(data, size)), "fuzz.onnx", "/nonexistent-fuzz");
  if (!m) return fuzz::check_error(m.error()), 0;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& [name, t] : m->types) shapes.push_back(t.shape);
  if (fuzz::total_elems(shapes) > fuzz::kRunElems) return 0;
  auto p = onnxfe::build_program(std::move(*m), {}, fuzz::tiny(), {});
  if (!p) return fuzz::check_error(p.error()), 0;
  static const std::string file = "/tmp/loom-fuzz-onnx-" + std::to_string(::getpid()) + ".plan";
  plan::ProgramInfo info;
  info.config = "tiny";
  info.compiler = "loom fuzz";
  if (Status s = plan::write_program(*p, info, file, &onnxfe::host_codec()); !s)
    return fuzz::check_error(s.error()), 0;
  auto back = plan::read_program(file, &onnxfe::host_codec());
  std::remove(file.c_str());
  if (!back) {
    std::fprintf(stderr, "compiled, but run refuses the program plan: %s\n", back.error().str().c_str());
    std::abort();
  }
  return 0;
}
