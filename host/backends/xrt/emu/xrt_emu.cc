// xrt-emu: the emulated XRT classes over the Verilated loom_fabric (see
// loom_xrt_emu.h). Fault injection for tests: LOOM_XRT_EMU_FAULT=id corrupts
// every read of the ID register, =irq keeps the interrupt from ever reaching
// the host.
#include "loom_xrt_emu.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "backends/rtl/rtl_device.h"
#include "loom/spec_gen.h"

namespace loom_xrt_emu {

struct card {
  unsigned index = 0;
  std::string fault;  // "", "id" or "irq"
  uint32_t free_run = 8;  // cycles the fabric runs before each register access
  xclbin loaded;
  uuid id;
  std::unique_ptr<loom::rtl::RtlDevice> fabric;
  bool irq_enabled = false;

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
  std::ifstream in(filename, std::ios::binary);
  if (!in) throw std::runtime_error("xclbin '" + filename + "': cannot open: " + std::strerror(errno));
  const std::string where = "xclbin '" + filename + "'";
  std::string line;
  unsigned n = 0;
  bool format = false;
  std::string ip_name;
  while (std::getline(in, line)) {
    ++n;
    const std::string at = where + ": line " + std::to_string(n);
    if (line.find('\0') != std::string::npos) throw std::runtime_error(where + ": not an emulated xclbin (binary data)");
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
      if (value.find(':') == std::string::npos || value.front() == ':' || value.back() == ':')
        throw std::runtime_error(at + ": ip must be 'kernel:instance', got '" + value + "'");
      ip_name = value;
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
                      : std::string_view(k) == "ip"   ? !ip_name.empty()
                      : std::string_view(k) == "mem"  ? !mems_.empty()
                                                      : bool(uuid_);
    if (!have) throw std::runtime_error(where + ": missing '" + k + "'");
  }
  // The kernel's AXI4 masters all reach the first bank, as linked by v++.
  ips_.emplace_back(ip_name, std::vector<arg>{arg("m_axi", {mems_.front()})});
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
    if (c->fault != "" && c->fault != "id" && c->fault != "irq")
      throw std::runtime_error("LOOM_XRT_EMU_FAULT: unknown fault '" + c->fault + "' (expected id or irq)");
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
  std::vector<uint8_t> host;
  ~impl() {
    if (c && c->fabric) c->fabric->free(addr);
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
  p->host.assign(size, 0);
  impl_ = std::move(p);
}

size_t bo::size() const { return impl_ ? impl_->host.size() : 0; }
uint64_t bo::address() const { return impl_ ? impl_->addr : 0; }

namespace {
void check_range(const char* what, size_t size, size_t off, size_t total) {
  if (off > total || size > total - off)
    throw std::runtime_error(std::string(what) + ": " + std::to_string(size) + " bytes at offset " +
                             std::to_string(off) + " exceed the buffer (" + std::to_string(total) + " bytes)");
}
}  // namespace

void bo::write(const void* src, size_t size, size_t seek) {
  check_range("bo::write", size, seek, this->size());
  if (size) std::memcpy(impl_->host.data() + seek, src, size);
}

void bo::read(void* dst, size_t size, size_t skip) {
  check_range("bo::read", size, skip, this->size());
  if (size) std::memcpy(dst, impl_->host.data() + skip, size);
}

void bo::sync(xclBOSyncDirection dir, size_t size, size_t offset) {
  check_range("bo::sync", size, offset, this->size());
  auto& f = impl_->c->need_fabric("bo::sync");
  loom::Status s;
  if (dir == XCL_BO_SYNC_BO_TO_DEVICE)
    s = f.write(impl_->addr + offset, {impl_->host.data() + offset, size});
  else
    s = f.read(impl_->addr + offset, {impl_->host.data() + offset, size});
  if (!s) throw std::runtime_error("bo::sync: " + s.str());
}

}  // namespace loom_xrt_emu
