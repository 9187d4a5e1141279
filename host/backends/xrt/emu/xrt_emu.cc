// xrt-emu: the emulated XRT classes over the Verilated loom_fabric (see
// loom_xrt_emu.h). Fault injection for tests: LOOM_XRT_EMU_FAULT=id corrupts
// every read of the ID register, =irq keeps the interrupt from ever reaching
// the host, =unit-hang keeps the first HLS compute unit run on the card from
// ever completing (later runs complete).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "backends/rtl/rtl_device.h"
#include "backends/xrt/hls_cus.h"
#include "common/limits.h"
#include "common/tensor_io.h"
#include "loom/spec_gen.h"
#include "loom_hls_units.h"
#include "loom_xrt_emu.h"

namespace loom_xrt_emu {

struct card {
  unsigned index = 0;
  std::string fault;      // "", "id", "irq" or "unit-hang"
  uint32_t free_run = 8;  // cycles the fabric runs before each register access
  xclbin loaded;
  uuid id;
  std::unique_ptr<loom::rtl::RtlDevice> fabric;
  bool irq_enabled = false;
  uint64_t unit_runs = 0;                   // HLS runs started (unit-hang: the first hangs)
  std::map<std::string, uint64_t> cu_free;  // per compute unit: fabric cycle it is free from

  loom::rtl::RtlDevice& need_fabric(const char* what) const {
    if (!fabric) throw std::runtime_error(std::string(what) + ": no xclbin loaded on device " + std::to_string(index));
    return *fabric;
  }
  /// Register accesses report what the fabric's checkers saw, like a bus error.
  void check_health() const {
    const loom::Status s = fabric->health();
    if (!s) throw std::runtime_error("xrt-emu: device " + std::to_string(index) + ": " + s.str());
  }
};

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool valid_uuid(const std::string& u) {
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? u[i] != '-' : !std::isxdigit(static_cast<unsigned char>(u[i]))) return false;
  }
  return true;
}

}  // namespace

xclbin::xclbin(const std::string& filename) {
  // A text file: special files are refused without blocking, and a large
  // file before anything is allocated (common/limits.h).
  auto bytes = loom::read_file_bytes(filename, loom::limits::kMaxTextBytes);
  if (!bytes) throw std::runtime_error("xclbin '" + filename + "': " + bytes.error().str());
  std::istringstream in(*bytes);
  const std::string where = "xclbin '" + filename + "'";
  std::string line;
  unsigned n = 0;
  bool format = false;
  std::vector<std::string> ip_names;
  while (std::getline(in, line)) {
    ++n;
    const std::string at = where + ": line " + std::to_string(n);
    if (line.find('\0') != std::string::npos)
      throw std::runtime_error(where + ": not an emulated xclbin (binary data)");
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) throw std::runtime_error(at + ": expected 'key: value'");
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (value.empty()) throw std::runtime_error(at + ": '" + key + "' has no value");
    if (key == "format") {
      if (value != "loom-emu-xclbin 1") throw std::runtime_error(at + ": unsupported format '" + value + "'");
      format = true;
    } else if (!format) {
      throw std::runtime_error(at + ": expected 'format: loom-emu-xclbin 1' first");
    } else if (key == "platform") {
      platform_ = value;
    } else if (key == "config") {
      if (loom::spec::find_config(value) == nullptr)
        throw std::runtime_error(at + ": unknown loom configuration '" + value + "'");
      config_ = value;
    } else if (key == "ip") {
      const auto c = value.find(':');
      if (c == std::string::npos || value.front() == ':' || value.back() == ':')
        throw std::runtime_error(at + ": ip must be 'kernel:instance', got '" + value + "'");
      const std::string kname = value.substr(0, c), inst = value.substr(c + 1);
      // The RTL kernel, or an HLS kernel the emulation can run (hls/units).
      if (kname.rfind("loom_top", 0) != 0) {
        if (loom::hls::find_kernel(kname) == nullptr)
          throw std::runtime_error(at + ": unknown kernel '" + kname + "' (loom_top or an HLS kernel of hls/)");
        if (loom::xrt_cus::unit_of_instance(kname, inst) < 0)
          throw std::runtime_error(at + ": compute unit '" + inst + "' is not named as the link names units (" +
                                   loom::xrt_cus::instance(kname, 0) + ", ...)");
      }
      if (std::find(ip_names.begin(), ip_names.end(), value) != ip_names.end())
        throw std::runtime_error(at + ": ip '" + value + "' listed twice");
      ip_names.push_back(value);
    } else if (key == "mem") {
      char* end = nullptr;
      const long idx = std::strtol(value.c_str(), &end, 10);
      const std::string tag = trim(end ? std::string(end) : "");
      if (end == value.c_str() || idx < 0 || idx > 63 || tag.empty())
        throw std::runtime_error(at + ": mem must be '<index 0..63> <tag>', got '" + value + "'");
      mems_.emplace_back(int32_t(idx), tag);
    } else if (key == "uuid") {
      if (!valid_uuid(value)) throw std::runtime_error(at + ": malformed uuid '" + value + "'");
      uuid_ = uuid(value);
    } else {
      throw std::runtime_error(at + ": unknown key '" + key + "'");
    }
  }
  if (!format) throw std::runtime_error(where + ": empty or not an emulated xclbin");
  for (const char* k : {"config", "ip", "mem", "uuid"}) {
    const bool have = std::string_view(k) == "config" ? !config_.empty()
                      : std::string_view(k) == "ip"   ? !ip_names.empty()
                      : std::string_view(k) == "mem"  ? !mems_.empty()
                                                      : bool(uuid_);
    if (!have) throw std::runtime_error(where + ": missing '" + k + "'");
  }
  // Every kernel's AXI4 masters reach the first bank, as linked by v++; an
  // HLS kernel's scalars have no bank.
  for (const auto& name : ip_names) {
    const auto* k = loom::hls::find_kernel(name.substr(0, name.find(':')));
    if (k == nullptr) {
      ips_.emplace_back(name, std::vector<arg>{arg("m_axi", {mems_.front()})});
      continue;
    }
    std::vector<arg> args;
    for (unsigned i = 0; i < k->ptrs; ++i)
      args.emplace_back("gmem" + std::to_string(i), std::vector<mem>{mems_.front()});
    for (unsigned i = 0; i < k->scalars; ++i)
      args.emplace_back(std::string("s").append(std::to_string(i)), std::vector<mem>{});
    ips_.emplace_back(name, std::move(args));
  }
}

unsigned int system::enumerate_devices() {
  if (const char* s = std::getenv("LOOM_XRT_EMU_DEVICES")) return unsigned(std::strtoul(s, nullptr, 10));
  return 1;
}

device::device(unsigned int didx) {
  if (didx >= system::enumerate_devices())
    throw std::runtime_error("No such device with index '" + std::to_string(didx) + "'");
  auto c = std::make_shared<card>();
  c->index = didx;
  if (const char* f = std::getenv("LOOM_XRT_EMU_FAULT")) {
    c->fault = f;
    if (c->fault != "" && c->fault != "id" && c->fault != "irq" && c->fault != "unit-hang")
      throw std::runtime_error("LOOM_XRT_EMU_FAULT: unknown fault '" + c->fault + "' (expected id, irq or unit-hang)");
  }
  if (const char* s = std::getenv("LOOM_XRT_EMU_FREE_RUN")) c->free_run = uint32_t(std::strtoul(s, nullptr, 10));
  card_ = std::move(c);
}

uuid device::load_xclbin(const xclbin& xb) {
  if (!card_) throw std::runtime_error("load_xclbin: device not open");
  const auto* cfg = loom::spec::find_config(xb.config_name());
  if (cfg == nullptr) throw std::runtime_error("load_xclbin: xclbin names no loom configuration");
  loom::rtl::RtlOptions opt;
  opt.mem.read_latency = cfg->mem_latency_cycles;
  opt.mem.write_latency = cfg->mem_latency_cycles;
  auto fab = loom::rtl::make_rtl_device(*cfg, opt);
  if (!fab) throw std::runtime_error("load_xclbin: " + fab.error().str());
  card_->fabric = std::move(*fab);
  card_->loaded = xb;
  card_->id = xb.get_uuid();
  card_->irq_enabled = false;
  card_->cu_free.clear();
  return card_->id;
}

uuid device::get_xclbin_uuid() const { return card_ ? card_->id : uuid(); }

ip::ip(const device& dev, const uuid& xclbin_id, const std::string& name) : card_(dev.impl()) {
  if (!card_ || !card_->fabric) throw std::runtime_error("xrt::ip '" + name + "': no xclbin loaded");
  if (!(xclbin_id == card_->id)) throw std::runtime_error("xrt::ip '" + name + "': xclbin uuid is not the loaded one");
  bool found = false;
  for (const auto& i : card_->loaded.get_ips()) {
    const std::string full = i.get_name();
    const auto colon = full.find(':');
    const std::string kernel = full.substr(0, colon), inst = full.substr(colon + 1);
    found = found || name == kernel || name == kernel + ":{" + inst + "}" || name == full;
  }
  if (!found) throw std::runtime_error("No such IP '" + name + "' in the loaded xclbin");
}

void ip::write_register(uint32_t offset, uint32_t data) {
  auto& f = card_->need_fabric("write_register");
  f.step(card_->free_run);
  f.write_reg(offset, data);
  card_->check_health();
}

uint32_t ip::read_register(uint32_t offset) const {
  auto& f = card_->need_fabric("read_register");
  f.step(card_->free_run);
  uint32_t v = f.read_reg(offset);
  card_->check_health();
  if (card_->fault == "id" && offset == loom::spec::reg::ID) v ^= 0x00FF0000u;
  return v;
}

ip::interrupt ip::create_interrupt_notify() { return interrupt(card_); }
void ip::interrupt::enable() { card_->irq_enabled = true; }
void ip::interrupt::disable() { card_->irq_enabled = false; }

std::cv_status ip::interrupt::wait(const std::chrono::milliseconds& timeout) const {
  auto& f = card_->need_fabric("interrupt wait");
  // The fabric runs while the host waits, for at most `timeout` of wall time.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (card_->irq_enabled && f.irq_line() && card_->fault != "irq") return std::cv_status::no_timeout;
    if (std::chrono::steady_clock::now() >= deadline) return std::cv_status::timeout;
    f.step(64);
    card_->check_health();
  }
}

void ip::interrupt::wait() {
  if (wait(std::chrono::milliseconds(60'000)) == std::cv_status::timeout)
    throw std::runtime_error("interrupt wait: no interrupt within 60 s");
}

struct bo::impl {
  std::shared_ptr<card> c;
  uint64_t addr = 0;
  size_t size = 0;
  memory_group grp = 0;
  std::shared_ptr<impl> parent;  // sub-buffers: the buffer they are part of
  size_t parent_off = 0;
  std::vector<uint8_t> own;  // the host copy (top-level buffers)
  uint8_t* host() { return parent ? parent->host() + parent_off : own.data(); }
  ~impl() {
    if (!parent && c && c->fabric) c->fabric->free(addr);
  }
};

bo::bo(const device& dev, size_t size, flags, memory_group grp) {
  const auto& c = dev.impl();
  auto& f = c ? c->need_fabric("xrt::bo") : throw std::runtime_error("xrt::bo: device not open");
  bool bank = false;
  for (const auto& m : c->loaded.get_mems()) bank = bank || uint32_t(m.get_index()) == grp;
  if (!bank) throw std::runtime_error("xrt::bo: memory group " + std::to_string(grp) + " is not in the xclbin");
  if (size == 0) throw std::runtime_error("xrt::bo: size 0");
  auto a = f.alloc(size, 4096);
  if (!a) throw std::runtime_error("xrt::bo: " + a.error().str());
  auto p = std::make_shared<impl>();
  p->c = c;
  p->addr = *a;
  p->size = size;
  p->grp = grp;
  p->own.assign(size, 0);
  impl_ = std::move(p);
}

bo::bo(const bo& parent, size_t size, size_t offset) {
  if (!parent.impl_) throw std::runtime_error("xrt::bo: sub-buffer of an empty buffer");
  if (size == 0 || offset > parent.size() || size > parent.size() - offset)
    throw std::runtime_error("xrt::bo: sub-buffer of " + std::to_string(size) + " bytes at offset " +
                             std::to_string(offset) + " exceeds its parent (" + std::to_string(parent.size()) +
                             " bytes)");
  auto p = std::make_shared<impl>();
  p->c = parent.impl_->c;
  p->addr = parent.impl_->addr + offset;
  p->size = size;
  p->grp = parent.impl_->grp;
  p->parent = parent.impl_;
  p->parent_off = offset;
  impl_ = std::move(p);
}

size_t bo::size() const { return impl_ ? impl_->size : 0; }
uint64_t bo::address() const { return impl_ ? impl_->addr : 0; }
memory_group bo::group() const { return impl_ ? impl_->grp : 0; }

namespace {
void check_range(const char* what, size_t size, size_t off, size_t total) {
  if (off > total || size > total - off)
    throw std::runtime_error(std::string(what) + ": " + std::to_string(size) + " bytes at offset " +
                             std::to_string(off) + " exceed the buffer (" + std::to_string(total) + " bytes)");
}
}  // namespace

void bo::write(const void* src, size_t size, size_t seek) {
  check_range("bo::write", size, seek, this->size());
  if (size) std::memcpy(impl_->host() + seek, src, size);
}

void bo::read(void* dst, size_t size, size_t skip) {
  check_range("bo::read", size, skip, this->size());
  if (size) std::memcpy(dst, impl_->host() + skip, size);
}

void bo::sync(xclBOSyncDirection dir, size_t size, size_t offset) {
  check_range("bo::sync", size, offset, this->size());
  auto& f = impl_->c->need_fabric("bo::sync");
  loom::Status s;
  if (dir == XCL_BO_SYNC_BO_TO_DEVICE)
    s = f.write(impl_->addr + offset, {impl_->host() + offset, size});
  else
    s = f.read(impl_->addr + offset, {impl_->host() + offset, size});
  if (!s) throw std::runtime_error("bo::sync: " + s.str());
}

// ---- HLS compute units ------------------------------------------------------

struct kernel_impl {
  std::shared_ptr<card> c;
  const loom::hls::KernelInfo* info = nullptr;
  uint32_t unit = 0;
  std::string cu;              // "loom_hls_gemm:{loom_hls_gemm_1}"
  std::vector<int32_t> banks;  // per global argument
};

kernel::kernel(const device& dev, const uuid& xclbin_id, const std::string& name, cu_access_mode) {
  const auto& c = dev.impl();
  if (!c || !c->fabric) throw std::runtime_error("xrt::kernel '" + name + "': no xclbin loaded");
  if (!(xclbin_id == c->id)) throw std::runtime_error("xrt::kernel '" + name + "': xclbin uuid is not the loaded one");
  // "kernel" or "kernel:{instance}"
  std::string kname = name, inst;
  if (const auto colon = name.find(':'); colon != std::string::npos) {
    kname = name.substr(0, colon);
    inst = name.substr(colon + 1);
    if (inst.size() < 3 || inst.front() != '{' || inst.back() != '}' || inst.find(',') != std::string::npos)
      throw std::runtime_error("xrt::kernel '" + name + "': expected 'kernel:{instance}' with one instance");
    inst = inst.substr(1, inst.size() - 2);
  }
  std::vector<const xclbin::ip*> match;
  const auto ips = c->loaded.get_ips();
  for (const auto& i : ips) {
    const std::string full = i.get_name();
    const auto colon = full.find(':');
    if (full.substr(0, colon) == kname && (inst.empty() || full.substr(colon + 1) == inst)) match.push_back(&i);
  }
  if (match.empty()) throw std::runtime_error("No compute units matching '" + name + "'");
  if (kname.rfind("loom_top", 0) == 0)
    throw std::runtime_error("xrt::kernel '" + name + "': a user-managed kernel has no xrt::run (use xrt::ip)");
  if (match.size() > 1)
    throw std::runtime_error("xrt::kernel '" + name + "': " + std::to_string(match.size()) +
                             " compute units match; this emulation opens one per kernel object");
  const std::string full = match.front()->get_name();
  auto p = std::make_shared<kernel_impl>();
  p->c = c;
  p->info = loom::hls::find_kernel(kname);
  p->unit = uint32_t(loom::xrt_cus::unit_of_instance(kname, full.substr(full.find(':') + 1)));
  p->cu = loom::xrt_cus::cu_name(kname, p->unit);
  for (const auto& a : match.front()->get_args())
    if (!a.get_mems().empty()) p->banks.push_back(a.get_mems().front().get_index());
  impl_ = std::move(p);
}

int kernel::group_id(int argno) const {
  if (!impl_) throw std::runtime_error("xrt::kernel::group_id: empty kernel");
  if (argno < 0 || size_t(argno) >= impl_->banks.size())
    throw std::runtime_error("xrt::kernel::group_id: argument " + std::to_string(argno) + " of " + impl_->cu +
                             " is not a global memory argument");
  return impl_->banks[size_t(argno)];
}

struct run::impl {
  std::shared_ptr<kernel_impl> k;
  std::vector<int64_t> args;
  std::vector<uint64_t> buf_bytes;  // per global argument: its buffer's size
  std::vector<bool> set;
  ert_cmd_state st = ERT_CMD_STATE_NEW;
  uint64_t done_at = 0;                                            // fabric cycle
  bool ok = false;                                                 // the C function returned kOk
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> outputs;  // written on completion

  /// Completes the run once the fabric has reached its end.
  void poll() {
    if (st != ERT_CMD_STATE_RUNNING || k->c->fabric->cycles() < done_at) return;
    if (ok) {
      for (const auto& [addr, bytes] : outputs) {
        const loom::Status s = k->c->fabric->write(addr, bytes);
        if (!s) throw std::runtime_error("xrt::run " + k->cu + ": writing its outputs: " + s.str());
      }
    }
    outputs.clear();
    st = ok ? ERT_CMD_STATE_COMPLETED : ERT_CMD_STATE_ERROR;
  }
};

run::run(const kernel& krnl) {
  if (!krnl.impl_) throw std::runtime_error("xrt::run: empty kernel");
  auto p = std::make_shared<impl>();
  p->k = krnl.impl_;
  const size_t n = krnl.impl_->info->ptrs + krnl.impl_->info->scalars;
  p->args.assign(n, 0);
  p->set.assign(n, false);
  p->buf_bytes.assign(krnl.impl_->info->ptrs, 0);
  impl_ = std::move(p);
}

void run::set_arg(int index, const bo& boh) {
  if (!impl_) throw std::runtime_error("xrt::run: empty run");
  const auto& k = *impl_->k;
  if (index < 0 || unsigned(index) >= k.info->ptrs)
    throw std::runtime_error("xrt::run " + k.cu + ": argument " + std::to_string(index) +
                             " is not a global memory argument");
  if (int32_t(boh.group()) != k.banks[size_t(index)])
    throw std::runtime_error("xrt::run " + k.cu + ": argument " + std::to_string(index) + " is connected to bank " +
                             std::to_string(k.banks[size_t(index)]) + ", the buffer is in bank " +
                             std::to_string(boh.group()));
  impl_->args[size_t(index)] = int64_t(boh.address());
  impl_->buf_bytes[size_t(index)] = boh.size();
  impl_->set[size_t(index)] = true;
}

void run::set_scalar(int index, int64_t value, size_t bytes) {
  if (!impl_) throw std::runtime_error("xrt::run: empty run");
  const auto& k = *impl_->k;
  if (index < int(k.info->ptrs) || size_t(index) >= impl_->args.size())
    throw std::runtime_error("xrt::run " + k.cu + ": argument " + std::to_string(index) + " is not a scalar argument");
  if (bytes != sizeof(int32_t))
    throw std::runtime_error("xrt::run " + k.cu + ": scalar argument " + std::to_string(index) + " is int32, got " +
                             std::to_string(bytes) + " bytes");
  impl_->args[size_t(index)] = value;
  impl_->set[size_t(index)] = true;
}

void run::start() {
  if (!impl_) throw std::runtime_error("xrt::run: empty run");
  auto& r = *impl_;
  card& c = *r.k->c;
  auto& f = c.need_fabric("xrt::run::start");
  r.poll();
  if (r.st == ERT_CMD_STATE_RUNNING) throw std::runtime_error("xrt::run " + r.k->cu + ": already running");
  for (size_t i = 0; i < r.set.size(); ++i)
    if (!r.set[i]) throw std::runtime_error("xrt::run " + r.k->cu + ": argument " + std::to_string(i) + " not set");
  const loom::runtime::UnitCall call{std::string(r.k->info->top), r.k->unit, r.args};
  // Each buffer must hold what the kernel reads or writes through it.
  auto fp = loom::hls::footprint(call, f.config());
  if (fp) {
    for (size_t i = 0; i < fp->size(); ++i)
      if ((*fp)[i].bytes > r.buf_bytes[i])
        throw std::runtime_error("xrt::run " + r.k->cu + ": argument " + std::to_string(i) + " reaches " +
                                 std::to_string((*fp)[i].bytes) + " bytes, its buffer has " +
                                 std::to_string(r.buf_bytes[i]));
  }
  r.outputs.clear();
  const loom::Status s = loom::hls::run(
      call, f.config(), [&f](uint64_t a, std::span<uint8_t> out) { return f.read(a, out); },
      [&r](uint64_t a, std::span<const uint8_t> in) {
        r.outputs.emplace_back(a, std::vector<uint8_t>(in.begin(), in.end()));
        return loom::Status::ok();
      });
  r.ok = s.is_ok();
  if (!r.ok) r.outputs.clear();
  // The unit runs one call at a time, from when it is free, for the latency
  // model's cycles at the fabric clock.
  const uint64_t now = f.cycles();
  uint64_t& free_at = c.cu_free[r.k->cu];
  const bool hang = c.fault == "unit-hang" && c.unit_runs == 0;
  ++c.unit_runs;
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  const uint64_t from = std::max(now, free_at);
  const uint64_t lat = loom::hls::latency_cycles(call);
  r.done_at = hang || from > kNever - lat ? kNever : from + lat;
  free_at = r.done_at;
  r.st = ERT_CMD_STATE_RUNNING;
}

ert_cmd_state run::state() const {
  if (!impl_) return ERT_CMD_STATE_NEW;
  impl_->poll();
  return impl_->st;
}

ert_cmd_state run::wait(const std::chrono::milliseconds& timeout) const {
  if (!impl_) throw std::runtime_error("xrt::run: empty run");
  auto& r = *impl_;
  card& c = *r.k->c;
  auto& f = c.need_fabric("xrt::run::wait");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    r.poll();
    if (r.st != ERT_CMD_STATE_RUNNING) return r.st;
    if (timeout.count() > 0 && std::chrono::steady_clock::now() >= deadline) return ERT_CMD_STATE_TIMEOUT;
    if (timeout.count() == 0 && r.done_at == std::numeric_limits<uint64_t>::max())
      throw std::runtime_error("xrt::run " + r.k->cu + ": wait without a timeout on a run that never completes");
    // The fabric (cores included) runs while the unit does.
    f.step(std::clamp<uint64_t>(r.done_at - std::min(r.done_at, f.cycles()), 1, 256));
    c.check_health();
  }
}

ert_cmd_state run::abort() {
  if (!impl_) throw std::runtime_error("xrt::run: empty run");
  auto& r = *impl_;
  r.poll();
  if (r.st == ERT_CMD_STATE_RUNNING) {
    r.outputs.clear();
    r.st = ERT_CMD_STATE_ABORT;
    if (r.k->c->fabric) r.k->c->cu_free[r.k->cu] = r.k->c->fabric->cycles();
  }
  return r.st;
}

}  // namespace loom_xrt_emu
