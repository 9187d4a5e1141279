// Writes a Verilated model's coverage counters to $LOOM_COVERAGE_DIR, one .dat file per model and run.
//
// Only a coverage build (cmake -DLOOM_RTL_COVERAGE=ON, which verilates with
// --coverage-line/-toggle/-user and so defines VM_COVERAGE=1 for the model's
// target) has counters; elsewhere this compiles to nothing. Without the
// variable nothing is written, so a coverage build runs tests as usual.
#pragma once

#include <unistd.h>
#include <verilated.h>
#include <verilated_cov.h>

#include <atomic>
#include <cstdlib>
#include <string>

// Whether this translation unit's models count coverage. A template argument
// rather than an #if in one inline function: a coverage model and a plain one
// may be linked into the same binary, and each must keep its own behaviour.
#if defined(VM_COVERAGE) && VM_COVERAGE
#define LOOM_VM_COVERAGE true
#else
#define LOOM_VM_COVERAGE false
#endif

namespace loom::hw {

/// Writes `ctx`'s counters to $LOOM_COVERAGE_DIR/<tag>.<pid>.<n>.dat (n counts
/// the models of this process, so several models never share a file); call as
/// write_coverage<LOOM_VM_COVERAGE>(...).
template <bool Counters>
void write_coverage([[maybe_unused]] VerilatedContext* ctx, [[maybe_unused]] const std::string& tag) {
  if constexpr (Counters) {
    const char* dir = std::getenv("LOOM_COVERAGE_DIR");
    if (dir == nullptr || *dir == '\0') return;
    static std::atomic<unsigned> seq{0};
    std::string path = std::string(dir) + "/" + tag + "." + std::to_string(::getpid()) + "." +
                       std::to_string(seq.fetch_add(1)) + ".dat";
    ctx->coveragep()->write(path.c_str());
  }
}

}  // namespace loom::hw
