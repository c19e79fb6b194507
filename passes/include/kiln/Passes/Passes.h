//===- Passes.h - Kiln passes -----------------------------------*- C++ -*-===//
//
// Declarations of every Kiln pass (generated from Passes.td) and the
// registration used by kiln-opt and kiln-compile.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Passes/Passes.h.inc"

/// Attribute on functions outlined from kiln.dispatch regions.
inline constexpr llvm::StringLiteral kDispatchAttr = "kiln.dispatch";
/// Workgroup count of a distributed dispatch function (i64).
inline constexpr llvm::StringLiteral kWorkgroupCountAttr = "kiln.workgroup_count";
/// Arena offset of the value an op of @main produces (i64).
inline constexpr llvm::StringLiteral kArenaOffsetAttr = "kiln.arena_offset";
/// Arena offsets of @main's arguments (array of i64), and the arena size.
inline constexpr llvm::StringLiteral kInputOffsetsAttr = "kiln.input_offsets";
inline constexpr llvm::StringLiteral kArenaSizeAttr = "kiln.arena_size";
/// Bytes of a tensor at run time (row-major, one byte per i1).
uint64_t storageBytes(mlir::RankedTensorType type);

/// A constant's row-major bytes where they can be read in place (weight
/// blobs, non-splat dense attributes of byte-sized elements), else nullopt.
std::optional<llvm::ArrayRef<char>> rawConstantBytes(mlir::ElementsAttr value);

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

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
