//===- Constant.cpp - ONNX ops with constant results -> kiln.constant ------===//
//
// Constant nodes carry their value in one of several attributes (a tensor,
// or since opset 12 a float/int scalar or list). The window functions
// (HannWindow, HammingWindow, BlackmanWindow) depend only on their size,
// which must be a constant: their values are computed here.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "onnx/onnx_pb.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

static LogicalResult convertConstant(NodeContext &node) {
  OpBuilder &b = node.builder();
  ElementsAttr value;
  if (node.hasAttr("value")) {
    value = node.tensorAttr("value");
    if (!value)
      return failure();
  } else if (node.hasAttr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   (float)node.floatAttr("value_float", 0));
  } else if (node.hasAttr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   node.intAttr("value_int", 0));
  } else if (node.hasAttr("value_floats")) {
    SmallVector<float> values;
    for (double v : node.floatsAttr("value_floats"))
      values.push_back((float)v);
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)values.size()}, b.getF32Type()),
        ArrayRef<float>(values));
  } else if (node.hasAttr("value_ints")) {
    SmallVector<int64_t> values = node.intsAttr("value_ints");
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)values.size()}, b.getI64Type()),
        ArrayRef<int64_t>(values));
  } else {
    node.emitError() << "only tensor, float and int values are supported";
    return failure();
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), value));
  return success();
}

/// A generalized cosine window of `size` points: sum over k of
/// coefficients[k] * cos(2 pi k n / N), N = size when periodic, size - 1
/// when symmetric.
static LogicalResult convertWindow(NodeContext &node,
                                   ArrayRef<double> coefficients) {
  auto size = node.constantInts(0, "size");
  if (failed(size))
    return failure();
  if (size->size() != 1 || size->front() < 0) {
    node.emitError() << "size must be a non-negative scalar";
    return failure();
  }
  int64_t count = size->front();
  if (count > kMaxFoldElements) {
    node.emitError() << "a window of " << count << " points is more than "
                     << "Kiln evaluates at compile time (" << kMaxFoldElements
                     << ")";
    return failure();
  }
  FailureOr<Type> element = node.dataType(
      node.intAttr("output_datatype", onnx::TensorProto::FLOAT),
      "attribute 'output_datatype'");
  if (failed(element))
    return failure();
  bool periodic = node.intAttr("periodic", 1) != 0;
  double period = periodic ? count : count - 1;
  OpBuilder &b = node.builder();
  SmallVector<Attribute> values;
  for (int64_t n = 0; n < count; ++n) {
    double v = 0;
    for (auto [k, c] : llvm::enumerate(coefficients))
      v += c * (k == 0 || period == 0 ? 1.0
                                      : std::cos(2 * M_PI * k * n / period));
    values.push_back(isa<FloatType>(*element)
                         ? Attribute(b.getFloatAttr(*element, v))
                         : Attribute(b.getIntegerAttr(*element, (int64_t)v)));
  }
  auto type = RankedTensorType::get({count}, *element);
  node.setOutput(0, ConstantOp::create(b, node.loc(),
                                       DenseElementsAttr::get(type, values)));
  return success();
}

void onnx_import::registerConstantPatterns(PatternRegistry &r) {
  r.add("Constant", 7, convertConstant);
  r.add("HannWindow", 17,
        [](NodeContext &n) { return convertWindow(n, {0.5, -0.5}); });
  r.add("HammingWindow", 17, [](NodeContext &n) {
    return convertWindow(n, {25.0 / 46, -21.0 / 46});
  });
  r.add("BlackmanWindow", 17,
        [](NodeContext &n) { return convertWindow(n, {0.42, -0.5, 0.08}); });
}
