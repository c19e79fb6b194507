//===- Trace.h - Chrome trace files from runtime trace events ---*- C++ -*-===//
//
// Collects kiln_trace_event_t (sessions, batchers) and the tools' own events
// (runs, requests) and writes them as a Chrome trace (the JSON "Trace Event
// Format" that chrome://tracing and Perfetto open): one complete event
// ("ph": "X") each, in microseconds, with the thread that ran it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_TRACE_H
#define KILN_SUPPORT_TRACE_H

#include "kiln/runtime.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::support {

class TraceRecorder {
public:
  /// Keeps at most `maxEvents` events (the rest are counted as dropped).
  explicit TraceRecorder(size_t maxEvents = 1000000) : maxEvents_(maxEvents) {}

  /// A kiln_trace_callback_t; `user` is the recorder.
  static void callback(void *user, const kiln_trace_event_t *event);
  /// An event of the tool (times: steady clock nanoseconds); `args` are
  /// key/value pairs shown with it.
  void add(const std::string &category, const std::string &name, uint64_t startNs,
           uint64_t durationNs,
           const std::vector<std::pair<std::string, std::string>> &args = {});
  /// Now, in the events' clock.
  static uint64_t nowNs();

  size_t size() const;
  size_t dropped() const;
  /// Writes the trace to `path` (through path.tmp, renamed); false with
  /// `error` set on failure, nothing left behind.
  bool write(const std::string &path, std::string &error) const;

private:
  struct Event {
    std::string category, name;
    uint64_t startNs, durationNs;
    uint32_t thread;
    std::vector<std::pair<std::string, std::string>> args;
  };
  size_t maxEvents_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
};

} // namespace kiln::support

#endif // KILN_SUPPORT_TRACE_H
