// Minimal stand-in for Vitis HLS's hls::stream, so the loom HLS kernels build
// and run their C simulation with a plain C++ compiler. Only the members the
// kernels use are provided. It is on the include path only when
// LOOM_HLS_STANDIN is defined (hls/CMakeLists.txt); Vitis HLS uses its own
// <hls_stream.h>.
//
// Semantics match Vitis C simulation: an unbounded FIFO; the functions of a
// DATAFLOW region run one after another, so a producer writes everything
// before its consumer reads. Reading an empty stream is a kernel bug and
// aborts with a message naming the stream (Vitis csim warns and returns
// garbage instead).
#pragma once

#if defined(__SYNTHESIS__)
#error "loom_hls_standin/hls_stream.h is for C simulation with g++ only; Vitis HLS provides <hls_stream.h>"
#endif

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace hls {

/// Stand-in only: elements written to each stream, by stream name, since the
/// last clear. The testbenches read it to check the latency model against the
/// loop trip counts a C simulation executed.
inline std::map<std::string, uint64_t>& standin_write_counts() {
  static std::map<std::string, uint64_t> counts;
  return counts;
}

template <typename T>
class stream {
 public:
  stream() : name_("unnamed") {}
  explicit stream(const char* name) : name_(name) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  void write(const T& v) {
    q_.push_back(v);
    ++standin_write_counts()[name_];
  }
  T read() {
    if (q_.empty()) {
      std::fprintf(stderr, "hls::stream '%s': read from an empty stream\n", name_.c_str());
      std::abort();
    }
    T v = q_.front();
    q_.pop_front();
    return v;
  }
  void read(T& v) { v = read(); }
  stream& operator<<(const T& v) {
    write(v);
    return *this;
  }
  stream& operator>>(T& v) {
    v = read();
    return *this;
  }
  bool empty() const { return q_.empty(); }
  bool full() const { return false; }
  std::size_t size() const { return q_.size(); }

 private:
  std::string name_;
  std::deque<T> q_;
};

}  // namespace hls
