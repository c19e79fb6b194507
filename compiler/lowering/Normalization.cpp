//===- Normalization.cpp - lowering of softmax and the normalizations -----===//
//
// Each op becomes a short chain of linalg.generic ops, following the ONNX
// reference formulations:
//   - softmax: max along the axis; e = exp(x - max), once per element; sum
//     of e; e * (1 / sum); log-softmax: (x - max) - log(sum of exp(x -
//     max)) (1 / sum and log(sum) once per row);
//   - layer_norm: mean; mean of the squared deviation (two passes);
//     (x - mean) * (1 / sqrt(var + eps)) * scale + bias;
//   - rms_norm: mean of squares; x / sqrt(ms + eps) * scale;
//   - batch_norm: sqrt(var + eps) per channel; (x - mean) / std * scale + bias.
// Reductions are generics whose reduced loops are `reduction` iterators and
// whose statistics are tensors over the remaining dimensions. Half-precision
// inputs compute in f32 (ONNX's default `stash_type`) and round once.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

/// The type the arithmetic happens in: f32 for narrower floats.
Type computeType(Type elem) {
  if (elem.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(elem.getContext());
  return elem;
}

/// A linalg.generic with explicit indexing maps (the last one the result's)
/// whose body yields `body(args without the output...)`; `init` is the
/// output operand.
Value generic(OpBuilder &b, Location loc, ValueRange inputs, Value init,
              ArrayRef<AffineMap> maps, ArrayRef<int64_t> reductionLoops,
              function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  unsigned loops = maps.front().getNumDims();
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, ValueRange{init}, maps,
             iteratorTypes(loops, reductionLoops),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResult(0);
}

/// Shapes and maps of a normalization of `input` over the loops `reduced`:
/// statistics have the remaining dimensions.
struct Reduced {
  RankedTensorType statType; ///< in the compute type
  AffineMap full, stat;
  SmallVector<int64_t> loops;
  int64_t count = 1; ///< elements per statistic

  Reduced(OpBuilder &b, RankedTensorType input, ArrayRef<int64_t> reduced)
      : loops(reduced) {
    MLIRContext *ctx = b.getContext();
    full = AffineMap::getMultiDimIdentityMap(input.getRank(), ctx);
    SmallVector<int64_t> shape;
    for (auto [i, d] : llvm::enumerate(input.getShape())) {
      if (llvm::is_contained(reduced, (int64_t)i))
        count *= d;
      else
        shape.push_back(d);
    }
    llvm::SmallBitVector drop(input.getRank());
    for (int64_t i : reduced)
      drop.set(i);
    stat = full.dropResults(drop);
    statType =
        RankedTensorType::get(shape, computeType(input.getElementType()));
  }

  Value filled(OpBuilder &b, Location loc, Value v) const {
    return filledTensor(b, loc, statType, v);
  }
};

Value ext(OpBuilder &b, Location loc, Value v, Type to) {
  return convertScalar(b, loc, v, to);
}

Value cst(OpBuilder &b, Location loc, Type type, double v) {
  return scalarConstant(b, loc, type, v);
}

/// Lowers `kiln.softmax` (and log-softmax).
struct SoftmaxLowering : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType(), ct = computeType(elem);
    if (failed(requireStaticShapes(op)))
      return failure();
    Reduced r(rewriter, type, {op.getAxis()});

    Value max = generic(rewriter, loc, x,
                        r.filled(rewriter, loc, lowestValue(rewriter, loc, ct)),
                        {r.full, r.stat}, r.loops,
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return arith::MaximumFOp::create(b, l, a[1],
                                                           ext(b, l, a[0], ct));
                        });
    bool log = op.getLog();
    // Softmax computes exp(x - max) once, into a tensor of the input's
    // shape that the sum and the scaling both read: a code generator that
    // fuses the chain into one loop nest keeps it as a row block of its own
    // (recomputing it in the scaling cost ViT-B/16's softmaxes a seventh of
    // their time). Log-softmax needs no exponential in its result.
    Value exps;
    if (!log)
      exps = generic(rewriter, loc, {x, max}, emptyTensor(rewriter, loc, type.clone(ct)),
                     {r.full, r.stat, r.full}, {},
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       Value d = arith::SubFOp::create(b, l, ext(b, l, a[0], ct), a[1]);
                       return math::ExpOp::create(b, l, d);
                     });
    Value zero = r.filled(rewriter, loc, cst(rewriter, loc, ct, 0));
    Value sum =
        log ? generic(rewriter, loc, {x, max}, zero, {r.full, r.stat, r.stat}, r.loops,
                      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                        Value d = arith::SubFOp::create(b, l, ext(b, l, a[0], ct), a[1]);
                        return arith::AddFOp::create(b, l, a[2], math::ExpOp::create(b, l, d));
                      })
            : generic(rewriter, loc, {exps}, zero, {r.full, r.stat}, r.loops,
                      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                        return arith::AddFOp::create(b, l, a[1], a[0]);
                      });
    // Per row, once: log(sum) for log-softmax, 1 / sum for softmax, which
    // every element then subtracts or multiplies by (a division per
    // element cost ViT-B/16's attention softmax a sixth of its time).
    Value perRow = elementwise(
        rewriter, loc, r.statType, {sum},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          if (log)
            return math::LogOp::create(b, l, a[0]);
          return arith::DivFOp::create(b, l, cst(b, l, ct, 1.0), a[0]);
        });
    Value result;
    if (log)
      result = generic(
          rewriter, loc, {x, max, perRow}, emptyTensor(rewriter, loc, type),
          {r.full, r.stat, r.stat, r.full}, {},
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            Value d = arith::SubFOp::create(b, l, ext(b, l, a[0], ct), a[1]);
            return ext(b, l, arith::SubFOp::create(b, l, d, a[2]), elem);
          });
    else
      result = generic(
          rewriter, loc, {exps, perRow}, emptyTensor(rewriter, loc, type),
          {r.full, r.stat, r.full}, {},
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            return ext(b, l, arith::MulFOp::create(b, l, a[0], a[1]), elem);
          });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Dimensions `[axis, rank)`.
SmallVector<int64_t> trailing(int64_t axis, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(axis, rank));
}

/// Sum over the reduced loops of `term(x)` (in the compute type); `stats`
/// are more statistics read alongside `x`.
Value reduceSum(
    OpBuilder &rewriter, Location loc, const Reduced &r, Value x,
    ValueRange stats,
    function_ref<Value(OpBuilder &, Location, Value, ValueRange)> term) {
  Type ct = r.statType.getElementType();
  SmallVector<Value> inputs = {x};
  llvm::append_range(inputs, stats);
  SmallVector<AffineMap> maps = {r.full};
  maps.append(stats.size() + 1, r.stat);
  return generic(
      rewriter, loc, inputs, r.filled(rewriter, loc, cst(rewriter, loc, ct, 0)),
      maps, r.loops, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value t = term(b, l, ext(b, l, a[0], ct), a.slice(1, stats.size()));
        return arith::AddFOp::create(b, l, a.back(), t);
      });
}

/// `f(stat)` elementwise over a statistics tensor.
Value mapStat(OpBuilder &b, Location loc, const Reduced &r, Value stat,
              function_ref<Value(OpBuilder &, Location, Value)> f) {
  return elementwise(
      b, loc, r.statType, {stat},
      [&](OpBuilder &nb, Location l, ValueRange a) { return f(nb, l, a[0]); });
}

/// Lowers `kiln.layer_norm`.
struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType(), ct = computeType(elem);
    if (failed(requireStaticShapes(op)))
      return failure();
    Reduced r(rewriter, type, trailing(op.getAxis(), type.getRank()));
    double n = r.count, eps = op.getEpsilon().convertToDouble();

    Value sum =
        reduceSum(rewriter, loc, r, x, {},
                  [](OpBuilder &, Location, Value v, ValueRange) { return v; });
    Value mean = mapStat(
        rewriter, loc, r, sum, [&](OpBuilder &b, Location l, Value s) -> Value {
          return arith::DivFOp::create(b, l, s, cst(b, l, ct, n));
        });
    Value sq =
        reduceSum(rewriter, loc, r, x, {mean},
                  [](OpBuilder &b, Location l, Value v, ValueRange s) -> Value {
                    Value d = arith::SubFOp::create(b, l, v, s[0]);
                    return arith::MulFOp::create(b, l, d, d);
                  });
    Value invStd = mapStat(
        rewriter, loc, r, sq, [&](OpBuilder &b, Location l, Value s) -> Value {
          Value var = arith::DivFOp::create(b, l, s, cst(b, l, ct, n));
          Value std = math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, cst(b, l, ct, eps)));
          return arith::DivFOp::create(b, l, cst(b, l, ct, 1), std);
        });

    MLIRContext *ctx = getContext();
    SmallVector<Value> inputs = {x, mean, invStd, op.getScale()};
    SmallVector<AffineMap> maps = {
        r.full, r.stat, r.stat,
        broadcastMap(ctx, op.getScale().getType().getShape(), type.getShape())};
    if (Value bias = op.getBias()) {
      inputs.push_back(bias);
      maps.push_back(
          broadcastMap(ctx, cast<RankedTensorType>(bias.getType()).getShape(),
                       type.getShape()));
    }
    maps.push_back(r.full);
    bool hasBias = op.getBias() != nullptr;
    Value result =
        generic(rewriter, loc, inputs, emptyTensor(rewriter, loc, type), maps,
                {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value d =
                      arith::SubFOp::create(b, l, ext(b, l, a[0], ct), a[1]);
                  Value y = arith::MulFOp::create(b, l, d, a[2]);
                  y = arith::MulFOp::create(b, l, y, ext(b, l, a[3], ct));
                  if (hasBias)
                    y = arith::AddFOp::create(b, l, y, ext(b, l, a[4], ct));
                  return ext(b, l, y, elem);
                });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Lowers `kiln.rms_norm`.
struct RmsNormLowering : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType(), ct = computeType(elem);
    if (failed(requireStaticShapes(op)))
      return failure();
    Reduced r(rewriter, type, trailing(op.getAxis(), type.getRank()));
    double n = r.count, eps = op.getEpsilon().convertToDouble();

    Value sq =
        reduceSum(rewriter, loc, r, x, {},
                  [](OpBuilder &b, Location l, Value v, ValueRange) -> Value {
                    return arith::MulFOp::create(b, l, v, v);
                  });
    Value rms = mapStat(
        rewriter, loc, r, sq, [&](OpBuilder &b, Location l, Value s) -> Value {
          Value ms = arith::DivFOp::create(b, l, s, cst(b, l, ct, n));
          return math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, ms, cst(b, l, ct, eps)));
        });
    SmallVector<AffineMap> maps = {
        r.full, r.stat,
        broadcastMap(getContext(), op.getScale().getType().getShape(),
                     type.getShape()),
        r.full};
    Value result =
        generic(rewriter, loc, {x, rms, op.getScale()},
                emptyTensor(rewriter, loc, type), maps, {},
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value y =
                      arith::DivFOp::create(b, l, ext(b, l, a[0], ct), a[1]);
                  y = arith::MulFOp::create(b, l, y, ext(b, l, a[2], ct));
                  return ext(b, l, y, elem);
                });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Lowers `kiln.batch_norm` (inference).
struct BatchNormLowering : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType(), ct = computeType(elem);
    if (failed(requireStaticShapes(op)))
      return failure();
    double eps = op.getEpsilon().convertToDouble();
    auto channelType = RankedTensorType::get({type.getShape()[1]}, ct);
    Value std = elementwise(
        rewriter, loc, channelType, {op.getVariance()},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = ext(b, l, a[0], ct);
          return math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, v, cst(b, l, ct, eps)));
        });

    MLIRContext *ctx = getContext();
    unsigned rank = type.getRank();
    AffineMap full = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap channel =
        AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    Value result =
        generic(rewriter, loc,
                {op.getInput(), op.getMean(), std, op.getScale(), op.getBias()},
                emptyTensor(rewriter, loc, type),
                {full, channel, channel, channel, channel, full}, {},
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value d = arith::SubFOp::create(b, l, ext(b, l, a[0], ct),
                                                  ext(b, l, a[1], ct));
                  Value y = arith::DivFOp::create(b, l, d, a[2]);
                  y = arith::MulFOp::create(b, l, y, ext(b, l, a[3], ct));
                  y = arith::AddFOp::create(b, l, y, ext(b, l, a[4], ct));
                  return ext(b, l, y, elem);
                });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::populateNormalizationLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering, LayerNormLowering, RmsNormLowering,
               BatchNormLowering>(patterns.getContext());
}
