//===- FoldWeightLayouts.cpp - data movement on weights at compile time ---===//
//
// Weights are known when the model is compiled: a transpose of a weight is
// done once here, into a new blob, instead of at every run; so is a
// transcendental function of an f32 constant (a rotary embedding's cosine
// and sine tables).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDWEIGHTLAYOUTS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// The function an f32 unary op computes, evaluated in double and rounded
/// once; null for other ops.
std::function<double(double)> unaryFunction(Operation *op) {
  if (isa<CosOp>(op))
    return [](double x) { return std::cos(x); };
  if (isa<SinOp>(op))
    return [](double x) { return std::sin(x); };
  if (isa<ExpOp>(op))
    return [](double x) { return std::exp(x); };
  if (isa<LogOp>(op))
    return [](double x) { return std::log(x); };
  if (isa<SqrtOp>(op))
    return [](double x) { return std::sqrt(x); };
  if (isa<TanhOp>(op))
    return [](double x) { return std::tanh(x); };
  if (isa<SigmoidOp>(op))
    return [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  return nullptr;
}

/// Evaluates the unary transcendentals of f32 constants too large for the
/// folders (which stop at kMaxFoldElements) into new blobs: a rotary
/// embedding's cos and sin of a constant table of angles are then no
/// kernels at all.
void foldUnaryMath(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op->getNumOperands() == 1 && op->getNumResults() == 1 && unaryFunction(op) &&
        op->getOperand(0).getDefiningOp<ConstantOp>() &&
        op->getResult(0).getType() == op->getOperand(0).getType())
      ops.push_back(op);
  });
  unsigned counter = 0;
  for (Operation *op : ops) {
    auto cst = op->getOperand(0).getDefiningOp<ConstantOp>();
    auto type = cast<RankedTensorType>(cst.getType());
    std::optional<std::vector<float>> values = f32ConstantValues(cst);
    if (!type.hasStaticShape() || !values)
      continue;
    std::function<double(double)> fn = unaryFunction(op);
    for (float &v : *values)
      v = static_cast<float>(fn(v));
    OpBuilder b(op);
    Value folded = bytesConstant(
        b, op->getLoc(), type,
        ArrayRef<char>(reinterpret_cast<const char *>(values->data()), values->size() * 4),
        "evaluated_" + std::to_string(counter++));
    op->getResult(0).replaceAllUsesWith(folded);
    op->erase();
    if (cst->use_empty())
      cst.erase();
  }
}

struct KilnFoldWeightLayoutsPass
    : kiln::impl::KilnFoldWeightLayoutsBase<KilnFoldWeightLayoutsPass> {
  void runOnOperation() override {
    foldUnaryMath(getOperation());
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp op) {
      if (op.getInput().getDefiningOp<ConstantOp>())
        transposes.push_back(op);
    });
    unsigned counter = 0;
    for (TransposeOp op : transposes) {
      auto cst = op.getInput().getDefiningOp<ConstantOp>();
      std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
      auto inType = cast<RankedTensorType>(cst.getType());
      auto outType = cast<RankedTensorType>(op.getType());
      unsigned bits = inType.getElementType().getIntOrFloatBitWidth();
      if (!bytes || bits % 8 != 0)
        continue;
      size_t elemSize = bits / 8;
      if (bytes->size() != elemSize * static_cast<size_t>(inType.getNumElements()))
        continue;

      std::vector<char> out =
          permuteBytes(*bytes, elemSize, inType.getShape(), op.getPermutation());
      AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
          ArrayRef<char>(out), alignof(std::max_align_t));
      std::string name = "transposed_" + std::to_string(counter++);
      OpBuilder b(op);
      auto attr = DenseResourceElementsAttr::get(outType, name, std::move(blob));
      auto folded = ConstantOp::create(b, op.getLoc(), outType, attr);
      op.replaceAllUsesWith(folded.getResult());
      op.erase();
      if (cst->use_empty())
        cst.erase();
    }
  }
};
} // namespace
