// Program files with host steps (formats 2 and 3): decode through the ONNX
// codec (container, metadata, host model, every segment plan, host steps)
// and run on ref, host steps on the CPU.
#include "compiler/options.h"
#include "frontend/onnx/host_codec.h"
#include "frontend/onnx/program.h"
#include "fuzz_util.h"
#include "plan/program_file.h"

using namespace loom;

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return fuzz::mutate_container(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto pp = plan::decode_program(fuzz::bytes(data, size), "fuzz.plan", &onnxfe::host_codec());
  if (!pp) return fuzz::check_error(pp.error()), 0;
  const auto& prog = pp->program;
  const spec::HwConfig& cfg = *spec::find_config(pp->info.config);
  // The recorded options, as `loom run PLAN` reads them.
  if (!pp->info.compile_options.empty()) {
    auto o = compiler::options_from_json(nlohmann::json::parse(pp->info.compile_options), cfg, "fuzz.plan");
    if (!o) return fuzz::check_error(o.error()), 0;
  }
  auto hm = onnxfe::host_model(prog, "fuzz.plan");
  if (!hm) return fuzz::check_error(hm.error()), 0;  // a program without host steps
  const onnxfe::Model& model = (*hm)->model;
  std::vector<std::vector<spec::Insn>> streams;
  for (const auto& s : prog.segments)
    for (const auto& c : s.plan.cores) streams.push_back(c);
  if (fuzz::plan_work(streams) > fuzz::kRunWork) return 0;
  std::map<std::string, onnxfe::Value> in;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& name : model.inputs) {
    auto t = model.types.find(name);
    if (t == model.types.end() || !t->second.has_shape) return 0;
    shapes.push_back(t->second.shape);
    if (fuzz::total_elems(shapes) > fuzz::kRunElems) return 0;
    in[name] = onnxfe::Value::make(t->second.type, t->second.shape);
  }
  auto r = onnxfe::run_program(prog, "ref", cfg, in);
  if (!r) fuzz::check_error(r.error());
  return 0;
}
