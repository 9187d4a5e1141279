// Shared clocking, tracing and seeding for the Verilator testbenches of loom RTL blocks.
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "hw/verilated/coverage.h"

namespace loom::rtltest {

/// Options every testbench accepts: --seed N, --trace FILE.fst.
struct Options {
  uint64_t seed = 1;
  std::string trace;
};

inline Options parse_options(int argc, char** argv, uint64_t default_seed) {
  Options o;
  o.seed = default_seed;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      o.seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (std::strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
      o.trace = argv[++i];
    }
  }
  return o;
}

/// Owns the context, the model and an optional FST trace. Inputs are changed
/// between tick() calls, i.e. after the falling edge, never at the sampling
/// (rising) edge.
template <typename Model>
class Sim {
 public:
  Sim(int argc, char** argv, const Options& opt) : ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->commandArgs(argc, argv);
    const char* slash = std::strrchr(argv[0], '/');
    name_ = slash != nullptr ? slash + 1 : argv[0];
    ctx_->traceEverOn(!opt.trace.empty());
    model_ = std::make_unique<Model>(ctx_.get());
    if (!opt.trace.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      model_->trace(trace_.get(), 99);
      trace_->open(opt.trace.c_str());
    }
    model_->clk_i = 0;
    set_reset(false);
    model_->eval();
    dump();
  }

  ~Sim() {
    model_->final();
    hw::write_coverage<LOOM_VM_COVERAGE>(ctx_.get(), name_);
    if (trace_) trace_->close();
  }

  Model* operator->() { return model_.get(); }
  Model& m() { return *model_; }

  /// Combinational settle after inputs changed (outputs like ready depend on inputs).
  void settle() { model_->eval(); }

  /// One full clock cycle: rising edge (state updates), then falling edge.
  void tick() {
    model_->clk_i = 1;
    ctx_->timeInc(1);
    model_->eval();
    dump();
    model_->clk_i = 0;
    ctx_->timeInc(1);
    model_->eval();
    dump();
    ++cycles_;
  }

  void reset(int cycles = 3) {
    set_reset(false);
    for (int i = 0; i < cycles; ++i) tick();
    set_reset(true);
    model_->eval();
  }

  uint64_t cycles() const { return cycles_; }
  bool assertion_failed() const { return ctx_->gotError(); }

 private:
  // Blocks without a reset port (the RAMs) simply skip it.
  void set_reset(bool released) {
    if constexpr (requires(Model& m) { m.rst_ni; }) model_->rst_ni = released;
  }

  void dump() {
    if (trace_) trace_->dump(ctx_->time());
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::string name_;  // the binary's name, for its coverage file
  uint64_t cycles_ = 0;
};

/// Prints the seed up front and the command that reproduces a failure.
inline void print_seed(const char* name, const Options& o) {
  std::printf("%s: seed %llu\n", name, static_cast<unsigned long long>(o.seed));
}

inline int report(const char* name, const char* argv0, const Options& o, uint64_t checked, uint64_t errors) {
  if (errors != 0) {
    std::printf("%s: FAIL, %llu of %llu checks wrong; reproduce with: %s --seed %llu --trace %s.fst\n", name,
                static_cast<unsigned long long>(errors), static_cast<unsigned long long>(checked), argv0,
                static_cast<unsigned long long>(o.seed), name);
    return 1;
  }
  std::printf("%s: PASS, %llu checks\n", name, static_cast<unsigned long long>(checked));
  return 0;
}

}  // namespace loom::rtltest
