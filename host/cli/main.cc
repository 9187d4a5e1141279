// Entry point of the `loom` command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "cli/cli_common.h"
#include "common/temp_files.h"

int main(int argc, char** argv) {
  using namespace loom::cli;
  // SIGINT and SIGTERM remove whatever file loom is writing (common/temp_files.h).
  loom::install_interrupt_cleanup();
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
    register_compare(app);
    register_serve(app);
    register_tune(app);
    register_report(app);
    register_experiment(app);
    check_option_values(app);  // every option's text checked (not empty; numbers strictly), after CLI11
    // docs/cli.md, from the definitions above (cli.reference_fresh compares).
    if (argc == 2 && std::string(argv[1]) == "--cli-reference") {
      std::cout << cli_reference(app);
      return 0;
    }
    // A first argument that is not an option must name a subcommand: say
    // which names there are instead of CLI11's "A subcommand is required".
    if (argc > 1 && argv[1][0] != '-') {
      const std::string word = argv[1];
      std::string names, close;
      bool known = false;
      for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        const std::string n = sub->get_name();
        known = known || n == word;
        names += (names.empty() ? "" : ", ") + n;
        // A near miss: a shared prefix of three letters, or one letter apart in the same length.
        size_t diff = 0;
        for (size_t i = 0; i < std::min(n.size(), word.size()); ++i) diff += n[i] != word[i];
        diff += std::max(n.size(), word.size()) - std::min(n.size(), word.size());
        if (close.empty() && (diff <= 1 || (word.size() >= 3 && n.compare(0, 3, word, 0, 3) == 0))) close = n;
      }
      if (!known) {
        std::cerr << "loom: error: unknown command '" << word << "'"
                  << (close.empty() ? std::string() : " (did you mean '" + close + "'?)") << "; commands: " << names
                  << " (see loom --help)\n";
        return 2;
      }
    }
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
    return fail("internal error: " + loom::exception_text(e.what()));
  }
}
