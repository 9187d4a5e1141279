// Zoo models for serving and tuning workloads: zoo:NAME streams built once
// by scripts/zoo.py (as `loom zoo build`, seed 1) into CACHE/zoo/ with
// --cache, else into a temporary folder removed when the object goes.
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"
#include "serve/workload.h"

namespace loom::cli {

struct ZooModels {
  std::string cache;
  std::filesystem::path tmp;
  ~ZooModels();
  /// The model.onnx of `m` (zoo_name, zoo_seq, zoo_slice), built on first use.
  Expected<std::string> build(const serve::ModelSpec& m);
};

}  // namespace loom::cli
