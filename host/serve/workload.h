// A serving workload: streams of requests (model, priority, SLO, arrival
// process, shape distribution with drift) and the server's knobs. Read from a
// YAML file (docs/serving.md lists every field).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace loom::serve {

struct ModelSpec {
  enum class Kind { GemmChain, Graph, Onnx };
  Kind kind = Kind::GemmChain;
  std::string name;       // "gemm_chain", the graph or .onnx path, or "zoo:NAME[:seq=L][:slice=S]"
  std::string path;       // onnx: the .onnx file ("" for a zoo model until it is built)
  std::string zoo_name;   // zoo model: resnet50, mobilenetv2 or bert ("" otherwise)
  int64_t zoo_seq = 0;    // zoo model: BERT sequence length (0: not given)
  std::string zoo_slice;  // zoo model: part of the network ("" : whole)
  int64_t hidden = 64;    // gemm_chain: width of the residual stream
  int64_t ffn = 128;      // gemm_chain: inner width
  int64_t layers = 1;     // gemm_chain: number of (hidden->ffn->hidden) blocks
  /// gemm_chain: the cores one batch runs on at once (a gang; the stream's
  /// `cores_per_batch`), its plan compiled for that many cores with static
  /// placement. 1: one core. A mapping of `loom tune` decides it instead.
  int cores_per_batch = 1;
  /// onnx: symbolic dimensions of the graph inputs bound to values (the
  /// stream's `dims`, as `loom compile --dim`); the batch dimension is the
  /// batch's size.
  std::map<std::string, int64_t> dims;
  /// onnx file: the symbolic dimension the stream's `seq_len` binds (its
  /// `seq_len.dim`, or the one symbol of the graph inputs that is neither
  /// the batch dimension nor bound by `dims`); "" none.
  std::string seq_symbol;
  /// A model run at the bucket a batch is padded to: zoo:bert without :seq=
  /// and with a seq_len distribution (buckets: the zoo BERT lengths), or an
  /// ONNX file whose `seq_symbol` the stream's seq_len binds (buckets: any
  /// length up to kMaxBucketLength, by default bucket_ladder()). The mapping
  /// picks the buckets; by default a batch runs in the smallest ladder length
  /// that holds it.
  bool bucketed() const {
    return kind == Kind::Onnx &&
           ((zoo_name == "bert" && zoo_seq == 0) || (!seq_symbol.empty() && !dims.count(seq_symbol)));
  }
  /// A bucketed model's bucket lengths, ascending: the zoo BERT lengths, or
  /// bucket_ladder() for an ONNX file.
  std::vector<int64_t> bucket_lengths() const;
  /// Whether a bucketed model can be built at length `len`.
  bool bucket_allowed(int64_t len) const;
  /// The lengths bucket_allowed takes, for a message: "32, 64, 128, 256,
  /// 384, 512" (the zoo BERT) or "1..4096".
  std::string allowed_lengths() const;
  /// The smallest of bucket_lengths() >= seq (0: longer than any).
  int64_t bucket_of(int64_t seq) const;
  /// A bucketed model bound to the length `len`: zoo:bert:seq=LEN, or the
  /// ONNX file with `dims[seq_symbol] = len`. Not bucketed itself.
  ModelSpec at_length(int64_t len) const;
  /// The length a model bound by at_length runs at (0: none bound).
  int64_t bound_length() const;
};

/// The longest bucket of an ONNX model's symbolic sequence dimension (as a
/// gemm_chain's rows).
inline constexpr int64_t kMaxBucketLength = 4096;
/// The default buckets of an ONNX model's symbolic sequence dimension: the
/// powers of two and their halfway points (8, 12, 16, 24, 32, 48, ...,
/// 3072, 4096), as padding ladders of serving systems space them: a request
/// is padded by less than half its length.
std::vector<int64_t> bucket_ladder();

/// The sequence lengths the zoo builds BERT at (scripts/zoo.py BERT_SEQS).
inline constexpr int64_t kZooBertSeqs[] = {32, 64, 128, 256, 384, 512};
/// The smallest zoo BERT length >= seq (0: longer than any).
inline int64_t zoo_bert_bucket(int64_t seq) {
  for (int64_t b : kZooBertSeqs)
    if (b >= seq) return b;
  return 0;
}

struct ShapeDist {
  // Sequence lengths (rows per request) and their weights; a graph model has
  // one implicit shape (values = {1}).
  std::vector<int64_t> values{1};
  std::vector<double> weights{1.0};
  struct Drift {
    double at_ms = 0;
    std::vector<double> weights;
  };
  std::vector<Drift> drift;  // sorted by at_ms; weights switch at that time
};

struct Arrival {
  enum class Kind { Poisson, Bursty, Trace };
  Kind kind = Kind::Poisson;
  double rate = 0;  // poisson: requests per second
  /// poisson: the rate changes to `rate` at `at_ms` (load drift), at_ms increasing.
  struct RateChange {
    double at_ms = 0, rate = 0;
  };
  std::vector<RateChange> rate_drift;
  /// poisson: the mean rate over [0, duration_ms) (requests per second).
  double mean_rate(double duration_ms) const;
  double on_rate = 0, off_rate = 0, on_ms = 0, off_ms = 0;  // bursty
  std::string trace_file;                                   // trace: one "time_ms [seq_len]" per line
  std::vector<double> trace_ms;
  std::vector<int64_t> trace_seq;  // 0: draw from the shape distribution
};

struct Stream {
  std::string name;
  ModelSpec model;
  int priority = 0;  // larger is served first by the dynamic scheduler
  double slo_ms = 0;
  Arrival arrival;
  ShapeDist shapes;
  int cores = 0;         // static partition size (0: equal split)
  int64_t requests = 0;  // cap on generated requests (0: until duration)
};

struct Workload {
  std::string source;
  std::string config = "default";
  std::vector<Stream> streams;
  double duration_ms = 0;
  uint64_t seed = 1;
  std::string batching = "fixed";      // none | fixed | deadline
  std::string scheduling = "dynamic";  // static | dynamic | auto
  int max_batch = 8;
  double max_queue_delay_ms = 1.0;
  double slack_margin = 0.1;   // deadline batching: fraction of the SLO kept in reserve
  bool shape_grouping = true;  // deadline batching: batch similar lengths out of FIFO order
  bool admission = false;
  /// Service-time stretch per other busy core on the same memory port; < 0
  /// (the default): measured on the backend (ServiceModel::cycles with k cores).
  double port_contention = -1;
  int max_per_port = 0;  // dynamic: busy cores allowed per port (0: no limit)
};

Expected<Workload> load_workload(const std::string& path);
Expected<Workload> parse_workload_text(const std::string& text, const std::string& source);

/// The number of arrivals a stream expects over `duration_ms` with every rate
/// multiplied by `load_scale` (capped by its `requests`).
double expected_requests(const Stream& s, double duration_ms, double load_scale);
/// The request budgets of limits.h (per stream, per run, bursty periods),
/// checked before any arrival is generated; one line naming the stream.
Status check_budget(const Workload& w, double load_scale);

bool valid_batching(const std::string& s);
bool valid_scheduling(const std::string& s);

}  // namespace loom::serve
