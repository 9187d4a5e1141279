// The rtl backend's factory: picks the verilated loom_fabric model for a
// configuration and sets memory-port options from the config and the device options.
#include <string>

#include "backends/rtl/rtl_device.h"
#include "hw/verilated/fabric_models.h"

namespace loom::rtl {

std::vector<std::string_view> rtl_configs() {
  std::vector<std::string_view> v;
  for (const auto& m : hw::fabric_models()) v.push_back(m.config);
  return v;
}

namespace {

const hw::FabricModel* find_model(const spec::HwConfig& cfg) {
  for (const auto& m : hw::fabric_models())
    if (m.config == cfg.name) return &m;
  return nullptr;
}

}  // namespace

Expected<ModelBuild> choose_model(const spec::HwConfig& cfg, const runtime::DeviceOptions& opt) {
  const std::string& want = opt.rtl_model;
  if (!want.empty() && want != "auto" && want != "checked" && want != "fast")
    return make_error(opt.label("rtl_model"), "expected auto, checked or fast, got '" + excerpt(want) + "'");
  const hw::FabricModel* m = find_model(cfg);
  const bool have_fast = m != nullptr && m->make_fast != nullptr;
  if (want == "fast") {
    if (!opt.wave.empty())
      return make_error(opt.label("rtl_model"), "the fast model writes no waveform; leave out " + opt.label("wave") +
                                                    " or use the checked model");
    if (m != nullptr && !have_fast)
      return make_error(opt.label("rtl_model"), "config '" + std::string(cfg.name) +
                                                    "' has no fast model in this build (LOOM_RTL_FAST_CONFIGS "
                                                    "at configure time)");
    return ModelBuild::Fast;
  }
  if (want == "checked" || !opt.wave.empty() || !have_fast) return ModelBuild::Checked;
  return ModelBuild::Fast;
}

Expected<std::unique_ptr<RtlDevice>> make_rtl_device(const spec::HwConfig& cfg, const RtlOptions& opt) {
  const std::string where = "rtl device: config '" + std::string(cfg.name) + "'";
  if (const hw::FabricModel* m = find_model(cfg)) {
    if (m->cores != cfg.cores || m->rows != cfg.array_rows || m->cols != cfg.array_cols ||
        m->mem_ports != cfg.mem_ports || m->mem_bytes * 8 != cfg.mem_width_bits)
      return make_error(where, "differs from the parameters loom_fabric was verilated with");
    if (opt.model == ModelBuild::Checked)
      return std::make_unique<RtlDevice>(
          cfg, [m](bool tracing) { return m->make(tracing); }, opt);
    if (m->make_fast == nullptr) return make_error(where, "has no fast model in this build (LOOM_RTL_FAST_CONFIGS)");
    if (!opt.trace_path.empty()) return make_error(where, "the fast model writes no waveform");
    return std::make_unique<RtlDevice>(
        cfg, [m](bool) { return m->make_fast(false); }, opt);
  }
  std::string have;
  for (auto n : rtl_configs()) have += (have.empty() ? "" : ", ") + std::string(n);
  return make_error(where,
                    "was not verilated into this build (available: " + (have.empty() ? std::string("none") : have) +
                        "; set LOOM_RTL_CONFIGS at configure time)");
}

Expected<std::unique_ptr<runtime::Device>> make_rtl_device(const spec::HwConfig& cfg,
                                                           const runtime::DeviceOptions& dopt) {
  LOOM_TRY(dopt.allow("rtl", {"wave", "seed", "axi_stall", "rtl_model"}));
  RtlOptions opt;
  auto model = choose_model(cfg, dopt);
  if (!model) return model.error();
  opt.model = *model;
  opt.mem.read_latency = cfg.mem_latency_cycles;
  opt.mem.write_latency = cfg.mem_latency_cycles;
  // A memory controller port takes many bursts at once (the tlm platform
  // sets no limit per port); each core's load and store units keep up to 16
  // in flight, so the port's limit must not be the one that binds.
  opt.mem.max_reads = 64;
  opt.mem.max_writes = 64;
  opt.trace_path = dopt.wave;
  if (dopt.seed) {
    opt.mem.seed = *dopt.seed;
    opt.mem.reorder_ids = true;
  }
  if (dopt.axi_stall) {
    const double v = *dopt.axi_stall;
    if (!(v >= 0 && v < 1))
      return make_error(dopt.label("axi_stall"), "expected a probability in [0, 1), got " + std::to_string(v));
    opt.mem.stall_prob = v;
  }
  auto d = make_rtl_device(cfg, opt);
  if (!d) return d.error();
  return std::unique_ptr<runtime::Device>(std::move(*d));
}

}  // namespace loom::rtl
