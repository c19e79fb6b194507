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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace llvm {
class Function;
class IRBuilderBase;
class Module;
class Type;
class Value;
class TargetMachine;
} // namespace llvm

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
};

/// Resolves "host" into the compiling machine's CPU name and features, and
/// picks the register tile for the CPU's vector registers.
void resolveTarget(CPUOptions &options);

/// Dispatch functions in kiln -> linalg on tensors, tiled into workgroups.
void buildLinalgPipeline(mlir::OpPassManager &pm, const CPUOptions &options);
/// Dispatch functions on tensors -> memref arguments in, memref arguments
/// out, bufferized (shared by the cpu and gfx pipelines).
void buildBufferizePipeline(mlir::OpPassManager &pm);
/// Linalg on tensors -> bufferized loops with the kernel ABI -> LLVM dialect.
void buildLLVMPipeline(mlir::OpPassManager &pm, const CPUOptions &options);
/// Loops, vectors and memrefs -> the LLVM dialect for the host (memref
/// arguments as bare pointers). The tail of buildLLVMPipeline; the gfx
/// emulator lowers its host kernels with it too.
void buildLoopsToLLVMPipeline(mlir::OpPassManager &pm);

struct Kernel {
  std::string name;
  std::string symbol;
  int64_t workgroupCount = 1;
};

/// An x86-64 ELF shared object and what it was built for.
struct HostObject {
  std::string triple, cpu, features;
  std::string bytes; // ELF shared object
};

struct CodeObject : HostObject {
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

/// Defines the code object entry `void name(ptr, second)` around the lowered
/// kernel `inner` (renamed `name.body`, internal, always inlined): `arguments`
/// emits, into the entry, the values to call `inner` with.
void defineEntry(llvm::Module &module, llvm::Function *inner, const std::string &name,
                 llvm::Type *second,
                 llvm::function_ref<void(llvm::IRBuilderBase &, llvm::Function *entry,
                                         llvm::SmallVectorImpl<llvm::Value *> &args)>
                     arguments);

/// Moves `llvm.loop_annotation` attributes that scf.for carried through the
/// control-flow conversions as discardable attributes onto the loop
/// annotation of the LLVM branch, the only place the translation reads them
/// from (otherwise, e.g., a loop marked not to unroll gets unrolled).
void attachLoopAnnotations(mlir::Operation *root);

/// Translates `module` (LLVM dialect) to LLVM IR for the host CPU of
/// `options`, lets `addEntries` add the entry points of the code object's
/// ABI, optimizes at O3, emits and links a shared object into `object` (or
/// its assembly into `*assembly`).
mlir::LogicalResult
emitHostObject(mlir::ModuleOp module, const CPUOptions &options,
               llvm::function_ref<mlir::LogicalResult(llvm::Module &)> addEntries,
               HostObject &object, std::string *assembly);

/// Emits `llvmModule` for `machine`: its assembly into `*assembly` when
/// given, else an object linked by linkSharedObject into `linked`.
mlir::LogicalResult emitAndLink(mlir::ModuleOp module, llvm::TargetMachine &machine,
                                llvm::Module &llvmModule, std::string &linked,
                                std::string *assembly);

/// Links a relocatable ELF object into a shared object with ld.lld (the one
/// next to LLVM 22): x86-64 kernels, or an AMDGPU HSACO.
mlir::LogicalResult linkSharedObject(mlir::ModuleOp module, llvm::StringRef object,
                                     std::string &out);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_CPUCODEGEN_H
