//===- FoldBatchNorms.cpp - kiln-fold-batch-norms -------------------------===//
//
// Inference-mode batch normalization after a convolution with constant
// weights is an affine map per output channel, so it folds into the
// convolution's filter and bias: one dispatch less per layer, and the
// weights that post-training quantization sees are the ones that run.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDBATCHNORMS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The values of `value` when it is an f32 constant of `count` elements.
std::optional<std::vector<float>> vectorValues(Value value, int64_t count) {
  auto cst = value.getDefiningOp<ConstantOp>();
  if (!cst)
    return std::nullopt;
  std::optional<std::vector<float>> values = f32ConstantValues(cst);
  if (!values || int64_t(values->size()) != count)
    return std::nullopt;
  return values;
}

/// Folds `bn` into the convolution it reads; false (nothing changed) when
/// that is not a single-use kiln.conv with constant f32 filter and bias and
/// the normalization's parameters are not constant.
bool foldIntoConv(BatchNormOp bn, unsigned &counter) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse())
    return false;
  auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
  if (!filterType.getElementType().isF32() || !filterType.hasStaticShape())
    return false;
  int64_t channels = filterType.getDimSize(0);
  auto filterCst = conv.getFilter().getDefiningOp<ConstantOp>();
  std::optional<std::vector<float>> filter =
      filterCst ? f32ConstantValues(filterCst) : std::nullopt;
  std::optional<std::vector<float>> scale = vectorValues(bn.getScale(), channels),
                                    beta = vectorValues(bn.getBias(), channels),
                                    mean = vectorValues(bn.getMean(), channels),
                                    variance = vectorValues(bn.getVariance(), channels);
  std::vector<float> bias(channels, 0.0f);
  if (Value b = conv.getBias()) {
    std::optional<std::vector<float>> values = vectorValues(b, channels);
    if (!values)
      return false;
    bias = *values;
  }
  if (!filter || !scale || !beta || !mean || !variance)
    return false;
  // y = (conv(x, W) + b - mean) * s + beta with s = scale / sqrt(var + eps):
  // conv(x, W s) + (b - mean) s + beta.
  std::vector<float> s(channels);
  for (int64_t c = 0; c < channels; ++c) {
    double factor = double((*scale)[c]) / std::sqrt(double((*variance)[c]) + bn.getEpsilon().convertToDouble());
    if (!std::isfinite(factor))
      return false; // a variance below -epsilon: nothing sensible to fold
    s[c] = static_cast<float>(factor);
  }
  int64_t inner = filterType.getNumElements() / std::max<int64_t>(channels, 1);
  std::vector<float> folded(filter->size());
  for (size_t i = 0; i < folded.size(); ++i)
    folded[i] = (*filter)[i] * s[i / inner];
  std::vector<float> foldedBias(channels);
  for (int64_t c = 0; c < channels; ++c)
    foldedBias[c] = static_cast<float>((double(bias[c]) - (*mean)[c]) * s[c] + (*beta)[c]);

  OpBuilder b(conv);
  Location loc = conv.getLoc();
  Value newFilter = bytesConstant(
      b, loc, filterType,
      ArrayRef<char>(reinterpret_cast<const char *>(folded.data()), folded.size() * 4),
      "batch_norm_filter_" + std::to_string(counter++));
  auto biasType = RankedTensorType::get({channels}, b.getF32Type());
  Value newBias = ConstantOp::create(b, loc, biasType,
                                     DenseElementsAttr::get(biasType, ArrayRef<float>(foldedBias)));
  conv.getFilterMutable().assign(newFilter);
  if (conv.getBias())
    conv.getBiasMutable().assign(newBias);
  else
    conv.getBiasMutable().append(newBias);
  // The convolution now computes what the normalization did (same type).
  conv->setLoc(FusedLoc::get(b.getContext(), {loc, bn.getLoc()}));
  bn.replaceAllUsesWith(conv.getResult());
  bn.erase();
  return true;
}

struct KilnFoldBatchNormsPass : kiln::impl::KilnFoldBatchNormsBase<KilnFoldBatchNormsPass> {
  void runOnOperation() override {
    SmallVector<BatchNormOp> norms;
    getOperation().walk([&](BatchNormOp bn) { norms.push_back(bn); });
    unsigned counter = 0;
    for (BatchNormOp bn : norms)
      (void)foldIntoConv(bn, counter);
  }
};

} // namespace
