// Device memory of the ref backend: a sparse flat address space with a
// first-fit allocator, seen by the fabric through an AXI-like port that can
// answer SLVERR/DECERR (including injected faults).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "common/status.h"

namespace loom::hw {

/// Response of a memory access, as an AXI master would see it.
enum class AxiResp : uint8_t { Okay, SlvErr, DecErr };

/// Kind of fault injected on a device-memory range.
enum class FaultKind : uint8_t { SlvErr, DecErr };

/// The fabric's view of device memory. Callers probe a range first and only
/// move bytes after an Okay, so a failing access never moves a partial burst.
class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  /// Response an access of [addr, addr + len) would get. len 0 is always Okay.
  virtual AxiResp probe(uint64_t addr, uint64_t len) const = 0;
  /// Precondition: probe(addr, out.size()) == Okay.
  virtual void read(uint64_t addr, std::span<uint8_t> out) const = 0;
  /// Precondition: probe(addr, in.size()) == Okay.
  virtual void write(uint64_t addr, std::span<const uint8_t> in) = 0;
};

class DeviceMemory final : public MemoryPort {
 public:
  /// The lowest address handed out; address 0 is never valid so that a
  /// zero-initialized pointer in a plan cannot alias real data.
  static constexpr uint64_t kBase = 0x1000'0000;
  /// Address space size (not backed until allocated).
  static constexpr uint64_t kCapacity = uint64_t(4) << 30;

  /// Zero-filled allocation; align must be a power of two.
  Expected<uint64_t> alloc(uint64_t bytes, uint64_t align);
  /// Releases an allocation by its base address; unknown addresses are ignored.
  void free(uint64_t addr);

  /// Host-side access (not subject to injected faults, which model the
  /// fabric's AXI master ports only).
  Status host_write(uint64_t addr, std::span<const uint8_t> bytes);
  Status host_read(uint64_t addr, std::span<uint8_t> bytes) const;

  void inject_fault(uint64_t addr, uint64_t len, FaultKind kind);
  void clear_faults();

  AxiResp probe(uint64_t addr, uint64_t len) const override;
  void read(uint64_t addr, std::span<uint8_t> out) const override;
  void write(uint64_t addr, std::span<const uint8_t> in) override;

 private:
  struct Block {
    uint64_t reserved = 0;  // address-space footprint (>= 1 so bases are unique)
    std::vector<uint8_t> data;
  };
  struct Fault {
    uint64_t addr = 0;
    uint64_t len = 0;
    FaultKind kind = FaultKind::SlvErr;
  };
  /// True when every byte of [addr, addr + len) lies in some allocation.
  bool covered(uint64_t addr, uint64_t len) const;

  std::map<uint64_t, Block> blocks_;  // keyed by base address
  std::vector<Fault> faults_;
};

}  // namespace loom::hw
