//===- Constant.cpp - ONNX Constant -> kiln.constant ----------------------===//
//
// Constant nodes carry their value in one of several attributes (a tensor,
// or since opset 12 a float/int scalar or list).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

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

void onnx_import::registerConstantPatterns(PatternRegistry &r) {
  r.add("Constant", 7, convertConstant);
}
