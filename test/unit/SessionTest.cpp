//===- SessionTest.cpp - Devices, sessions and runs -----------------------===//
//
// Runs artifacts built around the test kernel library (TestKernels.c)
// through the C API and its C++ wrapper: results, binding alignment, every
// workgroup exactly once, input and output validation, code object loading
// errors, profiling and concurrent runs.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"

#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>

using namespace kiln;
using namespace kiln::artifact;
using namespace kiln::test;
using ::testing::HasSubstr;

extern "C" int kiln_c_api_smoke(const char *path, char *error,
                                size_t errorSize);

namespace {

Artifact openArtifact(const ArtifactWriter &writer) {
  std::string bytes = writeBytes(writer);
  Artifact artifact;
  Status status = Artifact::openMemory(bytes.data(), bytes.size(), "test.kiln",
                                       artifact);
  EXPECT_TRUE(status.ok()) << status.message();
  return artifact;
}

Device cpuDevice(uint32_t threads) {
  Device device;
  Status status = Device::create("cpu", threads, device);
  EXPECT_TRUE(status.ok()) << status.message();
  return device;
}

Session makeSession(const Device &device, const Artifact &artifact,
                    bool profiling = false) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.enable_profiling = profiling;
  Session session;
  Status status = Session::create(device, artifact, &options, session);
  EXPECT_TRUE(status.ok()) << status.message();
  return session;
}

std::vector<float> floats(const Tensor &t) {
  std::vector<float> v(t.data.size() / 4);
  if (!v.empty()) // an output of no elements has no data pointer
    std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

/// An artifact with one int32 counter per workgroup, bumped by count_i32
/// over `dispatches` dispatches of `workgroups` workgroups each.
ArtifactWriter counterModel(uint64_t workgroups, size_t dispatches) {
  ArtifactWriter writer;
  writer.addOutput({"counts", DType::I32, {int64_t(workgroups)}});
  CodeObjectDesc code;
  code.target = "cpu";
  code.format = "elf-shared-object";
  code.bytes = testKernels();
  code.kernels.push_back({"count", "count_i32", workgroups, {1}, 0});
  writer.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = workgroups * 4;
  program.outputs = {{BindingDesc::Arena, 0, workgroups * 4}};
  for (size_t i = 0; i < dispatches; ++i)
    program.dispatches.push_back(
        {0, {{BindingDesc::Arena, 0, workgroups * 4}}, 0, 0, "Count"});
  writer.addProgram(program);
  return writer;
}

} // namespace

TEST(Session, AddsTwoInputs) {
  Artifact artifact = openArtifact(addModel());
  for (uint32_t threads : {1u, 2u, 3u}) {
    Device device = cpuDevice(threads);
    EXPECT_EQ(device.threadCount(), threads);
    Session session = makeSession(device, artifact);
    Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
    std::vector<Tensor> outputs;
    Status status = session.run({y, x}, outputs); // any order
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].name, "z");
    EXPECT_EQ(outputs[0].dtype, KILN_DTYPE_F32);
    EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{4, 8}));
    std::vector<float> z = floats(outputs[0]), xv = floats(x), yv = floats(y);
    for (size_t i = 0; i < 32; ++i)
      EXPECT_EQ(z[i], xv[i] + yv[i]) << i;
  }
}

/// addModel's z = x + y with its size along `axis` decided at run time:
/// the extent is an int64 constant holding `extent`.
Artifact extentModel(int32_t axis, int64_t extent) {
  ArtifactWriter writer = addModel(
      [](ProgramDesc &p) { p.extents.push_back({0, {BindingDesc::Constant, 0, 8}}); },
      "add_f32", "cpu", axis);
  EXPECT_EQ(writer.addConstantCopy(&extent, 8), 0u);
  return openArtifact(writer);
}

TEST(Session, OutputExtentShapesTheResult) {
  Device device = cpuDevice(2);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  std::vector<float> xv = floats(x), yv = floats(y);
  struct Case {
    int32_t axis;
    int64_t extent;
    std::vector<int64_t> shape;
  };
  for (const Case &c : {Case{1, 3, {4, 3}}, Case{0, 2, {2, 8}}, Case{1, 8, {4, 8}},
                        Case{1, 0, {4, 0}}}) {
    Artifact artifact = extentModel(c.axis, c.extent);
    EXPECT_EQ(kiln_artifact_output_extent_axis(artifact.get(), 0), c.axis);
    EXPECT_EQ(kiln_artifact_output_extent_axis(artifact.get(), 1), -1);
    Session session = makeSession(device, artifact);
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(outputs[0].shape, c.shape);
    int64_t rows = c.shape[0], cols = c.shape[1];
    ASSERT_EQ(outputs[0].data.size(), size_t(rows * cols * 4));
    std::vector<float> z = floats(outputs[0]);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < cols; ++col)
        EXPECT_EQ(z[r * cols + col], xv[r * 8 + col] + yv[r * 8 + col])
            << "axis " << c.axis << " extent " << c.extent << " at " << r << ", " << col;
  }
  EXPECT_EQ(kiln_artifact_output_extent_axis(nullptr, 0), -1);
}

TEST(Session, ExtentOutsideItsBoundFailsTheRun) {
  Device device = cpuDevice(1);
  for (int64_t extent : {9, -1}) {
    Artifact artifact = extentModel(1, extent);
    Session session = makeSession(device, artifact);
    std::vector<Tensor> outputs;
    Status status = session.run({floatTensor("x", 0, 1), floatTensor("y", 0, 1)}, outputs);
    EXPECT_EQ(status.code(), KILN_STATUS_INTERNAL);
    EXPECT_EQ(std::string(status.message()),
              "output 'z': the program computed " + std::to_string(extent) +
                  " entries along axis 1, outside its bound [0, 8]");
  }
}

/// addModel's z = x + y (arena: x at 0, y at 128, z at 256, 128 bytes each)
/// run through `commands` with one loop counter; `constant` holds the
/// constants section.
Artifact commandModel(std::vector<CommandDesc> commands, const std::string &constant) {
  ArtifactWriter writer = addModel([&](ProgramDesc &p) {
    p.commands = std::move(commands);
    p.counters = 1;
  });
  writer.addConstantCopy(constant.data(), constant.size());
  return openArtifact(writer);
}

const BindingDesc kX{BindingDesc::Arena, 0, 128}, kZ{BindingDesc::Arena, 256, 128};

TEST(Session, CommandsBranchOnAByte) {
  // z = flag ? x + y : x.
  Device device = cpuDevice(2);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  std::vector<float> xv = floats(x), yv = floats(y);
  for (char flag : {1, 0}) {
    Artifact artifact = commandModel(
        {command(CommandOp::JumpIfFalse, 3, {BindingDesc::Constant, 0, 1}),
         command(CommandOp::Dispatch, 0), command(CommandOp::Jump, 4),
         command(CommandOp::Copy, 0, kX, kZ)},
        std::string(1, flag));
    Session session = makeSession(device, artifact);
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    std::vector<float> z = floats(outputs[0]);
    for (size_t i = 0; i < z.size(); ++i)
      EXPECT_EQ(z[i], flag ? xv[i] + yv[i] : xv[i]) << int(flag) << " " << i;
  }
}

TEST(Session, CommandsLoopWithACounter) {
  // x += y three times (z = x + y, then x = z), then the same loop again
  // in a second run: the counter starts from 0 each run.
  Device device = cpuDevice(2);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  std::vector<float> xv = floats(x), yv = floats(y);
  int64_t three = 3;
  Artifact artifact = commandModel(
      {command(CommandOp::CounterReset),
       command(CommandOp::JumpIfCounterAtLeast, 6, {BindingDesc::Constant, 0, 8}),
       command(CommandOp::Dispatch, 0), command(CommandOp::Copy, 0, kZ, kX),
       command(CommandOp::CounterIncrement), command(CommandOp::Jump, 1)},
      std::string(reinterpret_cast<const char *>(&three), 8));
  Session session = makeSession(device, artifact);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    std::vector<float> z = floats(outputs[0]);
    for (size_t i = 0; i < z.size(); ++i)
      EXPECT_EQ(z[i], xv[i] + 3 * yv[i]) << run << " " << i;
  }
}

TEST(Session, RunsStopAtTheirTimeLimit) {
  // A loop that never ends (dispatch, jump back) stops at run_timeout_us
  // with DEADLINE_EXCEEDED, and the session runs again; without a limit a
  // finite program is unchanged by one.
  Device device = cpuDevice(2);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  Artifact endless = commandModel(
      {command(CommandOp::Dispatch, 0), command(CommandOp::Jump, 0)}, std::string(8, '\0'));
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.run_timeout_us = 20000;
  Session session;
  Status created = Session::create(device, endless, &options, session);
  ASSERT_TRUE(created.ok()) << created.message();
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outputs;
    auto start = std::chrono::steady_clock::now();
    Status status = session.run({x, y}, outputs);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(status.code(), KILN_STATUS_DEADLINE_EXCEEDED);
    EXPECT_THAT(status.message(), ::testing::MatchesRegex(
                                      ".*: the run passed its time limit of 20 ms and was "
                                      "stopped before command [01] of 2"));
    EXPECT_GE(seconds, 0.02);
    EXPECT_LT(seconds, 5.0); // generous: a shared machine
  }
  EXPECT_STREQ(kiln_status_code_name(KILN_STATUS_DEADLINE_EXCEEDED), "deadline exceeded");

  // A straight-line program under a generous limit: the usual sums.
  Artifact plain = openArtifact(addModel());
  options.run_timeout_us = 60000000;
  Session limited;
  ASSERT_TRUE(Session::create(device, plain, &options, limited).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(limited.run({x, y}, outputs).ok());
  std::vector<float> xv = floats(x), yv = floats(y), z = floats(outputs[0]);
  for (size_t i = 0; i < z.size(); ++i)
    EXPECT_EQ(z[i], xv[i] + yv[i]) << i;
}

TEST(Session, CommandsStoreTheCounterAndFillRows) {
  // For r in 0..3: x's first 8 bytes = r (int64), then row r of z (32 bytes)
  // = x's first row. A fifth iteration would have no row: the run fails.
  Device device = cpuDevice(1);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", 0, 0);
  std::vector<float> xv = floats(x);
  for (int64_t limit : {4, 5}) {
    Artifact artifact = commandModel(
        {command(CommandOp::CounterReset),
         command(CommandOp::JumpIfCounterAtLeast, 6, {BindingDesc::Constant, 0, 8}),
         command(CommandOp::CounterStore, 0, {}, {BindingDesc::Arena, 0, 8}),
         command(CommandOp::CopyToRow, 0, {BindingDesc::Arena, 0, 32}, kZ),
         command(CommandOp::CounterIncrement), command(CommandOp::Jump, 1)},
        std::string(reinterpret_cast<const char *>(&limit), 8));
    Session session = makeSession(device, artifact);
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    if (limit == 5) {
      EXPECT_EQ(status.code(), KILN_STATUS_INTERNAL);
      EXPECT_EQ(std::string(status.message()),
                "test.kiln: command 3: loop iteration 4 has no row in a scan output of 4 rows");
      continue;
    }
    ASSERT_TRUE(status.ok()) << status.message();
    const unsigned char *z = outputs[0].data.data();
    for (int64_t r = 0; r < 4; ++r) {
      int64_t stored;
      std::memcpy(&stored, z + r * 32, 8);
      EXPECT_EQ(stored, r);
      float rest[6];
      std::memcpy(rest, z + r * 32 + 8, sizeof(rest));
      for (int i = 0; i < 6; ++i)
        EXPECT_EQ(rest[i], xv[2 + i]) << r << " " << i;
    }
  }
}

TEST(Session, CommandsReadRows) {
  // For r in 0..3: row r of x (32 bytes) to y's first row, then y's first
  // row to row r of z: z becomes x. A fifth iteration reads no row of x.
  Device device = cpuDevice(1);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", 0, 0);
  std::vector<float> xv = floats(x);
  BindingDesc row{BindingDesc::Arena, 128, 32};
  for (int64_t limit : {4, 5}) {
    Artifact artifact = commandModel(
        {command(CommandOp::CounterReset),
         command(CommandOp::JumpIfCounterAtLeast, 6, {BindingDesc::Constant, 0, 8}),
         command(CommandOp::CopyFromRow, 0, kX, row), command(CommandOp::CopyToRow, 0, row, kZ),
         command(CommandOp::CounterIncrement), command(CommandOp::Jump, 1)},
        std::string(reinterpret_cast<const char *>(&limit), 8));
    Session session = makeSession(device, artifact);
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    if (limit == 5) {
      EXPECT_EQ(status.code(), KILN_STATUS_INTERNAL);
      EXPECT_EQ(std::string(status.message()),
                "test.kiln: command 2: loop iteration 4 has no row in a scan input of 4 rows");
      continue;
    }
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(floats(outputs[0]), xv);
  }
}

TEST(Session, ConstantsAreUsedInPlace) {
  // t = x + y in the arena, then z = t * 3 with the scale a constant.
  static const float three = 3.0f;
  static const char pad[10] = {};
  ArtifactWriter two;
  two.addInput({"x", DType::F32, {4, 8}});
  two.addInput({"y", DType::F32, {4, 8}});
  two.addOutput({"z", DType::F32, {4, 8}});
  two.addConstant(pad, sizeof(pad));
  ASSERT_EQ(two.addConstant(&three, 4), 64u);
  CodeObjectDesc code;
  code.target = "cpu";
  code.format = "elf-shared-object";
  code.bytes = testKernels();
  code.kernels = {{"add", "add_f32", 2, {1}, 0}, {"scale", "scale_f32", 2, {1}, 0}};
  two.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 512;
  program.inputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 256, 128}};
  program.dispatches.push_back({0,
                                {{BindingDesc::Arena, 0, 128},
                                 {BindingDesc::Arena, 128, 128},
                                 {BindingDesc::Arena, 384, 128}},
                                32, 384, "Add_0"});
  program.dispatches.push_back({1,
                                {{BindingDesc::Arena, 384, 128},
                                 {BindingDesc::Constant, 64, 4},
                                 {BindingDesc::Arena, 256, 128}},
                                32, 260, "Mul_1"});
  two.addProgram(program);

  Artifact artifact = openArtifact(two);
  Device device = cpuDevice(2);
  Session session = makeSession(device, artifact, true);
  Tensor x = floatTensor("x", 0, 1), y = floatTensor("y", 10, -0.25f);
  std::vector<Tensor> outputs;
  Status status = session.run({x, y}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> z = floats(outputs[0]), xv = floats(x), yv = floats(y);
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(z[i], (xv[i] + yv[i]) * 3.0f) << i;

  ASSERT_EQ(session.dispatchCount(), 2u);
  kiln_dispatch_info_t info = session.dispatchInfo(1);
  EXPECT_STREQ(info.name, "scale");
  EXPECT_STREQ(info.symbol, "scale_f32");
  EXPECT_STREQ(info.ops, "Mul_1");
  EXPECT_EQ(info.workgroup_count, 2u);
  EXPECT_EQ(info.flops, 32u);
  EXPECT_EQ(info.bytes, 260u);
  EXPECT_EQ(info.binding_count, 3u);
  kiln_dispatch_info_t none = session.dispatchInfo(5);
  EXPECT_EQ(none.name, nullptr);
}

TEST(Session, BindingsAre64ByteAligned) {
  // address_of writes the address of binding 0 into binding 1.
  ArtifactWriter writer;
  writer.addOutput({"arena_base", DType::I64, {1}});
  writer.addOutput({"constant_base", DType::I64, {1}});
  static const char constant[1] = {7};
  writer.addConstant(constant, 1);
  CodeObjectDesc code;
  code.target = "cpu";
  code.bytes = testKernels();
  code.kernels = {{"address", "address_of", 1, {1}, 0}};
  writer.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 200;
  program.outputs = {{BindingDesc::Arena, 64, 8}, {BindingDesc::Arena, 128, 8}};
  program.dispatches.push_back(
      {0, {{BindingDesc::Arena, 0, 1}, {BindingDesc::Arena, 64, 8}}, 0, 0, ""});
  program.dispatches.push_back(
      {0, {{BindingDesc::Constant, 0, 1}, {BindingDesc::Arena, 128, 8}}, 0, 0,
       ""});
  writer.addProgram(program);
  Artifact artifact = openArtifact(writer);
  Device device = cpuDevice(1);
  Session session = makeSession(device, artifact);
  std::vector<Tensor> outputs;
  Status status = session.run(std::vector<Tensor>{}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  uint64_t arenaBase, constantBase;
  std::memcpy(&arenaBase, outputs[0].data.data(), 8);
  std::memcpy(&constantBase, outputs[1].data.data(), 8);
  EXPECT_NE(arenaBase, 0u);
  EXPECT_EQ(arenaBase % 64, 0u);
  EXPECT_NE(constantBase, 0u);
  EXPECT_EQ(constantBase % 64, 0u);
}

/// z = (x + y) * 3 planned as kiln-plan-memory may plan it: x dies in the
/// add, so z takes its bytes; `where` records the address the scale wrote
/// through.
Artifact inPlaceModel() {
  static const float three = 3.0f;
  ArtifactWriter writer;
  writer.addInput({"x", DType::F32, {4, 8}});
  writer.addInput({"y", DType::F32, {4, 8}});
  writer.addOutput({"z", DType::F32, {4, 8}});
  writer.addOutput({"where", DType::I64, {1}});
  writer.addConstant(&three, 4);
  CodeObjectDesc code;
  code.target = "cpu";
  code.bytes = testKernels();
  code.kernels = {{"add", "add_f32", 2, {1}, 0},
                  {"scale", "scale_f32", 2, {1}, 0},
                  {"address", "address_of", 1, {1}, 0}};
  writer.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 448;
  program.inputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 256, 128}};
  program.outputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 384, 8}};
  program.dispatches.push_back({0,
                                {{BindingDesc::Arena, 0, 128},
                                 {BindingDesc::Arena, 256, 128},
                                 {BindingDesc::Arena, 128, 128}},
                                0, 0, "Add"});
  program.dispatches.push_back({1,
                                {{BindingDesc::Arena, 128, 128},
                                 {BindingDesc::Constant, 0, 4},
                                 {BindingDesc::Arena, 0, 128}},
                                0, 0, "Mul"});
  program.dispatches.push_back(
      {2, {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 384, 8}}, 0, 0, ""});
  writer.addProgram(program);
  return openArtifact(writer);
}

TEST(Session, AlignedOutputsAreWrittenInPlace) {
  Artifact artifact = inPlaceModel();
  Device device = cpuDevice(2);
  Session session = makeSession(device, artifact);
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  std::vector<float> xv = floats(x), yv = floats(y);
  // 64-byte aligned storage; buffers at offset 0 (in place) or 4 (copied),
  // full of NaNs, or (shared) holding x, which the caller passes from there.
  struct Case {
    size_t offset;
    bool shared;
  };
  for (Case c : {Case{0, false}, Case{4, false}, Case{0, true}, Case{4, true}}) {
    SCOPED_TRACE(testing::Message() << "offset " << c.offset << " shared " << c.shared);
    Bytes zStorage(256, 0xff), whereStorage(64 + 8, 0xff);
    unsigned char *z = zStorage.data() + c.offset;
    unsigned char *where = whereStorage.data() + c.offset;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(zStorage.data()) % 64, 0u);
    kiln_tensor_t inputs[2] = {x.view(), y.view()};
    if (c.shared) {
      std::memcpy(z, x.data.data(), 128);
      inputs[0].data = z;
    }
    kiln_tensor_t outputs[2] = {};
    outputs[0].data = z;
    outputs[0].byte_size = 128;
    outputs[1].data = where;
    outputs[1].byte_size = 8;
    for (int run = 0; run < 2; ++run) {
      Status status(kiln_session_run(session.get(), inputs, 2, outputs, 2));
      ASSERT_TRUE(status.ok()) << status.message();
      std::vector<float> zv(32);
      std::memcpy(zv.data(), z, 128);
      for (size_t i = 0; i < 32; ++i)
        ASSERT_EQ(zv[i], (xv[i] + yv[i]) * 3.0f) << i;
      uint64_t address;
      std::memcpy(&address, where, 8);
      if (c.offset == 0)
        EXPECT_EQ(address, reinterpret_cast<uintptr_t>(z)); // x read from z's buffer
      else
        EXPECT_NE(address, reinterpret_cast<uintptr_t>(z)); // the arena's
      if (c.shared) // the run overwrote x's values; the next run reads them
        std::memcpy(z, x.data.data(), 128);
    }
  }
}

/// z = 6 * x, where x's halves are read through views (slices) and z takes
/// bytes x held: x [64, 192) straddles z's [0, 128), so the view of x's
/// first half, [64, 128), lies inside z's range without belonging to z. An
/// output written in place must leave such a view in the arena.
Artifact straddledOutputModel() {
  static const float three = 3.0f;
  ArtifactWriter writer;
  writer.addInput({"x", DType::F32, {4, 8}});
  writer.addOutput({"z", DType::F32, {4, 8}});
  writer.addConstant(&three, 4);
  CodeObjectDesc code;
  code.target = "cpu";
  code.bytes = testKernels();
  code.kernels = {{"scale", "scale_f32", 1, {1}, 0}, {"add", "add_f32", 2, {1}, 0}};
  writer.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 320;
  program.inputs = {{BindingDesc::Arena, 64, 128}};
  program.outputs = {{BindingDesc::Arena, 0, 128}};
  for (uint64_t half : {0, 1})
    program.dispatches.push_back({0,
                                  {{BindingDesc::Arena, 64 + 64 * half, 64},
                                   {BindingDesc::Constant, 0, 4},
                                   {BindingDesc::Arena, 192 + 64 * half, 64}},
                                  0, 0, "Mul"});
  program.dispatches.push_back({1,
                                {{BindingDesc::Arena, 192, 128},
                                 {BindingDesc::Arena, 192, 128},
                                 {BindingDesc::Arena, 0, 128}},
                                0, 0, "Add"});
  writer.addProgram(program);
  return openArtifact(writer);
}

TEST(Session, ViewsOfBuffersAcrossAnOutputStayInTheArena) {
  Artifact artifact = straddledOutputModel();
  Device device = cpuDevice(1);
  Session session = makeSession(device, artifact);
  Tensor x = floatTensor("x", 1, 0.5f);
  std::vector<float> xv = floats(x);
  ASSERT_EQ(xv.size(), 32u);
  // 64-byte aligned and full of NaNs: the storage an in-place output would
  // be written to.
  Bytes zStorage(128, 0xff);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(zStorage.data()) % 64, 0u);
  kiln_tensor_t inputs[1] = {x.view()};
  kiln_tensor_t outputs[1] = {};
  outputs[0].data = zStorage.data();
  outputs[0].byte_size = 128;
  Status status(kiln_session_run(session.get(), inputs, 1, outputs, 1));
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> zv(32);
  std::memcpy(zv.data(), zStorage.data(), 128);
  for (size_t i = 0; i < 32; ++i)
    ASSERT_EQ(zv[i], xv[i] * 6.0f) << i;
}

TEST(Session, EveryWorkgroupRunsExactlyOnce) {
  for (uint32_t threads : {1u, 2u, 4u, 7u}) {
    for (uint64_t workgroups : {1ull, 2ull, 5ull, 64ull, 1000ull}) {
      Artifact artifact = openArtifact(counterModel(workgroups, 50));
      Device device = cpuDevice(threads);
      Session session = makeSession(device, artifact);
      for (int run = 1; run <= 3; ++run) {
        std::vector<Tensor> outputs;
        Status status = session.run(std::vector<Tensor>{}, outputs);
        ASSERT_TRUE(status.ok()) << status.message();
        // The output is the counters: written in place, so each run starts
        // from the zeroed buffer the wrapper allocates.
        std::vector<int32_t> counts(workgroups);
        std::memcpy(counts.data(), outputs[0].data.data(), workgroups * 4);
        for (uint64_t w = 0; w < workgroups; ++w)
          ASSERT_EQ(counts[w], 50)
              << "threads " << threads << " workgroups " << workgroups
              << " workgroup " << w;
      }
    }
  }
}

TEST(Session, ZeroWorkgroupsAndNoDispatches) {
  Artifact artifact = openArtifact(counterModel(0, 3));
  Device device = cpuDevice(2);
  Session session = makeSession(device, artifact);
  std::vector<Tensor> outputs;
  Status status = session.run(std::vector<Tensor>{}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(outputs[0].data.size(), 0u);

  // Output bound to the input's bytes: a run with no dispatch is a copy.
  Artifact identity = openArtifact(addModel([](ProgramDesc &p) {
    p.dispatches.clear();
    p.outputs[0] = {BindingDesc::Arena, 128, 128};
  }));
  Session copy = makeSession(device, identity);
  Tensor y = floatTensor("y", 5, 1);
  status = copy.run({floatTensor("x", 0, 0), y}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(outputs[0].data, y.data);
}

//===----------------------------------------------------------------------===//
// Validation of runs
//===----------------------------------------------------------------------===//

class SessionErrors : public ::testing::Test {
protected:
  void SetUp() override {
    artifact = openArtifact(addModel());
    device = cpuDevice(2);
    session = makeSession(device, artifact);
  }
  std::string runError(const std::vector<Tensor> &inputs) {
    std::vector<Tensor> outputs;
    Status status = session.run(inputs, outputs);
    EXPECT_FALSE(status.ok());
    EXPECT_TRUE(outputs.empty());
    if (status.ok())
      return "";
    EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARGUMENT);
    return status.message();
  }
  Artifact artifact;
  Device device;
  Session session;
  Tensor x = floatTensor("x", 0, 1), y = floatTensor("y", 0, 2);
};

TEST_F(SessionErrors, WrongName) {
  Tensor q = floatTensor("q", 0, 1);
  EXPECT_EQ(runError({x, q}),
            "no model input named 'q' (the model's inputs are: x, y)");
}

TEST_F(SessionErrors, MissingInput) {
  EXPECT_EQ(runError({y}),
            "missing input 'x' (the model's inputs are: x, y)");
  EXPECT_EQ(runError({}),
            "missing input 'x' (the model's inputs are: x, y)");
}

TEST_F(SessionErrors, DuplicateInput) {
  EXPECT_EQ(runError({x, y, x}), "input 'x' is given twice");
}

TEST_F(SessionErrors, WrongDtype) {
  y.dtype = KILN_DTYPE_I32;
  EXPECT_EQ(runError({x, y}),
            "input 'y': dtype int32 does not match the model's float32");
}

TEST_F(SessionErrors, WrongShape) {
  x.shape = {8, 4};
  EXPECT_EQ(runError({x, y}),
            "input 'x': shape [8, 4] does not match the model's [4, 8]");
  x.shape = {4, 8, 1};
  EXPECT_EQ(runError({x, y}),
            "input 'x': shape [4, 8, 1] does not match the model's [4, 8]");
}

TEST_F(SessionErrors, WrongByteSize) {
  x.data.resize(100);
  EXPECT_EQ(runError({x, y}),
            "input 'x': 100 bytes of data, expected 128 (float32 [4, 8])");
}

TEST_F(SessionErrors, OutputBuffers) {
  std::vector<kiln_tensor_t> inputs = {x.view(), y.view()};
  std::vector<float> small(4), enough(32, -1.0f);
  kiln_tensor_t output = kiln_tensor_t();
  output.data = small.data();
  output.byte_size = small.size() * 4;
  Status status(kiln_session_run(session.get(), inputs.data(), 2, &output, 1));
  EXPECT_EQ(std::string(status.message()),
            "output 'z': a buffer of 16 bytes is too small for float32 "
            "[4, 8] (128 bytes)");
  status = Status(kiln_session_run(session.get(), inputs.data(), 2, &output, 0));
  EXPECT_EQ(std::string(status.message()),
            "0 output buffers given, the model has 1 outputs (z)");
  // A failed run writes nothing.
  output.data = enough.data();
  output.byte_size = 128;
  inputs[1].dtype = KILN_DTYPE_F64;
  status = Status(kiln_session_run(session.get(), inputs.data(), 2, &output, 1));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(enough[0], -1.0f);
  EXPECT_EQ(output.name, nullptr);
  // A larger buffer is fine; byte_size reports what was written.
  std::vector<float> large(40);
  output.data = large.data();
  output.byte_size = large.size() * 4;
  inputs[1].dtype = KILN_DTYPE_F32;
  status = Status(kiln_session_run(session.get(), inputs.data(), 2, &output, 1));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(output.byte_size, 128u);
  EXPECT_STREQ(output.name, "z");
  EXPECT_EQ(output.rank, 2u);
  EXPECT_EQ(output.shape[1], 8);
}

TEST_F(SessionErrors, NullArguments) {
  Status status(kiln_session_run(nullptr, nullptr, 0, nullptr, 0));
  EXPECT_EQ(std::string(status.message()), "kiln_session_run: session is NULL");
  status = Status(kiln_session_run(session.get(), nullptr, 2, nullptr, 0));
  EXPECT_EQ(std::string(status.message()), "inputs is NULL");
  kiln_tensor_t unnamed = x.view();
  unnamed.name = nullptr;
  status = Status(kiln_session_run(session.get(), &unnamed, 1, nullptr, 0));
  EXPECT_EQ(std::string(status.message()), "input 0 has no name");
}

//===----------------------------------------------------------------------===//
// Devices and code objects
//===----------------------------------------------------------------------===//

TEST(Device, UnsupportedDevice) {
  // hip:N is a supported spec: HipDeviceTest covers it.
  for (const char *spec : {"gpu", "", "cpu:1", "hipster"}) {
    Device device;
    Status status = Device::create(spec, 0, device);
    EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
    EXPECT_EQ(std::string(status.message()),
              std::string("unsupported device '") + spec +
                  "' (this runtime supports: cpu, hip, hip:N, "
                  "emu:<gfx>)");
    EXPECT_FALSE(device);
  }
  Device device;
  Status status = Device::create("cpu", 5000, device);
  EXPECT_EQ(std::string(status.message()),
            "thread count 5000 is too large (at most 1024)");
  status = Device::create("cpu", 0, device);
  ASSERT_TRUE(status.ok());
  EXPECT_GE(device.threadCount(), 1u);
  EXPECT_STREQ(kiln_device_name(device.get()), "cpu");
}

TEST(Device, MissingSymbol) {
  Artifact artifact = openArtifact(addModel({}, "no_such_kernel"));
  Device device = cpuDevice(1);
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 0 ('cpu'): kernel 0 ('dispatch_0_add'): "
            "symbol 'no_such_kernel' is not defined in the code object");
}

TEST(Device, NoCodeObjectForTarget) {
  Artifact artifact = openArtifact(addModel({}, "add_f32", "gfx942"));
  Device device = cpuDevice(1);
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: no code object for target 'cpu' (the artifact has: "
            "gfx942)");
}

TEST(Device, CodeObjectIsNotASharedObject) {
  ArtifactWriter bad;
  bad.addInput({"x", DType::F32, {4, 8}});
  bad.addInput({"y", DType::F32, {4, 8}});
  bad.addOutput({"z", DType::F32, {4, 8}});
  CodeObjectDesc code;
  code.target = "cpu";
  code.bytes = "this is not an ELF file at all, just some text bytes......"
               "..........";
  code.kernels = {{"k", "add_f32", 2, {1}, 0}};
  bad.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 384;
  program.inputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 256, 128}};
  bad.addProgram(program);
  Artifact artifact = openArtifact(bad);
  Device device = cpuDevice(1);
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 0 ('cpu'): not an ELF file");

  code.format = "hsaco";
  ArtifactWriter hsaco;
  hsaco.addOutput({"z", DType::F32, {1}});
  hsaco.addCodeObject(code);
  ProgramDesc p2;
  p2.arenaSize = 4;
  p2.outputs = {{BindingDesc::Arena, 0, 4}};
  hsaco.addProgram(p2);
  artifact = openArtifact(hsaco);
  status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_THAT(status.message(), HasSubstr("format 'hsaco' is not supported"));
}

TEST(Device, UnknownProgram) {
  Artifact artifact = openArtifact(addModel());
  Device device = cpuDevice(1);
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.program = "batch8";
  Session session;
  Status status = Session::create(device, artifact, &options, session);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: no program named 'batch8' (the artifact has: main)");
  options.program = "main";
  status = Session::create(device, artifact, &options, session);
  EXPECT_TRUE(status.ok()) << status.message();
}

//===----------------------------------------------------------------------===//
// Profiling and concurrency
//===----------------------------------------------------------------------===//

TEST(Session, Profiling) {
  Artifact artifact = openArtifact(counterModel(100, 4));
  Device device = cpuDevice(2);
  Session plain = makeSession(device, artifact, false);
  uint64_t runs = 0;
  std::vector<uint64_t> ns;
  Status status = plain.profile(runs, ns);
  EXPECT_EQ(std::string(status.message()),
            "profiling is not enabled for this session");

  Session profiled = makeSession(device, artifact, true);
  std::vector<Tensor> outputs;
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(profiled.run(std::vector<Tensor>{}, outputs).ok());
  status = profiled.profile(runs, ns);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(runs, 5u);
  ASSERT_EQ(ns.size(), 4u);
  for (uint64_t t : ns)
    EXPECT_GT(t, 0u);
  profiled.resetProfile();
  status = profiled.profile(runs, ns);
  EXPECT_EQ(runs, 0u);
  EXPECT_EQ(ns[0], 0u);
}

TEST(Session, ConcurrentRunsOnOneSessionAndAcrossSessions) {
  Artifact artifact = openArtifact(addModel());
  Device device = cpuDevice(3);
  Session shared = makeSession(device, artifact);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Session own = makeSession(device, artifact);
      for (int i = 0; i < 100; ++i) {
        Tensor x = floatTensor("x", float(t), 1), y = floatTensor("y", float(i), 0);
        std::vector<Tensor> outputs;
        Session &session = i % 2 ? shared : own;
        if (!session.run({x, y}, outputs).ok()) {
          ++failures;
          continue;
        }
        std::vector<float> z = floats(outputs[0]);
        for (int e = 0; e < 32; ++e)
          if (z[e] != float(t) + float(e) + float(i))
            ++failures;
      }
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Session, EachSessionRunsItsOwnCodeObject) {
  // Two artifacts whose code objects export the same symbol with different
  // behavior (x + y and x - y), loaded one after the other while both stay
  // alive, then again after one was unloaded.
  ArtifactWriter subtract;
  subtract.addInput({"x", DType::F32, {4, 8}});
  subtract.addInput({"y", DType::F32, {4, 8}});
  subtract.addOutput({"z", DType::F32, {4, 8}});
  CodeObjectDesc code;
  code.target = "cpu";
  code.bytes = readFile(KILN_TEST_KERNELS_ALT_PATH);
  ASSERT_FALSE(code.bytes.empty());
  code.kernels = {{"sub", "add_f32", 2, {1}, 0}};
  subtract.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 384;
  program.inputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 256, 128}};
  program.dispatches.push_back({0,
                                {{BindingDesc::Arena, 0, 128},
                                 {BindingDesc::Arena, 128, 128},
                                 {BindingDesc::Arena, 256, 128}},
                                0, 0, ""});
  subtract.addProgram(program);
  Artifact addArtifact = openArtifact(addModel());
  Artifact subArtifact = openArtifact(subtract);
  Device device = cpuDevice(2);
  Tensor x = floatTensor("x", 10, 1), y = floatTensor("y", 1, 0);
  auto first = [&](Session &session) {
    std::vector<Tensor> outputs;
    Status status = session.run({x, y}, outputs);
    EXPECT_TRUE(status.ok()) << status.message();
    return outputs.empty() ? -1.0f : floats(outputs[0])[0];
  };
  for (int round = 0; round < 3; ++round) {
    Session add = makeSession(device, addArtifact);
    Session sub = makeSession(device, subArtifact);
    Session add2 = makeSession(device, addArtifact);
    EXPECT_EQ(first(add), 11.0f);
    EXPECT_EQ(first(sub), 9.0f);
    EXPECT_EQ(first(add2), 11.0f);
    add = Session();
    Session sub2 = makeSession(device, subArtifact);
    EXPECT_EQ(first(sub2), 9.0f);
    EXPECT_EQ(first(add2), 11.0f);
  }
}

TEST(Session, OutlivesItsHandles) {
  // The session keeps the artifact (and the mapping) and the device alive.
  std::string path = tempPath("kept.kiln"), error;
  ASSERT_TRUE(addModel().writeFile(path, error)) << error;
  Session session;
  {
    Artifact artifact;
    ASSERT_TRUE(Artifact::open(path, artifact).ok());
    Device device = cpuDevice(2);
    session = makeSession(device, artifact);
  }
  std::vector<Tensor> outputs;
  Status status = session.run({floatTensor("x", 1, 0), floatTensor("y", 2, 0)},
                              outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(floats(outputs[0])[31], 3.0f);
}

TEST(CApi, UsableFromC99) {
  std::string path = tempPath("c.kiln"), error;
  ASSERT_TRUE(addModel().writeFile(path, error)) << error;
  char message[512] = "";
  EXPECT_EQ(kiln_c_api_smoke(path.c_str(), message, sizeof(message)), 0)
      << message;
  EXPECT_NE(kiln_c_api_smoke((path + ".missing").c_str(), message,
                             sizeof(message)),
            0);
  EXPECT_THAT(message, HasSubstr("i/o error: "));
  EXPECT_THAT(message, HasSubstr(".missing: cannot open"));
}
