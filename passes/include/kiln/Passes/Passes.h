//===- Passes.h - Kiln graph-level passes -----------------------*- C++ -*-===//
//
// Declarations of the graph-level passes on kiln IR (generated from
// Passes.td): dispatch formation, weight layouts, outlining, memory planning,
// and the stage contract they leave for code generation. Nothing here knows
// about a target: the lowering and each code generator have their own
// Passes.h next to their sources.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Passes/Passes.h.inc"

/// Attribute on functions outlined from kiln.dispatch regions.
inline constexpr llvm::StringLiteral kDispatchAttr = "kiln.dispatch";
/// A constant's row-major bytes where they can be read in place (weight
/// blobs, non-splat dense attributes of byte-sized elements), else nullopt.
std::optional<llvm::ArrayRef<char>> rawConstantBytes(mlir::ElementsAttr value);
/// The elements of an f32 constant (dense, splat or a blob), else nullopt.
std::optional<std::vector<float>> f32ConstantValues(ConstantOp cst);
/// The filter values of a 2-d kiln.conv of static f32 tensors, one group
/// and a constant kh x kw filter, else nullopt.
std::optional<std::vector<float>> constantFilterOfConv2d(ConvOp conv, int64_t kh, int64_t kw);
/// A kiln.reshape of `value` to `shape` (same element type).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> shape);
/// A constant of `type` holding `bytes`: a blob named `blobName` when large
/// (as the importer stores weights), else a dense attribute.
mlir::Value bytesConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                          llvm::ArrayRef<char> bytes, llvm::StringRef blobName);
/// The row-major bytes of a tensor of shape `inShape` (elements of
/// `elemSize` bytes) transposed by `perm`: output dimension d is input
/// dimension perm[d].
std::vector<char> permuteBytes(llvm::ArrayRef<char> bytes, size_t elemSize,
                               llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> perm);
/// Erases `root` when it has no user, then every pure producer left
/// without one, from the end (the rest of a chain a raise pass replaced).
void eraseDeadChain(mlir::Operation *root);

/// The op of type OpT defining `v` when `v` has exactly one use, else a
/// null op (the links of a chain a raise pass matches).
template <typename OpT>
OpT singleUseDef(mlir::Value v) {
  auto op = v.getDefiningOp<OpT>();
  return op && v.hasOneUse() ? op : OpT();
}

/// Whether kiln-form-dispatches fuses `op` as an elementwise op (into the
/// epilogue of the contraction whose result it reads, among others).
bool isElementwiseOp(mlir::Operation *op);
/// The ONNX node name of an op's location (the importer's NameLoc, also
/// inside a fused location), or "".
llvm::StringRef nodeNameOf(mlir::Location loc);

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
