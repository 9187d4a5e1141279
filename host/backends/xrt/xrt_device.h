// The `xrt` backend: runtime::Device on the XRT native C++ API, exactly as on
// a board. The card's user-managed RTL kernel (loom_top) is reached through
// xrt::ip register reads and writes at the spec's offsets; device memory is
// carved out of large xrt::bo arenas in the kernel's memory bank, with
// explicit syncs both ways; runs complete by polling the spec's STATUS
// registers with a wall-clock timeout and are aborted with SOFT_RESET when it
// expires. Every XRT call is wrapped: what XRT throws becomes a one-line
// loom error.
//
// HLS compute units (hls/README.md "As compute units") run as a board runs
// an HLS kernel: one xrt::kernel per compute unit, opened by the name the
// Vitis link gives it (hls_cus.h: "loom_hls_gemm:{loom_hls_gemm_1}"), one
// xrt::run per call with its pointer arguments as xrt::bo sub-buffers of the
// arenas (exactly the bytes the call reads or writes) and its int32 scalars,
// run.start(), and run.wait(timeout_ms) with the state checked:
// anything but ERT_CMD_STATE_COMPLETED aborts the run and is an error naming
// the unit.
//
// This file and xrt_device.cc build twice (host/backends/xrt/CMakeLists.txt):
// against /usr/include/xrt (LOOM_XRT_NS = xrt_hw) and against the emulation
// in emu/ (LOOM_XRT_NS = xrt_emu).
#pragma once

#include <experimental/xrt_ip.h>
#include <experimental/xrt_system.h>
#include <experimental/xrt_xclbin.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>
#include <xrt/xrt_uuid.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/xrt/bringup.h"
#include "device/device.h"

#ifndef LOOM_XRT_NS
#error "LOOM_XRT_NS names the build (xrt_hw or xrt_emu)"
#endif

namespace loom::LOOM_XRT_NS {

struct XrtOptions {
  unsigned device_index = 0;
  std::string xclbin;  // empty: no default on hardware; the built-in one on xrt-emu
  /// Wall-clock limit on one run_until_idle or one wait for an HLS unit
  /// (device option timeout_ms).
  unsigned timeout_ms = 120'000;
  /// Size of each device-memory arena BO (device option arena_mib).
  uint64_t arena_bytes = uint64_t(64) << 20;
};

class XrtDevice final : public runtime::Device {
 public:
  XrtDevice(const spec::HwConfig& cfg, XrtOptions opt);
  ~XrtDevice() override;

  /// The steps of opening a card, in order.
  Status open_device();
  Expected<std::string> load_xclbin();  // returns the UUID
  /// ID, VERSION and HWCFG against the spec and `cfg`.
  Status check_identity();
  /// Opens and enables the notification of the kernel's interrupt.
  Status arm_interrupt();
  /// Waits for the armed interrupt; false on timeout. Disarms it.
  Expected<bool> wait_interrupt(unsigned timeout_ms);

  std::string_view backend() const override;
  const spec::HwConfig& config() const override { return cfg_; }
  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align = 4096) override;
  void free(uint64_t addr) override;
  /// bo.write + sync(TO_DEVICE) of exactly the bytes written.
  Status write(uint64_t addr, std::span<const uint8_t> bytes) override;
  /// sync(FROM_DEVICE) + bo.read of exactly the bytes read.
  Status read(uint64_t addr, std::span<uint8_t> bytes) override;
  /// A failed access is remembered (first one) and reported by the next
  /// run_until_idle; reads then return 0xFFFFFFFF.
  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  Status run_until_idle(uint64_t timeout_cycles) override;
  /// The card's clock is not visible: waits on the kernel interrupt for the
  /// wall time `cycles` take at the configuration's clock (at least 1 ms),
  /// in both modes (polling looks at STATUS after it); returns 0.
  Expected<uint64_t> run_for(uint64_t cycles, bool until_irq) override;
  /// Checks the call against the configuration (hls::footprint), opens its
  /// compute unit on first use and starts one xrt::run of it.
  Expected<uint64_t> start_unit(const runtime::UnitCall& call) override;
  /// run.wait with the wall-clock limit (timeout_cycles: see run_until_idle);
  /// a run not COMPLETED is aborted and named.
  Status wait_unit(uint64_t handle, uint64_t timeout_cycles) override;

  /// The HLS compute units of the loaded xclbin ("loom_hls_gemm:{loom_hls_gemm_1}").
  const std::vector<std::string>& hls_units_present() const { return hls_present_; }

  void set_config(const spec::HwConfig& cfg) { cfg_ = cfg; }
  const std::string& xclbin_path() const { return opt_.xclbin; }
  unsigned device_index() const { return opt_.device_index; }

 private:
  struct Arena {
    xrt::bo bo;
    uint64_t base = 0, size = 0;
    std::map<uint64_t, uint64_t> used;  // offset -> bytes
  };
  /// The arena holding [addr, addr + len), or nullptr.
  Arena* find(uint64_t addr, uint64_t len);
  Error xrt_error(const std::string& what, const std::exception& e) const;
  /// A sub-buffer of the arena holding [addr, addr + bytes) (bytes 0: any
  /// small piece of an arena: the kernel does not touch it).
  Expected<xrt::bo> sub_buffer(uint64_t addr, uint64_t bytes);

  struct UnitRun {
    std::string cu;
    xrt::run run;
    std::vector<xrt::bo> bufs;  // the sub-buffers the run's arguments name
  };

  spec::HwConfig cfg_;
  XrtOptions opt_;
  xrt::device dev_;
  xrt::uuid uuid_;
  xrt::ip ip_;
  bool have_ip_ = false;
  std::unique_ptr<xrt::ip::interrupt> irq_;
  uint32_t group_ = 0;
  std::vector<std::unique_ptr<Arena>> arenas_;
  std::string reg_error_;
  std::vector<std::string> hls_present_;    // HLS CUs in the xclbin
  std::map<std::string, xrt::kernel> cus_;  // opened on first use
  std::map<uint64_t, UnitRun> runs_;        // started, not yet waited for
  uint64_t next_run_ = 1;
};

/// XrtOptions from the device options xclbin, device_index, timeout_ms and
/// arena_mib (any other set option is refused for `backend`).
Expected<XrtOptions> xrt_options(std::string_view backend, const runtime::DeviceOptions& opt);

}  // namespace loom::LOOM_XRT_NS
