// `loom experiment`: a sweep of `loom serve` runs over any serve setting (or
// any list of commands, `--commands`: the regression list), launched as
// local processes (`--launcher local`, the default) or as one Slurm job
// array (`--launcher slurm`), resumable, and merged into results.csv,
// results.json and (for sweeps) the HTML report.
//
// Output directory layout (docs/cluster.md):
//   DIR/points.json      the expanded sweep: one entry per point, its
//                        settings and the `loom serve` arguments
//   DIR/runs/N.json      point N's serve result (written atomically)
//   DIR/runs/N.meta.json point N's exit code, start and end (Unix seconds), host
//   DIR/runs/N.out, .err point N's stdout and stderr
//   DIR/slurm/array.sh   the batch script of the last Slurm submission
//   DIR/results.{csv,json}, DIR/report/   written once every point finished
// A point is finished when its runs/N.json holds a serve result; running the
// same sweep into the same DIR again runs only the others (failed ones are
// retried), on either launcher.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli/cli_common.h"
#include "cli/process.h"
#include "cli/progress.h"
#include "common/json_read.h"
#include "common/temp_files.h"
#include "common/tensor_io.h"
#include "serve/result_check.h"
#include "serve/workload.h"
#include "serve/yaml_json.h"

namespace loom::cli {

namespace {

namespace fs = std::filesystem;

struct ExpOpts {
  std::string sweep, output, launcher = "local", merge, commands;
  int jobs = 2;
  int64_t run_point = -1;
  bool wait = false;
};

/// One sweep axis: a field of the sweep file and the values it takes.
struct Axis {
  std::string name;  // field name in the sweep file and column in results.csv
  std::vector<ordered_json> values;
};

/// Slurm requests from the sweep file's `slurm:` mapping.
struct SlurmReq {
  std::string time, mem, partition;
  int throttle = 0;
};

struct Sweep {
  std::vector<Axis> axes;
  SlurmReq slurm;
};

std::string value_text(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) {  // the shortest text that reads back as the same double
    const double d = v.get<double>();
    char b[32];
    for (int prec = 1; prec <= 17; ++prec) {
      std::snprintf(b, sizeof b, "%.*g", prec, d);
      if (std::strtod(b, nullptr) == d) break;
    }
    return b;
  }
  return v.dump();
}

/// The axes, in the order of their columns: the field names of the sweep
/// file (plural for the original five, the workload's own names for the
/// serve settings), each a value or a non-empty list.
Expected<Sweep> parse_sweep(const ordered_json& j, const std::string& src) {
  if (!j.is_object()) return make_error(src, "expected a mapping at the top level");
  for (const auto& [k, v] : j.items()) {
    (void)v;
    bool ok = k == "slurm";
    for (const auto& kn : serve::kSweepAxes) ok = ok || k == kn.name;
    if (!ok) return make_error(src, "unknown field '" + k + "'");
  }
  if (!j.contains("workload")) return make_error(src, "missing field 'workload' (a path, or a list of paths)");
  Sweep s;
  for (const auto& kn : serve::kSweepAxes) {
    if (!j.contains(kn.name)) continue;
    const std::string where = src + ": field '" + kn.name + "'";
    const ordered_json& v = field(j, kn.name);
    ordered_json list = v.is_array() ? v : ordered_json::array({v});
    if (list.empty()) return make_error(where, "expected a value or a non-empty list");
    if (list.size() > 100000) return make_error(where, "more than 100000 values");
    const std::string kind = kn.kind;
    std::set<std::string> seen;
    for (const auto& x : list) {
      if (kind == "string" || kind == "config" || kind == "batching" || kind == "scheduling" || kind == "backend") {
        if (!x.is_string() || x.get<std::string>().empty()) return make_error(where, "expected non-empty strings");
        const std::string t = x.get<std::string>();
        if (kind == "config" && !spec::find_config(t)) return make_error(where, "unknown configuration '" + t + "'");
        if (kind == "batching" && !serve::valid_batching(t))
          return make_error(where, "unknown batching policy '" + t + "' (none, fixed, deadline)");
        if (kind == "scheduling" && !serve::valid_scheduling(t))
          return make_error(where, "unknown scheduling policy '" + t + "' (static, dynamic, auto)");
        if (kind == "backend" && t != "tlm" && t != "rtl")
          return make_error(where, "unknown timed backend '" + t + "' (tlm, rtl)");
      } else if (kind == "int") {
        if (!x.is_number_integer() || x.get<int64_t>() < 1 || x.get<int64_t>() > 4096)
          return make_error(where, "expected integers in 1..4096");
      } else if (kind == "seed") {
        if (!x.is_number_integer() || x.get<int64_t>() < 0) return make_error(where, "expected integers >= 0");
      } else if (kind == "load") {
        if (!x.is_number() || !(x.get<double>() > 0) || x.get<double>() > 1e6)
          return make_error(where, "load scales must be numbers in (0, 1e6]");
      } else if (kind == "delay") {
        if (!x.is_number() || !(x.get<double>() >= 0) || x.get<double>() > 1e6)
          return make_error(where, "expected delays in milliseconds in [0, 1e6]");
      } else if (kind == "margin") {
        if (!x.is_number() || !(x.get<double>() >= 0 && x.get<double>() < 1))
          return make_error(where, "expected fractions in [0, 1)");
      } else if (kind == "bool") {
        if (!x.is_boolean()) return make_error(where, "expected true or false");
      }
      if (!seen.insert(value_text(x)).second) return make_error(where, "value " + value_text(x) + " given twice");
    }
    s.axes.push_back({kn.name, std::vector<ordered_json>(list.begin(), list.end())});
  }
  if (j.contains("slurm")) {
    const auto& sl = field(j, "slurm");
    const std::string where = src + ": field 'slurm'";
    if (!sl.is_object()) return make_error(where, "expected a mapping (time, mem, partition, throttle)");
    for (const auto& [k, v] : sl.items()) {
      if (k == "throttle") {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 10000)
          return make_error(where + ".throttle", "expected an integer in 1..10000");
        s.slurm.throttle = int(v.get<int64_t>());
      } else if (k == "time" || k == "mem" || k == "partition") {
        if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64)
          return make_error(where + "." + k, "expected a non-empty string (Slurm's own syntax)");
        const std::string t = v.get<std::string>();
        for (char c : t)
          if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '-' || c == '_' || c == '.'))
            return make_error(where + "." + k, "'" + t + "' holds a character Slurm does not accept here");
        (k == "time" ? s.slurm.time : k == "mem" ? s.slurm.mem : s.slurm.partition) = t;
      } else {
        return make_error(where, "unknown field '" + k + "' (time, mem, partition, throttle)");
      }
    }
  }
  size_t n = 1;
  for (const auto& a : s.axes) {
    n *= a.values.size();
    if (n > 100000) return make_error(src, "the sweep expands to more than 100000 points");
  }
  return s;
}

/// The `loom serve` arguments of one point (after `serve`, before `-o`).
std::vector<std::string> serve_args(const ordered_json& params, const fs::path& sweep_dir) {
  std::vector<std::string> a;
  fs::path wl = field(params, "workload").get<std::string>();
  if (std::error_code ec; wl.is_relative() && !fs::exists(wl, ec)) wl = sweep_dir / wl;
  a.push_back(fs::absolute(wl).lexically_normal().string());
  const std::map<std::string, std::string> flag{{"configs", "--config"},
                                                {"batching", "--batching"},
                                                {"scheduling", "--scheduling"},
                                                {"backend", "--backend"},
                                                {"max_batch", "--max-batch"},
                                                {"max_queue_delay_ms", "--max-queue-delay-ms"},
                                                {"slack_margin", "--slack-margin"},
                                                {"loads", "--load-scale"},
                                                {"seeds", "--seed"}};
  for (const auto& [k, v] : params.items()) {
    if (k == "workload") continue;
    if (k == "admission") {
      a.push_back(v.get<bool>() ? "--admission" : "--no-admission");
      continue;
    }
    a.push_back(flag.at(k));
    a.push_back(value_text(v));
  }
  return a;
}

/// A sweep folder's JSON file: at most 256 MiB, nested at most
/// limits::kMaxJsonDepth levels.
Expected<ordered_json> read_json(const fs::path& p) { return read_json_file(p.string(), uint64_t(256) << 20); }

std::string manifest_kind(const ordered_json& man) {
  const ordered_json& k = field(man, "kind");
  return k.is_string() ? k.get<std::string>() : "serve";
}

/// A serve point is finished when it has a result merge can read; a command
/// point when it exited 0.
bool finished(const fs::path& dir, size_t id, const std::string& kind) {
  if (kind == "commands") {
    auto m = read_json(dir / "runs" / (std::to_string(id) + ".meta.json"));
    return m && field(*m, "exit") == 0;
  }
  const fs::path file = dir / "runs" / (std::to_string(id) + ".json");
  auto r = read_json(file);
  return r && serve::check_serve_result(*r, file.string());
}

/// First line of a point's stderr (the serve error), or why there is none.
std::string point_error(const fs::path& dir, size_t id) {
  std::ifstream ef(dir / "runs" / (std::to_string(id) + ".err"));
  std::string line, last;
  while (std::getline(ef, line))
    if (line.rfind("loom: error:", 0) == 0)
      return line;
    else if (!line.empty())
      last = line;
  if (!last.empty()) return last;
  const fs::path result = dir / "runs" / (std::to_string(id) + ".json");
  if (auto r = read_json(result)) {
    if (Status s = serve::check_serve_result(*r, result.string()); !s) return s.error().str();
  } else if (std::error_code ec; fs::exists(result, ec)) {
    return r.error().str();
  }
  auto m = read_json(dir / "runs" / (std::to_string(id) + ".meta.json"));
  if (m && !field(*m, "exit").is_null()) return "exit code " + field(*m, "exit").dump();
  return "not run";
}

/// "0-3,7,9-11" for Slurm's --array.
std::string index_list(const std::vector<size_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ids[i]);
    if (j > i) s.append("-").append(std::to_string(ids[j]));
    i = j + 1;
  }
  return s;
}

double now_unix() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// `loom experiment --run-point N -o DIR`: runs point N of DIR/points.json
/// (the body of a local worker and of a Slurm array task) and records its
/// exit code and times beside the result.
int run_point(const ExpOpts& o) {
  const fs::path dir(o.output);
  auto pts = read_json(dir / "points.json");
  if (!pts) return fail(pts.error());
  if (Status s = serve::check_manifest(*pts, o.output + "/points.json"); !s) return fail(s.error());
  const auto& list = field(*pts, "points");
  if (o.run_point < 0 || size_t(o.run_point) >= list.size())
    return fail(o.output + "/points.json: no point " + std::to_string(o.run_point));
  const auto& p = list[size_t(o.run_point)];
  const std::string id = std::to_string(o.run_point);
  std::vector<std::string> args;
  if (manifest_kind(*pts) == "commands") {
    for (const auto& a : field(p, "argv")) args.push_back(a.get<std::string>());
  } else {
    args = {self_exe(), "serve"};
    for (const auto& a : field(p, "args")) args.push_back(a.get<std::string>());
    args.push_back("-o");
    args.push_back((dir / "runs" / (id + ".json")).string());
  }
  const double t0 = now_unix();
  int rc = run_process(args, false);
  if (rc < 0) {
    std::fprintf(stderr, "loom: error: point %s: cannot start %s\n", id.c_str(), args[0].c_str());
    rc = 127;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  ordered_json meta{{"point", o.run_point}, {"exit", rc}, {"start_unix", t0}, {"end_unix", now_unix()}, {"host", host}};
  if (Status s = write_file_atomic((dir / "runs" / (id + ".meta.json")).string(), meta.dump(2) + "\n"); !s)
    return fail(s.error());
  return rc == 0 ? 0 : 1;
}

/// Writes DIR/points.json, or checks that the one already there holds the
/// same points (then the run resumes).
Status store_manifest(const std::string& out, const ordered_json& man) {
  const fs::path dir(out), file = dir / "points.json";
  std::error_code ec;
  fs::create_directories(dir / "runs", ec);
  if (ec) return make_error(out, "cannot create the output directory: " + ec.message());
  if (std::error_code ec; !fs::exists(file, ec)) return write_file_atomic(file.string(), man.dump(1) + "\n");
  auto old = read_json(file);
  if (!old) return old.error();
  if (field(*old, "points") != field(man, "points"))
    return make_error(out, "holds the points of another sweep (" + field(*old, "sweep").dump(-1).substr(0, 200) +
                               "); choose another -o, or remove it");
  return Status::ok();
}

/// Expands the sweep and writes DIR/points.json, or checks that the one
/// already there is the same sweep (then the run resumes).
Expected<ordered_json> prepare(const ExpOpts& o, Sweep* sweep_out) {
  auto doc = serve::load_yaml(o.sweep);
  if (!doc) return doc.error();
  auto sw = parse_sweep(*doc, o.sweep);
  if (!sw) return sw.error();
  const fs::path sweep_dir = fs::path(o.sweep).parent_path();
  // Every workload is checked once here, so a bad one is one line, not N.
  for (const auto& a : sw->axes)
    if (a.name == "workload")
      for (const auto& v : a.values) {
        fs::path wl = v.get<std::string>();
        if (std::error_code ec; wl.is_relative() && !fs::exists(wl, ec)) wl = sweep_dir / wl;
        auto w = serve::load_workload(wl.string());
        if (!w) return w.error();
      }
  ordered_json points = ordered_json::array();
  std::vector<size_t> idx(sw->axes.size(), 0);
  for (bool more = true; more;) {
    ordered_json params = ordered_json::object();
    for (size_t a = 0; a < sw->axes.size(); ++a) params[sw->axes[a].name] = sw->axes[a].values[idx[a]];
    auto args = serve_args(params, sweep_dir);
    // Service times measured once per plan, shared by every point (serve's cache is safe across processes).
    args.push_back("--cache");
    args.push_back((fs::absolute(o.output) / "cache").lexically_normal().string());
    points.push_back({{"id", points.size()}, {"params", params}, {"args", args}});
    more = false;
    for (size_t a = sw->axes.size(); a-- > 0;) {
      if (++idx[a] < sw->axes[a].values.size()) {
        more = true;
        break;
      }
      idx[a] = 0;
    }
  }
  ordered_json man{
      {"format", "loom-sweep-points"}, {"version", 1}, {"sweep", fs::absolute(o.sweep).string()}, {"points", points}};
  if (Status st = store_manifest(o.output, man); !st) return st.error();
  if (sweep_out) *sweep_out = *sw;
  return man;
}

/// A list of commands as points (`--commands FILE`: {commands: [{name,
/// argv}]}), for the regression list and any other batch of runs.
Expected<ordered_json> prepare_commands(const ExpOpts& o) {
  auto doc = serve::load_yaml(o.commands);
  if (!doc) return doc.error();
  const std::string& src = o.commands;
  const ordered_json& commands = field(*doc, "commands");
  if (!commands.is_array() || commands.empty())
    return make_error(src, "expected a mapping with a non-empty list 'commands'");
  ordered_json points = ordered_json::array();
  std::set<std::string> names;
  for (const auto& c : commands) {
    const std::string where = src + ": commands[" + std::to_string(points.size()) + "]";
    const ordered_json &name = field(c, "name"), &argv = field(c, "argv");
    if (!name.is_string() || !argv.is_array() || argv.empty())
      return make_error(where, "expected {name: text, argv: [program, args...]}");
    for (const auto& a : argv)
      if (!a.is_string()) return make_error(where + ".argv", "expected strings");
    if (!names.insert(name.get<std::string>()).second)
      return make_error(where, "name '" + excerpt(name.get<std::string>()) + "' given twice");
    points.push_back({{"id", points.size()}, {"name", name}, {"argv", argv}});
    if (points.size() > 100000) return make_error(src, "more than 100000 commands");
  }
  ordered_json man{{"format", "loom-sweep-points"},
                   {"version", 1},
                   {"kind", "commands"},
                   {"sweep", fs::absolute(src).string()},
                   {"points", points}};
  if (Status st = store_manifest(o.output, man); !st) return st.error();
  return man;
}

/// Merge of a command list: one row per command (exit code, seconds, host).
int merge_commands(const fs::path& dir, const ordered_json& man, const std::string& launcher) {
  const auto& points = field(man, "points");
  ordered_json rows = ordered_json::array();
  std::string csv = "name,exit,seconds,host\n";
  std::vector<size_t> bad;
  double t_min = 0, t_max = 0;
  size_t timed = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    auto m = read_json(dir / "runs" / (std::to_string(i) + ".meta.json"));
    const std::string name = field(points[i], "name").get<std::string>();
    ordered_json row{{"name", name}, {"exit", nullptr}, {"seconds", nullptr}, {"host", nullptr}};
    if (m && field(*m, "start_unix").is_number() && field(*m, "end_unix").is_number()) {
      const double a = field(*m, "start_unix"), b = field(*m, "end_unix");
      const ordered_json& host = field(*m, "host");
      row["exit"] = field(*m, "exit"), row["seconds"] = b - a, row["host"] = host.is_string() ? host : ordered_json();
      t_min = timed ? std::min(t_min, a) : a;
      t_max = timed ? std::max(t_max, b) : b;
      ++timed;
    }
    if (row["exit"] != 0) bad.push_back(i);
    csv += name + "," + (row["exit"].is_null() ? "" : row["exit"].dump()) + "," +
           (row["seconds"].is_null() ? "" : value_text(row["seconds"])) + "," +
           (row["host"].is_null() ? "" : row["host"].get<std::string>()) + "\n";
    rows.push_back(row);
  }
  ordered_json res{{"kind", "commands"},
                   {"sweep", field(man, "sweep")},
                   {"points", points.size()},
                   {"passed", points.size() - bad.size()},
                   {"failed", bad.size()},
                   {"wall",
                    {{"launcher", launcher},
                     {"span_seconds", t_max - t_min},
                     {"runs_per_hour", t_max > t_min ? double(timed) / (t_max - t_min) * 3600.0 : 0.0}}},
                   {"runs", rows}};
  for (const auto& [name, text] :
       {std::pair{std::string("results.csv"), csv}, std::pair{std::string("results.json"), res.dump(2) + "\n"}})
    if (Status s = write_file_atomic((dir / name).string(), text); !s) return fail(s.error());
  if (!bad.empty())
    return fail(dir.string() + ": " + std::to_string(bad.size()) + " of " + std::to_string(points.size()) +
                " commands failed or did not run (first: " + field(points[bad[0]], "name").get<std::string>() + ": " +
                point_error(dir, bad[0]) + "); run again into the same directory to retry them");
  std::fprintf(stderr, "loom experiment: %zu commands passed -> %s/results.csv, results.json\n", points.size(),
               dir.string().c_str());
  return 0;
}

int run_local(const ExpOpts& o, const ordered_json& man, const std::vector<size_t>& todo) {
  const fs::path dir(o.output);
  const std::string self = self_exe();
  if (self.empty()) return fail("loom experiment: cannot find the loom binary (/proc/self/exe)");
  std::map<pid_t, size_t> live;
  size_t next = 0, done = 0;
  const auto& points = field(man, "points");
  const size_t total = points.size(), before = total - todo.size();
  const auto t0 = std::chrono::steady_clock::now();
  while (done < todo.size()) {
    while (next < todo.size() && int(live.size()) < o.jobs) {
      const std::string id = std::to_string(todo[next]);
      const pid_t pid = spawn_process({self, "experiment", "--run-point", id, "-o", o.output},
                                      (dir / "runs" / (id + ".out")).string(), (dir / "runs" / (id + ".err")).string());
      if (pid < 0) return fail("loom experiment: cannot start " + self);
      live[pid] = todo[next++];
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return fail("loom experiment: waitpid failed");
    }
    unregister_child(pid);
    auto it = live.find(pid);
    if (it == live.end()) continue;
    const size_t i = it->second;
    live.erase(it);
    ++done;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && finished(dir, i, manifest_kind(man));
    std::string what;
    if (field(points[i], "name").is_string())
      what = " " + field(points[i], "name").get<std::string>();
    else
      for (const auto& [k, v] : field(points[i], "params").items())
        if (k != "workload") what += " " + k + "=" + value_text(v);
    // ETA from this run's points so far (resumed points cost nothing).
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string eta = done < todo.size()
                                ? "about " + duration_text(el * double(todo.size() - done) / double(done)) + " left"
                                : "done after " + duration_text(el);
    std::fprintf(stderr, "loom experiment: [%zu/%zu] point %zu%s: %s (%s)\n", before + done, total, i, what.c_str(),
                 ok ? "ok" : "FAILED", eta.c_str());
  }
  return 0;
}

int submit_slurm(const ExpOpts& o, const Sweep& sw, const std::vector<size_t>& todo) {
  const fs::path dir = fs::absolute(o.output);
  const std::string self = self_exe();
  if (self.empty()) return fail("loom experiment: cannot find the loom binary (/proc/self/exe)");
  std::error_code ec;
  fs::create_directories(dir / "slurm", ec);
  if (ec) return fail(o.output + "/slurm: cannot create: " + ec.message());
  const auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string script = "#!/bin/sh\n# loom experiment: one point of the sweep per array task.\nexec " +
                             quote(self) + " experiment --run-point \"$SLURM_ARRAY_TASK_ID\" -o " +
                             quote(dir.string()) + "\n";
  const fs::path sh = dir / "slurm" / "array.sh";
  if (Status s = write_file_atomic(sh.string(), script); !s) return fail(s.error());
  fs::permissions(sh, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read, ec);
  const int throttle = sw.slurm.throttle > 0 ? sw.slurm.throttle : o.jobs;
  std::vector<std::string> cmd{env_or("LOOM_SBATCH", "sbatch"),
                               "--parsable",
                               "--job-name=loom-experiment",
                               "--array=" + index_list(todo) + "%" + std::to_string(throttle),
                               "--output=" + (dir / "runs" / "%a.out").string(),
                               "--error=" + (dir / "runs" / "%a.err").string(),
                               "--chdir=" + dir.string()};
  if (!sw.slurm.time.empty()) cmd.push_back("--time=" + sw.slurm.time);
  if (!sw.slurm.mem.empty()) cmd.push_back("--mem=" + sw.slurm.mem);
  if (!sw.slurm.partition.empty()) cmd.push_back("--partition=" + sw.slurm.partition);
  if (o.wait) cmd.push_back("--wait");
  cmd.push_back(sh.string());
  const std::string out = (dir / "slurm" / "sbatch.out").string(), err = (dir / "slurm" / "sbatch.err").string();
  const pid_t pid = spawn_process(cmd, out, err);
  if (pid < 0)
    return fail("loom experiment: cannot start " + cmd[0] + " (is Slurm installed? scripts/slurm_cluster.sh)");
  const int rc = wait_process(pid);
  std::ifstream fo(out);
  std::string job;
  std::getline(fo, job);
  job = job.substr(0, job.find(';'));  // "jobid;cluster"
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos) {
    std::ifstream fe(err);
    std::string line, first;
    while (std::getline(fe, line))
      if (!line.empty()) {
        first = line;
        break;
      }
    return fail("loom experiment: sbatch failed (exit " + std::to_string(rc) +
                "): " + (first.empty() ? std::string("no message") : first));
  }
  std::printf("%s\n", job.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "loom experiment: submitted job array %s: %zu points, at most %d at once%s\n", job.c_str(),
               todo.size(), throttle, o.wait ? " (waited for it)" : "; merge with: loom experiment --merge DIR");
  return 0;
}

int merge(const std::string& out_dir, const std::string& launcher) {
  const fs::path dir(out_dir);
  auto man = read_json(dir / "points.json");
  if (!man) return fail(man.error());
  if (Status s = serve::check_manifest(*man, out_dir + "/points.json"); !s) return fail(s.error());
  const auto& points = field(*man, "points");
  if (manifest_kind(*man) == "commands") return merge_commands(dir, *man, launcher);
  std::vector<size_t> missing;
  for (size_t i = 0; i < points.size(); ++i)
    if (!finished(dir, i, "serve")) missing.push_back(i);
  if (!missing.empty())
    return fail(out_dir + ": " + std::to_string(missing.size()) + " of " + std::to_string(points.size()) +
                " points have no result (" + index_list(missing) + "; point " + std::to_string(missing[0]) + ": " +
                point_error(dir, missing[0]) + "); run the sweep again into the same directory to resume");
  std::vector<ordered_json> results;
  for (size_t i = 0; i < points.size(); ++i) {
    const fs::path file = dir / "runs" / (std::to_string(i) + ".json");
    auto r = read_json(file);
    if (!r) return fail(r.error());
    if (Status s = serve::check_serve_result(*r, file.string()); !s) return fail(s.error());
    results.push_back(std::move(*r));
  }
  double t_min = 0, t_max = 0, point_sum = 0;
  size_t timed = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    auto m = read_json(dir / "runs" / (std::to_string(i) + ".meta.json"));
    if (!m) continue;
    const ordered_json &start = field(*m, "start_unix"), &end = field(*m, "end_unix");
    if (start.is_number() && end.is_number() && std::isfinite(start.get<double>()) &&
        std::isfinite(end.get<double>())) {
      const double a = start.get<double>(), b = end.get<double>();
      t_min = timed ? std::min(t_min, a) : a;
      t_max = timed ? std::max(t_max, b) : b;
      point_sum += b - a;
      ++timed;
    }
  }
  // Wall-time fields (the only ones that differ between two runs of a sweep).
  const double runs_per_hour = t_max > t_min ? double(timed) / (t_max - t_min) * 3600.0 : 0.0;
  ordered_json wall{{"launcher", launcher},
                    {"span_seconds", t_max - t_min},
                    {"point_seconds_mean", timed ? point_sum / double(timed) : 0.0},
                    {"runs_per_hour", runs_per_hour}};
  const ordered_json res = serve::sweep_result(*man, results, std::move(wall));
  std::string header, csv;
  for (const auto& row : field(res, "runs")) {
    const auto [line, head] = serve::csv_line(row);
    if (header.empty()) header = head;
    csv += line + "\n";
  }
  for (const auto& [name, text] : {std::pair{std::string("results.csv"), header + "\n" + csv},
                                   std::pair{std::string("results.json"), res.dump(2) + "\n"}})
    if (Status s = write_file_atomic((dir / name).string(), text); !s) return fail(s.error());
  const std::string self = self_exe();
  const int rc = run_process({self, "report", (dir / "results.json").string(), "-o", (dir / "report").string()}, true);
  if (rc != 0)
    return fail(out_dir + "/report: loom report failed (exit " + std::to_string(rc) +
                "); results.csv and "
                "results.json are written; run `loom report " +
                out_dir + "/results.json -o DIR` to see why");
  std::fprintf(stderr, "loom experiment: %zu points -> %s/results.csv, results.json, report/ (%.0f runs/hour)\n",
               points.size(), out_dir.c_str(), runs_per_hour);
  return 0;
}

int experiment(const ExpOpts& o) {
  if (o.run_point >= 0) {
    if (o.output.empty()) return fail("--run-point: -o DIR is required");
    return run_point(o);
  }
  if (!o.merge.empty()) {
    if (!o.sweep.empty()) return fail("--merge DIR takes no sweep file");
    return merge(o.merge, "merged");
  }
  if (!o.sweep.empty() && !o.commands.empty()) return fail("--commands FILE takes no sweep file");
  if (o.sweep.empty() && o.commands.empty())
    return fail("loom experiment: a sweep file is required (or --commands FILE, or --merge DIR)");
  if (o.output.empty()) return fail("loom experiment: -o DIR is required");
  if (o.launcher != "local" && o.launcher != "slurm")
    return fail("--launcher: unknown launcher '" + o.launcher + "' (local, slurm)");
  if (o.jobs < 1 || o.jobs > 64) return fail("-j: expected 1..64 parallel runs");
  if (o.wait && o.launcher != "slurm") return fail("--wait: only with --launcher slurm (local runs always wait)");
  Sweep sw;
  auto man = o.commands.empty() ? prepare(o, &sw) : prepare_commands(o);
  if (!man) return fail(man.error());
  const fs::path dir(o.output);
  std::vector<size_t> todo;
  for (size_t i = 0; i < field(*man, "points").size(); ++i)
    if (!finished(dir, i, manifest_kind(*man))) todo.push_back(i);
  const size_t total = field(*man, "points").size();
  if (todo.size() < total)
    std::fprintf(stderr, "loom experiment: %zu of %zu points already finished in %s; running the other %zu\n",
                 total - todo.size(), total, o.output.c_str(), todo.size());
  if (o.launcher == "slurm") {
    if (todo.empty()) {
      std::fprintf(stderr, "loom experiment: every point is finished; nothing to submit\n");
      return merge(o.output, "slurm");
    }
    if (int rc = submit_slurm(o, sw, todo)) return rc;
    return o.wait ? merge(o.output, "slurm") : 0;
  }
  if (int rc = run_local(o, *man, todo)) return rc;
  return merge(o.output, "local");
}

}  // namespace

void register_experiment(CLI::App& app) {
  auto o = std::make_shared<ExpOpts>();
  auto* c = app.add_subcommand("experiment",
                               "Run a sweep of loom serve runs (local processes or a Slurm job array); resume; merge");
  c->add_option("SWEEP", o->sweep, "Sweep file (.yaml)");
  c->add_option("-j,--jobs", o->jobs,
                "Parallel runs (local), or at most this many array tasks at once (slurm; "
                "the sweep's slurm.throttle wins) (default 2)");
  c->add_option("-o,--output", o->output, "Output folder (points.json, runs/, results.csv, results.json, report/)");
  c->add_option("--launcher", o->launcher,
                "Launcher: local (default), or slurm (one sbatch --array job; prints its job id)");
  c->add_flag("--wait", o->wait, "Slurm: wait for the job array to finish, then merge");
  c->add_option("--commands", o->commands,
                "Run a list of commands instead of a sweep ({commands: [{name, argv}]}; scripts/regress.sh)");
  c->add_option("--merge", o->merge, "Merge the finished points of DIR into results.csv, results.json and report/");
  c->add_option("--run-point", o->run_point, "Run point N of -o DIR (what each worker and array task does)")->group("");
  c->callback([o] {
    if (int rc = experiment(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace loom::cli
