//===- CPUCodegen.h - dispatch functions -> x86-64 shared object -*- C++ -*-===//
//
// The CPU target: pass pipelines that take outlined dispatch functions from
// kiln ops to the LLVM dialect, and the emission of the kernels as one
// x86-64 ELF shared object (one exported entry per dispatch, the workgroup
// ABI of docs/artifact-format.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_CPUCODEGEN_H
#define KILN_CODEGEN_CPU_CPUCODEGEN_H

#include "codegen/common/Passes.h"
#include "codegen/cpu/IntegerDot.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln::cpu {

struct CPUOptions {
  /// LLVM CPU name; "host" picks the compiling machine's CPU and features.
  std::string cpu = "host";
  /// Extra LLVM features ("+avx2,+fma"); with "host", the host's.
  std::string features;
  /// Workgroups to aim for per dispatch.
  int64_t workgroups = 64;
  /// Register tile of the GEMM micro-kernel: rows x f32 lanes (16 x 16 for
  /// AVX-512's 32 zmm registers, 4 x 16 for AVX2's 16 ymm registers).
  int64_t registerRows = 16;
  int64_t vectorWidth = 16;
  /// The wide register tile of float GEMMs with enough columns (8 x 32 on
  /// AVX-512; 0: none).
  int64_t wideRows = 0;
  int64_t wideColumns = 0;
  /// 32-bit lanes of one vector register (16 AVX-512, 8 AVX2).
  int64_t vectorLanes = 16;
  /// The dot-product instructions 8-bit GEMM tiles use (AVX-512 VNNI
  /// vpdpbusd, else vpmaddwd on zmm or ymm).
  DotISA dot = DotISA::None;
};

/// Resolves "host" into the compiling machine's CPU name and features, and
/// picks the register tile and the dot-product instructions from the CPU's
/// features (those LLVM knows for the CPU name, then `features` on top).
void resolveTarget(CPUOptions &options);

/// Dispatch functions in kiln -> linalg on tensors, tiled into workgroups.
void buildLinalgPipeline(mlir::OpPassManager &pm, const CPUOptions &options);
/// Linalg on tensors -> bufferized loops with the kernel ABI -> LLVM dialect.
void buildLLVMPipeline(mlir::OpPassManager &pm, const CPUOptions &options);
/// Registers kiln-cpu-linalg-pipeline, kiln-cpu-llvm-pipeline and
/// kiln-cpu-pipeline (both) with options cpu, features and workgroups.
void registerCPUPipelines();

struct Kernel {
  std::string name;
  std::string symbol;
  int64_t workgroupCount = 1;
  /// The lowered function that computes it: `name`, or the identical
  /// kernel whose code it shares.
  std::string body;
};

struct CodeObject : codegen::HostObject {
  std::vector<Kernel> kernels;
};

/// Translates `module` (dispatch functions in the LLVM dialect, one per
/// kernel, in `kernels` order) to LLVM IR, adds the workgroup-ABI entries,
/// optimizes, emits an object and links it with ld.lld. `assembly`, when
/// non-null, receives the x86-64 assembly instead of linking.
mlir::LogicalResult emitCodeObject(mlir::ModuleOp module,
                                   const CPUOptions &options,
                                   CodeObject &codeObject,
                                   std::string *assembly = nullptr);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_CPUCODEGEN_H
