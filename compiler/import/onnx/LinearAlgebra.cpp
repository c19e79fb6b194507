//===- LinearAlgebra.cpp - ONNX Det -> kiln -------------------------------===//
//
// Det of a batch of n x n matrices is Gaussian elimination with partial
// pivoting, unrolled over the static n: each step finds the pivot row
// (kiln.argmax of the column's magnitudes), swaps it in with one-hot
// selects, eliminates the column below it, and multiplies the pivot (negated
// after a swap) into the determinant. There is no data-dependent control
// flow, so every backend runs it as elementwise ops and small reductions.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The largest matrix Det unrolls its elimination for (each step builds a
/// dozen ops).
static constexpr int64_t kMaxDetSize = 64;

/// `x[:, rows, cols]` of a [batch, r, c] tensor, as half-open ranges.
static Value block(NodeContext &node, Value x, int64_t rowBegin, int64_t rowEnd,
                   int64_t colBegin, int64_t colEnd) {
  int64_t batch = cast<RankedTensorType>(x.getType()).getShape()[0];
  return node.create<SliceOp>(x, ArrayRef<int64_t>{0, rowBegin, colBegin},
                              ArrayRef<int64_t>{batch, rowEnd, colEnd},
                              ArrayRef<int64_t>{1, 1, 1});
}

/// Det (opset 11): [*, n, n] -> [*], computed in f32 for 16-bit floats.
static LogicalResult convertDet(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  if (!isa<FloatType>(type.getElementType()) || rank < 2 ||
      shape[rank - 1] != shape[rank - 2]) {
    node.emitError() << "expected a floating-point tensor of square matrices "
                        "[*, n, n], got "
                     << type;
    return failure();
  }
  int64_t n = shape[rank - 1];
  if (n > kMaxDetSize) {
    node.emitError() << "matrices of " << n << " x " << n
                     << " are larger than the " << kMaxDetSize << " x "
                     << kMaxDetSize << " Det supports";
    return failure();
  }
  ArrayRef<int64_t> batchShape = shape.drop_back(2);
  Type element = type.getElementType();
  OpBuilder &b = node.builder();
  Type compute =
      element.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : element;
  if (n == 0) {
    node.setOutput(0,
                   node.splat(RankedTensorType::get(batchShape, element), 1));
    return success();
  }
  int64_t batch = computeProduct(batchShape);
  // The remaining (n - k) x (n - k) block after k steps; det is the product
  // of the signed pivots so far, [batch, 1, 1].
  Value rest = node.reshape(node.cast(input, compute), {batch, n, n});
  Value det;
  Value zero = node.scalar(compute, 0), one = node.scalar(compute, 1);
  for (int64_t m = n; m > 1; --m) {
    // The pivot row: the first of the largest magnitudes in column 0.
    Value column = block(node, rest, 0, m, 0, 1);
    Value pivotIndex = node.create<ArgMaxOp>(
        node.create<AbsOp>(column), b.getI64IntegerAttr(1), b.getBoolAttr(true),
        b.getBoolAttr(false));
    SmallVector<int64_t> rows = llvm::to_vector(llvm::seq<int64_t>(0, m));
    Value iota = ConstantOp::create(
        b, node.loc(),
        DenseIntElementsAttr::get(
            RankedTensorType::get({1, m, 1}, b.getI64Type()), rows));
    Value isPivot = node.create<EqualOp>(pivotIndex, iota); // [batch, m, 1]
    Value pivotRow = node.create<ReduceSumOp>(
        node.create<SelectOp>(isPivot, rest, zero), b.getDenseI64ArrayAttr({1}),
        b.getBoolAttr(true)); // [batch, 1, m]
    // Rows 1.. after the swap: the pivot row's place gets row 0.
    Value below = node.create<SelectOp>(block(node, isPivot, 1, m, 0, 1),
                                        block(node, rest, 0, 1, 0, m),
                                        block(node, rest, 1, m, 0, m));
    Value pivot = block(node, pivotRow, 0, 1, 0, 1);
    // A zero pivot means the column is zero and det is 0: divide by 1
    // instead, so that no NaN appears.
    Value safePivot = node.create<SelectOp>(node.create<EqualOp>(pivot, zero),
                                            one, pivot);
    Value factors = node.create<DivOp>(block(node, below, 0, m - 1, 0, 1),
                                       safePivot);
    rest = node.create<SubOp>(
        block(node, below, 0, m - 1, 1, m),
        node.create<MulOp>(factors, block(node, pivotRow, 0, 1, 1, m)));
    Value swapped = node.create<NotOp>(
        node.create<EqualOp>(pivotIndex, node.scalar(b.getI64Type(), 0)));
    Value signedPivot =
        node.create<SelectOp>(swapped, node.create<NegOp>(pivot), pivot);
    det = det ? node.create<MulOp>(det, signedPivot) : signedPivot;
  }
  det = det ? node.create<MulOp>(det, rest) : rest;
  node.setOutput(0, node.cast(node.reshape(det, batchShape), element));
  return success();
}

void onnx_import::registerLinearAlgebraPatterns(PatternRegistry &r) {
  r.add("Det", 11, convertDet);
}
