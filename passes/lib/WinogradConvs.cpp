//===- WinogradConvs.cpp - kiln-winograd-convs ----------------------------===//
//
// 3x3 stride-1 convolutions by Winograd's minimal filtering, F(m x m, 3 x 3):
// each m x m output tile is A^T [(G g G^T) . (B^T d B)] A for the
// (m+2) x (m+2) input tile d it reads. Summed over input channels, the
// elementwise product is one GEMM per tile element, with (m+2)^2 / m^2
// multiplications per output where the direct convolution does 9 (F(4,3):
// 2.25, a quarter; F(2,3): 4). The filter transform runs here, on the
// constant weights; the input and output transforms are small matmuls with
// the constant matrices B^T and A^T, applied along rows and then columns.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Winograd.h"
#include "kiln/Passes/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNWINOGRADCONVS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// U[(alpha, beta), f, c] = sum_ij G[alpha, i] g[f, c, i, j] G[beta, j].
std::vector<float> transformFilter(const std::vector<float> &filter, int64_t f, int64_t c,
                                   const WinogradMatrices &w) {
  int64_t a = w.a;
  std::vector<float> u(size_t(a * a * f * c));
  for (int64_t fo = 0; fo < f; ++fo)
    for (int64_t ci = 0; ci < c; ++ci) {
      const float *g = filter.data() + (fo * c + ci) * 9;
      double gg[6][3]; // G g: a x 3
      for (int64_t al = 0; al < a; ++al)
        for (int64_t j = 0; j < 3; ++j) {
          double sum = 0;
          for (int64_t i = 0; i < 3; ++i)
            sum += w.g[al * 3 + i] * double(g[i * 3 + j]);
          gg[al][j] = sum;
        }
      for (int64_t al = 0; al < a; ++al)
        for (int64_t be = 0; be < a; ++be) {
          double sum = 0;
          for (int64_t j = 0; j < 3; ++j)
            sum += gg[al][j] * w.g[be * 3 + j];
          u[size_t(((al * a + be) * f + fo) * c + ci)] = float(sum);
        }
    }
  return u;
}

Value f32Matrix(OpBuilder &b, Location loc, int64_t rows, int64_t cols,
                ArrayRef<double> values) {
  SmallVector<float> data(values.begin(), values.end());
  auto type = RankedTensorType::get({rows, cols}, b.getF32Type());
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, ArrayRef<float>(data)));
}

struct KilnWinogradConvsPass : kiln::impl::KilnWinogradConvsBase<KilnWinogradConvsPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::StringSet<> keep;
    for (const std::string &name : exclude)
      keep.insert(name);
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) {
      if (!keep.contains(nodeNameOf(conv.getLoc())))
        convs.push_back(conv);
    });
    unsigned counter = 0;
    for (ConvOp conv : convs)
      (void)rewrite(conv, counter);
  }

  /// Rewrites `conv`; false (nothing changed) when it is not a convolution
  /// this pass takes.
  bool rewrite(ConvOp conv, unsigned &counter) {
    std::optional<std::vector<float>> filter = constantFilterOfConv2d(conv, 3, 3);
    if (!filter || llvm::any_of(conv.getStrides(), [](int64_t s) { return s != 1; }) ||
        llvm::any_of(conv.getDilations(), [](int64_t d) { return d != 1; }) ||
        llvm::any_of(conv.getPads(), [](int64_t p) { return p < 0; }))
      return false;
    auto inType = cast<RankedTensorType>(conv.getInput().getType());
    auto outType = cast<RankedTensorType>(conv.getType());
    int64_t n = inType.getDimSize(0), c = inType.getDimSize(1), h = inType.getDimSize(2),
            w = inType.getDimSize(3), f = outType.getDimSize(1);
    int64_t oh = outType.getDimSize(2), ow = outType.getDimSize(3);
    if (c < minChannels || f < minChannels || oh < 1 || ow < 1)
      return false;
    std::optional<std::vector<float>> bias;
    if (Value b = conv.getBias()) {
      auto biasCst = b.getDefiningOp<ConstantOp>();
      bias = biasCst ? f32ConstantValues(biasCst) : std::nullopt;
      if (!bias || int64_t(bias->size()) != f)
        return false;
    }

    WinogradMatrices wm = winogradMatrices(std::min(oh, ow) >= minF4Size ? 4 : 2);
    int64_t m = wm.m, a = wm.a;
    int64_t th = llvm::divideCeil(oh, m), tw = llvm::divideCeil(ow, m);
    int64_t tiles = n * th * tw;
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    Type f32 = b.getF32Type();

    std::vector<float> u = transformFilter(*filter, f, c, wm);
    auto weights = [&] {
      return bytesConstant(
          b, loc, RankedTensorType::get({a * a, f, c}, f32),
          ArrayRef<char>(reinterpret_cast<const char *>(u.data()), u.size() * sizeof(float)),
          "winograd_filter_" + std::to_string(counter++));
    };
    auto biasConstant = [&](ArrayRef<int64_t> shape) -> Value {
      if (!bias)
        return nullptr;
      auto type = RankedTensorType::get(shape, f32);
      return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, ArrayRef<float>(*bias)));
    };
    auto filterCst = conv.getFilter().getDefiningOp<ConstantOp>();
    ArrayRef<int64_t> pads = conv.getPads();

    if (transformOps && llvm::all_of(pads, [](int64_t p) { return p <= 16; })) {
      // The consumers the output transform takes in: a residual add of the
      // output's shape, then a ReLU.
      SmallVector<Operation *> takenIn;
      Value result = conv.getResult(), residual;
      auto singleUser = [](Value value) -> Operation * {
        return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
      };
      if (auto add = dyn_cast_or_null<AddOp>(singleUser(result))) {
        Value other = add.getLhs() == result ? add.getRhs() : add.getLhs();
        if (other != result && other.getType() == outType && add.getType() == outType &&
            add->getBlock() == conv->getBlock()) {
          residual = other;
          takenIn.push_back(add);
          result = add.getResult();
        }
      }
      bool relu = false;
      if (auto reluOp = dyn_cast_or_null<ReluOp>(singleUser(result));
          reluOp && reluOp->getBlock() == conv->getBlock()) {
        relu = true;
        takenIn.push_back(reluOp);
        result = reluOp.getResult();
      }
      Value v = WinogradInputOp::create(b, loc,
                                        RankedTensorType::get({a * a, c, tiles}, f32),
                                        conv.getInput(), b.getI64IntegerAttr(m),
                                        b.getDenseI64ArrayAttr(pads));
      Value product = MatmulOp::create(b, loc, weights(), v); // [(alpha, beta), F, tiles]
      // After the last op taken in: the residual may be computed after the
      // convolution.
      if (!takenIn.empty())
        b.setInsertionPoint(takenIn.back());
      Value y = WinogradOutputOp::create(b, loc, outType, product, biasConstant({f}), residual,
                                         b.getI64IntegerAttr(m),
                                         relu ? b.getUnitAttr() : UnitAttr());
      result.replaceAllUsesWith(y);
      for (Operation *op : llvm::reverse(takenIn))
        op->erase();
      conv.erase();
      if (filterCst->use_empty())
        filterCst.erase();
      return true;
    }

    // The padded input covers every tile: (m*th + 2) x (m*tw + 2).
    int64_t top = pads[0], left = pads[1];
    int64_t hp = m * th + 2, wp = m * tw + 2;
    SmallVector<int64_t> fullPads = {0, 0, top, left, 0, 0, hp - h - top, wp - w - left};
    Value x = conv.getInput();
    if (llvm::any_of(fullPads, [](int64_t p) { return p != 0; }))
      x = PadOp::create(b, loc, RankedTensorType::get({n, c, hp, wp}, f32), x,
                        b.getDenseI64ArrayAttr(fullPads), b.getStringAttr("constant"),
                        b.getF64FloatAttr(0.0));
    // X[(i, j), n, c, ty, tx] = x[n, c, m*ty + i, m*tx + j].
    SmallVector<Value> taps;
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < a; ++j)
        taps.push_back(SliceOp::create(b, loc, x,
                                       b.getDenseI64ArrayAttr({0, 0, i, j}),
                                       b.getDenseI64ArrayAttr({n, c, i + m * (th - 1) + 1,
                                                               j + m * (tw - 1) + 1}),
                                       b.getDenseI64ArrayAttr({1, 1, m, m})));
    Value cols = ConcatOp::create(b, loc, taps, int64_t(0));
    int64_t rest = n * c * th * tw;
    // V = B^T X B: along i (rows of the tile), then along j.
    Value bt = f32Matrix(b, loc, a, a, wm.bt);
    Value v = MatmulOp::create(b, loc, bt, reshapeTo(b, loc, cols, {a, a * rest}));
    v = MatmulOp::create(b, loc, bt, reshapeTo(b, loc, v, {a, a, rest}));
    // [(alpha, beta), C, N * tiles]: the GEMM's right-hand side.
    v = reshapeTo(b, loc, v, {a * a, n, c, th * tw});
    if (n > 1)
      v = TransposeOp::create(b, loc, v, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    v = reshapeTo(b, loc, v, {a * a, c, tiles});

    Value product = MatmulOp::create(b, loc, weights(), v); // [(alpha, beta), F, tiles]

    // Y = A^T M A: along alpha, then beta.
    Value at = f32Matrix(b, loc, m, a, wm.at);
    int64_t outer = f * tiles;
    Value y = MatmulOp::create(b, loc, at, reshapeTo(b, loc, product, {a, a * outer}));
    y = MatmulOp::create(b, loc, at, reshapeTo(b, loc, y, {m, a, outer}));
    // [x, y, F, N, ty, tx] -> [N, F, ty, x, tx, y] -> [N, F, m*th, m*tw].
    y = reshapeTo(b, loc, y, {m, m, f, n, th, tw});
    y = TransposeOp::create(b, loc, y, b.getDenseI64ArrayAttr({3, 2, 4, 0, 5, 1}));
    y = reshapeTo(b, loc, y, {n, f, m * th, m * tw});
    if (m * th != oh || m * tw != ow)
      y = SliceOp::create(b, loc, y, b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                          b.getDenseI64ArrayAttr({n, f, oh, ow}),
                          b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    if (bias)
      y = AddOp::create(b, loc, y, biasConstant({1, f, 1, 1}));
    conv.replaceAllUsesWith(y);
    conv.erase();
    if (filterCst->use_empty())
      filterCst.erase();
    return true;
  }
};

} // namespace
