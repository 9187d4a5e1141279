// The decision space's helpers shared inside loom_tune: a choice as compile
// options, its cache key, and the runs a batch takes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "serve/service.h"
#include "tune/tune.h"

namespace loom::tune {

/// ceil(a / b): the plan runs of `b` rows that `a` rows take.
inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// 1, 2, 4, ... below `n`, and `n` (at least 1): the requests per run and
/// the batch caps the loop weighs for batches of up to `n` requests.
std::vector<int> doubling_to(int n);

/// The cache key of a model's choice ("model key|choice tag").
std::string key_of(const serve::ModelSpec& m, const Choice& c);

/// The compile options a choice stands for.
compiler::CompileOptions options_of(const Choice& c);

}  // namespace loom::tune
