//===- Passes.h - Code generation shared by every target --------*- C++ -*-===//
//
// The passes (generated from Passes.td next to this file) and helpers that
// the cpu and gfx code generators share: tiling a dispatch into fused tiles,
// the dispatch ABI before bufferization, bufferization itself, the loops ->
// LLVM tail, and emitting and linking an object with lld.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_PASSES_H
#define KILN_CODEGEN_COMMON_PASSES_H

#include "kiln/Passes/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace llvm {
class Function;
class IRBuilderBase;
class Module;
class TargetMachine;
class Type;
class Value;
} // namespace llvm

namespace kiln {

#define GEN_PASS_DECL
#include "codegen/common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/common/Passes.h.inc"

/// FLOPs of a dispatch function, counted by kiln-count-flops (i64).
inline constexpr llvm::StringLiteral kFlopsAttr = "kiln.flops";
/// Workgroup count of a distributed dispatch function (i64).
inline constexpr llvm::StringLiteral kWorkgroupCountAttr = "kiln.workgroup_count";

/// The op whose result a dispatch function returns, looking through
/// reshapes: the consumer that tiling starts from (null when there is none).
mlir::TilingInterface findDispatchConsumer(mlir::func::FuncOp func);

/// Tiles `consumer` by `tiles` (0 = not tiled) into one scf.forall and fuses
/// every producer into the tile; the consumer's uses take the forall's
/// results.
mlir::LogicalResult tileAndFuseIntoForall(mlir::TilingInterface consumer,
                                          llvm::ArrayRef<int64_t> tiles);

/// Marks the im2col gather of a convolution rewritten as a GEMM:
/// `array<i64: OW, KH, KW, SH, SW, DH, DW>`, the output width, the filter's
/// height and width, the strides and the dilations of its window.
inline constexpr llvm::StringLiteral kIm2ColAttr = "kiln.im2col";

/// The window of an im2col gather, read from its kIm2ColAttr.
struct Im2ColWindow {
  int64_t outWidth, kh, kw, sh, sw, dh, dw;

  static std::optional<Im2ColWindow> get(mlir::Operation *op) {
    auto attr = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kIm2ColAttr);
    if (!attr || attr.size() != 7)
      return std::nullopt;
    llvm::ArrayRef<int64_t> v = attr.asArrayRef();
    return Im2ColWindow{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
  }
};

namespace codegen {

/// Dispatch functions on tensors -> memref arguments in, memref arguments
/// out, bufferized (shared by the cpu and gfx pipelines).
void buildBufferizePipeline(mlir::OpPassManager &pm);
/// Loops, vectors and memrefs -> the LLVM dialect for the host (memref
/// arguments as bare pointers): the tail of the cpu pipeline, and of the
/// emulated gfx kernels'.
void buildLoopsToLLVMPipeline(mlir::OpPassManager &pm);

/// An x86-64 ELF shared object and what it was built for.
struct HostObject {
  std::string triple, cpu, features;
  std::string bytes; // ELF shared object
};

/// The host CPU's LLVM name and features ("+avx2,+fma,..."), when `cpu` is
/// "host"; otherwise `cpu` and `features` are left as they are.
void resolveHostCPU(std::string &cpu, std::string &features);

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

/// f32 math.erf as one rational function x P(x^2) / Q(x^2) (Erf.cpp),
/// preferred to MLIR's three-interval approximation in the same pattern
/// set: what every target's code computes for ONNX's Erf and GELU.
void populateErfApproximationPatterns(mlir::RewritePatternSet &patterns);

/// f32 math.exp as a degree-6 polynomial times 2^(n - 1) built from the
/// rounded exponent's bits (Exp.cpp): 15 vector ops where MLIR's takes ~21,
/// within 8e-8 relative. For the CPU (the gfx targets have exp in hardware).
void populateExpApproximationPatterns(mlir::RewritePatternSet &patterns);

/// f32 max / min against a constant that is not NaN (ReLU, Clip, the hard
/// activations) as an ordered compare and a select (Clamps.cpp): the same
/// function, NaN in the other operand passing through, one vmaxps / vminps
/// on x86 where arith.maximumf / minimumf take three instructions.
void populateConstantClampPatterns(mlir::RewritePatternSet &patterns);

/// Translates `module` (LLVM dialect) to LLVM IR for the x86-64 CPU `cpu`
/// with `features` (resolved: not "host"), lets `addEntries` add the entry
/// points of the code object's ABI, optimizes at O3, emits and links a
/// shared object into `object` (or its assembly into `*assembly`).
mlir::LogicalResult
emitHostObject(mlir::ModuleOp module, llvm::StringRef cpu, llvm::StringRef features,
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

} // namespace codegen
} // namespace kiln

#endif // KILN_CODEGEN_COMMON_PASSES_H
