// Plans of format 1: decode (container, metadata, bindings, streams) and run
// on the golden model. A plan that decodes must either run or fail with a
// device error (a fault cause, one line), never crash the host.
#include "backends/ref/ref_device.h"
#include "fuzz_util.h"
#include "runtime/executor.h"

using namespace loom;

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return fuzz::mutate_container(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto p = plan::decode_plan(fuzz::bytes(data, size), "fuzz.plan");
  if (!p) return fuzz::check_error(p.error()), 0;
  if (fuzz::plan_work(p->cores) > fuzz::kRunWork) return 0;
  std::map<std::string, Tensor> in;
  for (const auto& b : p->inputs) {
    Tensor t;
    t.dtype = b.dtype;
    t.shape = b.shape;
    if (fuzz::total_elems(std::vector<std::vector<int64_t>>{b.shape}) > fuzz::kRunElems) return 0;
    t.data.assign(size_t(t.numel()) * dtype_size(t.dtype), 3);
    in[b.name] = std::move(t);
  }
  const auto* cfg = spec::find_config(p->config);
  auto dev = ref::make_ref_device(*cfg);
  if (!dev) std::abort();
  auto r = runtime::execute(**dev, *p, in);
  if (!r) fuzz::check_error(r.error());
  return 0;
}
