// The serving simulator's cores and the batches on them, with contention on
// the memory ports modelled as progress rates (port_model.h).
#include "serve/port_model.h"

#include <algorithm>

namespace loom::serve::detail {

PortModel::PortModel(const Workload& w, const std::vector<int>& active, const spec::HwConfig& cfg, ServiceModel& sm,
                     EventQueue& ev, Status& err)
    : w_(w),
      active_(active),
      cfg_(cfg),
      sm_(sm),
      ev_(ev),
      err_(err),
      cores_(int(cfg.cores)),
      ports_(int(std::max(1u, cfg.mem_ports))),
      busy_(size_t(cores_), false),
      port_busy_(size_t(ports_), 0),
      run_(size_t(cores_)),
      lead_of_(size_t(cores_), -1),
      gen_(size_t(cores_), 0) {}

RunningBatch& PortModel::occupy(RunningBatch b) {
  const int lead = b.gang.front();
  RunningBatch& r = run_[size_t(lead)];
  r = std::move(b);
  for (int c : r.gang) {
    busy_[size_t(c)] = true;
    lead_of_[size_t(c)] = lead;
    ++port_busy_[size_t(port_of(c))];
  }
  return r;
}

void PortModel::release(int core) {
  busy_[size_t(core)] = false;
  lead_of_[size_t(core)] = -1;
  --port_busy_[size_t(port_of(core))];
}

void PortModel::repace_ports_of(int lead, double now) {
  const RunningBatch& r = run_[size_t(lead)];
  for (int q = 0; q < ports_; ++q)
    if (on_port(r, q)) repace(q, now);
}

bool PortModel::on_port(const RunningBatch& r, int port) const {
  return std::any_of(r.gang.begin(), r.gang.end(), [&](int c) { return port_of(c) == port; });
}

double PortModel::stretch(int lead) {
  const RunningBatch& r = run_[size_t(lead)];
  std::vector<BatchShape> with;
  int others = 0;
  for (int c = 0; c < cores_; ++c) {
    if (!busy_[size_t(c)] || lead_of_[size_t(c)] == lead || !on_port(r, port_of(c))) continue;
    ++others;
    const RunningBatch& o = run_[size_t(lead_of_[size_t(c)])];
    if (o.gang.size() == 1) with.push_back({&w_.streams[size_t(active_[o.si])].model, o.seq, o.n});
  }
  if (others == 0) return 1.0;
  if (w_.port_contention >= 0) return 1.0 + w_.port_contention * double(others);
  if (r.gang.size() > 1 || with.empty()) return 1.0;
  sm_.set_now(r.start);  // the mapping the batch was dispatched under
  auto s = sm_.stretch({&w_.streams[size_t(active_[r.si])].model, r.seq, r.n}, with);
  if (!s) {
    keep_first(err_, s.error());
    return 1.0;
  }
  return *s;
}

void PortModel::repace(int port, double now) {
  for (int c = 0; c < cores_; ++c) {
    if (!busy_[size_t(c)] || lead_of_[size_t(c)] != c || !on_port(run_[size_t(c)], port)) continue;
    RunningBatch& r = run_[size_t(c)];
    if (now > r.last) r.remaining = std::max(0.0, r.remaining - (now - r.last) / r.rate);
    r.last = now;
    r.rate = stretch(c);
    ev_.push(now + r.remaining * r.rate, SimEvent::kDone, c, ++gen_[size_t(c)]);
  }
  sm_.set_now(now);
}

}  // namespace loom::serve::detail
