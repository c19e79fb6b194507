//===- Loss.cpp - ONNX loss functions -> kiln -----------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, decomposed into
// kiln ops. For an input [N, C, d1, ...] and a target [N, d1, ...] of class
// numbers, the loss of each element is the input at its target class
// (kiln.gather_elements along the class axis), negated and multiplied by
// weight[target] (kiln.gather) when there is a weight; a target equal to
// `ignore_index` gives 0 and no weight. `reduction` is `none` (that tensor),
// `sum`, or `mean`: the sum divided by the sum of the weights applied (the
// number of elements not ignored without a weight). SoftmaxCrossEntropyLoss
// is a log-softmax along the class axis followed by the same, and returns
// the log-probabilities as its optional second output.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The loss of `input` (log-probabilities, class axis 1) at `target`, with
/// the optional `weight` (null when absent), reduced as the node's
/// `reduction` attribute says; failure after a diagnostic at the node.
static FailureOr<Value> negativeLogLikelihood(NodeContext &node, Value input,
                                              Value target, Value weight) {
  auto type = cast<RankedTensorType>(input.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  Type element = type.getElementType();
  if (!isa<FloatType>(element) || type.getRank() < 2) {
    node.emitError() << "expected a floating-point input of rank >= 2, got "
                     << type;
    return failure();
  }
  Type targetElement = targetType.getElementType();
  if (!targetElement.isSignlessInteger(32) &&
      !targetElement.isSignlessInteger(64)) {
    node.emitError() << "expected an int32 or int64 target, got "
                     << targetType;
    return failure();
  }
  // The target's shape is the input's without the class dimension.
  ArrayRef<int64_t> shape = targetType.getShape();
  SmallVector<int64_t> expected(type.getShape());
  int64_t classes = expected[1];
  expected.erase(expected.begin() + 1);
  if (shape != ArrayRef<int64_t>(expected)) {
    node.emitError() << "target shape " << targetType
                     << " does not match input " << type
                     << " without its class dimension";
    return failure();
  }
  if (weight) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    if (weightType.getElementType() != element ||
        weightType.getShape() != ArrayRef<int64_t>{classes}) {
      node.emitError() << "expected a weight of type "
                       << RankedTensorType::get({classes}, element) << ", got "
                       << weightType;
      return failure();
    }
  }
  std::string reduction = node.stringAttr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    node.emitError() << "reduction must be none, sum or mean, got '"
                     << reduction << "'";
    return failure();
  }

  OpBuilder &b = node.builder();
  // -input[n, target[n, d...], d...]: the target as [N, 1, d...] selects one
  // element along the class axis.
  SmallVector<int64_t> column(shape);
  column.insert(column.begin() + 1, 1);
  Value picked = node.create<GatherElementsOp>(
      input, node.reshape(target, column), /*axis=*/int64_t(1));
  Value loss = node.create<NegOp>(node.reshape(picked, shape));

  // The weight each element's loss gets (null: 1 everywhere).
  Value applied;
  if (weight) {
    applied = node.create<GatherOp>(weight, target, /*axis=*/int64_t(0));
    loss = node.create<MulOp>(loss, applied);
  }
  if (node.hasAttr("ignore_index")) {
    auto scalarType = RankedTensorType::get({}, targetElement);
    Value ignored = ConstantOp::create(
        b, node.loc(),
        DenseElementsAttr::get(
            scalarType, b.getIntegerAttr(targetElement,
                                         node.intAttr("ignore_index", 0))));
    Value keep = node.create<NotOp>(node.create<EqualOp>(target, ignored));
    Value zero = node.scalar(element, 0);
    // A select, not a product: whatever the clamped read of an ignored
    // element finds (an infinity, a NaN) does not leak into the loss.
    loss = node.create<SelectOp>(keep, loss, zero);
    applied = applied ? node.create<SelectOp>(keep, applied, zero)
                      : node.cast(keep, element);
  }
  if (reduction == "none")
    return loss;

  auto all = b.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(0, (int64_t)shape.size())));
  BoolAttr noKeepdims = b.getBoolAttr(false);
  if (reduction == "sum")
    return node.create<ReduceSumOp>(loss, all, noKeepdims);
  if (!applied)
    return node.create<ReduceMeanOp>(loss, all, noKeepdims);
  // (Named first: the order of function arguments' evaluation is not
  // specified, and the IR's order should not depend on the compiler.)
  Value total = node.create<ReduceSumOp>(loss, all, noKeepdims);
  Value weights = node.create<ReduceSumOp>(applied, all, noKeepdims);
  return node.create<DivOp>(total, weights);
}

static LogicalResult convertNegativeLogLikelihoodLoss(NodeContext &node) {
  Value weight = node.hasInput(2) ? node.input(2) : Value();
  auto loss =
      negativeLogLikelihood(node, node.input(0), node.input(1), weight);
  if (failed(loss))
    return failure();
  node.setOutput(0, *loss);
  return success();
}

static LogicalResult convertSoftmaxCrossEntropyLoss(NodeContext &node) {
  Value scores = node.input(0);
  auto type = cast<RankedTensorType>(scores.getType());
  if (!isa<FloatType>(type.getElementType()) || type.getRank() < 2) {
    node.emitError() << "expected floating-point scores of rank >= 2, got "
                     << type;
    return failure();
  }
  OpBuilder &b = node.builder();
  Value logProb = node.create<SoftmaxOp>(scores, b.getI64IntegerAttr(1),
                                         b.getBoolAttr(true));
  Value weight = node.hasInput(2) ? node.input(2) : Value();
  auto loss = negativeLogLikelihood(node, logProb, node.input(1), weight);
  if (failed(loss))
    return failure();
  node.setOutput(0, *loss);
  if (node.hasOutput(1))
    node.setOutput(1, logProb);
  return success();
}

void onnx_import::registerLossPatterns(PatternRegistry &r) {
  r.add("NegativeLogLikelihoodLoss", 12, convertNegativeLogLikelihoodLoss);
  r.add("SoftmaxCrossEntropyLoss", 12, convertSoftmaxCrossEntropyLoss);
}
