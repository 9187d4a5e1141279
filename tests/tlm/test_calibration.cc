// Per-instruction timing of the tlm model against the RTL: single-instruction
// command streams (16 and 48 copies of one LOAD, STORE, GEMM, POSTOP, POOL, ELTWISE, ROWNORM or DWCONV on
// one core; the per-instruction cost is the difference over 32) on tlm and,
// when LOOM_TLM_RTL_LOOM names a `loom` binary with the rtl backend, on the
// RTL in a separate process. These streams are how the constants of
// host/hw/timing.h were measured (docs/performance.md); live, each case must
// agree within 5 % or 3 cycles.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/executor.h"
#include "support/insn_builders.h"
#include "tlm/tlm_device.h"

namespace loom::tlm_test {
namespace {

struct Case {
  const char* config;
  const char* kind;  // load, store, gemm, postop, pool, eltwise, rownorm, dwconv
  // load/store: rows, cols, stride, pad_lo; gemm: m, n, k, accumulate; postop: m, n, residual, rescale;
  // pool: pixels, window, channels, avg; eltwise: count; rownorm: m, n, ln;
  // dwconv: kernel (kh = kw), stride, channels, output pixels a row (two rows)
  uint64_t a, b, c, d;
};

constexpr Case kCases[] = {
    {"tiny", "load", 1, 8, 0, 0},      {"tiny", "load", 4, 8, 0, 0},     {"tiny", "load", 8, 64, 0, 0},
    {"tiny", "load", 64, 64, 0, 0},    {"tiny", "load", 16, 256, 0, 0},  {"tiny", "load", 15, 8, 8, 1},
    {"tiny", "load", 0, 8, 8, 16},     {"tiny", "load", 8, 1, 32, 0},    {"tiny", "store", 1, 8, 0, 0},
    {"tiny", "store", 8, 64, 0, 0},    {"tiny", "store", 64, 1, 32, 0},  {"tiny", "store", 1, 2048, 0, 0},
    {"tiny", "gemm", 4, 4, 64, 0},     {"tiny", "gemm", 16, 16, 64, 0},  {"tiny", "gemm", 16, 16, 64, 1},
    {"tiny", "gemm", 1, 4, 16, 0},     {"tiny", "postop", 1, 4, 0, 0},   {"tiny", "postop", 16, 64, 0, 0},
    {"small", "gemm", 16, 8, 64, 1},   {"small", "gemm", 32, 32, 16, 1}, {"small", "postop", 16, 16, 0, 0},
    {"small", "load", 8, 64, 0, 0},    {"small", "store", 8, 64, 0, 0},
    // The row-wide element datapath: single and multi-chunk POSTOPs, partial
    // chunks, residuals, POOL over several channel chunks, ELTWISE tails.
    {"tiny", "postop", 7, 3, 0, 0},    {"tiny", "postop", 5, 10, 1, 0},  {"tiny", "postop", 64, 4, 1, 0},
    {"small", "postop", 40, 24, 0, 0}, {"small", "postop", 1, 100, 0, 0},
    // POSTOP rescale (a requantizing add behind the post-op).
    {"tiny", "postop", 16, 4, 1, 1},   {"tiny", "postop", 9, 20, 1, 1},  {"small", "postop", 32, 40, 1, 1},
    {"tiny", "pool", 8, 9, 64, 0},     {"tiny", "pool", 5, 4, 7, 1},     {"small", "pool", 4, 9, 72, 1},
    {"tiny", "eltwise", 100, 0, 0, 0}, {"tiny", "eltwise", 1024, 0, 0, 0}, {"small", "eltwise", 333, 0, 0, 0},
    // ROWNORM: softmax and layer normalization, rows shorter and longer than
    // a read, partial beats and chunks.
    {"tiny", "rownorm", 1, 1, 0, 0},   {"tiny", "rownorm", 4, 64, 0, 0},  {"tiny", "rownorm", 3, 37, 0, 0},
    {"tiny", "rownorm", 1, 1, 1, 0},   {"tiny", "rownorm", 4, 64, 1, 0},  {"tiny", "rownorm", 3, 37, 1, 0},
    {"small", "rownorm", 8, 77, 0, 0}, {"small", "rownorm", 2, 200, 0, 0}, {"small", "rownorm", 8, 77, 1, 0},
    {"small", "rownorm", 2, 200, 1, 0},
    // DWCONV: 3 x 3 (the reader never waits), 1 x 1 and 2 x 2 (it waits for
    // the writer), strides, partial and several channel chunks.
    {"tiny", "dwconv", 3, 1, 32, 4},   {"tiny", "dwconv", 3, 2, 20, 3},  {"tiny", "dwconv", 1, 1, 37, 4},
    {"tiny", "dwconv", 5, 1, 16, 2},   {"small", "dwconv", 3, 1, 64, 4}, {"small", "dwconv", 1, 1, 70, 5},
    {"small", "dwconv", 2, 2, 40, 3},
};

std::string name_of(const Case& k) {
  return std::string(k.config) + " " + k.kind + " " + std::to_string(k.a) + "," + std::to_string(k.b) + "," +
         std::to_string(k.c) + "," + std::to_string(k.d);
}

/// A one-core plan: (POSTOP only: a PARAM table and a FENCE first), `n`
/// copies of the case's instruction, END.
plan::Plan make_plan(const Case& k, int n) {
  plan::Plan p;
  p.config = k.config;
  p.graph_name = "calibration";
  p.compiler = "tests/tlm";
  p.memory_bytes = 1u << 22;
  std::vector<spec::Insn> s;
  const std::string kind = k.kind;
  if (kind == "postop" || kind == "pool" || kind == "eltwise" || kind == "rownorm") {
    std::vector<int32_t> prm;
    // (bias, multiplier, shift); a rescale reads the pair after n triples as
    // (a_mult, a_shift), which this table makes legal. ROWNORM layernorm
    // reads (b, g, sh) = (2^20, 8, 8), softmax the same words as its table.
    for (int i = 0; i < 256; ++i) prm.insert(prm.end(), {1 << 20, 8, 8});
    p.constants = test::le32(prm);
    p.constants_offset = 1u << 21;
    s.push_back(test::load(spec::Buffer::PARAM, 0, p.constants_offset, 1, p.constants.size()));
    s.push_back(test::fence());
  }
  for (int i = 0; i < n; ++i) {
    const uint64_t dram = 4096 * uint64_t(i % 64);
    if (kind == "load") s.push_back(test::load(spec::Buffer::IN, 0, dram, k.a, k.b, k.c ? k.c : k.b, 0, k.d, 0));
    if (kind == "store") s.push_back(test::store(spec::Buffer::OUT, 0, dram, k.a, k.b, k.c ? k.c : k.b));
    if (kind == "gemm") {
      spec::GemmInsn g;
      g.m = k.a, g.n = k.b, g.k_len = k.c, g.accumulate = k.d;
      g.lda = k.c, g.ldb = k.b, g.ldc = 4 * k.b;
      s.push_back(g.encode());
    }
    if (kind == "postop") {
      spec::PostopInsn q;
      q.m = k.a, q.n = k.b, q.clip_lo = -128, q.clip_hi = 127;
      q.acc_addr = 0, q.out_addr = 0, q.param_addr = 0;
      q.residual = k.c != 0, q.res_addr = 0, q.res_mult = 1 << 20, q.res_shift = 8;
      q.rescale = k.d != 0, q.add_lo = -128, q.add_hi = 127;
      s.push_back(q.encode());
    }
    if (kind == "pool") {
      spec::PoolInsn q;
      q.p = k.a, q.win = k.b, q.c = k.c, q.avg = k.d != 0, q.mult = 1 << 20, q.shift = 20;
      q.in_addr = 0, q.out_addr = 0, q.clip_lo = -128, q.clip_hi = 127;
      s.push_back(q.encode());
    }
    if (kind == "rownorm") {
      spec::RownormInsn q;
      q.m = k.a, q.n = k.b, q.ln = k.c != 0, q.in_addr = 0, q.out_addr = 0, q.param_addr = 0;
      q.mult = 1 << 30, q.shift = 38, q.eps = 16, q.clip_lo = -128, q.clip_hi = 127;
      s.push_back(q.encode());
    }
    if (kind == "dwconv") {
      spec::DwconvInsn q;
      q.kh = k.a, q.kw = k.a, q.stride = k.b, q.c = k.c, q.ow = k.d, q.oh = 2;
      q.ldi = ((k.d - 1) * k.b + k.a) * k.c, q.in_addr = 0, q.wgt_addr = 0, q.acc_addr = 0, q.a_zp = 3, q.b_zp = -2;
      s.push_back(q.encode());
    }
    if (kind == "eltwise") {
      spec::EltwiseInsn q;
      q.count = k.a, q.a_addr = 0, q.b_addr = 4096, q.out_addr = 0;
      q.a_mult = 1 << 20, q.a_shift = 20, q.b_mult = 1 << 19, q.b_shift = 20, q.clip_lo = -128, q.clip_hi = 127;
      s.push_back(q.encode());
    }
  }
  s.push_back(test::end_insn());
  p.cores.push_back(std::move(s));
  return p;
}

/// cycles_busy of core 0 on tlm.
uint64_t tlm_busy(const plan::Plan& p) {
  auto dev = tlm::make_tlm_device(*spec::find_config(p.config));
  EXPECT_TRUE(dev) << dev.error().str();
  if (!dev) return 0;
  auto res = runtime::execute(**dev, p, {});
  EXPECT_TRUE(res) << res.error().str();
  return res ? res->cores.at(0).counters[size_t(spec::Counter::CYCLES_BUSY)] : 0;
}

/// cycles_busy of core 0 on the RTL through `loom run`; 0 on failure.
uint64_t rtl_busy(const std::string& loom, const plan::Plan& p, const std::string& file) {
  if (!plan::write_plan(p, file)) return 0;
  const std::string cmd = loom + " run " + file + " --backend rtl --json 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> f(popen(cmd.c_str(), "r"), pclose);
  if (!f) return 0;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f.get())) > 0;) out.append(buf, n);
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("\"cycles_busy\": ([0-9]+)"))) return 0;
  return std::stoull(m[1].str());
}

TEST(TlmCalibration, SingleInstructionStreams) {
  const char* live = std::getenv("LOOM_TLM_RTL_LOOM");
  const char* configs = std::getenv("LOOM_TLM_ACCURACY_CONFIGS");
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string file = dir + "/loom_tlm_calibration_" + std::to_string(::getpid()) + ".plan";
  std::printf("\n%-28s %10s %10s\n", "case (per instruction)", "tlm", live ? "rtl" : "");
  int n = 0;
  // Appended, not `"," + std::string(...)`: GCC 12 bug 105329 (CMakeLists.txt).
  std::string wanted = ",";
  if (configs != nullptr) wanted.append(configs).append(",");
  for (const Case& k : kCases) {
    if (configs != nullptr && wanted.find(std::string(",").append(k.config).append(",")) == std::string::npos)
      continue;
    const plan::Plan p16 = make_plan(k, 16), p48 = make_plan(k, 48);
    const uint64_t t16 = tlm_busy(p16), t48 = tlm_busy(p48);
    ASSERT_GT(t48, t16) << name_of(k);
    const double tlm = double(t48 - t16) / 32;
    ++n;
    if (live == nullptr) {
      std::printf("%-28s %10.1f\n", name_of(k).c_str(), tlm);
      continue;
    }
    const uint64_t r16 = rtl_busy(live, p16, file), r48 = rtl_busy(live, p48, file);
    ASSERT_TRUE(r16 > 0 && r48 > r16) << name_of(k) << ": rtl run failed (" << live << " run PLAN --backend rtl)";
    const double rtl = double(r48 - r16) / 32;
    std::printf("%-28s %10.1f %10.1f %+6.1f%%\n", name_of(k).c_str(), tlm, rtl, 100 * (tlm - rtl) / rtl);
    EXPECT_LE(std::fabs(tlm - rtl), std::max(3.0, 0.05 * rtl)) << name_of(k) << ": tlm " << tlm << ", rtl " << rtl;
  }
  std::filesystem::remove(file);
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace loom::tlm_test
