//===- KilnToLinalg.h - kiln -> linalg/tensor/arith lowering ----*- C++ -*-===//
//
// Pattern sets that lower kiln ops to upstream dialects on tensors, one per
// op family (one .cpp each), and the helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_KILNTOLINALG_H
#define KILN_LOWERING_KILNTOLINALG_H

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {

void populateElementwiseLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateMatmulLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateConvLoweringPatterns(mlir::RewritePatternSet &patterns);
void populatePoolingLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateReductionLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateNormalizationLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateDataMovementLoweringPatterns(mlir::RewritePatternSet &patterns);

namespace lowering {

/// `tensor.empty` of a static shaped type.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type);

/// A tensor of `type` filled with `value` (a scalar of the element type).
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);

/// Scalar constant of `type` (float or integer) holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// Indexing map reading an operand of `shape` inside a loop nest over
/// `resultShape` with numpy broadcasting (trailing dimensions aligned,
/// size-1 dimensions that broadcast read index 0).
mlir::AffineMap broadcastMap(mlir::MLIRContext *ctx,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> resultShape);

using ScalarBuilder = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A parallel `linalg.generic` computing `resultType` elementwise from
/// `operands` (which broadcast to it); `body` receives one scalar per
/// operand and returns the result scalar. Unsigned operands and results are
/// computed on as signless integers of the same width (`body` sees and
/// returns signless scalars).
mlir::Value elementwise(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType resultType,
                        mlir::ValueRange operands, ScalarBuilder body);

/// Converts a scalar between element types with ONNX Cast semantics.
/// Scalars in linalg bodies are signless: `fromUnsigned` says that `value`
/// holds an unsigned integer (zero-extended, `uitofp`), and an unsigned `to`
/// (`ui8`...) yields its signless equivalent, converted as unsigned
/// (`fptoui`).
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::Type to,
                          bool fromUnsigned = false);

/// Whether `type` (a scalar or a shaped type) has unsigned integer elements.
bool hasUnsignedElements(mlir::Type type);

/// `type` with unsigned (or signed) integer elements replaced by signless
/// integers of the same width; other types unchanged.
mlir::Type signlessType(mlir::Type type);

/// `value` reinterpreted with `type` (same shape, element types of the same
/// width, one of them signless): an unrealized conversion cast, which the
/// pass folds away when it erases signedness at its end.
mlir::Value reinterpret(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value value, mlir::Type type);

/// The body of a contraction generic accumulating in `elem`:
/// yield acc + convert(x) * convert(y), with args = (x, y, acc).
/// `x` is zero-extended when `lhsUnsigned` (raw uint8 activations).
void multiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange args,
                        mlir::Type elem, bool lhsUnsigned = false);

/// Reassociation that collapses `from` into `to` when the reshape only merges
/// or splits adjacent dimensions (failure otherwise).
std::optional<llvm::SmallVector<mlir::ReassociationIndices>>
reshapeReassociation(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// Reshape of a static tensor: collapse_shape/expand_shape when possible,
/// tensor.reshape otherwise.
mlir::Value reshapeTensor(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::RankedTensorType to);

/// A 1-d i64 `DenseIntElementsAttr` (the strides and dilations of named
/// linalg convolution and pooling ops).
mlir::DenseIntElementsAttr i64Vector(mlir::OpBuilder &b,
                                     llvm::ArrayRef<int64_t> values);

/// `tensor.pad` of `source` by the static, non-negative `low` and `high`
/// amounts (one per dimension) with the scalar `padValue`; `source` itself
/// when nothing is padded.
mlir::Value padTensor(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value source, llvm::ArrayRef<int64_t> low,
                      llvm::ArrayRef<int64_t> high, mlir::Value padValue);

/// The smallest value of `type`: `-inf`, the signed minimum, or `false` for
/// `i1` (the identity of a max reduction). Exact for every integer width,
/// unlike `scalarConstant`, which goes through a double.
mlir::Value lowestValue(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Type type);

/// The largest value of `type`: `+inf`, the signed maximum, or `true` for
/// `i1` (the identity of a min reduction).
mlir::Value highestValue(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type type);

/// Scalar maximum / minimum with kiln semantics: NaN-propagating for floats,
/// signed for integers (unsigned with `isUnsigned`), or/and for `i1`.
mlir::Value maxScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      mlir::Value y, bool isUnsigned = false);
mlir::Value minScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      mlir::Value y, bool isUnsigned = false);

/// `linalg.generic` iterator types: `parallel` for every loop except those
/// listed in `reductionLoops`.
llvm::SmallVector<mlir::utils::IteratorType>
iteratorTypes(unsigned loops, llvm::ArrayRef<int64_t> reductionLoops = {});

/// `value`, a tensor of 8-bit integers (`i8` signed, `ui8` unsigned), as
/// `i32` with `zeroPoint` (same element type; null for none) subtracted: one
/// elementwise `linalg.generic` that extends each element by its signedness.
/// The zero point broadcasts to `value`'s shape (numpy rules), or with
/// `zeroPointAxis` >= 0 it is 1-D and runs along that dimension. The operand
/// of an integer contraction, whose linalg op then multiplies and adds in
/// `i32`.
mlir::Value widenInteger(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value value, mlir::Value zeroPoint,
                         int64_t zeroPointAxis = -1);

/// The value of an integer contraction operand's zero point when it is the
/// same for every element: 0 for none, the splat of a constant (extended by
/// the operand's signedness). std::nullopt for a per-channel or computed one.
std::optional<int64_t> uniformZeroPoint(mlir::Value zeroPoint);

/// `acc - zeroPoint * sum_k(weights)`: the correction that turns a
/// contraction of raw 8-bit activations by `weights` into one of activations
/// with `zeroPoint` subtracted, sum(x - z) * w = sum(x * w) - z * sum(w).
/// `acc` is an i32 tensor; `weights` is the signed i8 operand, summed along
/// its dimension `kDim`; the sums are reshaped to `sumShape` (as many
/// elements) and broadcast against `acc` numpy-style: [F, 1, 1] for the
/// filter of an [N, F, H, W] convolution, [.., 1, N] for the [.., K, N] rhs of
/// a matmul. `acc` itself when `zeroPoint` is 0.
mlir::Value subtractZeroPointSums(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value acc, mlir::Value weights,
                                  int64_t kDim, llvm::ArrayRef<int64_t> sumShape,
                                  int64_t zeroPoint);

/// Fails the match unless every tensor operand and result of `op` has a
/// static shape, with an error on `op` that says so (more than the
/// conversion's "failed to legalize").
mlir::LogicalResult requireStaticShapes(mlir::Operation *op);

/// Fails the match, with an error on `op`, unless `elementType` is a float
/// or a signless integer: the types arith computes on (`ui8` and friends
/// need a conversion to signless types first).
mlir::LogicalResult requireArithmeticType(mlir::Operation *op,
                                          mlir::Type elementType);

} // namespace lowering
} // namespace kiln

#endif // KILN_LOWERING_KILNTOLINALG_H
