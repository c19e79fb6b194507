//===- Elementwise.cpp - lowering of elementwise kiln ops -----------------===//
//
// Every elementwise op becomes one parallel linalg.generic whose indexing
// maps carry the numpy broadcasting; the body is the scalar computation.
// Transcendentals stay as math ops (approximated later, per target).
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

Value cst(OpBuilder &b, Location loc, Value like, double v) {
  return scalarConstant(b, loc, like.getType(), v);
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// Builds the scalar result from two signless scalars; `u` says the
/// operands are unsigned integers.
using BinaryFn = Value (*)(OpBuilder &, Location, Value, Value, bool u);

template <typename Op, BinaryFn Fn>
struct BinaryLowering : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    bool isUnsigned = hasUnsignedElements(op.getLhs().getType());
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType(), {op.getLhs(), op.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return Fn(b, loc, args[0], args[1], isUnsigned);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

Value addFn(OpBuilder &b, Location l, Value x, Value y, bool) {
  if (isFloat(x)) return arith::AddFOp::create(b, l, x, y);
  return arith::AddIOp::create(b, l, x, y);
}
Value subFn(OpBuilder &b, Location l, Value x, Value y, bool) {
  if (isFloat(x)) return arith::SubFOp::create(b, l, x, y);
  return arith::SubIOp::create(b, l, x, y);
}
Value mulFn(OpBuilder &b, Location l, Value x, Value y, bool) {
  if (isFloat(x)) return arith::MulFOp::create(b, l, x, y);
  return arith::MulIOp::create(b, l, x, y);
}
Value divFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  if (isFloat(x)) return arith::DivFOp::create(b, l, x, y);
  if (u) return arith::DivUIOp::create(b, l, x, y);
  return arith::DivSIOp::create(b, l, x, y);
}
/// Integer `x ^ y` by binary exponentiation unrolled over every bit of the
/// exponent: no loop or branch, so the body vectorizes and needs no
/// `math.ipowi` lowering on any target. It wraps like repeated
/// multiplication. A negative signed exponent gives `1 / x ^ -y` truncated:
/// 1 for x = 1, +-1 for x = -1, 0 otherwise (x = 0 included, where C would
/// divide by zero).
Value integerPow(OpBuilder &b, Location l, Value x, Value y, bool u) {
  using IP = arith::CmpIPredicate;
  unsigned width = x.getType().getIntOrFloatBitWidth();
  Value zero = cst(b, l, x, 0), one = cst(b, l, x, 1);
  Value result = one, base = x;
  for (unsigned bit = 0; bit < width; ++bit) {
    Value mask = arith::ConstantOp::create(
        b, l, IntegerAttr::get(x.getType(), APInt::getOneBitSet(width, bit)));
    Value set = arith::CmpIOp::create(
        b, l, IP::ne, arith::AndIOp::create(b, l, y, mask), zero);
    result = arith::SelectOp::create(
        b, l, set, arith::MulIOp::create(b, l, result, base), result);
    if (bit + 1 < width)
      base = arith::MulIOp::create(b, l, base, base);
  }
  if (u || width == 1)
    return result;
  Value minusOne = cst(b, l, x, -1);
  Value odd = arith::CmpIOp::create(
      b, l, IP::ne, arith::AndIOp::create(b, l, y, one), zero);
  Value negativeOne = arith::SelectOp::create(b, l, odd, minusOne, one);
  Value reciprocal = arith::SelectOp::create(
      b, l, arith::CmpIOp::create(b, l, IP::eq, x, one), one,
      arith::SelectOp::create(b, l,
                              arith::CmpIOp::create(b, l, IP::eq, x, minusOne),
                              negativeOne, zero));
  Value negative = arith::CmpIOp::create(b, l, IP::slt, y, zero);
  return arith::SelectOp::create(b, l, negative, reciprocal, result);
}
Value powFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  if (isFloat(x))
    return math::PowFOp::create(b, l, x, y);
  return integerPow(b, l, x, y, u);
}
Value maxFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  return maxScalar(b, l, x, y, u);
}
Value minFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  return minScalar(b, l, x, y, u);
}
/// Shifts by the width or more give 0 (arith's would be poison).
Value shiftFn(OpBuilder &b, Location l, Value x, Value y, bool u, bool left) {
  unsigned width = x.getType().getIntOrFloatBitWidth();
  Value shifted;
  if (left)
    shifted = arith::ShLIOp::create(b, l, x, y);
  else if (u)
    shifted = arith::ShRUIOp::create(b, l, x, y);
  else
    shifted = arith::ShRSIOp::create(b, l, x, y);
  Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, y,
                                        cst(b, l, x, width));
  return arith::SelectOp::create(b, l, inRange, shifted, cst(b, l, x, 0));
}
Value shiftLeftFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  return shiftFn(b, l, x, y, u, /*left=*/true);
}
Value shiftRightFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  return shiftFn(b, l, x, y, u, /*left=*/false);
}

/// `x ^ c` for a splat float constant `c` of 1, 2 or 0.5 (squares and roots
/// are common in exported models: variances, norms) needs no powf.
struct PowByConstantLowering : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op, PatternRewriter &rewriter) const override {
    auto cst = op.getRhs().getDefiningOp<kiln::ConstantOp>();
    auto dense = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : DenseFPElementsAttr();
    if (!dense || !dense.isSplat() || op.getType() != op.getLhs().getType())
      return failure();
    double exponent = dense.getSplatValue<APFloat>().convertToDouble();
    if (exponent != 1.0 && exponent != 2.0 && exponent != 0.5)
      return failure();
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType(), {op.getLhs()},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          if (exponent == 2.0) return arith::MulFOp::create(b, l, args[0], args[0]);
          if (exponent == 0.5) return math::SqrtOp::create(b, l, args[0]);
          return args[0];
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};
Value modFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  if (isFloat(x)) return arith::RemFOp::create(b, l, x, y);
  if (u) return arith::RemUIOp::create(b, l, x, y);
  // Integer Mod takes the sign of the divisor: adjust C's remainder.
  Value r = arith::RemSIOp::create(b, l, x, y);
  Value zero = cst(b, l, x, 0);
  Value rNonZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, r, zero);
  Value rNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, r, zero);
  Value yNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, y, zero);
  Value signsDiffer = arith::XOrIOp::create(b, l, rNeg, yNeg);
  Value adjust = arith::AndIOp::create(b, l, rNonZero, signsDiffer);
  Value adjusted = arith::AddIOp::create(b, l, r, y);
  return arith::SelectOp::create(b, l, adjust, adjusted, r);
}
Value andFn(OpBuilder &b, Location l, Value x, Value y, bool) { return arith::AndIOp::create(b, l, x, y); }
Value orFn(OpBuilder &b, Location l, Value x, Value y, bool) { return arith::OrIOp::create(b, l, x, y); }
Value xorFn(OpBuilder &b, Location l, Value x, Value y, bool) { return arith::XOrIOp::create(b, l, x, y); }

template <arith::CmpFPredicate FP, arith::CmpIPredicate IP>
Value cmpFn(OpBuilder &b, Location l, Value x, Value y, bool u) {
  if (isFloat(x)) return arith::CmpFOp::create(b, l, FP, x, y);
  if (u || x.getType().isInteger(1)) {
    // Unsigned integers and i1 compare as unsigned (false < true).
    arith::CmpIPredicate p = IP;
    switch (IP) {
    case arith::CmpIPredicate::slt: p = arith::CmpIPredicate::ult; break;
    case arith::CmpIPredicate::sle: p = arith::CmpIPredicate::ule; break;
    case arith::CmpIPredicate::sgt: p = arith::CmpIPredicate::ugt; break;
    case arith::CmpIPredicate::sge: p = arith::CmpIPredicate::uge; break;
    default: break;
    }
    return arith::CmpIOp::create(b, l, p, x, y);
  }
  return arith::CmpIOp::create(b, l, IP, x, y);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

template <typename Op>
struct UnaryLowering : OpRewritePattern<Op> {
  using Fn = std::function<Value(OpBuilder &, Location, Value, Op)>;
  UnaryLowering(MLIRContext *ctx, Fn fn)
      : OpRewritePattern<Op>(ctx), fn(std::move(fn)) {}
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Value result = elementwise(
        rewriter, op.getLoc(), cast<RankedTensorType>(op.getType()),
        {op.getInput()}, [&](OpBuilder &b, Location loc, ValueRange args) {
          return fn(b, loc, args[0], op);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
  Fn fn;
};

template <typename Op, typename MathOp>
void addMathUnary(RewritePatternSet &patterns) {
  patterns.add<UnaryLowering<Op>>(
      patterns.getContext(),
      [](OpBuilder &b, Location l, Value x, Op) -> Value {
        return MathOp::create(b, l, x);
      });
}

template <typename Op>
void addUnary(RewritePatternSet &patterns,
              std::function<Value(OpBuilder &, Location, Value, Op)> fn) {
  patterns.add<UnaryLowering<Op>>(patterns.getContext(), std::move(fn));
}

Value sigmoid(OpBuilder &b, Location l, Value x) {
  Value one = cst(b, l, x, 1.0);
  Value negX = arith::NegFOp::create(b, l, x);
  Value e = math::ExpOp::create(b, l, negX);
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}

struct SelectLowering : OpRewritePattern<kiln::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(kiln::SelectOp op,
                                PatternRewriter &rewriter) const override {
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType(),
        {op.getCondition(), op.getTrueValue(), op.getFalseValue()},
        [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Lowers `kiln.rotary_embedding`: one parallel generic over the input's
/// shape that reads each element's partner along the last dimension with a
/// `tensor.extract` (at `j +- D/2`, or `j xor 1` when interleaved).
/// Half-precision inputs compute in f32 and round once.
struct RotaryEmbeddingLowering : OpRewritePattern<RotaryEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RotaryEmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticShapes(op)))
      return failure();
    auto type = cast<RankedTensorType>(op.getType());
    Value x = op.getInput();
    int64_t rank = type.getRank(), half = type.getShape().back() / 2;
    bool interleaved = op.getInterleaved();
    Type elem = type.getElementType();
    Type ct = elem.getIntOrFloatBitWidth() < 32 ? Float32Type::get(getContext()) : elem;
    Value result = elementwise(
        rewriter, op.getLoc(), type, {x, op.getCos(), op.getSin()},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank; ++d)
            indices.push_back(linalg::IndexOp::create(b, l, d));
          Value j = indices.back();
          Value partner, first; // `first`: the element is rotated by -sin
          if (interleaved) {
            Value one = arith::ConstantIndexOp::create(b, l, 1);
            partner = arith::XOrIOp::create(b, l, j, one);
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          arith::AndIOp::create(b, l, j, one),
                                          arith::ConstantIndexOp::create(b, l, 0));
          } else {
            Value h = arith::ConstantIndexOp::create(b, l, half);
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, h);
            partner = arith::SelectOp::create(b, l, first, arith::AddIOp::create(b, l, j, h),
                                              arith::SubIOp::create(b, l, j, h));
          }
          indices.back() = partner;
          Value other = convertScalar(b, l, tensor::ExtractOp::create(b, l, x, indices), ct);
          other = arith::SelectOp::create(b, l, first, arith::NegFOp::create(b, l, other), other);
          Value y = arith::MulFOp::create(b, l, convertScalar(b, l, a[0], ct),
                                          convertScalar(b, l, a[1], ct));
          y = arith::AddFOp::create(
              b, l, y, arith::MulFOp::create(b, l, other, convertScalar(b, l, a[2], ct)));
          return convertScalar(b, l, y, elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Clip bounds are f64 attributes; an integer tensor clamps to them
/// saturated into its range (+inf is the largest value, not an overflow),
/// the unsigned range with `u`.
Value clipBound(OpBuilder &b, Location l, Type type, double bound, bool u) {
  auto it = dyn_cast<IntegerType>(type);
  if (!it || it.getWidth() == 1)
    return scalarConstant(b, l, type, bound);
  unsigned width = it.getWidth();
  APInt value;
  if (u) {
    if (std::isnan(bound) || bound >= std::ldexp(1.0, width))
      value = APInt::getMaxValue(width);
    else if (bound <= 0)
      value = APInt::getZero(width);
    else
      value = APInt(width, static_cast<uint64_t>(bound));
  } else if (std::isnan(bound) || bound >= std::ldexp(1.0, width - 1))
    value = APInt::getSignedMaxValue(width);
  else if (bound <= -std::ldexp(1.0, width - 1))
    value = APInt::getSignedMinValue(width);
  else
    value = APInt(width, static_cast<int64_t>(bound), /*isSigned=*/true);
  return arith::ConstantOp::create(b, l, IntegerAttr::get(it, value));
}

} // namespace

void kiln::populateElementwiseLoweringPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  patterns.add<RotaryEmbeddingLowering>(ctx);
  patterns.add<BinaryLowering<AddOp, addFn>, BinaryLowering<SubOp, subFn>,
               BinaryLowering<MulOp, mulFn>, BinaryLowering<DivOp, divFn>,
               BinaryLowering<PowOp, powFn>, BinaryLowering<MaxOp, maxFn>,
               BinaryLowering<MinOp, minFn>, BinaryLowering<ModOp, modFn>,
               BinaryLowering<AndOp, andFn>, BinaryLowering<OrOp, orFn>,
               BinaryLowering<XorOp, xorFn>,
               BinaryLowering<EqualOp, cmpFn<FP::OEQ, IP::eq>>,
               BinaryLowering<LessOp, cmpFn<FP::OLT, IP::slt>>,
               BinaryLowering<LessEqualOp, cmpFn<FP::OLE, IP::sle>>,
               BinaryLowering<GreaterOp, cmpFn<FP::OGT, IP::sgt>>,
               BinaryLowering<GreaterEqualOp, cmpFn<FP::OGE, IP::sge>>,
               BinaryLowering<ShiftLeftOp, shiftLeftFn>,
               BinaryLowering<ShiftRightOp, shiftRightFn>,
               SelectLowering>(ctx);
  patterns.add<PowByConstantLowering>(ctx, /*benefit=*/2);

  addMathUnary<TanhOp, math::TanhOp>(patterns);
  addMathUnary<ExpOp, math::ExpOp>(patterns);
  addMathUnary<LogOp, math::LogOp>(patterns);
  addMathUnary<SqrtOp, math::SqrtOp>(patterns);
  addMathUnary<RsqrtOp, math::RsqrtOp>(patterns);
  addMathUnary<ErfOp, math::ErfOp>(patterns);
  addMathUnary<SinOp, math::SinOp>(patterns);
  addMathUnary<CosOp, math::CosOp>(patterns);
  addMathUnary<TanOp, math::TanOp>(patterns);
  addMathUnary<AsinOp, math::AsinOp>(patterns);
  addMathUnary<AcosOp, math::AcosOp>(patterns);
  addMathUnary<AtanOp, math::AtanOp>(patterns);
  addMathUnary<SinhOp, math::SinhOp>(patterns);
  addMathUnary<CoshOp, math::CoshOp>(patterns);
  addMathUnary<AsinhOp, math::AsinhOp>(patterns);
  addMathUnary<AcoshOp, math::AcoshOp>(patterns);
  addMathUnary<AtanhOp, math::AtanhOp>(patterns);
  addMathUnary<FloorOp, math::FloorOp>(patterns);
  addMathUnary<CeilOp, math::CeilOp>(patterns);
  addMathUnary<RoundOp, math::RoundEvenOp>(patterns);

  addUnary<AbsOp>(patterns, [](OpBuilder &b, Location l, Value x, AbsOp op) -> Value {
    if (isFloat(x)) return math::AbsFOp::create(b, l, x);
    if (hasUnsignedElements(op.getType())) return x;
    return math::AbsIOp::create(b, l, x);
  });
  addUnary<NegOp>(patterns, [](OpBuilder &b, Location l, Value x, NegOp) -> Value {
    if (isFloat(x)) return arith::NegFOp::create(b, l, x);
    return arith::SubIOp::create(b, l, cst(b, l, x, 0), x);
  });
  addUnary<SignOp>(patterns, [](OpBuilder &b, Location l, Value x, SignOp op) -> Value {
    bool u = hasUnsignedElements(op.getType());
    Value zero = cst(b, l, x, 0), one = cst(b, l, x, 1), minusOne = cst(b, l, x, -1);
    Value pos = cmpFn<FP::OGT, IP::sgt>(b, l, x, zero, u);
    Value neg = cmpFn<FP::OLT, IP::slt>(b, l, x, zero, u);
    Value r = arith::SelectOp::create(b, l, neg, minusOne, zero);
    return arith::SelectOp::create(b, l, pos, one, r);
  });
  addUnary<ReluOp>(patterns, [](OpBuilder &b, Location l, Value x, ReluOp op) -> Value {
    return maxFn(b, l, x, cst(b, l, x, 0), hasUnsignedElements(op.getType()));
  });
  addUnary<SigmoidOp>(patterns, [](OpBuilder &b, Location l, Value x, SigmoidOp) {
    return sigmoid(b, l, x);
  });
  addUnary<ReciprocalOp>(patterns, [](OpBuilder &b, Location l, Value x, ReciprocalOp) -> Value {
    return arith::DivFOp::create(b, l, cst(b, l, x, 1), x);
  });
  addUnary<SoftplusOp>(patterns, [](OpBuilder &b, Location l, Value x, SoftplusOp) -> Value {
    // max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
    Value absX = math::AbsFOp::create(b, l, x);
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, absX));
    Value lp = math::Log1pOp::create(b, l, e);
    return arith::AddFOp::create(b, l, maxFn(b, l, x, cst(b, l, x, 0), false), lp);
  });
  addUnary<NotOp>(patterns, [](OpBuilder &b, Location l, Value x, NotOp) -> Value {
    return arith::XOrIOp::create(b, l, x, cst(b, l, x, 1));
  });
  addUnary<GeluOp>(patterns, [](OpBuilder &b, Location l, Value x, GeluOp op) -> Value {
    Value half = cst(b, l, x, 0.5), one = cst(b, l, x, 1.0);
    Value inner;
    if (op.getApproximate() == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      Value x3 = arith::MulFOp::create(b, l, x, arith::MulFOp::create(b, l, x, x));
      Value t = arith::AddFOp::create(
          b, l, x, arith::MulFOp::create(b, l, cst(b, l, x, 0.044715), x3));
      t = arith::MulFOp::create(b, l, cst(b, l, x, std::sqrt(2.0 / M_PI)), t);
      inner = math::TanhOp::create(b, l, t);
    } else {
      Value t = arith::MulFOp::create(b, l, x, cst(b, l, x, M_SQRT1_2));
      inner = math::ErfOp::create(b, l, t);
    }
    Value factor = arith::AddFOp::create(b, l, one, inner);
    return arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, half, x), factor);
  });
  addUnary<ClipOp>(patterns, [](OpBuilder &b, Location l, Value x, ClipOp op) -> Value {
    double lo = op.getMin().convertToDouble(), hi = op.getMax().convertToDouble();
    bool u = hasUnsignedElements(op.getType());
    Value r = x;
    if (!std::isinf(lo) || !isFloat(x))
      r = maxFn(b, l, r, clipBound(b, l, x.getType(), lo, u), u);
    if (!std::isinf(hi) || !isFloat(x))
      r = minFn(b, l, r, clipBound(b, l, x.getType(), hi, u), u);
    return r;
  });
  addUnary<LeakyReluOp>(patterns, [](OpBuilder &b, Location l, Value x, LeakyReluOp op) -> Value {
    Value scaled = arith::MulFOp::create(
        b, l, x, cst(b, l, x, op.getAlpha().convertToDouble()));
    Value neg = arith::CmpFOp::create(b, l, FP::OLT, x, cst(b, l, x, 0));
    return arith::SelectOp::create(b, l, neg, scaled, x);
  });
  addUnary<EluOp>(patterns, [](OpBuilder &b, Location l, Value x, EluOp op) -> Value {
    Value em1 = math::ExpM1Op::create(b, l, x);
    Value scaled = arith::MulFOp::create(
        b, l, em1, cst(b, l, x, op.getAlpha().convertToDouble()));
    Value neg = arith::CmpFOp::create(b, l, FP::OLT, x, cst(b, l, x, 0));
    return arith::SelectOp::create(b, l, neg, scaled, x);
  });
  addUnary<HardSigmoidOp>(patterns, [](OpBuilder &b, Location l, Value x, HardSigmoidOp op) -> Value {
    Value y = arith::AddFOp::create(
        b, l,
        arith::MulFOp::create(b, l, x, cst(b, l, x, op.getAlpha().convertToDouble())),
        cst(b, l, x, op.getBeta().convertToDouble()));
    y = arith::MaximumFOp::create(b, l, y, cst(b, l, x, 0));
    return arith::MinimumFOp::create(b, l, y, cst(b, l, x, 1));
  });
  addUnary<CastOp>(patterns, [](OpBuilder &b, Location l, Value x, CastOp op) -> Value {
    return convertScalar(b, l, x, op.getType().getElementType(),
                         hasUnsignedElements(op.getInput().getType()));
  });
}
