//===- EmuMatrix.cpp - Matrix-core instructions on the host ---------------===//
//
// The layout constants of each chip, with where they come from, and the
// gather / compute / scatter of one wave-wide instruction.
//
//===----------------------------------------------------------------------===//

#include "EmuMatrix.h"

#include "kiln/emu_abi.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

using namespace kiln::emu;

namespace {

constexpr ElementKind F16 = ElementKind::F16;
constexpr ElementKind BF16 = ElementKind::BF16;
constexpr ElementKind I8 = ElementKind::I8;
constexpr ElementKind I4 = ElementKind::I4;
constexpr ElementKind F32 = ElementKind::F32;

// Columns: mnemonic, wave size, M, N, K, element, integer, unsigned allowed,
// A/B per lane, C/D per lane, kChunk, kGroupStride, kBlockStride, dChunk,
// dGroupStride, dBlockStride (see EmuMatrix.h for the formulas).
// clang-format off

// gfx942 (CDNA3, wave64). Checked element by element against AMD's matrix
// instruction calculator tables in test/unit/Inputs/matrix-layouts (cdna3-*)
// by EmuMatrixTest: lane l holds K-consecutive elements starting at
// abPerLane * (l / M); D rows 4 apart per lane group, in blocks of 8 rows
// for 32x32.
const MatrixInstruction kGfx942[] = {
    {"v_mfma_f32_16x16x16_f16", 64, 16, 16, 16, F16, false, false, 4, 4, 4, 4, 16, 4, 4, 16},
    {"v_mfma_f32_16x16x16_bf16", 64, 16, 16, 16, BF16, false, false, 4, 4, 4, 4, 16, 4, 4, 16},
    {"v_mfma_i32_16x16x32_i8", 64, 16, 16, 32, I8, true, false, 8, 4, 8, 8, 32, 4, 4, 16},
    {"v_mfma_f32_32x32x8_f16", 64, 32, 32, 8, F16, false, false, 4, 16, 4, 4, 8, 4, 4, 8},
    {"v_mfma_f32_32x32x8_bf16", 64, 32, 32, 8, BF16, false, false, 4, 16, 4, 4, 8, 4, 4, 8},
    {"v_mfma_i32_32x32x16_i8", 64, 32, 32, 16, I8, true, false, 8, 16, 8, 8, 16, 4, 4, 8},
    {"v_mfma_f32_16x16x4_f32", 64, 16, 16, 4, F32, false, false, 1, 4, 1, 1, 4, 4, 4, 16},
};

// gfx950 (CDNA4, wave64): the gfx942 instructions plus the double-K ones.
// No reference table; derived, not measured. Sources: composable_kernel's
// xdlops_gemm.hpp (mfma_f32_16x16x32f16 / bf16: k_per_blk 8, 4 input blocks
// of 16 lanes; mfma_i32_16x16x64i8: k_per_blk 16; the 32x32 ones 2 input
// blocks of 32 lanes, k_per_blk 8 and 16, is_k_reduction), AMD's rocjitsu
// MFMA input layout (input_loc: K / (64 / M) consecutive elements per lane
// group while that is at most 16) and the CDNA4 matrix-core article on ROCm
// Blogs; the C/D layout is the CDNA3 one (CK: same group_size and
// num_regs_per_blk). So lane l holds A[l % 16][8 * (l / 16) + i] (f16,
// bf16), A[l % 16][16 * (l / 16) + i] (i8), B symmetric, and
// D[4 * (l / 16) + r][l % 16].
const MatrixInstruction kGfx950[] = {
    {"v_mfma_f32_16x16x16_f16", 64, 16, 16, 16, F16, false, false, 4, 4, 4, 4, 16, 4, 4, 16},
    {"v_mfma_f32_16x16x16_bf16", 64, 16, 16, 16, BF16, false, false, 4, 4, 4, 4, 16, 4, 4, 16},
    {"v_mfma_i32_16x16x32_i8", 64, 16, 16, 32, I8, true, false, 8, 4, 8, 8, 32, 4, 4, 16},
    {"v_mfma_f32_32x32x8_f16", 64, 32, 32, 8, F16, false, false, 4, 16, 4, 4, 8, 4, 4, 8},
    {"v_mfma_f32_32x32x8_bf16", 64, 32, 32, 8, BF16, false, false, 4, 16, 4, 4, 8, 4, 4, 8},
    {"v_mfma_i32_32x32x16_i8", 64, 32, 32, 16, I8, true, false, 8, 16, 8, 8, 16, 4, 4, 8},
    {"v_mfma_f32_16x16x32_f16", 64, 16, 16, 32, F16, false, false, 8, 4, 8, 8, 32, 4, 4, 16},
    {"v_mfma_f32_16x16x32_bf16", 64, 16, 16, 32, BF16, false, false, 8, 4, 8, 8, 32, 4, 4, 16},
    {"v_mfma_i32_16x16x64_i8", 64, 16, 16, 64, I8, true, false, 16, 4, 16, 16, 64, 4, 4, 16},
    {"v_mfma_f32_32x32x16_f16", 64, 32, 32, 16, F16, false, false, 8, 16, 8, 8, 16, 4, 4, 8},
    {"v_mfma_f32_32x32x16_bf16", 64, 32, 32, 16, BF16, false, false, 8, 16, 8, 8, 16, 4, 4, 8},
    {"v_mfma_i32_32x32x32_i8", 64, 32, 32, 32, I8, true, false, 16, 16, 16, 16, 32, 4, 4, 8},
    {"v_mfma_f32_16x16x4_f32", 64, 16, 16, 4, F32, false, false, 1, 4, 1, 1, 4, 4, 4, 16},
};

// gfx1100 (RDNA3, wave32). Checked against the rdna3-* tables: each
// half-wave holds all of A and B (lanes l and l + 16 hold the same 16
// K-consecutive elements of row / column l % 16); D rows interleave the
// half-waves: D[2 * r + l / 16][l % 16].
const MatrixInstruction kGfx1100[] = {
    {"v_wmma_f32_16x16x16_f16", 32, 16, 16, 16, F16, false, false, 16, 8, 16, 0, 16, 1, 1, 2},
    {"v_wmma_f32_16x16x16_bf16", 32, 16, 16, 16, BF16, false, false, 16, 8, 16, 0, 16, 1, 1, 2},
    {"v_wmma_i32_16x16x16_iu8", 32, 16, 16, 16, I8, true, true, 16, 8, 16, 0, 16, 1, 1, 2},
    {"v_wmma_i32_16x16x16_iu4", 32, 16, 16, 16, I4, true, true, 16, 8, 16, 0, 16, 1, 1, 2},
};

// gfx1201 (RDNA4, wave32). Checked against the rdna4-* tables (bf16 has
// none and shares the f16 packing): 16-bit elements alternate between the
// half-waves every 4 K (lanes 0-15 hold K 0-3 and 8-11), 8- and 4-bit ones
// split K in two halves; D[8 * (l / 16) + r][l % 16].
const MatrixInstruction kGfx1201[] = {
    {"v_wmma_f32_16x16x16_f16", 32, 16, 16, 16, F16, false, false, 8, 8, 4, 4, 8, 8, 8, 16},
    {"v_wmma_f32_16x16x16_bf16", 32, 16, 16, 16, BF16, false, false, 8, 8, 4, 4, 8, 8, 8, 16},
    {"v_wmma_i32_16x16x16_iu8", 32, 16, 16, 16, I8, true, true, 8, 8, 8, 8, 16, 8, 8, 16},
    {"v_wmma_i32_16x16x16_iu4", 32, 16, 16, 16, I4, true, true, 8, 8, 8, 8, 16, 8, 8, 16},
    {"v_wmma_i32_16x16x32_iu4", 32, 16, 16, 32, I4, true, true, 16, 8, 16, 16, 32, 8, 8, 16},
};

// gfx1250 (wave32). No reference table; derived, not measured. Sources:
// AMD's rocjitsu emulator (mma_layout.h, wmma_input_loc for CDNA5 / gfx1250
// wave32, citing the CDNA5 ISA guide section 7.12.2: for 16 x K with K >= 32
// each lane group holds blocks of (K / 2) / 2 consecutive K, alternating
// between the half-waves; C/D as RDNA4) and Triton's AMD WMMA version-3
// operand layout (kWidth consecutive K per lane, the half-waves offset by
// kWidth, repeated every 2 * kWidth). So for f16 / bf16 lane l element i is
// K = 16 * (i / 8) + 8 * (l / 16) + i % 8, and for iu8
// K = 32 * (i / 16) + 16 * (l / 16) + i % 16 (16-byte blocks, like the
// 16-bit case); D[8 * (l / 16) + r][l % 16].
const MatrixInstruction kGfx1250[] = {
    {"v_wmma_f32_16x16x32_f16", 32, 16, 16, 32, F16, false, false, 16, 8, 8, 8, 16, 8, 8, 16},
    {"v_wmma_f32_16x16x32_bf16", 32, 16, 16, 32, BF16, false, false, 16, 8, 8, 8, 16, 8, 8, 16},
    {"v_wmma_i32_16x16x64_iu8", 32, 16, 16, 64, I8, true, true, 32, 8, 16, 16, 32, 8, 8, 16},
};

// clang-format on

template <size_t N> constexpr size_t countOf(const MatrixInstruction (&)[N]) {
  return N;
}

const Chip kChips[] = {
    {"gfx942", 64, kGfx942, countOf(kGfx942)},
    {"gfx950", 64, kGfx950, countOf(kGfx950)},
    {"gfx1100", 32, kGfx1100, countOf(kGfx1100)},
    {"gfx1201", 32, kGfx1201, countOf(kGfx1201)},
    {"gfx1250", 32, kGfx1250, countOf(kGfx1250)},
};
const Chip *const kChipList[] = {&kChips[0], &kChips[1], &kChips[2], &kChips[3],
                                 &kChips[4]};

/// The integer value of an i8 / i4 element.
int32_t integerValue(uint32_t raw, int bits, bool isUnsigned) {
  if (isUnsigned)
    return int32_t(raw);
  uint32_t sign = 1u << (bits - 1);
  return int32_t(raw ^ sign) - int32_t(sign);
}

float floatValue(uint32_t raw, ElementKind kind) {
  if (kind == ElementKind::F32) {
    float value;
    std::memcpy(&value, &raw, sizeof(value));
    return value;
  }
  return kind == ElementKind::F16 ? decodeF16(uint16_t(raw))
                                  : decodeBF16(uint16_t(raw));
}

std::string elementString(const MatrixInstruction &inst, uint32_t raw,
                          bool isUnsigned) {
  char buffer[48];
  if (inst.integer)
    std::snprintf(buffer, sizeof(buffer), "%d",
                  integerValue(raw, inst.bits(), isUnsigned));
  else
    std::snprintf(buffer, sizeof(buffer), "%g",
                  double(floatValue(raw, inst.input)));
  return buffer;
}

/// The layout functions of one instruction evaluated once: the row-major
/// matrix index of every (lane, element).
struct LayoutTable {
  int16_t a[kMaxLaneElements];
  int16_t b[kMaxLaneElements];
  int16_t d[kMaxLaneElements];
};

void buildLayout(const MatrixInstruction &inst, LayoutTable &table) {
  for (int lane = 0; lane < inst.waveSize; ++lane) {
    for (int i = 0; i < inst.abPerLane; ++i) {
      MatrixPlace pa = inst.aPlace(lane, i), pb = inst.bPlace(lane, i);
      table.a[lane * inst.abPerLane + i] = int16_t(pa.row * inst.k + pa.col);
      table.b[lane * inst.abPerLane + i] = int16_t(pb.row * inst.n + pb.col);
    }
    for (int r = 0; r < inst.cdPerLane; ++r) {
      MatrixPlace pd = inst.dPlace(lane, r);
      table.d[lane * inst.cdPerLane + r] = int16_t(pd.row * inst.n + pd.col);
    }
  }
}

/// The table of `inst`: cached for the instructions of the chip tables,
/// built into `scratch` for others (copies made by tests).
const LayoutTable &layoutOf(const MatrixInstruction &inst,
                            LayoutTable &scratch) {
  static const std::map<const MatrixInstruction *, LayoutTable> cache = [] {
    std::map<const MatrixInstruction *, LayoutTable> tables;
    for (const Chip &chip : kChips)
      for (size_t i = 0; i < chip.instructionCount; ++i)
        buildLayout(chip.instructions[i], tables[&chip.instructions[i]]);
    return tables;
  }();
  auto it = cache.find(&inst);
  if (it != cache.end())
    return it->second;
  buildLayout(inst, scratch);
  return scratch;
}

/// Gathers operand `which` ('A' or 'B') of the wave into `raw` (row-major,
/// K columns for A, N columns for B). Where the half-waves hold copies (RDNA3)
/// false if two lanes hold different values for one element; elsewhere every
/// element has one lane (EmuMatrixTest checks the layouts).
template <int Bits>
bool gather(const MatrixInstruction &inst, const LayoutTable &layout,
            char which, uint32_t flags, const LaneOperands *lanes,
            uint32_t *raw, std::string &error) {
  constexpr int perRegister = 32 / Bits;
  constexpr uint32_t mask = uint32_t((uint64_t(1) << Bits) - 1);
  const int16_t *indices = which == 'A' ? layout.a : layout.b;
  const int perLane = inst.abPerLane;
  if (!inst.duplicated()) {
    for (int lane = 0; lane < inst.waveSize; ++lane) {
      const uint32_t *registers = which == 'A' ? lanes[lane].a : lanes[lane].b;
      const int16_t *laneIndices = &indices[lane * perLane];
      for (int i = 0; i < perLane; ++i)
        raw[laneIndices[i]] =
            (registers[i / perRegister] >> ((i % perRegister) * Bits)) & mask;
    }
    return true;
  }

  int16_t owner[kMaxMatrixElements];
  int columns = which == 'A' ? inst.k : inst.n;
  int count = (which == 'A' ? inst.m : inst.k) * columns;
  std::memset(owner, 0xff, sizeof(owner[0]) * size_t(count));
  for (int lane = 0; lane < inst.waveSize; ++lane) {
    const uint32_t *registers = which == 'A' ? lanes[lane].a : lanes[lane].b;
    for (int i = 0; i < perLane; ++i) {
      int index = indices[lane * perLane + i];
      uint32_t value =
          (registers[i / perRegister] >> ((i % perRegister) * Bits)) & mask;
      if (owner[index] < 0) {
        owner[index] = int16_t(lane);
        raw[index] = value;
        continue;
      }
      if (raw[index] == value)
        continue;
      MatrixPlace p = {index / columns, index % columns};
      bool isUnsigned =
          flags & (which == 'A' ? KILN_EMU_UNSIGNED_A : KILN_EMU_UNSIGNED_B);
      error = std::string(inst.mnemonic) + ": " + which + "[" +
              std::to_string(p.row) + "][" + std::to_string(p.col) +
              "] differs between lane " + std::to_string(owner[index]) + " (" +
              elementString(inst, raw[index], isUnsigned) + ") and lane " +
              std::to_string(lane) + " (" +
              elementString(inst, value, isUnsigned) + ")";
      return false;
    }
  }
  return true;
}

bool gatherOperand(const MatrixInstruction &inst, const LayoutTable &layout,
                   char which, uint32_t flags, const LaneOperands *lanes,
                   uint32_t *raw, std::string &error) {
  switch (inst.bits()) {
  case 32:
    return gather<32>(inst, layout, which, flags, lanes, raw, error);
  case 16:
    return gather<16>(inst, layout, which, flags, lanes, raw, error);
  case 8:
    return gather<8>(inst, layout, which, flags, lanes, raw, error);
  default:
    return gather<4>(inst, layout, which, flags, lanes, raw, error);
  }
}

bool checkFlags(const MatrixInstruction &inst, uint32_t flags,
                std::string &error) {
  const uint32_t known =
      KILN_EMU_UNSIGNED_A | KILN_EMU_UNSIGNED_B | KILN_EMU_CLAMP;
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%x", flags);
  if (flags & ~known) {
    error = std::string(inst.mnemonic) + ": unknown flags " + hex;
    return false;
  }
  if ((flags & (KILN_EMU_UNSIGNED_A | KILN_EMU_UNSIGNED_B)) &&
      !inst.unsignedAllowed) {
    error = std::string(inst.mnemonic) +
            ": the instruction has no unsigned "
            "operands (flags " +
            hex + ")";
    return false;
  }
  if ((flags & KILN_EMU_CLAMP) && !inst.integer) {
    error = std::string(inst.mnemonic) +
            ": clamp is only defined for integer results (flags " + hex + ")";
    return false;
  }
  return true;
}

} // namespace

int MatrixInstruction::bits() const {
  switch (input) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return 16;
  case ElementKind::I8:
    return 8;
  case ElementKind::I4:
    return 4;
  case ElementKind::F32:
    return 32;
  }
  return 32;
}

MatrixPlace MatrixInstruction::aPlace(int lane, int i) const {
  int group = lane / m;
  int kIndex = (i / kChunk) * kBlockStride + group * kGroupStride + i % kChunk;
  return {lane % m, kIndex};
}

MatrixPlace MatrixInstruction::bPlace(int lane, int i) const {
  int group = lane / n;
  int kIndex = (i / kChunk) * kBlockStride + group * kGroupStride + i % kChunk;
  return {kIndex, lane % n};
}

MatrixPlace MatrixInstruction::dPlace(int lane, int r) const {
  int group = lane / n;
  int row = (r / dChunk) * dBlockStride + group * dGroupStride + r % dChunk;
  return {row, lane % n};
}

const Chip *kiln::emu::findChip(const std::string &name) {
  for (const Chip &chip : kChips)
    if (name == chip.name)
      return &chip;
  return nullptr;
}

std::string kiln::emu::chipNames() {
  std::string names;
  for (const Chip &chip : kChips)
    names += std::string(names.empty() ? "" : ", ") + chip.name;
  return names;
}

const Chip *const *kiln::emu::allChips(size_t &count) {
  count = sizeof(kChipList) / sizeof(kChipList[0]);
  return kChipList;
}

const MatrixInstruction *kiln::emu::findInstruction(const Chip &chip,
                                                    const char *mnemonic,
                                                    std::string &error) {
  for (size_t i = 0; i < chip.instructionCount; ++i)
    if (std::strcmp(chip.instructions[i].mnemonic, mnemonic) == 0)
      return &chip.instructions[i];
  std::string names;
  for (size_t i = 0; i < chip.instructionCount; ++i)
    names += std::string(i ? ", " : "") + chip.instructions[i].mnemonic;
  error = std::string("'") + mnemonic + "' is not a matrix instruction of " +
          chip.name + " (emulated: " + names + ")";
  return nullptr;
}

float kiln::emu::decodeF16(uint16_t bits) {
  bool negative = bits & 0x8000;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float value;
  if (exponent == 0)
    value = std::ldexp(float(mantissa), -24); // zero or subnormal
  else if (exponent == 31)
    value = mantissa ? std::numeric_limits<float>::quiet_NaN()
                     : std::numeric_limits<float>::infinity();
  else
    value = std::ldexp(float(mantissa | 0x400), exponent - 25);
  return negative ? -value : value;
}

float kiln::emu::decodeBF16(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

bool kiln::emu::execute(const MatrixInstruction &inst, uint32_t flags,
                        const LaneOperands *lanes, std::string &error) {
  if (!checkFlags(inst, flags, error))
    return false;
  LayoutTable scratch;
  const LayoutTable &layout = layoutOf(inst, scratch);
  uint32_t a[kMaxMatrixElements], b[kMaxMatrixElements];
  if (!gatherOperand(inst, layout, 'A', flags, lanes, a, error) ||
      !gatherOperand(inst, layout, 'B', flags, lanes, b, error))
    return false;

  // C, in D's layout: every element has exactly one owner.
  uint32_t c[kMaxMatrixElements];
  for (int lane = 0; lane < inst.waveSize; ++lane) {
    const auto *laneC = static_cast<const unsigned char *>(lanes[lane].c);
    const int16_t *indices = &layout.d[lane * inst.cdPerLane];
    for (int r = 0; r < inst.cdPerLane; ++r)
      std::memcpy(&c[indices[r]], laneC + 4 * r, 4);
  }

  // Row by row, k outer and columns inner: each element still sums its
  // products in k order, and the column loop vectorizes.
  uint32_t d[kMaxMatrixElements];
  const int bits = inst.bits();
  const int m = inst.m, n = inst.n, k = inst.k;
  if (inst.integer) {
    bool unsignedA = flags & KILN_EMU_UNSIGNED_A;
    bool unsignedB = flags & KILN_EMU_UNSIGNED_B;
    // 8-bit values fit in 16 bits, their products and sums of at most 64 of
    // them in 32: exact, and the loop vectorizes with 16-bit multiplies.
    int16_t av[kMaxMatrixElements], bv[kMaxMatrixElements];
    for (int i = 0; i < m * k; ++i)
      av[i] = int16_t(integerValue(a[i], bits, unsignedA));
    for (int i = 0; i < k * n; ++i)
      bv[i] = int16_t(integerValue(b[i], bits, unsignedB));
    for (int row = 0; row < m; ++row) {
      int32_t sums[kMaxDimension] = {};
      for (int kk = 0; kk < k; ++kk) {
        int32_t value = av[row * k + kk];
        const int16_t *bRow = &bv[kk * n];
        for (int col = 0; col < n; ++col)
          sums[col] += value * int32_t(bRow[col]);
      }
      for (int col = 0; col < n; ++col) {
        int64_t sum = int64_t(int32_t(c[row * n + col])) + sums[col];
        if (flags & KILN_EMU_CLAMP) {
          if (sum > INT32_MAX)
            sum = INT32_MAX;
          if (sum < INT32_MIN)
            sum = INT32_MIN;
        }
        d[row * n + col] = uint32_t(uint64_t(sum)); // wraps
      }
    }
  } else {
    float av[kMaxMatrixElements], bv[kMaxMatrixElements];
    for (int i = 0; i < m * k; ++i)
      av[i] = floatValue(a[i], inst.input);
    for (int i = 0; i < k * n; ++i)
      bv[i] = floatValue(b[i], inst.input);
    for (int row = 0; row < m; ++row) {
      float sums[kMaxDimension];
      std::memcpy(sums, &c[row * n], sizeof(float) * size_t(n));
      for (int kk = 0; kk < k; ++kk) {
        float value = av[row * k + kk];
        const float *bRow = &bv[kk * n];
        for (int col = 0; col < n; ++col) {
          float product = value * bRow[col];
          sums[col] += product;
        }
      }
      std::memcpy(&d[row * n], sums, sizeof(float) * size_t(n));
    }
  }

  for (int lane = 0; lane < inst.waveSize; ++lane) {
    auto *laneD = static_cast<unsigned char *>(lanes[lane].d);
    const int16_t *indices = &layout.d[lane * inst.cdPerLane];
    for (int r = 0; r < inst.cdPerLane; ++r)
      std::memcpy(laneD + 4 * r, &d[indices[r]], 4);
  }
  return true;
}
