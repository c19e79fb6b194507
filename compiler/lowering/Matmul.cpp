//===- Matmul.cpp - lowering of kiln.matmul -------------------------------===//
//
// The common shapes become named linalg ops, which the code generators
// recognize as GEMMs: `[.., M, K] x [K, N]` (a weight) collapses the leading
// dimensions into M and is one `linalg.matmul`. Batched products (attention)
// are one linalg.generic contraction over the full rank, batch dimensions
// broadcasting through the indexing maps.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/KilnToLinalg.h"

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

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    RankedTensorType resultType = op.getType();
    Type elem = resultType.getElementType();
    ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
    int64_t k = lhs.back(), n = rhs.back();
    ArrayRef<int64_t> batch = resultType.getShape().drop_back(2);

    // [.., M, K] x [K, N]: one GEMM with the leading dimensions folded into M.
    // (A rank-2 rhs preceded by 1s is the same GEMM.)
    if (product(rhs.drop_back(2)) == 1) {
      int64_t rows = product(lhs.drop_back());
      auto lhs2 = RankedTensorType::get({rows, k}, elem);
      auto rhs2 = RankedTensorType::get({k, n}, elem);
      auto out2 = RankedTensorType::get({rows, n}, elem);
      Value a = reshapeTensor(rewriter, loc, op.getLhs(), lhs2);
      Value b = reshapeTensor(rewriter, loc, op.getRhs(), rhs2);
      Value c = linalg::MatmulOp::create(rewriter, loc, ValueRange{a, b},
                                         ValueRange{zeroFilled(rewriter, loc, out2)})
                    .getResult(0);
      rewriter.replaceOp(op, reshapeTensor(rewriter, loc, c, resultType));
      return success();
    }

    // Batched (equal or broadcast batches): one generic contraction over
    // (batch.., m, n, k), with no reshapes, so that the dispatch's epilogue
    // shares its iteration space and fuses into its workgroups.
    MLIRContext *ctx = getContext();
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
      AffineExpr mD = getAffineDimExpr(rank - 2, ctx), nD = getAffineDimExpr(rank - 1, ctx),
                 kD = getAffineDimExpr(rank, ctx);
      exprs.push_back(isLhs ? mD : kD);
      exprs.push_back(isLhs ? kD : nD);
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < rank; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {operandMap(lhs, true), operandMap(rhs, false),
                                   AffineMap::get(loops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(elem);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{op.getLhs(), op.getRhs()},
        ValueRange{zeroFilled(rewriter, loc, resultType)}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value prod, sum;
          if (isFloat) {
            prod = arith::MulFOp::create(b, l, args[0], args[1]);
            sum = arith::AddFOp::create(b, l, args[2], prod);
          } else {
            prod = arith::MulIOp::create(b, l, args[0], args[1]);
            sum = arith::AddIOp::create(b, l, args[2], prod);
          }
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void kiln::populateMatmulLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(patterns.getContext());
}
