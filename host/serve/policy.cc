#include "serve/policy.h"

#include <algorithm>
#include <cmath>

namespace loom::serve {

namespace {
// Deadline batching looks at the oldest kWindow requests of a queue.
constexpr int kWindow = 256;
// Waiting for one more request stops this many batch times before the
// batch's latest start, so a core freed a little late still meets it.
constexpr double kWaitGuard = 2.0;
}  // namespace

const char* batching_name(Batching b) {
  switch (b) {
    case Batching::None:
      return "none";
    case Batching::Fixed:
      return "fixed";
    case Batching::Deadline:
      return "deadline";
  }
  return "?";
}

bool parse_batching(const std::string& s, Batching& out) {
  if (s == "none")
    out = Batching::None;
  else if (s == "fixed")
    out = Batching::Fixed;
  else if (s == "deadline")
    out = Batching::Deadline;
  else
    return false;
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
      const int window = std::min(qn, kWindow);
      auto dl = [&](const QueuedReq& r) {
        return r.arrival_us + (r.deadline_us - r.arrival_us) * (1.0 - p.slack_margin);
      };
      // Padding levels: the distinct lengths in the window (ascending), or
      // only the longest one (FIFO front, no grouping).
      int64_t levels[kWindow];
      int nl = 0;
      int64_t longest = 0;
      for (int k = 0; k < window; ++k) longest = std::max(longest, q[size_t(k)].seq);
      if (p.group_shapes) {
        for (int k = 0; k < window; ++k) {
          const int64_t s = q[size_t(k)].seq;
          int at = 0;
          while (at < nl && levels[at] < s) ++at;
          if (at < nl && levels[at] == s) continue;
          for (int m = nl; m > at; --m) levels[m] = levels[m - 1];
          levels[at] = s;
          ++nl;
        }
      } else {
        levels[nl++] = longest;
      }
      struct Best {
        int level = -1, n = 0, first = 0;
        double eff = -1, s = 0, solo = 0, min_dl = 0;
        int64_t seq = 0;
        bool whole = false;                                     // the batch is the whole queue
        double skip = std::numeric_limits<double>::infinity();  // latest start of the oldest skipped request
      } best, fb;
      const int64_t head_seq = q.front().seq;
      for (int l = 0; l < nl; ++l) {
        const int64_t v = p.group_shapes ? levels[l] : std::numeric_limits<int64_t>::max();
        double solo = 0, min_dl = std::numeric_limits<double>::infinity();
        int64_t seq = 0;
        int n = 0, first = -1;
        double skip_dl = std::numeric_limits<double>::infinity();  // latest start of the oldest skipped request
        for (int k = 0; k < window && n < lim; ++k) {
          const QueuedReq& r = q[size_t(k)];
          if (r.seq > v) {
            if (!std::isfinite(skip_dl)) {
              const double latest = dl(r) - service(r.seq, 1);
              // A request that cannot meet its deadline anyway does not hold others back.
              skip_dl = latest >= now ? latest : -std::numeric_limits<double>::infinity();
            }
            continue;
          }
          if (first < 0) first = k;
          ++n;
          seq = std::max(seq, r.seq);
          solo += service(r.seq, 1);
          min_dl = std::min(min_dl, dl(r));
          const double s = service(seq, n);
          const double eff = solo / s;
          const bool whole = n == qn;
          // Fallback candidate: the oldest request's own length, deadlines ignored.
          if (v == head_seq || !p.group_shapes)
            if (eff > fb.eff * (1.0 + 1e-9)) fb = {l, n, first, eff, s, solo, min_dl, seq, whole, skip_dl};
          if (now + s > min_dl) continue;
          if (std::isfinite(skip_dl) && now + s > skip_dl) continue;
          const bool better =
              eff > best.eff * (1.0 + 1e-9) ||
              (eff > best.eff * (1.0 - 1e-9) && (first < best.first || (first == best.first && n > best.n)));
          if (better) best = {l, n, first, eff, s, solo, min_dl, seq, whole, skip_dl};
        }
      }
      const bool fallback = best.n == 0;
      const Best& b = fallback ? fb : best;
      if (!fallback && b.whole && qn < p.max_batch && idle_cores <= 1) {
        // Would one more request raise the efficiency, and can the batch wait
        // for it? Grouped: assume it has the batch's length (a longer one
        // forms its own group); otherwise the stream's longest.
        const int64_t s_long = p.group_shapes ? b.seq : std::max(b.seq, p.max_seq);
        const double s_next = service(s_long, b.n + 1);
        const double latest = b.min_dl - kWaitGuard * s_next;
        if (now < latest && (b.solo + service(s_long, 1)) / s_next > b.eff * (1.0 + 1e-9)) {
          d.wake_us = latest;
          return d;
        }
      }
      d.n = b.n;
      d.fallback = fallback;
      d.slack_us = std::min(b.min_dl, std::isfinite(b.skip) ? b.skip : b.min_dl) - (now + b.s);
      // The members: the first n requests of length <= the level, from the front.
      const int64_t v = p.group_shapes ? levels[b.level] : std::numeric_limits<int64_t>::max();
      if (b.n < qn) {
        bool prefix = true;
        for (int k = 0, m = 0; k < window && m < b.n; ++k) {
          if (q[size_t(k)].seq > v) {
            prefix = false;
            continue;
          }
          d.idx.push_back(k);
          ++m;
        }
        if (prefix) d.idx.clear();
      }
      return d;
    }
  }
  return d;
}

}  // namespace loom::serve
