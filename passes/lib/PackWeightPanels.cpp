//===- PackWeightPanels.cpp - constant weights in column panels -----------===//
//
// The cpu's weight layouts, rearranged at compile time: the columns one
// kernel computes become one contiguous run of bytes through K.
//
// kiln-pack-int4-weights: the codes, scales and zero points of a
// kiln.matmul_int4. kiln-narrow-matmul-weights: f32 weights stored in the
// gfx matrix cores' f16 or bf16; kiln-transpose-matmul-weights: a matmul's
// weight k-fastest for the matrix cores' B operand. kiln-pack-matmul-panels: the float weight of a
// kiln.matmul, and the int8 weight of a kiln.matmul_integer of few rows
// (kiln.matmul_panels).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SetVector.h"

#include <cstring>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNPACKINT4WEIGHTS
#define GEN_PASS_DEF_KILNPACKMATMULPANELS
#define GEN_PASS_DEF_KILNNARROWMATMULWEIGHTS
#define GEN_PASS_DEF_KILNTRANSPOSEMATMULWEIGHTS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// A panel the cpu kernels can read: whole 16-lane vectors.
LogicalResult checkPanel(Operation *op, StringRef pass, int64_t panel) {
  if (panel > 0 && panel % 16 == 0)
    return success();
  return op->emitError() << pass << ": panel must be a positive multiple of 16, got " << panel;
}

/// The row-major bytes of a constant (a splat repeated), else nullopt.
std::optional<std::vector<char>> constantBytes(Value value) {
  auto cst = value.getDefiningOp<ConstantOp>();
  if (!cst)
    return std::nullopt;
  auto type = cast<RankedTensorType>(cst.getType());
  size_t elemSize = type.getElementType().getIntOrFloatBitWidth() / 8;
  size_t count = static_cast<size_t>(type.getNumElements());
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()); dense && dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    if (one.size() != elemSize)
      return std::nullopt;
    std::vector<char> out(count * elemSize);
    for (size_t i = 0; i < count; ++i)
      std::memcpy(out.data() + i * elemSize, one.data(), elemSize);
    return out;
  }
  std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
  if (!bytes || bytes->size() != count * elemSize)
    return std::nullopt;
  return std::vector<char>(bytes->begin(), bytes->end());
}

/// The first `n` columns (last dimension) of `result`: a kiln.slice when it
/// has more (a product computed for whole panels), else `result`.
Value firstColumns(OpBuilder &b, Location loc, Value result, int64_t n) {
  auto shape = cast<RankedTensorType>(result.getType()).getShape();
  if (shape.back() == n)
    return result;
  SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  ends.back() = n;
  return SliceOp::create(b, loc, result, b.getDenseI64ArrayAttr(starts),
                         b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
}

/// Rows of `n` elements of `elemSize` bytes widened to `padded` with zeros.
std::vector<char> padRows(ArrayRef<char> bytes, size_t elemSize, int64_t n, int64_t padded) {
  size_t rows = bytes.size() / (elemSize * n);
  std::vector<char> out(rows * padded * elemSize, 0);
  for (size_t r = 0; r < rows; ++r)
    std::memcpy(out.data() + r * padded * elemSize, bytes.data() + r * n * elemSize, n * elemSize);
  return out;
}

struct KilnPackInt4WeightsPass
    : kiln::impl::KilnPackInt4WeightsBase<KilnPackInt4WeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(checkPanel(getOperation(), getArgument(), panel)))
      return signalPassFailure();
    SmallVector<MatmulInt4Op> ops;
    getOperation().walk([&](MatmulInt4Op op) {
      if (!op.getPanelWidth() && (!w4a8Only || op.getInt8Activations()))
        ops.push_back(op);
    });
    unsigned counter = 0;
    for (MatmulInt4Op op : ops) {
      ArrayRef<int64_t> w = op.getWeights().getType().getShape();
      int64_t groups = w[0], half = w[1], n = w[2];
      // W4A8's panels: four rows of each column side by side, the last
      // panel padded with columns that add 0.
      bool quads = op.getInt8Activations() && half % 4 == 0;
      if (n % panel != 0 && !quads)
        continue;
      int64_t panels = llvm::divideCeil(n, panel), padded = panels * panel;
      std::optional<std::vector<char>> codeBytes = constantBytes(op.getWeights());
      std::optional<std::vector<char>> scaleBytes = constantBytes(op.getScale());
      std::optional<std::vector<char>> zeroBytes = constantBytes(op.getZeroPoint());
      if (!codeBytes || !scaleBytes || !zeroBytes)
        continue;
      size_t floatSize = op.getScale().getType().getElementType().getIntOrFloatBitWidth() / 8;
      if (padded != n) {
        *codeBytes = padRows(*codeBytes, 1, n, padded);
        *scaleBytes = padRows(*scaleBytes, floatSize, n, padded);
        *zeroBytes = padRows(*zeroBytes, floatSize, n, padded);
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      std::string suffix = std::to_string(counter++);
      Type byte = op.getWeights().getType().getElementType();
      RankedTensorType codesType;
      std::vector<char> codes;
      if (quads) {
        // [g, t, i, c, l] -> [c, g, t, l, i]
        codesType = RankedTensorType::get({panels, groups, half / 4, panel, 4}, byte);
        codes = permuteBytes(*codeBytes, 1, {groups, half / 4, 4, panels, panel}, {3, 0, 1, 4, 2});
      } else {
        codesType = RankedTensorType::get({panels, groups, half, panel}, byte);
        codes = permuteBytes(*codeBytes, 1, {groups, half, panels, panel}, {2, 0, 1, 3});
      }
      auto perColumn = [&](Value v, ArrayRef<char> bytes, StringRef name) -> Value {
        auto type = RankedTensorType::get({panels, groups, panel},
                                          cast<RankedTensorType>(v.getType()).getElementType());
        // A splat stays one (padding columns' values are sliced away).
        if (auto dense = dyn_cast<DenseElementsAttr>(v.getDefiningOp<ConstantOp>().getValue());
            dense && dense.isSplat())
          return ConstantOp::create(b, loc, type,
                                    DenseElementsAttr::get(type, dense.getSplatValue<Attribute>()));
        return bytesConstant(b, loc, type,
                             permuteBytes(bytes, floatSize, {groups, panels, panel}, {1, 0, 2}),
                             (name + suffix).str());
      };
      Value packedCodes = bytesConstant(b, loc, codesType, codes, "int4_panels_" + suffix);
      Value scale = perColumn(op.getScale(), *scaleBytes, "int4_panel_scales_");
      Value zero = perColumn(op.getZeroPoint(), *zeroBytes, "int4_panel_zeros_");
      llvm::SetVector<Operation *> old;
      for (Value v : {op.getWeights(), op.getScale(), op.getZeroPoint()})
        if (Operation *def = v.getDefiningOp())
          old.insert(def);
      Value lhs = op.getLhs();
      auto packed = MatmulInt4Op::create(b, loc, lhs, packedCodes, scale, zero);
      packed->setAttrs(op->getAttrDictionary());
      Value result = firstColumns(b, loc, packed.getResult(), n);
      op.replaceAllUsesWith(result);
      op.erase();
      for (Operation *def : old)
        if (def->use_empty())
          def->erase();
    }
  }
};

/// `[K, N]` row-major bytes as `[ceil(N / P), K, P]`, the columns past N
/// zero.
std::vector<char> panelBytes(ArrayRef<char> bytes, size_t elemSize, int64_t k, int64_t n,
                             int64_t panel) {
  int64_t panels = llvm::divideCeil(n, panel);
  std::vector<char> out(static_cast<size_t>(panels * k * panel) * elemSize, 0);
  for (int64_t c = 0; c < panels; ++c) {
    int64_t width = std::min(panel, n - c * panel);
    for (int64_t r = 0; r < k; ++r)
      std::memcpy(out.data() + ((c * k + r) * panel) * elemSize,
                  bytes.data() + (r * n + c * panel) * elemSize, width * elemSize);
  }
  return out;
}

/// 8-bit products of at most this many rows get panels: a matrix-vector
/// product (an INT8 LLM's decode step, a quantized classifier's last layer)
/// streams its weight once, which a row-major [K, N] weight spreads over a
/// page per row (ONNX's lm_head 256 x 32000: 7 GB/s, against 28 for the
/// same product in float panels). More rows keep the GEMM register tiles,
/// which interleave their column blocks (interleaveDotProductColumns).
constexpr int64_t kMaxIntegerRows = 8;

struct KilnPackMatmulPanelsPass
    : kiln::impl::KilnPackMatmulPanelsBase<KilnPackMatmulPanelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(checkPanel(getOperation(), getArgument(), panel)))
      return signalPassFailure();
    unsigned counter = 0;
    packIntegerProducts(counter);
    SmallVector<MatmulOp> ops;
    getOperation().walk([&](MatmulOp op) { ops.push_back(op); });
    for (MatmulOp op : ops) {
      auto lhs = dyn_cast<RankedTensorType>(op.getLhs().getType());
      auto rhs = dyn_cast<RankedTensorType>(op.getRhs().getType());
      auto cst = op.getRhs().getDefiningOp<ConstantOp>();
      if (!lhs || !rhs || !cst || !lhs.hasStaticShape() || !rhs.hasStaticShape() ||
          lhs.getRank() < 2 || rhs.getRank() != 2)
        continue;
      Type elem = rhs.getElementType();
      if (!elem.isF32() && !(halfFloats && (elem.isF16() || elem.isBF16())))
        continue;
      int64_t rows = 1;
      for (int64_t d : lhs.getShape().drop_back())
        rows *= d;
      int64_t k = rhs.getDimSize(0), n = rhs.getDimSize(1);
      // Beyond `max-rows`, only a product whose result no elementwise op
      // reads: the GEMM register tiles take a bias add, an activation or a
      // residual add into their epilogue, which the panel kernel does not.
      bool epilogue = llvm::any_of(op->getUsers(), [](Operation *user) { return isElementwiseOp(user); });
      // The panel kernel streams the weight once per index of the lhs's
      // leading dimensions before its rows (the second-to-last), so the row
      // rule also bounds those streams: a [197, 1, 768] lhs (torch's
      // sequence-first attention) made 197 weight streams, ViT-B/16's
      // projections 60x slower; ConvNeXt's [1, 7, 7, 768] (7 streams of 7
      // rows) still gains.
      constexpr int64_t kMaxWeightStreams = 8;
      // With enough rows that every workgroup takes the GEMM register tiles
      // (which fold the leading dimensions into M) unit dimensions do not
      // count: ViT-B/16's [197, 1, 768] QKV projections are 197 rows, one
      // stream (8% faster packed than copying weight blocks at run time).
      constexpr int64_t kGemmTileRows = 128;
      int64_t rowDim = lhs.getDimSize(lhs.getRank() - 2);
      if (rows >= kGemmTileRows)
        for (int64_t d : llvm::reverse(lhs.getShape().drop_back()))
          if (d != 1) {
            rowDim = d;
            break;
          }
      int64_t streams = rows / std::max<int64_t>(rowDim, 1);
      bool byRows = rows <= maxRows && streams <= kMaxWeightStreams;
      if ((!byRows && (!unfused || epilogue)) || k == 0 || n == 0)
        continue;
      // A few-row product whose N is not whole panels (a classifier's 1000
      // classes) is computed for whole panels, so that its workgroups can
      // split the columns in panels (otherwise it is one workgroup: ResNet-
      // 50's classifier on one core of two), where the padding is at most
      // an eighth of N and a bias add, if any, can take the padding too.
      int64_t padding = llvm::divideCeil(n, panel) * panel - n;
      bool wholePanels = padding > 0 && 8 * padding <= n && rows <= kMaxIntegerRows &&
                         (!epilogue || paddableBias(op->getResult(0)));
      replaceByPanels(op, op.getLhs(), cst, counter, wholePanels);
    }
  }

  /// `op` (a product of `lhs` by the constant `[K, N]` weight `cst`) as
  /// kiln.matmul_panels of the weight in panels; nothing when its bytes
  /// cannot be read.
  /// With `wholePanels`, the product is computed for every column of the
  /// panels and sliced to N.
  void replaceByPanels(Operation *op, Value lhs, ConstantOp cst, unsigned &counter,
                       bool wholePanels = false) {
    auto rhs = cast<RankedTensorType>(cst.getType());
    int64_t k = rhs.getDimSize(0), n = rhs.getDimSize(1);
    int64_t panels = llvm::divideCeil(n, panel);
    auto type = RankedTensorType::get({panels, k, panel}, rhs.getElementType());
    OpBuilder b(op);
    Value weights;
    // A splat filling whole panels stays a splat.
    if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
        dense && dense.isSplat() && n % panel == 0) {
      weights = ConstantOp::create(b, op->getLoc(), type,
                                   DenseElementsAttr::get(type, dense.getSplatValue<Attribute>()));
    } else {
      std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
      size_t elemSize = rhs.getElementType().getIntOrFloatBitWidth() / 8;
      if (!bytes || bytes->size() != elemSize * static_cast<size_t>(k * n))
        return;
      weights = bytesConstant(b, op->getLoc(), type, panelBytes(*bytes, elemSize, k, n, panel),
                              "matmul_panels_" + std::to_string(counter++));
    }
    int64_t columns = wholePanels ? panels * panel : n;
    auto packed = MatmulPanelsOp::create(b, op->getLoc(), lhs, weights, b.getI64IntegerAttr(columns));
    packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    Value product = packed.getResult();
    if (columns != n)
      if (AddOp add = paddableBias(op->getResult(0))) {
        // The bias add on the whole panels (its bias padded with zeros),
        // then the slice.
        Value bias = add.getLhs() == op->getResult(0) ? add.getRhs() : add.getLhs();
        auto biasType = cast<RankedTensorType>(bias.getType());
        SmallVector<int64_t> biasShape(biasType.getShape());
        biasShape.back() = columns;
        std::optional<std::vector<char>> biasBytes = constantBytes(bias);
        OpBuilder ab(add);
        Value padded = bytesConstant(
            ab, add.getLoc(), RankedTensorType::get(biasShape, biasType.getElementType()),
            padRows(*biasBytes, 4, n, columns), "matmul_panels_bias_" + std::to_string(counter));
        auto wide = AddOp::create(ab, add.getLoc(), product, padded);
        add.getResult().replaceAllUsesWith(firstColumns(ab, add.getLoc(), wide.getResult(), n));
        add.erase();
        if (bias.use_empty())
          bias.getDefiningOp()->erase();
        op->erase();
        if (cst->use_empty())
          cst.erase();
        return;
      }
    Value result = firstColumns(b, op->getLoc(), product, n);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    if (cst->use_empty())
      cst.erase();
  }

  /// The bias add that alone reads `product` (`[..., N]` f32), when its
  /// other operand is a constant `[N]` (leading 1s allowed) whose bytes can
  /// be padded.
  static AddOp paddableBias(Value product) {
    if (!product.hasOneUse())
      return {};
    auto add = dyn_cast<AddOp>(*product.getUsers().begin());
    if (!add || add.getLhs() == add.getRhs())
      return {};
    Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
    auto type = dyn_cast<RankedTensorType>(bias.getType());
    auto productType = cast<RankedTensorType>(product.getType());
    if (!type || !type.getElementType().isF32() || type.getRank() == 0 ||
        type.getRank() > productType.getRank() || type.getShape().back() != productType.getShape().back() ||
        add.getType() != productType || !bias.getDefiningOp<ConstantOp>() ||
        !llvm::all_of(type.getShape().drop_back(), [](int64_t d) { return d == 1; }) ||
        !constantBytes(bias))
      return {};
    return add;
  }

  /// kiln.matmul_integer of at most kMaxIntegerRows rows of 8-bit
  /// activations by a constant [K, N] int8 weight, without zero points (the
  /// form kiln-fold-quantized-ops leaves: the zero points' correction is
  /// elementwise): the same product on the weight in panels.
  void packIntegerProducts(unsigned &counter) {
    SmallVector<MatmulIntegerOp> ops;
    getOperation().walk([&](MatmulIntegerOp op) { ops.push_back(op); });
    for (MatmulIntegerOp op : ops) {
      auto lhs = dyn_cast<RankedTensorType>(op.getLhs().getType());
      auto rhs = dyn_cast<RankedTensorType>(op.getRhs().getType());
      auto cst = op.getRhs().getDefiningOp<ConstantOp>();
      if (!lhs || !rhs || !cst || op.getLhsZeroPoint() || op.getRhsZeroPoint() ||
          !lhs.hasStaticShape() || !rhs.hasStaticShape() || lhs.getRank() < 2 ||
          rhs.getRank() != 2 || !lhs.getElementType().isInteger(8) ||
          !rhs.getElementType().isInteger(8) || rhs.getElementType().isUnsignedInteger())
        continue;
      int64_t rows = 1;
      for (int64_t d : lhs.getShape().drop_back())
        rows *= d;
      int64_t k = rhs.getDimSize(0), n = rhs.getDimSize(1);
      // (A last partial panel is computed whole, its zero columns included,
      // and the result sliced to N: the register tiles that read the panels
      // take whole panels. ResNet-50's classifier, 1000 columns: 0.37 ->
      // 0.14 ms. Not where the padding would be more than an eighth of the
      // work: 5 columns would compute 32.)
      int64_t padding = llvm::divideCeil(n, panel) * panel - n;
      if (rows > std::min<int64_t>(maxRows, kMaxIntegerRows) || k == 0 || n == 0 ||
          8 * padding > n)
        continue;
      replaceByPanels(op, op.getLhs(), cst, counter, /*wholePanels=*/true);
    }
  }
};
struct KilnNarrowMatmulWeightsPass
    : kiln::impl::KilnNarrowMatmulWeightsBase<KilnNarrowMatmulWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (precision != "f16" && precision != "bf16") {
      getOperation().emitError() << getArgument() << ": precision must be f16 or bf16, got '"
                                 << precision << "'";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    Type narrow = precision == "f16" ? Type(Float16Type::get(ctx)) : Type(BFloat16Type::get(ctx));
    const llvm::fltSemantics &semantics = cast<FloatType>(narrow).getFloatSemantics();
    SmallVector<OpOperand *> weights;
    getOperation().walk([&](Operation *op) {
      if (isa<MatmulOp, MatmulPanelsOp>(op))
        weights.push_back(&op->getOpOperand(1));
      else if (auto conv = dyn_cast<ConvOp>(op))
        weights.push_back(&conv.getFilterMutable());
    });
    unsigned counter = 0;
    for (OpOperand *weight : weights) {
      auto cst = weight->get().getDefiningOp<ConstantOp>();
      if (!cst || !cst.getType().getElementType().isF32() || !cst.getType().hasStaticShape())
        continue;
      std::optional<std::vector<char>> bytes = constantBytes(cst);
      if (!bytes)
        continue;
      size_t count = bytes->size() / 4;
      std::vector<char> out(count * 2);
      for (size_t i = 0; i < count; ++i) {
        float f;
        std::memcpy(&f, bytes->data() + 4 * i, 4);
        llvm::APFloat value(f);
        bool lost;
        value.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
        uint16_t bits = static_cast<uint16_t>(value.bitcastToAPInt().getZExtValue());
        std::memcpy(out.data() + 2 * i, &bits, 2);
      }
      OpBuilder b(weight->getOwner());
      Location loc = cst.getLoc();
      auto type = RankedTensorType::get(cst.getType().getShape(), narrow);
      Value stored = bytesConstant(b, loc, type, out, "narrow_weight_" + std::to_string(counter++));
      weight->set(CastOp::create(b, loc, cst.getType(), stored).getResult());
      if (cst->use_empty())
        cst.erase();
    }
  }
};

struct KilnTransposeMatmulWeightsPass
    : kiln::impl::KilnTransposeMatmulWeightsBase<KilnTransposeMatmulWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Float products, and integer ones whose weight has no zero point (the
    // lowering would sum the weight's columns in the same dispatch).
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<MatmulOp>(op))
        products.push_back(op);
      else if (auto integer = dyn_cast<MatmulIntegerOp>(op); integer && !integer.getRhsZeroPoint())
        products.push_back(op);
    });
    unsigned counter = 0;
    for (Operation *op : products) {
      auto lhsType = cast<RankedTensorType>(op->getOperand(0).getType());
      if (!lhsType.hasStaticShape() || lhsType.getRank() == 0)
        continue;
      int64_t rows = 1;
      for (int64_t d : lhsType.getShape().drop_back())
        rows *= d;
      if (rows <= minRows)
        continue;
      // The weight, or the narrowing cast in front of it; each read by this
      // product only.
      Value weight = op->getOperand(1);
      auto narrowed = weight.getDefiningOp<CastOp>();
      if (narrowed) {
        if (!weight.hasOneUse())
          continue;
        weight = narrowed.getInput();
      }
      auto cst = weight.getDefiningOp<ConstantOp>();
      if (!cst || !weight.hasOneUse())
        continue;
      auto type = cast<RankedTensorType>(cst.getType());
      Type elem = type.getElementType();
      if (type.getRank() != 2 || !type.hasStaticShape() ||
          !(elem.isF32() || elem.isF16() || elem.isBF16() || elem.isInteger(8)))
        continue;
      // A splat reads the same either way; a small weight is cloned into
      // the dispatch (and its transpose would fold back).
      if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
          (dense && dense.isSplat()) || type.getNumElements() <= 64)
        continue;
      std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
      size_t elemSize = elem.getIntOrFloatBitWidth() / 8;
      if (!bytes || bytes->size() != elemSize * static_cast<size_t>(type.getNumElements()))
        continue;
      int64_t k = type.getDimSize(0), n = type.getDimSize(1);
      OpBuilder b(cst);
      Location loc = cst.getLoc();
      Value stored = bytesConstant(b, loc, RankedTensorType::get({n, k}, elem),
                                   permuteBytes(*bytes, elemSize, {k, n}, {1, 0}),
                                   "k_major_weight_" + std::to_string(counter++));
      auto transposed = TransposeOp::create(b, loc, stored, b.getDenseI64ArrayAttr({1, 0}));
      cst.getResult().replaceAllUsesWith(transposed.getResult());
      cst.erase();
    }
  }
};
} // namespace
