//===- EmuMatrix.h - Matrix-core instructions on the host -------*- C++ -*-===//
//
// The MFMA (CDNA) and WMMA (RDNA, gfx1250) instructions the emu device runs,
// described independently of the compiler: per chip the wave size, and per
// instruction its shape, element kind, the registers and elements each lane
// holds, and the lane layout as functions (lane, element) -> (row, col) of
// A (M x K), B (K x N) and D (M x N, C the same).
//
// Element i of a lane's A or B operand sits in register i / (32 / bits) at
// bit (i % (32 / bits)) * bits, as in EmuAbi.h. C and D hold one f32 or i32
// per element. Every layout here is one formula with per-instruction
// constants: with g = lane / M (the lane group) and the in-group index
// lane % M giving the row of A, the column of B and the column of D,
//
//   k(lane, i)   = (i / kChunk) * kBlockStride + g * kGroupStride + i % kChunk
//   row(lane, r) = (r / dChunk) * dBlockStride + g * dGroupStride + r % dChunk
//
// (kGroupStride 0: RDNA3 keeps a full copy of A and B in each half-wave).
// Where each chip's constants come from is written next to its table in
// EmuMatrix.cpp.
//
// `execute` gathers a whole wave's operands, checks that duplicated copies
// agree, computes D = C + A * B (f16 and bf16 decoded in software, products
// and sums in f32 in k order; integers exact, wrapping in 32 bits unless
// clamped) and scatters D back to the lanes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_EMUMATRIX_H
#define KILN_RUNTIME_SRC_EMUMATRIX_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::emu {

enum class ElementKind { F16, BF16, I8, I4, F32 };

/// A place in a matrix: A[row][col] is A[m][k], B[row][col] is B[k][n].
struct MatrixPlace {
  int row, col;
};

struct MatrixInstruction {
  const char *mnemonic; // the ISA name, e.g. "v_mfma_i32_16x16x32_i8"
  int waveSize;
  int m, n, k;
  ElementKind input;
  bool integer;         // i32 C/D; f32 otherwise
  bool unsignedAllowed; // iu8/iu4 WMMA: KILN_EMU_UNSIGNED_A/B are valid
  int abPerLane;        // A (and B) elements per lane
  int cdPerLane;        // C (and D) elements per lane
  int kChunk, kGroupStride, kBlockStride;
  int dChunk, dGroupStride, dBlockStride;

  int bits() const;
  /// Registers a lane's A (or B) operand occupies.
  int abRegisters() const { return abPerLane * bits() / 32; }
  /// True if the half-waves hold copies of the same A and B elements.
  bool duplicated() const { return kGroupStride == 0; }

  /// Where element `i` of `lane`'s A operand sits in A (M x K).
  MatrixPlace aPlace(int lane, int i) const;
  /// Where element `i` of `lane`'s B operand sits in B (K x N).
  MatrixPlace bPlace(int lane, int i) const;
  /// Where element `r` of `lane`'s C and D sits in D (M x N).
  MatrixPlace dPlace(int lane, int r) const;
};

/// An emulated chip and its matrix instructions.
struct Chip {
  const char *name; // "gfx942"
  int waveSize;
  const MatrixInstruction *instructions;
  size_t instructionCount;
};

/// The chip named `name` ("gfx942"), or nullptr.
const Chip *findChip(const std::string &name);
/// "gfx942, gfx950, gfx1100, gfx1201, gfx1250".
std::string chipNames();
/// Every emulated chip (for tests).
const Chip *const *allChips(size_t &count);

/// The instruction `mnemonic` of `chip`, or nullptr with `error` naming the
/// mnemonic, the chip and the instructions it has.
const MatrixInstruction *findInstruction(const Chip &chip, const char *mnemonic,
                                         std::string &error);

/// Upper bounds over all instructions (buffer sizes).
constexpr int kMaxAbRegisters = 8;
constexpr int kMaxCdPerLane = 16;
constexpr int kMaxMatrixElements = 32 * 32;
constexpr int kMaxDimension = 32;         // M and N
constexpr int kMaxK = 64;                 // integer sums stay exact in 32 bits
constexpr int kMaxLaneElements = 64 * 16; // wave size * A, B or D per lane

/// One lane's operands: its A and B registers, its C elements (f32 or i32)
/// and where its D elements go.
struct LaneOperands {
  const uint32_t *a;
  const uint32_t *b;
  const void *c;
  void *d;
};

/// Runs `inst` for a whole wave (`lanes` has inst.waveSize entries) with the
/// KILN_EMU_* `flags`. False with `error` set (naming the instruction) for
/// flags the instruction does not take or duplicated copies of an A or B
/// element that differ; then no lane's D is written.
bool execute(const MatrixInstruction &inst, uint32_t flags,
             const LaneOperands *lanes, std::string &error);

/// The value of an f16 / bf16 bit pattern (exact, software only).
float decodeF16(uint16_t bits);
float decodeBF16(uint16_t bits);

} // namespace kiln::emu

#endif // KILN_RUNTIME_SRC_EMUMATRIX_H
