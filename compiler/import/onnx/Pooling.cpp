//===- Pooling.cpp - ONNX pooling -> kiln ---------------------------------===//
//
// MaxPool and AveragePool become kiln.max_pool / kiln.avg_pool (MaxPool of
// 8- and 16-bit integers through their exact f32 values); the global
// variants are reductions over the spatial dimensions.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

template <typename OpTy>
static LogicalResult convertPool(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  // MaxPool of 8- and 16-bit integers (opset 12+) pools their exact f32
  // values.
  Type element = type.getElementType();
  bool narrowInteger = std::is_same_v<OpTy, MaxPoolOp> &&
                       isa<IntegerType>(element) &&
                       element.getIntOrFloatBitWidth() <= 16 &&
                       element.getIntOrFloatBitWidth() > 1;
  if (type.getRank() < 3 || (!isa<FloatType>(element) && !narrowInteger)) {
    node.emitError() << "expected a floating-point"
                     << (std::is_same_v<OpTy, MaxPoolOp>
                             ? " or 8/16-bit integer"
                             : "")
                     << " input of rank >= 3, got " << type;
    return failure();
  }
  if (narrowInteger)
    input = node.cast(input, node.builder().getF32Type());
  if (node.hasOutput(1)) {
    node.emitError() << "the Indices output is not supported";
    return failure();
  }
  int64_t spatial = type.getRank() - 2;
  if (!node.hasAttr("kernel_shape")) {
    node.emitError() << "attribute 'kernel_shape' is required";
    return failure();
  }
  auto kernel = spatialAttr(node, "kernel_shape", spatial, 1);
  auto strides = spatialAttr(node, "strides", spatial, 1);
  auto dilations = spatialAttr(node, "dilations", spatial, 1);
  if (failed(kernel) || failed(strides) || failed(dilations))
    return failure();
  auto pads = windowPads(node, type.getShape().drop_front(2), *kernel,
                         *strides, *dilations);
  if (failed(pads))
    return failure();
  for (int64_t i = 0; i < spatial; ++i)
    if ((*pads)[i] >= (*kernel)[i] || (*pads)[i + spatial] >= (*kernel)[i]) {
      node.emitError() << "pads must be smaller than the kernel";
      return failure();
    }
  OpBuilder &b = node.builder();
  bool ceilMode = node.intAttr("ceil_mode", 0) != 0;
  Value result;
  if constexpr (std::is_same_v<OpTy, MaxPoolOp>) {
    result = node.create<MaxPoolOp>(
        input, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
        b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(*pads),
        b.getBoolAttr(ceilMode));
  } else {
    result = node.create<AvgPoolOp>(
        input, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
        b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(*pads),
        b.getBoolAttr(ceilMode),
        b.getBoolAttr(node.intAttr("count_include_pad", 0) != 0));
  }
  node.setOutput(0, narrowInteger ? node.cast(result, element) : result);
  return success();
}

template <typename OpTy>
static LogicalResult convertGlobalPool(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 3) {
    node.emitError() << "expected an input of rank >= 3, got " << type;
    return failure();
  }
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(2, type.getRank()));
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<OpTy>(input, b.getDenseI64ArrayAttr(axes),
                                      b.getBoolAttr(true)));
  return success();
}

void onnx_import::registerPoolingPatterns(PatternRegistry &r) {
  r.add("MaxPool", 7, convertPool<MaxPoolOp>);
  r.add("AveragePool", 7, convertPool<AvgPoolOp>);
  r.add("GlobalAveragePool", 7, convertGlobalPool<ReduceMeanOp>);
  r.add("GlobalMaxPool", 7, convertGlobalPool<ReduceMaxOp>);
}
