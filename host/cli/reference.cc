// `loom --cli-reference`: docs/cli.md, written from the command line's own
// definitions (every subcommand, argument and option as registered), so the
// reference cannot drift from the program. cli.reference_fresh compares.
#include <iostream>
#include <sstream>
#include <string>

#include "cli/cli_common.h"

namespace loom::cli {
namespace {

std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string names_of(const CLI::Option* o) {
  if (o->get_positional()) return o->get_name();
  std::string n;
  for (const auto& s : o->get_snames()) n += (n.empty() ? "" : ", ") + ("-" + s);
  for (const auto& l : o->get_lnames()) n += (n.empty() ? "" : ", ") + ("--" + l);
  return n;
}

std::string value_of(const CLI::Option* o) {
  if (o->get_type_size() == 0) return "";  // a flag
  std::string t = o->get_type_name();
  if (o->get_expected_max() > 1) t += " …";
  return t;
}

void command(std::ostream& os, const CLI::App& app, const std::string& path) {
  os << "## `" << path << "`\n\n" << app.get_description() << "\n\n";
  std::string usage = path;
  std::vector<const CLI::Option*> pos, opts;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_name() == "--help" || o->get_name().empty()) continue;
    (o->get_positional() ? pos : opts).push_back(o);
  }
  for (const auto* p : pos)
    usage += " " + std::string(p->get_required() ? "" : "[") + p->get_name() + (p->get_expected_max() > 1 ? " …" : "") +
             (p->get_required() ? "" : "]");
  const auto subs = app.get_subcommands([](const CLI::App*) { return true; });
  if (!subs.empty()) usage += " COMMAND";
  if (!opts.empty()) usage += " [OPTIONS]";
  os << "```\n" << usage << "\n```\n\n";
  if (!pos.empty() || !opts.empty()) {
    os << "| argument | value | default | meaning |\n|---|---|---|---|\n";
    for (const auto* o : pos)
      os << "| `" << o->get_name() << "` | " << cell(value_of(o)) << " | " << (o->get_required() ? "required" : "")
         << " | " << cell(o->get_description()) << " |\n";
    for (const auto* o : opts) {
      const std::string v = value_of(o);
      os << "| `" << names_of(o) << "` | " << (v.empty() ? "flag" : cell(v)) << " | "
         << (o->get_required() ? "required" : cell(o->get_default_str())) << " | " << cell(o->get_description())
         << " |\n";
    }
    os << "\n";
  }
  for (const auto* s : subs) command(os, *s, path + " " + s->get_name());
}

}  // namespace

std::string cli_reference(const CLI::App& app) {
  std::ostringstream os;
  os << "# loom command line reference\n\n"
     << "Written by `loom --cli-reference` from the command line's own definitions;\n"
     << "the test `cli.reference_fresh` fails when this file differs from what the\n"
     << "program prints. After changing a command, regenerate it:\n"
     << "`loom --cli-reference > docs/cli.md`.\n\n"
     << "Every command prints one line `loom: error: ...` and exits non-zero on bad\n"
     << "input. Device options (`--mem-faults`, `--axi-stall`, ...) are described\n"
     << "with their backends in `docs/backends.md`. Every `--json` result starts\n"
     << "with `schema_version` and `result` (its kind); `docs/schema/<result>.schema.json`\n"
     << "describes it, and `cli.schema.*` validates real outputs against it.\n\n"
     << "Long runs show their progress on stderr, never on stdout: after 2 s a bar\n"
     << "with the fraction of instructions retired, the time so far and an ETA on a\n"
     << "terminal, or one line every 5 s otherwise. `LOOM_PROGRESS_INTERVAL=S`\n"
     << "scales both (0: every update).\n\n";
  os << "Commands:";
  for (const auto* s : app.get_subcommands([](const CLI::App*) { return true; })) os << " `" << s->get_name() << "`";
  os << ".\n\n";
  for (const auto* s : app.get_subcommands([](const CLI::App*) { return true; }))
    command(os, *s, "loom " + s->get_name());
  return os.str();
}

}  // namespace loom::cli
