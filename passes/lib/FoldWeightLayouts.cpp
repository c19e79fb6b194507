//===- FoldWeightLayouts.cpp - data movement on weights at compile time ---===//
//
// Weights are known when the model is compiled: a transpose of a weight is
// done once here, into a new blob, instead of at every run.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDWEIGHTLAYOUTS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

struct KilnFoldWeightLayoutsPass
    : kiln::impl::KilnFoldWeightLayoutsBase<KilnFoldWeightLayoutsPass> {
  void runOnOperation() override {
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
