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

      // out[i] = in[j] where j's index along permutation[d] is i's along d.
      ArrayRef<int64_t> perm = op.getPermutation();
      ArrayRef<int64_t> inShape = inType.getShape(), outShape = outType.getShape();
      int64_t rank = inType.getRank();
      SmallVector<int64_t> inStrides(rank, 1);
      for (int64_t d = rank - 2; d >= 0; --d)
        inStrides[d] = inStrides[d + 1] * inShape[d + 1];
      SmallVector<int64_t> strideOfOut(rank);
      for (int64_t d = 0; d < rank; ++d)
        strideOfOut[d] = inStrides[perm[d]];

      std::vector<char> out(bytes->size());
      SmallVector<int64_t> index(rank, 0);
      int64_t source = 0;
      for (int64_t i = 0, e = outType.getNumElements(); i < e; ++i) {
        std::memcpy(out.data() + i * elemSize, bytes->data() + source * elemSize, elemSize);
        for (int64_t d = rank - 1; d >= 0; --d) {
          source += strideOfOut[d];
          if (++index[d] < outShape[d])
            break;
          source -= strideOfOut[d] * outShape[d];
          index[d] = 0;
        }
      }
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
