// Service times measured on a timed backend: for each (model, padded sequence
// length, batch size) the model is built, compiled for one core and run on
// the backend; the device cycles it reports are the service time. Results are
// cached in memory and, optionally, on disk keyed by a hash of the plan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "compiler/compiler.h"
#include "ir/graph.h"
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
  std::string mapping;  // MappedRun::tag ("" without a mapping)
};

/// How a gemm_chain batch runs under a mapping (set by `loom tune`): the
/// seq x batch rows are cut into chunks of `rows` rows (the last one padded),
/// each chunk one run of a plan compiled for `rows` rows with `options`.
/// rows == 0: one plan of exactly seq x batch rows.
struct MappedRun {
  int64_t rows = 0;
  compiler::CompileOptions options;
  std::string tag;  // names the mapping choice; part of the cache key
};
using Mapper = std::function<MappedRun(const ModelSpec& m, int64_t seq, int batch)>;

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

  /// Plan hot swap: batches dispatched at or after `at_us` (simulated time of
  /// the current run) use `m`; earlier ones keep the mapping before it.
  /// Graph models ignore mappings.
  void swap_mapping(Mapper m, double at_us) { epochs_.push_back({at_us, std::move(m)}); }
  void clear_mappings() { epochs_.clear(); }
  /// The backend device the model measures on (created on first use; one
  /// tlm platform per process, so other measurements share it).
  Expected<runtime::Device*> device();
  /// The server's current simulated time (set before each dispatch decision).
  void set_now(double now_us) { now_us_ = now_us; }

 private:
  Expected<uint64_t> measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq, int batch,
                             const compiler::CompileOptions& co = {}, const std::string& tag = {});
  const spec::HwConfig& cfg_;
  std::string backend_, cache_dir_;
  std::unique_ptr<runtime::Device> dev_;
  std::map<std::tuple<std::string, int64_t, int>, uint64_t> mem_;
  std::map<std::tuple<std::string, int64_t, std::string>, uint64_t> mapped_;  // (model, rows, tag)
  std::vector<std::pair<double, Mapper>> epochs_;
  double now_us_ = 0;
  std::vector<Measurement> table_;
  uint64_t runs_ = 0, disk_hits_ = 0;
};

std::string model_key(const ModelSpec& m);
/// The built-in gemm_chain model with `rows` input rows.
ir::Graph gemm_chain(const ModelSpec& m, int64_t rows);

}  // namespace loom::serve
