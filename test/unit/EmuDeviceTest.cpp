//===- EmuDeviceTest.cpp - The emu:<gfx> device ---------------------------===//
//
// The scheduler driven directly with small kernels written against the
// emulated-kernel ABI (no compiler): barriers and LDS, the LDS poison, a
// wave-wide matrix instruction with real data, the errors (mismatched
// barriers and matrix sites, deadlocks, unknown instructions), many
// workgroups on a small pool. Then the device through the C API: creation,
// sessions on artifacts with and without an emulated code object (the test
// kernel library TestEmuKernels.cpp), profiling and errors from a run.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"
#include "Fiber.h"
#include "ThreadPool.h"
#include "TestArtifacts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <random>
#include <vector>

using namespace kiln;
using namespace kiln::artifact;
using namespace kiln::test;
using kiln::rt::EmuLaunch;
using ::testing::HasSubstr;

namespace {

/// A status as (code, message), freeing it.
struct Result {
  kiln_status_code_t code;
  std::string message;
};

Result run(kiln::rt::ThreadPool *pool, const char *chipName, KilnEmuKernelFn fn,
           uint32_t workgroupSize, uint64_t workgroupCount,
           void *const *bindings, uint32_t ldsBytes = 0) {
  const kiln::emu::Chip *chip = kiln::emu::findChip(chipName);
  EXPECT_NE(chip, nullptr);
  EmuLaunch launch;
  launch.fn = fn;
  launch.bindings = bindings;
  launch.workgroupCount = workgroupCount;
  launch.workgroupSize = workgroupSize;
  launch.ldsBytes = ldsBytes;
  launch.where = "dispatch 3 ('dispatch_3_test')";
  kiln_status_t status = kiln::rt::emuRun(pool, *chip, launch);
  Result result{kiln_status_code(status), kiln_status_message(status)};
  kiln_status_free(status);
  return result;
}

std::unique_ptr<kiln::rt::ThreadPool> pool(unsigned threads) {
  std::unique_ptr<kiln::rt::ThreadPool> p;
  kiln_status_t status = kiln::rt::ThreadPool::create(threads, p);
  EXPECT_EQ(status, nullptr);
  kiln_status_free(status);
  return p;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Each lane writes its LDS word, waits, and reads its right neighbour's.
/// Bindings: out (uint32, one per lane of every workgroup).
void neighbourKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *out = static_cast<uint32_t *>(bindings[0]);
  auto *lds = static_cast<uint32_t *>(lane->lds);
  uint32_t t = lane->threadId[0], group = lane->blockId[0];
  lds[t] = t * 3 + group;
  lane->hooks->barrier(lane, 1);
  out[group * 64 + t] = lds[(t + 1) % 64];
}

/// The same without the barrier: a race the lane order exposes.
void racyNeighbourKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *out = static_cast<uint32_t *>(bindings[0]);
  auto *lds = static_cast<uint32_t *>(lane->lds);
  uint32_t t = lane->threadId[0], group = lane->blockId[0];
  lds[t] = t * 3 + group;
  out[group * 64 + t] = lds[(t + 1) % 64];
}

/// Reads LDS before anything wrote it. Bindings: out (float per lane).
void poisonKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *out = static_cast<float *>(bindings[0]);
  auto *lds = static_cast<float *>(lane->lds);
  uint32_t t = lane->threadId[0];
  out[lane->blockId[0] * 64 + t] = lds[t];
  lds[t] = 1.0f; // the next workgroup must see the poison again
}

void twoBarriersKernel(KilnEmuLane *lane, void *const *) {
  lane->hooks->barrier(lane, lane->threadId[0] < 32 ? 1 : 2);
}

/// v_mfma_i32_16x16x32_i8 on gfx942, one 16x16 tile per wave, packed by
/// hand with the CDNA3 layout: lane l holds A[l % 16][8 * (l / 16) + i] and
/// B[8 * (l / 16) + i][l % 16] for i < 8, and gets D[4 * (l / 16) + r][l % 16].
/// Bindings: A (int8, tiles of 16x32 per wave), B (int8, 32x16 per wave),
/// C (int32, 16x16 per wave, the accumulator), D (int32, 16x16 per wave).
/// Per workgroup 4 waves; workgroup g uses tiles 4g to 4g + 3.
void mfmaKernel(KilnEmuLane *lane, void *const *bindings) {
  const auto *a = static_cast<const int8_t *>(bindings[0]);
  const auto *b = static_cast<const int8_t *>(bindings[1]);
  const auto *c = static_cast<const int32_t *>(bindings[2]);
  auto *d = static_cast<int32_t *>(bindings[3]);
  uint32_t t = lane->threadId[0];
  uint32_t tile = lane->blockId[0] * 4 + t / 64, l = t % 64;
  a += tile * 16 * 32;
  b += tile * 32 * 16;
  uint32_t aRegs[2] = {0, 0}, bRegs[2] = {0, 0};
  for (uint32_t i = 0; i < 8; ++i) {
    uint32_t k = 8 * (l / 16) + i;
    aRegs[i / 4] |= uint32_t(uint8_t(a[(l % 16) * 32 + k])) << (8 * (i % 4));
    bRegs[i / 4] |= uint32_t(uint8_t(b[k * 16 + l % 16])) << (8 * (i % 4));
  }
  int32_t acc[4], result[4];
  for (uint32_t r = 0; r < 4; ++r)
    acc[r] = c[tile * 256 + (4 * (l / 16) + r) * 16 + l % 16];
  lane->hooks->matrix(lane, 5, "v_mfma_i32_16x16x32_i8", 0, aRegs, bRegs, acc,
                      result);
  for (uint32_t r = 0; r < 4; ++r)
    d[tile * 256 + (4 * (l / 16) + r) * 16 + l % 16] = result[r];
}

void callMatrix(KilnEmuLane *lane, uint32_t site, const char *mnemonic) {
  uint32_t a[2] = {0, 0}, b[2] = {0, 0};
  int32_t c[4] = {0, 0, 0, 0}, d[4];
  lane->hooks->matrix(lane, site, mnemonic, 0, a, b, c, d);
}

void twoMatrixSitesKernel(KilnEmuLane *lane, void *const *) {
  callMatrix(lane, lane->threadId[0] % 64 < 32 ? 1 : 2,
             "v_mfma_i32_16x16x32_i8");
}

void halfWaveFinishesKernel(KilnEmuLane *lane, void *const *) {
  if (lane->threadId[0] < 32)
    callMatrix(lane, 5, "v_mfma_i32_16x16x32_i8");
}

void halfWaveAtBarrierKernel(KilnEmuLane *lane, void *const *) {
  if (lane->threadId[0] < 32)
    callMatrix(lane, 5, "v_mfma_i32_16x16x32_i8");
  else
    lane->hooks->barrier(lane, 2);
}

void unknownInstructionKernel(KilnEmuLane *lane, void *const *) {
  callMatrix(lane, 1, "v_wmma_i32_16x16x16_iu8");
}

/// Fails (mismatched barriers) in workgroup 7 only; counts the others.
void failInSevenKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *count = static_cast<std::atomic<uint32_t> *>(bindings[0]);
  uint32_t t = lane->threadId[0];
  if (lane->blockId[0] == 7)
    lane->hooks->barrier(lane, t == 0 ? 9 : 1);
  else
    lane->hooks->barrier(lane, 1);
  if (t == 0)
    count->fetch_add(1);
}

/// Several barriers with LDS traffic in between, and a private array on the
/// stack. Bindings: out (uint32 per workgroup).
void busyKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *out = static_cast<uint32_t *>(bindings[0]);
  auto *lds = static_cast<uint32_t *>(lane->lds);
  uint32_t t = lane->threadId[0], group = lane->blockId[0];
  volatile uint32_t priv[4096]; // 16 KiB of private memory
  for (uint32_t i = 0; i < 4096; ++i)
    priv[i] = i + t;
  lds[t] = t + group;
  for (uint32_t step = 32; step > 0; step /= 2) {
    lane->hooks->barrier(lane, 10 + step);
    uint32_t value = t < step ? lds[t] + lds[t + step] : 0;
    lane->hooks->barrier(lane, 100 + step);
    if (t < step)
      lds[t] = value;
  }
  lane->hooks->barrier(lane, 1);
  if (t == 0)
    out[group] = lds[0] + priv[4095] - 4095;
}

/// 64 KiB of private memory per lane, live across a barrier. Bindings: out
/// (uint32 per lane of every workgroup), the lanes' checksums.
void bigStackKernel(KilnEmuLane *lane, void *const *bindings) {
  auto *out = static_cast<uint32_t *>(bindings[0]);
  uint32_t t = lane->threadId[0];
  volatile uint32_t priv[16384];
  for (uint32_t i = 0; i < 16384; ++i)
    priv[i] = i * 7 + t;
  lane->hooks->barrier(lane, 1);
  uint32_t sum = 0;
  for (uint32_t i = 0; i < 16384; ++i)
    sum += priv[i];
  out[lane->blockId[0] * 64 + t] = sum;
}

/// Records where the stack pointer was when the lane's entry was called
/// (x86-64 frames: the return address above the saved rbp), modulo 64.
/// Bindings: out (uint64 per lane).
__attribute__((noinline)) void stackAlignmentKernel(KilnEmuLane *lane,
                                                    void *const *bindings) {
  auto *out = static_cast<uint64_t *>(bindings[0]);
  auto callerSp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) + 16;
  out[lane->threadId[0]] = callerSp % 64;
}

/// Writes downwards through 1 MiB of stack, four times the lane's stack.
void stackOverflowKernel(KilnEmuLane *lane, void *const *) {
  volatile unsigned char priv[1 << 20];
  for (size_t i = sizeof(priv); i-- > 0;)
    priv[i] = static_cast<unsigned char>(i + lane->threadId[0]);
}

//===----------------------------------------------------------------------===//
// The scheduler
//===----------------------------------------------------------------------===//

TEST(EmuDevice, BarrierMakesLdsWritesVisible) {
  auto threads = pool(2);
  std::vector<uint32_t> out(64 * 6, 0);
  void *bindings[] = {out.data()};
  Result result =
      run(threads.get(), "gfx942", neighbourKernel, 64, 6, bindings, 256);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  for (uint32_t g = 0; g < 6; ++g)
    for (uint32_t t = 0; t < 64; ++t)
      EXPECT_EQ(out[g * 64 + t], ((t + 1) % 64) * 3 + g) << g << " " << t;
}

// Without the barrier, in-order workgroups read the neighbour's word before
// it is written (the poison), reversed ones after: the race is visible.
TEST(EmuDevice, MissingBarrierShowsUp) {
  std::vector<uint32_t> out(64 * 2, 0);
  void *bindings[] = {out.data()};
  Result result =
      run(nullptr, "gfx942", racyNeighbourKernel, 64, 2, bindings, 256);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  EXPECT_EQ(out[0], 0xffffffffu);       // workgroup 0, lane 0: poison
  EXPECT_EQ(out[63], 0u * 3 + 0);       // lane 63 reads lane 0's word
  EXPECT_EQ(out[64 + 0], 1u * 3 + 1);   // workgroup 1 runs in reverse
  EXPECT_EQ(out[64 + 63], 0xffffffffu); // lane 0 not yet run
}

TEST(EmuDevice, LdsPoisonBeforeWrites) {
  std::vector<float> out(64 * 3, 0.0f);
  void *bindings[] = {out.data()};
  Result result = run(nullptr, "gfx1100", poisonKernel, 64, 3, bindings, 256);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  for (float v : out) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    EXPECT_EQ(bits, 0xffffffffu);
    EXPECT_TRUE(std::isnan(v));
  }
}

TEST(EmuDevice, DifferentBarrierSitesAreAnError) {
  Result result = run(nullptr, "gfx942", twoBarriersKernel, 64, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 0: the "
            "lanes wait at different barriers: lanes 0-31 at site 1, lanes "
            "32-63 at site 2");
}

TEST(EmuDevice, MatrixInstructionThroughTheHooks) {
  auto threads = pool(2);
  const int groups = 2, tiles = 4 * groups;
  std::mt19937 rng(42);
  std::vector<int8_t> a(size_t(tiles) * 16 * 32), b(size_t(tiles) * 32 * 16);
  std::vector<int32_t> c(size_t(tiles) * 256), d(size_t(tiles) * 256, 0);
  for (int8_t &v : a)
    v = int8_t(rng());
  for (int8_t &v : b)
    v = int8_t(rng());
  for (int32_t &v : c)
    v = int32_t(rng() % 20001) - 10000;
  void *bindings[] = {a.data(), b.data(), c.data(), d.data()};
  Result result =
      run(threads.get(), "gfx942", mfmaKernel, 256, groups, bindings);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  for (int tile = 0; tile < tiles; ++tile)
    for (int row = 0; row < 16; ++row)
      for (int col = 0; col < 16; ++col) {
        int32_t expected = c[size_t(tile * 256 + row * 16 + col)];
        for (int k = 0; k < 32; ++k)
          expected += int32_t(a[size_t(tile * 512 + row * 32 + k)]) *
                      int32_t(b[size_t(tile * 512 + k * 16 + col)]);
        ASSERT_EQ(d[size_t(tile * 256 + row * 16 + col)], expected)
            << "tile " << tile << " D[" << row << "][" << col << "]";
      }
}

TEST(EmuDevice, DifferentMatrixSitesAreAnError) {
  Result result = run(nullptr, "gfx942", twoMatrixSitesKernel, 128, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 0, wave 0: "
            "the lanes reach different matrix instructions: lanes 0-31 at "
            "matrix site 1 (v_mfma_i32_16x16x32_i8), lanes 32-63 at matrix "
            "site 2 (v_mfma_i32_16x16x32_i8)");
}

TEST(EmuDevice, DeadlockIsAnError) {
  Result result =
      run(nullptr, "gfx942", halfWaveFinishesKernel, 64, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 0, wave 0: "
            "deadlock: lanes 0-31 wait at matrix site 5 "
            "(v_mfma_i32_16x16x32_i8), lanes 32-63 finished");
  result = run(nullptr, "gfx942", halfWaveAtBarrierKernel, 64, 2, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 0, wave 0: "
            "deadlock: lanes 0-31 wait at matrix site 5 "
            "(v_mfma_i32_16x16x32_i8), lanes 32-63 wait at barrier site 2");
}

TEST(EmuDevice, PartialWaveAtAMatrixInstructionIsAnError) {
  Result result =
      run(nullptr, "gfx942", halfWaveFinishesKernel, 32, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 0, wave 0: "
            "lane 0: v_mfma_i32_16x16x32_i8 needs 64 lanes, the wave has 32 "
            "(workgroup size 32)");
}

TEST(EmuDevice, UnknownInstructionIsAnError) {
  Result result =
      run(nullptr, "gfx942", unknownInstructionKernel, 64, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_UNSUPPORTED);
  EXPECT_THAT(result.message,
              HasSubstr("emu:gfx942: dispatch 3 ('dispatch_3_test'), "
                        "workgroup 0, wave 0: lane 0: "
                        "'v_wmma_i32_16x16x16_iu8' is not a matrix "
                        "instruction of gfx942 (emulated: "));
}

TEST(EmuDevice, AnErrorStopsTheDispatchAndNamesTheWorkgroup) {
  auto threads = pool(2);
  std::atomic<uint32_t> count{0};
  void *bindings[] = {&count};
  Result result =
      run(threads.get(), "gfx942", failInSevenKernel, 64, 2000, bindings);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'), workgroup 7: the "
            "lanes wait at different barriers: lane 0 at site 9, lanes 1-63 "
            "at site 1");
  EXPECT_LT(count.load(), 1999u) << "the remaining workgroups still ran";
}

TEST(EmuDevice, ManyWorkgroupsOnATwoThreadPool) {
  auto threads = pool(2);
  for (const char *chipName : {"gfx942", "gfx1201"}) {
    // Twice: stacks and lane records are reused across dispatches.
    for (int repeat = 0; repeat < 2; ++repeat) {
      std::vector<uint32_t> out(500, 0);
      void *bindings[] = {out.data()};
      Result result =
          run(threads.get(), chipName, busyKernel, 64, 500, bindings, 256);
      ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
      for (uint32_t g = 0; g < 500; ++g)
        ASSERT_EQ(out[g], 64 * 63 / 2 + 64 * g) << chipName << " " << g;
    }
  }
}

TEST(EmuDevice, LanesKeep64KiBOfPrivateMemory) {
  auto threads = pool(2);
  std::vector<uint32_t> out(64 * 4, 0);
  void *bindings[] = {out.data()};
  Result result = run(threads.get(), "gfx942", bigStackKernel, 64, 4, bindings);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  for (uint32_t t = 0; t < 64; ++t)
    EXPECT_EQ(out[t], 7u * (16384u * 16383u / 2) + 16384u * t) << t;
}

// An overflowing lane hits the guard page below its stack: a clean crash,
// not another lane's stack silently overwritten. Under AddressSanitizer,
// which knows the fiber stacks (Fiber.cpp), the same fault is its report
// (stack-overflow or SEGV on the guard page) in the kernel, and exit code 1.
TEST(EmuDeviceDeathTest, StackOverflowHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
#if KILN_FIBER_ASAN
  EXPECT_EXIT(run(nullptr, "gfx942", stackOverflowKernel, 2, 1, nullptr),
              ::testing::ExitedWithCode(1),
              "AddressSanitizer: (stack-overflow|SEGV)(.|\n)*"
              "stackOverflowKernel");
#else
  EXPECT_EXIT(run(nullptr, "gfx942", stackOverflowKernel, 2, 1, nullptr),
              ::testing::KilledBySignal(SIGSEGV), "");
#endif
}

// Kernels are entered with a 64-byte aligned stack: emulated kernels with
// 32-byte AVX spill slots rely on it.
TEST(EmuDevice, KernelsGetA64ByteAlignedStack) {
  std::vector<uint64_t> out(64, 1);
  void *bindings[] = {out.data()};
  Result result =
      run(nullptr, "gfx1100", stackAlignmentKernel, 64, 1, bindings);
  ASSERT_EQ(result.code, KILN_STATUS_OK) << result.message;
  for (uint64_t v : out)
    EXPECT_EQ(v, 0u);
}

TEST(EmuDevice, LaunchLimits) {
  Result result = run(nullptr, "gfx942", neighbourKernel, 2048, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(result.message, "emu:gfx942: dispatch 3 ('dispatch_3_test'): 2048 "
                            "lanes per workgroup (at most 1024)");
  result = run(nullptr, "gfx942", neighbourKernel, 0, 1, nullptr);
  EXPECT_EQ(result.code, KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            "emu:gfx942: dispatch 3 ('dispatch_3_test'): no workgroup size");
}

//===----------------------------------------------------------------------===//
// The device through the C API
//===----------------------------------------------------------------------===//

TEST(EmuDevice, Create) {
  Device device;
  Status status = Device::create("emu:gfx942", 2, device);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_STREQ(kiln_device_name(device.get()), "emu:gfx942");
  EXPECT_STREQ(kiln_device_target(device.get()), "emu:gfx942");
  EXPECT_EQ(device.threadCount(), 2u);
  for (const char *spec : {"emu:gfx9999", "emu:", "emu:cpu"}) {
    Device bad;
    status = Device::create(spec, 0, bad);
    EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
    EXPECT_EQ(std::string(status.message()),
              std::string("unsupported device '") + spec +
                  "' (the emu device emulates: gfx942, gfx950, gfx1100, "
                  "gfx1201, gfx1250)");
    EXPECT_FALSE(bad);
  }
}

Artifact openArtifact(const ArtifactWriter &writer) {
  std::string bytes = writeBytes(writer);
  Artifact artifact;
  Status status =
      Artifact::openMemory(bytes.data(), bytes.size(), "test.kiln", artifact);
  EXPECT_TRUE(status.ok()) << status.message();
  return artifact;
}

CodeObjectDesc emuCodeObject(const std::string &symbol) {
  CodeObjectDesc code;
  code.target = "emu:gfx942";
  code.triple = "x86_64-unknown-linux-gnu";
  code.cpu = "x86-64";
  code.format = "emu-elf-shared-object";
  code.bytes = readFile(KILN_TEST_EMU_KERNELS_PATH);
  code.kernels.push_back({"dispatch_0_add", symbol, 1, {64}, 128});
  return code;
}

TEST(EmuDevice, SessionWithoutAnEmulatedCodeObject) {
  Artifact artifact = openArtifact(addModel());
  Device device;
  ASSERT_TRUE(Device::create("emu:gfx942", 1, device).ok());
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: no code object for target 'emu:gfx942' (the artifact "
            "has: cpu) (compile with --target=gfx942 --emulation)");
}

TEST(EmuDevice, SessionRunsTheEmulatedCodeObject) {
  ArtifactWriter writer = addModel();
  writer.addCodeObject(gfxCodeObject("gfx942", "add_f32_gfx", {64}));
  writer.addCodeObject(emuCodeObject("add_f32_emu"));
  Artifact artifact = openArtifact(writer);
  Device device;
  ASSERT_TRUE(Device::create("emu:gfx942", 2, device).ok());
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.enable_profiling = 1;
  Session session;
  Status status = Session::create(device, artifact, &options, session);
  ASSERT_TRUE(status.ok()) << status.message();
  Tensor x = floatTensor("x", 1.0f, 0.5f), y = floatTensor("y", -3.0f, 2.0f);
  for (int repeat = 0; repeat < 3; ++repeat) {
    std::vector<Tensor> outputs;
    status = session.run({x, y}, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(outputs.size(), 1u);
    std::vector<float> z(32);
    std::memcpy(z.data(), outputs[0].data.data(), 128);
    for (int i = 0; i < 32; ++i)
      EXPECT_EQ(z[size_t(i)],
                (1.0f + 0.5f * float(i)) + (-3.0f + 2.0f * float(i)));
  }
  uint64_t runs = 0;
  std::vector<uint64_t> dispatchNs;
  ASSERT_TRUE(session.profile(runs, dispatchNs).ok());
  EXPECT_EQ(runs, 3u);
  ASSERT_EQ(dispatchNs.size(), 1u);
  EXPECT_GT(dispatchNs[0], 0u);
  EXPECT_STREQ(session.dispatchInfo(0).symbol, "add_f32_emu");
}

TEST(EmuDevice, SessionReportsKernelErrors) {
  ArtifactWriter writer = addModel();
  writer.addCodeObject(emuCodeObject("deadlock_emu"));
  Artifact artifact = openArtifact(writer);
  Device device;
  ASSERT_TRUE(Device::create("emu:gfx942", 1, device).ok());
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<Tensor> outputs;
  status =
      session.run({floatTensor("x", 0, 1), floatTensor("y", 0, 1)}, outputs);
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARTIFACT);
  EXPECT_EQ(std::string(status.message()),
            "emu:gfx942: dispatch 0 ('dispatch_0_add'), workgroup 0, wave 0: "
            "deadlock: lanes 0-31 wait at matrix site 7 "
            "(v_mfma_f32_16x16x16_f16), lanes 32-63 finished");
}

TEST(EmuDevice, SessionChecksTheKernelTable) {
  ArtifactWriter writer = addModel();
  CodeObjectDesc code = emuCodeObject("add_f32_emu");
  code.kernels[0].workgroupSize = {64, 2};
  writer.addCodeObject(code);
  Artifact artifact = openArtifact(writer);
  Device device;
  ASSERT_TRUE(Device::create("emu:gfx942", 1, device).ok());
  Session session;
  Status status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 'emu:gfx942' kernel 0 ('dispatch_0_add'): "
            "workgroup size dimension 1 is 2 (the emu device runs 1-D "
            "workgroups)");

  ArtifactWriter wrongFormat = addModel();
  CodeObjectDesc hsaco = emuCodeObject("add_f32_emu");
  hsaco.format = "hsaco";
  wrongFormat.addCodeObject(hsaco);
  artifact = openArtifact(wrongFormat);
  status = Session::create(device, artifact, nullptr, session);
  EXPECT_EQ(status.code(), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(std::string(status.message()),
            "test.kiln: code object 1 ('emu:gfx942'): format 'hsaco' is not "
            "supported by the emu device (expected 'emu-elf-shared-object')");
}

} // namespace
