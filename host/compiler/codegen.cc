// Code generation: per-core instruction streams, layer by layer, with a
// semaphore barrier between layers and END on every core; checks that every
// field fits its encoding. Pipeline and dynamic placements emit their
// streams in schedule.cc.
#include <string>

#include "compiler/lower.h"
#include "compiler/schedule.h"

namespace loom::compiler {
namespace {

constexpr uint64_t kBarrierSem = 0;

class CodegenPass final : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"codegen",
                            {PassOption::Placement},
                            {{"semaphores", "stage semaphores a pipeline plan uses"},
                             {"tasks", "tile tasks of a dynamic plan"},
                             {"task_deps", "dependencies between those tasks"},
                             {"insn.*", "instructions emitted, by opcode"},
                             {"insns", "instructions emitted"}}};
    return i;
  }

  Status run(CompileState& s) override {
    const size_t ncores = size_t(s.cores);
    std::vector<std::vector<AnyInsn>> streams(ncores);
    std::vector<const Layer*> emitting;
    for (const auto& l : s.layers)
      if (l.props->kind != LayerKind::Alias) emitting.push_back(&l);
    s.plan.layers.clear();
    s.plan.placement = placement_name(s.placement());
    s.plan.tasks.clear();
    if (s.placement() == Placement::Pipeline) {
      LOOM_TRY(emit_pipeline(s, streams));
      bump("semaphores", s.plan.semaphores_used);
      return finish(s, streams);
    }
    if (s.placement() == Placement::Dynamic) {
      LOOM_TRY(emit_tasks(s, streams));
      bump("tasks", int64_t(s.plan.tasks.size()));
      int64_t deps = 0;
      for (const auto& t : s.plan.tasks) deps += int64_t(t.deps.size());
      bump("task_deps", deps);
      return finish(s, streams);
    }
    for (size_t li = 0; li < emitting.size(); ++li) {
      const Layer& l = *emitting[li];
      plan::LayerInfo info;
      info.name = l.name;
      info.op = l.props->name;
      info.macs = l.macs;
      info.bytes_read = l.tiling.bytes_read;
      info.bytes_written = l.tiling.bytes_written;
      for (size_t c = 0; c < ncores; ++c) {
        auto& out = streams[c];
        const size_t begin = out.size();
        LOOM_TRY(lower_layer(s, l, int(c), out));
        for (size_t i = begin; i < out.size(); ++i) {
          const std::string_view bad = invalid_field(out[i]);
          if (!bad.empty())
            return make_error("node '" + l.name + "'", "instruction field '" + std::string(bad) +
                                                           "' does not fit this shape (core " + std::to_string(c) +
                                                           ", instruction " + std::to_string(i) + ")");
        }
        info.insn_begin.push_back(uint32_t(begin));
        info.insn_end.push_back(uint32_t(out.size()));
        // Layers hand data over through DRAM: every core finishes layer li
        // before any core starts layer li+1. Semaphores only grow, so the
        // target is the running total of signals.
        if (li + 1 < emitting.size()) {
          spec::SemSignalInsn sig;
          sig.sem_id = kBarrierSem;
          out.push_back(sig);
          spec::SemWaitInsn wait;
          wait.sem_id = kBarrierSem;
          wait.count = uint64_t(s.cores) * (li + 1);
          if (!wait.invalid_field().empty()) return make_error("node '" + l.name + "'", "semaphore count overflows");
          out.push_back(wait);
        }
      }
      s.plan.layers.push_back(std::move(info));
    }
    s.plan.semaphores_used = emitting.size() > 1 ? 1 : 0;
    return finish(s, streams);
  }

 private:
  /// END on every core, encoding, statistics.
  Status finish(CompileState& s, std::vector<std::vector<AnyInsn>>& streams) {
    const size_t ncores = streams.size();
    s.plan.cores.assign(ncores, {});
    for (size_t c = 0; c < ncores; ++c) {
      streams[c].push_back(spec::EndInsn{});
      for (const auto& i : streams[c]) {
        const spec::Insn e = encode(i);
        s.plan.cores[c].push_back(e);
        bump("insn." + std::string(spec::opcode_info(e.w[0] & 63u)->name));
      }
      bump("insns", int64_t(streams[c].size()));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_codegen_pass() { return std::make_unique<CodegenPass>(); }

}  // namespace loom::compiler
