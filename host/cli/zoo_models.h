// Zoo models for serving and tuning workloads: zoo:NAME streams built once
// by scripts/zoo.py (as `loom zoo build`, seed 1) into CACHE/zoo/ with
// --cache, else into a temporary folder removed when the object goes (or on
// an interrupt, as are a build's half-written folder and its error log).
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"
#include "common/temp_files.h"
#include "serve/workload.h"

namespace loom::cli {

struct ZooModels {
  std::string cache;
  std::filesystem::path tmp;
  TempPath tmp_in_flight = {};  // an interrupt removes `tmp`
  ~ZooModels();
  /// The model.onnx of `m` (zoo_name, zoo_seq, zoo_slice), built on first use.
  Expected<std::string> build(const serve::ModelSpec& m);
};

}  // namespace loom::cli
