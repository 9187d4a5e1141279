#include "runtime/program.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "ir/graph.h"

namespace loom::runtime {

Status DeviceValues::run_host(size_t index) {
  return make_error("host step " + std::to_string(index),
                    "this program's values are device tensors only; it has no host steps");
}

Expected<Tensor> DeviceValues::to_device(int segment, const plan::TensorBinding& b) {
  auto it = values_.find(b.name);
  if (it == values_.end())
    return make_error("segment " + std::to_string(segment) + " input '" + b.name + "'", "has no value");
  return it->second;
}

Status DeviceValues::from_device(int /*segment*/, const plan::TensorBinding& b, Tensor t) {
  values_[b.name] = std::move(t);
  return {};
}

Expected<std::vector<Mismatch>> check_against_reference(const ir::Graph& graph, int segment,
                                                        const std::map<std::string, Tensor>& in, const RunResult& r) {
  auto ref = ir::run_reference(graph, in);
  if (!ref) return ref.error();
  std::vector<Mismatch> out;
  for (const auto& [name, t] : r.outputs) {
    Mismatch m{segment < 0 ? name : "segment " + std::to_string(segment) + " output '" + name + "'"};
    auto it = ref->find(name);
    if (it == ref->end() || it->second.dtype != t.dtype || it->second.shape != t.shape) {
      m.elements = t.numel();
    } else {
      const bool wide = t.dtype == DType::I32;
      for (int64_t k = 0; k < t.numel(); ++k) {
        const int64_t x = wide ? t.i32()[k] : t.i8()[k], y = wide ? it->second.i32()[k] : it->second.i8()[k];
        if (x == y) continue;
        ++m.elements;
        m.max_abs_diff = std::max<int64_t>(m.max_abs_diff, std::llabs(x - y));
      }
    }
    if (m.elements) out.push_back(std::move(m));
  }
  return out;
}

Expected<ProgramRun> run_program(Device& dev, const plan::Program& p, HostSteps& host, const RunOptions& opt) {
  ProgramRun run;
  // Progress over the whole program: every segment's instructions, in step order.
  uint64_t total = 0, before = 0;
  for (const plan::Step& st : p.steps)
    if (st.on_device())
      for (const auto& c : p.segments.at(size_t(st.segment)).plan.cores) total += c.size();
  RunOptions ro = opt;
  if (opt.progress)
    ro.progress = [&](uint64_t done, uint64_t /*segment_total*/) { opt.progress(before + done, total); };
  for (const plan::Step& st : p.steps) {
    if (!st.on_device()) {
      LOOM_TRY(host.run_host(st.host));
      continue;
    }
    const plan::Segment& seg = p.segments.at(size_t(st.segment));
    std::map<std::string, Tensor> in;
    for (const auto& b : seg.plan.inputs) {
      auto t = host.to_device(st.segment, b);
      if (!t) return t.error();
      in[b.name] = std::move(*t);
    }
    auto r = execute(dev, seg.plan, in, ro);
    if (!r) return r.error();
    if (opt.check) {
      if (seg.graph.nodes.empty())
        return make_error("segment " + std::to_string(st.segment), "has no graph to check against");
      auto mism = check_against_reference(seg.graph, p.segments.size() == 1 ? -1 : st.segment, in, *r);
      if (!mism) return mism.error();
      run.mismatches.insert(run.mismatches.end(), mism->begin(), mism->end());
      ++run.checked_segments;
    }
    for (size_t k = 0; k < r->outputs.size(); ++k)
      LOOM_TRY(host.from_device(st.segment, seg.plan.outputs.at(k), std::move(r->outputs[k].second)));
    r->outputs.clear();
    if (r->has_time) run.has_time = true, run.cycles += r->cycles;
    for (const auto& c : r->cores) run.instructions += c.instructions;
    run.ring_refills += r->ring_refills;
    run.segments.push_back(SegmentRun{st.segment, std::move(*r)});
    for (const auto& c : seg.plan.cores) before += c.size();
    if (opt.progress) opt.progress(before, total);
  }
  return run;
}

}  // namespace loom::runtime
