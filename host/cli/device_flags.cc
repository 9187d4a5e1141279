// The device options of the CLI (docs/backends.md "Device options"): one flag
// each, with the environment variables as the documented fallback. This is
// the only place loom reads them; the backends take runtime::DeviceOptions.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>

#include "cli/cli_common.h"
#include "common/parse.h"

namespace loom::cli {
namespace {

using runtime::DeviceOptions;

/// The text of a flag or variable as a whole number of type T. Ranges that
/// mean something (a timeout of 0, an arena too large) are the backend's to
/// check; this only refuses what is not such a number.
template <typename T>
Expected<T> whole(const std::string& label, const std::string& v) {
  constexpr uint64_t max = std::min<uint64_t>(std::numeric_limits<T>::max(), std::numeric_limits<int64_t>::max());
  const auto n = parse_int64(v);
  if (!n || *n < 0 || uint64_t(*n) > max)
    return make_error(label, "expected a whole number in [0, " + std::to_string(max) + "], got '" + excerpt(v) + "'");
  return T(*n);
}

template <typename T>
Status set_whole(std::optional<T>& field, const std::string& label, const std::string& v) {
  auto n = whole<T>(label, v);
  if (!n) return n.error();
  field = *n;
  return Status::ok();
}

/// One option: its field in DeviceOptions, its flag, the variable that stands
/// for it on each backend that takes it, and how its text is stored.
struct Knob {
  const char* field;
  const char* flag;
  std::string DeviceFlags::*text;
  /// backend -> variable; a backend not listed reads no variable for it.
  struct Var {
    const char* backend;
    const char* name;
  } env[3];
  Status (*set)(DeviceOptions& o, const std::string& label, const std::string& v);
};

const Knob kKnobs[] = {
    {"wave",
     "--wave",
     &DeviceFlags::wave,
     {{"rtl", "LOOM_RTL_TRACE"}, {"cosim", "LOOM_RTL_TRACE"}},
     [](DeviceOptions& o, const std::string&, const std::string& v) {
       o.wave = v;
       return Status::ok();
     }},
    {"mem_faults",
     "--mem-faults",
     &DeviceFlags::mem_faults,
     {{"tlm", "LOOM_SIM_FAULT"}, {"cosim", "LOOM_SIM_FAULT"}},
     [](DeviceOptions& o, const std::string&, const std::string& v) {
       o.mem_faults = v;
       return Status::ok();
     }},
    {"mem_stall",
     "--mem-stall",
     &DeviceFlags::mem_stall,
     {{"tlm", "LOOM_SIM_STALL"}, {"cosim", "LOOM_SIM_STALL"}},
     [](DeviceOptions& o, const std::string&, const std::string& v) {
       o.mem_stall = v;
       return Status::ok();
     }},
    {"axi_stall",
     "--axi-stall",
     &DeviceFlags::axi_stall,
     {{"rtl", "LOOM_RTL_STALL"}},
     [](DeviceOptions& o, const std::string& label, const std::string& v) {
       const auto p = parse_double(v);
       if (!p) return Status(make_error(label, "expected a number, got '" + excerpt(v) + "'"));
       o.axi_stall = *p;
       return Status::ok();
     }},
    {"rtl_model",
     "--rtl-model",
     &DeviceFlags::rtl_model,
     {{"rtl", "LOOM_RTL_MODEL"}},
     [](DeviceOptions& o, const std::string&, const std::string& v) {
       o.rtl_model = v;
       return Status::ok();
     }},
    {"seed",
     "--device-seed",
     &DeviceFlags::seed,
     {{"rtl", "LOOM_RTL_SEED"}, {"tlm", "LOOM_SIM_SEED"}, {"cosim", "LOOM_SIM_SEED"}},
     [](DeviceOptions& o, const std::string& label, const std::string& v) { return set_whole(o.seed, label, v); }},
    {"xclbin",
     "--xclbin",
     &DeviceFlags::xclbin,
     {{"xrt", "LOOM_XCLBIN"}, {"xrt-emu", "LOOM_XCLBIN"}},
     [](DeviceOptions& o, const std::string&, const std::string& v) {
       o.xclbin = v;
       return Status::ok();
     }},
    {"device_index",
     "--device",
     &DeviceFlags::device_index,
     {{"xrt", "LOOM_XRT_DEVICE"}, {"xrt-emu", "LOOM_XRT_DEVICE"}},
     [](DeviceOptions& o, const std::string& label, const std::string& v) {
       return set_whole(o.device_index, label, v);
     }},
    {"timeout_ms",
     "--device-timeout-ms",
     &DeviceFlags::timeout_ms,
     {{"xrt", "LOOM_XRT_TIMEOUT_MS"}, {"xrt-emu", "LOOM_XRT_TIMEOUT_MS"}},
     [](DeviceOptions& o, const std::string& label, const std::string& v) {
       return set_whole(o.timeout_ms, label, v);
     }},
    {"arena_mib",
     "--arena-mib",
     &DeviceFlags::arena_mib,
     {{"xrt", "LOOM_XRT_ARENA_MIB"}, {"xrt-emu", "LOOM_XRT_ARENA_MIB"}},
     [](DeviceOptions& o, const std::string& label, const std::string& v) { return set_whole(o.arena_mib, label, v); }},
};

}  // namespace

void add_device_flags(CLI::App* cmd, DeviceFlags& f) {
  const std::string g = "Device options (docs/backends.md)";
  cmd->add_option("--mem-faults", f.mem_faults,
                  "Memory faults (tlm, cosim): KIND@ADDR+LEN or (cosim) KIND#N, comma-separated; KIND slverr or decerr")
      ->group(g);
  cmd->add_option("--mem-stall", f.mem_stall,
                  "Memory stall (tlm, cosim): CYCLES[:PROB] added to a burst (to a fraction PROB of them)")
      ->group(g);
  cmd->add_option("--axi-stall", f.axi_stall,
                  "AXI stall (rtl): chance in [0, 1) that a memory port stalls a handshake in a cycle")
      ->group(g);
  cmd->add_option("--rtl-model", f.rtl_model,
                  "Build of the fabric model (rtl): auto (default: fast unless --wave), checked (tracing and "
                  "assertions) or fast (neither)")
      ->group(g);
  cmd->add_option("--device-seed", f.seed,
                  "Seed of the memory stalls (rtl, tlm, cosim; rtl: and of out-of-order answers)")
      ->group(g);
  cmd->add_option("--xclbin", f.xclbin, "The xclbin to load (xrt, xrt-emu; xrt-emu: default its built-in one)")
      ->group(g);
  cmd->add_option("--device", f.device_index, "Card index (xrt, xrt-emu; default 0)")->group(g);
  cmd->add_option("--device-timeout-ms", f.timeout_ms,
                  "Wall-clock limit of one wait for the cores or an HLS unit (xrt, xrt-emu; default 120000)")
      ->group(g);
  cmd->add_option("--arena-mib", f.arena_mib, "Size of each device-memory arena in MiB (xrt, xrt-emu; default 64)")
      ->group(g);
}

Expected<runtime::DeviceOptions> device_options(const DeviceFlags& f, std::string_view backend) {
  DeviceOptions o;
  for (const Knob& k : kKnobs) {
    std::string v = f.*(k.text), label = k.flag;
    if (v.empty())
      for (const Knob::Var& var : k.env)
        if (var.backend != nullptr && backend == var.backend)
          if (const char* e = std::getenv(var.name); e != nullptr && *e != '\0') {
            v = e;
            label = var.name;
          }
    o.source[k.field] = label;  // the flag, or the variable the value came from
    if (!v.empty()) LOOM_TRY(k.set(o, label, v));
  }
  return o;
}

Expected<std::unique_ptr<runtime::Device>> open_backend(const std::string& backend, const spec::HwConfig& cfg,
                                                        const DeviceFlags& f) {
  auto opt = device_options(f, backend);
  if (!opt) return opt.error();
  return runtime::make_device(backend, cfg, *opt);
}

}  // namespace loom::cli
