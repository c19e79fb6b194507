//===- GfxTargetsTest.cpp - The gfx tables against each other and AMD's ---===//
//
// Three descriptions of the matrix-core instructions must agree: the
// compiler's target table (compiler/targets, which the GEMM builder follows),
// the emulator's own table (runtime/src/EmuMatrix.h, kept independent on
// purpose as the test oracle) and AMD's matrix instruction calculator tables
// (test/unit/Inputs/matrix-layouts). Checked here: the same chips with the
// same wave sizes, the same instructions per chip with the same shapes and
// per-lane counts, and the same lane layout element by element: every
// (matrix, lane, element) -> (row, col) of one is in the other. Every
// reference table is either checked or listed as a type Kiln does not use.
// Negative controls: an altered entry of each table must be reported.
//
//===----------------------------------------------------------------------===//

#include "targets/GfxTargets.h"
#include "EmuMatrix.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#ifndef KILN_LAYOUT_DIR
#error "KILN_LAYOUT_DIR must name the directory of the layout tables"
#endif

namespace {
using kiln::gfx::MatrixInput;
using CompilerInstruction = kiln::gfx::MatrixInstruction;
using EmuInstruction = kiln::emu::MatrixInstruction;

/// One placed element: matrix (A, B, D), lane, element index in the lane's
/// operand (A/B: in packing order; D: the register), row, column.
using Place = std::tuple<char, int, int, int, int>;
using Layout = std::set<Place>;

Layout layoutOf(const CompilerInstruction &inst, int waveSize) {
  Layout out;
  for (int lane = 0; lane < waveSize; ++lane) {
    int col = int(lane % inst.m);
    for (int i = 0; i < inst.perLane; ++i) {
      int k = int(inst.kOf(lane, i));
      out.insert({'A', lane, i, col, k});
      out.insert({'B', lane, i, k, col});
    }
    for (int r = 0; r < inst.accPerLane; ++r)
      out.insert({'D', lane, r, int(inst.dRow(lane, r)), col});
  }
  return out;
}

Layout layoutOf(const EmuInstruction &inst) {
  Layout out;
  for (int lane = 0; lane < inst.waveSize; ++lane) {
    for (int i = 0; i < inst.abPerLane; ++i) {
      kiln::emu::MatrixPlace a = inst.aPlace(lane, i), b = inst.bPlace(lane, i);
      out.insert({'A', lane, i, a.row, a.col});
      out.insert({'B', lane, i, b.row, b.col});
    }
    for (int r = 0; r < inst.cdPerLane; ++r) {
      kiln::emu::MatrixPlace d = inst.dPlace(lane, r);
      out.insert({'D', lane, r, d.row, d.col});
    }
  }
  return out;
}

/// AMD's table `path` (elements of `bits` bits) as a layout; empty if it
/// cannot be read.
Layout readReference(const std::string &path, int bits) {
  std::ifstream in(path);
  Layout out;
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
    char matrix = f[0][0];
    int row = std::stoi(f[2]), col = std::stoi(f[3]), vgpr = std::stoi(f[4]),
        lane = std::stoi(f[5]), bitLo = std::stoi(f[6]);
    int element = matrix == 'D' ? vgpr : vgpr * (32 / bits) + bitLo / bits;
    out.insert({matrix, lane, element, row, col});
  }
  return out;
}

std::string str(const Place &p) {
  auto [matrix, lane, element, row, col] = p;
  std::ostringstream os;
  os << matrix << " lane " << lane << " element " << element << " at (" << row << ", " << col
     << ")";
  return os.str();
}

/// The differences between two layouts, at most `limit` of them, each
/// naming the side that has the placement: empty when they agree.
std::vector<std::string> differences(const Layout &left, const std::string &leftName,
                                     const Layout &right, const std::string &rightName,
                                     size_t limit = 8) {
  std::vector<std::string> out;
  auto oneWay = [&](const Layout &a, const std::string &aName, const Layout &b,
                    const std::string &bName) {
    for (const Place &p : a)
      if (!b.count(p) && out.size() < limit)
        out.push_back(str(p) + " is in " + aName + " but not in " + bName);
  };
  oneWay(left, leftName, right, rightName);
  oneWay(right, rightName, left, leftName);
  return out;
}

std::string joined(const std::vector<std::string> &lines) {
  std::string s;
  for (const std::string &l : lines)
    s += "\n  " + l;
  return s;
}

MatrixInput inputOf(kiln::emu::ElementKind kind) {
  switch (kind) {
  case kiln::emu::ElementKind::F16:
    return MatrixInput::F16;
  case kiln::emu::ElementKind::BF16:
    return MatrixInput::BF16;
  case kiln::emu::ElementKind::I8:
    return MatrixInput::I8;
  case kiln::emu::ElementKind::I4:
    return MatrixInput::I4;
  case kiln::emu::ElementKind::F32:
    return MatrixInput::F32;
  }
  return MatrixInput::F16;
}

const kiln::emu::Chip *emuChip(const char *name) { return kiln::emu::findChip(name); }

const EmuInstruction *emuInstruction(const kiln::emu::Chip &chip, const char *mnemonic) {
  for (size_t i = 0; i < chip.instructionCount; ++i)
    if (std::string(chip.instructions[i].mnemonic) == mnemonic)
      return &chip.instructions[i];
  return nullptr;
}

/// The chips AMD's calculator covers, by the tables' prefix.
const std::map<std::string, std::string> kReferenceChip = {
    {"cdna3", "gfx942"}, {"rdna3", "gfx1100"}, {"rdna4", "gfx1201"}};

struct ReferenceTable {
  std::string path, chip, mnemonic;
};

std::vector<ReferenceTable> referenceTables() {
  std::vector<ReferenceTable> out;
  DIR *dir = opendir(KILN_LAYOUT_DIR);
  if (!dir)
    return out;
  while (dirent *entry = readdir(dir)) {
    std::string name = entry->d_name;
    size_t dash = name.find('-');
    if (dash == std::string::npos || name.size() < 4 || name.substr(name.size() - 4) != ".csv")
      continue;
    auto chip = kReferenceChip.find(name.substr(0, dash));
    if (chip == kReferenceChip.end())
      continue;
    out.push_back({std::string(KILN_LAYOUT_DIR) + "/" + name, chip->second,
                   name.substr(dash + 1, name.size() - dash - 5)});
  }
  closedir(dir);
  return out;
}

/// The reference table of `mnemonic` on `chip`: its own, or for a bf16
/// instruction with none (RDNA4) the f16 one, which packs 16-bit elements
/// the same way. Empty if there is none.
std::string referenceFor(const std::string &chip, const std::string &mnemonic) {
  for (const ReferenceTable &t : referenceTables())
    if (t.chip == chip && t.mnemonic == mnemonic)
      return t.path;
  size_t bf16 = mnemonic.rfind("bf16");
  if (bf16 != std::string::npos)
    return referenceFor(chip, mnemonic.substr(0, bf16) + "f16" + mnemonic.substr(bf16 + 4));
  return "";
}

TEST(GfxTargets, SameChipsAndInstructionsAsTheEmulator) {
  size_t emuCount = 0;
  const kiln::emu::Chip *const *emuChips = kiln::emu::allChips(emuCount);
  std::set<std::string> compilerChips, emulatorChips;
  for (const kiln::gfx::Target &t : kiln::gfx::allTargets())
    compilerChips.insert(t.name);
  for (size_t i = 0; i < emuCount; ++i)
    emulatorChips.insert(emuChips[i]->name);
  EXPECT_EQ(compilerChips, emulatorChips);

  for (const kiln::gfx::Target &target : kiln::gfx::allTargets()) {
    SCOPED_TRACE(target.name);
    const kiln::emu::Chip *chip = emuChip(target.name);
    ASSERT_NE(chip, nullptr);
    EXPECT_EQ(target.waveSize, chip->waveSize);
    std::set<std::string> compiler, emulator;
    for (const CompilerInstruction &inst : target.matrix)
      compiler.insert(inst.mnemonic);
    for (size_t i = 0; i < chip->instructionCount; ++i)
      emulator.insert(chip->instructions[i].mnemonic);
    EXPECT_EQ(compiler, emulator);
  }
}

TEST(GfxTargets, SameShapesAndLayoutsAsTheEmulator) {
  int checked = 0;
  for (const kiln::gfx::Target &target : kiln::gfx::allTargets()) {
    const kiln::emu::Chip *chip = emuChip(target.name);
    ASSERT_NE(chip, nullptr) << target.name;
    for (const CompilerInstruction &inst : target.matrix) {
      SCOPED_TRACE(std::string(target.name) + " " + inst.mnemonic);
      const EmuInstruction *emu = emuInstruction(*chip, inst.mnemonic);
      ASSERT_NE(emu, nullptr);
      EXPECT_EQ(inst.m, emu->m);
      EXPECT_EQ(inst.n, emu->n);
      EXPECT_EQ(inst.k, emu->k);
      EXPECT_EQ(inst.perLane, emu->abPerLane);
      EXPECT_EQ(inst.accPerLane, emu->cdPerLane);
      EXPECT_EQ(inst.input, inputOf(emu->input));
      EXPECT_EQ(inst.wmma, std::string(inst.mnemonic).rfind("v_wmma_", 0) == 0);
      std::vector<std::string> diff =
          differences(layoutOf(inst, int(target.waveSize)), "the compiler's table", layoutOf(*emu),
                      "the emulator's table");
      EXPECT_TRUE(diff.empty()) << "lane layouts differ:" << joined(diff);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7 + 13 + 3 + 4 + 5);
}

TEST(GfxTargets, BothTablesMatchAMDsReference) {
  // Reference tables of element types no Kiln instruction uses.
  const std::set<std::string> unused = {"v_mfma_f32_16x16x32_fp8_fp8",
                                        "v_wmma_f32_16x16x16_fp8_fp8"};
  std::vector<ReferenceTable> tables = referenceTables();
  ASSERT_GE(tables.size(), 16u) << "reference tables missing from " << KILN_LAYOUT_DIR;
  int checked = 0;
  for (const ReferenceTable &table : tables) {
    SCOPED_TRACE(table.path);
    const kiln::gfx::Target *target = kiln::gfx::lookupTarget(table.chip);
    ASSERT_NE(target, nullptr);
    const CompilerInstruction *inst = target->instruction(table.mnemonic);
    if (unused.count(table.mnemonic)) {
      EXPECT_EQ(inst, nullptr) << "now in the compiler's table: check it here";
      continue;
    }
    // Every reference instruction of a type Kiln uses is in both tables.
    ASSERT_NE(inst, nullptr) << table.mnemonic << " is not in the compiler's table";
    const kiln::emu::Chip *chip = emuChip(table.chip.c_str());
    ASSERT_NE(chip, nullptr);
    const EmuInstruction *emu = emuInstruction(*chip, table.mnemonic.c_str());
    ASSERT_NE(emu, nullptr) << table.mnemonic << " is not in the emulator's table";
    Layout reference = readReference(table.path, kiln::gfx::bitsOf(inst->input));
    ASSERT_FALSE(reference.empty());
    std::vector<std::string> diff = differences(layoutOf(*inst, int(target->waveSize)),
                                                "the compiler's table", reference, table.path);
    EXPECT_TRUE(diff.empty()) << "compiler layout differs:" << joined(diff);
    diff = differences(layoutOf(*emu), "the emulator's table", reference, table.path);
    EXPECT_TRUE(diff.empty()) << "emulator layout differs:" << joined(diff);
    ++checked;
  }
  EXPECT_EQ(checked, 7 + 4 + 4);

  // The other way: every instruction of a tabulated chip is checked, its
  // bf16 forms against the f16 table where AMD has no bf16 one.
  for (const auto &[prefix, chipName] : kReferenceChip) {
    const kiln::gfx::Target *target = kiln::gfx::lookupTarget(chipName);
    ASSERT_NE(target, nullptr);
    for (const CompilerInstruction &inst : target->matrix) {
      SCOPED_TRACE(chipName + " " + inst.mnemonic);
      std::string path = referenceFor(chipName, inst.mnemonic);
      ASSERT_FALSE(path.empty()) << "no reference table";
      std::vector<std::string> diff =
          differences(layoutOf(inst, int(target->waveSize)), "the compiler's table",
                      readReference(path, kiln::gfx::bitsOf(inst.input)), path);
      EXPECT_TRUE(diff.empty()) << joined(diff);
    }
  }
}

// gfx950 and gfx1250 have no reference table: each table's layout must at
// least place every element of A, B and D in a lane (twice for RDNA3-style
// duplicates), and each lane element once.
TEST(GfxTargets, UntabulatedLayoutsCoverTheMatrices) {
  for (const char *name : {"gfx950", "gfx1250"}) {
    const kiln::gfx::Target *target = kiln::gfx::lookupTarget(name);
    ASSERT_NE(target, nullptr);
    for (const CompilerInstruction &inst : target->matrix) {
      SCOPED_TRACE(std::string(name) + " " + inst.mnemonic);
      std::map<std::tuple<char, int, int>, int> covered; // matrix, row, col
      for (const Place &p : layoutOf(inst, int(target->waveSize)))
        ++covered[{std::get<0>(p), std::get<3>(p), std::get<4>(p)}];
      EXPECT_EQ(covered.size(), size_t(2 * inst.m * inst.k + inst.m * inst.n));
      for (const auto &[where, count] : covered)
        EXPECT_EQ(count, 1) << std::get<0>(where) << "[" << std::get<1>(where) << "]["
                            << std::get<2>(where) << "]";
    }
  }
}

// Negative controls: one altered entry in any of the three must be reported.
TEST(GfxTargets, AlteredEntriesAreReported) {
  const kiln::gfx::Target *gfx942 = kiln::gfx::lookupTarget("gfx942");
  ASSERT_NE(gfx942, nullptr);
  const CompilerInstruction *inst = gfx942->instruction("v_mfma_i32_16x16x32_i8");
  ASSERT_NE(inst, nullptr);
  const EmuInstruction *emu = emuInstruction(*emuChip("gfx942"), "v_mfma_i32_16x16x32_i8");
  ASSERT_NE(emu, nullptr);
  std::string path = referenceFor("gfx942", "v_mfma_i32_16x16x32_i8");
  Layout reference = readReference(path, 8);
  ASSERT_TRUE(differences(layoutOf(*inst, 64), "compiler", reference, "reference").empty());
  ASSERT_TRUE(differences(layoutOf(*emu), "emulator", reference, "reference").empty());

  // The compiler's table with lane groups 4 apart in K instead of 8.
  CompilerInstruction shifted = *inst;
  shifted.kGroupStride = 4;
  std::vector<std::string> diff =
      differences(layoutOf(shifted, 64), "compiler", layoutOf(*emu), "emulator");
  ASSERT_FALSE(diff.empty());
  EXPECT_NE(diff.front().find("lane 16"), std::string::npos) << diff.front();
  EXPECT_FALSE(differences(layoutOf(shifted, 64), "compiler", reference, "reference").empty());

  // The emulator's with D's lane groups 8 rows apart instead of 4.
  EmuInstruction rows = *emu;
  rows.dGroupStride = 8;
  diff = differences(layoutOf(*inst, 64), "compiler", layoutOf(rows), "emulator");
  ASSERT_FALSE(diff.empty());
  EXPECT_EQ(diff.front().rfind("D lane", 0), 0u) << diff.front();

  // The reference with one element moved.
  Layout moved = reference;
  Place first = *moved.begin();
  moved.erase(moved.begin());
  std::get<4>(first) += 1;
  moved.insert(first);
  diff = differences(layoutOf(*inst, 64), "compiler", moved, "reference");
  EXPECT_EQ(diff.size(), 2u) << joined(diff);

  // A mismatched instruction (the 32 x 32 form in the 16 x 16 one's place).
  const CompilerInstruction *big = gfx942->instruction("v_mfma_i32_32x32x16_i8");
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(differences(layoutOf(*big, 64), "compiler", reference, "reference").empty());
}

TEST(GfxTargets, ChipNamesResolve) {
  EXPECT_STREQ(kiln::gfx::lookupTarget("MI300X")->name, "gfx942");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi325x")->name, "gfx942");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi355x")->name, "gfx950");
  EXPECT_STREQ(kiln::gfx::lookupTarget("mi455x")->name, "gfx1250");
  EXPECT_STREQ(kiln::gfx::lookupTarget("W7900")->name, "gfx1100");
  EXPECT_EQ(kiln::gfx::lookupTarget("gfx90a"), nullptr);
}

// The GEMM builder's instruction per element type: the 16 x 16 one with the
// largest K.
TEST(GfxTargets, GemmInstructions) {
  auto mnemonic = [](const char *chip, MatrixInput input) -> std::string {
    const CompilerInstruction *inst = kiln::gfx::lookupTarget(chip)->gemmInstruction(input);
    return inst ? inst->mnemonic : "none";
  };
  EXPECT_EQ(mnemonic("gfx942", MatrixInput::I8), "v_mfma_i32_16x16x32_i8");
  EXPECT_EQ(mnemonic("gfx942", MatrixInput::I4), "none");
  EXPECT_EQ(mnemonic("gfx950", MatrixInput::F16), "v_mfma_f32_16x16x32_f16");
  EXPECT_EQ(mnemonic("gfx950", MatrixInput::I8), "v_mfma_i32_16x16x64_i8");
  EXPECT_EQ(mnemonic("gfx942", MatrixInput::F32), "v_mfma_f32_16x16x4_f32");
  EXPECT_EQ(mnemonic("gfx950", MatrixInput::F32), "v_mfma_f32_16x16x4_f32");
  EXPECT_EQ(mnemonic("gfx1100", MatrixInput::F32), "none");
  EXPECT_EQ(mnemonic("gfx1250", MatrixInput::F32), "none");
  EXPECT_EQ(mnemonic("gfx1201", MatrixInput::I4), "v_wmma_i32_16x16x32_iu4");
  EXPECT_EQ(mnemonic("gfx1100", MatrixInput::I4), "v_wmma_i32_16x16x16_iu4");
}

} // namespace
