// The bringup checks (see bringup.h). Everything goes through the spec's
// register map and runtime::execute, so a check that passes here passes for
// the same reason on a card.
#include "backends/xrt/bringup.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "compiler/compiler.h"
#include "driver/compile.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace loom::bringup {
namespace {

namespace cr = spec::core_reg;

std::string size_str(uint64_t b) {
  if (b >= (uint64_t(1) << 20)) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

std::string fixed(double v, int prec = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// The smoke GEMM: small enough for the emulation, a multiple of every
// configuration's array so the MAC counter has one right answer.
constexpr int64_t kM = 16, kN = 16, kK = 32;

uint64_t counter(runtime::Device& d, unsigned core, spec::Counter c) {
  const uint32_t off = spec::core_reg_addr(core, spec::counter_offset(c));
  const uint64_t lo = d.read_reg(off);
  return lo | (uint64_t(d.read_reg(off + 4)) << 32);
}

class Runner {
 public:
  Runner(Target& t, const Options& opt) : t_(t), opt_(opt) {}

  std::vector<Check> run() {
    const bool opened = step("device opened", {}, [&](Check& c) { return open(c); });
    const bool loaded = step("xclbin loaded", {opened}, [&](Check& c) { return load(c); });
    const bool ident = step("identity registers", {loaded}, [&](Check& c) { return identity(c); });
    step("scratch register", {ident}, [&](Check& c) { return scratch(c); });
    step("dma loopback", {ident}, [&](Check& c) { return dma(c); });
    const bool gemm = step("smoke gemm", {ident}, [&](Check& c) { return smoke(c); });
    step("counters", {gemm}, [&](Check& c) { return counters(c); });
    step("window violation", {gemm}, [&](Check& c) { return window(c); });
    step("interrupt", {ident}, [&](Check& c) { return interrupt(c); });
    step("hls units", {ident}, [&](Check& c) { return hls_units_check(t_, c); });
    return checks_;
  }

 private:
  template <class F>
  bool step(const char* name, std::initializer_list<bool> needs, F&& f) {
    Check c;
    c.name = name;
    for (bool n : needs) {
      if (!n) {
        c.outcome = Outcome::Skip;
        c.detail = "a prerequisite failed";
        checks_.push_back(c);
        return false;
      }
    }
    c.outcome = Outcome::Pass;
    const bool ok = f(c);  // a check may set Skip itself (nothing to check)
    if (!ok) c.outcome = Outcome::Fail;
    checks_.push_back(c);
    return ok;
  }
  static bool failed(Check& c, std::string why) {
    c.detail = std::move(why);
    return false;
  }

  bool open(Check& c) {
    Status s = t_.open_device();
    if (!s) return failed(c, s.error().what);
    c.detail = t_.describe();
    return true;
  }

  bool load(Check& c) {
    auto u = t_.load_xclbin();
    if (!u) return failed(c, u.error().what);
    c.detail = "uuid " + *u;
    return true;
  }

  bool identity(Check& c) {
    auto& d = t_.device();
    const uint32_t id = d.read_reg(spec::reg::ID), ver = d.read_reg(spec::reg::VERSION),
                   hw = d.read_reg(spec::reg::HWCFG);
    if (id != spec::kIdValue)
      return failed(c, "ID reads " + hex(id) + ", expected " + hex(spec::kIdValue) + " (\"LOOM\")");
    if (spec::field_get(ver, spec::reg::VERSION_MAJOR_MASK) != spec::kVersionMajor)
      return failed(c, "VERSION " + std::to_string(spec::field_get(ver, spec::reg::VERSION_MAJOR_MASK)) + "." +
                           std::to_string(spec::field_get(ver, spec::reg::VERSION_MINOR_MASK)) + ", expected major " +
                           std::to_string(spec::kVersionMajor));
    const auto shape = [](const spec::HwConfig& k) { return spec::hwcfg_value(k); };
    if (opt_.infer_config) {
      const spec::HwConfig* found = nullptr;
      unsigned n = 0;
      for (const auto& k : spec::kConfigs)
        if (shape(k) == hw) found = &k, ++n;
      if (n != 1)
        return failed(c, "HWCFG " + hex(hw) + " matches " +
                             (n ? "several named configurations" : "no named configuration") + "; give --config");
      t_.set_config(*found);
      c.detail = "(configuration from HWCFG) ";
    }
    const auto& cfg2 = d.config();
    if (hw != shape(cfg2))
      return failed(c, "HWCFG " + hex(hw) + ", configuration '" + std::string(cfg2.name) + "' is " + hex(shape(cfg2)));
    c.detail += "ID " + hex(id) + ", version " + std::to_string(spec::field_get(ver, spec::reg::VERSION_MAJOR_MASK)) +
                "." + std::to_string(spec::field_get(ver, spec::reg::VERSION_MINOR_MASK)) + ", HWCFG " + hex(hw) +
                " = '" + std::string(cfg2.name) + "'";
    return true;
  }

  bool scratch(Check& c) {
    auto& d = t_.device();
    std::vector<uint32_t> pats{0u, 0xFFFFFFFFu, 0xA5A5A5A5u, 0x5A5A5A5Au};
    for (unsigned b = 0; b < 32; ++b) pats.push_back(1u << b);
    const uint32_t saved = d.read_reg(spec::reg::SCRATCH);
    for (uint32_t p : pats) {
      d.write_reg(spec::reg::SCRATCH, p);
      const uint32_t r = d.read_reg(spec::reg::SCRATCH);
      if (r != p) return failed(c, "SCRATCH wrote " + hex(p) + ", read " + hex(r));
    }
    d.write_reg(spec::reg::SCRATCH, saved);
    c.detail =
        std::to_string(pats.size()) + " patterns (walking ones, 0, ~0, 0xA5.., 0x5A..) at " + hex(spec::reg::SCRATCH);
    return true;
  }

  bool dma(Check& c) {
    auto& d = t_.device();
    std::mt19937_64 rng(7);
    double best_w = 0, best_r = 0;
    uint64_t last = 0;
    for (uint64_t n = 4096; n <= opt_.dma_max_bytes; n *= 4) {
      std::vector<uint8_t> out(n), back(n);
      for (size_t i = 0; i < n; i += 8) {
        const uint64_t v = rng();
        for (size_t k = 0; k < 8 && i + k < n; ++k) out[i + k] = uint8_t(v >> (8 * k));
      }
      auto a = d.alloc(n);
      if (!a) return failed(c, size_str(n) + ": " + a.error().str());
      const auto t0 = std::chrono::steady_clock::now();
      Status ws = d.write(*a, out);
      const auto t1 = std::chrono::steady_clock::now();
      Status rs = ws ? d.read(*a, back) : ws;
      const auto t2 = std::chrono::steady_clock::now();
      d.free(*a);
      if (!rs) return failed(c, size_str(n) + ": " + rs.error().str());
      for (size_t i = 0; i < n; ++i)
        if (out[i] != back[i])
          return failed(
              c, size_str(n) + ": byte " + std::to_string(i) + " wrote " + hex(out[i]) + ", read back " + hex(back[i]));
      const double w = double(n) / 1e6 / std::max(std::chrono::duration<double>(t1 - t0).count(), 1e-9);
      const double r = double(n) / 1e6 / std::max(std::chrono::duration<double>(t2 - t1).count(), 1e-9);
      c.values.emplace_back("h2d_MBps_" + std::to_string(n), w);
      c.values.emplace_back("d2h_MBps_" + std::to_string(n), r);
      best_w = std::max(best_w, w);
      best_r = std::max(best_r, r);
      last = n;
    }
    c.detail = "4 KiB .. " + size_str(last) + " (x4 steps) bit-exact; peak host->device " + fixed(best_w) +
               " MB/s, device->host " + fixed(best_r) + " MB/s";
    if (opt_.dma_max_bytes < (uint64_t(64) << 20)) c.detail += "; capped at " + size_str(last) + " (--dma-max-mib)";
    if (t_.emulated()) c.detail += "; emulation: the bandwidth is a host memory copy, not PCIe";
    return true;
  }

  bool smoke(Check& c) {
    auto& d = t_.device();
    const auto& cfg = d.config();
    ir::GraphBuilder b("bringup_gemm", 11);
    const auto a = b.input("a", {kM, kK});
    b.output(b.gemm("fc", a, kN));
    graph_ = b.graph();
    Status vs = ir::validate(graph_);
    if (!vs) return failed(c, "graph: " + vs.error().str());
    compiler::CompileOptions co;
    co.num_cores = 1;
    auto comp = driver::compile_program(driver::Source::graph_of(graph_), cfg, co);
    if (!comp) return failed(c, "compile: " + comp.error().str());
    plan_ = comp->segments.at(0).plan;
    inputs_ = ir::random_inputs(graph_, 5);
    auto golden = ir::run_reference(graph_, inputs_);
    if (!golden) return failed(c, "golden model: " + golden.error().str());
    for (unsigned core = 0; core < cfg.cores; ++core) {
      // The stream on `core`; lower cores get an END only.
      plan::Plan p = plan_;
      p.cores.assign(core + 1, {spec::EndInsn{}.encode()});
      p.cores[core] = plan_.cores[0];
      auto res = runtime::execute(d, p, inputs_);
      if (!res) return failed(c, "core " + std::to_string(core) + ": " + res.error().str());
      for (const auto& [name, t] : res->outputs)
        if (!golden->count(name) || !(golden->at(name) == t))
          return failed(c, "core " + std::to_string(core) + ": output '" + name + "' differs from the golden model");
      reports_.push_back(res->cores[core]);
    }
    c.detail = "GEMM " + std::to_string(kM) + "x" + std::to_string(kK) + " * " + std::to_string(kK) + "x" +
               std::to_string(kN) + " on each of " + std::to_string(cfg.cores) +
               " cores: bit-exact with the golden model";
    return true;
  }

  bool counters(Check& c) {
    auto& d = t_.device();
    const uint64_t macs = uint64_t(kM * kN * kK);
    const unsigned last = unsigned(reports_.size() - 1);  // the last core run still holds its counters
    for (unsigned core = 0; core < reports_.size(); ++core) {
      const auto& r = reports_[core];
      const uint64_t got = r.counters[size_t(spec::Counter::MACS)];
      if (got != macs)
        return failed(c, "core " + std::to_string(core) + ": MACS " + std::to_string(got) + ", the GEMM has " +
                             std::to_string(macs));
      uint64_t insns = 0;
      for (auto k :
           {spec::Counter::INSN_LOAD, spec::Counter::INSN_COMPUTE, spec::Counter::INSN_STORE, spec::Counter::INSN_SYNC})
        insns += r.counters[size_t(k)];
      if (insns != r.instructions)
        return failed(c, "core " + std::to_string(core) + ": instruction counters sum to " + std::to_string(insns) +
                             ", the stream has " + std::to_string(r.instructions));
      if (r.counters[size_t(spec::Counter::CYCLES_BUSY)] == 0)
        return failed(c, "core " + std::to_string(core) + ": cycles_busy is 0 after a run");
    }
    // Monotonic: no counter of the last core goes backwards between reads.
    for (int pass = 0; pass < 2; ++pass)
      for (unsigned k = 0; k < spec::kNumCounters; ++k) {
        const uint64_t v = counter(d, last, spec::Counter(k));
        if (v < reports_[last].counters[k])
          return failed(c, "core " + std::to_string(last) + ": counter " + std::string(spec::kCounterNames[k]) +
                               " went from " + std::to_string(reports_[last].counters[k]) + " to " + std::to_string(v));
      }
    c.detail = "macs = M*N*K = " + std::to_string(macs) +
               " and instruction counts match on every core; no counter "
               "decreases across reads";
    return true;
  }

  bool window(Check& c) {
    auto& d = t_.device();
    plan::Plan p = plan_;
    bool moved = false;
    for (auto& in : p.cores[0]) {
      if (spec::Opcode(spec::get_bits(in, 0, 6)) != spec::Opcode::LOAD) continue;
      auto l = spec::LoadInsn::decode(in);
      l.dram_addr = p.memory_bytes;  // the first byte past the core's window
      in = l.encode();
      moved = true;
      break;
    }
    if (!moved) return failed(c, "the smoke GEMM has no LOAD to move");
    auto res = runtime::execute(d, p, inputs_);
    const std::string want = "device error " + std::string(spec::kErrorNames[3]) + " at";
    if (res) return failed(c, "a LOAD past the window completed without an error");
    if (res.error().str().find(want) == std::string::npos)
      return failed(c, "expected cause '" + std::string(spec::kErrorNames[3]) + "', got: " + res.error().str());
    // The executor soft-resets the core; it must run cleanly again.
    auto again = runtime::execute(d, plan_, inputs_);
    if (!again) return failed(c, "core 0 did not recover after SOFT_RESET: " + again.error().str());
    c.detail = "a LOAD one byte past WIN_LIMIT raised '" + std::string(spec::kErrorNames[3]) +
               "' on core 0, which then ran cleanly after SOFT_RESET";
    return true;
  }

  bool interrupt(Check& c) {
    auto& d = t_.device();
    const auto& cfg = d.config();
    const uint32_t size = std::min<uint32_t>(16, cfg.ring_depth);
    auto ring = d.alloc(uint64_t(size) * spec::kInsnBytes);
    if (!ring) return failed(c, ring.error().str());
    struct Free {
      runtime::Device& d;
      uint64_t a;
      ~Free() { d.free(a); }
    } guard{d, *ring};
    d.write_reg(spec::reg::SOFT_RESET, 1u);
    runtime::write_reg64(d, spec::core_reg_addr(0, cr::RING_BASE_LO), spec::core_reg_addr(0, cr::RING_BASE_HI), *ring);
    d.write_reg(spec::core_reg_addr(0, cr::RING_SIZE), size);
    runtime::write_reg64(d, spec::core_reg_addr(0, cr::WIN_BASE_LO), spec::core_reg_addr(0, cr::WIN_BASE_HI), *ring);
    const uint64_t lim = *ring + uint64_t(size) * spec::kInsnBytes;
    runtime::write_reg64(d, spec::core_reg_addr(0, cr::WIN_LIMIT_LO), spec::core_reg_addr(0, cr::WIN_LIMIT_HI), lim);
    d.write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
    const uint32_t before = d.read_reg(spec::reg::IRQ_STATUS);
    if (before != 0) return failed(c, "IRQ_STATUS reads " + hex(before) + " after clearing every bit");
    d.write_reg(spec::reg::IRQ_ENABLE, spec::reg::IRQ_ENABLE_DONE(0));
    Status armed = t_.arm_interrupt();
    if (!armed) return failed(c, armed.error().str());
    const uint32_t head = d.read_reg(spec::core_reg_addr(0, cr::RING_HEAD)) & (size - 1);
    const spec::Insn end = spec::EndInsn{}.encode();
    Status ws =
        d.write(*ring + uint64_t(head) * spec::kInsnBytes, {reinterpret_cast<const uint8_t*>(&end), sizeof end});
    if (!ws) return failed(c, ws.error().str());
    d.write_reg(spec::core_reg_addr(0, cr::RING_TAIL), (head + 1) & (size - 1));
    d.write_reg(spec::core_reg_addr(0, cr::DOORBELL), 1u);
    auto fired = t_.wait_interrupt(opt_.irq_timeout_ms);
    if (!fired) return failed(c, fired.error().str());
    const uint32_t st = d.read_reg(spec::reg::IRQ_STATUS);
    d.write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
    d.write_reg(spec::reg::IRQ_ENABLE, 0u);
    if (!*fired)
      return failed(
          c, "no interrupt within " + std::to_string(opt_.irq_timeout_ms) + " ms of an END on core 0 (IRQ_STATUS " +
                 hex(st) +
                 (st & spec::reg::IRQ_STATUS_DONE(0) ? ": the kernel raised it, the host never saw it)" : ")"));
    if (!(st & spec::reg::IRQ_STATUS_DONE(0)))
      return failed(c, "an interrupt arrived but IRQ_STATUS reads " + hex(st) + " (no core 0 completion)");
    const uint32_t after = d.read_reg(spec::reg::IRQ_STATUS);
    if (after != 0) return failed(c, "IRQ_STATUS reads " + hex(after) + " after write-1-to-clear");
    c.detail = "END on core 0 raised the completion interrupt (IRQ_STATUS " + hex(st) + "), cleared by write-1";
    return true;
  }

  Target& t_;
  Options opt_;
  std::vector<Check> checks_;
  ir::Graph graph_;
  plan::Plan plan_;
  std::map<std::string, Tensor> inputs_;
  std::vector<runtime::CoreReport> reports_;
};

}  // namespace

std::vector<Check> run(Target& t, const Options& opt) { return Runner(t, opt).run(); }

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass:
      return "pass";
    case Outcome::Fail:
      return "fail";
    case Outcome::Skip:
      return "skip";
  }
  return "?";
}

}  // namespace loom::bringup
