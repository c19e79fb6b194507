//===- GfxTargets.h - The gfx targets Kiln compiles for ---------*- C++ -*-===//
//
// One table of the AMD gfx targets, read by the compiler (the GEMM builder
// takes its instruction, tile shapes and LDS limit from it) and by
// kiln-inspect (the occupancy model). Per target: its names, wave size, the
// resources that limit occupancy (VGPR file, LDS per workgroup and per
// CU/WGP with their allocation granules, workgroup slots), the matrix-core
// instructions with their shapes and lane layouts, and the products built on
// it with the figures a roofline needs (CUs, clock, peak dense rates,
// memory bandwidth, board power). Where every number comes from is written
// next to it in GfxTargets.cpp; a figure without a public source is left
// unknown (std::nullopt).
//
// No MLIR and no LLVM here: kiln-inspect links this library without MLIR.
// The runtime's emulator keeps its own instruction table on purpose
// (runtime/src/EmuMatrix.cpp, an independent oracle); GfxTargetsTest checks
// the two tables and AMD's reference layouts agree.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGETS_GFXTARGETS_H
#define KILN_COMPILER_TARGETS_GFXTARGETS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::gfx {

/// Element types a matrix-core instruction multiplies.
enum class MatrixInput { F16, BF16, I8, I4, F32 };

/// Bits of one element of `input`.
int bitsOf(MatrixInput input);

/// One matrix-core instruction as the amdgpu dialect spells it: D (m x n) +=
/// A (m x k) * B (k x n), each lane holding `perLane` elements of A and of
/// B and `accPerLane` of C/D.
///
/// Lane layout. With g = lane / m (the lane group) and lane % m giving the
/// row of A, the column of B and the column of D:
///   element i of A in lane l is A[l % m][kOf(l, i)], of B B[kOf(l, i)][l % m],
///     kOf(l, i) = (i / kChunk) * kBlockStride + g * kGroupStride + i % kChunk;
///   element r of C/D in lane l is D[dRow(l, r)][l % m],
///     dRow(l, r) = (r / dChunk) * dBlockStride + g * dGroupStride + r % dChunk.
/// kGroupStride 0: RDNA3 keeps a full copy of A and B in each half-wave.
/// Element i of an operand vector sits in register i / (32 / bits), bits
/// (i % (32 / bits)) * bits and up, as the amdgpu dialect packs it.
struct MatrixInstruction {
  MatrixInput input;
  bool wmma; // amdgpu.wmma (RDNA, gfx1250), else amdgpu.mfma
  int64_t m, n, k;
  int64_t perLane;      // A (and B) elements per lane
  int64_t accPerLane;   // C/D elements per lane
  const char *mnemonic; // the ISA instruction it becomes (as LLVM 22 prints it)
  int64_t kChunk, kGroupStride, kBlockStride;
  int64_t dChunk, dGroupStride, dBlockStride;

  int64_t group(int64_t lane) const { return lane / m; }
  int64_t kOf(int64_t lane, int64_t i) const {
    return (i / kChunk) * kBlockStride + group(lane) * kGroupStride + i % kChunk;
  }
  /// The row of D element `r` in lane group 0 (dRow adds the group's part).
  int64_t dRowOffset(int64_t r) const { return (r / dChunk) * dBlockStride + r % dChunk; }
  int64_t dRow(int64_t lane, int64_t r) const { return dRowOffset(r) + group(lane) * dGroupStride; }
};

/// How the GEMM builder tiles a workgroup's output: wavesM x wavesN waves,
/// each computing waveTilesM x waveTilesN instruction tiles, and K steps of
/// `stepInstructions` instructions (the LDS panels hold one step).
/// How the GEMM builder asks LLVM to schedule a K step's instructions
/// (GemmBuilder.cpp, scheduleStep); each tiling picks per operand width what
/// measured fastest (kiln-inspect --perf on the 4096^3 GEMMs).
enum class StepSchedule {
  Llvm,        // LLVM's own schedule
  Matrix,      // the first fragments, then one matrix instruction per group
  Interleaved, // each matrix instruction with LDS reads, then ALU and stores
};

/// "llvm", "matrix", "interleaved"; nullopt for anything else.
std::optional<StepSchedule> parseStepSchedule(std::string_view name);

struct GemmTiling {
  int64_t wavesM, wavesN;
  int64_t waveTilesM, waveTilesN;
  int64_t stepInstructions;
  StepSchedule schedule16 = StepSchedule::Llvm; // 16- and 32-bit operands
  StepSchedule schedule8 = StepSchedule::Llvm;  // 8- and 4-bit operands
  /// Whether a K step's global loads are issued two steps ahead, held in
  /// registers through one step (GemmBuilder.cpp, mainLoop), instead of
  /// one step ahead and stored at the end of the step that issued them.
  bool loadAhead16 = true, loadAhead8 = true;
  /// Whether plain products take the target's 32 x 32 instruction (CDNA's
  /// MFMA) instead of its 16 x 16 one, each in place of 2 x 2 of the
  /// tiling's instruction tiles: half the matrix instructions for the same
  /// wave tile, each twice as long, which frees issue slots for the loads
  /// and LDS traffic between them (GemmBuilder.cpp).
  bool wide16 = false, wide8 = false;
};

/// A product built on a target, with the figures of a roofline model. Each
/// is the vendor's peak (dense, no sparsity) or unknown.
struct Product {
  const char *name; // "MI300X"
  std::optional<int64_t> computeUnits;
  std::optional<int64_t> peakClockMHz;
  std::optional<double> f16Tflops, bf16Tflops; // dense matrix peak
  std::optional<double> int8Tops;              // dense matrix peak
  std::optional<double> memoryGB;
  std::optional<double> memoryBandwidthGBs;
  std::optional<int64_t> boardPowerW;
  std::optional<double> f32Tflops; // vector ALU peak (FMA = 2 flops)
  /// The engine clock public measurements report under sustained matrix
  /// load, where it is far below the peak clock (MI300X); unknown elsewhere.
  std::optional<int64_t> sustainedMatrixClockMHz;

  /// The dense peak for `input` in operations per second, if known.
  std::optional<double> matrixPeak(MatrixInput input) const;
};

/// What the performance model (PerfModel.h) needs of a target beyond
/// occupancy: how the ISA's main loop is timed and what LDS delivers.
struct PerfFigures {
  int64_t simdsPerCU; // SIMDs of one CU (RDNA: 2, a WGP has 4)
  /// LDS bytes per clock one CU's LDS delivers; 0 when no public figure.
  int64_t ldsBytesPerClock;
  /// Clocks per cycle of LLVM's scheduling model for this target, when
  /// kiln-inspect may time loops with it (LLVM MCA). 0: the model carries
  /// placeholder latencies for this target, and Kiln's own cost table
  /// (PerfModel.h) is used instead.
  int64_t mcaCycleClocks;
};

struct Target {
  const char *name;                // gfx942
  const char *family;              // CDNA3
  const char *description;         // MI300X, MI325X (CDNA3)
  std::vector<const char *> chips; // accepted aliases: mi300x, ...
  int64_t waveSize;                // the native (default) wavefront size

  // Occupancy (see Occupancy.h).
  int64_t maxWavesPerSimd;
  /// VGPRs per lane one SIMD holds for waves of `waveSize`, and the
  /// allocation granule (on CDNA3/4 VGPRs and AGPRs share this file).
  int64_t vgprFile, vgprGranule;
  /// A kernel compiled for wave64 on this wave32 target gets half the file
  /// at half the granule (RDNA3/4); false when wave64 is not modeled.
  bool wave64HalvesFile;
  /// VGPRs and AGPRs share `vgprFile`, and .vgpr_count includes the AGPRs.
  bool agprsInVgprs;
  /// gfx9 limits waves by SGPRs (LLVM's getOccupancyWithNumSGPRs table).
  bool sgprsLimit;
  /// The block whose SIMDs share LDS and workgroup slots: a CU, or a WGP
  /// (two CUs) in the WGP mode RDNA kernels are compiled for by default.
  const char *ldsBlock;
  int64_t simdsPerBlock;
  int64_t ldsPerBlock;        // bytes the block's workgroups share
  int64_t ldsPerWorkgroup;    // the most one workgroup may allocate
  int64_t ldsGranule;         // allocation granule in bytes
  int64_t workgroupsPerBlock; // barrier-limited workgroup slots
  /// Figures not yet backed by a public ISA guide (LLVM's model only).
  bool provisional;

  std::vector<MatrixInstruction> matrix;
  GemmTiling gemm;
  std::vector<Product> products;
  PerfFigures perf;
  /// The tiling for large GEMMs (wavesM 0: none): chosen when the grid of
  /// its larger tiles still gives every CU of the target's largest product
  /// `largeGemmWorkgroupsPerCU` workgroups (gemmTiling()).
  GemmTiling largeGemm = {0, 0, 0, 0, 0};
  int64_t largeGemmWorkgroupsPerCU = 0;
  /// Whether W4A16 kernels (4-bit weights dequantized while staged) take
  /// the large tiling too: on gfx1100, whose WMMA fragments hold every
  /// element twice, they spilled 223 VGPRs with it.
  bool largeGemmW4A16 = true;

  /// The instruction the GEMM builder uses for `input`: the 16 x 16 one
  /// with the largest K, or null when the target has none.
  /// `size` 32: the 32 x 32 one (CDNA's MFMA; null on targets without).
  const MatrixInstruction *gemmInstruction(MatrixInput input, int64_t size = 16) const;
  /// The instruction named `mnemonic`, or null.
  const MatrixInstruction *instruction(std::string_view mnemonic) const;
  /// The large tiling for GEMMs computed with `inst` (`w4a16`: B from
  /// 4-bit weights dequantized while staged), or null: none on the target,
  /// or W4A16 where `largeGemmW4A16` is false.
  const GemmTiling *largeTiling(const MatrixInstruction &inst, bool w4a16 = false) const;
  /// The CUs of the target's largest product; for a target none of whose
  /// products has a published size (gfx1250), of the largest chip in the
  /// table.
  int64_t largestComputeUnits() const;
  /// The GEMM builder's tiling for a batch x m x n output computed with
  /// `inst`: the large tiling when the GEMM is large enough, else `gemm`.
  const GemmTiling &gemmTiling(const MatrixInstruction &inst, int64_t batch, int64_t m,
                               int64_t n, bool w4a16 = false) const;
};

/// Every gfx target, in the order diagnostics list them.
const std::vector<Target> &allTargets();
/// The gfx target named by a gfx name or a chip alias (case-insensitive),
/// or null.
const Target *lookupTarget(std::string_view name);
/// "gfx942 (mi300x, mi300a, ...), gfx950 (...), ..." for diagnostics.
std::string knownTargets();
/// "gfx942, gfx950, ..." for messages.
std::string knownTargetNames();

} // namespace kiln::gfx

#endif // KILN_COMPILER_TARGETS_GFXTARGETS_H
