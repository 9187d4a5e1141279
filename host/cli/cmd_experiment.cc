// `loom experiment`: a matrix of `loom serve` runs (configs x batching x
// scheduling x loads x seeds) in parallel processes; one CSV and one JSON.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/cli_common.h"
#include "cli/process.h"
#include "serve/workload.h"
#include "serve/yaml_json.h"

namespace loom::cli {

namespace {

struct ExpOpts {
  std::string sweep, output;
  int jobs = 2;
};

struct Run {
  std::string config, batching, scheduling;
  double load = 1;
  int64_t seed = 1;
  std::string json_path, err_path;
};

Expected<std::vector<std::string>> str_list(const ordered_json& j, const std::string& where, const char* key,
                                            const std::vector<std::string>& def) {
  if (!j.contains(key)) return def;
  const auto& v = j[key];
  if (!v.is_array() || v.empty()) return make_error(where + ": field '" + key + "'", "expected a non-empty list");
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) return make_error(where + ": field '" + key + "'", "expected strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

int experiment(const ExpOpts& o) {
  auto doc = serve::load_yaml(o.sweep);
  if (!doc) return fail(doc.error());
  const ordered_json& j = *doc;
  const std::string& src = o.sweep;
  if (!j.is_object()) return fail(src + ": expected a mapping at the top level");
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (k != "workload" && k != "configs" && k != "batching" && k != "scheduling" && k != "loads" && k != "seeds")
      return fail(src + ": unknown field '" + k + "'");
  }
  if (!j.contains("workload") || !j["workload"].is_string()) return fail(src + ": missing field 'workload' (a path)");
  std::filesystem::path wl = j["workload"].get<std::string>();
  if (wl.is_relative() && !std::filesystem::exists(wl)) wl = std::filesystem::path(src).parent_path() / wl;
  auto w = serve::load_workload(wl.string());  // checked once here so a bad workload is one line, not N
  if (!w) return fail(w.error());
  auto configs = str_list(j, src, "configs", {w->config});
  if (!configs) return fail(configs.error());
  for (const auto& c : *configs)
    if (!spec::find_config(c)) return fail(src + ": field 'configs': unknown configuration '" + c + "'");
  auto batching = str_list(j, src, "batching", {w->batching});
  if (!batching) return fail(batching.error());
  for (const auto& b : *batching)
    if (!serve::valid_batching(b)) return fail(src + ": field 'batching': unknown batching policy '" + b + "'");
  auto scheduling = str_list(j, src, "scheduling", {w->scheduling});
  if (!scheduling) return fail(scheduling.error());
  for (const auto& s : *scheduling)
    if (!serve::valid_scheduling(s)) return fail(src + ": field 'scheduling': unknown scheduling policy '" + s + "'");
  std::vector<double> loads{1.0};
  if (j.contains("loads")) {
    loads.clear();
    if (!j["loads"].is_array() || j["loads"].empty()) return fail(src + ": field 'loads': expected a non-empty list");
    for (const auto& x : j["loads"]) {
      if (!x.is_number() || !(x.get<double>() > 0)) return fail(src + ": field 'loads': load scales must be numbers > 0");
      loads.push_back(x.get<double>());
    }
  }
  std::vector<int64_t> seeds{int64_t(w->seed)};
  if (j.contains("seeds")) {
    seeds.clear();
    if (!j["seeds"].is_array() || j["seeds"].empty()) return fail(src + ": field 'seeds': expected a non-empty list");
    for (const auto& x : j["seeds"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) return fail(src + ": field 'seeds': expected integers >= 0");
      seeds.push_back(x.get<int64_t>());
    }
  }
  if (o.jobs < 1 || o.jobs > 64) return fail("-j: expected 1..64 parallel runs");

  std::error_code ec;
  const std::filesystem::path out(o.output), runs_dir = out / "runs";
  std::filesystem::create_directories(runs_dir, ec);
  if (ec) return fail(o.output + ": cannot create the output directory: " + ec.message());
  std::vector<Run> runs;
  for (const auto& c : *configs)
    for (const auto& b : *batching)
      for (const auto& s : *scheduling)
        for (double l : loads)
          for (int64_t sd : seeds) {
            Run r{c, b, s, l, sd, "", ""};
            const std::string id = std::to_string(runs.size());
            r.json_path = (runs_dir / (id + ".json")).string();
            r.err_path = (runs_dir / (id + ".err")).string();
            runs.push_back(r);
          }

  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return fail("loom experiment: cannot find the loom binary (/proc/self/exe)");
  self[n] = '\0';
  const std::string cache = (out / "cache").string();
  std::map<pid_t, size_t> live;
  size_t next = 0, done = 0;
  std::vector<int> rcs(runs.size(), -1);
  while (done < runs.size()) {
    while (next < runs.size() && int(live.size()) < o.jobs) {
      const Run& r = runs[next];
      char load[32];
      std::snprintf(load, sizeof load, "%.17g", r.load);
      const pid_t pid = spawn_process({self, "serve", wl.string(), "--config", r.config, "--batching", r.batching,
                                       "--scheduling", r.scheduling, "--load-scale", load, "--seed",
                                       std::to_string(r.seed), "--cache", cache, "-o", r.json_path},
                                      "/dev/null", r.err_path);
      if (pid < 0) return fail("loom experiment: cannot start " + std::string(self));
      live[pid] = next++;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return fail("loom experiment: waitpid failed");
    }
    auto it = live.find(pid);
    if (it == live.end()) continue;
    const size_t i = it->second;
    live.erase(it);
    rcs[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ++done;
    const Run& r = runs[i];
    std::fprintf(stderr, "loom experiment: [%zu/%zu] %s %s %s load %.3g seed %lld: %s\n", done, runs.size(),
                 r.config.c_str(), r.batching.c_str(), r.scheduling.c_str(), r.load, (long long)r.seed,
                 rcs[i] == 0 ? "ok" : "FAILED");
  }
  for (size_t i = 0; i < runs.size(); ++i)
    if (rcs[i] != 0) {
      std::ifstream ef(runs[i].err_path);
      std::string line;
      std::getline(ef, line);
      return fail("run " + std::to_string(i) + " (" + runs[i].config + " " + runs[i].batching + " " +
                  runs[i].scheduling + " load " + std::to_string(runs[i].load) + " seed " +
                  std::to_string(runs[i].seed) + ") failed: " + (line.empty() ? "no message" : line));
    }

  ordered_json rows = ordered_json::array();
  std::string csv =
      "config,batching,scheduling,scheduling_used,load_scale,seed,submitted,completed,dropped,throughput_rps,p50_us,"
      "p95_us,p99_us,p999_us,slo_attainment,jain,antt,stp,core_imbalance\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    std::ifstream f(runs[i].json_path);
    ordered_json r = ordered_json::parse(f, nullptr, false);
    if (r.is_discarded()) return fail(runs[i].json_path + ": unreadable run result");
    int64_t sub = r["submitted"], met_n = 0;
    double met = 0;
    for (const auto& s : r["streams"]) met += s["slo_attainment"].get<double>() * s["submitted"].get<double>();
    met_n = sub;
    ordered_json row;
    row["config"] = runs[i].config;
    row["batching"] = runs[i].batching;
    row["scheduling"] = runs[i].scheduling;
    row["scheduling_used"] = r["scheduling"]["used"];
    row["load_scale"] = runs[i].load;
    row["seed"] = runs[i].seed;
    row["submitted"] = r["submitted"];
    row["completed"] = r["completed"];
    row["dropped"] = r["dropped"];
    row["throughput_rps"] = r["throughput_rps"];
    for (const char* p : {"p50_us", "p95_us", "p99_us", "p999_us"}) row[p] = r["latency"][p];
    row["slo_attainment"] = met_n ? met / double(met_n) : 1.0;
    row["jain"] = r["fairness"]["jain"];
    row["antt"] = r["fairness"]["antt"];
    row["stp"] = r["fairness"]["stp"];
    row["core_imbalance"] = r["core_imbalance"];
    row["result"] = runs[i].json_path;
    std::string line;
    for (const auto& [k, v] : row.items()) {
      if (k == "result") continue;
      if (!line.empty()) line += ",";
      line += v.is_string() ? v.get<std::string>() : v.dump();
    }
    csv += line + "\n";
    rows.push_back(row);
  }
  ordered_json res{{"kind", "sweep"}, {"sweep", o.sweep}, {"workload", wl.string()}, {"runs", rows}};
  for (const auto& [name, text] : {std::pair{std::string("results.csv"), csv},
                                   std::pair{std::string("results.json"), res.dump(2) + "\n"}}) {
    const auto path = out / name;
    const auto tmp = path.string() + ".tmp";
    {
      std::ofstream f(tmp);
      f << text;
      if (!f.flush()) return fail(path.string() + ": write failed");
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) return fail(path.string() + ": cannot write the file: " + ec.message());
  }
  std::fprintf(stderr, "loom experiment: %zu runs -> %s/results.csv, results.json\n", runs.size(), o.output.c_str());
  return 0;
}

}  // namespace

void register_experiment(CLI::App& app) {
  auto o = std::make_shared<ExpOpts>();
  auto* c = app.add_subcommand("experiment", "run a sweep of loom serve runs in parallel processes");
  c->add_option("sweep", o->sweep, "sweep file (.yaml)")->required();
  c->add_option("-j,--jobs", o->jobs, "parallel runs (default 2)");
  c->add_option("-o,--output", o->output, "output directory (results.csv, results.json, runs/)")->required();
  c->callback([o] {
    if (int rc = experiment(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace loom::cli
