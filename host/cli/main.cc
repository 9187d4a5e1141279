// Entry point of the `loom` command line.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/cli_common.h"

int main(int argc, char** argv) {
  using namespace loom::cli;
  try {
    register_builtin_backends();
    CLI::App app{"loom: FPGA accelerator co-design stack (compiler, runtime, simulators)", "loom"};
    app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION);
    app.require_subcommand(1);
    register_info(app);
    register_compile(app);
    register_run(app);
    register_bench(app);
    register_bringup(app);
    register_zoo(app);
    register_serve(app);
    register_tune(app);
    register_report(app);
    register_experiment(app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::RuntimeError& e) {
      return e.get_exit_code();  // a subcommand failed and already printed its one line
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);
      // One line: what is wrong and where to look.
      std::cerr << "loom: error: " << e.what() << " (see --help)\n";
      return 2;
    }
    return deferred_exit_code();
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
