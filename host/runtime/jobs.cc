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
  for (const auto& [p, im] : slots_[core].images) {
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

CoreJobs::~CoreJobs() {
  uint32_t mask = 0;
  for (uint32_t c = 0; c < slots_.size(); ++c)
    if (slots_[c].job) mask |= 1u << c;
  if (mask) dev_.write_reg(spec::reg::SOFT_RESET, mask);
  for (auto& s : slots_) {
    s.job.reset();
    for (auto& [p, im] : s.images) dev_.free(im->base), dev_.free(im->ring);
  }
}

size_t CoreJobs::running() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.job != nullptr;
  return n;
}

void CoreJobs::drop_images() {
  for (auto& s : slots_)
    for (auto it = s.images.begin(); it != s.images.end();) {
      if (s.job && s.job->image == it->second.get()) {
        ++it;
        continue;
      }
      dev_.free(it->second->base);
      dev_.free(it->second->ring);
      it = s.images.erase(it);
    }
}

Expected<CoreJobs::Image*> CoreJobs::image(uint32_t core, const plan::Plan& p) {
  auto& imgs = slots_[core].images;
  if (auto it = imgs.find(&p); it != imgs.end()) return it->second.get();
  const auto& cfg = dev_.config();
  auto im = std::make_unique<Image>();
  im->plan = &p;
  // Semaphores: core c's jobs use ids [c x per_core, (c + 1) x per_core).
  const uint64_t sems = p.semaphores_used ? max_semaphore(p.cores[0]) + 1 : 0;
  if (sems > sems_per_core_)
    return make_error("plan '" + p.graph_name + "'",
                      "uses " + std::to_string(sems) + " semaphores; jobs side by side on " +
                          std::to_string(cfg.cores) + " cores get " + std::to_string(sems_per_core_) + " each");
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
  im->stream = renumber_semaphores(relocate(p.cores[0], im->base), uint64_t(core) * sems_per_core_);
  im->ring_size = ring_entries_for(im->stream.size(), cfg.ring_depth);
  auto ring = alloc(uint64_t(im->ring_size) * spec::kInsnBytes);
  if (!ring) return dev_.free(im->base), ring.error();
  im->ring = *ring;
  if (!p.constants.empty())
    if (Status s = dev_.write(im->base + p.constants_offset, p.constants); !s)
      return dev_.free(im->base), dev_.free(im->ring), s.error();
  Image* raw = im.get();
  imgs[&p] = std::move(im);
  return raw;
}

Status CoreJobs::start(uint32_t core, const plan::Plan& p, const std::map<std::string, Tensor>& inputs, uint64_t id) {
  const auto& cfg = dev_.config();
  const std::string where = std::string(dev_.backend()) + ": core " + std::to_string(core);
  if (core >= slots_.size()) return make_error(where, "no such core");
  if (slots_[core].job) return make_error(where, "busy with job " + std::to_string(slots_[core].job->id));
  if (p.cores.size() != 1 || !p.tasks.empty() || !p.unit_calls.empty())
    return make_error("plan '" + p.graph_name + "'", "a job is one core stream (no tasks or HLS unit calls)");
  if (p.config != cfg.name)
    return make_error("plan '" + p.graph_name + "'", "compiled for configuration '" + p.config +
                                                         "' but the device is '" + std::string(cfg.name) + "'");
  auto im = image(core, p);
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
  dev_.write_reg(spec::reg::SOFT_RESET, 1u << core);
  if (sems_per_core_ > 0) {
    const uint32_t range = sems_per_core_ >= 32 ? ~0u : (1u << sems_per_core_) - 1;
    dev_.write_reg(spec::reg::SEM_CLEAR, range << (core * sems_per_core_));
  }
  dev_.write_reg(spec::reg::IRQ_STATUS, spec::reg::IRQ_STATUS_DONE(core) | spec::reg::IRQ_STATUS_ERROR(core));
  write_reg64(dev_, core_reg_addr(core, creg::RING_BASE_LO), core_reg_addr(core, creg::RING_BASE_HI), I.ring);
  dev_.write_reg(core_reg_addr(core, creg::RING_SIZE), I.ring_size);
  write_reg64(dev_, core_reg_addr(core, creg::WIN_BASE_LO), core_reg_addr(core, creg::WIN_BASE_HI), I.base);
  write_reg64(dev_, core_reg_addr(core, creg::WIN_LIMIT_LO), core_reg_addr(core, creg::WIN_LIMIT_HI),
              I.base + p.memory_bytes);
  dev_.write_reg(core_reg_addr(core, creg::CTR_CLEAR), 1);
  auto job = std::make_unique<Job>();
  job->id = id;
  job->plan = &p;
  job->image = &I;
  job->tail = dev_.read_reg(core_reg_addr(core, creg::RING_HEAD));
  job->start = dev_.cycles();
  slots_[core].job = std::move(job);
  LOOM_TRY(refill(core));
  slots_[core].job->starved = slots_[core].job->written < I.stream.size();
  return Status::ok();
}

Status CoreJobs::refill(uint32_t c) {
  Job& j = *slots_[c].job;
  const Image& I = *j.image;
  const uint32_t head = dev_.read_reg(core_reg_addr(c, creg::RING_HEAD));
  const uint32_t used = (j.tail - head) & (I.ring_size - 1);
  uint64_t n = std::min<uint64_t>(I.ring_size - 1 - used, I.stream.size() - j.written);
  bool wrote = false;
  while (n > 0) {
    const uint64_t chunk = std::min<uint64_t>(n, I.ring_size - j.tail);
    LOOM_TRY(
        dev_.write(I.ring + uint64_t(j.tail) * spec::kInsnBytes,
                   {reinterpret_cast<const uint8_t*>(I.stream.data() + j.written), size_t(chunk * spec::kInsnBytes)}));
    j.written += chunk;
    j.tail = uint32_t((j.tail + chunk) & (I.ring_size - 1));
    n -= chunk;
    wrote = true;
  }
  if (wrote) {
    dev_.write_reg(core_reg_addr(c, creg::RING_TAIL), j.tail);
    dev_.write_reg(core_reg_addr(c, creg::DOORBELL), 1);
  }
  return Status::ok();
}

JobEnd CoreJobs::finish(uint32_t c, bool error) {
  Job& j = *slots_[c].job;
  JobEnd e;
  e.core = c;
  e.id = j.id;
  e.start_cycles = j.start;
  for (unsigned k = 0; k < spec::kNumCounters; ++k) {
    const uint32_t off = core_reg_addr(c, spec::counter_offset(spec::Counter(k)));
    e.counters[k] = dev_.read_reg(off) | (uint64_t(dev_.read_reg(off + 4)) << 32);
  }
  // The end: what the host saw, or the core's busy cycles from the doorbell
  // when its whole stream was in the ring from the start (exact on every
  // timed backend, where a loosely timed model may signal a little early).
  e.end_cycles = dev_.cycles();
  if (!j.starved) e.end_cycles = std::max(e.end_cycles, j.start + e.counters[size_t(spec::Counter::CYCLES_BUSY)]);
  if (error) {
    const uint32_t cause = dev_.read_reg(core_reg_addr(c, creg::ERR_CAUSE));
    const uint32_t pc = dev_.read_reg(core_reg_addr(c, creg::ERR_PC));
    const Image& I = *j.image;
    e.err_cause = cause;
    e.status = make_error(
        std::string(dev_.backend()) + ": core " + std::to_string(c),
        describe_device_error(cause, pc, j.written, I.ring_size, I.stream) + " of plan '" + j.plan->graph_name + "'");
    dev_.write_reg(spec::reg::SOFT_RESET, 1u << c);
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
  dev_.write_reg(spec::reg::IRQ_STATUS, spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c));
  slots_[c].job.reset();
  return e;
}

JobEnd CoreJobs::abort(uint32_t c, const std::string& why) {
  JobEnd e;
  e.core = c;
  if (!busy(c)) {
    e.status = make_error(std::string(dev_.backend()) + ": core " + std::to_string(c), "no job to abort");
    return e;
  }
  dev_.write_reg(spec::reg::SOFT_RESET, 1u << c);
  e.id = slots_[c].job->id;
  e.start_cycles = slots_[c].job->start;
  e.end_cycles = dev_.cycles();
  e.status = make_error(std::string(dev_.backend()) + ": core " + std::to_string(c), why);
  dev_.write_reg(spec::reg::IRQ_STATUS, spec::reg::IRQ_STATUS_DONE(c) | spec::reg::IRQ_STATUS_ERROR(c));
  slots_[c].job.reset();
  return e;
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
    for (uint32_t c = 0; c < slots_.size(); ++c)
      if (slots_[c].job && slots_[c].job->written < slots_[c].job->image->stream.size()) partial = true;
    const bool irq = opt_.completion == Completion::Interrupt;
    // At most 2^32 cycles per look (a core that never ends is the caller's
    // timeout to catch, not a jump to the end of simulated time).
    uint64_t step = std::min<uint64_t>(left, uint64_t(1) << 32);
    if (timed && (!irq || partial)) step = std::min<uint64_t>(step, std::max<uint64_t>(opt_.poll_cycles, 1));
    auto ran = dev_.run_for(step, irq);
    if (!ran) return ran.error();
    left -= std::min(left, *ran);
    // Who ended: the interrupt status (done or error per core), read once,
    // or every busy core's STATUS when polling.
    const uint32_t irqs = dev_.read_reg(spec::reg::IRQ_STATUS);
    for (uint32_t c = 0; c < slots_.size(); ++c) {
      if (!slots_[c].job) continue;
      bool done = irq && (irqs & spec::reg::IRQ_STATUS_DONE(c));
      bool error = irq && (irqs & spec::reg::IRQ_STATUS_ERROR(c));
      if (!done && !error) {
        // Polling, or an end the interrupt did not tell (a masked or lost
        // line), or a core that went idle without an end (reset under it).
        const uint32_t st = dev_.read_reg(core_reg_addr(c, creg::STATUS));
        done = st & creg::STATUS_DONE_MASK;
        error = st & creg::STATUS_ERROR_MASK;
        const Job& j = *slots_[c].job;
        if (!done && !error && !(st & creg::STATUS_BUSY_MASK) && j.written == j.image->stream.size()) {
          JobEnd e = abort(c, "the core went idle without finishing its job (reset while it ran?)");
          ended.push_back(std::move(e));
          continue;
        }
      }
      if (error) {
        ended.push_back(finish(c, true));
      } else if (done && slots_[c].job->written == slots_[c].job->image->stream.size()) {
        ended.push_back(finish(c, false));
      } else if (slots_[c].job->written < slots_[c].job->image->stream.size()) {
        LOOM_TRY(refill(c));
      }
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
