//===- MathBuilders.h - pieces of the f32 math approximations ----*- C++ -*-===//
//
// What Erf.cpp's and Exp.cpp's patterns build alike: a constant of a scalar
// or vector type, a clamp that lets NaN through, a polynomial in Horner
// form.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_MATHBUILDERS_H
#define KILN_CODEGEN_COMMON_MATHBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::codegen {

/// `v` as an f32 constant of `type` (f32 or a vector of f32), splat.
inline mlir::Value f32Constant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, double v) {
  auto attr = b.getF32FloatAttr(static_cast<float>(v));
  if (auto vector = mlir::dyn_cast<mlir::VectorType>(type))
    return mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(vector, attr.getValue()));
  return mlir::arith::ConstantOp::create(b, loc, attr);
}

/// v > hi ? hi : v, then v < lo ? lo : v: ordered compares, false for NaN,
/// which passes through (x86 takes each as one vmaxps / vminps).
inline mlir::Value clampKeepingNaN(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                                   double lo, double hi) {
  using mlir::arith::CmpFPredicate;
  mlir::Type type = v.getType();
  mlir::Value hiValue = f32Constant(b, loc, type, hi), loValue = f32Constant(b, loc, type, lo);
  mlir::Value above = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::OGT, v, hiValue);
  v = mlir::arith::SelectOp::create(b, loc, above, hiValue, v);
  mlir::Value below = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::OLT, v, loValue);
  return mlir::arith::SelectOp::create(b, loc, below, loValue, v);
}

/// c0 + c1 t + c2 t^2 + ... by Horner's rule, one FMA per degree.
inline mlir::Value horner(mlir::OpBuilder &b, mlir::Location loc,
                          llvm::ArrayRef<double> coefficients, mlir::Value t) {
  mlir::Type type = t.getType();
  mlir::Value acc = f32Constant(b, loc, type, coefficients.back());
  for (double c : llvm::reverse(coefficients.drop_back()))
    acc = mlir::math::FmaOp::create(b, loc, acc, t, f32Constant(b, loc, type, c));
  return acc;
}

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_MATHBUILDERS_H
