//===- Passes.h - AMD gfx code generation passes ----------------*- C++ -*-===//
//
// Declarations of the gfx code generation passes (generated from Passes.td
// next to this file) and the attributes they leave on kernel functions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_AMDGPU_PASSES_H
#define KILN_CODEGEN_AMDGPU_PASSES_H

#include "codegen/common/Passes.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {

#define GEN_PASS_DECL
#include "codegen/amdgpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/amdgpu/Passes.h.inc"

/// Threads per workgroup of a gfx dispatch function (i64), and the number of
/// per-thread tiles it computes (i64; threads past it idle).
inline constexpr llvm::StringLiteral kWorkgroupSizeAttr = "kiln.workgroup_size";
inline constexpr llvm::StringLiteral kThreadTilesAttr = "kiln.thread_tiles";
/// A kernel function's LDS bytes (i64), set by the gfx GEMM builder.
inline constexpr llvm::StringLiteral kLdsBytesAttr = "kiln.lds_bytes";
/// The matrix-core instruction a gfx GEMM kernel is built around (string).
inline constexpr llvm::StringLiteral kMatrixInstructionAttr = "kiln.matrix_instruction";
/// Marks a memref.alloca that is workgroup memory (LDS) of a gfx kernel.
inline constexpr llvm::StringLiteral kWorkgroupMemoryAttr = "kiln.workgroup_memory";

namespace gfx {
struct Target;
/// The target a kernel-building pass on dispatch function `func` builds for:
/// null when `func` is no dispatch or another builder already built it
/// (it has a workgroup count), or when `chip` names no gfx target, which is
/// then an error on `func` (`failed` set).
const Target *builderTarget(mlir::func::FuncOp func, llvm::StringRef chip, bool &failed);
/// `memref` seen through `reshapes` (tensor.collapse_shape /
/// tensor.expand_shape ops, first to last), as memref views.
mlir::Value reshapeMemref(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref,
                          llvm::ArrayRef<mlir::Operation *> reshapes);

/// Registers the gfx pipelines of GPUCodegen.h for kiln-opt:
/// --kiln-gfx-linalg-pipeline, --kiln-gfx-gpu-pipeline,
/// --kiln-gfx-llvm-pipeline and --kiln-gfx-pipeline (the three in a row),
/// each taking chip=<gfx target or chip name> (gfx942),
/// precision=f32|f16|bf16 (f32) and workgroup-size=<threads of the generic
/// path> (256).
void registerGfxPipelines();
} // namespace gfx

} // namespace kiln

#endif // KILN_CODEGEN_AMDGPU_PASSES_H
