//===- EmuMatrixTest.cpp - The emu device's matrix-core instructions ------===//
//
// The emulator's lane layouts against AMD's matrix instruction calculator
// tables (test/unit/Inputs/matrix-layouts), element by element in both
// directions; every instruction of every chip against a plain matrix product
// on seeded random operands packed with the layout (floats within 1e-5 of a
// double reference, integers exact, signed and unsigned, wrapping and
// clamped); and the errors: RDNA3 copies that disagree, unknown mnemonics,
// flags an instruction does not take.
//
//===----------------------------------------------------------------------===//

#include "EmuMatrix.h"
#include "kiln/emu_abi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#ifndef KILN_LAYOUT_DIR
#error "KILN_LAYOUT_DIR must name the directory of the layout tables"
#endif

using namespace kiln::emu;
using ::testing::HasSubstr;

namespace {

const Chip &chip(const char *name) {
  const Chip *c = findChip(name);
  EXPECT_NE(c, nullptr) << name;
  static const Chip none = {"none", 0, nullptr, 0};
  return c ? *c : none;
}

const MatrixInstruction *instruction(const char *chipName,
                                     const char *mnemonic) {
  std::string error;
  const MatrixInstruction *inst =
      findInstruction(chip(chipName), mnemonic, error);
  EXPECT_NE(inst, nullptr) << error;
  return inst;
}

//===----------------------------------------------------------------------===//
// Layouts against AMD's tables
//===----------------------------------------------------------------------===//

/// matrix, row, col, vgpr, lane, bit_lo.
using Placement = std::tuple<char, int, int, int, int, int>;

std::set<Placement> readTable(const std::string &path, int &entries) {
  std::ifstream in(path);
  std::set<Placement> table;
  std::string line;
  entries = 0;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    std::string field;
    while (std::getline(fields, field, ','))
      f.push_back(field);
    if (f.size() != 8)
      continue;
    table.insert({f[0][0], std::stoi(f[2]), std::stoi(f[3]), std::stoi(f[4]),
                  std::stoi(f[5]), std::stoi(f[6])});
    ++entries;
  }
  return table;
}

/// Every register position the emulator's layout gives an element.
std::set<Placement> emulatorPlacements(const MatrixInstruction &inst) {
  std::set<Placement> placements;
  const int bits = inst.bits(), perRegister = 32 / bits;
  for (int lane = 0; lane < inst.waveSize; ++lane) {
    for (int i = 0; i < inst.abPerLane; ++i) {
      MatrixPlace a = inst.aPlace(lane, i), b = inst.bPlace(lane, i);
      int vgpr = i / perRegister, bit = (i % perRegister) * bits;
      placements.insert({'A', a.row, a.col, vgpr, lane, bit});
      placements.insert({'B', b.row, b.col, vgpr, lane, bit});
    }
    for (int r = 0; r < inst.cdPerLane; ++r) {
      MatrixPlace d = inst.dPlace(lane, r);
      placements.insert({'D', d.row, d.col, r, lane, 0});
    }
  }
  return placements;
}

std::string describe(const Placement &p) {
  return std::string(1, std::get<0>(p)) + "[" + std::to_string(std::get<1>(p)) +
         "][" + std::to_string(std::get<2>(p)) + "] in v" +
         std::to_string(std::get<3>(p)) + " lane " +
         std::to_string(std::get<4>(p)) + " bit " +
         std::to_string(std::get<5>(p));
}

/// `<arch>-<mnemonic>.csv`; RDNA4 has no bf16 table and packs bf16 like f16.
std::string tableFor(const char *arch, const MatrixInstruction &inst) {
  std::string name = inst.mnemonic;
  std::string path =
      std::string(KILN_LAYOUT_DIR) + "/" + arch + "-" + name + ".csv";
  if (std::ifstream(path).good() || inst.input != ElementKind::BF16)
    return path;
  name.replace(name.rfind("bf16"), 4, "f16");
  return std::string(KILN_LAYOUT_DIR) + "/" + arch + "-" + name + ".csv";
}

TEST(EmuMatrix, LayoutsEqualTheTablesBothWays) {
  const std::pair<const char *, const char *> tabulated[] = {
      {"gfx942", "cdna3"}, {"gfx1100", "rdna3"}, {"gfx1201", "rdna4"}};
  int checked = 0;
  for (const auto &[chipName, arch] : tabulated) {
    const Chip &c = chip(chipName);
    for (size_t n = 0; n < c.instructionCount; ++n) {
      const MatrixInstruction &inst = c.instructions[n];
      SCOPED_TRACE(std::string(chipName) + " " + inst.mnemonic);
      int entries = 0;
      std::set<Placement> table = readTable(tableFor(arch, inst), entries);
      ASSERT_FALSE(table.empty()) << "no table " << tableFor(arch, inst);
      std::set<Placement> mine = emulatorPlacements(inst);
      for (const Placement &p : table)
        EXPECT_TRUE(mine.count(p)) << "the table has " << describe(p);
      for (const Placement &p : mine)
        EXPECT_TRUE(table.count(p)) << "the emulator has " << describe(p);
      EXPECT_EQ(size_t(entries), table.size()) << "duplicate table rows";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7 + 4 + 5);
}

// The comparison can fail: one changed constant breaks it.
TEST(EmuMatrix, AShiftedLayoutDiffersFromTheTable) {
  MatrixInstruction shifted =
      *instruction("gfx1201", "v_wmma_f32_16x16x16_f16");
  shifted.kChunk = 8; // the table has K in blocks of 4 per half-wave
  shifted.kGroupStride = 8;
  int entries = 0;
  std::set<Placement> table = readTable(
      std::string(KILN_LAYOUT_DIR) + "/rdna4-v_wmma_f32_16x16x16_f16.csv",
      entries);
  std::set<Placement> mine = emulatorPlacements(shifted);
  EXPECT_NE(mine, table);
}

// Every element of A, B and D is held by one lane (two for RDNA3's A and B),
// for the untabulated chips too, and the counts agree with the shapes.
TEST(EmuMatrix, LayoutsCoverEveryElement) {
  size_t chipCount = 0;
  const Chip *const *chips = allChips(chipCount);
  EXPECT_EQ(chipCount, 5u);
  for (size_t c = 0; c < chipCount; ++c) {
    for (size_t n = 0; n < chips[c]->instructionCount; ++n) {
      const MatrixInstruction &inst = chips[c]->instructions[n];
      SCOPED_TRACE(std::string(chips[c]->name) + " " + inst.mnemonic);
      EXPECT_EQ(inst.waveSize, chips[c]->waveSize);
      int copies = inst.duplicated() ? 2 : 1;
      EXPECT_EQ(inst.m * inst.k * copies, inst.abPerLane * inst.waveSize);
      EXPECT_EQ(inst.m * inst.n, inst.cdPerLane * inst.waveSize);
      EXPECT_LE(inst.abRegisters(), kMaxAbRegisters);
      EXPECT_LE(inst.cdPerLane, kMaxCdPerLane);
      EXPECT_LE(inst.m * inst.k, kMaxMatrixElements);
      EXPECT_LE(inst.k * inst.n, kMaxMatrixElements);
      EXPECT_LE(inst.m, kMaxDimension);
      EXPECT_LE(inst.n, kMaxDimension);
      EXPECT_LE(inst.k, kMaxK);
      EXPECT_LE(inst.abPerLane * inst.waveSize, kMaxLaneElements);
      EXPECT_LE(inst.cdPerLane * inst.waveSize, kMaxLaneElements);
      std::map<std::pair<int, int>, int> a, b, d;
      for (int lane = 0; lane < inst.waveSize; ++lane) {
        for (int i = 0; i < inst.abPerLane; ++i) {
          MatrixPlace pa = inst.aPlace(lane, i), pb = inst.bPlace(lane, i);
          ASSERT_TRUE(pa.row < inst.m && pa.col < inst.k);
          ASSERT_TRUE(pb.row < inst.k && pb.col < inst.n);
          ++a[{pa.row, pa.col}];
          ++b[{pb.row, pb.col}];
        }
        for (int r = 0; r < inst.cdPerLane; ++r) {
          MatrixPlace pd = inst.dPlace(lane, r);
          ASSERT_TRUE(pd.row < inst.m && pd.col < inst.n);
          ++d[{pd.row, pd.col}];
        }
      }
      EXPECT_EQ(a.size(), size_t(inst.m * inst.k));
      EXPECT_EQ(b.size(), size_t(inst.k * inst.n));
      EXPECT_EQ(d.size(), size_t(inst.m * inst.n));
      for (const auto &e : a)
        EXPECT_EQ(e.second, copies);
      for (const auto &e : b)
        EXPECT_EQ(e.second, copies);
      for (const auto &e : d)
        EXPECT_EQ(e.second, 1);
    }
  }
}

// The derived layouts of the untabulated chips, spelled out.
TEST(EmuMatrix, DerivedLayouts) {
  const MatrixInstruction *f16 =
      instruction("gfx950", "v_mfma_f32_16x16x32_f16");
  const MatrixInstruction *i8 = instruction("gfx950", "v_mfma_i32_16x16x64_i8");
  ASSERT_TRUE(f16 && i8);
  for (int lane = 0; lane < 64; ++lane) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(f16->aPlace(lane, i).row, lane % 16);
      EXPECT_EQ(f16->aPlace(lane, i).col, 8 * (lane / 16) + i);
      EXPECT_EQ(f16->bPlace(lane, i).row, 8 * (lane / 16) + i);
      EXPECT_EQ(f16->bPlace(lane, i).col, lane % 16);
    }
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(i8->aPlace(lane, i).col, 16 * (lane / 16) + i);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(f16->dPlace(lane, r).row, 4 * (lane / 16) + r);
      EXPECT_EQ(f16->dPlace(lane, r).col, lane % 16);
    }
  }
  const MatrixInstruction *w16 =
      instruction("gfx1250", "v_wmma_f32_16x16x32_f16");
  const MatrixInstruction *w8 =
      instruction("gfx1250", "v_wmma_i32_16x16x64_iu8");
  ASSERT_TRUE(w16 && w8);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(w16->aPlace(lane, i).col,
                8 * (lane / 16) + 16 * (i / 8) + i % 8);
    for (int i = 0; i < 32; ++i)
      EXPECT_EQ(w8->aPlace(lane, i).col,
                16 * (lane / 16) + 32 * (i / 16) + i % 16);
    for (int r = 0; r < 8; ++r)
      EXPECT_EQ(w16->dPlace(lane, r).row, 8 * (lane / 16) + r);
  }
}

//===----------------------------------------------------------------------===//
// Results against a plain matrix product
//===----------------------------------------------------------------------===//

/// An f16 value computed independently of decodeF16.
double f16Value(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude =
      exponent == 0 ? mantissa * std::pow(2.0, -24)
                    : (1.0 + mantissa / 1024.0) * std::pow(2.0, exponent - 15);
  return bits & 0x8000 ? -magnitude : magnitude;
}

double bf16Value(uint16_t bits) {
  int exponent = (bits >> 7) & 0xff, mantissa = bits & 0x7f;
  double magnitude =
      exponent == 0 ? mantissa * std::pow(2.0, -133)
                    : (1.0 + mantissa / 128.0) * std::pow(2.0, exponent - 127);
  return bits & 0x8000 ? -magnitude : magnitude;
}

/// Matrices, per-lane registers and the reference of one random case.
struct Case {
  const MatrixInstruction &inst;
  std::vector<uint32_t> a, b; // raw elements, row-major
  std::vector<uint32_t> c;    // f32 or i32 bits, row-major M x N
  std::vector<std::vector<uint32_t>> laneA, laneB, laneC, laneD;

  explicit Case(const MatrixInstruction &inst) : inst(inst) {}

  void randomize(std::mt19937 &rng, bool bigC = false) {
    const int bits = inst.bits();
    a.assign(size_t(inst.m * inst.k), 0);
    b.assign(size_t(inst.k * inst.n), 0);
    c.assign(size_t(inst.m * inst.n), 0);
    auto element = [&]() -> uint32_t {
      if (inst.integer)
        return rng() & ((1u << bits) - 1);
      // Finite values of both signs between 2^-4 and 2^4, some zeros and
      // (for f16) subnormals.
      uint32_t choice = rng() % 16;
      if (inst.input == ElementKind::F32) {
        uint32_t sign32 = (rng() & 1) << 31;
        if (choice == 0)
          return sign32;
        return sign32 | (123 + rng() % 9) << 23 | (rng() & 0x7fffff);
      }
      uint32_t sign = (rng() & 1) << 15;
      if (choice == 0)
        return sign;
      if (inst.input == ElementKind::F16) {
        if (choice == 1)
          return sign | (rng() & 0x3ff); // subnormal
        return sign | (11 + rng() % 9) << 10 | (rng() & 0x3ff);
      }
      return sign | (123 + rng() % 9) << 7 | (rng() & 0x7f);
    };
    for (uint32_t &v : a)
      v = element();
    for (uint32_t &v : b)
      v = element();
    for (uint32_t &v : c) {
      if (inst.integer) {
        v = bigC ? uint32_t(INT32_MAX - int32_t(rng() % 1000)) *
                       ((rng() & 1) ? 1u : uint32_t(-1))
                 : uint32_t(int32_t(rng() % 2001) - 1000);
      } else {
        float f = std::ldexp(float(int32_t(rng() % 2001) - 1000), -8);
        std::memcpy(&v, &f, 4);
      }
    }
  }

  /// Packs the matrices into every lane's registers with the layout.
  void pack() {
    const int bits = inst.bits(), perRegister = 32 / bits;
    laneA.assign(size_t(inst.waveSize),
                 std::vector<uint32_t>(size_t(inst.abRegisters()), 0));
    laneB = laneA;
    laneC.assign(size_t(inst.waveSize),
                 std::vector<uint32_t>(size_t(inst.cdPerLane), 0));
    laneD.assign(size_t(inst.waveSize),
                 std::vector<uint32_t>(size_t(inst.cdPerLane), 0xdeadbeef));
    for (int lane = 0; lane < inst.waveSize; ++lane) {
      for (int i = 0; i < inst.abPerLane; ++i) {
        MatrixPlace pa = inst.aPlace(lane, i), pb = inst.bPlace(lane, i);
        int shift = (i % perRegister) * bits;
        laneA[lane][i / perRegister] |= a[size_t(pa.row * inst.k + pa.col)]
                                        << shift;
        laneB[lane][i / perRegister] |= b[size_t(pb.row * inst.n + pb.col)]
                                        << shift;
      }
      for (int r = 0; r < inst.cdPerLane; ++r) {
        MatrixPlace pd = inst.dPlace(lane, r);
        laneC[lane][r] = c[size_t(pd.row * inst.n + pd.col)];
      }
    }
  }

  bool run(uint32_t flags, std::string &error) {
    std::vector<LaneOperands> operands;
    for (int lane = 0; lane < inst.waveSize; ++lane)
      operands.push_back({laneA[lane].data(), laneB[lane].data(),
                          laneC[lane].data(), laneD[lane].data()});
    return execute(inst, flags, operands.data(), error);
  }

  /// D[row][col] as the emulator scattered it.
  uint32_t resultAt(int row, int col) const {
    for (int lane = 0; lane < inst.waveSize; ++lane)
      for (int r = 0; r < inst.cdPerLane; ++r) {
        MatrixPlace p = inst.dPlace(lane, r);
        if (p.row == row && p.col == col)
          return laneD[lane][r];
      }
    ADD_FAILURE() << "no lane holds D[" << row << "][" << col << "]";
    return 0;
  }

  int64_t intValue(uint32_t raw, bool isUnsigned) const {
    int bits = inst.bits();
    if (isUnsigned || !(raw & (1u << (bits - 1))))
      return raw;
    return int64_t(raw) - (int64_t(1) << bits);
  }

  void checkIntegers(uint32_t flags) const {
    for (int row = 0; row < inst.m; ++row)
      for (int col = 0; col < inst.n; ++col) {
        int64_t sum = int32_t(c[size_t(row * inst.n + col)]);
        for (int k = 0; k < inst.k; ++k)
          sum += intValue(a[size_t(row * inst.k + k)],
                          flags & KILN_EMU_UNSIGNED_A) *
                 intValue(b[size_t(k * inst.n + col)],
                          flags & KILN_EMU_UNSIGNED_B);
        int64_t expected = sum;
        if (flags & KILN_EMU_CLAMP)
          expected =
              std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, sum));
        else
          expected = int32_t(uint32_t(uint64_t(sum)));
        ASSERT_EQ(int32_t(resultAt(row, col)), expected)
            << "D[" << row << "][" << col << "] flags " << flags;
      }
  }

  void checkFloats() const {
    for (int row = 0; row < inst.m; ++row)
      for (int col = 0; col < inst.n; ++col) {
        float cf;
        std::memcpy(&cf, &c[size_t(row * inst.n + col)], 4);
        double sum = cf, scale = std::fabs(cf);
        for (int k = 0; k < inst.k; ++k) {
          uint32_t ar = a[size_t(row * inst.k + k)], br = b[size_t(k * inst.n + col)];
          uint16_t ab = uint16_t(ar), bb = uint16_t(br);
          float af, bf;
          std::memcpy(&af, &ar, 4);
          std::memcpy(&bf, &br, 4);
          double product = inst.input == ElementKind::F32   ? double(af) * double(bf)
                           : inst.input == ElementKind::F16 ? f16Value(ab) * f16Value(bb)
                                                            : bf16Value(ab) * bf16Value(bb);
          sum += product;
          scale += std::fabs(product);
        }
        float got;
        uint32_t raw = resultAt(row, col);
        std::memcpy(&got, &raw, 4);
        // Relative to the magnitude of the terms: cancellation makes a
        // relative bound on the sum itself meaningless.
        ASSERT_NEAR(double(got), sum, 1e-5 * scale + 1e-30)
            << "D[" << row << "][" << col << "]";
      }
  }
};

TEST(EmuMatrix, EveryInstructionComputesTheMatrixProduct) {
  std::mt19937 rng(20240613);
  size_t chipCount = 0;
  const Chip *const *chips = allChips(chipCount);
  int cases = 0;
  for (size_t ci = 0; ci < chipCount; ++ci) {
    for (size_t n = 0; n < chips[ci]->instructionCount; ++n) {
      const MatrixInstruction &inst = chips[ci]->instructions[n];
      SCOPED_TRACE(std::string(chips[ci]->name) + " " + inst.mnemonic);
      std::vector<uint32_t> flagSets = {0};
      if (inst.integer)
        flagSets.push_back(KILN_EMU_CLAMP);
      if (inst.unsignedAllowed)
        for (uint32_t f :
             {uint32_t(KILN_EMU_UNSIGNED_A), uint32_t(KILN_EMU_UNSIGNED_B),
              uint32_t(KILN_EMU_UNSIGNED_A | KILN_EMU_UNSIGNED_B |
                       KILN_EMU_CLAMP)})
          flagSets.push_back(f);
      for (uint32_t flags : flagSets) {
        for (bool bigC : {false, true}) {
          if (bigC && !inst.integer)
            continue;
          Case test(inst);
          test.randomize(rng, bigC);
          test.pack();
          std::string error;
          ASSERT_TRUE(test.run(flags, error)) << error;
          if (inst.integer)
            test.checkIntegers(flags);
          else
            test.checkFloats();
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 30);
}

// With C near INT32_MAX the sums overflow: wrapped without clamp, saturated
// with it (the random cases above may not reach it).
TEST(EmuMatrix, IntegerOverflowWrapsOrClamps) {
  const MatrixInstruction *inst =
      instruction("gfx1100", "v_wmma_i32_16x16x16_iu8");
  ASSERT_TRUE(inst);
  for (uint32_t flags : {0u, uint32_t(KILN_EMU_CLAMP)}) {
    Case test(*inst);
    test.a.assign(16 * 16, 0x7f); // 127
    test.b.assign(16 * 16, 0x7f);
    test.c.assign(16 * 16, uint32_t(INT32_MAX));
    test.pack();
    std::string error;
    ASSERT_TRUE(test.run(flags, error)) << error;
    int64_t exact = int64_t(INT32_MAX) + 16 * 127 * 127;
    int32_t expected = flags ? INT32_MAX : int32_t(uint32_t(exact));
    EXPECT_EQ(int32_t(test.resultAt(5, 9)), expected);
    test.checkIntegers(flags);
  }
}

// i4 elements are sign-extended unless unsigned: 0xF is -1 or 15.
TEST(EmuMatrix, I4SignHandling) {
  const MatrixInstruction *inst =
      instruction("gfx1201", "v_wmma_i32_16x16x32_iu4");
  ASSERT_TRUE(inst);
  Case test(*inst);
  test.a.assign(16 * 32, 0xf);
  test.b.assign(32 * 16, 0x1);
  test.c.assign(16 * 16, 0);
  test.pack();
  std::string error;
  ASSERT_TRUE(test.run(0, error)) << error;
  EXPECT_EQ(int32_t(test.resultAt(0, 0)), -32);
  ASSERT_TRUE(test.run(KILN_EMU_UNSIGNED_A, error)) << error;
  EXPECT_EQ(int32_t(test.resultAt(15, 15)), 32 * 15);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(EmuMatrix, Rdna3CopiesThatDisagreeAreAnError) {
  const MatrixInstruction *inst =
      instruction("gfx1100", "v_wmma_f32_16x16x16_f16");
  ASSERT_TRUE(inst);
  Case test(*inst);
  test.a.assign(16 * 16, 0);
  test.b.assign(16 * 16, 0);
  test.c.assign(16 * 16, 0);
  test.a[3 * 16 + 5] = 0x3e00; // A[3][5] = 1.5
  test.pack();
  // Lane 19 holds the upper half-wave's copy of row 3; element 5 is K 5,
  // register 2, high half.
  test.laneA[19][2] = (test.laneA[19][2] & 0xffff) | 0x4000u << 16; // 2.0
  std::string error;
  EXPECT_FALSE(test.run(0, error));
  EXPECT_EQ(error, "v_wmma_f32_16x16x16_f16: A[3][5] differs between lane 3 "
                   "(1.5) and lane 19 (2)");
  EXPECT_EQ(test.laneD[0][0], 0xdeadbeefu) << "no D is written on an error";

  // B, an integer instruction, unsigned: values as the flags read them.
  const MatrixInstruction *iu8 =
      instruction("gfx1100", "v_wmma_i32_16x16x16_iu8");
  ASSERT_TRUE(iu8);
  Case ints(*iu8);
  ints.a.assign(16 * 16, 0);
  ints.b.assign(16 * 16, 0);
  ints.c.assign(16 * 16, 0);
  ints.b[2 * 16 + 7] = 0xff; // B[2][7]
  ints.pack();
  ints.laneB[16 + 7][0] &= ~(0xffu << 16); // lane 23's copy of K 2 is 0
  EXPECT_FALSE(ints.run(KILN_EMU_UNSIGNED_B, error));
  EXPECT_EQ(error, "v_wmma_i32_16x16x16_iu8: B[2][7] differs between lane 7 "
                   "(255) and lane 23 (0)");
  EXPECT_FALSE(ints.run(0, error));
  EXPECT_EQ(error, "v_wmma_i32_16x16x16_iu8: B[2][7] differs between lane 7 "
                   "(-1) and lane 23 (0)");
}

TEST(EmuMatrix, UnknownMnemonicIsAnError) {
  std::string error;
  EXPECT_EQ(findInstruction(chip("gfx942"), "v_wmma_f32_16x16x16_f16", error),
            nullptr);
  EXPECT_EQ(error, "'v_wmma_f32_16x16x16_f16' is not a matrix instruction of "
                   "gfx942 (emulated: v_mfma_f32_16x16x16_f16, "
                   "v_mfma_f32_16x16x16_bf16, v_mfma_i32_16x16x32_i8, "
                   "v_mfma_f32_32x32x8_f16, v_mfma_f32_32x32x8_bf16, "
                   "v_mfma_i32_32x32x16_i8, v_mfma_f32_16x16x4_f32)");
  EXPECT_EQ(findInstruction(chip("gfx1201"), "v_wmma_f32_16x16x32_f16", error),
            nullptr);
  EXPECT_THAT(error, HasSubstr("'v_wmma_f32_16x16x32_f16' is not a matrix "
                               "instruction of gfx1201"));
}

TEST(EmuMatrix, FlagsTheInstructionDoesNotTakeAreAnError) {
  std::mt19937 rng(7);
  const MatrixInstruction *mfma =
      instruction("gfx942", "v_mfma_i32_16x16x32_i8");
  const MatrixInstruction *wmma =
      instruction("gfx1201", "v_wmma_f32_16x16x16_f16");
  ASSERT_TRUE(mfma && wmma);
  Case ints(*mfma), floats(*wmma);
  ints.randomize(rng);
  ints.pack();
  floats.randomize(rng);
  floats.pack();
  std::string error;
  EXPECT_FALSE(ints.run(KILN_EMU_UNSIGNED_A, error));
  EXPECT_EQ(error, "v_mfma_i32_16x16x32_i8: the instruction has no unsigned "
                   "operands (flags 0x1)");
  EXPECT_FALSE(floats.run(KILN_EMU_CLAMP, error));
  EXPECT_EQ(error, "v_wmma_f32_16x16x16_f16: clamp is only defined for "
                   "integer results (flags 0x4)");
  EXPECT_FALSE(ints.run(1u << 9, error));
  EXPECT_EQ(error, "v_mfma_i32_16x16x32_i8: unknown flags 0x200");
}

TEST(EmuMatrix, Decoding) {
  EXPECT_EQ(decodeF16(0x3c00), 1.0f);
  EXPECT_EQ(decodeF16(0xc000), -2.0f);
  EXPECT_EQ(decodeF16(0x7bff), 65504.0f);
  EXPECT_EQ(decodeF16(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(decodeF16(0x83ff), -std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(decodeF16(0x7c00)));
  EXPECT_TRUE(std::isnan(decodeF16(0x7e00)));
  EXPECT_EQ(decodeBF16(0x3f80), 1.0f);
  EXPECT_EQ(decodeBF16(0xc0a0), -5.0f);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if (((bits >> 10) & 0x1f) == 0x1f)
      continue;
    ASSERT_EQ(double(decodeF16(uint16_t(bits))), f16Value(uint16_t(bits)))
        << bits;
  }
}

TEST(EmuMatrix, Chips) {
  EXPECT_EQ(chipNames(), "gfx942, gfx950, gfx1100, gfx1201, gfx1250");
  EXPECT_EQ(chip("gfx942").waveSize, 64);
  EXPECT_EQ(chip("gfx950").waveSize, 64);
  EXPECT_EQ(chip("gfx1100").waveSize, 32);
  EXPECT_EQ(chip("gfx1201").waveSize, 32);
  EXPECT_EQ(chip("gfx1250").waveSize, 32);
  EXPECT_EQ(findChip("gfx90a"), nullptr);
  EXPECT_EQ(findChip("emu:gfx942"), nullptr);
}

} // namespace
