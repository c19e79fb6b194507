//===- SplitReductions.cpp - kiln-split-reductions ------------------------===//
//
// A reduction of few outputs over many elements, in two: the reduced
// elements split into parts that many threads reduce at once, then the
// parts. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITREDUCTIONS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct KilnSplitReductionsPass : kiln::impl::KilnSplitReductionsBase<KilnSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads <= 0)
      return;
    SmallVector<Operation *> reductions;
    getOperation().walk([&](Operation *op) {
      if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(op))
        reductions.push_back(op);
    });
    for (Operation *op : reductions)
      llvm::TypeSwitch<Operation *>(op)
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>([&](auto r) { split(r); });
  }

  /// The parts the `reduced` elements of each of `outputs` are split into,
  /// or 1 to keep the reduction whole: a power of two dividing `reduced`,
  /// the smallest that gives `threads` outputs times parts, with at least
  /// `min-part` elements in each part; none below `min-reduced` elements.
  int64_t parts(int64_t outputs, int64_t reduced) const {
    if (outputs >= threads || reduced < minReduced || reduced < 2 * minPart)
      return 1;
    int64_t p = 1;
    while (outputs * p < threads && reduced % (2 * p) == 0 && reduced / (2 * p) >= minPart)
      p *= 2;
    return p;
  }

  template <typename OpT>
  void split(OpT op) {
    auto input = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto result = dyn_cast<RankedTensorType>(op.getType());
    if (!input || !result || !input.hasStaticShape() || !result.hasStaticShape() ||
        !isa<FloatType>(input.getElementType()))
      return;
    // The reduced axes: the trailing ones, so that the split is a view.
    ArrayRef<int64_t> axes = op.getAxes();
    int64_t rank = input.getRank(), kept = rank - static_cast<int64_t>(axes.size());
    if (axes.empty())
      return;
    for (auto [i, axis] : llvm::enumerate(axes))
      if (axis != kept + static_cast<int64_t>(i))
        return;
    ArrayRef<int64_t> shape = input.getShape();
    int64_t outputs = 1, reduced = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < kept ? outputs : reduced) *= shape[d];
    // Rows the gfx row kernels reduce whole, with many lanes each.
    if (axes.size() == 1 && reduced <= maxRow)
      return;
    int64_t p = parts(outputs, reduced);
    if (p < 2)
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type elem = input.getElementType();
    SmallVector<int64_t> splitShape(shape.take_front(kept));
    splitShape.append({p, reduced / p});
    Value parts = reshapeTo(b, loc, op.getInput(), splitShape);
    SmallVector<int64_t> partShape(shape.take_front(kept));
    partShape.push_back(p);
    auto partType = RankedTensorType::get(partShape, elem);
    auto perPart = OpT::create(b, loc, partType, parts, b.getDenseI64ArrayAttr({kept + 1}),
                               b.getBoolAttr(false));
    auto whole = OpT::create(b, loc, RankedTensorType::get(shape.take_front(kept), elem),
                             perPart.getResult(), b.getDenseI64ArrayAttr({kept}),
                             b.getBoolAttr(false));
    Value replacement = whole.getResult();
    if (replacement.getType() != result)
      replacement = reshapeTo(b, loc, replacement, result.getShape());
    op.getResult().replaceAllUsesWith(replacement);
    op.erase();
  }
};

} // namespace
