//===- Batcher.cpp - Dynamic batching over compiled batch buckets ---------===//
//
// Requests queue per priority level. A worker (one per instance) takes the
// queue when it holds rows for the largest preferred batch size, or when the
// oldest request has waited max_queue_delay; it takes requests in priority
// and arrival order while their rows fit the largest bucket (the preferred
// size when there are enough), copies their rows into the smallest bucket
// that holds them (zero rows after), runs that bucket's session and hands
// each request its rows of the outputs.
//
//===----------------------------------------------------------------------===//

#include "Handles.h"
#include "Status.h"
#include "kiln/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

using namespace kiln::rt;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t nanosSince(Clock::time_point start, Clock::time_point end) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

struct Request {
  std::vector<std::vector<unsigned char>> inputs; // per model input, rows x row bytes
  uint32_t rows = 0;
  uint32_t level = 0; // 0-based priority level
  Clock::time_point arrival;
  Clock::time_point deadline; // max() for none
  kiln_batcher_callback_t callback = nullptr;
  void *user = nullptr;
};

} // namespace

struct kiln_batcher_s {
  kiln_batcher_options_t options;
  kiln_artifact_t *artifact = nullptr;
  kiln_device_t *device = nullptr;
  /// The buckets, ascending, with the program index of each.
  std::vector<uint32_t> buckets;
  std::vector<size_t> programs;
  std::vector<uint32_t> preferred; // descending
  /// Bytes of one row of each input and output (the same in every bucket).
  std::vector<uint64_t> inputRow, outputRow;
  /// Per instance, one session per bucket.
  std::vector<std::vector<kiln_session_t *>> sessions;
  std::vector<std::thread> workers;

  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::deque<Request>> queues; // per priority level
  bool stopping = false;
  std::string closed; // kiln_batcher_close's reason (empty: open)
  kiln_batcher_stats_t stats{};

  uint64_t queuedLocked() const {
    uint64_t n = 0;
    for (const auto &q : queues)
      n += q.size();
    return n;
  }
  uint64_t queuedRowsLocked() const {
    uint64_t n = 0;
    for (const auto &q : queues)
      for (const Request &r : q)
        n += r.rows;
    return n;
  }

  /// Answers the requests past their deadline (REJECT) or moves them behind
  /// the others (DELAY); returns the earliest deadline left.
  Clock::time_point expireLocked(Clock::time_point now, std::vector<Request> &expired) {
    Clock::time_point next = Clock::time_point::max();
    std::vector<Request> delayed;
    for (auto &q : queues) {
      for (auto it = q.begin(); it != q.end();) {
        if (it->deadline > now) {
          next = std::min(next, it->deadline);
          ++it;
          continue;
        }
        (options.timeout_action == KILN_TIMEOUT_DELAY ? delayed : expired)
            .push_back(std::move(*it));
        it = q.erase(it);
      }
    }
    for (Request &r : delayed) {
      r.deadline = Clock::time_point::max();
      r.level = uint32_t(queues.size() - 1);
      queues.back().push_back(std::move(r));
    }
    return next;
  }

  /// Takes the next batch's requests off the queues (at most `limit` rows).
  std::vector<Request> takeLocked(uint64_t limit) {
    std::vector<Request> batch;
    uint64_t rows = 0;
    for (auto &q : queues) {
      while (!q.empty() && rows + q.front().rows <= limit) {
        rows += q.front().rows;
        batch.push_back(std::move(q.front()));
        q.pop_front();
      }
      if (!q.empty())
        break; // keep priority and arrival order: nothing jumps the queue
    }
    return batch;
  }

  /// The first request in priority and arrival order, alone.
  std::vector<Request> takeFrontLocked() {
    std::vector<Request> batch;
    for (auto &q : queues)
      if (!q.empty()) {
        batch.push_back(std::move(q.front()));
        q.pop_front();
        break;
      }
    return batch;
  }

  void fail(std::vector<Request> &requests, const std::string &message) {
    Clock::time_point now = Clock::now();
    for (Request &r : requests) {
      r.callback(r.user, makeStatus(KILN_STATUS_UNAVAILABLE, message), nullptr, 0);
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.requests_failed;
      stats.request_ns += nanosSince(r.arrival, now);
    }
  }

  void work(size_t instance) {
    std::unique_lock<std::mutex> lock(mutex);
    uint32_t largest = buckets.back();
    uint64_t full = preferred.empty() ? largest : preferred.front();
    for (;;) {
      std::vector<Request> expired;
      Clock::time_point now = Clock::now();
      Clock::time_point nextDeadline = expireLocked(now, expired);
      if (!expired.empty()) {
        lock.unlock();
        fail(expired, "the request timed out in the queue");
        lock.lock();
        continue;
      }
      uint64_t queued = queuedLocked();
      if (queued == 0) {
        if (stopping)
          return;
        if (nextDeadline == Clock::time_point::max())
          wake.wait(lock);
        else
          wake.wait_until(lock, nextDeadline);
        continue;
      }
      std::vector<Request> batch;
      if (options.single_requests) {
        batch = takeFrontLocked();
      } else {
        // The oldest request decides when the batch runs anyway.
        Clock::time_point oldest = Clock::time_point::max();
        for (const auto &q : queues)
          for (const Request &r : q)
            oldest = std::min(oldest, r.arrival);
        Clock::time_point due = oldest + std::chrono::microseconds(options.max_queue_delay_us);
        uint64_t rows = queuedRowsLocked();
        if (rows < full && now < due && !stopping) {
          wake.wait_until(lock, std::min(due, nextDeadline));
          continue;
        }
        // Enough rows for a preferred size: form the largest one they fill.
        uint64_t limit = largest;
        for (uint32_t size : preferred)
          if (rows >= size) {
            limit = size;
            break;
          }
        batch = takeLocked(limit);
        if (batch.empty()) // the first request alone exceeds `limit`
          batch = takeLocked(largest);
      }
      bool more = queuedLocked() > 0;
      lock.unlock();
      if (more)
        wake.notify_one(); // another instance may take the rest
      run(instance, batch);
      lock.lock();
    }
  }

  void run(size_t instance, std::vector<Request> &batch) {
    Clock::time_point start = Clock::now();
    uint32_t rows = 0;
    for (const Request &r : batch)
      rows += r.rows;
    size_t b = size_t(std::lower_bound(buckets.begin(), buckets.end(), rows) - buckets.begin());
    uint32_t bucket = buckets[b];
    size_t program = programs[b];
    kiln_session_t *session = sessions[instance][b];
    const kiln::rt::ProgramInterface &io = artifact->artifact->programs()[program];

    std::vector<std::vector<unsigned char>> inputs(io.inputs.size());
    std::vector<kiln_tensor_t> inputViews(io.inputs.size());
    for (size_t i = 0; i < io.inputs.size(); ++i) {
      inputs[i].assign(io.inputs[i].byteSize, 0); // the padding rows are zeros
      uint64_t at = 0;
      for (const Request &r : batch) {
        std::memcpy(inputs[i].data() + at, r.inputs[i].data(), r.inputs[i].size());
        at += r.inputs[i].size();
      }
      kiln_tensor_t &t = inputViews[i];
      t = kiln_tensor_t();
      t.name = io.inputs[i].name.c_str();
      t.dtype = io.inputs[i].dtype;
      t.rank = io.inputs[i].shape.size();
      t.shape = io.inputs[i].shape.data();
      t.data = inputs[i].data();
      t.byte_size = inputs[i].size();
    }
    // Aligned: a cpu session writes the batch's outputs in place.
    std::vector<kiln::Bytes> outputs(io.outputs.size());
    std::vector<kiln_tensor_t> outputViews(io.outputs.size());
    for (size_t i = 0; i < io.outputs.size(); ++i) {
      outputs[i].resize(io.outputs[i].byteSize);
      outputViews[i] = kiln_tensor_t();
      outputViews[i].data = outputs[i].data();
      outputViews[i].byte_size = outputs[i].size();
    }
    kiln_status_t status = kiln_session_run(session, inputViews.data(), inputViews.size(),
                                            outputViews.data(), outputViews.size());
    std::string error = status ? kiln_status_message(status) : "";
    kiln_status_code_t code = kiln_status_code(status);
    kiln_status_free(status);

    // Each request's rows of every output, shaped [rows, ...].
    std::vector<std::vector<int64_t>> shapes(io.outputs.size());
    std::vector<kiln_tensor_t> mine(io.outputs.size());
    uint64_t row = 0;
    Clock::time_point computed = Clock::now();
    uint64_t compute = nanosSince(start, computed);
    for (Request &r : batch) {
      if (code != KILN_STATUS_OK) {
        r.callback(r.user,
                   makeStatus(code, strFormat("batch of %u rows (bucket %u): %s", rows, bucket,
                                              error.c_str())),
                   nullptr, 0);
      } else {
        for (size_t i = 0; i < io.outputs.size(); ++i) {
          shapes[i] = io.outputs[i].shape;
          shapes[i][0] = r.rows;
          mine[i] = outputViews[i];
          mine[i].shape = shapes[i].data();
          mine[i].data = outputs[i].data() + row * outputRow[i];
          mine[i].byte_size = size_t(r.rows * outputRow[i]);
        }
        r.callback(r.user, nullptr, mine.data(), mine.size());
      }
      row += r.rows;
    }
    Clock::time_point done = Clock::now();
    if (options.trace_callback) {
      auto ns = [](Clock::time_point t) {
        return uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
      };
      kiln_trace_event_t event{};
      event.category = "batch";
      event.name = "batch";
      event.start_ns = ns(start);
      event.duration_ns = nanosSince(start, computed);
      event.rows = rows;
      event.bucket = bucket;
      options.trace_callback(options.trace_user_data, &event);
      for (const Request &r : batch) {
        event.category = "queue";
        event.name = "queue";
        event.start_ns = ns(r.arrival);
        event.duration_ns = nanosSince(r.arrival, start);
        event.rows = r.rows;
        event.bucket = 0;
        options.trace_callback(options.trace_user_data, &event);
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.executions;
    stats.compute_ns += compute;
    if (rows - 1 < stats.histogram_size)
      ++stats.batch_histogram[rows - 1];
    for (const Request &r : batch) {
      stats.queue_ns += nanosSince(r.arrival, start);
      stats.request_ns += nanosSince(r.arrival, done);
      if (code == KILN_STATUS_OK) {
        ++stats.requests_succeeded;
        stats.inferences += r.rows;
      } else {
        ++stats.requests_failed;
      }
    }
  }
};

void kiln_batcher_options_init(kiln_batcher_options_t *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->instance_count = 1;
}

kiln_status_t kiln_batcher_create(kiln_device_t *device, kiln_artifact_t *artifact,
                                  const kiln_batcher_options_t *options,
                                  kiln_batcher_t **out_batcher) {
  auto invalid = [](const std::string &message) {
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, message);
  };
  if (!device || !artifact || !out_batcher)
    return invalid("kiln_batcher_create: device, artifact and out_batcher must not be NULL");
  kiln_batcher_options_t defaults;
  kiln_batcher_options_init(&defaults);
  const kiln_batcher_options_t &o = options ? *options : defaults;
  const Artifact &a = *artifact->artifact;
  auto batcher = std::make_unique<kiln_batcher_s>();
  batcher->options = o;
  if (batcher->options.instance_count == 0)
    batcher->options.instance_count = 1;
  if (batcher->options.instance_count > 256)
    return invalid(strFormat("instance_count %u is more than 256", o.instance_count));
  std::vector<std::pair<uint32_t, size_t>> buckets;
  for (size_t p = 0; p < a.programs().size(); ++p)
    if (a.programs()[p].batchSize)
      buckets.push_back({a.programs()[p].batchSize, p});
  if (buckets.empty())
    return invalid(a.name() + ": the artifact has no batch buckets (compile it with "
                              "kiln-compile --batch-sizes=...)");
  std::sort(buckets.begin(), buckets.end());
  for (auto [size, program] : buckets) {
    const ProgramInterface &io = a.programs()[program];
    for (int output = 0; output < 2; ++output)
      for (const TensorInfo &t : output ? io.outputs : io.inputs) {
        if (t.shape.empty() || t.shape[0] != int64_t(size) || t.extentAxis >= 0)
          return invalid(strFormat(
              "%s: %s '%s' of batch bucket %u has shape %s: dynamic batching needs every "
              "input and output to have the bucket as dimension 0%s",
              a.name().c_str(), output ? "output" : "input", t.name.c_str(), size,
              shapeString(t.shape.data(), t.shape.size()).c_str(),
              t.extentAxis >= 0 ? " and a static size" : ""));
      }
    batcher->buckets.push_back(size);
    batcher->programs.push_back(program);
  }
  const ProgramInterface &first = a.programs()[buckets.front().second];
  for (const TensorInfo &t : first.inputs)
    batcher->inputRow.push_back(t.byteSize / uint64_t(t.shape[0]));
  for (const TensorInfo &t : first.outputs)
    batcher->outputRow.push_back(t.byteSize / uint64_t(t.shape[0]));
  uint32_t largest = batcher->buckets.back();
  for (size_t i = 0; i < o.preferred_batch_size_count; ++i) {
    uint32_t size = o.preferred_batch_sizes ? o.preferred_batch_sizes[i] : 0;
    if (size == 0 || size > largest)
      return invalid(strFormat("preferred batch size %u is not between 1 and the largest "
                               "bucket, %u",
                               size, largest));
    batcher->preferred.push_back(size);
  }
  std::sort(batcher->preferred.rbegin(), batcher->preferred.rend());
  uint32_t levels = std::max<uint32_t>(1, o.priority_levels);
  if (levels > 1024)
    return invalid(strFormat("priority_levels %u is more than 1024", levels));
  if (o.default_priority_level > levels)
    return invalid(strFormat("default_priority_level %u is not between 1 and priority_levels "
                             "(%u)",
                             o.default_priority_level, levels));
  if (o.timeout_action != KILN_TIMEOUT_REJECT && o.timeout_action != KILN_TIMEOUT_DELAY)
    return invalid(strFormat("unknown timeout_action %d", int(o.timeout_action)));
  batcher->queues.resize(levels);
  batcher->stats.histogram_size = std::min<size_t>(largest, 64);

  kiln_artifact_retain(artifact);
  batcher->artifact = artifact;
  kiln_device_retain(device);
  batcher->device = device;
  auto cleanup = [&]() {
    for (auto &sessions : batcher->sessions)
      for (kiln_session_t *s : sessions)
        kiln_session_release(s);
    kiln_artifact_release(artifact);
    kiln_device_release(device);
  };
  batcher->sessions.resize(batcher->options.instance_count);
  for (auto &sessions : batcher->sessions)
    for (size_t program : batcher->programs) {
      kiln_session_options_t sessionOptions;
      kiln_session_options_init(&sessionOptions);
      sessionOptions.trace_callback = o.trace_callback;
      sessionOptions.trace_user_data = o.trace_user_data;
      sessionOptions.run_timeout_us = o.run_timeout_us;
      sessionOptions.program = a.str(a.manifest().programs()->Get(
          flatbuffers::uoffset_t(program))->name());
      kiln_session_t *session = nullptr;
      if (kiln_status_t status = kiln_session_create(device, artifact, &sessionOptions,
                                                     &session)) {
        cleanup();
        return status;
      }
      sessions.push_back(session);
    }
  kiln_batcher_s *raw = batcher.get();
  for (size_t i = 0; i < raw->sessions.size(); ++i)
    raw->workers.emplace_back([raw, i] {
      // A device pinned to some CPUs (kiln_device_options_t.cpu_list) gets
      // the threads that drive its jobs too.
      if (raw->device->pool)
        raw->device->pool->pinCurrentThread();
      raw->work(i);
    });
  *out_batcher = batcher.release();
  return nullptr;
}

void kiln_batcher_destroy(kiln_batcher_t *batcher) {
  if (!batcher)
    return;
  {
    std::lock_guard<std::mutex> lock(batcher->mutex);
    batcher->stopping = true;
  }
  batcher->wake.notify_all();
  for (std::thread &t : batcher->workers)
    t.join();
  for (auto &sessions : batcher->sessions)
    for (kiln_session_t *s : sessions)
      kiln_session_release(s);
  kiln_artifact_release(batcher->artifact);
  kiln_device_release(batcher->device);
  delete batcher;
}

size_t kiln_batcher_close(kiln_batcher_t *batcher, const char *reason) {
  if (!batcher)
    return 0;
  std::vector<Request> queued;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(batcher->mutex);
    if (batcher->closed.empty())
      batcher->closed = reason && *reason ? reason : "the batcher was closed";
    message = batcher->closed;
    for (auto &q : batcher->queues) {
      for (Request &r : q)
        queued.push_back(std::move(r));
      q.clear();
    }
  }
  batcher->fail(queued, message);
  return queued.size();
}

kiln_status_t kiln_batcher_submit(kiln_batcher_t *batcher, const kiln_tensor_t *inputs,
                                  size_t input_count, uint32_t priority, uint64_t timeout_us,
                                  kiln_batcher_callback_t callback, void *user_data) {
  auto invalid = [](const std::string &message) {
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, message);
  };
  if (!batcher || !callback)
    return invalid("kiln_batcher_submit: batcher and callback must not be NULL");
  if (input_count != 0 && !inputs)
    return invalid("inputs is NULL");
  const ProgramInterface &io =
      batcher->artifact->artifact->programs()[batcher->programs.front()];
  Request request;
  request.inputs.resize(io.inputs.size());
  std::vector<bool> given(io.inputs.size(), false);
  int64_t rows = -1;
  for (size_t i = 0; i < input_count; ++i) {
    const kiln_tensor_t &t = inputs[i];
    if (!t.name)
      return invalid(strFormat("input %zu has no name", i));
    size_t index = 0;
    while (index < io.inputs.size() && io.inputs[index].name != t.name)
      ++index;
    if (index == io.inputs.size())
      return invalid(strFormat("no model input named '%s'", t.name));
    if (given[index])
      return invalid(strFormat("input '%s' is given twice", t.name));
    given[index] = true;
    const TensorInfo &e = io.inputs[index];
    bool fits = t.dtype == e.dtype && t.rank == e.shape.size() && (t.rank == 0 || t.shape);
    for (size_t d = 1; fits && d < t.rank; ++d)
      fits = t.shape[d] == e.shape[d];
    std::string want = "[n";
    for (size_t d = 1; d < e.shape.size(); ++d)
      want += ", " + std::to_string(e.shape[d]);
    want += "]";
    if (!fits)
      return invalid(strFormat("input '%s': %s %s does not fit the model's %s %s", t.name,
                               kiln_dtype_name(t.dtype),
                               t.shape ? shapeString(t.shape, t.rank).c_str() : "(no shape)",
                               kiln_dtype_name(e.dtype), want.c_str()));
    int64_t n = t.shape[0];
    if (n < 1 || n > int64_t(batcher->buckets.back()))
      return invalid(strFormat("input '%s': %lld rows; a request takes 1 to %u (the largest "
                               "batch bucket)",
                               t.name, (long long)n, batcher->buckets.back()));
    if (rows >= 0 && n != rows)
      return invalid(strFormat("input '%s' has %lld rows, another input %lld", t.name,
                               (long long)n, (long long)rows));
    rows = n;
    uint64_t bytes = uint64_t(n) * batcher->inputRow[index];
    if (t.byte_size != bytes || (bytes && !t.data))
      return invalid(strFormat("input '%s': %zu bytes of data, expected %llu", t.name,
                               t.byte_size, (unsigned long long)bytes));
    const auto *data = static_cast<const unsigned char *>(t.data);
    request.inputs[index].assign(data, data + bytes);
  }
  for (size_t i = 0; i < io.inputs.size(); ++i)
    if (!given[i])
      return invalid(strFormat("missing input '%s'", io.inputs[i].name.c_str()));
  uint32_t levels = uint32_t(batcher->queues.size());
  uint32_t level = priority ? priority
                            : (batcher->options.default_priority_level
                                   ? batcher->options.default_priority_level
                                   : levels);
  if (level > levels)
    return invalid(strFormat("priority %u is not between 1 and %u", priority, levels));
  request.rows = uint32_t(rows);
  request.level = level - 1;
  request.arrival = Clock::now();
  uint64_t timeout = timeout_us ? timeout_us : batcher->options.default_timeout_us;
  request.deadline = timeout ? request.arrival + std::chrono::microseconds(timeout)
                             : Clock::time_point::max();
  request.callback = callback;
  request.user = user_data;
  {
    std::lock_guard<std::mutex> lock(batcher->mutex);
    if (batcher->stopping)
      return makeStatus(KILN_STATUS_UNAVAILABLE, "the batcher is shutting down");
    if (!batcher->closed.empty())
      return makeStatus(KILN_STATUS_UNAVAILABLE, batcher->closed);
    auto &queue = batcher->queues[request.level];
    if (batcher->options.max_queue_size && queue.size() >= batcher->options.max_queue_size) {
      ++batcher->stats.requests_rejected;
      return makeStatus(KILN_STATUS_UNAVAILABLE,
                        strFormat("the queue is full (%llu requests)",
                                  (unsigned long long)batcher->options.max_queue_size));
    }
    queue.push_back(std::move(request));
  }
  batcher->wake.notify_one();
  return nullptr;
}

kiln_status_t kiln_batcher_stats(kiln_batcher_t *batcher, kiln_batcher_stats_t *out_stats) {
  if (!batcher || !out_stats)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_batcher_stats: batcher and out_stats must not be NULL");
  std::lock_guard<std::mutex> lock(batcher->mutex);
  *out_stats = batcher->stats;
  out_stats->queue_depth = batcher->queuedLocked();
  return nullptr;
}

uint32_t kiln_batcher_max_batch_size(const kiln_batcher_t *batcher) {
  return batcher ? batcher->buckets.back() : 0;
}
