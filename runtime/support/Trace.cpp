//===- Trace.cpp - Chrome trace files from runtime trace events -----------===//

#include "kiln/support/Trace.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

using namespace kiln::support;

namespace {

/// A small number per thread, in the order threads first trace.
uint32_t threadNumber() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t mine = next++;
  return mine;
}

void appendEscaped(std::string &out, const std::string &text) {
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else {
      out += char(c);
    }
  }
}

} // namespace

uint64_t TraceRecorder::nowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

void TraceRecorder::callback(void *user, const kiln_trace_event_t *event) {
  auto *recorder = static_cast<TraceRecorder *>(user);
  std::vector<std::pair<std::string, std::string>> args;
  if (std::strcmp(event->category, "batch") == 0) {
    args.emplace_back("rows", std::to_string(event->rows));
    args.emplace_back("bucket", std::to_string(event->bucket));
  } else if (std::strcmp(event->category, "queue") == 0) {
    args.emplace_back("rows", std::to_string(event->rows));
  }
  recorder->add(event->category, event->name, event->start_ns, event->duration_ns, args);
}

void TraceRecorder::add(const std::string &category, const std::string &name, uint64_t startNs,
                        uint64_t durationNs,
                        const std::vector<std::pair<std::string, std::string>> &args) {
  uint32_t thread = threadNumber();
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() >= maxEvents_) {
    ++dropped_;
    return;
  }
  events_.push_back({category, name, startNs, durationNs, thread, args});
}

size_t TraceRecorder::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

size_t TraceRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

bool TraceRecorder::write(const std::string &path, std::string &error) const {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t origin = UINT64_MAX;
    for (const Event &e : events_)
      origin = std::min(origin, e.startNs);
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event &e = events_[i];
      char times[96];
      std::snprintf(times, sizeof(times), "\"ts\": %.3f, \"dur\": %.3f",
                    double(e.startNs - origin) / 1000.0, double(e.durationNs) / 1000.0);
      out += "{\"ph\": \"X\", \"pid\": 1, \"tid\": " + std::to_string(e.thread) + ", \"cat\": \"";
      appendEscaped(out, e.category);
      out += "\", \"name\": \"";
      appendEscaped(out, e.name);
      out += "\", ";
      out += times;
      if (!e.args.empty()) {
        out += ", \"args\": {";
        for (size_t a = 0; a < e.args.size(); ++a) {
          out += a ? ", \"" : "\"";
          appendEscaped(out, e.args[a].first);
          out += "\": \"";
          appendEscaped(out, e.args[a].second);
          out += "\"";
        }
        out += "}";
      }
      out += i + 1 < events_.size() ? "},\n" : "}\n";
    }
    out += "], \"otherData\": {\"dropped_events\": \"" + std::to_string(dropped_) + "\"}}\n";
  }
  std::string tmp = path + ".tmp";
  FILE *file = std::fopen(tmp.c_str(), "wb");
  if (!file) {
    error = path + ": cannot write the trace: " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(out.data(), 1, out.size(), file) == out.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write the trace: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}
