// Service times measured on a timed backend: for each (model, padded sequence
// length, batch size) the model is built, compiled for one core (or, under a
// mapping of `loom tune`, for the cores the mapping places a batch on) and run on
// the backend; the device cycles it reports are the service time. Results are
// cached in memory and, optionally, on disk keyed by a hash of the plan.
//
// Port contention is measured on the backend too, for the batches that do
// meet on a port: a batch runs on one core of memory port 0 (core c uses
// port c % mem_ports) while the batches it meets run over and over on the
// port's other cores, started at four phases of their own runs; its run time
// over its time alone, averaged over the phases, is its stretch while they
// run (stretch()).
//
// Every model compiles through the one compile driver (driver/compile.h)
// into a program: its device segments are timed on the backend, an ONNX
// model's host fallback ops by a stated model (kHostOpNs, kHostElemNs).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "compiler/compiler.h"
#include "device/device.h"
#include "driver/compile.h"
#include "ir/graph.h"
#include "loom/spec_gen.h"
#include "plan/plan.h"
#include "plan/program.h"
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

/// One batch's shape: its model, padded sequence length and size.
struct BatchShape {
  const ModelSpec* model = nullptr;
  int64_t seq = 1;
  int batch = 1;
};

/// A measured stretch (ServiceModel::stretch).
struct StretchMeasurement {
  std::string model;  // model key of the batch
  int64_t seq = 0;
  int batch = 0;
  std::vector<std::tuple<std::string, int64_t, int>> with;  // the batches on the port's other cores
  double stretch = 1;
  uint64_t alone = 0;            // device cycles of the batch alone on the port
  std::vector<uint64_t> phases;  // its device cycles at each phase of the others
  bool from_disk = false;
};

/// Host fallback ops of an ONNX model, by a stated model: each op costs
/// kHostOpNs plus kHostElemNs per element of its outputs. Calibrated against
/// loom's host fallback on this project's 2-core machine
/// (tests/serve/host_ops_cpu.cc on the zoo BERT seq 32 and MobileNetV2 stem
/// host ops, docs/serving.md): deterministic, unlike a wall-clock measurement.
inline constexpr double kHostOpNs = 5000.0;
inline constexpr double kHostElemNs = 33.0;

/// A program's host steps by the stated model (kHostOpNs, kHostElemNs): one
/// request's device steps in order, each with the host cycles before it,
/// and the host cycles after the last.
struct HostCost {
  double host_us = 0;        // the host ops' time per request
  uint64_t host_cycles = 0;  // the same in device cycles
  std::vector<std::pair<size_t, uint64_t>> order;
  uint64_t host_after = 0;
};
HostCost host_cost(const plan::Program& p, const spec::HwConfig& cfg);

/// Builds a zoo model (ModelSpec::zoo_name, zoo_seq, zoo_slice) and returns
/// the path of its model.onnx; set by the command line (`loom zoo build`).
using ZooBuilder = std::function<Expected<std::string>(const ModelSpec& m)>;

/// How a gemm_chain batch runs under a mapping (set by `loom tune`): the
/// seq x batch rows are cut into chunks of `rows` rows (the last one padded),
/// each chunk one run of a plan compiled for `rows` rows with `options`.
/// rows == 0: one plan of exactly seq x batch rows. An ONNX model with a
/// batch dimension: a batch's requests run `rows` at a time, each chunk one
/// run of the program compiled for a batch of `rows` (the last padded);
/// rows == 0: not mapped (its program for the batch). A bucketed model
/// (ModelSpec::bucketed): `rows` is the bucket the batch is padded to (one
/// of its bucket lengths >= seq; 0: the smallest), its programs compiled
/// with `options`; the batch runs in ceil(batch / requests) runs of that
/// length's program compiled for `requests` requests (the last padded), or
/// with requests == 0 in one run of the program compiled for the batch.
struct MappedRun {
  int64_t rows = 0;
  compiler::CompileOptions options;
  std::string tag;  // names the mapping choice; part of the cache key
  int requests = 0;
};
using Mapper = std::function<MappedRun(const ModelSpec& m, int64_t seq, int batch)>;
/// The largest batch the server forms of a model's requests under a mapping
/// (set by `loom tune`); 0: the workload's max_batch.
using BatchCap = std::function<int(const ModelSpec& m)>;

/// One device run of a batch in live mode: a plan (for one core, or for the
/// batch's gang of cores), its inputs and
/// the golden model's outputs for them (nullptr: not checked), after
/// `host_cycles` of host work (ONNX host ops, by the stated model).
struct LivePart {
  const plan::Plan* plan = nullptr;
  const std::map<std::string, Tensor>* inputs = nullptr;
  const std::vector<std::pair<std::string, Tensor>>* expected = nullptr;
  uint64_t host_cycles = 0;
};
/// What a batch runs on its core in live mode, in order, and the host work
/// after the last run.
struct LiveWork {
  std::vector<LivePart> parts;
  uint64_t host_cycles_after = 0;
};

class ServiceModel {
 public:
  /// Measures on `backend` with the device options `dev` (they are part of
  /// every cache key: stalls and faults change what a batch costs).
  ServiceModel(const spec::HwConfig& cfg, std::string backend, std::string cache_dir, runtime::DeviceOptions dev = {});
  ~ServiceModel();

  /// Device cycles of one batch of `batch` requests padded to `seq` rows,
  /// alone on its memory port. An ONNX model runs its program compiled for
  /// the batch (--batch: a batch-1 export re-batched), measured per batch
  /// size; a .json graph has a fixed shape: a batch runs its plan `batch`
  /// times back to back (no batching gain), measured once.
  Expected<uint64_t> cycles(const ModelSpec& m, int64_t seq, int batch);
  /// The part of cycles(m, seq, batch) that is host ops (ONNX models; the
  /// stated host model, host_cost): what a batch spends on the CPU.
  Expected<uint64_t> host_cycles(const ModelSpec& m, int64_t seq, int batch);
  /// How much longer batch `a` runs while the batches `with` run on the other
  /// cores of its memory port (stretch >= 1; `with` beyond the port's other
  /// cores is cut). Measured on the backend as the header says, on first use
  /// (cached in memory and, by plan hash, on disk).
  Expected<double> stretch(const BatchShape& a, const std::vector<BatchShape>& with);
  const std::vector<StretchMeasurement>& stretches() const { return stretch_table_; }
  /// Cores that share memory port 0 (the most any port has).
  int cores_per_port() const;
  /// ONNX streams: the program (compiled on first use); a bucketed model's
  /// at the bucket a batch padded to `seq` runs in.
  Expected<const plan::Program*> onnx_program(const ModelSpec& m, int64_t seq = 1);
  /// The stated host cost of a program on this configuration.
  HostCost host_cost(const plan::Program& p) const { return serve::host_cost(p, cfg_); }
  /// `m` (gemm_chain: with `rows` rows) compiled by the compile driver with
  /// `opt`, as `loom run` compiles it; an ONNX model is loaded and
  /// partitioned once (driver::Reusable).
  /// An ONNX model with a batch dimension is compiled for `batch` requests.
  Expected<plan::Program> compile_program(const ModelSpec& m, int64_t rows, const compiler::CompileOptions& opt) {
    return compile_program(m, rows, 1, opt);
  }
  Expected<plan::Program> compile_program(const ModelSpec& m, int64_t rows, int batch,
                                          const compiler::CompileOptions& opt);
  /// A bucketed model (ModelSpec::bucketed) at the bucket a batch of `batch`
  /// requests padded to `seq` runs in under the mapping in force: the model
  /// bound to that length (ModelSpec::at_length), the options its plans
  /// compile with and the requests one run holds.
  struct Bucket {
    ModelSpec model;  // zoo:bert:seq=B, or the ONNX file with its sequence symbol bound to B
    compiler::CompileOptions options;
    std::string tag;   // MappedRun::tag
    int requests = 0;  // MappedRun::requests
    int batch = 1;
    /// The requests one run's program is compiled for, and the runs the batch takes.
    int per_run() const { return requests > 0 ? requests : batch; }
    uint64_t runs() const { return uint64_t((batch + per_run() - 1) / per_run()); }
  };
  Expected<Bucket> bucket(const ModelSpec& m, int64_t seq, int batch = 1) const;
  /// The cores one batch runs on at once under the mapping in force (its
  /// plans' CompileOptions::num_cores; without a mapping the stream's
  /// cores_per_batch, unmapped_options). The serving simulator and live
  /// serving start a batch when that many cores are free.
  int width(const ModelSpec& m, int64_t seq, int batch) const;
  /// Whether a batch of `m` runs as one program compiled for it: gemm_chain,
  /// and an ONNX model whose graph inputs lead with a batch dimension
  /// (onnxfe::has_batch_dim); else it runs its plan once per request.
  Expected<bool> batchable(const ModelSpec& m);
  void set_zoo_builder(ZooBuilder b) { zoo_builder_ = std::move(b); }
  /// Called before each run on the backend (never for a cached service
  /// time): what is measured, "MODEL seq S batch B" or, for a port stretch,
  /// "port stretch: MODEL seq S batch B with ..."; `stretch` tells which.
  using MeasureHook = std::function<void(const std::string& what, bool stretch)>;
  void set_on_measure(MeasureHook f) { on_measure_ = std::move(f); }
  double cycles_to_us(uint64_t c) const { return double(c) / double(cfg_.clock_mhz); }

  const std::vector<Measurement>& measurements() const { return table_; }
  uint64_t backend_runs() const { return runs_; }
  uint64_t disk_hits() const { return disk_hits_; }
  const std::string& backend() const { return backend_; }

  /// Plan hot swap: batches dispatched at or after `at_us` (simulated time of
  /// the current run) use `m`; earlier ones keep the mapping before it.
  /// Graph models ignore mappings. `cap`, when given, caps the batches the
  /// server forms from then on (batch_cap).
  void swap_mapping(Mapper m, double at_us, BatchCap cap = {}) {
    epochs_.push_back({at_us, std::move(m), std::move(cap)});
  }
  /// The batch cap of the mapping in force for `m`'s batches (0: none, the
  /// workload's max_batch).
  int batch_cap(const ModelSpec& m) const;
  void clear_mappings() { epochs_.clear(); }
  /// The backend device the model measures on (created on first use; one
  /// tlm platform per process, so other measurements share it).
  Expected<runtime::Device*> device();
  /// The server's current simulated time (set before each dispatch decision).
  void set_now(double now_us) { now_us_ = now_us; }

  /// Live mode: the runs of one batch of `batch` requests padded to `seq`,
  /// as cycles() times them (the same plans and mapping). Plans are compiled,
  /// and their golden outputs computed on the ref backend, on first use.
  Expected<LiveWork> live_work(const ModelSpec& m, int64_t seq, int batch);
  /// While frozen, a service time not measured yet is an error instead of a
  /// run on the device (which the live runtime owns then).
  void freeze(bool on) { frozen_ = on; }
  /// Live mode on an untimed backend (a card): service times are the wall
  /// time of a run, in cycles of the configuration's clock.
  void allow_wall_clock(bool on) { wall_clock_ = on; }

 private:
  /// A model compiled by the driver and ready to run: its program, every
  /// segment's inputs and the stated host cost; in live mode also every
  /// segment's golden outputs (computed on first use).
  struct Loaded {
    plan::Program program;
    HostCost host;
    std::vector<std::map<std::string, Tensor>> inputs;  // per segment
    std::vector<std::vector<std::pair<std::string, Tensor>>> expected;
    bool checked = false, golden_done = false;
    int64_t bucket = 0;  // a bucketed model: the length this program runs at
    int batch = 1;       // an ONNX model: the requests one run holds
  };
  /// `m` with `rows` rows (gemm_chain; 0 for the others; an ONNX model
  /// with a batch dimension for `batch` requests) compiled with `opts` (one
  /// core unless they place it on more), cached by `tag`.
  Expected<Loaded*> load(const ModelSpec& m, int64_t rows, const compiler::CompileOptions& opts, const std::string& tag,
                         int batch = 1);
  /// How a batch runs under the mapping in force, when it is chunked: a
  /// gemm_chain's seq x batch rows, or the requests of an ONNX model with a
  /// batch dimension (`fixed` false) that the mapping holds, in `runs` runs
  /// of a program compiled for `rows` (rows, or requests), the last padded.
  struct Chunked {
    MappedRun run;
    int64_t rows = 0;
    uint64_t runs = 0;
  };
  std::optional<Chunked> chunked(const ModelSpec& m, int64_t seq, int batch, bool fixed) const;
  /// The program one run of a chunked batch runs: a gemm_chain plan of
  /// `rows` rows, or the ONNX model's program for `rows` requests.
  Expected<Loaded*> load_chunk(const ModelSpec& m, const Chunked& ch);
  /// The same, not cached.
  Expected<std::unique_ptr<Loaded>> compile(const ModelSpec& m, int64_t rows, const compiler::CompileOptions& opts,
                                            int batch = 1);
  using LoadKey = std::tuple<std::string, int64_t, std::string>;  // (model, rows, tag)
  static LoadKey load_key(const ModelSpec& m, int64_t rows, const std::string& tag, int batch = 1);
  /// The golden outputs of every segment of `l` (live mode).
  Status golden_all(Loaded& l);
  Expected<uint64_t> measure(const ModelSpec& m, int64_t rows, const std::string& key, int64_t seq, int batch,
                             const compiler::CompileOptions& co = {}, const std::string& tag = {});
  /// Device cycles of `p` (one core).
  Expected<uint64_t> time_plan(const plan::Plan& p, const std::map<std::string, Tensor>& inputs, const std::string& key,
                               bool& from_disk);
  /// The stretch's runs: `a` on port 0's first core, `with` looping on the others.
  Expected<StretchMeasurement> measure_stretch(const BatchShape& a, const std::vector<BatchShape>& with);
  std::string cache_file(uint64_t hash, const char* ext) const;
  /// An ONNX model's program for one run of a batch of `batch` requests
  /// padded to `seq` (a bucketed model: its bucket's program for the
  /// requests one run holds, Bucket::per_run).
  Expected<Loaded*> onnx(const ModelSpec& m, int64_t seq, int batch = 1);
  /// The runs of onnx()'s program a batch takes: `batch` for a model that
  /// cannot batch, a bucketed model's Bucket::runs, else 1.
  uint64_t runs_of(const ModelSpec& m, int64_t seq, int batch, bool batchable) const;
  const Mapper* mapper() const;
  const spec::HwConfig& cfg_;
  std::string backend_, cache_dir_;
  runtime::DeviceOptions dev_opts_;
  std::unique_ptr<runtime::Device> dev_;
  MeasureHook on_measure_;
  std::string measuring_;  // what measure() times, told to on_measure_ once before its first backend run
  std::map<std::tuple<std::string, int64_t, int>, uint64_t> mem_;             // (model, seq, batch)
  std::map<std::tuple<std::string, int64_t, std::string>, uint64_t> mapped_;  // (model, rows, tag)
  std::map<std::string, double> stretch_;                                     // by the batches' keys
  std::map<std::string, double> live_alone_us_;  // a batch alone through the live path (stretch's denominator)
  std::vector<StretchMeasurement> stretch_table_;
  std::map<LoadKey, std::unique_ptr<Loaded>> loaded_;
  /// What the compile driver compiles for `m`: a zoo model built (its
  /// model.onnx; with a batch dimension, bound to `batch`), an ONNX or graph
  /// file, or gemm_chain with `rows` rows.
  Expected<driver::Source> source(const ModelSpec& m, int64_t rows, int batch = 1);
  std::map<std::string, driver::Reusable> reusable_;  // ONNX models, by path and batch
  /// An ONNX model file (a zoo model built on first use).
  Expected<std::string> onnx_path(const ModelSpec& m);
  std::map<std::string, bool> batchable_;  // by model_key
  ZooBuilder zoo_builder_;
  struct Epoch {
    double at_us = 0;
    Mapper map;
    BatchCap cap;
  };
  std::vector<Epoch> epochs_;
  double now_us_ = 0;
  std::vector<Measurement> table_;
  uint64_t runs_ = 0, disk_hits_ = 0;
  bool frozen_ = false, wall_clock_ = false;
  Status golden(const plan::Plan& p, const std::map<std::string, Tensor>& in,
                std::vector<std::pair<std::string, Tensor>>& out, bool& checked);
  std::unique_ptr<runtime::Device> ref_;
};

std::string model_key(const ModelSpec& m);
/// How a batch of `m` compiles without a mapping of `loom tune`: one core,
/// or a gemm_chain stream's cores_per_batch cores with static placement.
compiler::CompileOptions unmapped_options(const ModelSpec& m);
/// The built-in gemm_chain model of `m` with `rows` input rows.
driver::GemmChain gemm_chain(const ModelSpec& m, int64_t rows);

}  // namespace loom::serve
