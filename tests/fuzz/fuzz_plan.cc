// Plan files without host steps (formats 1 and 3; a file with host steps is
// refused for want of its codec): decode (container, metadata, segments,
// bindings, streams) and run every segment on the golden model. A plan that
// decodes must either run or fail with a device error (a fault cause, one
// line), never crash the host.
#include "backends/ref/ref_device.h"
#include "fuzz_util.h"
#include "plan/program_file.h"
#include "runtime/executor.h"

using namespace loom;

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return fuzz::mutate_container(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = plan::decode_program(fuzz::bytes(data, size), "fuzz.plan");
  if (!f) return fuzz::check_error(f.error()), 0;
  std::vector<std::vector<spec::Insn>> streams;
  for (const auto& s : f->program.segments)
    for (const auto& c : s.plan.cores) streams.push_back(c);
  if (fuzz::plan_work(streams) > fuzz::kRunWork) return 0;
  const auto* cfg = spec::find_config(f->info.config);
  auto dev = ref::make_ref_device(*cfg);
  if (!dev) std::abort();
  for (const auto& s : f->program.segments) {
    const plan::Plan& p = s.plan;
    std::map<std::string, Tensor> in;
    for (const auto& b : p.inputs) {
      Tensor t;
      t.dtype = b.dtype;
      t.shape = b.shape;
      if (fuzz::total_elems(std::vector<std::vector<int64_t>>{b.shape}) > fuzz::kRunElems) return 0;
      t.data.assign(size_t(t.numel()) * dtype_size(t.dtype), 3);
      in[b.name] = std::move(t);
    }
    auto r = runtime::execute(**dev, p, in);
    if (!r) fuzz::check_error(r.error());
  }
  return 0;
}
