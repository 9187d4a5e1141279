// Runs code that may crash on hostile input (a third-party library that
// assumes well-formed data) in a child process, so that a crash or a hang
// becomes an error line instead of taking loom down.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace loom {

/// Forks; the child runs `work` and sends back the bytes it returns (or the
/// Error it returns). The parent waits at most `timeout_ms`, then kills the
/// child. A child that dies from a signal, exits without an answer or runs
/// out of time is an error naming `what` (and the signal). At most
/// `max_bytes` of answer are accepted.
Expected<std::string> run_isolated(const std::string& what, const std::function<Expected<std::string>()>& work,
                                   int timeout_ms, uint64_t max_bytes);

}  // namespace loom
