//===- BatcherTest.cpp - Dynamic batching over batch buckets --------------===//
//
// An artifact with buckets 1, 2 and 4 of z = x + y on rows of 16 floats (the
// test kernels' add_f32, one workgroup per row). Each request's callback
// must see exactly its own rows of x + y, whatever batch it ran in; batches
// form, pad, respect priorities, reject past the queue bound and time out.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"

#include "kiln/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

using namespace kiln;
using namespace kiln::artifact;
using namespace kiln::test;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kRow = 16; // floats per row

/// With `endless`, every program repeats its dispatch forever (a command
/// list whose last command jumps back to the first).
std::string bucketArtifact(std::vector<uint32_t> buckets = {1, 2, 4}, bool endless = false) {
  ArtifactWriter writer;
  writer.setProducer("kiln unit tests");
  writer.setModel("add.onnx");
  CodeObjectDesc code;
  code.target = "cpu";
  code.triple = "x86_64-unknown-linux-gnu";
  code.cpu = "x86-64";
  code.format = "elf-shared-object";
  code.bytes = testKernels();
  for (uint32_t b : buckets)
    code.kernels.push_back({"add_b" + std::to_string(b), "add_f32", b, {1}, 0});
  writer.addCodeObject(code);
  for (size_t k = 0; k < buckets.size(); ++k) {
    int64_t b = buckets[k];
    uint64_t bytes = uint64_t(b * kRow * 4);
    std::vector<TensorDesc> in = {{"x", DType::F32, {b, kRow}}, {"y", DType::F32, {b, kRow}}};
    std::vector<TensorDesc> out = {{"z", DType::F32, {b, kRow}}};
    if (k == 0) {
      for (const TensorDesc &t : in)
        writer.addInput(t);
      writer.addOutput(out[0]);
    }
    ProgramDesc p;
    p.name = "batch_" + std::to_string(b);
    p.batchSize = uint32_t(b);
    p.arenaSize = 3 * bytes;
    p.inputs = {{BindingDesc::Arena, 0, bytes}, {BindingDesc::Arena, bytes, bytes}};
    p.outputs = {{BindingDesc::Arena, 2 * bytes, bytes}};
    p.inputTensors = in;
    p.outputTensors = out;
    DispatchDesc add;
    add.kernel = uint32_t(k);
    add.bindings = {p.inputs[0], p.inputs[1], p.outputs[0]};
    p.dispatches.push_back(add);
    if (endless)
      p.commands = {command(CommandOp::Dispatch, 0), command(CommandOp::Jump, 0)};
    writer.addProgram(p);
  }
  return writeBytes(writer);
}

/// One request of `rows` rows: x = base + i, y = 1000 * (i + 1) per element i.
struct Request {
  int64_t rows;
  float base;
  std::vector<float> x, y;
  std::vector<int64_t> shape;
  // Filled by the callback.
  std::mutex mutex;
  std::atomic<bool> done{false};
  kiln_status_code_t code = KILN_STATUS_OK;
  std::string message;
  std::vector<float> z;
  std::vector<int64_t> zShape;
  int order = -1;

  Request(int64_t rows, float base) : rows(rows), base(base), shape{rows, kRow} {
    for (int64_t i = 0; i < rows * kRow; ++i) {
      x.push_back(base + float(i));
      y.push_back(1000.0f * float(i + 1));
    }
  }
  std::vector<kiln_tensor_t> tensors() {
    kiln_tensor_t tx{"x", KILN_DTYPE_F32, 2, shape.data(), x.data(), x.size() * 4};
    kiln_tensor_t ty{"y", KILN_DTYPE_F32, 2, shape.data(), y.data(), y.size() * 4};
    return {tx, ty};
  }
  bool correct() const {
    if (code != KILN_STATUS_OK || zShape != shape || z.size() != x.size())
      return false;
    for (size_t i = 0; i < z.size(); ++i)
      if (z[i] != x[i] + y[i])
        return false;
    return true;
  }
};

std::atomic<int> completions{0};

void onDone(void *user, kiln_status_t status, const kiln_tensor_t *outputs, size_t count) {
  auto *r = static_cast<Request *>(user);
  std::lock_guard<std::mutex> lock(r->mutex);
  r->code = kiln_status_code(status);
  r->message = kiln_status_message(status);
  kiln_status_free(status);
  if (r->code == KILN_STATUS_OK && count == 1) {
    r->zShape.assign(outputs[0].shape, outputs[0].shape + outputs[0].rank);
    r->z.resize(outputs[0].byte_size / 4);
    std::memcpy(r->z.data(), outputs[0].data, outputs[0].byte_size);
  }
  r->order = completions++;
  r->done = true;
}

class Batcher : public ::testing::Test {
protected:
  void SetUp() override {
    std::string bytes = bucketArtifact();
    ASSERT_EQ(kiln_status_code(kiln_artifact_open_memory(bytes.data(), bytes.size(),
                                                         "buckets.kiln", &artifact)),
              KILN_STATUS_OK);
    ASSERT_EQ(kiln_status_code(kiln_device_create("cpu", nullptr, &device)), KILN_STATUS_OK);
    kiln_batcher_options_init(&options);
  }
  void TearDown() override {
    kiln_artifact_release(artifact);
    kiln_device_release(device);
  }
  /// One instance that runs a batch once 4 rows are queued, or at shutdown
  /// (a 10 s delay, a preferred batch of 4).
  kiln_batcher_t *createWaitingForFourRows() {
    static const uint32_t four[] = {4};
    options.max_queue_delay_us = 10000000;
    options.preferred_batch_sizes = four;
    options.preferred_batch_size_count = 1;
    return create();
  }
  kiln_batcher_t *create() {
    kiln_batcher_t *batcher = nullptr;
    kiln_status_t status = kiln_batcher_create(device, artifact, &options, &batcher);
    EXPECT_EQ(status, nullptr) << kiln_status_message(status);
    kiln_status_free(status);
    return batcher;
  }
  kiln_status_code_t submit(kiln_batcher_t *b, Request &r, uint32_t priority = 0,
                            uint64_t timeout = 0, std::string *message = nullptr) {
    std::vector<kiln_tensor_t> t = r.tensors();
    kiln_status_t status = kiln_batcher_submit(b, t.data(), t.size(), priority, timeout,
                                               onDone, &r);
    kiln_status_code_t code = kiln_status_code(status);
    if (message)
      *message = kiln_status_message(status);
    kiln_status_free(status);
    return code;
  }
  kiln_artifact_t *artifact = nullptr;
  kiln_device_t *device = nullptr;
  kiln_batcher_options_t options;
};

} // namespace

TEST_F(Batcher, EveryRequestGetsItsOwnRows) {
  options.max_queue_delay_us = 20000;
  kiln_batcher_t *b = create();
  ASSERT_TRUE(b);
  EXPECT_EQ(kiln_batcher_max_batch_size(b), 4u);
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 24; ++i)
    requests.push_back(std::make_unique<Request>(1 + i % 3, float(100 * i)));
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&, c] {
      for (size_t i = size_t(c); i < requests.size(); i += 4)
        EXPECT_EQ(submit(b, *requests[i]), KILN_STATUS_OK);
    });
  for (std::thread &t : clients)
    t.join();
  kiln_batcher_destroy(b); // runs what is queued
  for (auto &r : requests) {
    EXPECT_TRUE(r->done);
    EXPECT_TRUE(r->correct()) << "rows " << r->rows << " base " << r->base << ": "
                              << r->message;
  }
}

TEST_F(Batcher, FormsBatchesPadsAndCounts) {
  // One instance, a long delay: the batch runs when 4 rows are queued.
  kiln_batcher_t *b = createWaitingForFourRows();
  ASSERT_TRUE(b);
  Request a(1, 1), c(2, 2), d(1, 3);
  ASSERT_EQ(submit(b, a), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, c), KILN_STATUS_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(a.done); // 3 rows queued: it waits for a fourth
  ASSERT_EQ(submit(b, d), KILN_STATUS_OK);
  for (int i = 0; i < 2000 && !d.done; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(a.correct() && c.correct() && d.correct());
  // A lone 3-row request runs in bucket 4 (one zero row of padding) once
  // the batcher shuts down.
  Request e(3, 4);
  ASSERT_EQ(submit(b, e), KILN_STATUS_OK);
  kiln_batcher_stats_t stats;
  ASSERT_EQ(kiln_batcher_stats(b, &stats), nullptr);
  EXPECT_EQ(stats.executions, 1u);
  EXPECT_EQ(stats.batch_histogram[3], 1u);
  EXPECT_EQ(stats.queue_depth, 1u);
  kiln_batcher_destroy(b);
  EXPECT_TRUE(e.correct()) << e.message;
}

TEST_F(Batcher, CloseAnswersTheQueueWithoutRunningIt) {
  // Three one-row requests stay queued until the batcher is closed, which
  // answers them unrun.
  kiln_batcher_t *b = createWaitingForFourRows();
  ASSERT_TRUE(b);
  Request a(1, 1), c(1, 2), d(1, 3), late(1, 4);
  ASSERT_EQ(submit(b, a), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, c), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, d), KILN_STATUS_OK);
  EXPECT_EQ(kiln_batcher_close(b, "model 'm' was unloaded after a fault"), 3u);
  for (Request *r : {&a, &c, &d}) {
    EXPECT_TRUE(r->done);
    EXPECT_EQ(r->code, KILN_STATUS_UNAVAILABLE);
    EXPECT_EQ(r->message, "model 'm' was unloaded after a fault");
  }
  std::string message;
  EXPECT_EQ(submit(b, late, 0, 0, &message), KILN_STATUS_UNAVAILABLE);
  EXPECT_EQ(message, "model 'm' was unloaded after a fault");
  EXPECT_FALSE(late.done); // a rejected submit gets no callback
  EXPECT_EQ(kiln_batcher_close(b, "again"), 0u);
  kiln_batcher_stats_t stats;
  ASSERT_EQ(kiln_batcher_stats(b, &stats), nullptr);
  EXPECT_EQ(stats.executions, 0u);
  EXPECT_EQ(stats.requests_failed, 3u);
  EXPECT_EQ(stats.queue_depth, 0u);
  kiln_batcher_destroy(b);
  EXPECT_EQ(kiln_batcher_close(nullptr, nullptr), 0u);
}

TEST_F(Batcher, HigherPriorityRunsFirst) {
  options.priority_levels = 2;
  kiln_batcher_t *b = createWaitingForFourRows();
  ASSERT_TRUE(b);
  Request low(4, 0), high(1, 0);
  // The low one alone is a full batch; submit both before it can start by
  // holding the queue's lock order: the low one first, then the high one.
  ASSERT_EQ(submit(b, high, 1), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, low, 2), KILN_STATUS_OK);
  kiln_batcher_destroy(b);
  ASSERT_TRUE(high.correct() && low.correct());
  EXPECT_LT(high.order, low.order);
  std::string message;
  b = create();
  EXPECT_EQ(submit(b, high, 3, 0, &message), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(message, "priority 3 is not between 1 and 2");
  kiln_batcher_destroy(b);
}

TEST_F(Batcher, RejectsBeyondTheQueueBoundAndTimesOut) {
  options.max_queue_delay_us = 10000000;
  options.max_queue_size = 2;
  kiln_batcher_t *b = create();
  ASSERT_TRUE(b);
  Request r1(1, 0), r2(1, 0), r3(1, 0);
  std::string message;
  ASSERT_EQ(submit(b, r1), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, r2), KILN_STATUS_OK);
  EXPECT_EQ(submit(b, r3, 0, 0, &message), KILN_STATUS_UNAVAILABLE);
  EXPECT_EQ(message, "the queue is full (2 requests)");
  kiln_batcher_stats_t stats;
  ASSERT_EQ(kiln_batcher_stats(b, &stats), nullptr);
  EXPECT_EQ(stats.requests_rejected, 1u);
  kiln_batcher_destroy(b);
  EXPECT_TRUE(r1.correct() && r2.correct());
  EXPECT_FALSE(r3.done); // a rejected submit never calls back

  // A request whose timeout passes while it waits for a batch.
  options.max_queue_size = 0;
  b = create();
  Request late(1, 0);
  ASSERT_EQ(submit(b, late, 0, 2000), KILN_STATUS_OK);
  for (int i = 0; i < 2000 && !late.done; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(late.done);
  EXPECT_EQ(late.code, KILN_STATUS_UNAVAILABLE);
  EXPECT_EQ(late.message, "the request timed out in the queue");
  ASSERT_EQ(kiln_batcher_stats(b, &stats), nullptr);
  EXPECT_EQ(stats.requests_failed, 1u);
  kiln_batcher_destroy(b);

  // With the DELAY action it runs anyway, later.
  options.timeout_action = KILN_TIMEOUT_DELAY;
  options.max_queue_delay_us = 50000;
  b = create();
  Request delayed(1, 0);
  ASSERT_EQ(submit(b, delayed, 0, 2000), KILN_STATUS_OK);
  kiln_batcher_destroy(b);
  EXPECT_TRUE(delayed.correct()) << delayed.message;
}

TEST_F(Batcher, RefusesWhatDoesNotFit) {
  kiln_batcher_t *b = create();
  ASSERT_TRUE(b);
  std::string message;
  Request five(5, 0);
  EXPECT_EQ(submit(b, five, 0, 0, &message), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(message, "input 'x': 5 rows; a request takes 1 to 4 (the largest batch bucket)");
  Request r(2, 0);
  std::vector<kiln_tensor_t> t = r.tensors();
  int64_t other[] = {1, kRow};
  t[1].shape = other;
  t[1].byte_size = kRow * 4;
  kiln_status_t status = kiln_batcher_submit(b, t.data(), 2, 0, 0, onDone, &r);
  EXPECT_EQ(std::string(kiln_status_message(status)), "input 'y' has 1 rows, another input 2");
  kiln_status_free(status);
  int64_t wide[] = {2, 8};
  t[1].shape = wide;
  status = kiln_batcher_submit(b, t.data(), 2, 0, 0, onDone, &r);
  EXPECT_EQ(std::string(kiln_status_message(status)),
            "input 'y': float32 [2, 8] does not fit the model's float32 [n, 16]");
  kiln_status_free(status);
  status = kiln_batcher_submit(b, t.data(), 1, 0, 0, onDone, &r);
  EXPECT_EQ(std::string(kiln_status_message(status)), "missing input 'y'");
  kiln_status_free(status);
  kiln_batcher_destroy(b);
  EXPECT_FALSE(r.done);

  // An artifact without buckets.
  std::string bytes = writeBytes(addModel());
  kiln_artifact_t *plain = nullptr;
  ASSERT_EQ(kiln_artifact_open_memory(bytes.data(), bytes.size(), "plain.kiln", &plain),
            nullptr);
  kiln_batcher_t *none = nullptr;
  status = kiln_batcher_create(device, plain, nullptr, &none);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(kiln_status_message(status), HasSubstr("plain.kiln: the artifact has no batch "
                                                     "buckets"));
  kiln_status_free(status);
  EXPECT_EQ(none, nullptr);
  kiln_artifact_release(plain);

  uint32_t tooBig[] = {8};
  options.preferred_batch_sizes = tooBig;
  options.preferred_batch_size_count = 1;
  status = kiln_batcher_create(device, artifact, &options, &none);
  EXPECT_EQ(std::string(kiln_status_message(status)),
            "preferred batch size 8 is not between 1 and the largest bucket, 4");
  kiln_status_free(status);
}

TEST_F(Batcher, RunsStopAtTheirTimeLimit) {
  // A program that never ends: each batch stops at run_timeout_us and its
  // requests fail with DEADLINE_EXCEEDED; the batcher goes on.
  std::string bytes = bucketArtifact({1, 2}, /*endless=*/true);
  kiln_artifact_t *endless = nullptr;
  ASSERT_EQ(kiln_status_code(kiln_artifact_open_memory(bytes.data(), bytes.size(),
                                                       "endless.kiln", &endless)),
            KILN_STATUS_OK);
  options.run_timeout_us = 50000;
  kiln_batcher_t *b = nullptr;
  kiln_status_t created = kiln_batcher_create(device, endless, &options, &b);
  ASSERT_EQ(created, nullptr) << kiln_status_message(created);
  Request first(1, 0), second(2, 10);
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(submit(b, first), KILN_STATUS_OK);
  ASSERT_EQ(submit(b, second), KILN_STATUS_OK);
  kiln_batcher_destroy(b);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Request *r : {&first, &second}) {
    EXPECT_TRUE(r->done);
    EXPECT_EQ(r->code, KILN_STATUS_DEADLINE_EXCEEDED);
    EXPECT_THAT(r->message, HasSubstr("endless.kiln: the run passed its time limit of 50 ms"));
  }
  EXPECT_LT(seconds, 10.0); // two runs of about 50 ms (generous: a shared machine)
  kiln_artifact_release(endless);
}
