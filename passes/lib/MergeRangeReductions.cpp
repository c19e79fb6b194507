//===- MergeRangeReductions.cpp - kiln-merge-range-reductions -------------===//
//
// The minimum and the maximum of the same value, as one reduction: the
// minima of [x; -x]. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNMERGERANGEREDUCTIONS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Elements per half of the stacked result that make each half a view: 64
/// bytes of 32-bit floats (kiln::sliceViewOffset).
constexpr int64_t kViewElements = 16;

struct KilnMergeRangeReductionsPass
    : kiln::impl::KilnMergeRangeReductionsBase<KilnMergeRangeReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<ReduceMaxOp> maxima;
    getOperation().walk([&](ReduceMaxOp op) { maxima.push_back(op); });
    for (ReduceMaxOp max : maxima)
      if (ReduceMinOp min = partner(max))
        merge(min, max);
  }

  /// The reduce_min of the same value over the same axis, in the same block,
  /// if the pair can be merged: f32, static, keepdims false, the last axis
  /// alone reduced, at most `max-reduced` elements per output, the kept
  /// elements a multiple of 16.
  ReduceMinOp partner(ReduceMaxOp max) const {
    auto input = dyn_cast<RankedTensorType>(max.getInput().getType());
    if (!input || !input.hasStaticShape() || !input.getElementType().isF32() ||
        max.getKeepdims())
      return nullptr;
    ArrayRef<int64_t> axes = max.getAxes();
    int64_t rank = input.getRank(), kept = rank - static_cast<int64_t>(axes.size());
    if (axes.size() != 1 || axes[0] != rank - 1 || kept < 1 ||
        input.getShape().back() > maxReduced)
      return nullptr;
    int64_t outputs = 1;
    for (int64_t d : input.getShape().take_front(kept))
      outputs *= d;
    if (outputs % kViewElements != 0)
      return nullptr;
    for (Operation *user : max.getInput().getUsers()) {
      auto min = dyn_cast<ReduceMinOp>(user);
      if (min && min->getBlock() == max->getBlock() && min.getAxes() == axes &&
          !min.getKeepdims() && min.getType() == max.getType())
        return min;
    }
    return nullptr;
  }

  /// min = the first half of the minima of [x; -x], max = minus the
  /// second; both halves views of one [2, kept...] result.
  static void merge(ReduceMinOp min, ReduceMaxOp max) {
    // Before both (after the input they read): every user of either result
    // comes after the merged one.
    OpBuilder b(min->isBeforeInBlock(max) ? min.getOperation() : max.getOperation());
    Location loc = b.getFusedLoc({min.getLoc(), max.getLoc()});
    Value x = max.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type f32 = type.getElementType();
    int64_t rank = type.getRank();

    SmallVector<int64_t> withStack{1};
    llvm::append_range(withStack, type.getShape());
    Value stackable = reshapeTo(b, loc, x, withStack);
    SmallVector<int64_t> signShape(rank + 1, 1);
    signShape[0] = 2;
    auto signType = RankedTensorType::get(signShape, f32);
    Value signs = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(signType, ArrayRef<Attribute>{b.getFloatAttr(f32, 1.0),
                                                             b.getFloatAttr(f32, -1.0)}));
    SmallVector<int64_t> stackedShape(withStack);
    stackedShape[0] = 2;
    Value stacked = MulOp::create(b, loc, RankedTensorType::get(stackedShape, f32), stackable,
                                  signs);

    SmallVector<int64_t> axes;
    for (int64_t axis : max.getAxes())
      axes.push_back(axis + 1);
    ArrayRef<int64_t> keptShape = cast<RankedTensorType>(max.getType()).getShape();
    SmallVector<int64_t> endsShape{2};
    llvm::append_range(endsShape, keptShape);
    Value ends = ReduceMinOp::create(b, loc, RankedTensorType::get(endsShape, f32), stacked,
                                     b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));

    auto half = [&](int64_t i) {
      SmallVector<int64_t> starts(endsShape.size(), 0), ends_(endsShape), steps(endsShape.size(), 1);
      starts[0] = i;
      ends_[0] = i + 1;
      SmallVector<int64_t> halfShape(endsShape);
      halfShape[0] = 1;
      Value slice = SliceOp::create(b, loc, RankedTensorType::get(halfShape, f32), ends,
                                    b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends_),
                                    b.getDenseI64ArrayAttr(steps));
      return reshapeTo(b, loc, slice, keptShape);
    };
    Value lowest = half(0);
    Value highest = NegOp::create(b, loc, max.getType(), half(1));
    min.getResult().replaceAllUsesWith(lowest);
    max.getResult().replaceAllUsesWith(highest);
    min.erase();
    max.erase();
  }
};

} // namespace
