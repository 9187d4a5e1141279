// Platform: construction and binding of the process-wide SystemC top module.
#include "tlm/platform.h"

#include <cstdlib>
#include <string>

#include <tlm>

namespace loom::tlm {

Platform::Platform(sc_core::sc_module_name name) : sc_core::sc_module(name), mem_("mem") {
  for (unsigned c = 0; c < cores_.size(); ++c) {
    cores_[c] = std::make_unique<CoreModel>(("core" + std::to_string(c)).c_str(), c, [this] { poke_semaphores(); });
    cores_[c]->socket.bind(mem_.socket);  // socket id c: the channel maps it to port c % ports
  }
  // HLS units bind after the cores: socket id kMaxCores + i, port (kMaxCores + i) % ports.
  for (const auto& k : hls::kernels())
    for (unsigned i = 0; i < kMaxHlsUnitsPerKind; ++i) {
      units_.push_back(std::make_unique<HlsUnit>(("hls_" + std::string(k.kind) + std::to_string(i)).c_str(),
                                                 std::string(k.kind), i));
      units_.back()->socket.bind(mem_.socket);
    }
}

HlsUnit* Platform::unit(std::string_view kind, unsigned index) {
  for (auto& u : units_)
    if (u->kernel_kind() == kind && u->index() == index) return u.get();
  return nullptr;
}

namespace {
Platform* g_platform = nullptr;
}  // namespace

bool Platform::can_build() {
  return g_platform != nullptr || sc_core::sc_get_status() == sc_core::SC_ELABORATION;
}

Platform& Platform::instance() {
  // Keeps the SystemC banner off stdout, where CLI JSON goes.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (g_platform == nullptr) {
    // A quantum of dynamic dispatch may end before the platform's next event
    // (runtime/dispatch.cc lengthens it until time moves); SystemC would warn
    // once on stderr that such an sc_start did nothing.
    sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
    g_platform = new Platform("loom_tlm");
    // Elaborate and let every thread reach its idle wait now, so each device
    // (the first included) wakes them in the same order: results then do not
    // depend on what ran earlier in the process.
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  return *g_platform;
}

void Platform::attach(DeviceState* st, sc_core::sc_time period) {
  st_ = st;
  hw::TimingParams tp;
  if (st != nullptr) {
    tp = hw::TimingParams::from(st->cfg);
    mem_.configure(tp.mem_ports, tp.mem_bytes, tp.latency, period);
    // The quantum bounds how far a thread runs ahead of simulated time, and so
    // how far out of order bursts of different cores can reach a memory port.
    ::tlm::tlm_global_quantum::instance().set(period * 256.0);
  }
  for (auto& c : cores_) c->attach(st, tp, period);
  for (auto& u : units_) u->attach(st, tp, period);
}

}  // namespace loom::tlm

// libsystemc's main() needs an sc_main; loom builds its platform through
// make_tlm_device instead, so programs with their own main() never run this.
__attribute__((weak)) int sc_main(int, char*[]) { return 1; }
