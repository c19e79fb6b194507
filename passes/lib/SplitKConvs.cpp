//===- SplitKConvs.cpp - kiln-split-k-convs ---------------------------------===//
//
// A convolution whose output has too few GEMM tiles for the chip, split
// along its input channels: a grouped convolution computes each part's
// sums, a reduction adds them. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITKCONVS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct KilnSplitKConvsPass : kiln::impl::KilnSplitKConvsBase<KilnSplitKConvsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (computeUnits <= 0)
      return;
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) { convs.push_back(conv); });
    unsigned counter = 0;
    for (ConvOp conv : convs)
      split(conv, counter);
  }

  /// The parts `conv` is split into, or 1 to keep it whole.
  int64_t parts(ConvOp conv) const {
    auto input = dyn_cast<RankedTensorType>(conv.getInput().getType());
    auto filter = dyn_cast<RankedTensorType>(conv.getFilter().getType());
    auto result = dyn_cast<RankedTensorType>(conv.getType());
    if (!input || !filter || !result || input.getRank() != 4 || filter.getRank() != 4 ||
        !input.hasStaticShape() || !filter.hasStaticShape() || !result.hasStaticShape() ||
        conv.getGroups() != 1 || !isa<FloatType>(result.getElementType()) ||
        (result.getElementType().isF32() && !splitF32) ||
        !conv.getFilter().getDefiningOp<ConstantOp>())
      return 1;
    int64_t C = filter.getDimSize(1), window = filter.getDimSize(2) * filter.getDimSize(3);
    int64_t F = result.getDimSize(1);
    int64_t pixels = result.getDimSize(0) * result.getDimSize(2) * result.getDimSize(3);
    int64_t tiles = llvm::divideCeil(F, tile) * llvm::divideCeil(pixels, tile);
    if (C * window < minReduction)
      return 1;
    int64_t s = 1;
    while (tiles * s < computeUnits && 2 * s <= maxSplits && C % (2 * s) == 0 &&
           C / (2 * s) * window >= minDepth)
      s *= 2;
    return s;
  }

  void split(ConvOp conv, unsigned &counter) {
    int64_t S = parts(conv);
    if (S < 2)
      return;
    auto filterCst = conv.getFilter().getDefiningOp<ConstantOp>();
    auto filterType = cast<RankedTensorType>(filterCst.getType());
    Type elem = filterType.getElementType();
    auto result = cast<RankedTensorType>(conv.getType());
    int64_t F = filterType.getDimSize(0), C = filterType.getDimSize(1),
            KH = filterType.getDimSize(2), KW = filterType.getDimSize(3);
    auto partedType = RankedTensorType::get({S * F, C / S, KH, KW}, elem);
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    Value filter;
    auto dense = dyn_cast<DenseElementsAttr>(filterCst.getValue());
    if (dense && dense.isSplat()) {
      filter = ConstantOp::create(b, loc, partedType,
                                  DenseElementsAttr::get(partedType, dense.getSplatValue<Attribute>()));
    } else {
      std::optional<ArrayRef<char>> bytes = rawConstantBytes(filterCst.getValue());
      if (!bytes || elem.getIntOrFloatBitWidth() % 8 != 0)
        return;
      // [F, S, C / S, KH, KW] -> [S, F, C / S, KH, KW]: part s's filters
      // first, then the next part's.
      std::vector<char> parted = permuteBytes(*bytes, elem.getIntOrFloatBitWidth() / 8,
                                              {F, S, C / S, KH, KW}, {1, 0, 2, 3, 4});
      filter = bytesConstant(b, loc, partedType, parted,
                             "split_k_filter_" + std::to_string(counter++));
    }
    SmallVector<int64_t> partsShape(result.getShape());
    partsShape[1] *= S;
    Value partial = ConvOp::create(
        b, loc, RankedTensorType::get(partsShape, result.getElementType()), conv.getInput(),
        filter, Value(), conv.getStridesAttr(), conv.getDilationsAttr(), conv.getPadsAttr(),
        b.getI64IntegerAttr(S));
    int64_t N = result.getDimSize(0), OH = result.getDimSize(2), OW = result.getDimSize(3);
    Value byPart = reshapeTo(b, loc, partial, {N, S, F, OH, OW});
    Value sum = ReduceSumOp::create(b, loc, result, byPart, b.getDenseI64ArrayAttr({1}),
                                    b.getBoolAttr(false));
    if (Value bias = conv.getBias())
      sum = AddOp::create(b, loc, result, sum, reshapeTo(b, loc, bias, {F, 1, 1}));
    conv.replaceAllUsesWith(sum);
    conv.erase();
  }
};

} // namespace
