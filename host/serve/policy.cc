#include "serve/policy.h"

#include <algorithm>

namespace loom::serve {

const char* batching_name(Batching b) {
  switch (b) {
    case Batching::None: return "none";
    case Batching::Fixed: return "fixed";
    case Batching::Deadline: return "deadline";
  }
  return "?";
}

bool parse_batching(const std::string& s, Batching& out) {
  if (s == "none") out = Batching::None;
  else if (s == "fixed") out = Batching::Fixed;
  else if (s == "deadline") out = Batching::Deadline;
  else return false;
  return true;
}

BatchDecision decide_batch(const BatchParams& p, const std::deque<QueuedReq>& q, double now, const ServiceFn& service,
                           int idle_cores) {
  BatchDecision d;
  if (q.empty()) return d;
  const int qn = int(q.size());
  switch (p.policy) {
    case Batching::None:
      d.n = 1;
      return d;
    case Batching::Fixed:
      if (qn >= p.max_batch) {
        d.n = p.max_batch;
      } else if (now >= q.front().arrival_us + p.max_delay_us) {
        d.n = qn;
      } else {
        d.wake_us = q.front().arrival_us + p.max_delay_us;
      }
      return d;
    case Batching::Deadline: {
      int lim = std::min(qn, p.max_batch);
      if (idle_cores > 1) lim = std::min(lim, (qn + idle_cores - 1) / idle_cores);
      // Throughput as batching efficiency: the time the members would take
      // one by one over the time of the padded batch (1 for a single request).
      int best = 0;
      double best_eff = -1, min_dl = std::numeric_limits<double>::infinity(), solo = 0;
      int64_t seq = 0;
      for (int n = 1; n <= lim; ++n) {
        const QueuedReq& r = q[size_t(n - 1)];
        seq = std::max(seq, r.seq);
        solo += service(r.seq, 1);
        min_dl = std::min(min_dl, r.arrival_us + (r.deadline_us - r.arrival_us) * (1.0 - p.slack_margin));
        const double s = service(seq, n);
        if (now + s > min_dl) continue;
        const double eff = solo / s;
        if (eff > best_eff * (1.0 + 1e-9)) best = n, best_eff = eff;
      }
      if (best == 0) {
        d.n = 1;
        d.fallback = true;
        return d;
      }
      if (best == lim && lim == qn && qn < p.max_batch && idle_cores <= 1) {
        // Would one more request (assumed of the longest shape) raise the
        // efficiency, and can the batch wait for it?
        const int64_t s_long = std::max(seq, p.max_seq);
        const double s_next = service(s_long, qn + 1);
        const double latest = min_dl - s_next;
        if (now < latest && (solo + service(p.max_seq, 1)) / s_next > best_eff * (1.0 + 1e-9)) {
          d.wake_us = latest;
          return d;
        }
      }
      d.n = best;
      return d;
    }
  }
  return d;
}

}  // namespace loom::serve
