// FNV-1a 64-bit hashing: the plan checksum and graph fingerprints.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom {

inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace loom
