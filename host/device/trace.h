// Per-core timelines of a run: the sink a timed backend reports unit
// intervals and instants to, and a recorder that keeps them and writes Chrome
// trace-event JSON (Perfetto's JSON importer, chrome://tracing). The format and
// how each backend derives its intervals are described in docs/trace.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace loom::runtime {

/// The tracks of one core. Within one track, intervals never overlap.
enum class TraceTrack : uint8_t {
  Load,          // load unit: a LOAD (DMA to scratchpad)
  Gemm,          // compute unit: GEMM on the systolic array
  PostOp,        // compute unit: POSTOP, POOL, ELTWISE (element datapath)
  Compute,       // compute unit when the backend cannot tell GEMM from post-op (rtl)
  Store,         // store unit: a STORE
  StallLoad,     // load unit waiting for dependency tokens
  StallCompute,  // compute unit waiting for dependency tokens
  StallStore,    // store unit waiting for dependency tokens
  StallMem,      // a DMA waiting on memory (rtl: counter cycles_stall_mem)
  StallDep,      // a unit waiting on tokens or a semaphore (rtl: counter cycles_stall_dep)
  Dispatch,      // dispatcher: control instructions, semaphore waits, draining units
  Layer,         // the plan layer running (from RunResult::layer_start; the host adds it)
};
inline constexpr unsigned kNumTraceTracks = 12;
std::string_view track_name(TraceTrack t);

/// What a backend reports to. Cycles are device cycles as the backend's
/// Device::cycles() counts them; events may arrive out of time order.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// [begin, end) on `track` of `core`; `name` is the instruction (or what
  /// the interval stands for), `arg` an optional detail (may be empty).
  virtual void interval(unsigned core, TraceTrack track, std::string_view name, uint64_t begin, uint64_t end,
                        std::string_view arg = {}) = 0;
  /// A point event of `core` (a doorbell, an error).
  virtual void instant(unsigned core, std::string_view name, uint64_t at, std::string_view arg = {}) = 0;
};

/// Keeps every event in memory and writes them as trace-event JSON.
class TraceRecorder final : public TraceSink {
 public:
  struct Event {
    unsigned core = 0;
    int track = -1;  // TraceTrack, or -1 for an instant
    std::string name, arg;
    uint64_t begin = 0, end = 0;  // end == begin for instants
  };

  void interval(unsigned core, TraceTrack track, std::string_view name, uint64_t begin, uint64_t end,
                std::string_view arg = {}) override;
  void instant(unsigned core, std::string_view name, uint64_t at, std::string_view arg = {}) override;

  const std::vector<Event>& events() const { return events_; }

  /// A plan layer's device cycles [begin, end) (RunResult::layer_start and
  /// layer_cycles).
  struct LayerSpan {
    std::string name;
    uint64_t begin = 0, end = 0;
  };
  /// Names every interval recorded so far after the layer it begins in
  /// ("conv1: GEMM"), and puts each span on the layer track of cores
  /// [0, cores).
  void label_layers(const std::vector<LayerSpan>& spans, unsigned cores);
  /// Time zero of the written trace: the first doorbell (the run's start),
  /// or the earliest event when there was none.
  uint64_t origin() const;

  /// Writes the trace for a run of `config` at `clock_mhz` that took
  /// `run_cycles` cycles, to `path` through a temporary file renamed into
  /// place, so a failed write leaves nothing behind. Timestamps are
  /// microseconds of device time (cycle / clock_mhz) from origin().
  Status write_json(const std::string& path, std::string_view backend, std::string_view config, unsigned clock_mhz,
                    unsigned cores, uint64_t run_cycles) const;
  /// The same JSON as a string.
  std::string to_json(std::string_view backend, std::string_view config, unsigned clock_mhz, unsigned cores,
                      uint64_t run_cycles) const;

 private:
  std::vector<Event> events_;
};

}  // namespace loom::runtime
