//===- HipDeviceTest.cpp - The hip device over a fake HIP runtime ---------===//
//
// The hip device takes its HIP functions from a `HipApi` table. Here the
// table holds fakes: "device memory" is host memory, copies are memcpy, and
// a launch records its grid, block and kernel arguments and then runs a
// host version of the kernel on the argument pointers. So the tests check,
// without a GPU: the errors without a runtime or a device, how the gfx name
// is read and the code object chosen, what is loaded and uploaded when, the
// exact launch parameters and kernarg bytes, results, profiling, cleanup and
// launch failures.
//
//===----------------------------------------------------------------------===//

#include "HipDevice.h"
#include "TestArtifacts.h"

#include <cstdlib>
#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <set>

using namespace kiln;
using namespace kiln::artifact;
using namespace kiln::rt::hip;
using namespace kiln::test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

//===----------------------------------------------------------------------===//
// The fake HIP runtime
//===----------------------------------------------------------------------===//

constexpr hipError_t kNotFound = 500;
constexpr hipError_t kLaunchFailure = 719;
constexpr hipError_t kInvalidImage = 200;

/// What the fakes do and what they saw. One at a time (`current`).
struct FakeHip {
  // Behavior.
  int deviceCount = 1;
  hipError_t countError = hipSuccess;
  std::string gcnArchName = "gfx942:sramecc+:xnack-";
  hipError_t loadError = hipSuccess;
  std::set<std::string> missingSymbols;
  std::map<std::string, hipError_t> launchErrors; // by symbol
  float elapsedMs = 0.25f;

  // Record.
  struct Allocation {
    void *pointer;
    size_t size;
  };
  struct Launch {
    std::string symbol;
    unsigned grid[3], block[3], sharedMemBytes;
    hipStream_t stream;
    bool kernelParamsNull;
    std::vector<uint64_t> kernargs;
  };
  struct Upload {
    void *destination;
    std::string bytes;
    bool async;
  };
  std::vector<int> setDevices;
  std::vector<const void *> images;
  int unloads = 0;
  std::vector<std::string> functions; // hipFunction_t i + 1 names entry i
  std::vector<Allocation> allocations, freed;
  std::vector<Upload> uploads;
  int downloads = 0, deviceCopies = 0;
  std::vector<Launch> launches;
  int streamsCreated = 0, streamsDestroyed = 0, synchronizations = 0;
  int eventsCreated = 0, eventsDestroyed = 0, eventRecords = 0;

  static FakeHip *current;
};
FakeHip *FakeHip::current = nullptr;

FakeHip &fake() { return *FakeHip::current; }

hipError_t fakeGetDeviceCount(int *count) {
  *count = fake().countError == hipSuccess ? fake().deviceCount : 0;
  return fake().countError;
}
hipError_t fakeSetDevice(int device) {
  fake().setDevices.push_back(device);
  return device < fake().deviceCount ? hipSuccess : 101;
}
hipError_t writeArchName(void *properties, size_t offset) {
  std::strcpy(static_cast<char *>(properties) + offset,
              fake().gcnArchName.c_str());
  return hipSuccess;
}
hipError_t fakePropertiesR0600(void *properties, int) {
  return writeArchName(properties, 1160);
}
hipError_t fakePropertiesR0000(void *properties, int) {
  return writeArchName(properties, 396);
}
hipError_t fakeModuleLoadData(hipModule_t *module, const void *image) {
  if (fake().loadError != hipSuccess)
    return fake().loadError;
  fake().images.push_back(image);
  *module = reinterpret_cast<hipModule_t>(uintptr_t(0x4000));
  return hipSuccess;
}
hipError_t fakeModuleGetFunction(hipFunction_t *function, hipModule_t,
                                 const char *name) {
  if (fake().missingSymbols.count(name))
    return kNotFound;
  fake().functions.push_back(name);
  *function =
      reinterpret_cast<hipFunction_t>(uintptr_t(fake().functions.size()));
  return hipSuccess;
}
hipError_t fakeModuleUnload(hipModule_t) {
  ++fake().unloads;
  return hipSuccess;
}

/// Host versions of the gfx kernels: the add and scale of the test kernels.
void runKernel(const std::string &symbol, const std::vector<uint64_t> &args) {
  auto floats = [&](size_t i) { return reinterpret_cast<float *>(args[i]); };
  if (symbol == "add_f32_gfx") {
    for (int i = 0; i < 32; ++i)
      floats(2)[i] = floats(0)[i] + floats(1)[i];
  } else if (symbol == "scale_f32_gfx") {
    for (int i = 0; i < 32; ++i)
      floats(2)[i] = floats(0)[i] * floats(1)[0];
  }
}

hipError_t fakeModuleLaunchKernel(hipFunction_t function, unsigned gridX,
                                  unsigned gridY, unsigned gridZ,
                                  unsigned blockX, unsigned blockY,
                                  unsigned blockZ, unsigned sharedMemBytes,
                                  hipStream_t stream, void **kernelParams,
                                  void **extra) {
  FakeHip::Launch launch;
  launch.symbol =
      fake().functions.at(reinterpret_cast<uintptr_t>(function) - 1);
  auto error = fake().launchErrors.find(launch.symbol);
  if (error != fake().launchErrors.end())
    return error->second;
  launch.grid[0] = gridX, launch.grid[1] = gridY, launch.grid[2] = gridZ;
  launch.block[0] = blockX, launch.block[1] = blockY, launch.block[2] = blockZ;
  launch.sharedMemBytes = sharedMemBytes;
  launch.stream = stream;
  launch.kernelParamsNull = kernelParams == nullptr;
  // HIP's own checks of `extra`.
  if (!extra || extra[0] != reinterpret_cast<void *>(1) ||
      extra[2] != reinterpret_cast<void *>(2) ||
      extra[4] != reinterpret_cast<void *>(3))
    return 1; // hipErrorInvalidValue
  size_t size = *static_cast<size_t *>(extra[3]);
  if (size % 8 != 0 || reinterpret_cast<uintptr_t>(extra[1]) % 8 != 0)
    return 1;
  launch.kernargs.resize(size / 8);
  std::memcpy(launch.kernargs.data(), extra[1], size);
  runKernel(launch.symbol, launch.kernargs);
  fake().launches.push_back(launch);
  return hipSuccess;
}
hipError_t fakeMalloc(void **pointer, size_t size) {
  *pointer = std::aligned_alloc(256, (size + 255) / 256 * 256);
  std::memset(*pointer, 0xcd, size); // not zero: the runtime must clear it
  fake().allocations.push_back({*pointer, size});
  return hipSuccess;
}
hipError_t fakeFree(void *pointer) {
  for (auto it = fake().allocations.begin(); it != fake().allocations.end();
       ++it)
    if (it->pointer == pointer) {
      fake().freed.push_back(*it);
      fake().allocations.erase(it);
      std::free(pointer);
      return hipSuccess;
    }
  return 1;
}
hipError_t fakeMemset(void *destination, int value, size_t size) {
  std::memset(destination, value, size);
  return hipSuccess;
}
hipError_t fakeMemcpyHtoD(hipDeviceptr_t destination, const void *source,
                          size_t size) {
  std::memcpy(destination, source, size);
  fake().uploads.push_back(
      {destination, std::string(static_cast<const char *>(source), size),
       false});
  return hipSuccess;
}
hipError_t fakeMemcpyHtoDAsync(hipDeviceptr_t destination, const void *source,
                               size_t size, hipStream_t) {
  std::memcpy(destination, source, size);
  fake().uploads.push_back(
      {destination, std::string(static_cast<const char *>(source), size),
       true});
  return hipSuccess;
}
hipError_t fakeMemcpyDtoHAsync(void *destination, hipDeviceptr_t source,
                               size_t size, hipStream_t) {
  std::memcpy(destination, source, size);
  ++fake().downloads;
  return hipSuccess;
}
hipError_t fakeMemcpyDtoDAsync(hipDeviceptr_t destination, hipDeviceptr_t source,
                               size_t size, hipStream_t) {
  std::memmove(destination, source, size);
  ++fake().deviceCopies;
  return hipSuccess;
}
hipStream_t const kStream = reinterpret_cast<hipStream_t>(uintptr_t(0x5000));
hipError_t fakeStreamCreate(hipStream_t *stream) {
  ++fake().streamsCreated;
  *stream = kStream;
  return hipSuccess;
}
hipError_t fakeStreamDestroy(hipStream_t) {
  ++fake().streamsDestroyed;
  return hipSuccess;
}
hipError_t fakeStreamSynchronize(hipStream_t) {
  ++fake().synchronizations;
  return hipSuccess;
}
hipError_t fakeEventCreate(hipEvent_t *event) {
  *event = reinterpret_cast<hipEvent_t>(uintptr_t(++fake().eventsCreated));
  return hipSuccess;
}
hipError_t fakeEventRecord(hipEvent_t, hipStream_t) {
  ++fake().eventRecords;
  return hipSuccess;
}
hipError_t fakeEventElapsedTime(float *milliseconds, hipEvent_t, hipEvent_t) {
  *milliseconds = fake().elapsedMs;
  return hipSuccess;
}
hipError_t fakeEventDestroy(hipEvent_t) {
  ++fake().eventsDestroyed;
  return hipSuccess;
}
const char *fakeGetErrorString(hipError_t error) {
  switch (error) {
  case 100:
    return "hipErrorNoDevice";
  case kInvalidImage:
    return "hipErrorInvalidImage";
  case kNotFound:
    return "hipErrorNotFound";
  case kLaunchFailure:
    return "hipErrorLaunchFailure";
  }
  return "hipErrorUnknown";
}

/// A table of the fakes above, with both properties symbols (ROCm 6+).
HipApi fakeApi() {
  HipApi api;
  api.library = "libfakehip.so";
  api.hipGetDeviceCount = fakeGetDeviceCount;
  api.hipSetDevice = fakeSetDevice;
  api.hipGetDevicePropertiesR0600 = fakePropertiesR0600;
  api.hipGetDeviceProperties = fakePropertiesR0000;
  api.hipModuleLoadData = fakeModuleLoadData;
  api.hipModuleGetFunction = fakeModuleGetFunction;
  api.hipModuleUnload = fakeModuleUnload;
  api.hipModuleLaunchKernel = fakeModuleLaunchKernel;
  api.hipMalloc = fakeMalloc;
  api.hipFree = fakeFree;
  api.hipMemset = fakeMemset;
  api.hipMemcpyHtoD = fakeMemcpyHtoD;
  api.hipMemcpyHtoDAsync = fakeMemcpyHtoDAsync;
  api.hipMemcpyDtoHAsync = fakeMemcpyDtoHAsync;
  api.hipMemcpyDtoDAsync = fakeMemcpyDtoDAsync;
  api.hipStreamCreate = fakeStreamCreate;
  api.hipStreamDestroy = fakeStreamDestroy;
  api.hipStreamSynchronize = fakeStreamSynchronize;
  api.hipEventCreate = fakeEventCreate;
  api.hipEventRecord = fakeEventRecord;
  api.hipEventElapsedTime = fakeEventElapsedTime;
  api.hipEventDestroy = fakeEventDestroy;
  api.hipGetErrorString = fakeGetErrorString;
  return api;
}

/// Every HipApi member is set by fakeApi (a new entry in HipSymbols.def
/// must get a fake too).
TEST(HipFakes, CoverTheWholeTable) {
  HipApi api = fakeApi();
#define KILN_HIP_REQUIRED(ret, name, params)                                   \
  EXPECT_NE(api.name, nullptr) << #name;
#include "HipSymbols.def"
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class HipDeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    FakeHip::current = &hip;
    api = fakeApi();
  }
  void TearDown() override {
    for (const FakeHip::Allocation &a : hip.allocations)
      std::free(a.pointer);
    FakeHip::current = nullptr;
  }

  /// kiln_device_create("hip:N") over the fake table; the status on error.
  Status createDevice(const std::string &spec, Device &out, const HipApi *table,
                      const std::string &loadError = "") {
    kiln_device_s *handle = nullptr;
    Status status(kiln::rt::createHipDevice(spec, table, loadError, &handle));
    if (status.ok())
      out.adopt(handle);
    return status;
  }
  Device device(const std::string &spec = "hip:0") {
    Device d;
    Status status = createDevice(spec, d, &api);
    EXPECT_TRUE(status.ok()) << status.message();
    return d;
  }
  Status session(const Device &d, const Artifact &artifact, Session &out,
                 bool profiling = false) {
    kiln_session_options_t options;
    kiln_session_options_init(&options);
    options.enable_profiling = profiling;
    return Session::create(d, artifact, &options, out);
  }
  static Artifact open(const ArtifactWriter &writer) {
    std::string bytes = writeBytes(writer);
    Artifact artifact;
    Status status =
        Artifact::openMemory(bytes.data(), bytes.size(), "test.kiln", artifact);
    EXPECT_TRUE(status.ok()) << status.message();
    return artifact;
  }
  /// The fake allocation of `size` bytes (the test fails if there is none).
  const FakeHip::Allocation &allocation(size_t size) {
    for (const FakeHip::Allocation &a : hip.allocations)
      if (a.size == size)
        return a;
    ADD_FAILURE() << "no allocation of " << size << " bytes";
    static FakeHip::Allocation none{nullptr, 0};
    return none;
  }

  FakeHip hip;
  HipApi api;
};

/// t = x + y in the arena, then z = t * scale with scale a constant; a second
/// output `c` is bound to the constants. cpu and gfx942 code objects; the
/// gfx kernels have different workgroup sizes and counts.
ArtifactWriter twoDispatchModel(uint64_t &scaleOffset, uint64_t &cOffset) {
  static const float scale = 3.0f;
  static const float cValues[4] = {1, 2, 3, 4};
  static const char pad[10] = {};
  ArtifactWriter writer;
  writer.addInput({"x", DType::F32, {4, 8}});
  writer.addInput({"y", DType::F32, {4, 8}});
  writer.addOutput({"z", DType::F32, {4, 8}});
  writer.addOutput({"c", DType::F32, {4}});
  writer.addConstant(pad, sizeof(pad));
  scaleOffset = writer.addConstant(&scale, sizeof(scale));
  cOffset = writer.addConstant(cValues, sizeof(cValues));
  CodeObjectDesc cpu;
  cpu.target = "cpu";
  cpu.format = "elf-shared-object";
  cpu.bytes = testKernels();
  cpu.kernels = {{"add", "add_f32", 2, {1}, 0},
                 {"scale", "scale_f32", 2, {1}, 0}};
  writer.addCodeObject(cpu);
  CodeObjectDesc gfx = gfxCodeObject("gfx942");
  gfx.kernels = {{"add", "add_f32_gfx", 2, {64}, 0},
                 {"scale", "scale_f32_gfx", 3, {32, 2}, 1024}};
  writer.addCodeObject(gfx);
  ProgramDesc program;
  program.arenaSize = 512;
  program.inputs = {{BindingDesc::Arena, 0, 128},
                    {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 384, 128},
                     {BindingDesc::Constant, cOffset, 16}};
  program.dispatches.push_back({0,
                                {{BindingDesc::Arena, 0, 128},
                                 {BindingDesc::Arena, 128, 128},
                                 {BindingDesc::Arena, 256, 128}},
                                64,
                                384,
                                "Add_0"});
  program.dispatches.push_back({1,
                                {{BindingDesc::Arena, 256, 128},
                                 {BindingDesc::Constant, scaleOffset, 4},
                                 {BindingDesc::Arena, 384, 128}},
                                32,
                                260,
                                "Mul_1"});
  writer.addProgram(program);
  return writer;
}

std::vector<float> floats(const Tensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

uint64_t address(const void *base, uint64_t offset) {
  return uint64_t(reinterpret_cast<uintptr_t>(base)) + offset;
}

} // namespace

//===----------------------------------------------------------------------===//
// Opening a device
//===----------------------------------------------------------------------===//

TEST_F(HipDeviceTest, NoLibraryIsOneClearLine) {
  Device d;
  Status status = createDevice(
      "hip:0", d, nullptr,
      "the HIP runtime is not installed (libamdhip64.so, libamdhip64.so.7, "
      "libamdhip64.so.6 and libamdhip64.so.5 were not found)");
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "no AMD GPU found (hip:0): the HIP runtime is not installed "
            "(libamdhip64.so, libamdhip64.so.7, libamdhip64.so.6 and "
            "libamdhip64.so.5 were not found); use --device=cpu");
  EXPECT_FALSE(d);
}

TEST_F(HipDeviceTest, NoDeviceIsOneClearLine) {
  // What ROCm does on a machine without an AMD GPU.
  hip.countError = hipErrorNoDevice;
  Device d;
  Status status = createDevice("hip", d, &api);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "no AMD GPU found (hip:0): hipGetDeviceCount failed: "
            "hipErrorNoDevice (error 100); use --device=cpu");

  hip.countError = hipSuccess;
  hip.deviceCount = 0;
  status = createDevice("hip:0", d, &api);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "no AMD GPU found (hip:0): the HIP runtime (libfakehip.so) sees "
            "no devices; use --device=cpu");
  EXPECT_FALSE(d);
}

TEST_F(HipDeviceTest, IndexOutOfRange) {
  hip.deviceCount = 2;
  Device d;
  Status status = createDevice("hip:2", d, &api);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "no AMD GPU found (hip:2): the HIP runtime sees 2 devices (hip:0 "
            "to hip:1)");
  hip.deviceCount = 1;
  status = createDevice("hip:1", d, &api);
  EXPECT_EQ(std::string(status.message()),
            "no AMD GPU found (hip:1): the HIP runtime sees 1 device (hip:0)");
  EXPECT_TRUE(hip.setDevices.empty());
}

TEST_F(HipDeviceTest, MalformedSpecs) {
  for (const char *spec : {"hip:", "hip:x", "hip:-1", "hip:1a", "hip:0x1",
                           "hip:999999", "hip: 1"}) {
    Device d;
    Status status = createDevice(spec, d, &api);
    EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARGUMENT) << spec;
    EXPECT_EQ(std::string(status.message()),
              std::string("invalid device '") + spec +
                  "' (expected hip or hip:N, N a device index)");
  }
  EXPECT_TRUE(kiln::rt::isHipSpec("hip"));
  EXPECT_TRUE(kiln::rt::isHipSpec("hip:3"));
  EXPECT_FALSE(kiln::rt::isHipSpec("hipster"));
  EXPECT_FALSE(kiln::rt::isHipSpec("cpu"));
}

TEST_F(HipDeviceTest, TargetIsTheGfxNameWithoutFeatures) {
  hip.deviceCount = 3;
  Device d = device("hip:2");
  EXPECT_STREQ(kiln_device_name(d.get()), "hip:2");
  EXPECT_STREQ(kiln_device_target(d.get()), "gfx942");
  EXPECT_EQ(d.threadCount(), 0u);
  EXPECT_EQ(hip.setDevices, std::vector<int>{2});
  Device first = device("hip");
  EXPECT_STREQ(kiln_device_name(first.get()), "hip:0");

  hip.gcnArchName = "gfx90a";
  EXPECT_STREQ(kiln_device_target(device().get()), "gfx90a");
  hip.gcnArchName = "gfx1100:xnack-";
  EXPECT_STREQ(kiln_device_target(device().get()), "gfx1100");
}

TEST_F(HipDeviceTest, GfxNameFromEitherPropertiesLayout) {
  // ROCm 5: only the unversioned symbol, gcnArchName at byte 396.
  api.hipGetDevicePropertiesR0600 = nullptr;
  EXPECT_STREQ(kiln_device_target(device().get()), "gfx942");

  // An R0600 symbol that leaves no gfx name where it should falls back to the
  // unversioned one.
  api = fakeApi();
  api.hipGetDevicePropertiesR0600 = [](void *properties, int) -> hipError_t {
    std::strcpy(static_cast<char *>(properties) + 396, "gfx942");
    return hipSuccess;
  };
  EXPECT_STREQ(kiln_device_target(device().get()), "gfx942");

  // Nothing plausible anywhere: an error, not a guess.
  api.hipGetDeviceProperties = [](void *properties, int) -> hipError_t {
    std::strcpy(static_cast<char *>(properties) + 1160, "gfx942");
    return hipSuccess;
  };
  Device d;
  Status status = createDevice("hip:0", d, &api);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "hip:0: cannot read the device's gfx name "
            "(hipGetDevicePropertiesR0600 gave no gfx name at byte 1160; "
            "hipGetDeviceProperties gave no gfx name at byte 396)");

  api.hipGetDevicePropertiesR0600 = nullptr;
  api.hipGetDeviceProperties = nullptr;
  status = createDevice("hip:0", d, &api);
  EXPECT_EQ(std::string(status.message()),
            "hip:0: cannot read the device's gfx name (the HIP runtime has "
            "neither hipGetDevicePropertiesR0600 nor hipGetDeviceProperties)");
}

TEST(HipDevice, RealRuntimeEitherWorksOrSaysWhy) {
  // Whatever this machine has: no HIP runtime or no GPU gives the one-line
  // error; a GPU gives its gfx name.
  Device d;
  Status status = Device::create("hip:0", 0, d);
  if (status.ok()) {
    EXPECT_THAT(kiln_device_target(d.get()), StartsWith("gfx"));
    EXPECT_EQ(std::string(kiln_device_target(d.get())).find(':'),
              std::string::npos);
  } else {
    EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
    EXPECT_THAT(status.message(), StartsWith("no AMD GPU found (hip:0): "));
    EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
  }
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

TEST_F(HipDeviceTest, SessionLoadsTheMatchingCodeObject) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  Device d = device();
  hip.setDevices.clear();
  Session s;
  Status status = session(d, artifact, s);
  ASSERT_TRUE(status.ok()) << status.message();

  // The gfx942 code object's bytes (not the cpu one's), both kernels.
  ASSERT_EQ(hip.images.size(), 1u);
  std::string expected = dummyHsaco("gfx942 code object");
  EXPECT_EQ(std::memcmp(hip.images[0], expected.data(), expected.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(hip.images[0]) % 64, 0u);
  EXPECT_EQ(hip.functions,
            (std::vector<std::string>{"add_f32_gfx", "scale_f32_gfx"}));
  EXPECT_EQ(hip.setDevices, std::vector<int>{0});
  EXPECT_EQ(hip.streamsCreated, 1);
  EXPECT_EQ(hip.eventsCreated, 0);

  // The arena (rounded to 64 bytes) and the constants, uploaded once,
  // synchronously, whole.
  ASSERT_EQ(hip.allocations.size(), 2u);
  const FakeHip::Allocation &arena = allocation(512);
  const FakeHip::Allocation &constants =
      allocation(size_t(kiln_artifact_constants_size(artifact.get())));
  ASSERT_EQ(hip.uploads.size(), 1u);
  EXPECT_EQ(hip.uploads[0].destination, constants.pointer);
  EXPECT_FALSE(hip.uploads[0].async);
  float scale = 0;
  std::memcpy(&scale, hip.uploads[0].bytes.data() + scaleOffset, 4);
  EXPECT_EQ(scale, 3.0f);
  EXPECT_EQ(std::string(static_cast<const char *>(arena.pointer), 512),
            std::string(512, '\0'));

  kiln_dispatch_info_t info = s.dispatchInfo(1);
  EXPECT_STREQ(info.symbol, "scale_f32_gfx");
  EXPECT_EQ(info.workgroup_count, 3u);
}

TEST_F(HipDeviceTest, RunsLaunchWithTheGfxKernelAbi) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  Device d = device();
  Session s;
  Status status = session(d, artifact, s);
  ASSERT_TRUE(status.ok()) << status.message();
  const void *arena = allocation(512).pointer;
  const void *constants =
      allocation(size_t(kiln_artifact_constants_size(artifact.get()))).pointer;

  for (int run = 0; run < 3; ++run) {
    hip.launches.clear();
    Tensor x = floatTensor("x", 1 + float(run), 0.5f),
           y = floatTensor("y", -3, 2);
    std::vector<Tensor> outputs;
    status = s.run({x, y}, outputs);
    ASSERT_TRUE(status.ok()) << status.message();

    ASSERT_EQ(hip.launches.size(), 2u);
    const FakeHip::Launch &add = hip.launches[0], &mul = hip.launches[1];
    EXPECT_EQ(add.symbol, "add_f32_gfx");
    EXPECT_EQ(std::vector<unsigned>(add.grid, add.grid + 3),
              (std::vector<unsigned>{2, 1, 1}));
    EXPECT_EQ(std::vector<unsigned>(add.block, add.block + 3),
              (std::vector<unsigned>{64, 1, 1}));
    EXPECT_EQ(add.kernargs,
              (std::vector<uint64_t>{address(arena, 0), address(arena, 128),
                                     address(arena, 256)}));
    EXPECT_EQ(mul.symbol, "scale_f32_gfx");
    EXPECT_EQ(std::vector<unsigned>(mul.grid, mul.grid + 3),
              (std::vector<unsigned>{3, 1, 1}));
    EXPECT_EQ(std::vector<unsigned>(mul.block, mul.block + 3),
              (std::vector<unsigned>{32, 2, 1}));
    EXPECT_EQ(mul.kernargs,
              (std::vector<uint64_t>{address(arena, 256),
                                     address(constants, scaleOffset),
                                     address(arena, 384)}));
    for (const FakeHip::Launch *l : {&add, &mul}) {
      EXPECT_EQ(l->sharedMemBytes, 0u); // lds_bytes is static LDS
      EXPECT_EQ(l->stream, kStream);
      EXPECT_TRUE(l->kernelParamsNull);
    }

    ASSERT_EQ(outputs.size(), 2u);
    std::vector<float> z = floats(outputs[0]), xv = floats(x), yv = floats(y);
    for (size_t i = 0; i < 32; ++i)
      EXPECT_EQ(z[i], (xv[i] + yv[i]) * 3.0f) << i;
    EXPECT_EQ(floats(outputs[1]), (std::vector<float>{1, 2, 3, 4}));
  }
  // The constants went up once; each run copied x and y in (asynchronously,
  // on the stream) and only z out (c comes from the host constants).
  ASSERT_EQ(hip.uploads.size(), 1u + 3 * 2);
  for (size_t i = 1; i < hip.uploads.size(); ++i) {
    EXPECT_TRUE(hip.uploads[i].async);
    EXPECT_EQ(hip.uploads[i].destination,
              static_cast<const char *>(arena) + (i % 2 ? 0 : 128));
  }
  EXPECT_EQ(hip.downloads, 3);
  EXPECT_EQ(hip.synchronizations, 3);
}

TEST_F(HipDeviceTest, OutputExtentIsReadBackFromTheDevice) {
  // z's size along axis 1 is the int64 the program leaves in the arena (here
  // the input n, so the test sets it): the session copies it back from the
  // device with the outputs and packs z to [4, n].
  ArtifactWriter writer = addModel(
      [](ProgramDesc &p) {
        p.arenaSize = 448;
        p.inputs.push_back({BindingDesc::Arena, 384, 8});
        p.extents.push_back({0, {BindingDesc::Arena, 384, 8}});
      },
      "add_f32", "cpu", /*extentAxis=*/1);
  writer.addInput({"n", DType::I64, {1}});
  writer.addCodeObject(gfxCodeObject());
  Artifact artifact = open(writer);
  Device d = device();
  Session s;
  Status status = session(d, artifact, s);
  ASSERT_TRUE(status.ok()) << status.message();
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2), n;
  n.name = "n";
  n.dtype = KILN_DTYPE_I64;
  n.shape = {1};
  n.data.resize(8);
  int64_t three = 3;
  std::memcpy(n.data.data(), &three, 8);
  std::vector<Tensor> outputs;
  status = s.run({x, y, n}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{4, 3}));
  ASSERT_EQ(outputs[0].data.size(), 4u * 3 * 4);
  std::vector<float> z(12), xv(32), yv(32);
  std::memcpy(z.data(), outputs[0].data.data(), 48);
  std::memcpy(xv.data(), x.data.data(), 128);
  std::memcpy(yv.data(), y.data.data(), 128);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(z[r * 3 + c], xv[r * 8 + c] + yv[r * 8 + c]) << r << ", " << c;
  EXPECT_EQ(hip.downloads, 2); // z and its extent
}

TEST_F(HipDeviceTest, CommandsRunOnTheStream) {
  // x += y three times (z = x + y, then x = z on the device), the trip count
  // a constant the loop reads back before each iteration and the counter
  // stored to the device each time.
  ArtifactWriter writer = addModel([](ProgramDesc &p) {
    p.arenaSize = 448;
    p.counters = 1;
    p.commands = {command(CommandOp::CounterReset),
                  command(CommandOp::JumpIfCounterAtLeast, 7, {BindingDesc::Constant, 0, 8}),
                  command(CommandOp::CounterStore, 0, {}, {BindingDesc::Arena, 384, 8}),
                  command(CommandOp::Dispatch, 0),
                  command(CommandOp::Copy, 0, {BindingDesc::Arena, 256, 128}, {BindingDesc::Arena, 0, 128}),
                  command(CommandOp::CounterIncrement), command(CommandOp::Jump, 1)};
  });
  static const int64_t three = 3;
  writer.addConstant(&three, 8);
  writer.addCodeObject(gfxCodeObject());
  Artifact artifact = open(writer);
  Device d = device();
  Session s;
  Status status = session(d, artifact, s);
  ASSERT_TRUE(status.ok()) << status.message();
  Tensor x = floatTensor("x", 1, 0.5f), y = floatTensor("y", -3, 2);
  std::vector<Tensor> outputs;
  status = s.run({x, y}, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> z(32), xv(32), yv(32);
  std::memcpy(z.data(), outputs[0].data.data(), 128);
  std::memcpy(xv.data(), x.data.data(), 128);
  std::memcpy(yv.data(), y.data.data(), 128);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(z[i], xv[i] + 3 * yv[i]) << i;
  EXPECT_EQ(hip.launches.size(), 3u);
  EXPECT_EQ(hip.deviceCopies, 3);
  EXPECT_EQ(hip.downloads, 5);       // four trip-count checks and z
  EXPECT_EQ(hip.synchronizations, 5); // each check waits, then the run
  // The counter went to the device as 0, 1, 2 (after x and y).
  ASSERT_GE(hip.uploads.size(), 5u);
  for (int64_t i = 0; i < 3; ++i) {
    const auto &upload = hip.uploads[hip.uploads.size() - 3 + size_t(i)];
    ASSERT_EQ(upload.bytes.size(), 8u);
    int64_t stored;
    std::memcpy(&stored, upload.bytes.data(), 8);
    EXPECT_EQ(stored, i);
  }
}

TEST_F(HipDeviceTest, ReleaseFreesEverything) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  {
    Device d = device();
    Session s;
    Status status = session(d, artifact, s, /*profiling=*/true);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(hip.eventsCreated, 3);
  }
  EXPECT_TRUE(hip.allocations.empty());
  EXPECT_EQ(hip.freed.size(), 2u);
  EXPECT_EQ(hip.unloads, 1);
  EXPECT_EQ(hip.streamsDestroyed, 1);
  EXPECT_EQ(hip.eventsDestroyed, 3);
}

TEST_F(HipDeviceTest, ProfilingTimesEachDispatchWithEvents) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  Device d = device();
  Session s;
  Status status = session(d, artifact, s, /*profiling=*/true);
  ASSERT_TRUE(status.ok()) << status.message();
  Tensor x = floatTensor("x", 1, 1), y = floatTensor("y", 2, 1);
  std::vector<Tensor> outputs;
  for (int run = 0; run < 2; ++run)
    ASSERT_TRUE(s.run({x, y}, outputs).ok());
  EXPECT_EQ(hip.eventRecords,
            2 * 3); // one before the first dispatch, one after each
  uint64_t runs = 0;
  std::vector<uint64_t> ns;
  ASSERT_TRUE(s.profile(runs, ns).ok());
  EXPECT_EQ(runs, 2u);
  EXPECT_EQ(ns, (std::vector<uint64_t>{500000, 500000}));
}

TEST_F(HipDeviceTest, MissingTargetListsTheArtifactsTargets) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  hip.gcnArchName = "gfx90a:sramecc+:xnack-";
  Device d = device();
  Session s;
  Status status = session(d, artifact, s);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: no code object for target 'gfx90a' (the artifact has: "
            "cpu, gfx942)");
  EXPECT_TRUE(hip.images.empty());
  EXPECT_TRUE(hip.allocations.empty());
}

TEST_F(HipDeviceTest, LaunchFailureNamesTheKernel) {
  uint64_t scaleOffset = 0, cOffset = 0;
  Artifact artifact = open(twoDispatchModel(scaleOffset, cOffset));
  Device d = device();
  Session s;
  ASSERT_TRUE(session(d, artifact, s).ok());
  hip.launchErrors["scale_f32_gfx"] = kLaunchFailure;
  Tensor x = floatTensor("x", 1, 1), y = floatTensor("y", 2, 1);
  std::vector<Tensor> outputs;
  Status status = s.run({x, y}, outputs);
  EXPECT_EQ(status.code(), KILN_STATUS_INTERNAL);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: dispatch 1 (kernel 'scale'): hipModuleLaunchKernel "
            "failed: hipErrorLaunchFailure (error 719)");
  EXPECT_TRUE(outputs.empty());
  // The queued input copies were waited for before returning.
  EXPECT_EQ(hip.synchronizations, 1);
}

TEST_F(HipDeviceTest, LoadFailures) {
  Device d = device();
  auto load = [&](const ArtifactWriter &writer) {
    Artifact artifact = open(writer);
    Session s;
    return session(d, artifact, s);
  };
  ArtifactWriter writer = addModel();
  writer.addCodeObject(gfxCodeObject());

  hip.missingSymbols = {"add_f32_gfx"};
  Status status = load(writer);
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 1 ('gfx942'): kernel 0 ('dispatch_0_add'): "
            "symbol 'add_f32_gfx': hipModuleGetFunction failed: "
            "hipErrorNotFound (error 500)");
  EXPECT_EQ(hip.unloads, 1);

  hip.missingSymbols.clear();
  hip.loadError = kInvalidImage;
  status = load(writer);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 1 ('gfx942') on gfx942:sramecc+:xnack-: "
            "hipModuleLoadData failed: hipErrorInvalidImage (error 200)");
  EXPECT_EQ(hip.unloads, 1);
  EXPECT_TRUE(hip.allocations.empty());
}

TEST_F(HipDeviceTest, BadCodeObjectsAreRejectedBeforeAnyHipCall) {
  Device d = device();
  auto error = [&](const CodeObjectDesc &gfx, kiln_status_code_t code) {
    ArtifactWriter writer = addModel();
    writer.addCodeObject(gfx);
    Artifact artifact = open(writer);
    Session s;
    Status status = session(d, artifact, s);
    EXPECT_EQ(status.code(), code) << status.message();
    return std::string(status.message());
  };
  const std::string prefix =
      "test.kiln: code object 1 ('gfx942'): kernel 0 ('dispatch_0_add'): ";
  EXPECT_EQ(
      error(gfxCodeObject("gfx942", "k", {2048}), KILN_STATUS_INVALID_ARTIFACT),
      prefix + "workgroup size [2048] is not 1 to 1024 threads");
  EXPECT_EQ(error(gfxCodeObject("gfx942", "k", {64, 0}),
                  KILN_STATUS_INVALID_ARTIFACT),
            prefix + "workgroup size [64, 0] is not 1 to 1024 threads");
  EXPECT_EQ(error(gfxCodeObject("gfx942", "k", {32, 32, 2}),
                  KILN_STATUS_INVALID_ARTIFACT),
            prefix + "workgroup size [32, 32, 2] is not 1 to 1024 threads");
  EXPECT_EQ(error(gfxCodeObject("gfx942", "k",
                                {4294967295u, 4294967295u, 4294967295u}),
                  KILN_STATUS_INVALID_ARTIFACT),
            prefix + "workgroup size [4294967295, 4294967295, 4294967295] is "
                     "not 1 to 1024 threads");
  EXPECT_EQ(error(gfxCodeObject("gfx942", "k", {1, 1, 1, 1}),
                  KILN_STATUS_INVALID_ARTIFACT),
            prefix + "workgroup size has 4 dimensions (at most 3)");

  CodeObjectDesc huge = gfxCodeObject("gfx942", "k", {256});
  huge.kernels[0].workgroupCount = uint64_t(1) << 24; // 2^32 threads
  EXPECT_EQ(error(huge, KILN_STATUS_INVALID_ARTIFACT),
            prefix + "16777216 workgroups of 256 threads along x exceed HIP's "
                     "grid limit (2^32 - 1 threads)");

  CodeObjectDesc cpuFormat = gfxCodeObject();
  cpuFormat.format = "elf-shared-object";
  EXPECT_EQ(error(cpuFormat, KILN_STATUS_UNSUPPORTED),
            "test.kiln: code object 1 ('gfx942'): format 'elf-shared-object' "
            "is not supported by the hip device (expected 'hsaco')");
  CodeObjectDesc x86 = gfxCodeObject();
  x86.bytes = testKernels();
  EXPECT_EQ(error(x86, KILN_STATUS_INVALID_ARTIFACT),
            "test.kiln: code object 1 ('gfx942'): not an AMDGPU ELF file");
  CodeObjectDesc text = gfxCodeObject();
  text.bytes = std::string(100, 'x');
  EXPECT_EQ(error(text, KILN_STATUS_INVALID_ARTIFACT),
            "test.kiln: code object 1 ('gfx942'): not an ELF file");

  EXPECT_TRUE(hip.images.empty());
  EXPECT_TRUE(hip.allocations.empty());
  EXPECT_EQ(hip.streamsCreated, 0);
}

TEST_F(HipDeviceTest, SmallestWorkgroupsAndEmptyDispatches) {
  // workgroup_size [] means [1, 1, 1]; a dispatch of 0 workgroups launches
  // nothing (as on the cpu device).
  ArtifactWriter writer = addModel([](ProgramDesc &program) {
    program.dispatches.push_back(program.dispatches[0]);
  });
  CodeObjectDesc gfx = gfxCodeObject("gfx942", "add_f32_gfx", {});
  writer.addCodeObject(gfx);
  Artifact artifact = open(writer);
  Device d = device();
  Session s;
  ASSERT_TRUE(session(d, artifact, s).ok());
  Tensor x = floatTensor("x", 1, 1), y = floatTensor("y", 2, 1);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(s.run({x, y}, outputs).ok());
  ASSERT_EQ(hip.launches.size(), 2u);
  EXPECT_EQ(
      std::vector<unsigned>(hip.launches[0].block, hip.launches[0].block + 3),
      (std::vector<unsigned>{1, 1, 1}));

  ArtifactWriter empty = addModel();
  CodeObjectDesc none = gfxCodeObject();
  none.kernels[0].workgroupCount = 0;
  empty.addCodeObject(none);
  Artifact emptyArtifact = open(empty);
  Session e;
  ASSERT_TRUE(session(d, emptyArtifact, e).ok());
  hip.launches.clear();
  ASSERT_TRUE(e.run({x, y}, outputs).ok());
  EXPECT_TRUE(hip.launches.empty());
}
