// Reads and writes bit fields and byte lanes of Verilated port signals, whatever
// C++ type Verilator chose for them (8/16/32/64-bit integers or VlWide<N>).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace loom::hw::pins {

// Verilator packs a `[MemPorts-1:0][63:0]` port into one signal whose type
// depends on the total width: integers up to 64 bits, VlWide<N> (an array of
// 32-bit words, word 0 least significant) beyond. Models are only known per
// configuration, so every access goes through these two shapes.
template <class T>
concept WordArray = requires(T& t) {
  { t.at(size_t{0}) } -> std::convertible_to<uint32_t>;
  t.data();
};

template <class T>
concept Integral = std::is_integral_v<T>;

/// Bits [lsb, lsb + width) of `s`, width <= 64.
template <Integral T>
uint64_t get(const T& s, unsigned lsb, unsigned width) {
  const uint64_t v = uint64_t(s) >> lsb;
  return width >= 64 ? v : v & ((uint64_t(1) << width) - 1);
}

template <WordArray T>
uint64_t get(const T& s, unsigned lsb, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    v |= uint64_t((s.at(b / 32) >> (b % 32)) & 1u) << i;
  }
  return v;
}

/// Sets bits [lsb, lsb + width) of `s` to the low bits of `v`, width <= 64.
template <Integral T>
void set(T& s, unsigned lsb, unsigned width, uint64_t v) {
  const uint64_t mask = (width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1) << lsb;
  s = T((uint64_t(s) & ~mask) | ((v << lsb) & mask));
}

template <WordArray T>
void set(T& s, unsigned lsb, unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    const uint32_t bit = 1u << (b % 32);
    if ((v >> i) & 1u)
      s.at(b / 32) |= bit;
    else
      s.at(b / 32) &= ~bit;
  }
}

/// Copies out.size() bytes starting at byte `first` (bit 8*first) of `s`.
template <class T>
void get_bytes(const T& s, unsigned first, std::span<uint8_t> out) {
  if constexpr (WordArray<T>) {
    // Byte-aligned lanes of a word array: no bit shuffling needed.
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t b = first + i;
      out[i] = uint8_t(s.at(b / 4) >> (8 * (b % 4)));
    }
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(get(s, unsigned(8 * (first + i)), 8));
  }
}

/// Writes in.size() bytes into `s` starting at byte `first`.
template <class T>
void set_bytes(T& s, unsigned first, std::span<const uint8_t> in) {
  if constexpr (WordArray<T>) {
    for (size_t i = 0; i < in.size(); ++i) {
      const size_t b = first + i;
      const unsigned sh = unsigned(8 * (b % 4));
      s.at(b / 4) = (s.at(b / 4) & ~(0xFFu << sh)) | (uint32_t(in[i]) << sh);
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) set(s, unsigned(8 * (first + i)), 8, in[i]);
  }
}

}  // namespace loom::hw::pins
