// The HLS compute units of a loom xclbin, by the names the Vitis link gives
// them (scripts/vitis/Makefile: `--connectivity.nk loom_hls_<kind>:<n>:
// loom_hls_<kind>_1.loom_hls_<kind>_2...`): unit u (0-based) of kernel top T
// is the instance "T_<u+1>", opened by xrt::kernel as "T:{T_<u+1>}". Which
// units a configuration has comes from the spec (hls_units, spec::HwConfig);
// the tops, their kinds and signatures from hls/units (hls::kernels()). The
// xrt backend and its emulation both name units only through this header.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/spec_gen.h"
#include "loom_hls_units.h"

namespace loom::xrt_cus {

/// Instance name of unit `unit` of kernel top `top`: "loom_hls_gemm_1".
inline std::string instance(std::string_view top, uint32_t unit) {
  return std::string(top) + "_" + std::to_string(unit + 1);
}

/// The name xrt::kernel opens exactly that compute unit by:
/// "loom_hls_gemm:{loom_hls_gemm_1}".
inline std::string cu_name(std::string_view top, uint32_t unit) {
  return std::string(top) + ":{" + instance(top, unit) + "}";
}

/// The unit index of instance `inst` of kernel top `top` ("loom_hls_gemm_2"
/// -> 1), or -1 when the instance is not named as the link names units.
inline int unit_of_instance(std::string_view top, std::string_view inst) {
  if (inst.size() <= top.size() + 1 || inst.substr(0, top.size()) != top || inst[top.size()] != '_') return -1;
  const std::string_view num = inst.substr(top.size() + 1);
  if (num.size() > 2 || num.front() == '0') return -1;
  int n = 0;
  for (char ch : num) {
    if (ch < '0' || ch > '9') return -1;
    n = n * 10 + (ch - '0');
  }
  return n - 1;
}

struct Cu {
  const hls::KernelInfo* kernel = nullptr;
  uint32_t unit = 0;
  std::string name;  // cu_name(kernel->top, unit)
};

/// Every HLS compute unit configuration `cfg` has, in hls::kernels() order.
inline std::vector<Cu> of_config(const spec::HwConfig& cfg) {
  std::vector<Cu> out;
  for (const auto& k : hls::kernels())
    for (uint32_t u = 0; u < hls::units_of(cfg, k.kind); ++u) out.push_back({&k, u, cu_name(k.top, u)});
  return out;
}

}  // namespace loom::xrt_cus
