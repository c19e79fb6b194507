//===- GPUCodegen.h - dispatch functions -> AMDGPU HSACO --------*- C++ -*-===//
//
// The gfx targets: their table (chips, wave size, LDS, matrix-core
// instructions), the pass pipelines that take outlined dispatch functions to
// a gpu.module in the ROCDL/LLVM dialect, and the emission of the kernels as
// one HSACO (code object v5) linked with ld.lld, with no ROCm install.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_AMDGPU_GPUCODEGEN_H
#define KILN_CODEGEN_AMDGPU_GPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln::gfx {

/// Element types a matrix-core instruction multiplies.
enum class MatrixInput { F16, BF16, I8, I4 };

/// One matrix-core instruction as the amdgpu dialect spells it: D (m x n) +=
/// A (m x k) * B (k x n), each lane holding `perLane` elements of A and of
/// B and `accPerLane` of C/D.
/// Lane layout (m = n = 16, lane l, group g = l / 16):
/// - element i of A's operand in lane l is A[l % 16][kOf(g, i)] and element
///   i of B's is B[kOf(g, i)][l % 16], with
///   kOf(g, i) = g * kGroupStride + (i / kChunk) * kChunkStride + i % kChunk;
/// - element r of C/D in lane l is D[g * dGroupStride + r * dElemStride][l % 16].
/// Element i of an operand vector sits in register i / (32 / bits), bits
/// (i % (32 / bits)) * bits and up, as the amdgpu dialect packs it.
struct MatrixInstruction {
  MatrixInput input;
  bool wmma;            // amdgpu.wmma (RDNA, gfx1250), else amdgpu.mfma
  int64_t m, n, k;
  int64_t perLane;      // A (and B) elements per lane
  int64_t accPerLane;   // C/D elements per lane
  const char *mnemonic; // the ISA instruction it becomes
  int64_t kGroupStride, kChunk, kChunkStride;
  int64_t dGroupStride, dElemStride;

  int64_t kOf(int64_t lane, int64_t i) const {
    return (lane / 16) * kGroupStride + (i / kChunk) * kChunkStride + i % kChunk;
  }
  int64_t dRow(int64_t lane, int64_t r) const {
    return (lane / 16) * dGroupStride + r * dElemStride;
  }
};

struct Target {
  const char *name;               // gfx942
  const char *description;        // MI300X, MI325X (CDNA3)
  std::vector<const char *> chips; // accepted aliases: mi300x, ...
  int64_t waveSize;
  int64_t ldsBytes;               // per workgroup
  std::vector<MatrixInstruction> matrix;

  const MatrixInstruction *instruction(MatrixInput input) const;
};

/// The gfx target named by a gfx name or a chip alias (case-insensitive),
/// or null.
const Target *lookupTarget(llvm::StringRef name);
/// "gfx942 (mi300x, mi325x), gfx950 (...), ..." for diagnostics.
std::string knownTargets();
const std::vector<Target> &allTargets();

enum class Precision { F32, F16, BF16 };

struct GfxOptions {
  const Target *target = nullptr;
  /// Matmuls and convolutions of f32 models run in f32 unless f16/bf16 is
  /// asked for, which converts their operands and uses the matrix cores
  /// (accumulating in f32).
  Precision precision = Precision::F32;
  /// Threads per workgroup of the generic path.
  int64_t workgroupSize = 256;
  /// Testing only: a wiring bug for the GEMM builder to make on purpose
  /// (kiln-gpu-build-gemms' test-fault).
  std::string testFault;
};

/// Dispatch functions in kiln -> linalg on tensors, matrix-core GEMMs built,
/// the rest tiled into per-thread tiles.
void buildLinalgPipeline(mlir::OpPassManager &pm, const GfxOptions &options);
/// Linalg on tensors -> bufferized kernels in a gpu.module (the "gpu" stage).
void buildGpuPipeline(mlir::OpPassManager &pm, const GfxOptions &options);
/// gpu.module -> ROCDL and LLVM dialects (the "llvm" stage).
void buildLLVMPipeline(mlir::OpPassManager &pm, const GfxOptions &options);

struct Kernel {
  std::string name;
  int64_t workgroupCount = 1;
  int64_t workgroupSize = 1;
  int64_t ldsBytes = 0;
};

struct CodeObject {
  std::string target, triple, cpu, features;
  std::string bytes; // HSACO
  std::vector<Kernel> kernels;
};

/// Translates the gpu.module of `module` to LLVM IR, optimizes it for the
/// target, emits an AMDGPU object and links it into a HSACO with ld.lld.
/// `assembly`, when non-null, receives the gfx assembly instead.
/// `codeObject.kernels` must list the kernels in artifact order.
mlir::LogicalResult emitCodeObject(mlir::ModuleOp module, const GfxOptions &options,
                                   CodeObject &codeObject,
                                   std::string *assembly = nullptr);

} // namespace kiln::gfx

#endif // KILN_CODEGEN_AMDGPU_GPUCODEGEN_H
