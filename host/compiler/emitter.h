// Builds one core's instruction stream for one layer and sets the dependency
// token flags afterwards, once the number of steps is known.
//
// Token protocol (VTA-style), with `slots` buffer slots (2 when double
// buffering):
//  - load step s (all LOADs filling IN/WGT/PARAM slot s % slots): the first
//    LOAD pops a "slot free" token from compute when s >= slots; the last
//    LOAD pushes "inputs ready" to compute.
//  - compute: the first instruction of step s pops "inputs ready"; the last
//    instruction reading the slot pushes "slot free" back to load when a
//    later step (s + slots) will pop it.
//  - output tile o (OUT slot o % slots): the (first) instruction writing OUT
//    pops "OUT free" from store when o >= slots, and the (last) one pushes
//    "OUT ready" to store;
//    the first STORE pops it; the last STORE pushes "OUT free" back when
//    tile o + slots exists.
// Every pop follows its push in program order and every push is popped, so
// the counters are balanced at the layer's end and the sequential golden
// model never reports DEADLOCK.
//
// Issue is in order and a unit takes one instruction at a time, so a load
// placed after a POSTOP waits until the GEMM before that POSTOP is done. With
// two or more slots, defer() holds a tile's closing instructions (POSTOP,
// STORE) back until the next step's loads are in the stream: they are
// emitted just before that step's first compute instruction (or at flush()),
// so the next tile's loads run under this tile's last GEMM. The load of step
// s + 1 pops the "slot free" of step s + 1 - slots <= s - 1, which the stream
// already released, so the reordering cannot deadlock.
#pragma once

#include <algorithm>
#include <string_view>
#include <variant>
#include <vector>

#include "compiler/pass.h"

namespace loom::compiler {

using AnyInsn = std::variant<spec::LoadInsn, spec::StoreInsn, spec::GemmInsn, spec::PostopInsn, spec::PoolInsn,
                             spec::EltwiseInsn, spec::RownormInsn, spec::DwconvInsn, spec::SemSignalInsn,
                             spec::SemWaitInsn, spec::FenceInsn, spec::EndInsn>;

inline spec::Insn encode(const AnyInsn& i) {
  return std::visit([](const auto& x) { return x.encode(); }, i);
}
inline std::string_view invalid_field(const AnyInsn& i) {
  return std::visit([](const auto& x) { return x.invalid_field(); }, i);
}

class LayerStream {
 public:
  LayerStream(std::vector<AnyInsn>& out, int slots) : out_(out), slots_(slots) {}

  /// Slot indices of the next load step and the next output tile.
  int in_slot() const { return int(steps_.size() % size_t(slots_)); }
  int out_slot() const { return int(outs_.size() % size_t(slots_)); }

  void begin_step() {
    deferring_ = false;
    steps_.push_back({out_.size(), 0, 0, 0});
  }
  void load(const spec::LoadInsn& l) {
    steps_.back().last_load = out_.size();
    out_.push_back(l);
    // Dripping: one held-back instruction after every `drip_every_`-th LOAD
    // that reads memory.
    if (drip_ && l.rows > 0 && !pending_.empty() && ++drip_count_ % drip_every_ == 0) emit(1);
  }
  /// First compute instruction of the current step (pops "inputs ready").
  void compute_first() {
    flush();
    steps_.back().first_compute = out_.size();
  }
  /// Marks the instruction about to be added as the last reader of the slot.
  void compute_release() {
    if (deferring_)
      mark_.release = int64_t(steps_.size()) - 1;
    else
      steps_.back().release = out_.size();
  }
  /// Marks the instruction about to be added as the one writing OUT (the
  /// first of them, when out_ready() names the last).
  void out_producer() {
    outs_.push_back({out_.size(), out_.size(), 0, 0});
    if (deferring_) mark_.producer = int64_t(outs_.size()) - 1;
  }
  /// Marks the instruction about to be added as the last one writing the
  /// current output tile: it, not the first, pushes "OUT ready" to store.
  void out_ready() {
    if (deferring_)
      mark_.ready = int64_t(outs_.size()) - 1;
    else
      outs_.back().ready = out_.size();
  }
  void compute(const AnyInsn& c) {
    if (deferring_) {
      pending_.push_back({c, mark_.release, mark_.producer, mark_.ready, -1, false});
      mark_ = {};
      return;
    }
    out_.push_back(c);
  }
  void store(const spec::StoreInsn& st, bool first) {
    if (deferring_) {
      pending_.push_back({st, -1, -1, -1, int64_t(outs_.size()) - 1, first});
      return;
    }
    if (first) outs_.back().first_store = out_.size();
    outs_.back().last_store = out_.size();
    out_.push_back(st);
  }
  /// Holds the following compute and store instructions back (see above);
  /// without double buffering it does nothing.
  /// With `drip`, the held-back instructions are not kept until the next
  /// step's first compute instruction but emitted one after every
  /// `every`-th of its LOADs that read memory: a step of many GEMMs (row
  /// windows: one a pixel run) then runs under the next step's many LOADs,
  /// which in-order issue would otherwise hold behind all of them; a few
  /// long GEMMs (image bands) are spread over them.
  void defer(bool drip = false, int every = 1) {
    deferring_ = slots_ > 1;
    drip_ = deferring_ && drip;
    drip_every_ = std::max(every, 1);
    drip_count_ = 0;
  }
  /// Emits the held-back instructions now.
  void flush() {
    deferring_ = false;
    drip_ = false;
    emit(pending_.size());
  }

  void finalize() {
    flush();
    const size_t S = steps_.size(), O = outs_.size(), k = size_t(slots_);
    for (size_t s = 0; s < S; ++s) {
      if (s >= k) flag(steps_[s].first_load, Flags::pop_next);
      flag(steps_[s].last_load, Flags::push_next);
      flag(steps_[s].first_compute, Flags::pop_prev);
      if (s + k < S) flag(steps_[s].release, Flags::push_prev);
    }
    for (size_t o = 0; o < O; ++o) {
      if (o >= k) flag(outs_[o].producer, Flags::pop_next);
      flag(outs_[o].ready, Flags::push_next);
      flag(outs_[o].first_store, Flags::pop_prev);
      if (o + k < O) flag(outs_[o].last_store, Flags::push_prev);
    }
  }

 private:
  struct Flags {
    enum Which { pop_prev, pop_next, push_prev, push_next };
  };
  void flag(size_t idx, Flags::Which w) {
    std::visit(
        [w](auto& x) {
          switch (w) {
            case Flags::pop_prev:
              x.pop_prev = 1;
              break;
            case Flags::pop_next:
              x.pop_next = 1;
              break;
            case Flags::push_prev:
              x.push_prev = 1;
              break;
            case Flags::push_next:
              x.push_next = 1;
              break;
          }
        },
        out_[idx]);
  }
  struct Step {
    size_t first_load, last_load, first_compute, release;
  };
  struct Out {
    size_t producer, ready, first_store, last_store;
  };
  struct Mark {
    int64_t release = -1, producer = -1, ready = -1;
  };
  struct Pending {
    AnyInsn insn;
    int64_t release, producer, ready, store_of;  // step / output indices to point at it, or -1
    bool first_store;
  };
  void emit(size_t count) {
    for (size_t i = 0; i < count && i < pending_.size(); ++i) {
      const Pending& p = pending_[i];
      const size_t idx = out_.size();
      if (p.release >= 0) steps_[size_t(p.release)].release = idx;
      if (p.producer >= 0) outs_[size_t(p.producer)].producer = outs_[size_t(p.producer)].ready = idx;
      if (p.ready >= 0) outs_[size_t(p.ready)].ready = idx;
      if (p.store_of >= 0) {
        if (p.first_store) outs_[size_t(p.store_of)].first_store = idx;
        outs_[size_t(p.store_of)].last_store = idx;
      }
      out_.push_back(p.insn);
    }
    pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(std::min(count, pending_.size())));
  }
  bool deferring_ = false, drip_ = false;
  int drip_every_ = 1, drip_count_ = 0;
  Mark mark_;
  std::vector<Pending> pending_;
  std::vector<AnyInsn>& out_;
  int slots_;
  std::vector<Step> steps_;
  std::vector<Out> outs_;
};

}  // namespace loom::compiler
