// Dynamic dispatch of a `dynamic` plan's tile tasks (plan::Task): the host
// keeps a queue of ready tasks, ordered by critical path, and hands each to a
// free core by writing the task's instructions (after SEM_WAITs for
// dependencies still running elsewhere) and a SEM_SIGNAL on the core's own
// semaphore into its ring. It lets the device run a quantum
// (run_until_idle with a timeout on timed backends; until idle on untimed
// ones), reads the semaphores to see which tasks finished, and repeats.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "device/device.h"
#include "plan/plan.h"
#include "runtime/executor.h"

namespace loom::runtime {

/// A core's command ring as the executor set it up.
struct DispatchRing {
  uint64_t addr = 0;
  uint32_t size = 0;  // entries, power of two
  uint32_t tail = 0;  // ring index the host writes next
};

struct DispatchStats {
  uint64_t quanta = 0;                 // run_until_idle calls
  std::vector<uint64_t> tasks;         // per core: tasks run
  std::vector<uint64_t> instructions;  // per core: instructions written (tasks and completion signals)
};

/// Runs every task of `p` (p.tasks over the relocated task pool `pool`) on
/// the cores of `rings`; returns when all have finished, leaving each ring's
/// tail in `rings`. A task is ready once every task it depends on has been
/// handed to a core; those not yet finished on another core are waited for
/// on the device (SEM_WAIT on that core's semaphore for the dependency's
/// completion count), so a layer boundary costs no host round trip. At most
/// two tasks are queued per core; among the cores with room the one whose
/// memory port runs the fewest tasks is taken, the task's own port first.
/// Errors name the core, the cause and the task.
Status dispatch_tasks(Device& dev, const plan::Plan& p, const std::vector<spec::Insn>& pool,
                      std::vector<DispatchRing>& rings, const RunOptions& opt, DispatchStats* stats);

/// "SCRATCHPAD_OOB|WINDOW" for an ERR_CAUSE value.
std::string device_error_causes(uint32_t cause);

}  // namespace loom::runtime
