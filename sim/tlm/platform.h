// The tlm virtual platform's top module: owns the cores and the memory
// channel, and is built once per process (SystemC elaborates once) with
// spec::kMaxCores cores, then attached to one device at a time.
#pragma once

#include <array>
#include <memory>

#include <systemc>

#include "memory/mem_channel.h"
#include "tlm/core_model.h"
#include "tlm/device_state.h"
#include "tlm/hls_unit.h"

namespace loom::tlm {

class Platform : public sc_core::sc_module {
 public:
  /// The process-wide platform, elaborated on first use and never destroyed.
  static Platform& instance();
  /// Whether instance() can still build the platform: it exists already, or
  /// SystemC has not been elaborated by another platform (cosim) yet.
  static bool can_build();

  /// Binds the platform to a device's state (nullptr detaches) and resets
  /// every core and port; `period` is one device clock cycle.
  void attach(DeviceState* st, sc_core::sc_time period);
  DeviceState* attached() const { return st_; }

  CoreModel& core(unsigned c) { return *cores_.at(c); }
  MemChannel& memory() { return mem_; }
  /// HLS unit `index` of a kernel kind ("gemm", "conv", "pool", "eltwise"),
  /// or nullptr beyond kMaxHlsUnitsPerKind.
  HlsUnit* unit(std::string_view kind, unsigned index);
  /// Per-core timelines to `sink` (nullptr: off), cycles counted from `base`;
  /// attach() turns them off.
  void set_trace(runtime::TraceSink* sink, sc_core::sc_time base) {
    for (auto& c : cores_) c->set_trace(sink, base);
  }
  /// Wakes SEM_WAITs after the host cleared semaphores.
  void poke_semaphores() {
    for (auto& c : cores_) c->poke();
  }

 private:
  explicit Platform(sc_core::sc_module_name name);

  MemChannel mem_;
  std::array<std::unique_ptr<CoreModel>, spec::kMaxCores> cores_;
  std::vector<std::unique_ptr<HlsUnit>> units_;  // kind-major, kMaxHlsUnitsPerKind each
  DeviceState* st_ = nullptr;
};

}  // namespace loom::tlm
