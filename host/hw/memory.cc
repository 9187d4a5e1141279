// Device memory of the ref backend: allocator, host access, fabric port and
// fault injection.
#include "hw/memory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

namespace loom::hw {
namespace {

/// Calls f(pointer into block storage, offset into the access, bytes) for
/// each allocation a covered range spans; const-ness follows `blocks`.
template <class Blocks, class F>
void for_each_piece(Blocks& blocks, uint64_t addr, uint64_t len, F&& f) {
  uint64_t cur = addr;
  const uint64_t end = addr + len;
  while (cur < end) {
    auto it = std::prev(blocks.upper_bound(cur));
    auto& data = it->second.data;
    const uint64_t off = cur - it->first;
    const uint64_t n = std::min<uint64_t>(end - cur, data.size() - off);
    f(data.data() + off, cur - addr, n);
    cur += n;
  }
}

}  // namespace

Expected<uint64_t> DeviceMemory::alloc(uint64_t bytes, uint64_t align) {
  if (align == 0 || (align & (align - 1)) != 0)
    return make_error("ref device", "alloc: alignment " + std::to_string(align) + " is not a power of two");
  // A zero-byte allocation still reserves one byte of address space so that
  // every live allocation has a distinct base address.
  const uint64_t reserve = std::max<uint64_t>(bytes, 1);
  const uint64_t end_of_space = kBase + kCapacity;
  uint64_t cursor = kBase;
  for (auto it = blocks_.begin();; ++it) {
    const uint64_t candidate = (cursor + align - 1) & ~(align - 1);
    const uint64_t gap_end = it == blocks_.end() ? end_of_space : it->first;
    if (candidate >= cursor && candidate <= gap_end && gap_end - candidate >= reserve) {
      Block b;
      b.reserved = reserve;
      b.data.assign(bytes, 0);
      blocks_.emplace(candidate, std::move(b));
      return candidate;
    }
    if (it == blocks_.end()) break;
    cursor = it->first + it->second.reserved;
  }
  return make_error("ref device", "alloc: out of device memory for " + std::to_string(bytes) + " bytes");
}

void DeviceMemory::free(uint64_t addr) { blocks_.erase(addr); }

bool DeviceMemory::covered(uint64_t addr, uint64_t len) const {
  if (len == 0) return true;
  if (addr + len < addr) return false;
  uint64_t cur = addr;
  const uint64_t end = addr + len;
  while (cur < end) {
    auto it = blocks_.upper_bound(cur);
    if (it == blocks_.begin()) return false;
    --it;
    const uint64_t bend = it->first + it->second.data.size();
    if (cur >= bend) return false;
    cur = bend;
  }
  return true;
}

Status DeviceMemory::host_write(uint64_t addr, std::span<const uint8_t> bytes) {
  if (!covered(addr, bytes.size()))
    return make_error("ref device", "write of " + std::to_string(bytes.size()) + " bytes at " + hex(addr) +
                                        " is outside allocated device memory");
  write(addr, bytes);
  return Status::ok();
}

Status DeviceMemory::host_read(uint64_t addr, std::span<uint8_t> bytes) const {
  if (!covered(addr, bytes.size()))
    return make_error("ref device", "read of " + std::to_string(bytes.size()) + " bytes at " + hex(addr) +
                                        " is outside allocated device memory");
  read(addr, bytes);
  return Status::ok();
}

void DeviceMemory::inject_fault(uint64_t addr, uint64_t len, FaultKind kind) {
  faults_.push_back(Fault{addr, len, kind});
}

void DeviceMemory::clear_faults() { faults_.clear(); }

AxiResp DeviceMemory::probe(uint64_t addr, uint64_t len) const {
  if (len == 0) return AxiResp::Okay;
  // Injected faults take precedence: they model a slave that answers with an
  // error even though the address decodes.
  for (const Fault& f : faults_) {
    if (f.len == 0) continue;
    // Written as distances so that ranges near the top of the address
    // space cannot overflow.
    const bool overlap = addr < f.addr ? f.addr - addr < len : addr - f.addr < f.len;
    if (overlap) return f.kind == FaultKind::SlvErr ? AxiResp::SlvErr : AxiResp::DecErr;
  }
  return covered(addr, len) ? AxiResp::Okay : AxiResp::DecErr;
}

void DeviceMemory::read(uint64_t addr, std::span<uint8_t> out) const {
  for_each_piece(blocks_, addr, out.size(),
                 [&](const uint8_t* p, uint64_t pos, uint64_t n) { std::memcpy(out.data() + pos, p, n); });
}

void DeviceMemory::write(uint64_t addr, std::span<const uint8_t> in) {
  for_each_piece(blocks_, addr, in.size(),
                 [&](uint8_t* p, uint64_t pos, uint64_t n) { std::memcpy(p, in.data() + pos, n); });
}

}  // namespace loom::hw
