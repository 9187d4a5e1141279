#include "runtime/jobs.h"

#include <algorithm>

#include "runtime/dispatch.h"
#include "runtime/executor.h"

namespace loom::runtime {
namespace {

using spec::core_reg_addr;
namespace creg = spec::core_reg;

}  // namespace

CoreJobs::CoreJobs(Device& dev, JobOptions opt) : dev_(dev), opt_(opt), slots_(dev.config().cores) {
  const auto& cfg = dev.config();
  sems_per_core_ = cfg.cores ? cfg.semaphores / cfg.cores : 0;
  uint32_t mask = 0;
  for (unsigned c = 0; c < cfg.cores; ++c) mask |= 1u << c;
  dev_.write_reg(spec::reg::SOFT_RESET, mask);
  dev_.write_reg(spec::reg::SEM_CLEAR, 0xFFFFFFFFu);
  dev_.write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
  write_irq_enable();
  dev_.write_reg(spec::reg::WATCHDOG, opt_.watchdog_cycles);
}

void CoreJobs::write_irq_enable() {
  uint32_t mask = 0;
  for (uint32_t c = 0; c < slots_.size(); ++c)
    if (!(irq_masked_ & (1u << c))) mask |= 1u << c;
  dev_.write_reg(spec::reg::IRQ_ENABLE,
                 (mask << spec::reg::IRQ_ENABLE_DONE_SHIFT) | (mask << spec::reg::IRQ_ENABLE_ERROR_SHIFT));
}

void CoreJobs::mask_irq(uint32_t core, bool masked) {
  if (core >= slots_.size()) return;
  irq_masked_ = masked ? irq_masked_ | (1u << core) : irq_masked_ & ~(1u << core);
  write_irq_enable();
}

std::vector<std::pair<uint64_t, uint64_t>> CoreJobs::regions(uint32_t core, Region which) const {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  if (core >= slots_.size()) return v;
  for (const auto& [key, im] : images_) {
    if (std::find(im->cores.begin(), im->cores.end(), core) == im->cores.end()) continue;
    const plan::Plan* p = im->plan;
    if (which == Region::Constants) {
      if (!p->constants.empty()) v.emplace_back(im->base + p->constants_offset, p->constants.size());
    } else {
      for (const auto& b : p->outputs) {
        uint64_t n = dtype_size(b.dtype);
        for (int64_t d : b.shape) n *= uint64_t(std::max<int64_t>(d, 1));
        v.emplace_back(im->base + b.offset, n);
      }
    }
  }
  return v;
}

uint32_t CoreJobs::Job::mask() const {
  uint32_t m = 0;
  for (const auto& x : members) m |= 1u << x.core;
  return m;
}

bool CoreJobs::Job::written() const {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].written < image->rings[i].stream.size()) return false;
  return true;
}

namespace {

template <class Rings>
void free_image(Device& dev, uint64_t base, const Rings& rings) {
  dev.free(base);
  for (const auto& r : rings) dev.free(r.addr);
}

}  // namespace

CoreJobs::~CoreJobs() {
  uint32_t mask = 0;
  for (uint32_t c = 0; c < slots_.size(); ++c)
    if (slots_[c].job) mask |= 1u << c;
  if (mask) dev_.write_reg(spec::reg::SOFT_RESET, mask);
  for (auto& s : slots_) s.job.reset();
  for (auto& [key, im] : images_) free_image(dev_, im->base, im->rings);
}

size_t CoreJobs::running() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.job != nullptr && s.member == 0;
  return n;
}

void CoreJobs::drop_images() {
  for (auto it = images_.begin(); it != images_.end();) {
    bool used = false;
    for (const auto& s : slots_) used = used || (s.job && s.job->image == it->second.get());
    if (used) {
      ++it;
      continue;
    }
    free_image(dev_, it->second->base, it->second->rings);
    it = images_.erase(it);
  }
}

Expected<CoreJobs::Image*> CoreJobs::image(const std::vector<uint32_t>& cores, const plan::Plan& p) {
  ImageKey key{&p, cores};
  if (auto it = images_.find(key); it != images_.end()) return it->second.get();
  const auto& cfg = dev_.config();
  auto im = std::make_unique<Image>();
  im->plan = &p;
  im->cores = cores;
  // Semaphores: core c's jobs use ids [c x R, (c + 1) x R); a gang's plan
  // semaphore s is s mod R of its (s / R)-th core's range.
  const uint64_t R = sems_per_core_, k = cores.size();
  uint64_t sems = 0;
  if (p.semaphores_used)
    for (const auto& st : p.cores) sems = std::max(sems, max_semaphore(st) + 1);
  if (sems > R * k)
    return make_error("plan '" + p.graph_name + "'",
                      "uses " + std::to_string(sems) + " semaphores; jobs side by side on " +
                          std::to_string(cfg.cores) + " cores get " + std::to_string(R) + " per core (" +
                          std::to_string(R * k) + " for " + std::to_string(k) + (k == 1 ? " core)" : " cores)"));
  auto alloc = [&](uint64_t bytes) -> Expected<uint64_t> {
    auto a = dev_.alloc(bytes);
    if (!a) {  // memory pressure: free the images no job uses and try once more
      drop_images();
      a = dev_.alloc(bytes);
    }
    return a;
  };
  auto base = alloc(std::max<uint64_t>(p.memory_bytes, 1));
  if (!base) return base.error();
  im->base = *base;
  const auto sem_of = [&](uint64_t s) { return R ? uint64_t(cores[size_t(s / R)]) * R + s % R : s; };
  for (size_t i = 0; i < k; ++i) {
    Ring r;
    r.stream = renumber_semaphores(relocate(p.cores[i], im->base), sem_of);
    r.size = ring_entries_for(r.stream.size(), cfg.ring_depth);
    auto ring = alloc(uint64_t(r.size) * spec::kInsnBytes);
    if (!ring) return free_image(dev_, im->base, im->rings), ring.error();
    r.addr = *ring;
    im->rings.push_back(std::move(r));
  }
  if (!p.constants.empty())
    if (Status s = dev_.write(im->base + p.constants_offset, p.constants); !s)
      return free_image(dev_, im->base, im->rings), s.error();
  Image* raw = im.get();
  images_[std::move(key)] = std::move(im);
  return raw;
}

Status CoreJobs::start(const std::vector<uint32_t>& cores, const plan::Plan& p,
                       const std::map<std::string, Tensor>& inputs, uint64_t id) {
  const auto& cfg = dev_.config();
  std::string names;
  for (uint32_t c : cores) {
    if (!names.empty()) names.push_back(',');
    names.append(std::to_string(c));
  }
  const std::string where = std::string(dev_.backend()) + (cores.size() == 1 ? ": core " : ": cores ") + names;
  if (cores.empty()) return make_error(where, "no core given");
  for (size_t i = 0; i < cores.size(); ++i) {
    if (cores[i] >= slots_.size()) return make_error(where, "no such core " + std::to_string(cores[i]));
    if (slots_[cores[i]].job)
      return make_error(
          where, "core " + std::to_string(cores[i]) + " busy with job " + std::to_string(slots_[cores[i]].job->id));
    if (std::count(cores.begin(), cores.end(), cores[i]) > 1)
      return make_error(where, "core " + std::to_string(cores[i]) + " given twice");
  }
  if (p.cores.size() != cores.size() || !p.tasks.empty() || !p.unit_calls.empty())
    return make_error("plan '" + p.graph_name + "'",
                      "a job is one core stream per core it runs on (" + std::to_string(cores.size()) +
                          " here; no tasks or HLS unit calls), the plan has " + std::to_string(p.cores.size()) +
                          (p.tasks.empty() ? "" : " and tile tasks") + (p.unit_calls.empty() ? "" : " and unit calls"));
  if (p.config != cfg.name)
    return make_error("plan '" + p.graph_name + "'", "compiled for configuration '" + p.config +
                                                         "' but the device is '" + std::string(cfg.name) + "'");
  auto im = image(cores, p);
  if (!im) return im.error();
  Image& I = **im;
  for (const auto& b : p.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) return make_error("input '" + b.name + "'", "missing");
    const Tensor& t = it->second;
    if (t.dtype != b.dtype || t.shape != b.shape)
      return make_error("input '" + b.name + "'", "expected " + std::string(dtype_name(b.dtype)) + " " +
                                                      shape_str(b.shape) + ", got " + std::string(dtype_name(t.dtype)) +
                                                      " " + shape_str(t.shape));
    LOOM_TRY(dev_.write(I.base + b.offset, t.data));
  }
  auto job = std::make_shared<Job>();
  job->id = id;
  job->plan = &p;
  job->image = &I;
  for (uint32_t c : cores) job->members.push_back({c});
  const uint32_t mask = job->mask();
  dev_.write_reg(spec::reg::SOFT_RESET, mask);
  if (sems_per_core_ > 0) {
    const uint32_t range = sems_per_core_ >= 32 ? ~0u : (1u << sems_per_core_) - 1;
    for (uint32_t c : cores) dev_.write_reg(spec::reg::SEM_CLEAR, range << (c * sems_per_core_));
  }
  uint32_t irq_bits = 0;
  for (uint32_t c : cores) irq_bits |= spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c);
  dev_.write_reg(spec::reg::IRQ_STATUS, irq_bits);
  for (size_t i = 0; i < cores.size(); ++i) {
    const uint32_t c = cores[i];
    const Ring& r = I.rings[i];
    write_reg64(dev_, core_reg_addr(c, creg::RING_BASE_LO), core_reg_addr(c, creg::RING_BASE_HI), r.addr);
    dev_.write_reg(core_reg_addr(c, creg::RING_SIZE), r.size);
    write_reg64(dev_, core_reg_addr(c, creg::WIN_BASE_LO), core_reg_addr(c, creg::WIN_BASE_HI), I.base);
    write_reg64(dev_, core_reg_addr(c, creg::WIN_LIMIT_LO), core_reg_addr(c, creg::WIN_LIMIT_HI),
                I.base + p.memory_bytes);
    dev_.write_reg(core_reg_addr(c, creg::CTR_CLEAR), 1);
    job->members[i].tail = dev_.read_reg(core_reg_addr(c, creg::RING_HEAD));
  }
  job->start = dev_.cycles();
  for (size_t i = 0; i < cores.size(); ++i) slots_[cores[i]] = Slot{job, i};
  for (size_t i = 0; i < cores.size(); ++i) {
    LOOM_TRY(refill(*job, i));
    job->members[i].starved = job->members[i].written < I.rings[i].stream.size();
  }
  return Status::ok();
}

Status CoreJobs::refill(Job& j, size_t m) {
  Member& x = j.members[m];
  const uint32_t c = x.core;
  const Ring& r = j.image->rings[m];
  const uint32_t head = dev_.read_reg(core_reg_addr(c, creg::RING_HEAD));
  const uint32_t used = (x.tail - head) & (r.size - 1);
  uint64_t n = std::min<uint64_t>(r.size - 1 - used, r.stream.size() - x.written);
  bool wrote = false;
  while (n > 0) {
    const uint64_t chunk = std::min<uint64_t>(n, r.size - x.tail);
    LOOM_TRY(
        dev_.write(r.addr + uint64_t(x.tail) * spec::kInsnBytes,
                   {reinterpret_cast<const uint8_t*>(r.stream.data() + x.written), size_t(chunk * spec::kInsnBytes)}));
    x.written += chunk;
    x.tail = uint32_t((x.tail + chunk) & (r.size - 1));
    n -= chunk;
    wrote = true;
  }
  if (wrote) {
    dev_.write_reg(core_reg_addr(c, creg::RING_TAIL), x.tail);
    dev_.write_reg(core_reg_addr(c, creg::DOORBELL), 1);
  }
  return Status::ok();
}

void CoreJobs::release(Job& j) {
  uint32_t bits = 0;
  for (const auto& x : j.members) bits |= spec::reg::IRQ_STATUS_DONE(x.core) | spec::reg::IRQ_STATUS_ERROR(x.core);
  dev_.write_reg(spec::reg::IRQ_STATUS, bits);
  const std::shared_ptr<Job> keep = slots_[j.members[0].core].job;  // alive until every slot let go
  for (const auto& x : j.members) slots_[x.core] = Slot{};
}

JobEnd CoreJobs::finish(Job& j, int failed) {
  JobEnd e;
  e.core = j.members[0].core;
  for (const auto& x : j.members) e.cores.push_back(x.core);
  e.id = j.id;
  e.start_cycles = j.start;
  // The end: what the host saw, or the latest of the cores' busy cycles
  // from the doorbell when a core's whole stream was in the ring from the
  // start (exact on every timed backend, where a loosely timed model may
  // signal a little early).
  e.end_cycles = dev_.cycles();
  for (size_t m = 0; m < j.members.size(); ++m) {
    const uint32_t c = j.members[m].core;
    std::array<uint64_t, spec::kNumCounters> ctr{};
    for (unsigned k = 0; k < spec::kNumCounters; ++k) {
      const uint32_t off = core_reg_addr(c, spec::counter_offset(spec::Counter(k)));
      ctr[k] = dev_.read_reg(off) | (uint64_t(dev_.read_reg(off + 4)) << 32);
    }
    if (m == 0) e.counters = ctr;
    if (!j.members[m].starved) e.end_cycles = std::max(e.end_cycles, j.start + ctr[size_t(spec::Counter::CYCLES_BUSY)]);
  }
  if (failed >= 0) {
    const uint32_t c = j.members[size_t(failed)].core;
    const uint32_t cause = dev_.read_reg(core_reg_addr(c, creg::ERR_CAUSE));
    const uint32_t pc = dev_.read_reg(core_reg_addr(c, creg::ERR_PC));
    const Ring& r = j.image->rings[size_t(failed)];
    e.failed_core = c;
    e.err_cause = cause;
    e.status = make_error(std::string(dev_.backend()) + ": core " + std::to_string(c),
                          describe_device_error(cause, pc, j.members[size_t(failed)].written, r.size, r.stream) +
                              " of plan '" + j.plan->graph_name + "'");
    dev_.write_reg(spec::reg::SOFT_RESET, j.mask());
  } else {
    for (const auto& b : j.plan->outputs) {
      Tensor t(b.dtype, b.shape);
      if (Status s = dev_.read(j.image->base + b.offset, t.data); !s) {
        e.status = s;
        e.outputs.clear();
        break;
      }
      e.outputs.emplace_back(b.name, std::move(t));
    }
  }
  release(j);
  return e;
}

JobEnd CoreJobs::abort(uint32_t c, const std::string& why) {
  JobEnd e;
  e.core = c;
  e.failed_core = c;
  if (!busy(c)) {
    e.status = make_error(std::string(dev_.backend()) + ": core " + std::to_string(c), "no job to abort");
    return e;
  }
  const std::shared_ptr<Job> j = slots_[c].job;
  dev_.write_reg(spec::reg::SOFT_RESET, j->mask());
  e.core = j->members[0].core;
  for (const auto& x : j->members) e.cores.push_back(x.core);
  e.id = j->id;
  e.start_cycles = j->start;
  e.end_cycles = dev_.cycles();
  e.status = make_error(std::string(dev_.backend()) + ": core " + std::to_string(c), why);
  release(*j);
  return e;
}

Expected<std::optional<JobEnd>> CoreJobs::look(Job& j, bool irq, uint32_t irqs) {
  for (size_t m = 0; m < j.members.size(); ++m) {
    Member& x = j.members[m];
    if (x.done) continue;
    const uint32_t c = x.core;
    const size_t size = j.image->rings[m].stream.size();
    bool done = irq && (irqs & spec::reg::IRQ_STATUS_DONE(c));
    bool error = irq && (irqs & spec::reg::IRQ_STATUS_ERROR(c));
    if (!done && !error) {
      // Polling, or an end the interrupt did not tell (a masked or lost
      // line), or a core that went idle without an end (reset under it).
      const uint32_t st = dev_.read_reg(core_reg_addr(c, creg::STATUS));
      done = st & creg::STATUS_DONE_MASK;
      error = st & creg::STATUS_ERROR_MASK;
      if (!done && !error && !(st & creg::STATUS_BUSY_MASK) && x.written == size)
        return std::optional<JobEnd>(abort(c, "the core went idle without finishing its job (reset while it ran?)"));
    }
    if (error) return std::optional<JobEnd>(finish(j, int(m)));
    if (done && x.written == size) {
      // A gang's core that is done waits for the others, its interrupt
      // cleared so that the line can fall.
      x.done = true;
      dev_.write_reg(spec::reg::IRQ_STATUS, spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c));
    } else if (x.written < size) {
      LOOM_TRY(refill(j, m));
    }
  }
  for (const auto& x : j.members)
    if (!x.done) return std::optional<JobEnd>();
  return std::optional<JobEnd>(finish(j, -1));
}

Expected<std::vector<JobEnd>> CoreJobs::wait(uint64_t max_cycles) {
  std::vector<JobEnd> ended;
  uint64_t left = max_cycles;
  const bool timed = dev_.has_time();
  for (;;) {
    // Interrupt bits of cores without a job are stale (another user of the
    // device, an abort): cleared, or the line would stay high and no time pass.
    {
      uint32_t stale = 0;
      for (uint32_t c = 0; c < slots_.size(); ++c)
        if (!slots_[c].job) stale |= spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c);
      if (stale && (dev_.read_reg(spec::reg::IRQ_STATUS) & stale)) dev_.write_reg(spec::reg::IRQ_STATUS, stale);
    }
    bool partial = false;  // some ring still has to take more of its stream
    for (const auto& s : slots_)
      if (s.job && s.member == 0 && !s.job->written()) partial = true;
    const bool irq = opt_.completion == Completion::Interrupt;
    // At most 2^32 cycles per look (a core that never ends is the caller's
    // timeout to catch, not a jump to the end of simulated time).
    uint64_t step = std::min<uint64_t>(left, uint64_t(1) << 32);
    if (timed && (!irq || partial)) step = std::min<uint64_t>(step, std::max<uint64_t>(opt_.poll_cycles, 1));
    auto ran = dev_.run_for(step, irq);
    if (!ran) return ran.error();
    left -= std::min(left, *ran);
    // Who ended: the interrupt status (done or error per core), read once,
    // or every busy core's STATUS when polling. Each job once, by its lead.
    const uint32_t irqs = dev_.read_reg(spec::reg::IRQ_STATUS);
    for (uint32_t c = 0; c < slots_.size(); ++c) {
      if (!slots_[c].job || slots_[c].member != 0) continue;
      const std::shared_ptr<Job> j = slots_[c].job;
      auto e = look(*j, irq, irqs);
      if (!e) return e.error();
      if (*e) ended.push_back(std::move(**e));
    }
    if (!ended.empty() || left == 0 || !timed) break;
  }
  // The clock catches up with the latest end (see finish()).
  uint64_t latest = 0;
  for (const auto& e : ended) latest = std::max(latest, e.end_cycles);
  if (timed && latest > dev_.cycles()) {
    auto r = dev_.run_for(latest - dev_.cycles(), false);
    if (!r) return r.error();
  }
  return ended;
}

}  // namespace loom::runtime
