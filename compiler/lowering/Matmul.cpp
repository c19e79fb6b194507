//===- Matmul.cpp - lowering of kiln.matmul -------------------------------===//
//
// The common shapes become named linalg ops, which the code generators
// recognize as GEMMs: `[.., M, K] x [K, N]` (a weight) collapses the leading
// dimensions into M and is one `linalg.matmul`. Batched products (attention)
// are one linalg.generic contraction over the full rank, batch dimensions
// broadcasting through the indexing maps.
//
// kiln.matmul_integer is the same contraction accumulating in i32. The
// quantized form, 8-bit activations with one zero point z times int8
// weights without one (or 4-bit ones times int4), reads both as they are
// (a linalg.generic zero-extends uint8 activations: linalg.matmul's
// `cast_unsigned` would apply to both operands) and subtracts z * (column
// sums of the weights) afterwards. kFourBitAttr goes on the contraction.
// Otherwise unsigned operands and operands with a zero point are first
// widened to i32 with the zero point subtracted (an elementwise generic that
// the CPU backend fuses into the GEMM's workgroups); signed operands without
// one enter the contraction as i8 and are sign-extended there, as linalg's
// default cast does.
//
// kiln.matmul_int4 is one linalg.generic over (m, n, group, half, j) that
// unpacks each 4-bit code from its byte, dequantizes it and multiplies-adds
// (marked kiln.int4_matmul for the cpu backend's kernel); the lhs is viewed
// as [M, K / B, 2, B / 2], so that every indexing map is a projection.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"
#include "lowering/Passes.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

Value zeroFilled(OpBuilder &b, Location loc, RankedTensorType type) {
  return filledTensor(b, loc, type,
                      scalarConstant(b, loc, type.getElementType(), 0));
}

/// `lhs [.., M, K] x rhs [.., K, N]` into `resultType`. The operands may
/// have narrower integer types than the result (the signless `i8` operands of
/// kiln.matmul_integer), which linalg sign-extends; with `lhsUnsigned` the
/// lhs is zero-extended instead (raw uint8 activations), which only a
/// linalg.generic can say.
Value lowerMatmul(OpBuilder &rewriter, Location loc, Value lhs, Value rhs,
                  RankedTensorType resultType, bool lhsUnsigned = false) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  Type elem = resultType.getElementType();
  ArrayRef<int64_t> lhsShape = lhsType.getShape(),
                    rhsShape = rhsType.getShape();
  int64_t k = lhsShape.back(), n = rhsShape.back();
  ArrayRef<int64_t> batch = resultType.getShape().drop_back(2);

  // [.., M, K] x [K, N]: one GEMM with the leading dimensions folded into M.
  // (A rank-2 rhs preceded by 1s is the same GEMM.)
  if (product(rhsShape.drop_back(2)) == 1) {
    int64_t rows = product(lhsShape.drop_back());
    auto lhs2 = RankedTensorType::get({rows, k}, lhsType.getElementType());
    auto rhs2 = RankedTensorType::get({k, n}, rhsType.getElementType());
    auto out2 = RankedTensorType::get({rows, n}, elem);
    Value a = reshapeTensor(rewriter, loc, lhs, lhs2);
    Value b = reshapeTensor(rewriter, loc, rhs, rhs2);
    Value c;
    if (lhsUnsigned) {
      MLIRContext *ctx = rewriter.getContext();
      AffineExpr m, nn, kk;
      bindDims(ctx, m, nn, kk);
      SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, kk}, ctx),
                                     AffineMap::get(3, 0, {kk, nn}, ctx),
                                     AffineMap::get(3, 0, {m, nn}, ctx)};
      c = linalg::GenericOp::create(
              rewriter, loc, out2, ValueRange{a, b}, ValueRange{zeroFilled(rewriter, loc, out2)},
              maps, iteratorTypes(3, {2}),
              [&](OpBuilder &nb, Location l, ValueRange args) {
                multiplyAccumulate(nb, l, args, elem, /*lhsUnsigned=*/true);
              })
              .getResult(0);
    } else {
      c = linalg::MatmulOp::create(rewriter, loc, ValueRange{a, b},
                                   ValueRange{zeroFilled(rewriter, loc, out2)})
              .getResult(0);
    }
    return reshapeTensor(rewriter, loc, c, resultType);
  }

  // Batched (equal or broadcast batches): one generic contraction over
  // (batch.., m, n, k), with no reshapes, so that the dispatch's epilogue
  // shares its iteration space and fuses into its workgroups.
  MLIRContext *ctx = rewriter.getContext();
  unsigned rank = resultType.getRank(), loops = rank + 1;
  auto operandMap = [&](ArrayRef<int64_t> shape, bool isLhs) {
    SmallVector<AffineExpr> exprs;
    unsigned offset = (rank - 2) - (shape.size() - 2);
    for (auto [i, d] : llvm::enumerate(shape.drop_back(2))) {
      if (d == 1 && batch[offset + i] != 1)
        exprs.push_back(getAffineConstantExpr(0, ctx));
      else
        exprs.push_back(getAffineDimExpr(offset + i, ctx));
    }
    AffineExpr mD = getAffineDimExpr(rank - 2, ctx),
               nD = getAffineDimExpr(rank - 1, ctx),
               kD = getAffineDimExpr(rank, ctx);
    exprs.push_back(isLhs ? mD : kD);
    exprs.push_back(isLhs ? kD : nD);
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  SmallVector<AffineExpr> outExprs;
  for (unsigned i = 0; i < rank; ++i)
    outExprs.push_back(getAffineDimExpr(i, ctx));
  SmallVector<AffineMap> maps = {operandMap(lhsShape, true),
                                 operandMap(rhsShape, false),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, resultType, ValueRange{lhs, rhs},
      ValueRange{zeroFilled(rewriter, loc, resultType)}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        multiplyAccumulate(b, l, args, elem, lhsUnsigned);
      });
  return generic.getResult(0);
}

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerMatmul(rewriter, op.getLoc(), op.getLhs(),
                                       op.getRhs(), op.getType()));
    return success();
  }
};

/// Marks the linalg contraction that produced `result` (seen through
/// reshapes) with kFourBitAttr.
void markFourBit(Value result) {
  Value v = result;
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    if (isa<linalg::LinalgOp>(def))
      def->setAttr(kFourBitAttr, UnitAttr::get(def->getContext()));
    return;
  }
}

/// kiln.matmul_integer: each operand that is unsigned or has a zero point
/// becomes `i32` with the zero point subtracted (widenInteger); a signed
/// operand without one stays `i8`, which the contraction sign-extends.
struct MatmulIntegerLowering : OpRewritePattern<MatmulIntegerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulIntegerOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticShapes(op)))
      return failure();
    Location loc = op.getLoc();
    // Raw 8-bit activations (unsigned or signed) with one zero point times
    // signed weights without one: the contraction reads the bytes as they
    // are and the zero point comes off afterwards, z * (column sums of the
    // rhs), so that the CPU's dot-product instructions (vpdpbusd: uint8 x
    // int8) see 8-bit operands.
    std::optional<int64_t> lhsZero = uniformZeroPoint(op.getLhsZeroPoint());
    std::optional<int64_t> rhsZero = uniformZeroPoint(op.getRhsZeroPoint());
    Type lhsElem = getElementTypeOrSelf(op.getLhs().getType());
    Type rhsElem = getElementTypeOrSelf(op.getRhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    // (The same for 4-bit operands, whose products the gfx kernels take to
    // RDNA's iu4 WMMA as they are.)
    bool sameWidth = (lhsElem.isInteger(8) && rhsElem.isSignlessInteger(8)) ||
                     (lhsElem.isInteger(4) && rhsElem.isSignlessInteger(4));
    if (lhsZero && rhsZero == 0 && sameWidth &&
        rhsType.getRank() >= 2 && cast<RankedTensorType>(op.getLhs().getType()).getRank() >= 2) {
      Value lhs = reinterpret(rewriter, loc, op.getLhs(), signlessType(op.getLhs().getType()));
      Value acc = lowerMatmul(rewriter, loc, lhs, op.getRhs(), op.getType(),
                              hasUnsignedElements(lhsElem));
      if (op->hasAttr(kFourBitAttr))
        markFourBit(acc);
      SmallVector<int64_t> sumShape(rhsType.getShape());
      sumShape[sumShape.size() - 2] = 1;
      rewriter.replaceOp(op, subtractZeroPointSums(rewriter, loc, acc, op.getRhs(),
                                                   rhsType.getRank() - 2, sumShape, *lhsZero));
      return success();
    }
    auto operand = [&](Value value, Value zeroPoint) {
      if (!zeroPoint &&
          getElementTypeOrSelf(value.getType()).isSignlessInteger())
        return value;
      return widenInteger(rewriter, loc, value, zeroPoint);
    };
    Value lhs = operand(op.getLhs(), op.getLhsZeroPoint());
    Value rhs = operand(op.getRhs(), op.getRhsZeroPoint());
    Value acc = lowerMatmul(rewriter, loc, lhs, rhs, op.getType());
    if (op->hasAttr(kFourBitAttr) && lhs == op.getLhs() && rhs == op.getRhs())
      markFourBit(acc);
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// kiln.matmul_int4: `out[m, n] += lhs[m, g, p, j] * (code - zero[g, n]) *
/// scale[g, n]` with code the low (p = 0) or high (p = 1) four bits of
/// `weights[g, j, n]` (in column panels of P: `weights[n / P, g, j, n mod P]`
/// and `scale[n / P, g, n mod P]`; in the W4A8 kernel's panels `weights[n /
/// P, g, j / 4, n mod P, j mod 4]`).
///
/// With int8_activations (W4A8) a first generic takes each row's largest
/// magnitude per group, `amax[m, g]` (the f32's bits in an i32), and the
/// product's body quantizes its
/// lhs element with it: `round_half_even(lhs * 127 / amax) * (code - zero)
/// * (amax / 127 * scale)`. That is the op's value up to the order of the
/// float sums; the cpu kernel computes it as the op defines it, each
/// group's sum exact in i32.
struct MatmulInt4Lowering : OpRewritePattern<MatmulInt4Op> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulInt4Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto lhsType = op.getLhs().getType();
    Type elem = lhsType.getElementType();
    // [K / B, B / 2, N], or column panels [N / P, K / B, B / 2, P] or
    // [N / P, K / B, B / 8, P, 4].
    int64_t panel = op.getPanelWidth();
    bool quads = op.getWeights().getType().getRank() == 5;
    int64_t groups = op.getGroups(), half = op.getBlockSize() / 2;
    int64_t n = cast<RankedTensorType>(op.getType()).getShape().back();
    int64_t k = lhsType.getShape().back();
    int64_t rows = product(lhsType.getShape().drop_back());
    Value lhs = reshapeTensor(rewriter, loc, op.getLhs(),
                              RankedTensorType::get({rows, k}, elem));
    lhs = reshapeTensor(rewriter, loc, lhs,
                        RankedTensorType::get({rows, groups, 2, half}, elem));
    auto out2 = RankedTensorType::get({rows, n}, elem);
    AffineExpr m, nn, g, p, j;
    bindDims(ctx, m, nn, g, p, j);
    // A panel's column n is (n floordiv P, n mod P): the loops stay (m, n,
    // g, p, j) and the result's map a projection, so that workgroup tiles
    // of whole panels fuse like any other contraction's.
    SmallVector<AffineExpr> codes = {g, j, nn}, perColumn = {g, nn};
    if (panel) {
      codes = {nn.floorDiv(panel), g, j, nn % panel};
      if (quads)
        codes = {nn.floorDiv(panel), g, j.floorDiv(4), nn % panel, j % 4};
      perColumn = {nn.floorDiv(panel), g, nn % panel};
    }
    SmallVector<Value> inputs = {lhs, op.getWeights(), op.getScale(), op.getZeroPoint()};
    SmallVector<AffineMap> maps = {
        AffineMap::get(5, 0, {m, g, p, j}, ctx), AffineMap::get(5, 0, codes, ctx),
        AffineMap::get(5, 0, perColumn, ctx), AffineMap::get(5, 0, perColumn, ctx)};
    bool int8 = op.getInt8Activations();
    if (int8 && !elem.isF32())
      return rewriter.notifyMatchFailure(op, "int8 activations need f32 ones");
    if (int8) {
      // amax[m, g] = max |lhs[m, g, :, :]|, as the bits of the f32 in an
      // i32: for magnitudes (sign bit clear) the integer order is the float
      // order, a NaN above every number (so it still reaches the result),
      // and an unsigned integer max is one instruction per vector where a
      // float maximum with NaN semantics is three.
      Type i32 = rewriter.getI32Type();
      auto amaxType = RankedTensorType::get({rows, groups}, i32);
      AffineExpr m4, g4, p4, j4;
      bindDims(ctx, m4, g4, p4, j4);
      auto amax = linalg::GenericOp::create(
          rewriter, loc, amaxType, ValueRange{lhs}, ValueRange{zeroFilled(rewriter, loc, amaxType)},
          SmallVector<AffineMap>{AffineMap::get(4, 0, {m4, g4, p4, j4}, ctx),
                                 AffineMap::get(4, 0, {m4, g4}, ctx)},
          iteratorTypes(4, {2, 3}), [&](OpBuilder &b, Location l, ValueRange args) {
            Value magnitude = arith::BitcastOp::create(b, l, i32, math::AbsFOp::create(b, l, args[0]));
            linalg::YieldOp::create(b, l, ValueRange{arith::MaxUIOp::create(b, l, args[1], magnitude)});
          });
      inputs.push_back(amax.getResult(0));
      maps.push_back(AffineMap::get(5, 0, {m, g}, ctx));
    }
    maps.push_back(AffineMap::get(5, 0, {m, nn}, ctx));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, out2, inputs, ValueRange{zeroFilled(rewriter, loc, out2)}, maps,
        iteratorTypes(5, {2, 3, 4}), [&](OpBuilder &b, Location l, ValueRange args) {
          // The code: (byte >> (4 * p)) & 15, in i32.
          Type i32 = b.getI32Type();
          Value byte = arith::ExtUIOp::create(b, l, i32, args[1]);
          Value half = arith::IndexCastOp::create(b, l, i32, linalg::IndexOp::create(b, l, 3));
          Value shift = arith::MulIOp::create(
              b, l, half, arith::ConstantOp::create(b, l, b.getI32IntegerAttr(4)));
          Value code = arith::AndIOp::create(
              b, l, arith::ShRUIOp::create(b, l, byte, shift),
              arith::ConstantOp::create(b, l, b.getI32IntegerAttr(15)));
          Value w = arith::SIToFPOp::create(b, l, elem, code);
          w = arith::SubFOp::create(b, l, w, args[3]);
          Value product;
          if (int8) {
            Value amax = arith::BitcastOp::create(b, l, elem, args[4]);
            auto c = [&](double v) { return arith::ConstantOp::create(b, l, b.getFloatAttr(elem, v)); };
            Value positive = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, amax, c(0.0));
            Value inv = arith::SelectOp::create(b, l, positive, arith::DivFOp::create(b, l, c(127.0), amax), c(0.0));
            Value x = math::RoundEvenOp::create(b, l, arith::MulFOp::create(b, l, args[0], inv));
            Value scale = arith::MulFOp::create(b, l, arith::DivFOp::create(b, l, amax, c(127.0)), args[2]);
            product = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, x, w), scale);
          } else {
            w = arith::MulFOp::create(b, l, w, args[2]);
            product = arith::MulFOp::create(b, l, args[0], w);
          }
          linalg::YieldOp::create(b, l, ValueRange{arith::AddFOp::create(b, l, args.back(), product)});
        });
    generic->setAttr(kInt4MatmulAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, generic.getResult(0), op.getType()));
    return success();
  }
};

/// kiln.matmul_panels: `out[m, n] += lhs[m, k] * weights[n / P, k, n mod
/// P]`, one generic whose result map stays the projection (m, n); 8-bit
/// operands are extended to the i32 result by their signedness.
struct MatmulPanelsLowering : OpRewritePattern<MatmulPanelsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulPanelsOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto lhsType = op.getLhs().getType();
    // (8-bit: the bytes as signless i8, extended by their own signedness in
    // the body; the result i32.)
    Type lhsElem = lhsType.getElementType();
    bool lhsUnsigned = hasUnsignedElements(lhsElem);
    Type elem = op.getType().getElementType();
    int64_t n = op.getColumns(), k = lhsType.getShape().back(), panel = op.getPanelWidth();
    int64_t rows = product(lhsType.getShape().drop_back());
    Value lhs = reinterpret(rewriter, loc, op.getLhs(), signlessType(lhsType));
    lhs = reshapeTensor(rewriter, loc, lhs,
                        RankedTensorType::get({rows, k}, signlessType(lhsElem)));
    auto out2 = RankedTensorType::get({rows, n}, elem);
    AffineExpr m, nn, kk;
    bindDims(ctx, m, nn, kk);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, kk}, ctx),
                                   AffineMap::get(3, 0, {nn.floorDiv(panel), kk, nn % panel}, ctx),
                                   AffineMap::get(3, 0, {m, nn}, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, out2, ValueRange{lhs, op.getWeights()},
        ValueRange{zeroFilled(rewriter, loc, out2)}, maps, iteratorTypes(3, {2}),
        [&](OpBuilder &b, Location l, ValueRange args) {
          multiplyAccumulate(b, l, args, elem, lhsUnsigned);
        });
    generic->setAttr(kPanelMatmulAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, generic.getResult(0), op.getType()));
    return success();
  }
};

} // namespace

void kiln::populateMatmulLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, MatmulIntegerLowering, MatmulInt4Lowering, MatmulPanelsLowering>(patterns.getContext());
}
