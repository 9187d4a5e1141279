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

BatchDecision decide_batch(const BatchParams& p, const std::deque<QueuedReq>& q, double now, const ServiceFn& service) {
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
      const int lim = std::min(qn, p.max_batch);
      int best = 0;
      double best_tput = -1, best_svc = 0, min_dl = std::numeric_limits<double>::infinity();
      int64_t seq = 0;
      for (int n = 1; n <= lim; ++n) {
        const QueuedReq& r = q[size_t(n - 1)];
        seq = std::max(seq, r.seq);
        min_dl = std::min(min_dl, r.arrival_us + (r.deadline_us - r.arrival_us) * (1.0 - p.slack_margin));
        const double s = service(seq, n);
        if (now + s > min_dl) continue;
        const double tput = double(n) / s;
        if (tput >= best_tput) best = n, best_tput = tput, best_svc = s;
      }
      if (best == 0) {
        d.n = 1;
        d.fallback = true;
        return d;
      }
      if (best == qn && qn < p.max_batch) {
        // Would one more request raise throughput, and can the batch wait for it?
        const double s_next = service(std::max(seq, p.max_seq), qn + 1);
        const double latest = min_dl - s_next;
        if (now < latest && double(qn + 1) / s_next > best_tput) {
          d.wake_us = latest;
          return d;
        }
      }
      (void)best_svc;
      d.n = best;
      return d;
    }
  }
  return d;
}

}  // namespace loom::serve
