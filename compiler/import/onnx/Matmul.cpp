//===- Matmul.cpp - ONNX MatMul and Gemm -> kiln --------------------------===//
//
// MatMul follows numpy: 1-D operands are promoted to matrices and the added
// dimension is dropped again. Gemm becomes transposes, kiln.matmul, and the
// alpha/beta-scaled bias add.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Checks operand element types and contraction sizes with a message that
/// names the node, then emits kiln.matmul.
static FailureOr<Value> matmul(NodeContext &node, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getElementType() != r.getElementType()) {
    node.emitError() << "operand element types differ: " << l << " and " << r;
    return failure();
  }
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
  return node.create<MatmulOp>(lhs, rhs);
}

static LogicalResult convertMatMul(NodeContext &node) {
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
  FailureOr<Value> product = matmul(node, lhs, rhs);
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
}
