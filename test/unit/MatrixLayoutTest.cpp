//===- MatrixLayoutTest.cpp - gfx lane layouts vs AMD's tables ------------===//
//
// The GEMM builder reads each lane's operand fragments and writes each
// accumulator element following the lane layout in the target table. Here
// every element of every table AMD's matrix instruction calculator produced
// (test/unit/Inputs/matrix-layouts) is checked against that layout, in both
// directions: each table entry is where the layout puts it, and each
// (lane, element) the layout uses is in the table.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/GPUCodegen.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#ifndef KILN_LAYOUT_DIR
#error "KILN_LAYOUT_DIR must name the directory of the layout tables"
#endif

namespace {
using kiln::gfx::MatrixInput;
using kiln::gfx::MatrixInstruction;

struct Entry {
  char matrix;
  int row, col, vgpr, lane, bitLo, bitHi;
};

std::vector<Entry> readTable(const std::string &path) {
  std::ifstream in(path);
  std::vector<Entry> entries;
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string field;
    std::vector<std::string> f;
    while (std::getline(ss, field, ','))
      f.push_back(field);
    if (f.size() != 8)
      continue;
    entries.push_back({f[0][0], std::stoi(f[2]), std::stoi(f[3]), std::stoi(f[4]),
                       std::stoi(f[5]), std::stoi(f[6]), std::stoi(f[7])});
  }
  return entries;
}

int inputBits(MatrixInput input) {
  switch (input) {
  case MatrixInput::F16:
  case MatrixInput::BF16:
    return 16;
  case MatrixInput::I8:
    return 8;
  case MatrixInput::I4:
    return 4;
  }
  return 0;
}

/// The table of an instruction: `<arch>-<mnemonic>.csv`; bf16 on RDNA4 has
/// none, and shares the 16-bit layout of f16 (the same register packing).
std::string tableFor(const char *arch, const MatrixInstruction &inst) {
  std::string name = inst.mnemonic;
  std::string path = std::string(KILN_LAYOUT_DIR) + "/" + arch + "-" + name + ".csv";
  if (std::ifstream(path).good())
    return path;
  if (inst.input == MatrixInput::BF16) {
    auto pos = name.rfind("bf16");
    name.replace(pos, 4, "f16");
    return std::string(KILN_LAYOUT_DIR) + "/" + arch + "-" + name + ".csv";
  }
  return path;
}

void checkInstruction(const char *arch, const kiln::gfx::Target &target,
                      const MatrixInstruction &inst) {
  SCOPED_TRACE(std::string(target.name) + " " + inst.mnemonic);
  std::string path = tableFor(arch, inst);
  std::vector<Entry> table = readTable(path);
  ASSERT_FALSE(table.empty()) << "no layout table " << path;
  const int bits = inputBits(inst.input);
  const int perReg = 32 / bits;
  std::set<std::tuple<char, int, int>> seen; // matrix, lane, element
  for (const Entry &e : table) {
    ASSERT_LT(e.lane, target.waveSize);
    if (e.matrix == 'A' || e.matrix == 'B') {
      ASSERT_EQ(e.bitHi - e.bitLo + 1, bits);
      int i = e.vgpr * perReg + e.bitLo / bits;
      ASSERT_LT(i, inst.perLane);
      int m = e.matrix == 'A' ? e.row : e.col; // the non-k index
      int k = e.matrix == 'A' ? e.col : e.row;
      EXPECT_EQ(m, e.lane % 16) << e.matrix << " lane " << e.lane << " element " << i;
      EXPECT_EQ(k, inst.kOf(e.lane, i)) << e.matrix << " lane " << e.lane << " element " << i;
      seen.insert({e.matrix, e.lane, i});
    } else {
      ASSERT_EQ(e.matrix, 'D');
      ASSERT_EQ(e.bitHi - e.bitLo + 1, 32);
      ASSERT_LT(e.vgpr, inst.accPerLane);
      EXPECT_EQ(e.row, inst.dRow(e.lane, e.vgpr)) << "D lane " << e.lane << " vgpr " << e.vgpr;
      EXPECT_EQ(e.col, e.lane % 16) << "D lane " << e.lane << " vgpr " << e.vgpr;
      seen.insert({'D', e.lane, e.vgpr});
    }
  }
  // Every operand element and accumulator register of every lane is in the
  // table: the layout places nothing the hardware does not read.
  for (int lane = 0; lane < target.waveSize; ++lane) {
    for (int i = 0; i < inst.perLane; ++i) {
      EXPECT_TRUE(seen.count({'A', lane, i})) << "A lane " << lane << " element " << i;
      EXPECT_TRUE(seen.count({'B', lane, i})) << "B lane " << lane << " element " << i;
    }
    for (int r = 0; r < inst.accPerLane; ++r)
      EXPECT_TRUE(seen.count({'D', lane, r})) << "D lane " << lane << " vgpr " << r;
  }
  // The shapes agree with the element counts.
  EXPECT_EQ(inst.m * inst.k, inst.perLane * target.waveSize /
                                 (inst.kGroupStride == 0 ? 2 : 1));
  EXPECT_EQ(inst.m * inst.n, inst.accPerLane * target.waveSize);
}

TEST(MatrixLayout, TablesCoverEveryInstructionOfTheTabulatedTargets) {
  const std::map<std::string, const char *> arch = {
      {"gfx942", "cdna3"}, {"gfx1100", "rdna3"}, {"gfx1201", "rdna4"}};
  int checked = 0;
  for (const kiln::gfx::Target &target : kiln::gfx::allTargets()) {
    auto it = arch.find(target.name);
    if (it == arch.end())
      continue;
    for (const MatrixInstruction &inst : target.matrix) {
      checkInstruction(it->second, target, inst);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 + 4 + 4);
}

// A layout that differs from the table in one lane group must fail: the
// check can catch a shifted layout.
TEST(MatrixLayout, ShiftedLayoutIsCaught) {
  const kiln::gfx::Target *gfx942 = kiln::gfx::lookupTarget("gfx942");
  ASSERT_NE(gfx942, nullptr);
  MatrixInstruction shifted = *gfx942->instruction(MatrixInput::I8);
  shifted.kGroupStride = 4; // the real stride is 8
  std::vector<Entry> table =
      readTable(std::string(KILN_LAYOUT_DIR) + "/cdna3-v_mfma_i32_16x16x32_i8.csv");
  int mismatches = 0;
  for (const Entry &e : table)
    if (e.matrix == 'A' && e.col != shifted.kOf(e.lane, e.vgpr * 4 + e.bitLo / 8))
      ++mismatches;
  EXPECT_GT(mismatches, 0);
}

// The per-lane counts of the untabulated targets (gfx950, gfx1250) agree
// with their shapes and wave sizes.
TEST(MatrixLayout, UntabulatedTargetsAreConsistent) {
  for (const char *name : {"gfx950", "gfx1250"}) {
    const kiln::gfx::Target *target = kiln::gfx::lookupTarget(name);
    ASSERT_NE(target, nullptr);
    for (const MatrixInstruction &inst : target->matrix) {
      SCOPED_TRACE(inst.mnemonic);
      EXPECT_EQ(inst.m * inst.k, inst.perLane * target->waveSize);
      EXPECT_EQ(inst.m * inst.n, inst.accPerLane * target->waveSize);
      // Every k of the instruction is held by exactly one lane group.
      std::multiset<int64_t> ks;
      for (int64_t g = 0; g < target->waveSize / 16; ++g)
        for (int64_t i = 0; i < inst.perLane; ++i)
          ks.insert(inst.kOf(16 * g, i));
      for (int64_t k = 0; k < inst.k; ++k)
        EXPECT_EQ(ks.count(k), 1u) << "k " << k;
    }
  }
}

TEST(MatrixLayout, ChipNamesResolve) {
  EXPECT_STREQ(kiln::gfx::lookupTarget("MI300X")->name, "gfx942");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi325x")->name, "gfx942");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi355x")->name, "gfx950");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi455x")->name, "gfx1250");
  EXPECT_EQ(kiln::gfx::lookupTarget("gfx90a"), nullptr);
}

} // namespace
