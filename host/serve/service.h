// Service times measured on a timed backend: for each (model, padded sequence
// length, batch size) the model is built, compiled for one core and run on
// the backend; the device cycles it reports are the service time. Results are
// cached in memory and, optionally, on disk keyed by a hash of the plan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "loom/spec_gen.h"
#include "runtime/device.h"
#include "serve/workload.h"

namespace loom::serve {

struct Measurement {
  std::string model;  // model key
  int64_t seq = 0;
  int batch = 0;
  uint64_t cycles = 0;
  bool from_disk = false;
};

class ServiceModel {
 public:
  ServiceModel(const spec::HwConfig& cfg, std::string backend, std::string cache_dir);
  ~ServiceModel();

  /// Device cycles of one batch of `batch` requests padded to `seq` rows.
  /// A .json graph model has a fixed shape: a batch runs its plan `batch`
  /// times back to back (no batching gain), measured once.
  Expected<uint64_t> cycles(const ModelSpec& m, int64_t seq, int batch);
  double cycles_to_us(uint64_t c) const { return double(c) / double(cfg_.clock_mhz); }

  const std::vector<Measurement>& measurements() const { return table_; }
  uint64_t backend_runs() const { return runs_; }
  uint64_t disk_hits() const { return disk_hits_; }
  const std::string& backend() const { return backend_; }

 private:
  Expected<uint64_t> measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq, int batch);
  const spec::HwConfig& cfg_;
  std::string backend_, cache_dir_;
  std::unique_ptr<runtime::Device> dev_;
  std::map<std::tuple<std::string, int64_t, int>, uint64_t> mem_;
  std::vector<Measurement> table_;
  uint64_t runs_ = 0, disk_hits_ = 0;
};

std::string model_key(const ModelSpec& m);

}  // namespace loom::serve
