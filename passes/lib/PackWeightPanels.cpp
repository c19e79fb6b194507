//===- PackWeightPanels.cpp - constant weights in column panels -----------===//
//
// The cpu's weight layouts, rearranged at compile time: the columns one
// kernel computes become one contiguous run of bytes through K.
//
// kiln-pack-int4-weights: the codes, scales and zero points of a
// kiln.matmul_int4. kiln-pack-matmul-panels: the float weight of a
// kiln.matmul, and the int8 weight of a kiln.matmul_integer of few rows
// (kiln.matmul_panels).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/SetVector.h"

#include <cstring>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNPACKINT4WEIGHTS
#define GEN_PASS_DEF_KILNPACKMATMULPANELS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// `value` (a constant of shape `view` once reshaped) transposed by `perm`
/// into a new constant of `type`; null when its bytes cannot be read.
Value permutedConstant(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> view,
                       ArrayRef<int64_t> perm, RankedTensorType type, StringRef name) {
  auto cst = value.getDefiningOp<ConstantOp>();
  if (!cst)
    return {};
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()); dense && dense.isSplat())
    return ConstantOp::create(b, loc, type, dense.reshape(type));
  std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (!bytes || bits % 8 != 0 || bytes->size() != bits / 8 * size_t(type.getNumElements()))
    return {};
  return bytesConstant(b, loc, type, permuteBytes(*bytes, bits / 8, view, perm), name);
}

/// A panel the cpu kernels can read: whole 16-lane vectors.
LogicalResult checkPanel(Operation *op, StringRef pass, int64_t panel) {
  if (panel > 0 && panel % 16 == 0)
    return success();
  return op->emitError() << pass << ": panel must be a positive multiple of 16, got " << panel;
}

struct KilnPackInt4WeightsPass
    : kiln::impl::KilnPackInt4WeightsBase<KilnPackInt4WeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(checkPanel(getOperation(), getArgument(), panel)))
      return signalPassFailure();
    SmallVector<MatmulInt4Op> ops;
    getOperation().walk([&](MatmulInt4Op op) {
      if (!op.getPanelWidth())
        ops.push_back(op);
    });
    unsigned counter = 0;
    for (MatmulInt4Op op : ops) {
      ArrayRef<int64_t> w = op.getWeights().getType().getShape();
      int64_t groups = w[0], half = w[1], n = w[2];
      if (n % panel != 0)
        continue;
      int64_t panels = n / panel;
      OpBuilder b(op);
      Location loc = op.getLoc();
      std::string suffix = std::to_string(counter);
      auto codesType = RankedTensorType::get({panels, groups, half, panel},
                                             op.getWeights().getType().getElementType());
      auto perColumn = [&](Value v) {
        return RankedTensorType::get({panels, groups, panel},
                                     cast<RankedTensorType>(v.getType()).getElementType());
      };
      Value codes = permutedConstant(b, loc, op.getWeights(), {groups, half, panels, panel},
                                     {2, 0, 1, 3}, codesType, "int4_panels_" + suffix);
      Value scale = permutedConstant(b, loc, op.getScale(), {groups, panels, panel}, {1, 0, 2},
                                     perColumn(op.getScale()), "int4_panel_scales_" + suffix);
      Value zero = permutedConstant(b, loc, op.getZeroPoint(), {groups, panels, panel},
                                    {1, 0, 2}, perColumn(op.getZeroPoint()),
                                    "int4_panel_zeros_" + suffix);
      if (!codes || !scale || !zero) {
        for (Value made : {codes, scale, zero})
          if (made)
            made.getDefiningOp()->erase();
        continue;
      }
      ++counter;
      llvm::SetVector<Operation *> old;
      for (Value v : {op.getWeights(), op.getScale(), op.getZeroPoint()})
        if (Operation *def = v.getDefiningOp())
          old.insert(def);
      auto packed = MatmulInt4Op::create(b, loc, op.getLhs(), codes, scale, zero);
      packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      op.replaceAllUsesWith(packed.getResult());
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
          lhs.getRank() < 2 || rhs.getRank() != 2 || !rhs.getElementType().isF32())
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
      int64_t streams = rows / std::max<int64_t>(lhs.getDimSize(lhs.getRank() - 2), 1);
      bool byRows = rows <= maxRows && streams <= kMaxWeightStreams;
      if ((!byRows && (!unfused || epilogue)) || k == 0 || n == 0)
        continue;
      replaceByPanels(op, op.getLhs(), cst, counter);
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
    std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
    size_t elemSize = rhs.getElementType().getIntOrFloatBitWidth() / 8;
    if (!bytes || bytes->size() != elemSize * static_cast<size_t>(k * n))
      return;
    OpBuilder b(op);
    int64_t panels = llvm::divideCeil(n, panel);
    auto type = RankedTensorType::get({panels, k, panel}, rhs.getElementType());
    Value weights = bytesConstant(b, op->getLoc(), type, panelBytes(*bytes, elemSize, k, n, panel),
                                  "matmul_panels_" + std::to_string(counter++));
    int64_t columns = wholePanels ? panels * panel : n;
    auto packed = MatmulPanelsOp::create(b, op->getLoc(), lhs, weights, b.getI64IntegerAttr(columns));
    packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    Value result = packed.getResult();
    if (columns != n) {
      auto shape = cast<RankedTensorType>(result.getType()).getShape();
      SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
      ends.back() = n;
      result = SliceOp::create(b, op->getLoc(), result, b.getDenseI64ArrayAttr(starts),
                               b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
    }
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    if (cst->use_empty())
      cst.erase();
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
} // namespace
