// FabricSim over any Verilated loom_fabric class: owns the VerilatedContext and
// the model, and maps the packed per-port AXI vectors to AxiPins.
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "hw/verilated/coverage.h"
#include "hw/verilated/fabric_sim.h"
#include "hw/verilated/pins.h"

namespace loom::hw {

template <class Model>
class VerilatedFabric final : public FabricSim {
 public:
  /// `tracing` must be decided before the model exists (Verilator compiles
  /// the trace hooks in but only arms them when asked up front).
  /// `cov_tag` names the coverage file of a coverage build (coverage.h).
  VerilatedFabric(const FabricShape& shape, bool tracing, std::string cov_tag = "fabric")
      : shape_(shape), ctx_(std::make_unique<VerilatedContext>()), cov_tag_(std::move(cov_tag)) {
    // commandArgs must precede the model; no plusargs are passed through a
    // library, but an empty vector still initialises the context.
    const char* argv[] = {"loom_rtl"};
    ctx_->commandArgs(1, argv);
    // An assertion failure is reported as an error value by the device
    // rather than aborting the process that hosts the backend.
    ctx_->fatalOnError(false);
    // Every model is verilated single-threaded: no thread pool (by default
    // a context makes one of a thread per host CPU, which would sit idle).
    ctx_->threads(1);
    tracing_ = tracing && kTraced;
    ctx_->traceEverOn(tracing_);
    model_ = std::make_unique<Model>(ctx_.get());
  }
  ~VerilatedFabric() override {
    // Verilator unregisters a model through the calling thread's current
    // context, which is the last one made; with several models alive that is
    // another model's, and teardown would wait on it forever.
    Verilated::threadContextp(ctx_.get());
    finish();
    trace_.reset();
    model_.reset();
    Verilated::threadContextp(nullptr);
  }

  FabricShape shape() const override { return shape_; }
  void set_clk(bool v) override { model_->clk_i = v; }
  void set_rst_n(bool v) override { model_->rst_ni = v; }
  void eval() override { model_->eval(); }
  void advance_time() override { ctx_->timeInc(1); }
  void dump() override {
    if (trace_) trace_->dump(ctx_->time());
  }

  void put_port(unsigned port, const hw::AxiPins& p) override {
    Model& m = *model_;
    const unsigned db = shape_.mem_bytes;
    pins::set(m.m_axi_awready, port, 1, p.awready);
    pins::set(m.m_axi_wready, port, 1, p.wready);
    pins::set(m.m_axi_arready, port, 1, p.arready);
    pins::set(m.m_axi_bvalid, port, 1, p.bvalid);
    pins::set(m.m_axi_bresp, 2 * port, 2, p.bresp);
    pins::set(m.m_axi_bid, 4 * port, 4, p.bid);
    pins::set(m.m_axi_rvalid, port, 1, p.rvalid);
    pins::set(m.m_axi_rlast, port, 1, p.rlast);
    pins::set(m.m_axi_rresp, 2 * port, 2, p.rresp);
    pins::set(m.m_axi_rid, 4 * port, 4, p.rid);
    pins::set_bytes(m.m_axi_rdata, db * port, std::span<const uint8_t>(p.rdata.data(), db));
  }

  void get_port(unsigned port, hw::AxiPins& p) const override {
    const Model& m = *model_;
    const unsigned db = shape_.mem_bytes;
    p.awvalid = pins::get(m.m_axi_awvalid, port, 1);
    p.awaddr = pins::get(m.m_axi_awaddr, 64 * port, 64);
    p.awlen = uint8_t(pins::get(m.m_axi_awlen, 8 * port, 8));
    p.awsize = uint8_t(pins::get(m.m_axi_awsize, 3 * port, 3));
    p.awburst = uint8_t(pins::get(m.m_axi_awburst, 2 * port, 2));
    p.awid = uint8_t(pins::get(m.m_axi_awid, 4 * port, 4));
    p.wvalid = pins::get(m.m_axi_wvalid, port, 1);
    p.wlast = pins::get(m.m_axi_wlast, port, 1);
    pins::get_bytes(m.m_axi_wdata, db * port, std::span<uint8_t>(p.wdata.data(), db));
    p.wstrb = pins::get(m.m_axi_wstrb, db * port, db);
    p.bready = pins::get(m.m_axi_bready, port, 1);
    p.arvalid = pins::get(m.m_axi_arvalid, port, 1);
    p.araddr = pins::get(m.m_axi_araddr, 64 * port, 64);
    p.arlen = uint8_t(pins::get(m.m_axi_arlen, 8 * port, 8));
    p.arsize = uint8_t(pins::get(m.m_axi_arsize, 3 * port, 3));
    p.arburst = uint8_t(pins::get(m.m_axi_arburst, 2 * port, 2));
    p.arid = uint8_t(pins::get(m.m_axi_arid, 4 * port, 4));
    p.rready = pins::get(m.m_axi_rready, port, 1);
  }

  void put_lite(const hw::LitePins& p) override {
    Model& m = *model_;
    m.s_axi_control_awvalid = p.awvalid;
    m.s_axi_control_awaddr = p.awaddr & 0xFFFu;
    m.s_axi_control_wvalid = p.wvalid;
    m.s_axi_control_wdata = p.wdata;
    m.s_axi_control_wstrb = p.wstrb;
    m.s_axi_control_bready = p.bready;
    m.s_axi_control_arvalid = p.arvalid;
    m.s_axi_control_araddr = p.araddr & 0xFFFu;
    m.s_axi_control_rready = p.rready;
  }

  void get_lite(hw::LitePins& p) const override {
    const Model& m = *model_;
    p.awready = m.s_axi_control_awready;
    p.wready = m.s_axi_control_wready;
    p.bvalid = m.s_axi_control_bvalid;
    p.bresp = m.s_axi_control_bresp;
    p.arready = m.s_axi_control_arready;
    p.rvalid = m.s_axi_control_rvalid;
    p.rdata = m.s_axi_control_rdata;
    p.rresp = m.s_axi_control_rresp;
  }

  bool preload_semaphore(unsigned i, uint32_t v) override {
    if constexpr (kSemBackdoor) {
      auto& q = model_->rootp->loom_fabric__DOT__u_sem__DOT__value_q;  // NumSems x 32 bits
      if (i >= sizeof(q) / sizeof(uint32_t)) return false;
      if constexpr (std::is_integral_v<std::remove_reference_t<decltype(q)>>) {
        using T = std::remove_reference_t<decltype(q)>;
        q = T((q & ~(T(0xFFFFFFFFu) << (32 * i))) | (T(v) << (32 * i)));
      } else {
        q[i] = v;
      }
      return true;
    } else {
      (void)i, (void)v;
      return false;
    }
  }

  bool interrupt() const override { return model_->interrupt_o; }
  bool assertion_failed() const override { return ctx_->gotError(); }

  bool open_trace(const std::string& path) override {
    if constexpr (kTraced) {
      if (trace_) return true;
      if (!tracing_) return false;
      trace_ = std::make_unique<VerilatedFstC>();
      model_->trace(trace_.get(), 99);
      trace_->open(path.c_str());
      return trace_->isOpen();
    } else {
      (void)path;
      return false;
    }
  }

  void finish() override {
    if (finished_) return;
    finished_ = true;
    model_->final();
    write_coverage<LOOM_VM_COVERAGE>(ctx_.get(), cov_tag_);
    if (trace_) trace_->close();
  }

 private:
  /// Whether the model was verilated with --trace-fst (the fast build is not).
  static constexpr bool kTraced = requires(Model & m, VerilatedFstC* t) { m.trace(t, 99); };
  /// Whether the semaphore counters are writable (rtl/loom.vlt; the model's
  /// root header must be included before this one).
  static constexpr bool kSemBackdoor = requires(Model & m) { m.rootp->loom_fabric__DOT__u_sem__DOT__value_q; };

  FabricShape shape_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::string cov_tag_;
  bool tracing_ = false;
  bool finished_ = false;
};

}  // namespace loom::hw
