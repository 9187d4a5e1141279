// Batching decisions, as pure functions of one stream's queue so they can be
// tested on crafted queues and timed on their own (tests/serve).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace loom::serve {

enum class Batching { None, Fixed, Deadline };

struct QueuedReq {
  double arrival_us = 0;
  double deadline_us = 0;  // arrival + SLO
  int64_t seq = 1;
};

struct BatchParams {
  Batching policy = Batching::Fixed;
  int max_batch = 8;
  double max_delay_us = 1000;  // fixed: longest the oldest request waits for a fuller batch
  double slack_margin = 0.1;   // deadline: fraction of each SLO kept in reserve
  int64_t max_seq = 1;         // deadline: largest shape the stream can send (for the next arrival)
  bool group_shapes = true;    // deadline: batch requests of similar shape out of FIFO order
};

/// Service time in microseconds of a batch of `batch` requests padded to `seq`.
using ServiceFn = std::function<double(int64_t seq, int batch)>;

struct BatchDecision {
  int n = 0;  // requests to dispatch now (0: wait)
  // Queue positions of the n requests, ascending; empty: the n at the front.
  std::vector<int> idx;
  double wake_us = std::numeric_limits<double>::infinity();  // when n == 0: decide again then
  // deadline, n > 0: the batch's slack, its members' earliest deadline (less
  // the margin) minus its predicted completion (negative on a fallback).
  double slack_us = 0;
  bool fallback = false;  // deadline: no batch meets its deadlines; the oldest goes alone
};

/// none: one request. fixed (Triton's dynamic batcher): max_batch when that
/// many wait, else everything once the oldest has waited max_delay. deadline:
/// candidate batches are, for each padding level v (a sequence length in the
/// queue), the oldest 1..max_batch requests of length <= v (with
/// group_shapes off: only the queue's front, padded to its longest). A
/// candidate is feasible when its predicted completion (now + measured
/// service time of the padded batch) meets every member's deadline less the
/// margin, and, if it skips an older request, that request can still meet its
/// own deadline when it runs right after. Of the feasible candidates, the one
/// with the highest throughput, measured as batching efficiency (the members'
/// one-by-one service times over the padded batch's); ties go to the one with
/// the oldest member. When the whole queue is the batch, it waits for one more
/// request while that batch would still meet the deadlines and be more
/// efficient. When nothing is feasible (fallback), the most efficient batch of
/// the oldest request's length goes. With `idle_cores` > 1 free cores able to
/// serve the stream, batches are at most ceil(queue / idle_cores) and it never
/// waits: holding requests while cores idle only adds latency.
BatchDecision decide_batch(const BatchParams& p, const std::deque<QueuedReq>& q, double now_us,
                           const ServiceFn& service, int idle_cores = 1);

const char* batching_name(Batching b);
bool parse_batching(const std::string& s, Batching& out);

}  // namespace loom::serve
