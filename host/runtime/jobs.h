// Jobs on cores, side by side: how the live serving runtime drives a device
// (docs/serving.md "Live mode"). Each core runs one job at a time, started
// and finished on its own while the other cores keep running: its own ring,
// window, counters, semaphore range and soft reset. A job is a one-core plan
// on one core, or a multi-core plan (static or pipeline placement) on a
// gang of as many cores, each core running its stream of the plan on its own
// ring, all of them in one window over one image, synchronised through
// semaphores moved into the gang's ranges. A plan is loaded once per set of
// cores (an image: its memory with the constants, and a ring per core) and
// started again with new inputs; completions are seen through the interrupt
// (or by polling STATUS), errors through STATUS and ERR_CAUSE, exactly as a
// host driver on a board sees them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  uint32_t core = 0;                                    // the job's first core (a gang's lead)
  std::vector<uint32_t> cores;                          // every core of the job, the lead first
  uint32_t failed_core = 0;                             // on an error: the core that had it
  uint64_t id = 0;                                      // as given to start()
  uint64_t start_cycles = 0;                            // device cycles at the doorbell
  uint64_t end_cycles = 0;                              // device cycles at its END (or at the error)
  Status status;                                        // ok, or what went wrong (cause, instruction)
  uint32_t err_cause = 0;                               // ERR_CAUSE bits on a device error
  std::vector<std::pair<std::string, Tensor>> outputs;  // when ok, in plan order
  std::array<uint64_t, spec::kNumCounters> counters{};  // the lead core's
};

class CoreJobs {
 public:
  explicit CoreJobs(Device& dev, JobOptions opt = {});
  ~CoreJobs();
  CoreJobs(const CoreJobs&) = delete;
  CoreJobs& operator=(const CoreJobs&) = delete;

  unsigned cores() const { return unsigned(slots_.size()); }
  bool busy(uint32_t core) const { return core < slots_.size() && slots_[core].job != nullptr; }
  /// Jobs running (a gang counts once).
  size_t running() const;

  /// Starts `p` (one core stream; no tasks or HLS unit calls) on idle core
  /// `core` with `inputs` (by input name). The plan must stay alive and
  /// unchanged while CoreJobs holds its image (images are keyed by address).
  Status start(uint32_t core, const plan::Plan& p, const std::map<std::string, Tensor>& inputs, uint64_t id) {
    return start(std::vector<uint32_t>{core}, p, inputs, id);
  }
  /// Starts `p` as one job on the idle cores `cores` (a gang: as many as
  /// the plan has core streams, stream i on cores[i]; no tasks or HLS unit
  /// calls). Plan semaphore s becomes semaphore s mod R of cores[s / R]'s
  /// range (R: the semaphores per core). The job ends when every core has
  /// reached its END, or at the first error on any of them (every core of
  /// the job is then reset).
  Status start(const std::vector<uint32_t>& cores, const plan::Plan& p, const std::map<std::string, Tensor>& inputs,
               uint64_t id);

  /// Lets the device run until a job ends or `max_cycles` pass (polling:
  /// in steps of poll_cycles), refilling rings as they drain, and returns the
  /// jobs that ended (none when the time ran out first). The device's clock
  /// is at or past every returned end_cycles.
  Expected<std::vector<JobEnd>> wait(uint64_t max_cycles);

  /// Ends the job on `core` now (a host-side timeout): soft reset of every
  /// core of the job; the job is returned with `why` as its error.
  JobEnd abort(uint32_t core, const std::string& why);

  /// Frees every image not in use (memory pressure, plan hot swap).
  void drop_images();

  /// Device-memory ranges (address, bytes) of the loaded images core `core` runs:
  /// their constants (weights, read by the cores) or their outputs (written
  /// by the cores). For fault injection (docs/serving.md "Faults under load").
  enum class Region { Constants, Outputs };
  std::vector<std::pair<uint64_t, uint64_t>> regions(uint32_t core, Region which) const;
  /// Masks (or unmasks) core `core`'s interrupts: its ends are then seen only
  /// by the STATUS check at the next wake (a lost interrupt line).
  void mask_irq(uint32_t core, bool masked);

 private:
  struct Ring {
    uint64_t addr = 0;
    uint32_t size = 0;
    std::vector<spec::Insn> stream;  // relocated, semaphores moved to the gang's ranges
  };
  struct Image {
    const plan::Plan* plan = nullptr;
    std::vector<uint32_t> cores;  // the cores it is loaded for, in plan core order
    uint64_t base = 0;
    std::vector<Ring> rings;  // per core of `cores`
  };
  struct Member {
    uint32_t core = 0;
    uint64_t written = 0;
    uint32_t tail = 0;
    bool starved = false;  // its stream did not fit the ring at the start
    bool done = false;     // reached its END
  };
  struct Job {
    uint64_t id = 0;
    const plan::Plan* plan = nullptr;
    Image* image = nullptr;
    uint64_t start = 0;
    std::vector<Member> members;  // per core of the image
    uint32_t mask() const;
    bool written() const;  // every stream wholly in its ring
  };
  struct Slot {
    std::shared_ptr<Job> job;  // shared by the cores of a gang
    size_t member = 0;         // which of the job's members this core is
  };
  using ImageKey = std::pair<const plan::Plan*, std::vector<uint32_t>>;
  Expected<Image*> image(const std::vector<uint32_t>& cores, const plan::Plan& p);
  Status refill(Job& j, size_t member);
  /// Looks at the job's cores after a stretch of device time: refills, marks
  /// ends; the job's end when it ended (all done, an error, a core gone idle).
  Expected<std::optional<JobEnd>> look(Job& j, bool irq, uint32_t irqs);
  JobEnd finish(Job& j, int failed_member);
  /// Frees the cores of `j` and clears their interrupt bits.
  void release(Job& j);
  void write_irq_enable();

  Device& dev_;
  JobOptions opt_;
  uint32_t sems_per_core_ = 0;
  uint32_t irq_masked_ = 0;  // cores whose interrupts are masked
  std::vector<Slot> slots_;
  std::map<ImageKey, std::unique_ptr<Image>> images_;
};

}  // namespace loom::runtime
