// TraceRecorder: the event list and its Chrome trace-event JSON writer.
#include "device/trace.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>

#include "common/temp_files.h"

namespace loom::runtime {
namespace {

constexpr std::array<std::string_view, kNumTraceTracks> kTrackNames{
    "load",           "gemm",         "post-op",       "compute",           "store",    "stall: load",
    "stall: compute", "stall: store", "stall: memory", "stall: dependency", "dispatch", "layer"};
// The category of each track: the unit it belongs to, or "stall".
constexpr std::array<std::string_view, kNumTraceTracks> kTrackCats{
    "load", "compute", "compute", "compute", "store", "stall", "stall", "stall", "stall", "stall", "dispatch", "layer"};
// Track ids (tid) of instants: after the unit tracks.
constexpr unsigned kEventsTid = kNumTraceTracks;

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

std::string micros(uint64_t cycles, unsigned clock_mhz) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", double(cycles) / double(std::max(1u, clock_mhz)));
  return buf;
}

}  // namespace

void TraceRecorder::label_layers(const std::vector<LayerSpan>& spans, unsigned cores) {
  if (spans.empty()) return;
  std::vector<const LayerSpan*> by_begin;
  for (const auto& sp : spans) by_begin.push_back(&sp);
  std::sort(by_begin.begin(), by_begin.end(),
            [](const LayerSpan* a, const LayerSpan* b) { return a->begin < b->begin; });
  for (auto& e : events_) {
    if (e.track < 0 || e.track == int(TraceTrack::Layer)) continue;
    auto it = std::upper_bound(by_begin.begin(), by_begin.end(), e.begin,
                               [](uint64_t t, const LayerSpan* s) { return t < s->begin; });
    if (it == by_begin.begin()) continue;
    const LayerSpan* sp = *(it - 1);
    if (e.begin < sp->end) e.name = sp->name + ": " + e.name;
  }
  for (const LayerSpan* sp : by_begin)
    for (unsigned c = 0; c < cores; ++c)
      if (sp->end > sp->begin) events_.push_back({c, int(TraceTrack::Layer), sp->name, "", sp->begin, sp->end});
}

std::string_view track_name(TraceTrack t) { return kTrackNames.at(size_t(t)); }

void TraceRecorder::interval(unsigned core, TraceTrack track, std::string_view name, uint64_t begin, uint64_t end,
                             std::string_view arg) {
  if (end <= begin) return;  // nothing to show
  events_.push_back(Event{core, int(track), std::string(name), std::string(arg), begin, end});
}

void TraceRecorder::instant(unsigned core, std::string_view name, uint64_t at, std::string_view arg) {
  events_.push_back(Event{core, -1, std::string(name), std::string(arg), at, at});
}

uint64_t TraceRecorder::origin() const {
  uint64_t first_doorbell = std::numeric_limits<uint64_t>::max(), first = first_doorbell;
  for (const Event& e : events_) {
    first = std::min(first, e.begin);
    if (e.track < 0 && e.name == "doorbell") first_doorbell = std::min(first_doorbell, e.begin);
  }
  if (first_doorbell != std::numeric_limits<uint64_t>::max()) return first_doorbell;
  return first == std::numeric_limits<uint64_t>::max() ? 0 : first;
}

std::string TraceRecorder::to_json(std::string_view backend, std::string_view config, unsigned clock_mhz,
                                   unsigned cores, uint64_t run_cycles) const {
  std::vector<const Event*> sorted;
  sorted.reserve(events_.size());
  for (const Event& e : events_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event* a, const Event* b) {
    return std::tie(a->core, a->track, a->begin) < std::tie(b->core, b->track, b->begin);
  });
  const uint64_t t0 = origin();

  std::string out;
  out.reserve(200 + 160 * sorted.size());
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"backend\":";
  append_escaped(out, backend);
  out += ",\"config\":";
  append_escaped(out, config);
  out += ",\"clock_mhz\":" + std::to_string(clock_mhz) + ",\"cycles\":" + std::to_string(run_cycles) +
         ",\"time_unit\":\"us of device time: cycle / clock_mhz\"},\n\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  // Names of the processes (cores) and threads (tracks).
  for (unsigned c = 0; c < cores; ++c) {
    sep();
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(c) +
           ",\"tid\":0,\"args\":{\"name\":\"core " + std::to_string(c) + "\"}}";
    for (unsigned t = 0; t <= kNumTraceTracks; ++t) {
      sep();
      const std::string_view tn = t < kNumTraceTracks ? kTrackNames[t] : std::string_view("events");
      out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(c) + ",\"tid\":" + std::to_string(t) +
             ",\"args\":{\"name\":\"" + std::string(tn) + "\"}}";
      sep();
      out += "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(c) +
             ",\"tid\":" + std::to_string(t) + ",\"args\":{\"sort_index\":" + std::to_string(t) + "}}";
    }
  }
  for (const Event* e : sorted) {
    const uint64_t b = e->begin > t0 ? e->begin - t0 : 0;
    const uint64_t en = e->end > t0 ? e->end - t0 : 0;
    sep();
    out += "{\"name\":";
    append_escaped(out, e->name);
    if (e->track >= 0) {
      out += ",\"cat\":\"" + std::string(kTrackCats[size_t(e->track)]) +
             "\",\"ph\":\"X\",\"ts\":" + micros(b, clock_mhz) + ",\"dur\":" + micros(en - b, clock_mhz) +
             ",\"pid\":" + std::to_string(e->core) + ",\"tid\":" + std::to_string(e->track);
    } else {
      out += ",\"cat\":\"event\",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + micros(b, clock_mhz) +
             ",\"pid\":" + std::to_string(e->core) + ",\"tid\":" + std::to_string(kEventsTid);
    }
    out += ",\"args\":{\"begin_cycle\":" + std::to_string(b) + ",\"cycles\":" + std::to_string(en - b);
    if (!e->arg.empty()) {
      out += ",\"detail\":";
      append_escaped(out, e->arg);
    }
    out += "}}";
  }
  out += "\n]}\n";
  return out;
}

Status TraceRecorder::write_json(const std::string& path, std::string_view backend, std::string_view config,
                                 unsigned clock_mhz, unsigned cores, uint64_t run_cycles) const {
  const std::string json = to_json(backend, config, clock_mhz, cores, run_cycles);
  // A temporary file next to the target, renamed into place: readers never
  // see a half-written trace, and a failure leaves no file behind.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const TempPath in_flight(tmp);  // an interrupt removes it
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return make_error(path, std::string("cannot write the trace: ") + std::strerror(errno));
  const bool wrote = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int werr = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    std::remove(tmp.c_str());
    return make_error(path, std::string("cannot write the trace: ") + std::strerror(wrote ? errno : werr));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rerr = errno;
    std::remove(tmp.c_str());
    return make_error(path, std::string("cannot write the trace: ") + std::strerror(rerr));
  }
  return Status::ok();
}

}  // namespace loom::runtime
