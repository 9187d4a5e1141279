// xrt-emu: an in-project emulation of exactly the XRT native C++ API classes
// the xrt backend uses (device, xclbin, uuid, ip with its interrupt, bo and
// its sub-buffers, kernel and run with ert_cmd_state, the sync directions and
// system::enumerate_devices), with the same spelling, so
// host/backends/xrt/xrt_device.cc compiles unchanged against either. The
// headers under emu/xrt and emu/experimental mirror XRT's include paths and
// all include this one.
//
// Behind the classes is the Verilated loom_fabric of the rtl backend: an
// xrt::ip register access is one AXI4-Lite transaction on the RTL's
// s_axi_control, buffer objects live in the AXI4 memory model's device memory
// (protocol checkers on every port) and bo::sync copies between the host
// buffer and that memory. The fabric runs free: every register access first
// clocks it a few cycles, as a card's clock runs while the host is busy.
//
// HLS compute units (xrt::kernel / xrt::run) are the kernels' C functions
// (hls::run, as on ref and tlm): run.start() reads the inputs from the AXI
// memory model and computes; the run then stays RUNNING for the kernel's
// latency model in fabric cycles (the unit's clock is the fabric's, as on
// tlm), during which the fabric keeps running (the host clocks it in
// run.wait and on every register access), and its outputs are written to the
// memory model when it completes (an aborted run writes nothing). A kernel
// status other than kOk ends the run in ERT_CMD_STATE_ERROR, nothing written.
// The units' memory traffic is not modelled on the AXI ports.
//
// Errors are thrown, as XRT does (std::runtime_error / std::system_error).
// The classes live in namespace loom_xrt_emu, aliased to `xrt`, so a program
// may link this emulation and the real libxrt_coreutil side by side.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

/// Buffer sync directions, as in XRT's xrt.h.
enum xclBOSyncDirection {
  XCL_BO_SYNC_BO_TO_DEVICE = 0,
  XCL_BO_SYNC_BO_FROM_DEVICE,
};

/// Command states, as in XRT's ert.h.
enum ert_cmd_state {
  ERT_CMD_STATE_NEW = 1,
  ERT_CMD_STATE_QUEUED = 2,
  ERT_CMD_STATE_RUNNING = 3,
  ERT_CMD_STATE_COMPLETED = 4,
  ERT_CMD_STATE_ERROR = 5,
  ERT_CMD_STATE_ABORT = 6,
  ERT_CMD_STATE_SUBMITTED = 7,
  ERT_CMD_STATE_TIMEOUT = 8,
  ERT_CMD_STATE_NORESPONSE = 9,
  ERT_CMD_STATE_SKERROR = 10,
  ERT_CMD_STATE_SKCRASHED = 11,
  ERT_CMD_STATE_MAX,
};

namespace loom_xrt_emu {

struct card;  // one emulated board: its fabric once an xclbin is loaded

class uuid {
 public:
  uuid() = default;
  explicit uuid(std::string text) : text_(std::move(text)) {}
  std::string to_string() const { return text_; }
  bool operator==(const uuid& o) const { return text_ == o.text_; }
  explicit operator bool() const { return !text_.empty(); }

 private:
  std::string text_;
};

/// An emulated xclbin: a small text file (see emu/xclbin/) naming the loom
/// configuration, the kernel instances (the RTL kernel loom_top and the HLS
/// compute units, one `ip:` line each), the memory bank and a UUID.
class xclbin {
 public:
  class mem {
   public:
    mem() = default;
    mem(int32_t index, std::string tag) : index_(index), tag_(std::move(tag)) {}
    int32_t get_index() const { return index_; }
    std::string get_tag() const { return tag_; }

   private:
    int32_t index_ = 0;
    std::string tag_;
  };
  class arg {
   public:
    arg() = default;
    arg(std::string name, std::vector<mem> mems) : name_(std::move(name)), mems_(std::move(mems)) {}
    std::string get_name() const { return name_; }
    std::vector<mem> get_mems() const { return mems_; }

   private:
    std::string name_;
    std::vector<mem> mems_;
  };
  class ip {
   public:
    ip() = default;
    ip(std::string name, std::vector<arg> args) : name_(std::move(name)), args_(std::move(args)) {}
    std::string get_name() const { return name_; }
    std::vector<arg> get_args() const { return args_; }

   private:
    std::string name_;
    std::vector<arg> args_;
  };

  xclbin() = default;
  /// Reads and validates the file; throws std::runtime_error naming the file
  /// and line on anything malformed.
  explicit xclbin(const std::string& filename);

  std::vector<ip> get_ips() const { return ips_; }
  std::vector<mem> get_mems() const { return mems_; }
  uuid get_uuid() const { return uuid_; }
  std::string get_xsa_name() const { return platform_; }
  /// Emulation only: the loom configuration the "bitstream" implements.
  std::string config_name() const { return config_; }

 private:
  std::string platform_, config_;
  uuid uuid_;
  std::vector<ip> ips_;
  std::vector<mem> mems_;
};

class device {
 public:
  device() = default;
  /// Opens emulated card `didx`; throws when there is no such card.
  explicit device(unsigned int didx);
  uuid load_xclbin(const xclbin& xb);
  uuid load_xclbin(const std::string& xclbin_fnm) { return load_xclbin(xclbin(xclbin_fnm)); }
  uuid get_xclbin_uuid() const;
  explicit operator bool() const { return card_ != nullptr; }

  /// Emulation only.
  const std::shared_ptr<card>& impl() const { return card_; }

 private:
  std::shared_ptr<card> card_;
};

class ip {
 public:
  class interrupt {
   public:
    explicit interrupt(std::shared_ptr<card> c) : card_(std::move(c)) {}
    void enable();
    void disable();
    /// Clocks the fabric until its interrupt line is high.
    void wait();
    std::cv_status wait(const std::chrono::milliseconds& timeout) const;

   private:
    std::shared_ptr<card> card_;
  };

  ip() = default;
  /// `name` is "kernel" or "kernel:{instance}" of the loaded xclbin's IP.
  ip(const device& dev, const uuid& xclbin_id, const std::string& name);
  void write_register(uint32_t offset, uint32_t data);
  uint32_t read_register(uint32_t offset) const;
  interrupt create_interrupt_notify();

 private:
  std::shared_ptr<card> card_;
};

using memory_group = uint32_t;

class bo {
 public:
  enum class flags : uint32_t { normal = 0, cacheable = 1 << 24, device_only = 1 << 28, host_only = 1 << 29 };
  bo() = default;
  /// Allocates `size` bytes in memory bank `grp` of the loaded xclbin.
  bo(const device& dev, size_t size, flags f, memory_group grp);
  /// A sub-buffer: `size` bytes of `parent` from `offset`, sharing its memory.
  bo(const bo& parent, size_t size, size_t offset);
  size_t size() const;
  uint64_t address() const;
  /// Emulation only: the memory bank.
  memory_group group() const;
  void write(const void* src, size_t size, size_t seek);
  void read(void* dst, size_t size, size_t skip);
  void sync(xclBOSyncDirection dir, size_t size, size_t offset);
  void sync(xclBOSyncDirection dir) { sync(dir, size(), 0); }

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

struct kernel_impl;

/// An HLS kernel's compute unit(s) in the loaded xclbin.
class kernel {
 public:
  enum class cu_access_mode : uint8_t { exclusive = 0, shared = 1, none = 2 };
  kernel() = default;
  /// `name` is "kernel" (when the xclbin has one unit of it) or
  /// "kernel:{instance}"; throws when no such compute unit is loaded.
  kernel(const device& dev, const uuid& xclbin_id, const std::string& name,
         cu_access_mode mode = cu_access_mode::shared);
  /// Memory bank of global argument `argno`; throws for a scalar.
  int group_id(int argno) const;

 private:
  friend class run;
  std::shared_ptr<kernel_impl> impl_;
};

/// One execution of a kernel (see the header comment for what it does).
class run {
 public:
  run() = default;
  explicit run(const kernel& krnl);
  void start();
  /// Clocks the fabric until the run is done or `timeout` of wall time passed
  /// (ERT_CMD_STATE_TIMEOUT); 0: no limit.
  ert_cmd_state wait(const std::chrono::milliseconds& timeout = std::chrono::milliseconds{0}) const;
  ert_cmd_state wait(unsigned int timeout_ms) const { return wait(timeout_ms * std::chrono::milliseconds{1}); }
  ert_cmd_state state() const;
  /// Stops a running run (its outputs are never written); returns its state.
  ert_cmd_state abort();
  /// A global argument: the buffer's device address (its bank must be the one
  /// the argument is connected to).
  void set_arg(int index, const bo& boh);
  /// A scalar argument (the loom tops take int32 scalars).
  template <typename ArgType>
  requires std::is_arithmetic_v<std::remove_cvref_t<ArgType>>
  void set_arg(int index, ArgType&& arg) { set_scalar(index, static_cast<int64_t>(arg), sizeof(arg)); }

 private:
  void set_scalar(int index, int64_t value, size_t bytes);
  struct impl;
  std::shared_ptr<impl> impl_;
};

namespace system {
/// Emulated cards present: 1, or LOOM_XRT_EMU_DEVICES.
unsigned int enumerate_devices();
}  // namespace system

}  // namespace loom_xrt_emu

namespace xrt = loom_xrt_emu;
