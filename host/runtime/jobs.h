// Jobs on single cores, side by side: how the live serving runtime drives a
// device (docs/serving.md "Live mode"). Each core runs one job at a time, a
// one-core plan, started and finished on its own while the other cores keep
// running: its own ring, window, counters, semaphore range and soft reset.
// A plan is loaded once per core (an image: its memory with the constants,
// and a ring) and started again with new inputs; completions are seen
// through the interrupt (or by polling STATUS), errors through STATUS and
// ERR_CAUSE, exactly as a host driver on a board sees them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "device/device.h"
#include "plan/plan.h"

namespace loom::runtime {

/// How the host learns that a job ended.
enum class Completion { Interrupt, Poll };

struct JobOptions {
  Completion completion = Completion::Interrupt;
  /// Poll: cycles between two looks at STATUS. Interrupt: the longest wait
  /// while a job's stream is only partly in its ring (it may need a refill).
  uint64_t poll_cycles = 2000;
  /// Written to the WATCHDOG register (0: off): a core that retires nothing
  /// for this many cycles while busy raises TIMEOUT (the RTL's watchdog).
  uint32_t watchdog_cycles = 0;
};

/// A job that ended, successfully or not.
struct JobEnd {
  uint32_t core = 0;
  uint64_t id = 0;                                      // as given to start()
  uint64_t start_cycles = 0;                            // device cycles at the doorbell
  uint64_t end_cycles = 0;                              // device cycles at its END (or at the error)
  Status status;                                        // ok, or what went wrong (cause, instruction)
  uint32_t err_cause = 0;                               // ERR_CAUSE bits on a device error
  std::vector<std::pair<std::string, Tensor>> outputs;  // when ok, in plan order
  std::array<uint64_t, spec::kNumCounters> counters{};
};

class CoreJobs {
 public:
  explicit CoreJobs(Device& dev, JobOptions opt = {});
  ~CoreJobs();
  CoreJobs(const CoreJobs&) = delete;
  CoreJobs& operator=(const CoreJobs&) = delete;

  unsigned cores() const { return unsigned(slots_.size()); }
  bool busy(uint32_t core) const { return core < slots_.size() && slots_[core].job != nullptr; }
  size_t running() const;

  /// Starts `p` (one core stream; no tasks or HLS unit calls) on idle core
  /// `core` with `inputs` (by input name). The plan must stay alive and
  /// unchanged while CoreJobs holds its image (images are keyed by address).
  Status start(uint32_t core, const plan::Plan& p, const std::map<std::string, Tensor>& inputs, uint64_t id);

  /// Lets the device run until a job ends or `max_cycles` pass (polling:
  /// in steps of poll_cycles), refilling rings as they drain, and returns the
  /// jobs that ended (none when the time ran out first). The device's clock
  /// is at or past every returned end_cycles.
  Expected<std::vector<JobEnd>> wait(uint64_t max_cycles);

  /// Ends the job on `core` now (a host-side timeout): soft reset; the job
  /// is returned with `why` as its error.
  JobEnd abort(uint32_t core, const std::string& why);

  /// Frees every image not in use (memory pressure, plan hot swap).
  void drop_images();

  /// Device-memory ranges (address, bytes) of core `core`'s loaded images:
  /// their constants (weights, read by the cores) or their outputs (written
  /// by the cores). For fault injection (docs/serving.md "Faults under load").
  enum class Region { Constants, Outputs };
  std::vector<std::pair<uint64_t, uint64_t>> regions(uint32_t core, Region which) const;
  /// Masks (or unmasks) core `core`'s interrupts: its ends are then seen only
  /// by the STATUS check at the next wake (a lost interrupt line).
  void mask_irq(uint32_t core, bool masked);

 private:
  struct Image {
    const plan::Plan* plan = nullptr;
    uint64_t base = 0, ring = 0;
    uint32_t ring_size = 0;
    std::vector<spec::Insn> stream;  // relocated, semaphores moved to the core's range
  };
  struct Job {
    uint64_t id = 0;
    const plan::Plan* plan = nullptr;
    Image* image = nullptr;
    uint64_t written = 0, start = 0;
    uint32_t tail = 0;
    bool starved = false;  // its stream did not fit the ring at the start
  };
  struct Slot {
    std::map<const plan::Plan*, std::unique_ptr<Image>> images;
    std::unique_ptr<Job> job;
  };
  Expected<Image*> image(uint32_t core, const plan::Plan& p);
  Status refill(uint32_t core);
  JobEnd finish(uint32_t core, bool error);
  void write_irq_enable();

  Device& dev_;
  JobOptions opt_;
  uint32_t sems_per_core_ = 0;
  uint32_t irq_masked_ = 0;  // cores whose interrupts are masked
  std::vector<Slot> slots_;
};

}  // namespace loom::runtime
