// The serving simulator's event queue: events in time order, ties broken by
// the order they were pushed in, so a run is deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace loom::serve::detail {

struct SimEvent {
  enum Kind : int {
    kDone = 0,       // a batch's finish on its lead core (idx), valid for one batch generation
    kArrival = 1,    // a request (idx) arrives
    kWake = 2,       // a stream (idx) decides again
    kInService = 3,  // live: a core (idx) is back in service after a failure
  };
  double t;
  int64_t order;
  int kind;
  int idx;
  int64_t gen = 0;  // done: the core's batch generation (a rescheduled finish makes older events stale)
  bool operator>(const SimEvent& o) const { return t != o.t ? t > o.t : order > o.order; }
};

/// Pending events, earliest first; events at the same time in push order.
class EventQueue {
 public:
  void push(double t, int kind, int idx, int64_t gen = 0) { q_.push({t, order_++, kind, idx, gen}); }
  bool empty() const { return q_.empty(); }
  const SimEvent& top() const { return q_.top(); }
  SimEvent pop() {
    const SimEvent e = q_.top();
    q_.pop();
    return e;
  }

 private:
  std::priority_queue<SimEvent, std::vector<SimEvent>, std::greater<SimEvent>> q_;
  int64_t order_ = 0;
};

}  // namespace loom::serve::detail
