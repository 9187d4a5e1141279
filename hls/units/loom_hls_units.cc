// The HLS kernels as compute units: argument checks, footprints, the latency
// model and execution of a runtime::UnitCall as the kernel's C function.
#include "loom_hls_units.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "loom_hls_conv.h"
#include "loom_hls_eltwise.h"
#include "loom_hls_gemm.h"
#include "loom_hls_latency.h"
#include "loom_hls_pool.h"
#include "loom_hls_quant.h"

namespace loom::hls {
namespace {

// Scalar argument names in signature order (hls/<kernel>/loom_hls_<kernel>.h).
const std::vector<std::string_view>& scalar_names(std::string_view kind) {
  static const std::vector<std::string_view> gemm{"m", "n", "k", "a_zp", "b_zp", "y_zp", "clip_lo", "clip_hi"};
  static const std::vector<std::string_view> conv{"batch", "h",      "wd",       "c",     "m",     "kh",
                                                  "kw",    "stride_h", "stride_w", "pad_top", "pad_left", "oh",
                                                  "ow",    "groups", "x_zp",     "w_zp",  "y_zp",  "clip_lo",
                                                  "clip_hi"};
  static const std::vector<std::string_view> pool{"batch",   "h",        "wd", "c",  "kh",     "kw",   "stride_h",
                                                  "stride_w", "pad_top", "pad_left", "oh", "ow", "is_avg", "x_zp",
                                                  "y_zp",    "mult",     "shift", "clip_lo", "clip_hi"};
  static const std::vector<std::string_view> elt{"count",  "has_b",   "a_zp",   "b_zp",    "y_zp",  "a_mult",
                                                 "a_shift", "b_mult", "b_shift", "clip_lo", "clip_hi"};
  if (kind == "gemm") return gemm;
  if (kind == "conv") return conv;
  if (kind == "pool") return pool;
  return elt;
}

const char* status_name(int st) {
  switch (st) {
    case loom_hls::kBadShape:
      return "kBadShape: a negative dimension, kernel/stride/groups < 1, or groups not dividing C or M";
    case loom_hls::kOverLimit:
      return "kOverLimit: beyond an on-chip buffer";
    case loom_hls::kBadClamp:
      return "kBadClamp: clip lo > hi or outside [-128, 127]";
    case loom_hls::kBadParam:
      return "kBadParam: a zero point outside int8 or a shift outside [1, 62]";
    default:
      return "unknown status";
  }
}

/// The checked scalars of a call, by name.
struct Scalars {
  const std::vector<std::string_view>* names;
  const std::vector<int64_t>* args;
  unsigned first;
  int32_t operator[](std::string_view n) const {
    for (size_t i = 0; i < names->size(); ++i)
      if ((*names)[i] == n) return int32_t((*args)[first + i]);
    return 0;
  }
};

}  // namespace

const std::vector<KernelInfo>& kernels() {
  static const std::vector<KernelInfo> k{{"loom_hls_gemm", "gemm", 4, 8},
                                         {"loom_hls_conv", "conv", 4, 19},
                                         {"loom_hls_pool", "pool", 2, 19},
                                         {"loom_hls_eltwise", "eltwise", 3, 11}};
  return k;
}

const KernelInfo* find_kernel(std::string_view top) {
  for (const auto& k : kernels())
    if (k.top == top) return &k;
  return nullptr;
}

uint32_t units_of(const spec::HwConfig& cfg, std::string_view kind) {
  if (kind == "gemm") return cfg.hls_gemm_units;
  if (kind == "conv") return cfg.hls_conv_units;
  if (kind == "pool") return cfg.hls_pool_units;
  if (kind == "eltwise") return cfg.hls_eltwise_units;
  return 0;
}

Expected<std::vector<Span>> footprint(const runtime::UnitCall& call, const spec::HwConfig& cfg) {
  const KernelInfo* k = find_kernel(call.kernel);
  if (k == nullptr)
    return make_error("unit call", "unknown kernel '" + call.kernel +
                                       "' (loom_hls_gemm, loom_hls_conv, loom_hls_pool or loom_hls_eltwise)");
  const std::string where = call.kernel + " unit " + std::to_string(call.unit);
  const uint32_t have = units_of(cfg, k->kind);
  if (call.unit >= have)
    return make_error(where, "configuration '" + std::string(cfg.name) + "' has " + std::to_string(have) + " " +
                                 std::string(k->kind) + " unit" + (have == 1 ? "" : "s"));
  if (call.args.size() != k->ptrs + k->scalars)
    return make_error(where, "expected " + std::to_string(k->ptrs + k->scalars) + " arguments (" +
                                 std::to_string(k->ptrs) + " pointers, " + std::to_string(k->scalars) +
                                 " scalars), got " + std::to_string(call.args.size()));
  const auto& names = scalar_names(k->kind);
  for (unsigned i = 0; i < k->ptrs; ++i)
    if (call.args[i] < 0) return make_error(where, "pointer argument " + std::to_string(i) + " is negative");
  for (unsigned i = 0; i < k->scalars; ++i) {
    const int64_t v = call.args[k->ptrs + i];
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return make_error(where, "argument '" + std::string(names[i]) + "' = " + std::to_string(v) +
                                   " does not fit int32");
  }
  const Scalars s{&names, &call.args, k->ptrs};
  // Sizes: every dimension the footprint uses must be non-negative; the
  // kernel checks the rest (strides, groups, limits) itself.
  for (std::string_view d : {"m", "n", "k", "batch", "h", "wd", "c", "kh", "kw", "oh", "ow", "count"})
    if (s[d] < 0) return make_error(where, "argument '" + std::string(d) + "' is negative");
  const auto p = [&](unsigned i) { return uint64_t(call.args[i]); };
  const auto u = [&](std::string_view n) { return uint64_t(s[n]); };
  std::vector<Span> out;
  if (k->kind == "gemm") {
    out = {{p(0), u("m") * u("k"), false},
           {p(1), u("k") * u("n"), false},
           {p(2), u("n") * spec::kParamBytesPerChannel, false},
           {p(3), u("m") * u("n"), true}};
  } else if (k->kind == "conv") {
    const uint64_t groups = s["groups"] >= 1 ? u("groups") : 1;
    out = {{p(0), u("batch") * u("h") * u("wd") * u("c"), false},
           {p(1), u("kh") * u("kw") * (u("c") / groups) * u("m"), false},
           {p(2), u("m") * spec::kParamBytesPerChannel, false},
           {p(3), u("batch") * u("oh") * u("ow") * u("m"), true}};
  } else if (k->kind == "pool") {
    out = {{p(0), u("batch") * u("h") * u("wd") * u("c"), false}, {p(1), u("batch") * u("oh") * u("ow") * u("c"), true}};
  } else {
    out = {{p(0), u("count"), false}, {p(1), s["has_b"] != 0 ? u("count") : 0, false}, {p(2), u("count"), true}};
  }
  uint64_t total = 0;
  for (const auto& sp : out) total += sp.bytes;
  if (total > (uint64_t(1) << 32))
    return make_error(where, "arguments address " + std::to_string(total) + " bytes (more than 4 GiB)");
  return out;
}

uint64_t latency_cycles(const runtime::UnitCall& call) {
  const KernelInfo* k = find_kernel(call.kernel);
  if (k == nullptr || call.args.size() != k->ptrs + k->scalars) return 0;
  const Scalars s{&scalar_names(k->kind), &call.args, k->ptrs};
  const auto u = [&](std::string_view n) { return uint64_t(std::max<int32_t>(s[n], 0)); };
  if (k->kind == "gemm") return loom_hls::gemm_cycles(u("m"), u("n"), u("k"));
  if (k->kind == "conv")
    return loom_hls::conv_cycles(u("batch"), u("oh"), u("ow"), u("c"), u("m"), u("kh"), u("kw"),
                                 std::max<uint64_t>(u("groups"), 1));
  if (k->kind == "pool") return loom_hls::pool_cycles(u("batch"), u("oh"), u("ow"), u("c"), u("kh"), u("kw"));
  return loom_hls::eltwise_cycles(u("count"));
}

Status run(const runtime::UnitCall& call, const spec::HwConfig& cfg, const ReadFn& read, const WriteFn& write) {
  auto fp = footprint(call, cfg);
  if (!fp) return fp.error();
  const KernelInfo& k = *find_kernel(call.kernel);
  const std::string where = call.kernel + " unit " + std::to_string(call.unit);
  // Host copies of every pointer argument (outputs start zeroed; the kernel
  // writes all of them on success).
  std::vector<std::vector<uint8_t>> buf(fp->size());
  for (size_t i = 0; i < fp->size(); ++i) {
    const Span& sp = (*fp)[i];
    // +4: a zero-length array still gets a valid, aligned pointer.
    buf[i].assign(size_t(sp.bytes) + 4, 0);
    if (!sp.write && sp.bytes > 0) {
      Status st = read(sp.addr, std::span<uint8_t>(buf[i].data(), size_t(sp.bytes)));
      if (!st) return Status(st.error()).context(where + ": reading argument " + std::to_string(i));
    }
  }
  const Scalars s{&scalar_names(k.kind), &call.args, k.ptrs};
  const auto i8 = [&](size_t i) { return reinterpret_cast<int8_t*>(buf[i].data()); };
  // Parameter tables are int32 triples: copy into aligned storage.
  std::vector<int32_t> params;
  const auto p32 = [&](size_t i) {
    params.assign(buf[i].size() / 4 + 1, 0);
    std::memcpy(params.data(), buf[i].data(), buf[i].size());
    return params.data();
  };
  int st = 0;
  if (k.kind == "gemm") {
    st = loom_hls_gemm(i8(0), i8(1), p32(2), i8(3), s["m"], s["n"], s["k"], s["a_zp"], s["b_zp"], s["y_zp"],
                       s["clip_lo"], s["clip_hi"]);
  } else if (k.kind == "conv") {
    st = loom_hls_conv(i8(0), i8(1), p32(2), i8(3), s["batch"], s["h"], s["wd"], s["c"], s["m"], s["kh"], s["kw"],
                       s["stride_h"], s["stride_w"], s["pad_top"], s["pad_left"], s["oh"], s["ow"], s["groups"],
                       s["x_zp"], s["w_zp"], s["y_zp"], s["clip_lo"], s["clip_hi"]);
  } else if (k.kind == "pool") {
    st = loom_hls_pool(i8(0), i8(1), s["batch"], s["h"], s["wd"], s["c"], s["kh"], s["kw"], s["stride_h"],
                       s["stride_w"], s["pad_top"], s["pad_left"], s["oh"], s["ow"], s["is_avg"], s["x_zp"],
                       s["y_zp"], s["mult"], s["shift"], s["clip_lo"], s["clip_hi"]);
  } else {
    st = loom_hls_eltwise(i8(0), i8(1), i8(2), s["count"], s["has_b"], s["a_zp"], s["b_zp"], s["y_zp"], s["a_mult"],
                          s["a_shift"], s["b_mult"], s["b_shift"], s["clip_lo"], s["clip_hi"]);
  }
  if (st != loom_hls::kOk)
    return make_error(where, "kernel returned status " + std::to_string(st) + " (" + status_name(st) + ")");
  for (size_t i = 0; i < fp->size(); ++i) {
    const Span& sp = (*fp)[i];
    if (!sp.write || sp.bytes == 0) continue;
    Status w = write(sp.addr, std::span<const uint8_t>(buf[i].data(), size_t(sp.bytes)));
    if (!w) return Status(w.error()).context(where + ": writing argument " + std::to_string(i));
  }
  return Status::ok();
}

}  // namespace loom::hls
