// `loom info`: version, spec version, named configurations and backends.
#include <iostream>

#include "cli/cli_common.h"
#include "compiler/compiler.h"
#include "device/device.h"

namespace loom::cli {

namespace {

/// The compiler's passes in pipeline order, each with the options it reads
/// and the statistics it keeps (compiler::PassInfo).
ordered_json passes_json() {
  ordered_json out = ordered_json::array();
  for (const auto& p : compiler::pipeline_passes()) {
    ordered_json opts = ordered_json::array(), stats = ordered_json::array();
    for (auto o : p.options) opts.push_back(compiler::pass_option_name(o));
    for (const auto& st : p.statistics) stats.push_back({{"key", st.key}, {"counts", st.counts}});
    out.push_back({{"name", p.name}, {"options", opts}, {"statistics", stats}});
  }
  return out;
}

void print_passes(const ordered_json& passes) {
  std::cout << "compiler passes, in pipeline order (options read; statistics kept):\n";
  for (const auto& p : passes) {
    std::string opts;
    for (const auto& o : p["options"]) opts += (opts.empty() ? "" : ", ") + o.get<std::string>();
    std::cout << "  " << p["name"].get<std::string>() << " (options: " << (opts.empty() ? "none" : opts) << ")\n";
    for (const auto& st : p["statistics"])
      std::cout << "    " << st["key"].get<std::string>() << ": " << st["counts"].get<std::string>() << "\n";
  }
}

}  // namespace

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the version, hardware configurations and backends");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON");
  auto passes = std::make_shared<bool>(false);
  cmd->add_flag("--passes", *passes,
                "List the compiler's passes with the options each reads and the statistics each keeps");
  cmd->callback([json_out, passes] {
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
    j["passes"] = passes_json();
    if (*json_out) {
      std::cout << versioned("info", j).dump(2) << "\n";
      return;
    }
    if (*passes) {
      print_passes(j["passes"]);
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
