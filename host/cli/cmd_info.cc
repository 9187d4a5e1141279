// `loom info`: version, spec version, named configurations and backends.
#include <iostream>

#include "cli/cli_common.h"
#include "device/device.h"

namespace loom::cli {

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the version, hardware configurations and backends");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON");
  cmd->callback([json_out] {
    ordered_json j;
    j["version"] = LOOM_VERSION;
    j["spec_version"] = std::to_string(spec::kVersionMajor) + "." + std::to_string(spec::kVersionMinor);
    j["plan_format_version"] = plan::kProgramFormatVersion;  // the format written (1 and 2 are read too)
    j["configs"] = ordered_json::array();
    for (const auto& c : spec::kConfigs) {
      j["configs"].push_back(ordered_json{{"name", c.name},
                                          {"cores", c.cores},
                                          {"array_rows", c.array_rows},
                                          {"array_cols", c.array_cols},
                                          {"in_kib", c.in_kib},
                                          {"wgt_kib", c.wgt_kib},
                                          {"acc_kib", c.acc_kib},
                                          {"out_kib", c.out_kib},
                                          {"param_kib", c.param_kib},
                                          {"mem_ports", c.mem_ports},
                                          {"mem_width_bits", c.mem_width_bits},
                                          {"mem_kind", c.mem_kind},
                                          {"clock_mhz", c.clock_mhz},
                                          {"semaphores", c.semaphores},
                                          {"ring_depth", c.ring_depth},
                                          {"peak_macs_per_cycle", c.cores * c.array_rows * c.array_cols},
                                          {"doc", c.doc}});
    }
    j["backends"] = ordered_json::array();
    for (const auto& b : runtime::list_backends())
      j["backends"].push_back(ordered_json{{"name", b.name}, {"description", b.description}});
    if (*json_out) {
      std::cout << versioned("info", j).dump(2) << "\n";
      return;
    }
    std::cout << "loom " << LOOM_VERSION << " (spec " << j["spec_version"].get<std::string>() << ", plan format "
              << plan::kProgramFormatVersion << ")\n\nconfigurations:\n";
    for (const auto& c : spec::kConfigs)
      std::cout << "  " << c.name << ": " << c.cores << " cores of " << c.array_rows << "x" << c.array_cols
                << ", scratchpads in/wgt/acc/out " << c.in_kib << "/" << c.wgt_kib << "/" << c.acc_kib << "/"
                << c.out_kib << " KiB, " << c.mem_ports << " x " << c.mem_width_bits << "-bit " << c.mem_kind
                << " port(s), " << c.clock_mhz << " MHz\n";
    std::cout << "\nbackends:\n";
    for (const auto& b : runtime::list_backends()) std::cout << "  " << b.name << ": " << b.description << "\n";
  });
}

}  // namespace loom::cli
