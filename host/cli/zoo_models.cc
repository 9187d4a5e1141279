// Zoo models built on first use (zoo_models.h).
#include "cli/zoo_models.h"

#include <unistd.h>

#include <fstream>
#include <vector>

#include "cli/cli_common.h"
#include "cli/process.h"

namespace loom::cli {

ZooModels::~ZooModels() {
  std::error_code ec;
  if (!tmp.empty()) std::filesystem::remove_all(tmp, ec);
}

Expected<std::string> ZooModels::build(const serve::ModelSpec& m) {
  namespace fs = std::filesystem;
  fs::path root;
  if (!cache.empty()) {
    root = fs::path(cache) / "zoo";
  } else {
    if (tmp.empty()) {
      std::string t = (fs::temp_directory_path() / "loom_serve_zoo_XXXXXX").string();
      if (!::mkdtemp(t.data())) return make_error(m.name, "cannot create a temporary folder for the zoo model");
      tmp = t;
      tmp_in_flight = TempPath(t, TempPath::Folder);
    }
    root = tmp;
  }
  const std::string sub = m.zoo_name + (m.zoo_seq ? "-seq" + std::to_string(m.zoo_seq) : "") +
                          (m.zoo_slice.empty() ? "" : "-" + m.zoo_slice);
  const fs::path dir = root / sub, model = dir / "model.onnx";
  std::error_code fec;
  if (fs::is_regular_file(model, fec)) return model.string();
  const std::string script = env_or("LOOM_ZOO_SCRIPT", LOOM_ZOO_SCRIPT);
  if (!fs::is_regular_file(script, fec))
    return make_error(m.name, "zoo script " + script + " not found (set LOOM_ZOO_SCRIPT to scripts/zoo.py)");
  std::error_code ec;
  fs::create_directories(root, ec);
  const std::string pid = std::to_string(::getpid());
  const fs::path out = root / (sub + ".tmp" + pid), err = root / (sub + ".err" + pid);
  const TempPath out_in_flight(out.string(), TempPath::Folder), err_in_flight(err.string());
  std::vector<std::string> args{
      env_or("LOOM_PYTHON", "python3"), script, "build", m.zoo_name, "-o", out.string(), "--seed", "1"};
  if (m.zoo_seq) args.insert(args.end(), {"--seq", std::to_string(m.zoo_seq)});
  if (!m.zoo_slice.empty()) args.insert(args.end(), {"--slice", m.zoo_slice});
  const pid_t child = spawn_process(args, "/dev/null", err.string());
  const int rc = child < 0 ? -1 : wait_process(child);
  std::string last;
  {
    std::ifstream f(err);
    for (std::string line; std::getline(f, line);)
      if (!line.empty()) last = line;
  }
  fs::remove(err, ec);
  if (rc != 0) {
    fs::remove_all(out, ec);
    return make_error(
        m.name,
        "building the zoo model with " + args[0] + " " + script + " failed" +
            (last.empty() ? std::string(" (it needs numpy, onnx and onnxruntime: scripts/setup.sh)") : ": " + last));
  }
  fs::rename(out, dir, ec);  // another process may have built it first: keep theirs
  fs::remove_all(out, ec);
  if (std::error_code ec2; !fs::is_regular_file(model, ec2))
    return make_error(m.name, "the zoo build wrote no " + model.string());
  return model.string();
}

}  // namespace loom::cli
