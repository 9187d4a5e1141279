// Resource budgets: the one home of every limit loom applies to what it reads
// (files, tensors, graphs, workloads), so hostile or corrupt input is refused
// in one line before it can exhaust memory or time. docs/security.md lists
// them with the reasoning; each is far above what a real network needs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::limits {

/// Bytes of any one input file (models, plans, graphs, tensors, workloads).
/// Protobuf cannot parse more than 2 GiB anyway.
inline constexpr uint64_t kMaxFileBytes = uint64_t(2) << 30;
/// Bytes of one YAML text (workloads, sweeps, command lists, trace files).
inline constexpr uint64_t kMaxTextBytes = uint64_t(64) << 20;

/// Elements of any one tensor loom materializes (imported constants, host
/// values, JSON-graph initializers, the direct reference's intermediates). BERT-base's embedding table has 23 M.
inline constexpr int64_t kMaxTensorElems = int64_t(1) << 28;
/// Dimensions of any one tensor (ONNX allows any rank; loom's ops use at
/// most 6).
inline constexpr size_t kMaxRank = 32;
/// Bytes of any one tensor read from a file or produced on the host.
inline constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 30;

/// Nodes of one graph (JSON graph or ONNX model, after import).
inline constexpr int64_t kMaxNodes = 100'000;

/// Nesting depth of any JSON document loom reads (results, sweep folders,
/// plans' metadata): loom writes at most about 8 levels; a deeper document
/// is refused before anything recurses over it (docs/security.md).
inline constexpr int kMaxJsonDepth = 64;

/// YAML nodes of one document after alias expansion.
inline constexpr int64_t kMaxYamlNodes = 1'000'000;

/// Requests of one stream, and of one workload run in total (expected count,
/// rate x duration, is checked when the workload is read; generation stops
/// at the limit as well).
inline constexpr int64_t kMaxRequestsPerStream = 10'000'000;
inline constexpr int64_t kMaxRequestsTotal = 20'000'000;
/// Memory one simulated request takes over a `loom serve` run: its record,
/// arrival, latency and queue-wait samples and its share of the batches (187
/// bytes measured: a 4 M-request run peaks 375 MB above a 2 M-request one,
/// docs/security.md), rounded up.
inline constexpr int64_t kServeBytesPerRequest = 200;
/// The request records of one run, estimated at load as requests x
/// kServeBytesPerRequest: 2 GiB (about 10.7 M requests), so a run either
/// fits or is refused before arrivals are generated.
inline constexpr int64_t kMaxServeBytes = int64_t(2) << 30;
/// Weight bytes of one built-in gemm_chain (layers x 2 x hidden x ffn int8):
/// 1 GiB. Each field alone may be up to 4096; together they could ask for
/// 137 GB, which no fabric holds and no compile finishes.
inline constexpr int64_t kMaxGemmChainBytes = int64_t(1) << 30;
/// Cycles of one cached service-time measurement (`loom serve --cache`):
/// 2^40, 18 minutes of device time at 1 GHz and 275 times the executor's
/// per-wait timeout. A larger cached value is no measurement loom made: the
/// entry is measured again.
inline constexpr int64_t kMaxCachedCycles = int64_t(1) << 40;
/// `loom serve --mode live`: (stream, sequence length, batch size) service
/// times measured, and plans compiled, before the live run starts.
inline constexpr int64_t kMaxLiveProfiles = 1024;
/// Simulated duration of one workload run: 10^9 ms (about 11.6 days).
inline constexpr double kMaxDurationMs = 1e9;
/// Arrival-process periods (bursty on/off phases) visited in one run, so a
/// tiny period over a long duration cannot spin.
inline constexpr double kMaxPeriods = 1e8;

/// Bytes of one error line, so a corrupt field cannot print megabytes.
inline constexpr uint64_t kMaxErrorBytes = 1024;

}  // namespace loom::limits
