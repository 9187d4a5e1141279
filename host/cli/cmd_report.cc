// `loom report`: turns a `loom serve` result, a `loom experiment` sweep or a
// `loom tune` result into an HTML page with matplotlib charts, drawn by
// scripts/report.py once serve::check_result has checked what it reads.
//
// LOOM_PYTHON overrides the interpreter (default python3 on PATH) and
// LOOM_REPORT_SCRIPT the script (default: the source tree's scripts/report.py).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/cli_common.h"
#include "cli/process.h"
#include "common/json_read.h"
#include "common/parse.h"
#include "serve/result_check.h"

namespace loom::cli {

namespace {

struct ReportOpts {
  std::string result, output;
  std::optional<std::string> timeline_ms;  // not given: the script's default window
};

/// --timeline-ms START:END, checked before anything runs: two plain finite
/// numbers of ms, 0 <= START < END < 1e12 (the script's own bound).
Status check_window(const std::string& w) {
  const size_t colon = w.find(':');
  const auto lo = parse_double(w.substr(0, colon));
  const auto hi = colon == std::string::npos ? std::nullopt : parse_double(w.substr(colon + 1));
  if (!lo || !hi || std::signbit(*lo) || !(*lo < *hi && *hi < 1e12))
    return make_error("--timeline-ms " + excerpt(w), "expected START:END in ms with 0 <= START < END");
  return Status::ok();
}

int report(const ReportOpts& o) {
  if (o.timeline_ms)
    if (Status s = check_window(*o.timeline_ms); !s) return fail(s.error());
  std::error_code ec;
  if (std::filesystem::is_directory(o.result, ec))
    return fail(o.result + ": is a directory, not a result file (loom serve -o FILE, or a sweep's results.json)");
  if (!std::filesystem::is_regular_file(o.result, ec)) return fail(o.result + ": no such result file");
  auto doc = read_json_file(o.result, uint64_t(1) << 30);
  if (!doc) return fail(doc.error());
  // Every field the script reads is checked here, so a damaged result is one
  // line before Python starts (the script's own handler is the backstop).
  if (Status s = serve::check_result(*doc, o.result); !s) return fail(s.error());
  const std::string py = env_or("LOOM_PYTHON", "python3");
  const std::string script = env_or("LOOM_REPORT_SCRIPT", LOOM_REPORT_SCRIPT);
  if (!std::filesystem::exists(script)) return fail(script + ": report script not found (set LOOM_REPORT_SCRIPT)");
  const pid_t probe = spawn_process({py, "-c", "import matplotlib"}, "/dev/null", "/dev/null");
  const int prc = probe < 0 ? -1 : wait_process(probe);
  if (prc != 0)
    return fail(prc == -1 || prc == 127
                    ? py + ": python3 not found; loom report needs python3 with matplotlib"
                    : py + ": matplotlib is not installed; loom report needs it (pip install matplotlib)");
  std::vector<std::string> args{py, script, o.result, o.output};
  if (o.timeline_ms) args.push_back(*o.timeline_ms);
  const pid_t pid = spawn_process(args, "", "");
  if (pid < 0) return fail(py + ": cannot start " + script);
  const int rc = wait_process(pid);
  return rc == 0 ? 0 : 1;  // the script printed its own one-line error
}

}  // namespace

void register_report(CLI::App& app) {
  auto o = std::make_shared<ReportOpts>();
  auto* c = app.add_subcommand("report", "HTML report with charts of a loom serve result or a loom experiment sweep");
  c->add_option("RESULT", o->result, "Result JSON (loom serve -o, or loom experiment's results.json)")->required();
  c->add_option("-o,--output", o->output, "Output folder")->required();
  c->add_option("--timeline-ms", o->timeline_ms,
                "Window START:END (ms of simulated time) of the per-core timeline chart (default: the first 5 ms)");
  c->callback([o] {
    if (int rc = report(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace loom::cli
