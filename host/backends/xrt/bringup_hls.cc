// The bringup check "hls units": one smoke call on every HLS compute unit the
// xclbin holds, through runtime::Device::start_unit / wait_unit (on xrt:
// xrt::kernel / xrt::run), compared byte for byte with the kernel's C
// function (hls::run) on the same inputs in host memory, which the C
// simulation testbenches (hls/*/tb_*.cc) hold bit-exact with the golden model.
#include <cstring>
#include <map>
#include <random>

#include "backends/xrt/bringup.h"
#include "backends/xrt/hls_cus.h"
#include "loom_hls_units.h"

namespace loom::bringup {
namespace {

/// Scalars of a small, valid call of each kernel kind, in signature order
/// (hls/<kind>/loom_hls_<kind>.h).
std::vector<int64_t> smoke_scalars(std::string_view kind) {
  if (kind == "gemm") return {16, 16, 32, 3, -2, 5, -128, 127};  // m n k a_zp b_zp y_zp clip
  if (kind == "conv")  // batch h wd c m kh kw stride pad oh ow groups x_zp w_zp y_zp clip
    return {1, 6, 6, 8, 16, 3, 3, 1, 1, 1, 1, 6, 6, 1, 2, 0, -3, -128, 127};
  if (kind == "pool")  // batch h wd c kh kw stride pad oh ow is_avg x_zp y_zp mult shift clip
    return {1, 6, 6, 16, 2, 2, 2, 2, 0, 0, 3, 3, 1, 0, 0, 1 << 30, 32, -128, 127};
  // count has_b a_zp b_zp y_zp a_mult a_shift b_mult b_shift clip
  return {256, 1, 1, -1, 0, 1 << 30, 31, 3 << 28, 31, 0, 127};
}

/// Seeded bytes for a pointer argument; parameter tables (gemm/conv
/// argument 2) get valid (bias, mult, shift) triples.
std::vector<uint8_t> smoke_bytes(std::string_view kind, unsigned arg, uint64_t bytes, std::mt19937& rng) {
  std::vector<uint8_t> v(static_cast<size_t>(bytes));
  if ((kind == "gemm" || kind == "conv") && arg == 2) {
    std::uniform_int_distribution<int32_t> bias(-3000, 3000), mult(1 << 29, (1 << 30) - 1);
    for (size_t i = 0; i + spec::kParamBytesPerChannel <= v.size(); i += spec::kParamBytesPerChannel) {
      const int32_t t[3] = {bias(rng), mult(rng), 38};
      std::memcpy(v.data() + i, t, sizeof t);
    }
    return v;
  }
  std::uniform_int_distribution<int> b(0, 255);
  for (auto& x : v) x = uint8_t(b(rng));
  return v;
}

}  // namespace

bool hls_units_check(Target& t, Check& c) {
  const std::vector<std::string> cus = t.hls_units();
  if (cus.empty()) {
    c.outcome = Outcome::Skip;
    c.detail = "the xclbin has no HLS compute units";
    return true;
  }
  auto& d = t.device();
  std::mt19937 rng(23);
  std::string done;
  for (const std::string& cu : cus) {
    const auto colon = cu.find(":{");
    const std::string top = cu.substr(0, colon);
    const hls::KernelInfo* k = hls::find_kernel(top);
    const int unit = colon == std::string::npos || k == nullptr
                         ? -1
                         : xrt_cus::unit_of_instance(top, cu.substr(colon + 2, cu.size() - colon - 3));
    if (unit < 0) {
      c.detail = cu + ": not a loom HLS compute unit name";
      return false;
    }
    runtime::UnitCall call{top, uint32_t(unit), std::vector<int64_t>(k->ptrs, 0)};
    const auto sc = smoke_scalars(k->kind);
    call.args.insert(call.args.end(), sc.begin(), sc.end());
    auto fp = hls::footprint(call, d.config());
    if (!fp) {
      c.detail = cu + ": " + fp.error().str();
      return false;
    }
    // Device buffers, one per pointer argument; outputs start filled with 0xA5.
    std::vector<uint64_t> addr;
    std::map<uint64_t, std::vector<uint8_t>> host;  // the C function's memory, by address
    Status st;
    for (unsigned i = 0; i < k->ptrs && st; ++i) {
      const auto& sp = (*fp)[i];
      auto a = d.alloc(std::max<uint64_t>(sp.bytes, 64), 4096);
      if (!a) {
        st = a.error();
        break;
      }
      addr.push_back(*a);
      call.args[i] = int64_t(*a);
      auto bytes = sp.write ? std::vector<uint8_t>(size_t(sp.bytes), 0xA5) : smoke_bytes(k->kind, i, sp.bytes, rng);
      st = d.write(*a, bytes);
      host[*a] = std::move(bytes);
    }
    const auto cleanup = [&] {
      for (uint64_t a : addr) d.free(a);
    };
    if (!st) {
      cleanup();
      c.detail = cu + ": " + st.error().str();
      return false;
    }
    // Expected: the C function on host memory.
    const auto locate = [&](uint64_t a, size_t n) -> uint8_t* {
      for (auto& [base, v] : host)
        if (a >= base && a - base + n <= v.size()) return v.data() + (a - base);
      return nullptr;
    };
    Status hs = hls::run(
        call, d.config(),
        [&](uint64_t a, std::span<uint8_t> out) {
          const uint8_t* p = locate(a, out.size());
          if (p == nullptr) return Status(make_error("host copy", "no buffer at " + hex(a)));
          std::memcpy(out.data(), p, out.size());
          return Status::ok();
        },
        [&](uint64_t a, std::span<const uint8_t> in) {
          uint8_t* p = locate(a, in.size());
          if (p == nullptr) return Status(make_error("host copy", "no buffer at " + hex(a)));
          std::memcpy(p, in.data(), in.size());
          return Status::ok();
        });
    if (!hs) {
      cleanup();
      c.detail = cu + ": the C function rejects the smoke call: " + hs.error().str();
      return false;
    }
    // On the unit.
    auto h = d.start_unit(call);
    Status ws = h ? d.wait_unit(*h, 10'000'000) : Status(h.error());
    for (unsigned i = 0; i < k->ptrs && ws; ++i) {
      const auto& sp = (*fp)[i];
      if (!sp.write) continue;
      std::vector<uint8_t> got(size_t(sp.bytes));
      ws = d.read(addr[i], got);
      if (ws && got != host[addr[i]]) {
        size_t at = 0;
        while (at < got.size() && got[at] == host[addr[i]][at]) ++at;
        ws = make_error("argument " + std::to_string(i), "differs from the kernel's C function at byte " +
                                                             std::to_string(at) + " of " + std::to_string(got.size()));
      }
    }
    cleanup();
    if (!ws) {
      c.detail = cu + ": " + ws.error().str();
      return false;
    }
    done += (done.empty() ? "" : ", ") + cu;
  }
  c.detail = std::to_string(cus.size()) + " unit" + (cus.size() == 1 ? "" : "s") +
             " bit-exact with the kernels' C functions: " + done;
  return true;
}

}  // namespace loom::bringup
