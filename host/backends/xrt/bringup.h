// `loom bringup`: ordered board checks modelled on `xbutil validate`, run
// against any backend that offers a bringup::Target (xrt, xrt-emu). Each
// check passes, fails or is skipped with a reason; a check whose
// prerequisite failed is skipped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "device/device.h"

namespace loom::bringup {

/// What bringup needs from a backend beyond runtime::Device: the steps of
/// opening a card one at a time, and its interrupt.
class Target {
 public:
  virtual ~Target() = default;
  virtual std::string backend() const = 0;
  /// True for an emulation, whose slow checks are capped.
  virtual bool emulated() const = 0;
  /// Opens the card; the error says why not (e.g. "no device").
  virtual Status open_device() = 0;
  /// Loads the xclbin and opens the kernel's register map; returns its UUID.
  virtual Expected<std::string> load_xclbin() = 0;
  /// The device, once load_xclbin() succeeded.
  virtual runtime::Device& device() = 0;
  /// Replaces the configuration the device was opened with (after the
  /// identity check found the card's from HWCFG).
  virtual void set_config(const spec::HwConfig& cfg) = 0;
  /// Opens and enables the host's notification of the kernel interrupt;
  /// done before the interrupt can be raised.
  virtual Status arm_interrupt() = 0;
  /// Waits up to `timeout_ms` for the armed interrupt: true when it fired,
  /// false on timeout.
  virtual Expected<bool> wait_interrupt(unsigned timeout_ms) = 0;
  /// Where the card and xclbin came from, for the report.
  virtual std::string describe() const = 0;
  /// The HLS compute units of the loaded xclbin, by the names xrt::kernel
  /// opens them by ("loom_hls_gemm:{loom_hls_gemm_1}", hls_cus.h).
  virtual std::vector<std::string> hls_units() const { return {}; }
};

enum class Outcome { Pass, Fail, Skip };

struct Check {
  std::string name;
  Outcome outcome = Outcome::Skip;
  std::string detail;  // the reason, or what was measured
  // Measurements for --json: (name, value).
  std::vector<std::pair<std::string, double>> values;
};

struct Options {
  /// Largest DMA loopback size; sizes run from 4 KiB upwards in x4 steps.
  uint64_t dma_max_bytes = uint64_t(64) << 20;
  /// Wall-clock limit on the interrupt wait.
  unsigned irq_timeout_ms = 2000;
  /// Take the configuration from HWCFG instead of checking it against the
  /// one the target was opened with (no --config given).
  bool infer_config = false;
};

/// Runs the checks in order: device opened, xclbin loaded, identity
/// registers, scratch register, DMA loopback, smoke GEMM on every core,
/// counters, window violation, interrupt, HLS units.
std::vector<Check> run(Target& t, const Options& opt);

const char* outcome_name(Outcome o);

/// The "hls units" check (bringup_hls.cc): one smoke call on every HLS
/// compute unit of the target, compared with the kernel's C function; sets
/// `c.outcome` to Skip (and returns true) when the xclbin has none.
bool hls_units_check(Target& t, Check& c);

}  // namespace loom::bringup
