//===- Matmul.cpp - ONNX MatMul, Gemm and MatMulInteger -> kiln -----------===//
//
// MatMul follows numpy: 1-D operands are promoted to matrices and the added
// dimension is dropped again. Gemm becomes transposes, kiln.matmul, and the
// alpha/beta-scaled bias add. MatMulInteger (the same promotion) becomes
// kiln.matmul_integer, its zero points in the shapes that op takes.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Checks operand element types and contraction sizes with a message that
/// names the node, then emits kiln.matmul.
/// The shape rules of a (batched) matrix product of l by r: the contraction
/// dimensions agree and the batch dimensions broadcast.
static LogicalResult checkProductShapes(NodeContext &node, RankedTensorType l,
                                        RankedTensorType r) {
  if (l.getShape().back() != r.getShape()[r.getRank() - 2]) {
    node.emitError() << "cannot multiply " << l << " by " << r
                     << ": the contraction dimensions differ";
    return failure();
  }
  if (failed(broadcastShapes(l.getShape().drop_back(2),
                             r.getShape().drop_back(2)))) {
    node.emitError() << "batch dimensions of " << l << " and " << r
                     << " do not broadcast";
    return failure();
  }
  return success();
}

static FailureOr<Value> matmul(NodeContext &node, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getElementType() != r.getElementType()) {
    node.emitError() << "operand element types differ: " << l << " and " << r;
    return failure();
  }
  if (failed(checkProductShapes(node, l, r)))
    return failure();
  return node.create<MatmulOp>(lhs, rhs);
}

/// Numpy's matmul promotion of 1-D operands, around `multiply` (which gets
/// and returns operands of rank 2 or more): a vector `lhs` becomes a `[1, K]`
/// matrix, a vector `rhs` a `[K, 1]` one, and the added dimensions are
/// dropped from the product again.
static LogicalResult
convertVectorPromoted(NodeContext &node,
                      function_ref<FailureOr<Value>(Value, Value)> multiply) {
  Value lhs = node.input(0), rhs = node.input(1);
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getRank() == 0 || r.getRank() == 0) {
    node.emitError() << "operands must have rank 1 or more";
    return failure();
  }
  bool vectorLhs = l.getRank() == 1, vectorRhs = r.getRank() == 1;
  if (vectorLhs)
    lhs = node.reshape(lhs, {1, l.getShape()[0]});
  if (vectorRhs)
    rhs = node.reshape(rhs, {r.getShape()[0], 1});
  FailureOr<Value> product = multiply(lhs, rhs);
  if (failed(product))
    return failure();
  Value result = *product;
  if (vectorLhs || vectorRhs) {
    auto shape = SmallVector<int64_t>(
        cast<RankedTensorType>(result.getType()).getShape());
    if (vectorRhs)
      shape.pop_back();
    if (vectorLhs)
      shape.erase(shape.end() - (vectorRhs ? 1 : 2));
    result = node.reshape(result, shape);
  }
  node.setOutput(0, result);
  return success();
}

static LogicalResult convertMatMul(NodeContext &node) {
  return convertVectorPromoted(
      node, [&](Value lhs, Value rhs) { return matmul(node, lhs, rhs); });
}

/// The zero point of MatMulInteger's operand `index` (0: A, 1: B) in the form
/// kiln.matmul_integer takes: a per-row vector `[M]` of A becomes `[M, 1]`, a
/// one-element vector a scalar; null when absent. `operand` is the (promoted)
/// operand, for the error message.
static FailureOr<Value> matmulZeroPoint(NodeContext &node, unsigned index,
                                        Value operand) {
  unsigned input = index + 2;
  if (!node.hasInput(input))
    return Value();
  Value zp = node.input(input);
  auto type = cast<RankedTensorType>(zp.getType());
  auto operandType = cast<RankedTensorType>(operand.getType());
  StringRef name = index == 0 ? "a_zero_point" : "b_zero_point";
  if (type.getElementType() != operandType.getElementType()) {
    node.emitError() << name << " element type " << type.getElementType()
                     << " differs from " << (index == 0 ? "A" : "B")
                     << " element type " << operandType.getElementType();
    return failure();
  }
  if (type.getRank() == 1 && type.getShape()[0] == 1)
    return node.reshape(zp, {});
  if (index == 0 && type.getRank() == 1)
    zp = node.reshape(zp, {type.getShape()[0], 1});
  // Broadcasts to the operand with size 1 along K (see the op's verifier).
  ArrayRef<int64_t> shape = cast<RankedTensorType>(zp.getType()).getShape(),
                    full = operandType.getShape();
  int64_t offset = (int64_t)full.size() - (int64_t)shape.size();
  int64_t k = index == 0 ? full.size() - 1 : full.size() - 2;
  auto broadcast = broadcastShapes(shape, full);
  if (offset < 0 || failed(broadcast) ||
      ArrayRef<int64_t>(*broadcast) != full ||
      (k >= offset && shape[k - offset] != 1)) {
    node.emitError() << name << " of type " << type
                     << " is neither a scalar nor "
                     << (index == 0 ? "one value per row"
                                    : "one value per column")
                     << " of " << (index == 0 ? "A " : "B ") << operandType;
    return failure();
  }
  return zp;
}

/// MatMulInteger: 8-bit operands (each int8 or uint8) and optional zero
/// points, an int32 product (kiln.matmul_integer).
static LogicalResult convertMatMulInteger(NodeContext &node) {
  return convertVectorPromoted(
      node, [&](Value lhs, Value rhs) -> FailureOr<Value> {
        auto l = cast<RankedTensorType>(lhs.getType());
        auto r = cast<RankedTensorType>(rhs.getType());
        for (RankedTensorType t : {l, r})
          if (!t.getElementType().isInteger(8)) {
            node.emitError() << "operands must be int8 or uint8 tensors, got "
                             << l << " and " << r;
            return failure();
          }
        if (failed(checkProductShapes(node, l, r)))
          return failure();
        FailureOr<Value> lhsZp = matmulZeroPoint(node, 0, lhs);
        FailureOr<Value> rhsZp = matmulZeroPoint(node, 1, rhs);
        if (failed(lhsZp) || failed(rhsZp))
          return failure();
        return node.create<MatmulIntegerOp>(lhs, rhs, *lhsZp, *rhsZp);
      });
}

static LogicalResult convertGemm(NodeContext &node) {
  Value a = node.input(0), b = node.input(1);
  if (cast<RankedTensorType>(a.getType()).getRank() != 2 ||
      cast<RankedTensorType>(b.getType()).getRank() != 2) {
    node.emitError() << "A and B must be matrices, got " << a.getType()
                     << " and " << b.getType();
    return failure();
  }
  if (node.intAttr("transA", 0))
    a = node.create<TransposeOp>(a, ArrayRef<int64_t>{1, 0});
  if (node.intAttr("transB", 0))
    b = node.create<TransposeOp>(b, ArrayRef<int64_t>{1, 0});
  FailureOr<Value> product = matmul(node, a, b);
  if (failed(product))
    return failure();
  Value y = *product;
  Type element = getElementTypeOrSelf(y.getType());
  double alpha = node.floatAttr("alpha", 1.0), beta = node.floatAttr("beta", 1.0);
  if (alpha != 1.0)
    y = node.create<MulOp>(y, node.scalar(element, alpha));
  if (node.hasInput(2) && beta != 0.0) {
    Value c = node.input(2);
    if (failed(broadcastShapes(cast<RankedTensorType>(c.getType()).getShape(),
                               cast<RankedTensorType>(y.getType()).getShape()))) {
      node.emitError() << "C of type " << c.getType()
                       << " does not broadcast to the product " << y.getType();
      return failure();
    }
    if (beta != 1.0)
      c = node.create<MulOp>(c, node.scalar(element, beta));
    y = node.create<AddOp>(y, c);
  }
  node.setOutput(0, y);
  return success();
}

void onnx_import::registerMatmulPatterns(PatternRegistry &r) {
  r.add("MatMul", 7, convertMatMul);
  r.add("Gemm", 7, convertGemm);
  r.add("MatMulInteger", 10, convertMatMulInteger);
}
