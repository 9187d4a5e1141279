// `loom bringup`: ordered board checks modelled on `xbutil validate`
// (host/backends/xrt/bringup.h), on a card (xrt) or its emulation (xrt-emu).
#include <cstdlib>
#include <iostream>

#include "backends/rtl/rtl_device.h"
#include "backends/xrt/bringup.h"
#include "backends/xrt/xrt_backends.h"
#include "cli/cli_common.h"

namespace loom::cli {
namespace {

/// Stands in for a backend this binary was built without: opening fails.
class Missing final : public bringup::Target {
 public:
  Missing(std::string backend, std::string why) : backend_(std::move(backend)), why_(std::move(why)) {}
  std::string backend() const override { return backend_; }
  bool emulated() const override { return false; }
  Status open_device() override { return make_error(backend_, why_); }
  Expected<std::string> load_xclbin() override { return make_error(backend_, why_); }
  runtime::Device& device() override { std::abort(); }
  void set_config(const spec::HwConfig&) override {}
  Status arm_interrupt() override { return make_error(backend_, why_); }
  Expected<bool> wait_interrupt(unsigned) override { return make_error(backend_, why_); }
  std::string describe() const override { return backend_; }

 private:
  std::string backend_, why_;
};

}  // namespace

void register_bringup(CLI::App& app) {
  struct Opts {
    std::string backend = "xrt", config;
    DeviceFlags device;
    uint64_t dma_max_mib = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("bringup", "Board bring-up checks (like `xbutil validate`) on xrt or xrt-emu");
  cmd->add_option("--backend", o->backend, "Backend: xrt (a card) or xrt-emu (the emulation)")->capture_default_str();
  cmd->add_option("--config", o->config,
                  "Hardware configuration the xclbin implements (default: the one its HWCFG register names)");
  cmd->add_option("--dma-max-mib", o->dma_max_mib, "Largest DMA loopback size in MiB (default 64)")
      ->check(CLI::Range(uint64_t(1), uint64_t(4096)));
  cmd->add_flag("--json", o->json, "Print one JSON object");
  add_device_flags(cmd, o->device);
  cmd->callback([o] {
    // Without --config the card's HWCFG decides; until it is read, a
    // placeholder: on xrt-emu a configuration verilated into this build (its
    // built-in xclbin is chosen by name).
    std::string name = o->config;
    if (name.empty()) {
      const auto built = rtl::rtl_configs();
      name = o->backend == "xrt-emu" && !built.empty() ? std::string(built.front()) : "default";
    }
    auto cfg = find_config(name);
    if (!cfg) throw CLI::RuntimeError(fail(cfg.error()));
    if (o->backend != "xrt" && o->backend != "xrt-emu")
      throw CLI::RuntimeError(fail("--backend: '" + o->backend + "' has no bring-up checks (xrt, xrt-emu)"));
    auto dopt = device_options(o->device, o->backend);
    if (!dopt) throw CLI::RuntimeError(fail(dopt.error()));
    const unsigned index = dopt->device_index.value_or(0);
    std::unique_ptr<bringup::Target> t;
    if (o->backend == "xrt-emu") {
#ifdef LOOM_HAVE_XRT_EMU
      auto made = xrt_emu::make_bringup_target(**cfg, *dopt);
      if (!made) throw CLI::RuntimeError(fail(made.error()));
      t = std::move(*made);
#else
      t = std::make_unique<Missing>("xrt-emu", "not built into this loom");
#endif
    } else {
#ifdef LOOM_HAVE_XRT
      auto made = xrt_hw::make_bringup_target(**cfg, *dopt);
      if (!made) throw CLI::RuntimeError(fail(made.error()));
      t = std::move(*made);
#else
      t = std::make_unique<Missing>("xrt", "not built into this loom: " LOOM_XRT_MISSING_REASON);
#endif
    }
    bringup::Options bo;
    if (o->dma_max_mib) bo.dma_max_bytes = o->dma_max_mib << 20;
    bo.infer_config = o->config.empty();
    const auto checks = bringup::run(*t, bo);
    // The configuration checked: the card's once the identity check passed.
    const bool identified = checks.size() > 2 && checks[2].outcome == bringup::Outcome::Pass;
    const auto config_name = [&] {
      return identified          ? std::string(t->device().config().name)
             : o->config.empty() ? std::string("(unknown)")
                                 : o->config;
    };
    unsigned n[3] = {0, 0, 0};
    for (const auto& c : checks) ++n[int(c.outcome)];
    if (o->json) {
      ordered_json j{{"backend", o->backend}, {"config", config_name()}, {"device", index}, {"target", t->describe()}};
      ordered_json arr = ordered_json::array();
      for (const auto& c : checks) {
        ordered_json e{{"name", c.name}, {"result", bringup::outcome_name(c.outcome)}, {"detail", c.detail}};
        if (!c.values.empty()) {
          ordered_json v = ordered_json::object();
          for (const auto& [k, x] : c.values) v[k] = x;
          e["values"] = v;
        }
        arr.push_back(e);
      }
      j["checks"] = arr;
      j["passed"] = n[0];
      j["failed"] = n[1];
      j["skipped"] = n[2];
      j["ok"] = n[1] == 0;
      std::cout << versioned("bringup", j).dump(2) << "\n";
    } else {
      std::cout << "loom bringup: backend " << o->backend << ", config " << config_name() << "\n";
      for (const auto& c : checks)
        std::cout << c.name << ": " << bringup::outcome_name(c.outcome) << " (" << c.detail << ")\n";
      std::cout << "bringup: " << n[0] << " passed, " << n[1] << " failed, " << n[2] << " skipped\n";
    }
    if (n[1] != 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace loom::cli
