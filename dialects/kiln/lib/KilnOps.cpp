//===- KilnOps.cpp - kiln op verifiers and shape inference ----------------===//
//
// Result-shape inference (InferTypeOpInterface) and verifiers for the kiln
// ops. Diagnostics are lower-case and name the offending operand or
// attribute; the invalid.mlir lit test has one case per diagnostic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/Winograd.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InterleavedRange.h"

#include <limits>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> kiln::broadcastShapes(ArrayRef<int64_t> lhs,
                                                      ArrayRef<int64_t> rhs) {
  SmallVector<int64_t> result;
  if (!OpTrait::util::getBroadcastedShape(lhs, rhs, result))
    return failure();
  return result;
}

bool kiln::isWithinSizeLimit(ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      continue;
    // (Checked before multiplying: two factors of up to 2^40 overflow.)
    if (d < 0 || d > kMaxTensorElements || (d != 0 && elements > kMaxTensorElements / d))
      return false;
    elements *= d;
  }
  return true;
}

int64_t kiln::windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                               int64_t dilation, int64_t padBegin,
                               int64_t padEnd, bool ceilMode) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  // In 128 bits: every operand comes from the model and may be near 2^63.
  using Wide = __int128;
  Wide span = Wide(in) + padBegin + padEnd - Wide(dilation) * (Wide(kernel) - 1) - 1;
  if (span < 0 || stride < 1)
    return 0;
  Wide out = ceilMode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  // A window that would start entirely in the end padding is dropped.
  if (ceilMode && (out - 1) * stride >= Wide(in) + padBegin)
    --out;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return out > kMax ? kMax : static_cast<int64_t>(out);
}

static RankedTensorType rankedType(Value value) {
  return value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
}

/// Attribute values (strides, pads, ...) as "[a, b]": unlike shapeString,
/// every value is a number, INT64_MIN included (not "?").
static std::string valuesString(ArrayRef<int64_t> values) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[" << llvm::interleaved(values) << "]";
  return s;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

/// Checks that `axes` are sorted, unique and lie in [0, rank).
static LogicalResult verifyAxes(std::optional<Location> loc,
                                ArrayRef<int64_t> axes, int64_t rank,
                                StringRef what) {
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, what, " ", axis,
                               " is out of range for rank ", rank);
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, what,
                               "s must be sorted and unique, got ",
                               shapeString(axes));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

template <typename OpTy>
static constexpr bool isComparison() {
  return std::is_same_v<OpTy, EqualOp> || std::is_same_v<OpTy, LessOp> ||
         std::is_same_v<OpTy, LessEqualOp> || std::is_same_v<OpTy, GreaterOp> ||
         std::is_same_v<OpTy, GreaterEqualOp>;
}

template <typename OpTy>
static constexpr bool isLogical() {
  return std::is_same_v<OpTy, AndOp> || std::is_same_v<OpTy, OrOp> ||
         std::is_same_v<OpTy, XorOp>;
}

template <typename OpTy>
static constexpr bool isShift() {
  return std::is_same_v<OpTy, ShiftLeftOp> || std::is_same_v<OpTy, ShiftRightOp>;
}

template <typename OpTy>
static LogicalResult inferBinary(MLIRContext *ctx, std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  auto lhs = rankedType(adaptor.getLhs()), rhs = rankedType(adaptor.getRhs());
  if (!lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "operand shapes ",
                             shapeString(lhs.getShape()), " and ",
                             shapeString(rhs.getShape()),
                             " are not broadcast-compatible");
  Type element = isComparison<OpTy>() ? IntegerType::get(ctx, 1)
                                      : lhs.getElementType();
  types.push_back(RankedTensorType::get(*shape, element));
  return success();
}

template <typename OpTy>
static LogicalResult verifyBinary(OpTy op) {
  Type lhs = getElementTypeOrSelf(op.getLhs().getType());
  Type rhs = getElementTypeOrSelf(op.getRhs().getType());
  if (lhs != rhs)
    return op.emitOpError("operand element types must match, got ")
           << lhs << " and " << rhs;
  // Xor is also bitwise on other integers (the random-number hash of the
  // importer's Random.cpp); and/or stay logical, as in ONNX.
  if constexpr (std::is_same_v<OpTy, XorOp>) {
    if (!isa<IntegerType>(lhs))
      return op.emitOpError("operands must be i1 or integer tensors, got ")
             << lhs;
  } else if (isLogical<OpTy>() && !lhs.isInteger(1)) {
    return op.emitOpError("operands must be i1 tensors, got ") << lhs;
  }
  if (isShift<OpTy>() && (!isa<IntegerType>(lhs) || lhs.isInteger(1)))
    return op.emitOpError("operands must be integer tensors, got ") << lhs;
  return success();
}

#define KILN_BINARY_OP(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBinary<OP>(ctx, loc, adaptor, types);                          \
  }                                                                            \
  LogicalResult OP::verify() { return verifyBinary(*this); }
KILN_BINARY_OP(AddOp)
KILN_BINARY_OP(SubOp)
KILN_BINARY_OP(MulOp)
KILN_BINARY_OP(DivOp)
KILN_BINARY_OP(PowOp)
KILN_BINARY_OP(MaxOp)
KILN_BINARY_OP(MinOp)
KILN_BINARY_OP(ModOp)
KILN_BINARY_OP(AndOp)
KILN_BINARY_OP(OrOp)
KILN_BINARY_OP(XorOp)
KILN_BINARY_OP(EqualOp)
KILN_BINARY_OP(LessOp)
KILN_BINARY_OP(LessEqualOp)
KILN_BINARY_OP(GreaterOp)
KILN_BINARY_OP(GreaterEqualOp)
KILN_BINARY_OP(ShiftLeftOp)
KILN_BINARY_OP(ShiftRightOp)
#undef KILN_BINARY_OP

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto cond = rankedType(adaptor.getCondition());
  auto lhs = rankedType(adaptor.getTrueValue());
  auto rhs = rankedType(adaptor.getFalseValue());
  if (!cond || !lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  auto values = broadcastShapes(lhs.getShape(), rhs.getShape());
  FailureOr<SmallVector<int64_t>> shape = failure();
  if (succeeded(values))
    shape = broadcastShapes(cond.getShape(), *values);
  if (failed(shape))
    return emitOptionalError(loc, "operand shapes ",
                             shapeString(cond.getShape()), ", ",
                             shapeString(lhs.getShape()), " and ",
                             shapeString(rhs.getShape()),
                             " are not broadcast-compatible");
  types.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

LogicalResult SelectOp::verify() {
  Type lhs = getElementTypeOrSelf(getTrueValue().getType());
  Type rhs = getElementTypeOrSelf(getFalseValue().getType());
  if (lhs != rhs)
    return emitOpError("value element types must match, got ")
           << lhs << " and " << rhs;
  return success();
}

//===----------------------------------------------------------------------===//
// Parametric elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult ClipOp::verify() {
  if (getMin().convertToDouble() > getMax().convertToDouble())
    return emitOpError("min ")
           << getMin().convertToDouble() << " is greater than max "
           << getMax().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The result shape of a batched matrix product of `lhs` by `rhs`.
static FailureOr<SmallVector<int64_t>>
inferMatmulShape(std::optional<Location> loc, RankedTensorType lhs,
                 RankedTensorType rhs) {
  if (!lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank 2 or more, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t k1 = l[l.size() - 1], k2 = r[r.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "contraction dimensions differ: lhs ",
                             shapeString(l), " has K = ", k1, ", rhs ",
                             shapeString(r), " has K = ", k2);
  auto batch = broadcastShapes(l.drop_back(2), r.drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "batch dimensions ",
                             shapeString(l.drop_back(2)), " and ",
                             shapeString(r.drop_back(2)),
                             " are not broadcast-compatible");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(l[l.size() - 2]);
  shape.push_back(r[r.size() - 1]);
  return shape;
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = rankedType(adaptor.getLhs()), rhs = rankedType(adaptor.getRhs());
  auto shape = inferMatmulShape(loc, lhs, rhs);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

LogicalResult MatmulOp::verify() {
  Type lhs = getElementTypeOrSelf(getLhs().getType());
  Type rhs = getElementTypeOrSelf(getRhs().getType());
  if (lhs != rhs)
    return emitOpError("operand element types must match, got ")
           << lhs << " and " << rhs;
  return success();
}

//===----------------------------------------------------------------------===//
// Windowed ops: conv and pooling
//===----------------------------------------------------------------------===//

/// Checks the window attributes against `spatial` spatial dimensions.
static LogicalResult verifyWindow(std::optional<Location> loc,
                                  int64_t spatial, ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> dilations,
                                  ArrayRef<int64_t> pads) {
  if ((int64_t)strides.size() != spatial)
    return emitOptionalError(loc, "expected ", spatial, " strides, got ",
                             strides.size());
  if ((int64_t)dilations.size() != spatial)
    return emitOptionalError(loc, "expected ", spatial, " dilations, got ",
                             dilations.size());
  if ((int64_t)pads.size() != 2 * spatial)
    return emitOptionalError(loc, "expected ", 2 * spatial, " pads, got ",
                             pads.size());
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }))
    return emitOptionalError(loc, "strides must be positive, got ",
                             valuesString(strides));
  if (llvm::any_of(dilations, [](int64_t s) { return s < 1; }))
    return emitOptionalError(loc, "dilations must be positive, got ",
                             valuesString(dilations));
  if (llvm::any_of(pads, [](int64_t s) { return s < 0; }))
    return emitOptionalError(loc, "pads must be non-negative, got ",
                             valuesString(pads));
  return success();
}

/// The result shape of a convolution of `input` by `filter` with the given
/// window.
static FailureOr<SmallVector<int64_t>>
inferConvShape(std::optional<Location> loc, RankedTensorType input,
               RankedTensorType filter, ArrayRef<int64_t> strides,
               ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
               int64_t groups) {
  if (!input || !filter)
    return emitOptionalError(loc, "operands must be ranked tensors");
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc, "input must have rank 3 or more, got ", rank);
  if (filter.getRank() != rank)
    return emitOptionalError(loc, "filter rank ", filter.getRank(),
                             " differs from input rank ", rank);
  int64_t spatial = rank - 2;
  if (failed(verifyWindow(loc, spatial, strides, dilations, pads)))
    return failure();
  ArrayRef<int64_t> in = input.getShape(), f = filter.getShape();
  if (groups < 1)
    return emitOptionalError(loc, "groups must be positive, got ", groups);
  if (!ShapedType::isDynamic(in[1]) && !ShapedType::isDynamic(f[1]) &&
      (in[1] % groups != 0 || in[1] / groups != f[1])) // no overflow for any groups
    return emitOptionalError(loc, "input has ", in[1],
                             " channels but filter expects ", f[1], " x ",
                             groups, " groups");
  if (!ShapedType::isDynamic(f[0]) && f[0] % groups != 0)
    return emitOptionalError(loc, "filter count ", f[0],
                             " is not divisible by groups ", groups);
  SmallVector<int64_t> shape = {in[0], f[0]};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(in[i + 2], f[i + 2], strides[i],
                                     dilations[i], pads[i], pads[i + spatial],
                                     false));
  return shape;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  auto shape = inferConvShape(loc, input, rankedType(adaptor.getFilter()),
                              adaptor.getStrides(), adaptor.getDilations(),
                              adaptor.getPads(), adaptor.getGroups());
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

LogicalResult ConvOp::verify() {
  Type element = getElementTypeOrSelf(getInput().getType());
  if (getElementTypeOrSelf(getFilter().getType()) != element)
    return emitOpError("filter element type must match the input's");
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    int64_t filters = getFilter().getType().getShape()[0];
    if (biasType.getRank() != 1 || biasType.getShape()[0] != filters)
      return emitOpError("bias must have shape [")
             << filters << "], got " << shapeString(biasType.getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Winograd transforms
//===----------------------------------------------------------------------===//

WinogradMatrices kiln::winogradMatrices(int64_t m) {
  if (m == 2)
    return {2,
            4,
            {1, 0, -1, 0, /**/ 0, 1, 1, 0, /**/ 0, -1, 1, 0, /**/ 0, 1, 0, -1},
            {1, 0, 0, /**/ 0.5, 0.5, 0.5, /**/ 0.5, -0.5, 0.5, /**/ 0, 0, 1},
            {1, 1, 1, 0, /**/ 0, 1, -1, -1}};
  return {4,
          6,
          {4, 0, -5, 0, 1, 0, /**/ 0, -4, -4, 1, 1, 0, /**/ 0, 4, -4, -1, 1, 0,
           /**/ 0, -2, -1, 2, 1, 0, /**/ 0, 2, -1, -2, 1, 0, /**/ 0, 4, 0, -5, 0, 1},
          {1.0 / 4, 0, 0, /**/ -1.0 / 6, -1.0 / 6, -1.0 / 6, /**/ -1.0 / 6, 1.0 / 6, -1.0 / 6,
           /**/ 1.0 / 24, 1.0 / 12, 1.0 / 6, /**/ 1.0 / 24, -1.0 / 12, 1.0 / 6, /**/ 0, 0, 1},
          {1, 1, 1, 1, 1, 0, /**/ 0, 1, -1, 2, -2, 0, /**/ 0, 1, 1, 4, 4, 0,
           /**/ 0, 1, -1, 8, -8, 1}};
}

/// Checks `tile` (m = 2 or 4) and that `points` is (m + 2)^2.
static LogicalResult verifyWinogradTile(Operation *op, int64_t tile, int64_t points) {
  if (tile != 2 && tile != 4)
    return op->emitOpError("tile must be 2 or 4, got ") << tile;
  int64_t a = tile + 2;
  if (points != a * a)
    return op->emitOpError("F(") << tile << ", 3) has " << a * a
                                 << " transform points, got " << points;
  return success();
}

LogicalResult WinogradInputOp::verify() {
  auto input = getInput().getType();
  auto result = getResult().getType();
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("shapes must be static");
  if (input.getRank() != 4 || result.getRank() != 3)
    return emitOpError("input must be [N, C, H, W] and the result [points, C, tiles], got ")
           << shapeString(input.getShape()) << " and " << shapeString(result.getShape());
  ArrayRef<int64_t> pads = getPads();
  if (pads.size() != 4 || llvm::any_of(pads, [](int64_t p) { return p < 0 || p > 16; }))
    return emitOpError("pads must be 4 values from 0 to 16 ([top, left, bottom, right]), got ")
           << valuesString(pads);
  int64_t m = getTile();
  if (failed(verifyWinogradTile(*this, m, result.getDimSize(0))))
    return failure();
  int64_t oh = input.getDimSize(2) + pads[0] + pads[2] - 2;
  int64_t ow = input.getDimSize(3) + pads[1] + pads[3] - 2;
  if (oh < 1 || ow < 1)
    return emitOpError("the 3x3 convolution's output would be empty (")
           << oh << " x " << ow << ")";
  int64_t tiles = input.getDimSize(0) * winogradTiles(oh, m) * winogradTiles(ow, m);
  if (result.getDimSize(1) != input.getDimSize(1) || result.getDimSize(2) != tiles)
    return emitOpError("result must be ")
           << shapeString({result.getDimSize(0), input.getDimSize(1), tiles}) << " for "
           << oh << " x " << ow << " outputs in tiles of " << m << ", got "
           << shapeString(result.getShape());
  return success();
}

LogicalResult WinogradOutputOp::verify() {
  auto input = getInput().getType();
  auto result = getResult().getType();
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("shapes must be static");
  if (input.getRank() != 3 || result.getRank() != 4)
    return emitOpError("input must be [points, F, tiles] and the result [N, F, OH, OW], got ")
           << shapeString(input.getShape()) << " and " << shapeString(result.getShape());
  int64_t m = getTile();
  if (failed(verifyWinogradTile(*this, m, input.getDimSize(0))))
    return failure();
  int64_t f = result.getDimSize(1);
  int64_t tiles = result.getDimSize(0) * winogradTiles(result.getDimSize(2), m) *
                  winogradTiles(result.getDimSize(3), m);
  if (input.getDimSize(1) != f || input.getDimSize(2) != tiles)
    return emitOpError("input must be ")
           << shapeString({input.getDimSize(0), f, tiles}) << " for the result "
           << shapeString(result.getShape()) << " in tiles of " << m << ", got "
           << shapeString(input.getShape());
  if (Value bias = getBias())
    if (cast<RankedTensorType>(bias.getType()).getShape() != ArrayRef<int64_t>{f})
      return emitOpError("bias must have shape [")
             << f << "], got " << shapeString(cast<RankedTensorType>(bias.getType()).getShape());
  if (Value residual = getResidual())
    if (residual.getType() != result)
      return emitOpError("residual must have the result's type ") << result << ", got "
                                                                  << residual.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Integer contractions
//===----------------------------------------------------------------------===//

/// Checks that `zeroPoint` (when present) has the element type of `operand`
/// (named `operandName`) and broadcasts to its shape with size 1 along
/// dimension `contracted` of the operand.
static LogicalResult verifyZeroPoint(Operation *op, Value zeroPoint,
                                     StringRef name, Value operand,
                                     StringRef operandName,
                                     int64_t contracted) {
  if (!zeroPoint)
    return success();
  auto type = cast<RankedTensorType>(zeroPoint.getType());
  auto operandType = cast<RankedTensorType>(operand.getType());
  if (type.getElementType() != operandType.getElementType())
    return op->emitOpError(name)
           << " element type " << type.getElementType() << " differs from "
           << operandName << " element type " << operandType.getElementType();
  ArrayRef<int64_t> shape = type.getShape(), full = operandType.getShape();
  int64_t offset = (int64_t)full.size() - (int64_t)shape.size();
  auto broadcast = broadcastShapes(shape, full);
  bool ok = offset >= 0 && succeeded(broadcast) &&
            ArrayRef<int64_t>(*broadcast) == full &&
            (contracted < offset || shape[contracted - offset] == 1);
  if (!ok)
    return op->emitOpError(name)
           << " shape " << shapeString(shape) << " does not broadcast to "
           << operandName << " shape " << shapeString(full)
           << " with size 1 along K";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear quantization
//===----------------------------------------------------------------------===//

/// Checks a quantize or dequantize: `real` and `integer` have one shape,
/// `scale` has the float element type of `real`, `zeroPoint` the element
/// type of `integer`, and both broadcast to that shape.
static LogicalResult verifyQuantization(Operation *op, RankedTensorType real,
                                        RankedTensorType integer, Value scale,
                                        Value zeroPoint) {
  if (real.getShape() != integer.getShape())
    return op->emitOpError("float shape ")
           << shapeString(real.getShape()) << " differs from integer shape "
           << shapeString(integer.getShape());
  auto checkParam = [&](Value param, StringRef name, Type element) -> LogicalResult {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getElementType() != element)
      return op->emitOpError(name) << " element type " << type.getElementType()
                                   << " must be " << element;
    auto broadcast = broadcastShapes(type.getShape(), real.getShape());
    if (type.getRank() > real.getRank() || failed(broadcast) ||
        ArrayRef<int64_t>(*broadcast) != real.getShape())
      return op->emitOpError(name) << " shape " << shapeString(type.getShape())
                                   << " does not broadcast to "
                                   << shapeString(real.getShape());
    return success();
  };
  if (failed(checkParam(scale, "scale", real.getElementType())))
    return failure();
  if (zeroPoint && failed(checkParam(zeroPoint, "zero_point", integer.getElementType())))
    return failure();
  return success();
}

LogicalResult QuantizeOp::verify() {
  return verifyQuantization(*this, getInput().getType(), getResult().getType(),
                            getScale(), getZeroPoint());
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantization(*this, getResult().getType(), getInput().getType(),
                            getScale(), getZeroPoint());
}

LogicalResult MatmulIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto shape = inferMatmulShape(loc, rankedType(adaptor.getLhs()),
                                rankedType(adaptor.getRhs()));
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult MatmulInt4Op::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto lhs = rankedType(adaptor.getLhs()), weights = rankedType(adaptor.getWeights());
  auto scale = rankedType(adaptor.getScale()), zero = rankedType(adaptor.getZeroPoint());
  if (!lhs || !weights || !scale || !zero)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (!lhs.hasStaticShape() || !weights.hasStaticShape() || !scale.hasStaticShape() ||
      !zero.hasStaticShape())
    return emitOptionalError(loc, "operands must have static shapes");
  if (lhs.getRank() < 2)
    return emitOptionalError(loc, "lhs must have rank 2 or more, got ", lhs.getRank());
  // [K / B, B / 2, N], or in column panels [N / P, K / B, B / 2, P] or
  // (W4A8) [N / P, K / B, B / 8, P, 4].
  bool panels = weights.getRank() >= 4;
  ArrayRef<int64_t> w = weights.getShape();
  if ((weights.getRank() != 3 && weights.getRank() != 4 && weights.getRank() != 5) ||
      (weights.getRank() == 5 && w[4] != 4))
    return emitOptionalError(loc, "weights must be [K / B, B / 2, N], [N / P, K / B, B / 2, P] "
                                  "or [N / P, K / B, B / 8, P, 4] bytes, got ",
                             shapeString(weights.getShape()));
  int64_t groups = panels ? w[1] : w[0];
  int64_t block = weights.getRank() == 5 ? 8 * w[2] : 2 * (panels ? w[2] : w[1]);
  int64_t n = panels ? w[0] * w[3] : w[2], k = lhs.getShape().back();
  if (block == 0 || groups * block != k)
    return emitOptionalError(loc, "weights ", shapeString(weights.getShape()), " hold ",
                             groups, " groups of ", block, " rows, but lhs ",
                             shapeString(lhs.getShape()), " has K = ", k);
  SmallVector<int64_t> scaleShape =
      panels ? SmallVector<int64_t>{w[0], groups, w[3]} : SmallVector<int64_t>{groups, n};
  for (auto [name, type] : {std::pair{"scale", scale}, std::pair{"zero_point", zero}}) {
    if (type.getElementType() != lhs.getElementType())
      return emitOptionalError(loc, name, " element type ", type.getElementType(),
                               " differs from lhs element type ", lhs.getElementType());
    if (type.getShape() != ArrayRef<int64_t>(scaleShape))
      return emitOptionalError(loc, name, " must be ",
                               panels ? "[N / P, K / B, P] = " : "[K / B, N] = ",
                               shapeString(scaleShape), ", got ",
                               shapeString(type.getShape()));
  }
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = n;
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult MatmulPanelsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto lhs = rankedType(adaptor.getLhs()), weights = rankedType(adaptor.getWeights());
  if (!lhs || !weights)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (!lhs.hasStaticShape() || !weights.hasStaticShape())
    return emitOptionalError(loc, "operands must have static shapes");
  if (lhs.getRank() < 2)
    return emitOptionalError(loc, "lhs must have rank 2 or more, got ", lhs.getRank());
  if (weights.getRank() != 3)
    return emitOptionalError(loc, "weights must be [ceil(N / P), K, P], got ",
                             shapeString(weights.getShape()));
  Type lhsElem = lhs.getElementType(), weightElem = weights.getElementType();
  Type resultElem = lhsElem;
  if (isa<FloatType>(lhsElem)) {
    if (lhsElem != weightElem)
      return emitOptionalError(loc, "weights element type ", weightElem,
                               " differs from lhs element type ", lhsElem);
  } else if (lhsElem.isInteger(8)) {
    if (!weightElem.isInteger(8) || weightElem.isUnsignedInteger())
      return emitOptionalError(loc, "8-bit lhs needs i8 weights, got ", weightElem);
    resultElem = IntegerType::get(lhs.getContext(), 32);
  } else {
    return emitOptionalError(loc, "lhs must be float or 8-bit integer, got ", lhsElem);
  }
  int64_t panels = weights.getDimSize(0), k = weights.getDimSize(1), panel = weights.getDimSize(2);
  if (k != lhs.getShape().back())
    return emitOptionalError(loc, "weights ", shapeString(weights.getShape()), " have K = ", k,
                             ", but lhs ", shapeString(lhs.getShape()), " has K = ",
                             lhs.getShape().back());
  int64_t n = adaptor.getColumns();
  if (panel <= 0 || n <= (panels - 1) * panel || n > panels * panel)
    return emitOptionalError(loc, "columns = ", n, " do not fill the last of ", panels,
                             " panels of ", panel);
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = n;
  types.push_back(RankedTensorType::get(shape, resultElem));
  return success();
}

LogicalResult MatmulIntegerOp::verify() {
  int64_t lhsRank = getLhs().getType().getRank();
  int64_t rhsRank = getRhs().getType().getRank();
  if (failed(verifyZeroPoint(*this, getLhsZeroPoint(), "lhs_zero_point",
                             getLhs(), "lhs", lhsRank - 1)))
    return failure();
  return verifyZeroPoint(*this, getRhsZeroPoint(), "rhs_zero_point", getRhs(),
                         "rhs", rhsRank - 2);
}

LogicalResult ConvIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto shape = inferConvShape(loc, rankedType(adaptor.getInput()),
                              rankedType(adaptor.getFilter()),
                              adaptor.getStrides(), adaptor.getDilations(),
                              adaptor.getPads(), adaptor.getGroups());
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult ConvIntegerOp::verify() {
  if (Value zp = getInputZeroPoint()) {
    auto type = cast<RankedTensorType>(zp.getType());
    Type element = getInput().getType().getElementType();
    if (type.getElementType() != element)
      return emitOpError("input_zero_point element type ")
             << type.getElementType() << " differs from input element type "
             << element;
    if (type.getRank() != 0)
      return emitOpError("input_zero_point must be a scalar, got shape ")
             << shapeString(type.getShape());
  }
  if (Value zp = getFilterZeroPoint()) {
    auto type = cast<RankedTensorType>(zp.getType());
    Type element = getFilter().getType().getElementType();
    if (type.getElementType() != element)
      return emitOpError("filter_zero_point element type ")
             << type.getElementType() << " differs from filter element type "
             << element;
    int64_t filters = getFilter().getType().getShape()[0];
    if (type.getRank() > 1 ||
        (type.getRank() == 1 && type.getShape()[0] != filters))
      return emitOpError("filter_zero_point must be a scalar or have shape [")
             << filters << "], got " << shapeString(type.getShape());
  }
  return success();
}

template <typename OpTy>
static LogicalResult inferPool(std::optional<Location> loc,
                               typename OpTy::Adaptor adaptor,
                               SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc, "input must have rank 3 or more, got ", rank);
  int64_t spatial = rank - 2;
  ArrayRef<int64_t> kernel = adaptor.getKernel();
  if ((int64_t)kernel.size() != spatial)
    return emitOptionalError(loc, "expected ", spatial,
                             " kernel sizes, got ", kernel.size());
  if (llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
    return emitOptionalError(loc, "kernel sizes must be positive, got ",
                             valuesString(kernel));
  if (failed(verifyWindow(loc, spatial, adaptor.getStrides(),
                          adaptor.getDilations(), adaptor.getPads())))
    return failure();
  ArrayRef<int64_t> in = input.getShape();
  SmallVector<int64_t> shape = {in[0], in[1]};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(
        in[i + 2], kernel[i], adaptor.getStrides()[i],
        adaptor.getDilations()[i], adaptor.getPads()[i],
        adaptor.getPads()[i + spatial], adaptor.getCeilMode()));
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

template <typename OpTy>
static LogicalResult verifyPool(OpTy op) {
  ArrayRef<int64_t> kernel = op.getKernel(), pads = op.getPads();
  size_t spatial = kernel.size();
  for (size_t i = 0; i < spatial && 2 * spatial == pads.size(); ++i)
    if (kernel[i] >= 1 && (pads[i] >= kernel[i] || pads[i + spatial] >= kernel[i]))
      return op.emitOpError("pads ")
             << shapeString(pads) << " must be smaller than the kernel "
             << shapeString(kernel);
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPool<MaxPoolOp>(loc, adaptor, types);
}
LogicalResult MaxPoolOp::verify() { return verifyPool(*this); }

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPool<AvgPoolOp>(loc, adaptor, types);
}
LogicalResult AvgPoolOp::verify() { return verifyPool(*this); }

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (failed(verifyAxes(loc, axes, input.getRank(), "reduction axis")))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, (int64_t)i))
      shape.push_back(d);
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

#define KILN_REDUCE_OP(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReduce<OP>(loc, adaptor, types);                               \
  }
KILN_REDUCE_OP(ReduceSumOp)
KILN_REDUCE_OP(ReduceMeanOp)
KILN_REDUCE_OP(ReduceMaxOp)
KILN_REDUCE_OP(ReduceMinOp)
KILN_REDUCE_OP(ReduceProdOp)
#undef KILN_REDUCE_OP

template <typename OpTy>
static LogicalResult inferArg(MLIRContext *ctx, std::optional<Location> loc,
                              typename OpTy::Adaptor adaptor,
                              SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(input.getShape())) {
    if ((int64_t)i != axis)
      shape.push_back(d);
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArg<ArgMaxOp>(ctx, loc, adaptor, types);
}
LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArg<ArgMinOp>(ctx, loc, adaptor, types);
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ") << getAxis() << " is out of range for rank "
                                << rank;
  return success();
}

/// Checks a normalization's `axis` and that `param` broadcasts against the
/// normalized trailing dimensions of `input`.
static LogicalResult verifyNormParam(Operation *op, RankedTensorType input,
                                     int64_t axis, Value param,
                                     StringRef name) {
  int64_t rank = input.getRank();
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ") << axis << " is out of range for rank "
                                    << rank;
  if (!param)
    return success();
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getElementType() != input.getElementType())
    return op->emitOpError(name) << " element type must match the input's";
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  auto shape = broadcastShapes(normalized, type.getShape());
  if (type.getRank() > (int64_t)normalized.size() || failed(shape) ||
      ArrayRef<int64_t>(*shape) != normalized)
    return op->emitOpError(name)
           << " shape " << shapeString(type.getShape())
           << " does not broadcast to the normalized dimensions "
           << shapeString(normalized);
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto input = getInput().getType();
  if (getResult().getType() != input)
    return emitOpError("result type must match the input type");
  if (failed(verifyNormParam(*this, input, getAxis(), getScale(), "scale")))
    return failure();
  return verifyNormParam(*this, input, getAxis(), getBias(), "bias");
}

LogicalResult RmsNormOp::verify() {
  auto input = getInput().getType();
  if (getResult().getType() != input)
    return emitOpError("result type must match the input type");
  return verifyNormParam(*this, input, getAxis(), getScale(), "scale");
}

LogicalResult RotaryEmbeddingOp::verify() {
  auto input = getInput().getType();
  if (getResult().getType() != input)
    return emitOpError("result type must match the input type");
  if (input.getRank() < 1)
    return emitOpError("input must have rank 1 or more");
  int64_t d = input.getShape().back();
  if (!ShapedType::isDynamic(d) && d % 2 != 0)
    return emitOpError("last dimension must be even, got ") << d;
  for (auto [param, name] : {std::pair(getCos(), "cos"), std::pair(getSin(), "sin")}) {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getElementType() != input.getElementType())
      return emitOpError(name) << " element type " << type.getElementType()
                               << " must be the input's, " << input.getElementType();
    auto broadcast = broadcastShapes(type.getShape(), input.getShape());
    if (type.getRank() > input.getRank() || failed(broadcast) ||
        ArrayRef<int64_t>(*broadcast) != input.getShape())
      return emitOpError(name) << " shape " << shapeString(type.getShape())
                               << " does not broadcast to "
                               << shapeString(input.getShape());
  }
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto input = getInput().getType();
  if (getResult().getType() != input)
    return emitOpError("result type must match the input type");
  if (input.getRank() < 2)
    return emitOpError("input must have rank 2 or more, got ")
           << input.getRank();
  int64_t channels = input.getShape()[1];
  for (Value param : {getScale(), getBias(), getMean(), getVariance()}) {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getRank() != 1 || type.getShape()[0] != channels)
      return emitOpError("parameters must have shape [")
             << channels << "], got " << shapeString(type.getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element types of input and result must match");
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in.getNumElements() << " elements "
           << shapeString(in.getShape()) << " into "
           << out.getNumElements() << " elements "
           << shapeString(out.getShape());
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  if ((int64_t)perm.size() != rank)
    return emitOptionalError(loc, "permutation ", shapeString(perm),
                             " does not have rank ", rank);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, "permutation ", shapeString(perm),
                               " is not a permutation of [0, ", rank, ")");
    seen[p] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getShape()[p]);
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "expected at least one input");
  auto first = rankedType(inputs.front());
  if (!first)
    return emitOptionalError(loc, "inputs must be ranked tensors");
  int64_t rank = first.getRank(), axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto type = rankedType(v);
    if (!type || type.getRank() != rank)
      return emitOptionalError(loc, "input ", i + 1, " does not have rank ",
                               rank);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getShape()[d];
      if (d == axis) {
        shape[d] = ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(size)
                       ? ShapedType::kDynamic
                       : shape[d] + size;
      } else if (size != shape[d]) {
        return emitOptionalError(loc, "input ", i + 1, " has shape ",
                                 shapeString(type.getShape()),
                                 ", which differs from ",
                                 shapeString(first.getShape()),
                                 " outside axis ", axis);
      }
    }
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult ConcatOp::verify() {
  Type element = getElementTypeOrSelf(getInputs().front().getType());
  for (Value v : getInputs())
    if (getElementTypeOrSelf(v.getType()) != element)
      return emitOpError("input element types must match");
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  int64_t rank = input.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)ends.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(loc, "starts, ends and steps must have ", rank,
                             " entries each");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getShape()[d];
    if (steps[d] == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    if (ShapedType::isDynamic(dim)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    bool forward = steps[d] > 0;
    // Forward: starts in [0, dim], ends in [0, dim]. Backward: starts in
    // [-1, dim - 1], ends in [-1, dim - 1] (-1 means "past the front").
    int64_t lo = forward ? 0 : -1, hi = forward ? dim : dim - 1;
    if (starts[d] < lo || starts[d] > hi || ends[d] < lo || ends[d] > hi)
      return emitOptionalError(loc, "slice bounds [", starts[d], ", ", ends[d],
                               ") are out of range for dimension ", d,
                               " of size ", dim);
    int64_t span = forward ? ends[d] - starts[d] : starts[d] - ends[d];
    int64_t step = forward ? steps[d] : -steps[d];
    shape.push_back(span <= 0 ? 0 : llvm::divideCeil(span, step));
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t rank = input.getRank();
  ArrayRef<int64_t> pads = adaptor.getPads();
  if ((int64_t)pads.size() != 2 * rank)
    return emitOptionalError(loc, "expected ", 2 * rank, " pads, got ",
                             pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getShape()[d];
    int64_t size = ShapedType::isDynamic(dim) ? dim
                                              : dim + pads[d] + pads[d + rank];
    if (!ShapedType::isDynamic(size) && size < 0)
      return emitOptionalError(loc, "pads ", shapeString(pads),
                               " crop dimension ", d, " below zero");
    shape.push_back(size);
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOpError("mode must be constant, reflect or edge, got \"")
           << mode << "\"";
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  if (!data || !indices)
    return emitOptionalError(loc, "operands must be ranked tensors");
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

/// Checks that `indices` has the rank of `data` and is no larger outside
/// `axis` (the shared shape rule of GatherElements and ScatterElements).
static LogicalResult verifyElementIndices(std::optional<Location> loc,
                                          RankedTensorType data,
                                          RankedTensorType indices,
                                          int64_t axis) {
  int64_t rank = data.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  if (indices.getRank() != rank)
    return emitOptionalError(loc, "indices rank ", indices.getRank(),
                             " differs from data rank ", rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t i = indices.getShape()[d], n = data.getShape()[d];
    if (d != axis && !ShapedType::isDynamic(i) && !ShapedType::isDynamic(n) &&
        i > n)
      return emitOptionalError(loc, "indices shape ",
                               shapeString(indices.getShape()),
                               " is larger than data shape ",
                               shapeString(data.getShape()),
                               " outside axis ", axis);
  }
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  if (!data || !indices)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (failed(verifyElementIndices(loc, data, indices, adaptor.getAxis())))
    return failure();
  types.push_back(
      RankedTensorType::get(indices.getShape(), data.getElementType()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  auto updates = rankedType(adaptor.getUpdates());
  if (!data || !indices || !updates)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (failed(verifyElementIndices(loc, data, indices, adaptor.getAxis())))
    return failure();
  if (updates.getShape() != indices.getShape())
    return emitOptionalError(loc, "updates shape ",
                             shapeString(updates.getShape()),
                             " differs from indices shape ",
                             shapeString(indices.getShape()));
  types.push_back(data);
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  Type data = getElementTypeOrSelf(getData().getType());
  Type updates = getElementTypeOrSelf(getUpdates().getType());
  if (data != updates)
    return emitOpError("updates element type ")
           << updates << " differs from data element type " << data;
  StringRef reduction = getReduction();
  if (!llvm::is_contained(
          ArrayRef<StringRef>{"none", "add", "mul", "max", "min"}, reduction))
    return emitOpError("reduction must be none, add, mul, max or min, got \"")
           << reduction << "\"";
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto indices = rankedType(adaptor.getIndices());
  auto values = rankedType(adaptor.getValues());
  if (!indices || !values)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (values.getRank() != 1 || values.getShape()[0] != 2)
    return emitOptionalError(loc, "values must have shape [2], got ",
                             shapeString(values.getShape()));
  int64_t axis = adaptor.getAxis(), depth = adaptor.getDepth();
  if (axis < 0 || axis > indices.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             indices.getRank() + 1);
  if (depth < 1)
    return emitOptionalError(loc, "depth must be positive, got ", depth);
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + axis, depth);
  types.push_back(RankedTensorType::get(shape, values.getElementType()));
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element types of input and result must match");
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != out.getShape())
    return emitOpError("cannot broadcast ")
           << shapeString(in.getShape()) << " to "
           << shapeString(out.getShape());
  return success();
}

LogicalResult DispatchOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body takes "
                               << body.getNumArguments() << " arguments";
  for (auto [i, input, arg] :
       llvm::enumerate(getInputs().getTypes(), body.getArgumentTypes()))
    if (input != arg)
      return emitOpError("input ") << i << " has type " << input
                                   << " but body argument " << i << " has type " << arg;
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with kiln.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values whose types differ from its results";
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnOps.cpp.inc"
