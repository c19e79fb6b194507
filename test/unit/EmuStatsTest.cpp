//===- EmuStatsTest.cpp - LDS bank conflicts and coalescing of the emu device //
//
// Kernels written against the emulated-kernel ABI report accesses the way
// compiled kernels do (`if (lane->accessStats) hooks->access(...)`), with
// address patterns whose figures follow by hand from the chip's model
// (EmuStats.h): 32 banks of 4 bytes served 128 bytes per phase, 128-byte
// cache lines. Among them the negative controls: a stride that puts every
// lane of a phase on one bank must come out 32-way conflicting, and a
// strided global access must come out at its fraction of a line.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"
#include "EmuStats.h"
#include "ThreadPool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

using kiln::rt::EmuLaunch;
using kiln::rt::EmuSiteStats;
using kiln::rt::EmuStats;

namespace {

// Sites of the test kernel: {id, kind, bytes per lane, 0, op, location}.
const uint32_t kLds = 0, kStore = KILN_EMU_ACCESS_STORE,
               kGlobal = KILN_EMU_ACCESS_GLOBAL;
const KilnEmuAccessSite kSites[] = {
    {0, kLds, 4, 0, "consecutive dwords", ""},
    {1, kLds, 4, 0, "stride 2 dwords", ""},
    {2, kLds | kStore, 4, 0, "stride 32 dwords", ""},
    {3, kLds, 4, 0, "one dword for all", ""},
    {4, kLds, 16, 0, "consecutive 16 bytes", ""},
    {5, kLds, 8, 0, "8 bytes at stride 64", ""},
    {6, kGlobal, 4, 0, "consecutive floats", ""},
    {7, kGlobal, 4, 0, "floats at stride 8 bytes", ""},
    {8, kGlobal | kStore, 4, 0, "floats at stride 128 bytes", ""},
    {9, kLds, 4, 0, "twice, a barrier between", ""},
    {10, kLds, 4, 0, "lanes 0-15 only", ""},
};

void access(KilnEmuLane *lane, uint32_t site, uint64_t address) {
  if (lane->accessStats)
    lane->hooks->access(lane, &kSites[site], address);
}

/// bindings[0]: a global buffer of at least 8 KiB. LDS: 8 KiB.
void patternsKernel(KilnEmuLane *lane, void *const *bindings) {
  const uint64_t t = lane->threadId[0];
  const uint64_t lds = reinterpret_cast<uintptr_t>(lane->lds);
  const uint64_t global = reinterpret_cast<uintptr_t>(bindings[0]);
  access(lane, 0, lds + 4 * t);
  access(lane, 1, lds + 8 * t);
  access(lane, 2, lds + 128 * (t % 64));
  access(lane, 3, lds + 64);
  access(lane, 4, lds + 16 * t);
  access(lane, 5, lds + 64 * (t % 64));
  access(lane, 6, global + 4 * t);
  access(lane, 7, global + 8 * t);
  access(lane, 8, global + 128 * (t % 64));
  access(lane, 9, lds + 4 * t);
  lane->hooks->barrier(lane, 0);
  access(lane, 9, lds + 4 * t);
  if (t % 64 < 16)
    access(lane, 10, lds + 4 * t);
}

struct PatternRun {
  EmuStats stats;
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer{
      static_cast<unsigned char *>(std::aligned_alloc(128, 8192)), &std::free};

  void launch(const char *chipName, uint32_t lanes, uint64_t workgroups,
              kiln::rt::ThreadPool *pool = nullptr) {
    const kiln::emu::Chip *chip = kiln::emu::findChip(chipName);
    ASSERT_NE(chip, nullptr);
    void *bindings[] = {buffer.get()};
    EmuLaunch launch;
    launch.fn = patternsKernel;
    launch.bindings = bindings;
    launch.workgroupCount = workgroups;
    launch.workgroupSize = lanes;
    launch.ldsBytes = 8192;
    launch.where = "dispatch 0 ('patterns')";
    launch.stats = &stats;
    launch.regions = {{reinterpret_cast<uintptr_t>(buffer.get()), 8192}};
    kiln_status_t status = kiln::rt::emuRun(pool, *chip, launch);
    ASSERT_EQ(status, nullptr) << kiln_status_message(status);
  }
  const EmuSiteStats &site(uint32_t id) {
    EXPECT_LT(id, stats.sites.size());
    EXPECT_NE(stats.sites[id], nullptr);
    return *stats.sites[id];
  }
  double factor(uint32_t id) {
    return double(site(id).cycles) / double(site(id).idealCycles);
  }
  double efficiency(uint32_t id) {
    return double(site(id).requestedBytes) / double(site(id).lines * 128);
  }
};

// One workgroup of one wave64 on gfx942: 4-byte accesses in 2 phases of 32
// lanes, 8-byte ones in 4 of 16, 16-byte ones in 8 of 8.
TEST(EmuStats, LdsBankConflictsOnGfx942) {
  PatternRun run;
  run.launch("gfx942", 64, 1);
  // Consecutive dwords: every lane of a phase on its own bank.
  EXPECT_EQ(run.site(0).executions, 1u);
  EXPECT_EQ(run.site(0).laneAccesses, 64u);
  EXPECT_EQ(run.site(0).requestedBytes, 256u);
  EXPECT_EQ(run.site(0).idealCycles, 2u);
  EXPECT_EQ(run.site(0).cycles, 2u);
  EXPECT_EQ(run.site(0).conflictedExecutions, 0u);
  // Stride 2 dwords: lanes t and t + 16 share a bank, 2 cycles a phase.
  EXPECT_EQ(run.site(1).cycles, 4u);
  EXPECT_DOUBLE_EQ(run.factor(1), 2.0);
  // The negative control, stride 32 dwords: all 32 lanes of a phase on bank
  // 0, 32 cycles a phase.
  EXPECT_EQ(run.site(2).idealCycles, 2u);
  EXPECT_EQ(run.site(2).cycles, 64u);
  EXPECT_EQ(run.site(2).conflictedExecutions, 1u);
  EXPECT_DOUBLE_EQ(run.site(2).maxDegree, 32.0);
  // One dword read by every lane is a broadcast.
  EXPECT_EQ(run.site(3).cycles, 2u);
  // 16 bytes per lane, consecutive: 8 lanes x 4 dwords fill the 32 banks.
  EXPECT_EQ(run.site(4).idealCycles, 8u);
  EXPECT_EQ(run.site(4).cycles, 8u);
  // 8 bytes at a 64-byte stride (a row of 32 f16 per lane, as the GEMM's
  // LDS reads): of 16 lanes, 8 land on banks 0-1 and 8 on 16-17.
  EXPECT_EQ(run.site(5).idealCycles, 4u);
  EXPECT_EQ(run.site(5).cycles, 32u);
  EXPECT_DOUBLE_EQ(run.factor(5), 8.0);
  // A site run twice with a barrier between: two wave-level accesses.
  EXPECT_EQ(run.site(9).executions, 2u);
  EXPECT_EQ(run.site(9).cycles, 4u);
  // Lanes 0-15 only: one phase, 16 lanes.
  EXPECT_EQ(run.site(10).executions, 1u);
  EXPECT_EQ(run.site(10).laneAccesses, 16u);
  EXPECT_EQ(run.site(10).idealCycles, 1u);
  EXPECT_EQ(run.site(10).cycles, 1u);
  // Only LDS figures for LDS sites.
  EXPECT_EQ(run.site(0).lines, 0u);
}

TEST(EmuStats, GlobalCoalescing) {
  PatternRun run;
  run.launch("gfx942", 64, 1);
  // 64 consecutive floats: 256 bytes in 2 lines of 128 (4 segments of 64).
  EXPECT_EQ(run.site(6).lines, 2u);
  EXPECT_EQ(run.site(6).segments64, 4u);
  EXPECT_DOUBLE_EQ(run.efficiency(6), 1.0);
  // Every other float: 4 lines for the same 256 bytes.
  EXPECT_EQ(run.site(7).lines, 4u);
  EXPECT_DOUBLE_EQ(run.efficiency(7), 0.5);
  // One float per line: 64 lines, 4 of every 128 bytes used.
  EXPECT_EQ(run.site(8).lines, 64u);
  EXPECT_DOUBLE_EQ(run.efficiency(8), 4.0 / 128.0);
  EXPECT_EQ(run.site(8).kind, unsigned(KILN_EMU_ACCESS_GLOBAL | KILN_EMU_ACCESS_STORE));
  EXPECT_EQ(run.site(6).cycles, 0u);
}

// Two waves per workgroup, workgroups in both lane orders on two threads:
// every figure doubles per wave and per workgroup, nothing else changes.
TEST(EmuStats, WavesAndWorkgroupsAddUp) {
  std::unique_ptr<kiln::rt::ThreadPool> pool;
  kiln_status_t status = kiln::rt::ThreadPool::create(2, pool);
  ASSERT_EQ(status, nullptr);
  PatternRun run;
  run.launch("gfx942", 128, 4, pool.get());
  EXPECT_EQ(run.site(0).executions, 8u);
  EXPECT_EQ(run.site(0).cycles, 16u);
  EXPECT_EQ(run.site(2).cycles, 8u * 64u);
  EXPECT_EQ(run.site(9).executions, 16u);
  EXPECT_DOUBLE_EQ(run.factor(5), 8.0);
  EXPECT_EQ(run.site(10).laneAccesses, 8u * 16u);
  EXPECT_DOUBLE_EQ(run.efficiency(6), 1.0);
  EXPECT_DOUBLE_EQ(run.efficiency(8), 4.0 / 128.0);
}

// Wave32 (gfx1100): 64 lanes are two waves of one 4-byte phase each.
TEST(EmuStats, Wave32OnGfx1100) {
  PatternRun run;
  run.launch("gfx1100", 64, 1);
  EXPECT_EQ(run.site(0).executions, 2u);
  EXPECT_EQ(run.site(0).idealCycles, 2u);
  EXPECT_EQ(run.site(1).cycles, 4u);
  EXPECT_EQ(run.site(2).cycles, 64u);
  // Lanes 0-15 are all in wave 0.
  EXPECT_EQ(run.site(10).executions, 1u);
}

// Without stats the kernel's flag is off and nothing is recorded.
TEST(EmuStats, OffByDefault) {
  const kiln::emu::Chip *chip = kiln::emu::findChip("gfx942");
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer(
      static_cast<unsigned char *>(std::aligned_alloc(128, 8192)), &std::free);
  void *bindings[] = {buffer.get()};
  EmuLaunch launch;
  launch.fn = [](KilnEmuLane *lane, void *const *) {
    EXPECT_EQ(lane->accessStats, 0u);
  };
  launch.bindings = bindings;
  launch.workgroupCount = 1;
  launch.workgroupSize = 64;
  launch.where = "dispatch 0";
  kiln_status_t status = kiln::rt::emuRun(nullptr, *chip, launch);
  EXPECT_EQ(status, nullptr);
}

TEST(EmuStats, EveryEmulatedChipHasAModel) {
  for (const char *chip : {"gfx942", "gfx950", "gfx1100", "gfx1201", "gfx1250"}) {
    const kiln::rt::EmuMemoryModel *model = kiln::rt::emuMemoryModel(chip);
    ASSERT_NE(model, nullptr) << chip;
    EXPECT_EQ(int(model->waveSize), kiln::emu::findChip(chip)->waveSize) << chip;
    EXPECT_EQ(model->provisional, std::string(chip) == "gfx1250") << chip;
  }
  EXPECT_EQ(kiln::rt::emuMemoryModel("gfx90a"), nullptr);
}

} // namespace
