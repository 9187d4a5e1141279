// XrtDevice: the XRT call sequence of a loom host on a board (see xrt_device.h).
#include "backends/xrt/xrt_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "backends/xrt/hls_cus.h"
#include "backends/xrt/xrt_backends.h"
#include "loom_hls_units.h"

#ifndef LOOM_XRT_BACKEND
#error "LOOM_XRT_BACKEND names the backend (\"xrt\" or \"xrt-emu\")"
#endif

namespace loom::LOOM_XRT_NS {
namespace {

namespace cr = spec::core_reg;
constexpr const char* kBackend = LOOM_XRT_BACKEND;
constexpr uint64_t kMinAlign = 64;

const char* state_name(ert_cmd_state s) {
  switch (s) {
    case ERT_CMD_STATE_NEW:
      return "NEW";
    case ERT_CMD_STATE_QUEUED:
      return "QUEUED";
    case ERT_CMD_STATE_RUNNING:
      return "RUNNING";
    case ERT_CMD_STATE_COMPLETED:
      return "COMPLETED";
    case ERT_CMD_STATE_ERROR:
      return "ERROR";
    case ERT_CMD_STATE_ABORT:
      return "ABORT";
    case ERT_CMD_STATE_SUBMITTED:
      return "SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT:
      return "TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE:
      return "NORESPONSE";
    default:
      return "unknown";
  }
}

std::string default_xclbin(const spec::HwConfig& cfg) {
#ifdef LOOM_XRT_DEFAULT_XCLBIN
  std::string p = LOOM_XRT_DEFAULT_XCLBIN;
  const auto at = p.find("{config}");
  if (at != std::string::npos) p.replace(at, 8, std::string(cfg.name));
  return p;
#else
  (void)cfg;
  return "";
#endif
}

}  // namespace

Expected<XrtOptions> xrt_options(std::string_view backend, const runtime::DeviceOptions& d) {
  LOOM_TRY(d.allow(backend, {"xclbin", "device_index", "timeout_ms", "arena_mib"}));
  XrtOptions o;
  if (d.device_index) o.device_index = *d.device_index;
  o.xclbin = d.xclbin;
  if (d.timeout_ms) {
    if (*d.timeout_ms == 0) return make_error(d.label("timeout_ms"), "must be at least 1 ms");
    o.timeout_ms = *d.timeout_ms;
  }
  if (d.arena_mib) {
    if (*d.arena_mib == 0 || *d.arena_mib > 65536)
      return make_error(d.label("arena_mib"), "must be 1 to 65536 MiB, got " + std::to_string(*d.arena_mib));
    o.arena_bytes = *d.arena_mib << 20;
  }
  return o;
}

XrtDevice::XrtDevice(const spec::HwConfig& cfg, XrtOptions opt) : cfg_(cfg), opt_(std::move(opt)) {
  if (opt_.xclbin.empty()) opt_.xclbin = default_xclbin(cfg_);
}

XrtDevice::~XrtDevice() {
  // Runs and buffers go before the kernel handles and the device, as XRT
  // expects (a run still in flight is aborted first).
  for (auto& [h, r] : runs_) {
    try {
      if (r.run.state() == ERT_CMD_STATE_RUNNING || r.run.state() == ERT_CMD_STATE_QUEUED) r.run.abort();
    } catch (const std::exception&) {
      // Tearing down: nothing to report to.
    }
  }
  runs_.clear();
  cus_.clear();
  irq_.reset();
  arenas_.clear();
  ip_ = xrt::ip();
}

std::string_view XrtDevice::backend() const { return kBackend; }

Error XrtDevice::xrt_error(const std::string& what, const std::exception& e) const {
  return make_error(std::string(kBackend) + ": device " + std::to_string(opt_.device_index),
                    what + ": " + exception_text(e.what()));
}

Status XrtDevice::open_device() {
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  unsigned count = 0;
  try {
    count = xrt::system::enumerate_devices();
  } catch (const std::exception& e) {
    // No XRT runtime (driver, shim library or XILINX_XRT): no card can be open.
    return make_error(where, "no device; XRT says: " + exception_text(e.what()));
  }
  if (count == 0) return make_error(where, "no device");
  if (opt_.device_index >= count)
    return make_error(where, "no device with index " + std::to_string(opt_.device_index) + " (XRT sees " +
                                 std::to_string(count) + " card" + (count == 1 ? "" : "s") + ")");
  try {
    dev_ = xrt::device(opt_.device_index);
  } catch (const std::exception& e) {
    return xrt_error("opening the card", e);
  }
  return Status::ok();
}

Expected<std::string> XrtDevice::load_xclbin() {
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  if (opt_.xclbin.empty()) return make_error(where, "no xclbin given (--xclbin or LOOM_XCLBIN)");
  std::string ip_name;
  try {
    const xrt::xclbin xb(opt_.xclbin);
    // The RTL kernel's instance and the memory bank its AXI4 masters reach.
    bool found = false;
    runs_.clear();
    cus_.clear();
    hls_present_.clear();
    for (const auto& ip : xb.get_ips()) {
      const std::string name = ip.get_name();
      // HLS compute units: kernel "loom_hls_<kind>", instance named as the link names units.
      if (const auto colon = name.find(':'); colon != std::string::npos) {
        const std::string top = name.substr(0, colon), inst = name.substr(colon + 1);
        if (hls::find_kernel(top) != nullptr && xrt_cus::unit_of_instance(top, inst) >= 0)
          hls_present_.push_back(xrt_cus::cu_name(top, uint32_t(xrt_cus::unit_of_instance(top, inst))));
      }
    }
    for (const auto& ip : xb.get_ips()) {
      const std::string name = ip.get_name();
      if (name.rfind("loom_top", 0) != 0) continue;
      const auto colon = name.find(':');
      ip_name = colon == std::string::npos ? name : name.substr(0, colon) + ":{" + name.substr(colon + 1) + "}";
      for (const auto& arg : ip.get_args()) {
        const auto mems = arg.get_mems();
        if (!mems.empty()) {
          group_ = uint32_t(mems.front().get_index());
          break;
        }
      }
      found = true;
      break;
    }
    if (!found) return make_error(where + ": xclbin '" + opt_.xclbin + "'", "has no loom_top kernel");
    uuid_ = dev_.load_xclbin(xb);
    ip_ = xrt::ip(dev_, uuid_, ip_name);
    have_ip_ = true;
  } catch (const std::exception& e) {
    return xrt_error("loading xclbin '" + opt_.xclbin + "'", e);
  }
  arenas_.clear();
  return uuid_.to_string();
}

Status XrtDevice::check_identity() {
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  const uint32_t id = read_reg(spec::reg::ID);
  const uint32_t ver = read_reg(spec::reg::VERSION);
  const uint32_t hw = read_reg(spec::reg::HWCFG);
  if (!reg_error_.empty()) return make_error(where, reg_error_);
  if (id != spec::kIdValue)
    return make_error(where,
                      "ID register reads " + hex(id) + ", expected " + hex(spec::kIdValue) + ": not a loom kernel");
  if (spec::field_get(ver, spec::reg::VERSION_MAJOR_MASK) != spec::kVersionMajor)
    return make_error(where, "kernel spec version " +
                                 std::to_string(spec::field_get(ver, spec::reg::VERSION_MAJOR_MASK)) + "." +
                                 std::to_string(spec::field_get(ver, spec::reg::VERSION_MINOR_MASK)) +
                                 ", this loom speaks " + std::to_string(spec::kVersionMajor) + ".x");
  const uint32_t want = spec::hwcfg_value(cfg_);
  if (hw != want)
    return make_error(where, "HWCFG " + hex(hw) + " (cores " +
                                 std::to_string(spec::field_get(hw, spec::reg::HWCFG_CORES_MASK)) + ", array " +
                                 std::to_string(spec::field_get(hw, spec::reg::HWCFG_ARRAY_ROWS_MASK)) + "x" +
                                 std::to_string(spec::field_get(hw, spec::reg::HWCFG_ARRAY_COLS_MASK)) + ", ports " +
                                 std::to_string(spec::field_get(hw, spec::reg::HWCFG_MEM_PORTS_MASK)) +
                                 ") is not configuration '" + std::string(cfg_.name) + "'");
  return Status::ok();
}

Status XrtDevice::arm_interrupt() {
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  if (!have_ip_) return make_error(where, "interrupt: no xclbin loaded");
  try {
    irq_ = std::make_unique<xrt::ip::interrupt>(ip_.create_interrupt_notify());
    irq_->enable();
  } catch (const std::exception& e) {
    irq_.reset();
    return xrt_error("arming the kernel interrupt", e);
  }
  return Status::ok();
}

Expected<bool> XrtDevice::wait_interrupt(unsigned timeout_ms) {
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  if (!irq_) return make_error(where, "interrupt: not armed");
  try {
    const bool fired = irq_->wait(std::chrono::milliseconds(timeout_ms)) == std::cv_status::no_timeout;
    irq_->disable();
    irq_.reset();
    return fired;
  } catch (const std::exception& e) {
    irq_.reset();
    return xrt_error("waiting for the kernel interrupt", e);
  }
}

uint32_t XrtDevice::read_reg(uint32_t offset) {
  if (!have_ip_) {
    if (reg_error_.empty()) reg_error_ = "register read at " + hex(offset) + " before an xclbin was loaded";
    return 0xFFFFFFFFu;
  }
  try {
    return ip_.read_register(offset);
  } catch (const std::exception& e) {
    if (reg_error_.empty()) reg_error_ = "register read at " + hex(offset) + ": " + exception_text(e.what());
    return 0xFFFFFFFFu;
  }
}

void XrtDevice::write_reg(uint32_t offset, uint32_t value) {
  if (!have_ip_) {
    if (reg_error_.empty()) reg_error_ = "register write at " + hex(offset) + " before an xclbin was loaded";
    return;
  }
  try {
    ip_.write_register(offset, value);
  } catch (const std::exception& e) {
    if (reg_error_.empty()) reg_error_ = "register write at " + hex(offset) + ": " + exception_text(e.what());
  }
}

Expected<uint64_t> XrtDevice::alloc(uint64_t bytes, uint64_t align) {
  align = std::max(align, kMinAlign);
  if ((align & (align - 1)) != 0)
    return make_error(std::string(kBackend), "alloc: alignment " + std::to_string(align) + " is not a power of two");
  bytes = (std::max<uint64_t>(bytes, 1) + kMinAlign - 1) / kMinAlign * kMinAlign;
  // First fit in an existing arena.
  for (auto& a : arenas_) {
    auto fit = [&](uint64_t lo, uint64_t hi) -> int64_t {
      const uint64_t cand = ((a->base + lo + align - 1) & ~(align - 1)) - a->base;
      return cand + bytes <= hi ? int64_t(cand) : -1;
    };
    uint64_t prev_end = 0;
    int64_t at = -1;
    for (const auto& [off, len] : a->used) {
      if ((at = fit(prev_end, off)) >= 0) break;
      prev_end = off + len;
    }
    if (at < 0) at = fit(prev_end, a->size);
    if (at >= 0) {
      a->used[uint64_t(at)] = bytes;
      return a->base + uint64_t(at);
    }
  }
  // A new arena BO in the kernel's memory bank.
  const uint64_t size = std::max(opt_.arena_bytes, (bytes + align + 4095) / 4096 * 4096);
  auto a = std::make_unique<Arena>();
  try {
    a->bo = xrt::bo(dev_, size_t(size), xrt::bo::flags::normal, group_);
    a->base = a->bo.address();
  } catch (const std::exception& e) {
    return xrt_error(
        "allocating a " + std::to_string(size >> 20) + " MiB buffer in memory bank " + std::to_string(group_), e);
  }
  a->size = size;
  const uint64_t off = ((a->base + align - 1) & ~(align - 1)) - a->base;
  a->used[off] = bytes;
  arenas_.push_back(std::move(a));
  return arenas_.back()->base + off;
}

void XrtDevice::free(uint64_t addr) {
  for (auto& a : arenas_)
    if (addr >= a->base && addr < a->base + a->size) a->used.erase(addr - a->base);
}

XrtDevice::Arena* XrtDevice::find(uint64_t addr, uint64_t len) {
  for (auto& a : arenas_) {
    if (addr < a->base || addr - a->base >= a->size) continue;
    const uint64_t off = addr - a->base;
    auto it = a->used.upper_bound(off);
    if (it == a->used.begin()) return nullptr;
    --it;
    return off + len <= it->first + it->second ? a.get() : nullptr;
  }
  return nullptr;
}

Status XrtDevice::write(uint64_t addr, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return Status::ok();
  Arena* a = find(addr, bytes.size());
  if (a == nullptr)
    return make_error(std::string(kBackend), "write of " + std::to_string(bytes.size()) + " bytes at " + hex(addr) +
                                                 " outside every allocation");
  try {
    a->bo.write(bytes.data(), bytes.size(), size_t(addr - a->base));
    a->bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes.size(), size_t(addr - a->base));
  } catch (const std::exception& e) {
    return xrt_error("writing " + std::to_string(bytes.size()) + " bytes at " + hex(addr), e);
  }
  return Status::ok();
}

Status XrtDevice::read(uint64_t addr, std::span<uint8_t> bytes) {
  if (bytes.empty()) return Status::ok();
  Arena* a = find(addr, bytes.size());
  if (a == nullptr)
    return make_error(std::string(kBackend), "read of " + std::to_string(bytes.size()) + " bytes at " + hex(addr) +
                                                 " outside every allocation");
  try {
    a->bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, bytes.size(), size_t(addr - a->base));
    a->bo.read(bytes.data(), bytes.size(), size_t(addr - a->base));
  } catch (const std::exception& e) {
    return xrt_error("reading " + std::to_string(bytes.size()) + " bytes at " + hex(addr), e);
  }
  return Status::ok();
}

Expected<uint64_t> XrtDevice::run_for(uint64_t cycles, bool until_irq) {
  (void)until_irq;  // the wait ends at the interrupt either way; the caller reads the status
  const uint64_t ms = std::clamp<uint64_t>(cycles / (uint64_t(std::max(1u, cfg_.clock_mhz)) * 1000), 1, 60'000);
  LOOM_TRY(arm_interrupt());
  auto fired = wait_interrupt(unsigned(ms));
  if (!fired) return fired.error();
  if (!reg_error_.empty())
    return make_error(std::string(kBackend) + ": device " + std::to_string(opt_.device_index), reg_error_);
  return uint64_t{0};
}

Status XrtDevice::run_until_idle(uint64_t timeout_cycles) {
  (void)timeout_cycles;  // the card's clock is not visible here: the limit is wall time
  const std::string where = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t poll = 0;; ++poll) {
    if (!reg_error_.empty()) return make_error(where, reg_error_);
    // Stopped: every busy core waits on a semaphore only another core can raise.
    const uint32_t busy = read_reg(spec::reg::STATUS);
    std::string running;
    uint32_t running_mask = 0;
    for (unsigned c = 0; c < cfg_.cores && c < spec::kMaxCores; ++c) {
      if (!(busy & spec::reg::STATUS_BUSY(c))) continue;
      const uint32_t st = read_reg(spec::core_reg_addr(c, cr::STATUS));
      if ((st & cr::STATUS_BUSY_MASK) && !(st & cr::STATUS_BLOCKED_MASK)) {
        running.append(" ").append(std::to_string(c));
        running_mask |= 1u << c;
      }
    }
    if (!reg_error_.empty()) return make_error(where, reg_error_);
    if (running_mask == 0) return Status::ok();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (uint64_t(ms) >= opt_.timeout_ms) {
      write_reg(spec::reg::SOFT_RESET, running_mask);
      return make_error(where, "run did not complete within " + std::to_string(opt_.timeout_ms) +
                                   " ms (--device-timeout-ms or LOOM_XRT_TIMEOUT_MS); cores" + running +
                                   " were still busy and were reset");
    }
    // Poll at full rate briefly, then back off so a long run does not hog the bus.
    if (poll > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Expected<xrt::bo> XrtDevice::sub_buffer(uint64_t addr, uint64_t bytes) {
  Arena* a = find(addr, std::max<uint64_t>(bytes, 1));
  if (a == nullptr && bytes == 0 && !arenas_.empty()) {
    // An argument the call does not touch (eltwise without b): any piece.
    a = arenas_.front().get();
    addr = a->base;
  }
  if (a == nullptr)
    return make_error(std::string(kBackend),
                      std::to_string(bytes) + " bytes at " + hex(addr) + " are outside every allocation");
  const uint64_t len = std::min<uint64_t>(std::max<uint64_t>(bytes, kMinAlign), a->base + a->size - addr);
  try {
    return xrt::bo(a->bo, size_t(len), size_t(addr - a->base));
  } catch (const std::exception& e) {
    return xrt_error("a sub-buffer of " + std::to_string(len) + " bytes at " + hex(addr), e);
  }
}

Expected<uint64_t> XrtDevice::start_unit(const runtime::UnitCall& call) {
  const std::string dev = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  auto fp = hls::footprint(call, cfg_);
  if (!fp) return Status(fp.error()).context(dev);
  const hls::KernelInfo& k = *hls::find_kernel(call.kernel);
  const std::string cu = xrt_cus::cu_name(k.top, call.unit);
  const std::string where = dev + ": compute unit " + cu;
  if (!have_ip_) return make_error(where, "no xclbin loaded");
  if (std::find(hls_present_.begin(), hls_present_.end(), cu) == hls_present_.end())
    return make_error(where, "not in xclbin '" + opt_.xclbin +
                                 "' (link the HLS kernel beside loom_top: HLS_KERNELS in scripts/vitis/Makefile)");
  for (const auto& [h, r] : runs_)
    if (r.cu == cu) return make_error(where, "busy: call " + std::to_string(h) + " was started and not waited for");
  auto it = cus_.find(cu);
  if (it == cus_.end()) {
    try {
      it = cus_.emplace(cu, xrt::kernel(dev_, uuid_, cu)).first;
    } catch (const std::exception& e) {
      return make_error(where, "opening the kernel: " + exception_text(e.what()));
    }
  }
  UnitRun r;
  r.cu = cu;
  for (unsigned i = 0; i < k.ptrs; ++i) {
    auto b = sub_buffer(uint64_t(call.args[i]), (*fp)[i].bytes);
    if (!b) return Status(b.error()).context(where + ": argument " + std::to_string(i));
    r.bufs.push_back(std::move(*b));
  }
  try {
    r.run = xrt::run(it->second);
    for (unsigned i = 0; i < k.ptrs; ++i) r.run.set_arg(int(i), r.bufs[i]);
    for (unsigned i = 0; i < k.scalars; ++i) {
      const int32_t v = int32_t(call.args[k.ptrs + i]);  // range checked by hls::footprint
      r.run.set_arg(int(k.ptrs + i), v);
    }
    r.run.start();
  } catch (const std::exception& e) {
    return make_error(where, "starting a run: " + exception_text(e.what()));
  }
  const uint64_t h = next_run_++;
  runs_.emplace(h, std::move(r));
  return h;
}

Status XrtDevice::wait_unit(uint64_t handle, uint64_t timeout_cycles) {
  (void)timeout_cycles;  // the card's clock is not visible here: the limit is wall time
  const std::string dev = std::string(kBackend) + ": device " + std::to_string(opt_.device_index);
  auto it = runs_.find(handle);
  if (it == runs_.end()) return make_error(dev, "wait_unit: no HLS unit call " + std::to_string(handle) + " in flight");
  UnitRun r = std::move(it->second);
  runs_.erase(it);
  const std::string where = dev + ": compute unit " + r.cu;
  ert_cmd_state st = ERT_CMD_STATE_NEW;
  try {
    // At least 1 ms: XRT reads 0 as "no limit".
    st = r.run.wait(std::chrono::milliseconds(std::max(opt_.timeout_ms, 1u)));
    if (st == ERT_CMD_STATE_COMPLETED) return Status::ok();
    if (st == ERT_CMD_STATE_TIMEOUT || st == ERT_CMD_STATE_RUNNING || st == ERT_CMD_STATE_QUEUED ||
        st == ERT_CMD_STATE_SUBMITTED || st == ERT_CMD_STATE_NEW) {
      // Still going: abort it so the unit can take the next call.
      const ert_cmd_state after = r.run.abort();
      return make_error(where, "run did not complete within " + std::to_string(opt_.timeout_ms) +
                                   " ms (--device-timeout-ms or LOOM_XRT_TIMEOUT_MS); aborted (state " +
                                   state_name(after) + ")");
    }
  } catch (const std::exception& e) {
    return make_error(where, "waiting for the run: " + exception_text(e.what()));
  }
  return make_error(where, std::string("run ended in state ") + state_name(st) +
                               " (the kernel faulted or rejected its arguments); its outputs are not valid");
}

namespace {

class XrtTarget final : public bringup::Target {
 public:
  XrtTarget(const spec::HwConfig& cfg, XrtOptions opt) : dev_(cfg, std::move(opt)) {}
  std::string backend() const override { return kBackend; }
  bool emulated() const override { return std::string_view(kBackend) != "xrt"; }
  Status open_device() override { return dev_.open_device(); }
  Expected<std::string> load_xclbin() override { return dev_.load_xclbin(); }
  runtime::Device& device() override { return dev_; }
  void set_config(const spec::HwConfig& cfg) override { dev_.set_config(cfg); }
  Status arm_interrupt() override { return dev_.arm_interrupt(); }
  Expected<bool> wait_interrupt(unsigned timeout_ms) override { return dev_.wait_interrupt(timeout_ms); }
  std::vector<std::string> hls_units() const override { return dev_.hls_units_present(); }
  std::string describe() const override {
    return "device " + std::to_string(dev_.device_index()) + ", xclbin " +
           (dev_.xclbin_path().empty() ? std::string("(none)") : dev_.xclbin_path());
  }

 private:
  XrtDevice dev_;
};

}  // namespace

Expected<std::unique_ptr<runtime::Device>> make_device(const spec::HwConfig& cfg, const runtime::DeviceOptions& opt) {
  auto xo = xrt_options(kBackend, opt);
  if (!xo) return xo.error();
  auto d = std::make_unique<XrtDevice>(cfg, std::move(*xo));
  LOOM_TRY(d->open_device());
  auto u = d->load_xclbin();
  if (!u) return u.error();
  LOOM_TRY(d->check_identity());
  return std::unique_ptr<runtime::Device>(std::move(d));
}

Expected<std::unique_ptr<bringup::Target>> make_bringup_target(const spec::HwConfig& cfg,
                                                               const runtime::DeviceOptions& opt) {
  auto xo = xrt_options(kBackend, opt);
  if (!xo) return xo.error();
  return std::unique_ptr<bringup::Target>(std::make_unique<XrtTarget>(cfg, std::move(*xo)));
}

}  // namespace loom::LOOM_XRT_NS
