// Adversarial command streams (docs/security.md). Seeded streams of hostile
// DMA, semaphore and malformed instructions run on the golden model and on
// one other backend (rtl, tlm or cosim), with canary bytes all around the
// core's DMA window. Each instruction is followed by a FENCE, so every model
// executes in program order and the first fault is the same instruction on
// all of them. Required on every stream:
//   - the error cause and ERR_PC that an independent reading of the spec's
//     rules predicts (docs/spec/isa.yaml, "rules"), on both backends;
//   - the same counters and the same memory image on both;
//   - no canary byte changed, and every out-of-window DMA blocked.
//
// usage: loom_adversarial_streams BACKEND STREAMS [FIRST_SEED]
// Prints one summary line; exit 1 with the first failing seed otherwise.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/ref/ref_device.h"
#include "loom/spec_gen.h"
#include "device/device.h"
#include "support/insn_builders.h"
#if defined(LOOM_ADV_RTL)
#include "backends/rtl/rtl_device.h"
#elif defined(LOOM_ADV_TLM)
#include "tlm/tlm_device.h"
#elif defined(LOOM_ADV_COSIM)
#include "cosim/cosim_device.h"
#endif

namespace loom::adversarial {
namespace {

using spec::Buffer;
using spec::Insn;
namespace cr = spec::core_reg;

const spec::HwConfig& cfg() { return *spec::find_config("tiny"); }

constexpr uint32_t kRingSize = 64;
constexpr uint64_t kArena = 24 * 1024;  // canaries | window somewhere in the middle 16 KiB | canaries
constexpr uint8_t kCanary = 0xCA;
constexpr uint64_t kAddrMask = (uint64_t(1) << 48) - 1;

Expected<std::unique_ptr<runtime::Device>> make_backend(const std::string& name) {
  if (name == "ref") return ref::make_ref_device(cfg());
#if defined(LOOM_ADV_RTL)
  if (name == "rtl") return rtl::make_rtl_device(cfg());
#elif defined(LOOM_ADV_TLM)
  if (name == "tlm") return tlm::make_tlm_device(cfg());
#elif defined(LOOM_ADV_COSIM)
  if (name == "cosim") return cosim::make_cosim_device(cfg());
#endif
  return make_error(name, "backend not built into this test");
}

uint64_t buffer_bytes(uint64_t buf) {
  switch (Buffer(buf)) {
    case Buffer::IN: return uint64_t(cfg().in_kib) * 1024;
    case Buffer::WGT: return uint64_t(cfg().wgt_kib) * 1024;
    case Buffer::ACC: return uint64_t(cfg().acc_kib) * 1024;
    case Buffer::OUT: return uint64_t(cfg().out_kib) * 1024;
    case Buffer::PARAM: return uint64_t(cfg().param_kib) * 1024;
  }
  return 0;
}

struct Window {
  uint64_t base = 0, limit = 0;
};

/// What the spec's rules say an instruction does, read independently of any
/// model: its error cause (0: it retires), and for DMAs whether the memory
/// range it names leaves the window.
struct Predicted {
  uint32_t cause = 0;
  bool out_of_window = false;  // a real (non-empty) DMA range outside [base, limit)
};

/// [lo, hi) of a 2-D memory range in exact arithmetic (no wrap at 48 bits).
struct Range {
  unsigned __int128 lo = 0, hi = 0;
};
Range dram_range(uint64_t addr, uint64_t rows, uint64_t stride, uint64_t cols) {
  Range r;
  r.lo = addr;
  r.hi = (unsigned __int128)addr + (unsigned __int128)(rows - 1) * stride + cols;
  return r;
}

Predicted predict(const Insn& in, const Window& w) {
  Predicted p;
  const uint64_t op = in.w[0] & 63u;
  const auto* info = spec::opcode_info(op);
  if (!info) return {spec::err::ILLEGAL_INSN, false};
  const bool pop_prev = spec::get_bits(in, 6, 1), pop_next = spec::get_bits(in, 7, 1);
  const bool push_prev = spec::get_bits(in, 8, 1), push_next = spec::get_bits(in, 9, 1);
  const bool any_flag = pop_prev || pop_next || push_prev || push_next;
  switch (spec::Opcode(op)) {
    case spec::Opcode::NOP:
      return p;
    case spec::Opcode::FENCE:
    case spec::Opcode::END:
      if (any_flag) p.cause = spec::err::ILLEGAL_INSN;
      return p;
    case spec::Opcode::SEM_SIGNAL:
    case spec::Opcode::SEM_WAIT: {
      const uint64_t id = spec::get_bits(in, 16, 8);
      if (any_flag || id >= cfg().semaphores) p.cause = spec::err::ILLEGAL_INSN;
      return p;
    }
    case spec::Opcode::LOAD:
    case spec::Opcode::STORE: {
      const bool is_load = spec::Opcode(op) == spec::Opcode::LOAD;
      // The load unit has no previous neighbour, the store unit no next one.
      if (is_load ? (pop_prev || push_prev) : (pop_next || push_next)) return {spec::err::ILLEGAL_INSN, false};
      uint64_t buf, sp, dram, rows, cols, dstride, sstride, total;
      if (is_load) {
        const auto l = spec::LoadInsn::decode(in);
        buf = l.buf, sp = l.sp_addr, dram = l.dram_addr, rows = l.rows, cols = l.cols;
        dstride = l.dram_stride, sstride = l.sp_stride, total = l.pad_lo + l.rows + l.pad_hi;
      } else {
        const auto s = spec::StoreInsn::decode(in);
        buf = s.buf, sp = s.sp_addr, dram = s.dram_addr, rows = s.rows, cols = s.cols;
        dstride = s.dram_stride, sstride = s.sp_stride, total = s.rows;
      }
      const bool buf_ok = is_load ? (buf == uint64_t(Buffer::IN) || buf == uint64_t(Buffer::WGT) ||
                                     buf == uint64_t(Buffer::OUT) || buf == uint64_t(Buffer::PARAM))
                                  : (buf == uint64_t(Buffer::OUT) || buf == uint64_t(Buffer::ACC));
      const bool word = buf == uint64_t(Buffer::ACC) || buf == uint64_t(Buffer::PARAM);
      const bool real = rows > 0 && cols > 0;
      p.out_of_window = real && [&] {
        const Range r = dram_range(dram, rows, dstride, cols);
        return r.lo < w.base || r.hi > w.limit;
      }();
      if (!buf_ok || (word && (sp % 4 || sstride % 4))) {
        p.cause = spec::err::ILLEGAL_INSN;
      } else if (total > 0 && cols > 0 && sp + (total - 1) * sstride + cols > buffer_bytes(buf)) {
        p.cause = spec::err::SCRATCHPAD_OOB;
      } else if (p.out_of_window) {
        p.cause = spec::err::WINDOW;
      }
      return p;
    }
    default:
      // Compute instructions are not generated here (tests/random_streams).
      return p;
  }
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : g_(seed * 0x9E3779B97F4A7C15ull + 0xAD5E) {}
  uint64_t below(uint64_t n) { return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(g_) : 0; }
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }
  template <class T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + below(v.size()));
  }

  Window window(uint64_t arena) {
    Window w;
    w.base = arena + 4096 + below(8192);
    w.limit = chance(0.05) ? w.base - below(64) : w.base + below(arena + kArena - 4096 - w.base + 1);
    return w;
  }

  /// A DMA address aimed at an edge: inside, at or across either bound, on a
  /// 4 KiB boundary, wrapping past 2^48, or anywhere.
  uint64_t dram_addr(const Window& w, uint64_t span) {
    const uint64_t page = (w.base + 4095) & ~uint64_t(4095);
    switch (below(9)) {
      case 0: return w.base;
      case 1: return w.base - range(1, 16);
      case 2: return w.limit >= span ? w.limit - span : w.base;  // ends exactly at the limit
      case 3: return (w.limit >= span ? w.limit - span : w.base) + range(1, 16);  // one past
      case 4: return page - range(0, 64);  // crosses a 4 KiB boundary
      case 5: return kAddrMask - range(0, 256);  // wraps past 2^48
      case 6: return below(uint64_t(1) << 48);
      case 7: return w.limit;
      default: return w.base + below(std::max<uint64_t>(1, w.limit > w.base ? w.limit - w.base : 1));
    }
  }

  /// A DMA that is legal and stays inside the window (when the window holds
  /// one), so that hostile instructions are reached after real work.
  Insn legal_dma(const Window& w) {
    const bool is_load = chance(0.55);
    const uint64_t buf = is_load ? pick<uint64_t>({0, 1, 3}) : 3;
    const uint64_t room = w.limit > w.base ? w.limit - w.base : 0;
    const uint64_t cols = std::min<uint64_t>(room, range(1, 64));
    if (cols == 0) return test::nop();
    const uint64_t rows = std::min<uint64_t>(range(1, 8), room / cols);
    const uint64_t span = rows * cols;
    const uint64_t addr = w.base + below(room - span + 1);
    const uint64_t sp = below(buffer_bytes(buf) - span + 1);
    return is_load ? test::load(Buffer(buf), sp, addr, rows, cols) : test::store(Buffer(buf), sp, addr, rows, cols);
  }

  Insn dma(const Window& w) {
    if (chance(0.5)) return legal_dma(w);
    const bool is_load = chance(0.55);
    uint64_t buf = is_load ? pick<uint64_t>({0, 1, 3, 4}) : pick<uint64_t>({3, 2});
    if (chance(0.02)) buf = range(0, 7);  // any id, legal or not
    uint64_t rows = pick<uint64_t>({0, 1, 1, 2, 3, 8, 32});
    uint64_t cols = pick<uint64_t>({0, 1, 4, 7, 16, 60, 64, 100, 256});
    uint64_t dstride = cols + pick<uint64_t>({0, 0, 4, 64});
    uint64_t sstride = cols + pick<uint64_t>({0, 0, 4});
    if (chance(0.1)) dstride = pick<uint64_t>({0, 4096, 0x7FFFFFFF, 0xFFFFFFFF});  // repeats, pages, wraps
    if (chance(0.08)) {
      rows = pick<uint64_t>({1024, 65535});  // huge: blocked by the window or the scratchpad
      dstride = pick<uint64_t>({4096, 0xFFFFFFFF});
      sstride = chance(0.5) ? 0 : cols;
    }
    if (chance(0.05)) cols = pick<uint64_t>({4096, 65535});
    const uint64_t size = buffer_bytes(buf % 5);
    uint64_t sp = below(std::max<uint64_t>(1, size));
    if (chance(0.5)) sp = 0;
    if (chance(0.1)) sp = size - std::min<uint64_t>(size, cols);
    if ((buf == 2 || buf == 4) && chance(0.9)) sp &= ~uint64_t(3), sstride &= ~uint64_t(3);
    const uint64_t span = rows ? (rows - 1) * dstride + cols : 0;
    const uint64_t addr = dram_addr(w, span) & kAddrMask;
    Insn in = is_load ? test::load(Buffer(buf), sp, addr, rows, cols, dstride, sstride,
                                   chance(0.2) ? below(3) : 0, chance(0.2) ? below(3) : 0, int64_t(below(256)) - 128)
                      : test::store(Buffer(buf), sp, addr, rows, cols, dstride, sstride);
    // The builders treat a stride of 0 as "= cols"; set the fields as drawn.
    if (is_load) {
      auto l = spec::LoadInsn::decode(in);
      l.dram_stride = dstride, l.sp_stride = sstride;
      in = l.encode();
    } else {
      auto s = spec::StoreInsn::decode(in);
      s.dram_stride = dstride, s.sp_stride = sstride;
      in = s.encode();
    }
    // Token flags naming a neighbour the unit does not have (a pop from a
    // neighbour it has would wait, differently per model, not fault).
    if (chance(0.03))
      in = is_load ? test::with_tokens(in, true, false, chance(0.5), false)
                   : test::with_tokens(in, false, true, false, chance(0.5));
    return in;
  }

  Insn any(const Window& w) {
    const uint64_t k = below(100);
    if (k < 70) return dma(w);
    if (k < 80)
      return chance(0.7) ? test::sem_signal(below(cfg().semaphores + 2)) : test::sem_wait(below(cfg().semaphores + 2), 0);
    if (k < 86) return test::with_tokens(test::nop(), chance(0.5), chance(0.5), chance(0.5), chance(0.5));
    if (k < 88) return test::with_tokens(test::fence(), true, false, false, false);
    if (k < 98) return legal_dma(w);
    Insn in{};
    in.w[0] = uint32_t(range(13, 63));  // no such opcode
    return in;
  }

  /// Sets bits that no field of the instruction's opcode covers.
  void set_reserved_bits(Insn& in) {
    std::array<bool, spec::kInsnBits> used{};
    auto mark = [&](const auto& fields) {
      for (const auto& f : fields)
        for (unsigned b = f.bit; b < f.bit + f.width; ++b) used[b] = true;
    };
    switch (spec::Opcode(in.w[0] & 63u)) {
      case spec::Opcode::LOAD: mark(spec::LoadInsn::kFields); break;
      case spec::Opcode::STORE: mark(spec::StoreInsn::kFields); break;
      case spec::Opcode::SEM_SIGNAL: mark(spec::SemSignalInsn::kFields); break;
      case spec::Opcode::SEM_WAIT: mark(spec::SemWaitInsn::kFields); break;
      case spec::Opcode::NOP: mark(spec::NopInsn::kFields); break;
      case spec::Opcode::FENCE: mark(spec::FenceInsn::kFields); break;
      default: return;
    }
    for (int k = 0; k < 4; ++k) {
      const unsigned b = unsigned(below(spec::kInsnBits));
      if (!used[b]) spec::set_bits(in, b, 1, 1);
    }
  }

 private:
  std::mt19937_64 g_;
};

/// One device of the test, laid out identically on every backend.
struct Bench {
  std::unique_ptr<runtime::Device> dev;
  uint64_t ring = 0, arena = 0;

  Status init(const std::string& backend) {
    auto d = make_backend(backend);
    if (!d) return d.error();
    dev = std::move(*d);
    auto r = dev->alloc(uint64_t(kRingSize) * spec::kInsnBytes, 4096);
    if (!r) return r.error();
    ring = *r;
    auto a = dev->alloc(kArena, 4096);
    if (!a) return a.error();
    arena = *a;
    return {};
  }
  void wc(uint32_t off, uint32_t v) { dev->write_reg(spec::core_reg_addr(0, off), v); }
  uint32_t rc(uint32_t off) { return dev->read_reg(spec::core_reg_addr(0, off)); }
  uint64_t counter(spec::Counter k) {
    const uint32_t off = spec::counter_offset(k);
    return uint64_t(rc(off)) | uint64_t(rc(off + 4)) << 32;
  }

  struct Outcome {
    uint32_t cause = 0, pc = 0, status = 0;
    std::array<uint64_t, 6> counters{};
    std::vector<uint8_t> arena;
  };

  Expected<Outcome> run(const std::vector<Insn>& prog, const Window& w, const std::vector<uint8_t>& image) {
    dev->write_reg(spec::reg::SOFT_RESET, 1u);
    dev->write_reg(spec::reg::SEM_CLEAR, (1u << cfg().semaphores) - 1);
    dev->write_reg(spec::reg::IRQ_STATUS, 0xFFFFFFFFu);
    LOOM_TRY(dev->write(arena, image));
    wc(cr::RING_BASE_LO, uint32_t(ring));
    wc(cr::RING_BASE_HI, uint32_t(ring >> 32));
    wc(cr::RING_SIZE, kRingSize);
    wc(cr::WIN_BASE_LO, uint32_t(w.base));
    wc(cr::WIN_BASE_HI, uint32_t(w.base >> 32));
    wc(cr::WIN_LIMIT_LO, uint32_t(w.limit));
    wc(cr::WIN_LIMIT_HI, uint32_t(w.limit >> 32));
    const spec::Counter ks[6] = {spec::Counter::INSN_LOAD, spec::Counter::INSN_STORE, spec::Counter::INSN_SYNC,
                                 spec::Counter::BYTES_RD, spec::Counter::BYTES_WR, spec::Counter::INSN_COMPUTE};
    std::array<uint64_t, 6> before{};
    for (int k = 0; k < 6; ++k) before[size_t(k)] = counter(ks[k]);
    std::vector<uint8_t> raw(prog.size() * spec::kInsnBytes);
    for (size_t i = 0; i < prog.size(); ++i)
      for (unsigned k = 0; k < spec::kInsnWords; ++k)
        for (unsigned b = 0; b < 4; ++b) raw[i * spec::kInsnBytes + 4 * k + b] = uint8_t(prog[i].w[k] >> (8 * b));
    LOOM_TRY(dev->write(ring, raw));
    wc(cr::RING_TAIL, uint32_t(prog.size()));
    wc(cr::DOORBELL, 1);
    LOOM_TRY(dev->run_until_idle(5'000'000));
    Outcome o;
    o.cause = rc(cr::ERR_CAUSE);
    o.pc = rc(cr::ERR_PC);
    o.status = rc(cr::STATUS);
    for (int k = 0; k < 6; ++k) o.counters[size_t(k)] = counter(ks[k]) - before[size_t(k)];
    o.arena.resize(kArena);
    LOOM_TRY(dev->read(arena, o.arena));
    return o;
  }
};

int run(const std::string& backend, uint64_t streams, uint64_t first) {
  Bench ref, other;
  if (Status s = ref.init("ref"); !s) return std::fprintf(stderr, "ref: %s\n", s.str().c_str()), 1;
  if (Status s = other.init(backend); !s) return std::fprintf(stderr, "%s: %s\n", backend.c_str(), s.str().c_str()), 1;
  if (ref.arena != other.arena || ref.ring != other.ring) {
    std::fprintf(stderr, "the two devices laid memory out differently\n");
    return 1;
  }
  uint64_t insns = 0, faulted = 0, oow_reached = 0, oow_blocked = 0, reserved = 0;
  std::array<uint64_t, 8> by_cause{};
  for (uint64_t seed = first; seed < first + streams; ++seed) {
    Gen g(seed);
    const Window w = g.window(ref.arena);
    std::vector<uint8_t> image(kArena, kCanary);
    for (uint64_t a = std::max(w.base, ref.arena); a < std::min(w.limit, ref.arena + kArena); ++a)
      image[a - ref.arena] = uint8_t(g.below(256));
    // The stream: up to 8 instructions, each fenced, then END.
    std::vector<Insn> prog;
    std::vector<size_t> at;  // ring index of each generated instruction
    const uint64_t n = g.range(1, 8);
    const bool with_reserved = g.chance(0.25);
    reserved += with_reserved;
    for (uint64_t i = 0; i < n; ++i) {
      Insn in = g.any(w);
      if (with_reserved) g.set_reserved_bits(in);
      at.push_back(prog.size());
      prog.push_back(in);
      prog.push_back(test::fence());
    }
    prog.push_back(test::end_insn());
    insns += prog.size();
    // The spec's prediction: the first instruction that faults, in order,
    // and the first out-of-window DMA that nothing before it stopped.
    uint32_t want_cause = 0, want_pc = 0;
    int64_t oow_pc = -1;
    for (size_t i = 0; i < at.size(); ++i) {
      const Predicted p = predict(prog[at[i]], w);
      if (p.out_of_window) oow_pc = int64_t(at[i]);
      if (p.cause) {
        want_cause = p.cause, want_pc = uint32_t(at[i]);
        break;
      }
      if (p.out_of_window) return std::fprintf(stderr, "seed %llu: predictor passes an out-of-window DMA\n",
                                               (unsigned long long)seed), 1;
    }
    auto fail = [&](const std::string& why) {
      std::fprintf(stderr, "seed %llu (%s): %s\n  reproduce: loom_adversarial_streams %s 1 %llu\n",
                   (unsigned long long)seed, backend.c_str(), why.c_str(), backend.c_str(), (unsigned long long)seed);
      for (size_t i = 0; i < prog.size(); ++i) {
        std::fprintf(stderr, "  [%zu]", i);
        for (unsigned k = 0; k < spec::kInsnWords; ++k) std::fprintf(stderr, " %08x", prog[i].w[k]);
        std::fprintf(stderr, "\n");
      }
      std::fprintf(stderr, "  window [0x%llx, 0x%llx), arena 0x%llx\n", (unsigned long long)w.base,
                   (unsigned long long)w.limit, (unsigned long long)ref.arena);
      return 1;
    };
    auto a = ref.run(prog, w, image);
    if (!a) return fail("ref: " + a.error().str());
    auto b = other.run(prog, w, image);
    if (!b) return fail(backend + ": " + b.error().str());
    for (const auto* o : {&*a, &*b}) {
      const std::string who = o == &*a ? "ref" : backend;
      if (o->cause != want_cause || (want_cause && o->pc != want_pc))
        return fail(who + ": ERR_CAUSE " + std::to_string(o->cause) + " at " + std::to_string(o->pc) +
                    ", the spec says " + std::to_string(want_cause) + " at " + std::to_string(want_pc));
      for (uint64_t k = 0; k < kArena; ++k) {
        const uint64_t addr = ref.arena + k;
        if ((addr < w.base || addr >= w.limit) && o->arena[k] != kCanary)
          return fail(who + ": canary byte at " + hex(addr) + " changed to " + hex(o->arena[k]));
      }
    }
    if (oow_pc >= 0) {
      ++oow_reached;
      // Blocked on both: the core stopped at that DMA with a fault (the
      // window's, or an earlier check of the same instruction), and the
      // canaries above are intact.
      if (a->cause && b->cause && int64_t(a->pc) == oow_pc && int64_t(b->pc) == oow_pc) ++oow_blocked;
      else return fail("an out-of-window DMA was not blocked");
    }
    if (a->counters != b->counters) return fail("counters differ between ref and " + backend);
    if (a->arena != b->arena) return fail("memory images differ between ref and " + backend);
    if (a->status != b->status) return fail("STATUS differs: ref " + std::to_string(a->status) + ", " + backend + " " +
                                            std::to_string(b->status));
    faulted += want_cause != 0;
    for (unsigned c = 0; c < 8; ++c)
      if (want_cause & (1u << c)) ++by_cause[c];
  }
  std::printf(
      "adversarial streams on ref and %s (tiny): %llu streams, %llu instructions, %llu with reserved bits set; "
      "%llu faulted (illegal %llu, scratchpad %llu, window %llu); out-of-window DMAs reached %llu, blocked %llu "
      "(100 %%); canary bytes changed 0; causes and ERR_PC as the spec predicts on every stream\n",
      backend.c_str(), (unsigned long long)streams, (unsigned long long)insns, (unsigned long long)reserved,
      (unsigned long long)faulted, (unsigned long long)by_cause[0], (unsigned long long)by_cause[5],
      (unsigned long long)by_cause[3], (unsigned long long)oow_reached, (unsigned long long)oow_blocked);
  return 0;  // every failure above returned at its seed
}

}  // namespace
}  // namespace loom::adversarial

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BACKEND STREAMS [FIRST_SEED]\n", argv[0]);
    return 2;
  }
  const uint64_t first = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  return loom::adversarial::run(argv[1], std::strtoull(argv[2], nullptr, 10), first);
}
