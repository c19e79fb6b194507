//===- GPUCodegen.h - dispatch functions -> AMDGPU HSACO --------*- C++ -*-===//
//
// The pass pipelines that take outlined dispatch functions to a gpu.module in
// the ROCDL/LLVM dialect (also registered for kiln-opt), and the emission of
// the kernels as one HSACO (code object v5) linked with ld.lld, with no ROCm
// install. The targets themselves (chips, wave size, LDS, matrix-core
// instructions) are the table in targets/GfxTargets.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_AMDGPU_GPUCODEGEN_H
#define KILN_CODEGEN_AMDGPU_GPUCODEGEN_H

#include "targets/GfxTargets.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln::gfx {

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
  /// Testing only: N x N instruction tiles per wave instead of the target
  /// table's (kiln-gpu-build-gemms' test-wave-tiles; 0 keeps the table's).
  int64_t testWaveTiles = 0;
  /// Testing only: the target table's large-GEMM tiling for every GEMM
  /// (kiln-gpu-build-gemms' test-large-tiling).
  bool testLargeTiling = false;
  /// Testing only: the K step schedule (llvm, matrix, interleaved) instead
  /// of the target table's (kiln-gpu-build-gemms' test-step-schedule).
  std::string testStepSchedule;
  /// Testing only: "on" or "off", global loads two steps ahead or one
  /// instead of the target table's choice (kiln-gpu-build-gemms'
  /// test-load-ahead).
  std::string testLoadAhead;
};

/// Dispatch functions in kiln -> linalg on tensors, matrix-core GEMMs built,
/// the rest tiled into per-thread tiles.
void buildLinalgPipeline(mlir::OpPassManager &pm, const GfxOptions &options);
/// Linalg on tensors -> bufferized kernels in a gpu.module (the "gpu" stage).
void buildGpuPipeline(mlir::OpPassManager &pm, const GfxOptions &options);
/// gpu.module -> ROCDL and LLVM dialects (the "llvm" stage).
void buildLLVMPipeline(mlir::OpPassManager &pm, const GfxOptions &options);

/// (registerGfxPipelines in Passes.h registers these three for kiln-opt.)

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
