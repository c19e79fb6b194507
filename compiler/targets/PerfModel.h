//===- PerfModel.h - How fast a gfx kernel runs, estimated ------*- C++ -*-===//
//
// The static performance model behind `kiln-inspect --perf`: an estimate of
// one kernel's time on one chip, from what its ISA and the artifact say.
//
// Inputs, all static:
//   - the kernel's work (the manifest's flops and bytes per dispatch), its
//     grid (workgroups x waves) and its occupancy (Occupancy.h);
//   - its main loop, timed per iteration for one wave (LoopProfile): by LLVM
//     MCA with LLVM's scheduling model where that model is real (CDNA), by
//     Kiln's cost table elsewhere (one issue cycle per instruction, matrix
//     instructions at the clocks their chip's published rate gives);
//   - the product's figures from the target table (GfxTargets.h): CUs,
//     clocks, dense peaks, memory bandwidth, board power.
//
// The model. The loop's iteration takes, per SIMD,
//     T(w) = max(cycles / w, busiest, lds, useful)
// model cycles with w waves resident: `cycles / w` is one wave's latency
// shared by w waves, `busiest` the most used issue resource (shared by the
// waves of a SIMD), `lds` the CU's LDS bandwidth split between its SIMDs,
// and `useful` the matrix pipe's (matrix kernels) or the vector ALU's
// arithmetic cycles. The loop efficiency useful / T(w) scales the chip's
// peak (at the sustained matrix clock where one is known), and so does the
// fraction of SIMDs the grid fills. Compute time is flops over that rate,
// memory time bytes over the vendor's bandwidth, and a fixed launch cost
// stands for the dispatch's overhead; the kernel's time is the largest of
// the three, and the one that set it, or inside the loop the term of T that
// did, is the bound. Memory time takes the lower of the vendor's bandwidth
// and what the grid's loads in flight can draw through the memory latency
// (Little's law: resident waves x one iteration's load bytes / latency), so
// that a kernel with few waves or narrow loads is not credited with the
// whole chip's bandwidth. No MLIR and no LLVM here: kiln-inspect does the ISA
// reading (tools/kiln-inspect/LoopAnalysis.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGETS_PERFMODEL_H
#define KILN_COMPILER_TARGETS_PERFMODEL_H

#include "targets/GfxTargets.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::gfx {

/// One wave's main loop, per iteration, as read from the kernel's ISA.
struct LoopProfile {
  /// False: the kernel has no loop; the figures are one pass of its code.
  bool loop = false;
  /// Where the cycles come from, e.g. "LLVM MCA (gfx942 scheduling model)".
  std::string model;
  uint64_t instructions = 0;
  uint64_t matrixInstructions = 0;
  /// Conditional branches inside the loop besides its back edge.
  uint64_t conditionalBranches = 0;
  uint64_t ldsInstructions = 0, memoryInstructions = 0;
  /// LDS bytes one wave moves per iteration (all lanes active).
  double ldsBytes = 0;
  /// Bytes one wave loads from global memory per iteration (all lanes
  /// active): what it can have in flight at once.
  double globalLoadBytes = 0;
  /// One wave alone, model cycles per iteration.
  double cycles = 0;
  /// Cycles the matrix pipe is busy per iteration.
  double matrixCycles = 0;
  /// Cycles of floating-point vector arithmetic per iteration.
  double vectorFlopCycles = 0;
  /// The most used issue resource and its cycles per iteration.
  double busiestCycles = 0;
  std::string busiest;
  /// Clocks per model cycle (LLVM's CDNA model counts 4-clock passes).
  double clocksPerCycle = 1;
  /// The input type of the loop's matrix instructions, if it has any.
  std::optional<MatrixInput> matrixInput;
  std::string matrixMnemonic;
};

/// What a dispatch asks of its kernel.
struct KernelWork {
  uint64_t flops = 0; // the direct algorithm's, as the manifest counts
  uint64_t bytes = 0; // read and written, as the manifest counts
  uint64_t workgroups = 0;
  uint64_t wavesPerWorkgroup = 1;
  unsigned wavesPerSimd = 0; // the occupancy; 0 when unknown
  std::optional<LoopProfile> loop;
};

enum class Bound {
  MatrixPipe,   // the loop keeps the matrix pipe busy
  VectorAlu,    // the loop keeps the vector ALU busy with arithmetic
  Issue,        // an issue resource (LDS or memory instructions, scalar)
  LdsBandwidth, // the CU's LDS bytes per clock
  Latency,      // one wave's latency, not hidden by enough waves per SIMD
  Grid,         // fewer waves than the chip has SIMDs
  Memory,       // HBM (or GDDR) bandwidth
  MemoryLatency, // too few bytes in flight to cover the memory latency
  Launch,       // the dispatch's fixed cost
  Unknown,
};
const char *boundName(Bound bound);

/// One kernel on one chip, estimated.
struct KernelEstimate {
  bool known = false;
  /// Why there is no estimate, or what was assumed.
  std::string note;
  double seconds = 0;
  double computeSeconds = 0, memorySeconds = 0, launchSeconds = 0;
  /// The bandwidth the memory time was taken at: the product's, or less
  /// when the grid's loads in flight cannot cover the latency.
  double memoryBandwidth = 0;
  bool memoryLatencyBound = false;
  Bound bound = Bound::Unknown;
  /// The product's peak (ops/s at its peak clock) for the kernel's
  /// instructions: a matrix peak, or the fp32 vector peak.
  double peak = 0;
  /// The clock compute was timed at (MHz).
  double clockMHz = 0;
  /// The loop's useful cycles over T(w) at the waves per SIMD used, and
  /// T(1) over the useful cycles (how far one wave is from the bound).
  double loopEfficiency = 0, oneWaveRatio = 0;
  double wavesPerSimd = 0;
  /// The fraction of the chip's SIMDs the grid gives work.
  double gridFill = 0;
  /// Achieved ops/s and its fraction of `peak`.
  double achieved = 0, peakFraction = 0;
};

/// The fixed cost the model charges per dispatch: an assumption (kernel
/// launches queued on one HIP stream, a few microseconds each), not a
/// vendor figure.
constexpr double kLaunchSeconds = 4e-6;

/// The latency of a load from HBM/GDDR the model assumes (not a vendor
/// figure: pointer-chasing microbenchmarks of CDNA3 put unloaded HBM
/// latency in the high hundreds of nanoseconds, more under load). With it,
/// Little's law bounds the bandwidth a grid can draw: the bytes its
/// resident waves have in flight (one main-loop iteration's loads each)
/// per latency.
constexpr double kMemoryLatencySeconds = 800e-9;

/// Kiln's cost table for matrix instructions: the clocks `inst` keeps one
/// SIMD's matrix pipe busy on `product`, from the product's published peak
/// (m*n*k*2 operations over the peak per SIMD and clock), or nullopt.
std::optional<double> matrixInstructionClocks(const Target &target, const Product &product,
                                              const MatrixInstruction &inst);

/// Estimates `work` on `product` (a product of `target`).
KernelEstimate estimateKernel(const Target &target, const Product &product,
                              const KernelWork &work);

} // namespace kiln::gfx

#endif // KILN_COMPILER_TARGETS_PERFMODEL_H
