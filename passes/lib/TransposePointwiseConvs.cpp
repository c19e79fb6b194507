//===- TransposePointwiseConvs.cpp - kiln-transpose-pointwise-convs -------===//
//
// A 1x1 convolution in NCHW is the GEMM W[F, C] x X[C, H*W]: the cpu code
// generator vectorizes it along the image (16 points a vector) and
// broadcasts the weights. On a small image (ResNet-50's last stage: 7 x 7 =
// 49 points, three vectors and one point) most vector lanes idle and each
// weight is read again by every workgroup. The same product transposed,
// X^T[H*W, C] x W^T[C, F], has the output channels along the vectors and
// the weight a constant right-hand side, which kiln-pack-matmul-panels
// stores in compile-time column panels: kiln-cpu-vectorize-gemm's 8 x 32
// register tiles then read it in place. The image is transposed in and the
// result out (one small transpose each; the result's transpose takes the
// convolution's elementwise epilogue along).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNTRANSPOSEPOINTWISECONVS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct KilnTransposePointwiseConvsPass
    : kiln::impl::KilnTransposePointwiseConvsBase<KilnTransposePointwiseConvsPass> {
  using KilnTransposePointwiseConvsBase::KilnTransposePointwiseConvsBase;

  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp op) { convs.push_back(op); });
    unsigned counter = 0;
    for (ConvOp conv : convs)
      (void)rewrite(conv, counter);
  }

  /// Rewrites `conv`; false (nothing changed) when it is not a convolution
  /// this pass takes.
  bool rewrite(ConvOp conv, unsigned &counter) {
    std::optional<std::vector<float>> filter = constantFilterOfConv2d(conv, 1, 1);
    if (!filter || llvm::any_of(conv.getStrides(), [](int64_t s) { return s != 1; }) ||
        llvm::any_of(conv.getPads(), [](int64_t p) { return p != 0; }))
      return false;
    auto inType = cast<RankedTensorType>(conv.getInput().getType());
    auto outType = cast<RankedTensorType>(conv.getType());
    int64_t n = inType.getDimSize(0), c = inType.getDimSize(1), h = inType.getDimSize(2),
            w = inType.getDimSize(3), f = outType.getDimSize(1);
    if (h * w > maxPoints || c < minChannels || f < minChannels ||
        outType.getShape() != ArrayRef<int64_t>({n, f, h, w}) || int64_t(filter->size()) != f * c)
      return false;
    Value bias = conv.getBias();
    if (bias) {
      auto biasType = dyn_cast<RankedTensorType>(bias.getType());
      if (!biasType || biasType.getRank() != 1 || biasType.getDimSize(0) != f)
        return false;
    }

    OpBuilder b(conv);
    Location loc = conv.getLoc();
    // X^T: [N, C, H, W] -> [N, H*W, C] -> [N*H*W, C].
    Value x = reshapeTo(b, loc, conv.getInput(), {n, c, h * w});
    x = TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr({0, 2, 1}));
    x = reshapeTo(b, loc, x, {n * h * w, c});
    // W^T: [C, F], transposed here.
    std::vector<char> transposed = permuteBytes(
        ArrayRef<char>(reinterpret_cast<const char *>(filter->data()), filter->size() * sizeof(float)),
        sizeof(float), {f, c}, {1, 0});
    Value weights = bytesConstant(b, loc, RankedTensorType::get({c, f}, b.getF32Type()), transposed,
                                  "pointwise_filter_t_" + std::to_string(counter++));
    Value y = MatmulOp::create(b, loc, x, weights);
    if (bias)
      y = AddOp::create(b, loc, y, bias);
    // [N*H*W, F] -> [N, H, W, F] -> [N, F, H, W].
    y = reshapeTo(b, loc, y, {n, h, w, f});
    y = TransposeOp::create(b, loc, y, b.getDenseI64ArrayAttr({0, 3, 1, 2}));
    auto filterCst = conv.getFilter().getDefiningOp<ConstantOp>();
    conv.replaceAllUsesWith(y);
    conv.erase();
    if (filterCst->use_empty())
      filterCst.erase();
    return true;
  }
};

} // namespace
