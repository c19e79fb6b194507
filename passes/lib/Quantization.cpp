//===- Quantization.cpp - quantized contractions on kiln IR ---------------===//
//
// The quantization layer of the graph passes:
//   kiln-quantize-weights      float weights of contractions whose activation
//                              is quantized become int8 per output channel;
//   kiln-quantize-int4-weights float [K, N] matmul weights become 4-bit
//                              codes in groups along K (kiln.matmul_int4);
//   kiln-fold-quantized-ops    conv / matmul of dequantized 8-bit operands
//                              become conv_integer / matmul_integer in i32,
//                              scaled back to float (and the bias added) in
//                              what becomes the dispatch's epilogue;
//   kiln-expand-quantization   the kiln.quantize / kiln.dequantize left over
//                              become elementwise ops.
// Kiln's own post-training quantization (the importer's fake quantization
// from a calibration table) and pre-quantized QDQ models meet here in the
// same IR, and so reach the same integer kernels.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNQUANTIZEWEIGHTS
#define GEN_PASS_DEF_KILNQUANTIZEINT4WEIGHTS
#define GEN_PASS_DEF_KILNFOLDQUANTIZEDOPS
#define GEN_PASS_DEF_KILNEXPANDQUANTIZATION
#define GEN_PASS_DEF_KILNQUANTIZEINT4ACTIVATIONS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// The values of a constant (looking through reshapes) as doubles: f32, f16,
/// bf16 and integers up to 64 bits, dense or in a blob. Nullopt otherwise.
std::optional<SmallVector<double>> constantValues(Value value) {
  // Reshapes keep the row-major order, and so do transposes of a tensor with
  // at most one dimension above 1 (a per-channel vector).
  auto keepsOrder = [](TransposeOp t) {
    return llvm::count_if(t.getInput().getType().getShape(), [](int64_t d) { return d != 1; }) <= 1;
  };
  while (true) {
    if (auto reshape = value.getDefiningOp<ReshapeOp>())
      value = reshape.getInput();
    else if (auto transpose = value.getDefiningOp<TransposeOp>(); transpose && keepsOrder(transpose))
      value = transpose.getInput();
    else
      break;
  }
  auto cst = value.getDefiningOp<ConstantOp>();
  if (!cst)
    return std::nullopt;
  ElementsAttr attr = cst.getValue();
  Type element = attr.getElementType();
  int64_t count = attr.getNumElements();
  SmallVector<double> out;
  out.reserve(count);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(element)) {
      for (APFloat v : dense.getValues<APFloat>())
        out.push_back(v.convertToDouble());
    } else if (auto integer = dyn_cast<IntegerType>(element)) {
      for (APInt v : dense.getValues<APInt>())
        out.push_back(integer.isUnsigned() ? double(v.getZExtValue())
                                           : double(v.getSExtValue()));
    } else {
      return std::nullopt;
    }
    return out;
  }
  std::optional<ArrayRef<char>> bytes = rawConstantBytes(attr);
  if (!bytes)
    return std::nullopt;
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits % 8 != 0 || bytes->size() != size_t(count) * (bits / 8))
    return std::nullopt;
  const char *data = bytes->data();
  for (int64_t i = 0; i < count; ++i) {
    const char *at = data + i * (bits / 8);
    if (element.isF32()) {
      float v;
      std::memcpy(&v, at, 4);
      out.push_back(v);
    } else if (auto integer = dyn_cast<IntegerType>(element)) {
      uint64_t raw = 0;
      std::memcpy(&raw, at, bits / 8);
      APInt v(bits, raw);
      out.push_back(integer.isUnsigned() ? double(v.getZExtValue()) : double(v.getSExtValue()));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

Value f32Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, ArrayRef<float> values) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, values));
}

/// An integer constant of `element` (i8, ui8, i4 or ui4) and `shape`.
Value int8Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                   ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, element);
  unsigned width = element.getIntOrFloatBitWidth();
  SmallVector<APInt> bits;
  for (int64_t v : values)
    bits.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true,
                         /*implicitTrunc=*/true));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, bits));
}

bool isInt8(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isInteger(8); // i8 and ui8 (kiln has no si8)
}

/// The width of a quantized integer operand kiln-fold-quantized-ops folds:
/// 8 (i8, ui8) or 4 (i4, ui4); 0 for anything else.
unsigned quantizedWidth(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isInteger(8) || element.isInteger(4))
    return element.getIntOrFloatBitWidth();
  return 0;
}

//===----------------------------------------------------------------------===//
// kiln-quantize-weights
//===----------------------------------------------------------------------===//

/// Replaces the float constant `weight` of `op` by its symmetric int8
/// quantization, one scale per channel: channel c holds the elements at
/// `(i / inner) % channels == c` in row-major order. Returns false when the
/// weight is not a readable f32 constant.
bool quantizeWeight(Operation *op, OpOperand &weight, int64_t channels, int64_t inner,
                    ArrayRef<int64_t> scaleShape, unsigned &counter) {
  auto cst = weight.get().getDefiningOp<ConstantOp>();
  if (!cst)
    return false;
  auto type = cast<RankedTensorType>(cst.getType());
  int64_t count = type.getNumElements();
  std::optional<std::vector<float>> read = f32ConstantValues(cst);
  if (!read)
    return false;
  const std::vector<float> &values = *read;
  auto at = [&](int64_t i) { return values[i]; };
  std::vector<float> maxAbs(channels, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    float v = std::fabs(at(i));
    if (!std::isfinite(v))
      return false; // nothing sensible to quantize; keep the float weight
    float &m = maxAbs[(i / inner) % channels];
    m = std::max(m, v);
  }
  // [-127, 127]: symmetric, and a u8 x s8 pair product sum fits in int16 twice.
  SmallVector<float> scales(channels);
  for (int64_t c = 0; c < channels; ++c)
    scales[c] = maxAbs[c] > 0 ? maxAbs[c] / 127.0f : 1.0f;
  std::vector<char> quantized(count);
  for (int64_t i = 0; i < count; ++i) {
    float q = std::nearbyint(at(i) / scales[(i / inner) % channels]);
    quantized[i] = static_cast<char>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
  }
  OpBuilder b(op);
  Location loc = cst.getLoc();
  auto qType = type.clone(b.getIntegerType(8));
  Value q = bytesConstant(b, loc, qType, quantized, "quantized_weight_" + std::to_string(counter++));
  Value scale = f32Constant(b, loc, scaleShape, scales);
  Value real = DequantizeOp::create(b, loc, type, q, scale, Value());
  weight.set(real);
  if (cst->use_empty())
    cst.erase();
  return true;
}

struct KilnQuantizeWeightsPass
    : kiln::impl::KilnQuantizeWeightsBase<KilnQuantizeWeightsPass> {
  void runOnOperation() override {
    unsigned counter = 0;
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<ConvOp>(op)) {
        if (!conv.getInput().getDefiningOp<DequantizeOp>())
          return;
        auto filter = conv.getFilter().getType();
        int64_t channels = filter.getDimSize(0);
        SmallVector<int64_t> scaleShape(filter.getRank(), 1);
        scaleShape[0] = channels;
        quantizeWeight(op, conv.getFilterMutable(), channels,
                       filter.getNumElements() / std::max<int64_t>(channels, 1), scaleShape,
                       counter);
      } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
        auto rhs = matmul.getRhs().getType();
        if (!matmul.getLhs().getDefiningOp<DequantizeOp>() || rhs.getRank() != 2)
          return;
        int64_t columns = rhs.getDimSize(1);
        quantizeWeight(op, matmul.getRhsMutable(), columns, 1, {1, columns}, counter);
      }
    });
  }
};

//===----------------------------------------------------------------------===//
// kiln-quantize-int4-weights
//===----------------------------------------------------------------------===//

/// The grouped 4-bit quantization of a float [K, N] weight, in the layout of
/// kiln.matmul_int4.
struct Int4Weights {
  std::vector<char> bytes;        // [K / G, G / 2, N]
  std::vector<float> scales, zeros; // [K / G, N]
};

/// Packs 4-bit codes `code(row, column)` of a [K, N] weight in groups of
/// `group` rows into kiln.matmul_int4's [K / G, G / 2, N] bytes: byte
/// [g, j, n] holds row g G + j in its low four bits, g G + G / 2 + j in its
/// high four bits.
std::vector<char> packInt4(int64_t k, int64_t n, int64_t group,
                           llvm::function_ref<uint8_t(int64_t, int64_t)> code) {
  int64_t half = group / 2;
  std::vector<char> bytes((k / group) * half * n);
  for (int64_t g = 0; g < k / group; ++g)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t c = 0; c < n; ++c)
        bytes[(g * half + j) * n + c] = static_cast<char>(
            (code(g * group + j, c) & 15) | (code(g * group + half + j, c) << 4));
  return bytes;
}

/// Quantizes `w` ([K, N], row-major) in groups of `group` rows per column:
/// symmetric (scale = max |w| / 7, codes rint(w / scale) + 8 in 1..15, zero
/// point 8) or, with `zeroPoints`, asymmetric over [min(w, 0), max(w, 0)]
/// (scale = range / 15, zero point rint(-min / scale), codes rint(w / scale)
/// + zero point clipped to 0..15). Float arithmetic, half to even. Nullopt
/// for weights with NaN or infinity.
std::optional<Int4Weights> quantizeInt4(ArrayRef<float> w, int64_t k, int64_t n,
                                        int64_t group, bool zeroPoints) {
  int64_t groups = k / group;
  Int4Weights out;
  out.scales.resize(groups * n);
  out.zeros.resize(groups * n);
  std::vector<uint8_t> codes(k * n);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t c = 0; c < n; ++c) {
      float lo = 0, hi = 0;
      for (int64_t r = 0; r < group; ++r) {
        float v = w[(g * group + r) * n + c];
        if (!std::isfinite(v))
          return std::nullopt;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      float scale, zero;
      if (zeroPoints) {
        scale = hi - lo > 0 ? (hi - lo) / 15.0f : 1.0f;
        zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f) + 0.0f; // (not -0)
      } else {
        float amax = std::max(-lo, hi);
        scale = amax > 0 ? amax / 7.0f : 1.0f;
        zero = 8;
      }
      for (int64_t r = 0; r < group; ++r) {
        float v = w[(g * group + r) * n + c];
        float q = zeroPoints ? std::clamp(std::nearbyint(v / scale) + zero, 0.0f, 15.0f)
                             : std::clamp(std::nearbyint(v / scale), -8.0f, 7.0f) + 8.0f;
        codes[(g * group + r) * n + c] = static_cast<uint8_t>(q);
      }
      out.scales[g * n + c] = scale;
      out.zeros[g * n + c] = zero;
    }
  }
  out.bytes = packInt4(k, n, group, [&](int64_t r, int64_t c) { return codes[r * n + c]; });
  return out;
}

struct KilnQuantizeInt4WeightsPass
    : kiln::impl::KilnQuantizeInt4WeightsBase<KilnQuantizeInt4WeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (groupSize < 2 || groupSize % 2 != 0) {
      getOperation().emitError("kiln-quantize-int4-weights: group-size must be even and at "
                               "least 2, got ")
          << static_cast<int64_t>(groupSize);
      return signalPassFailure();
    }
    llvm::StringSet<> keep;
    if (auto module = getOperation()->getParentOfType<ModuleOp>())
      if (auto names = module->getAttrOfType<ArrayAttr>(kFloatNodesAttr))
        for (auto name : names.getAsValueRange<StringAttr>())
          keep.insert(name);
    unsigned counter = 0;
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp matmul : matmuls) {
      auto rhs = matmul.getRhs().getType();
      auto cst = matmul.getRhs().getDefiningOp<ConstantOp>();
      if (!cst || rhs.getRank() != 2 || !rhs.hasStaticShape() ||
          !matmul.getLhs().getType().getElementType().isF32() ||
          keep.contains(nodeNameOf(matmul.getLoc())))
        continue;
      int64_t k = rhs.getDimSize(0), n = rhs.getDimSize(1);
      std::optional<std::vector<float>> values = f32ConstantValues(cst);
      if (!values)
        continue;
      // K not a multiple of the group: the weight gains zero rows (codes
      // that dequantize to 0, whatever the scheme) and the activation zero
      // columns, as MatMulNBits' padded last block does.
      int64_t padded = llvm::divideCeil(k, groupSize) * groupSize;
      values->resize(padded * n, 0.0f);
      std::optional<Int4Weights> q = quantizeInt4(*values, padded, n, groupSize, zeroPoints);
      if (!q)
        continue;
      OpBuilder b(matmul);
      Location loc = cst.getLoc();
      Value lhs = matmul.getLhs();
      if (padded != k) {
        auto lhsType = cast<RankedTensorType>(lhs.getType());
        SmallVector<int64_t> shape(lhsType.getShape()), pads(2 * shape.size(), 0);
        pads.back() = padded - k;
        shape.back() = padded;
        lhs = PadOp::create(b, matmul.getLoc(), lhsType.clone(shape), lhs,
                            b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"),
                            b.getF64FloatAttr(0.0));
      }
      int64_t groups = padded / groupSize;
      auto byteType = RankedTensorType::get({groups, groupSize / 2, n}, b.getIntegerType(8));
      Value bytes = bytesConstant(b, loc, byteType, q->bytes,
                                  "int4_weight_" + std::to_string(counter++));
      Value scale = f32Constant(b, loc, {groups, n}, q->scales);
      Value zero = f32Constant(b, loc, {groups, n}, q->zeros);
      Value result = MatmulInt4Op::create(b, matmul.getLoc(), lhs, bytes, scale, zero);
      matmul.replaceAllUsesWith(result);
      matmul.erase();
      if (cst->use_empty())
        cst.erase();
    }
  }
};

//===----------------------------------------------------------------------===//
// kiln-fold-quantized-ops
//===----------------------------------------------------------------------===//

/// A dequantized 8-bit (or 4-bit) operand: its integers, its scales and
/// zero points (one per tensor, or one per channel).
struct Dequantized {
  Value integers;
  SmallVector<double> scales;
  SmallVector<double> zeroPoints; // empty: 0
  /// A per-tensor scale and zero point known only at run time (dynamic
  /// quantization): rank-0 values, `scales` then {1} and `zeroPoints` empty.
  Value runTimeScale, runTimeZeroPoint;
};

/// `value` as a kiln.dequantize of `width`-bit integers (8 or 4) with
/// constant scale and zero point of one value or `channels` values along
/// `axis` (every other dimension of the parameter 1; axis -1 allows one
/// value only).
std::optional<Dequantized> matchDequantized(Value value, int64_t axis, int64_t channels,
                                            unsigned width = 8) {
  auto dq = value.getDefiningOp<DequantizeOp>();
  if (!dq || quantizedWidth(dq.getInput().getType()) != width ||
      !dq.getType().getElementType().isF32())
    return std::nullopt;
  auto perChannel = [&](Value param) {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getNumElements() == 1)
      return true;
    if (axis < 0 || type.getNumElements() != channels)
      return false;
    // The parameter broadcasts to the operand: align its dims to the right.
    int64_t offset = dq.getType().getRank() - type.getRank();
    return axis - offset >= 0 && type.getDimSize(axis - offset) == channels;
  };
  Dequantized d;
  d.integers = dq.getInput();
  // One scale and zero point computed at run time: an activation of dynamic
  // quantization.
  auto single = [](Value v) {
    return !v || cast<RankedTensorType>(v.getType()).getNumElements() == 1;
  };
  if (axis < 0 && single(dq.getScale()) && single(dq.getZeroPoint()) &&
      (!constantValues(dq.getScale()) ||
       (dq.getZeroPoint() && !constantValues(dq.getZeroPoint())))) {
    d.scales = {1.0};
    d.runTimeScale = dq.getScale();
    d.runTimeZeroPoint = dq.getZeroPoint();
    return d;
  }
  std::optional<SmallVector<double>> scales = constantValues(dq.getScale());
  if (!scales || !perChannel(dq.getScale()))
    return std::nullopt;
  d.scales = std::move(*scales);
  if (Value zp = dq.getZeroPoint()) {
    std::optional<SmallVector<double>> zeroPoints = constantValues(zp);
    if (!zeroPoints || !perChannel(zp))
      return std::nullopt;
    if (llvm::any_of(*zeroPoints, [](double z) { return z != 0; }))
      d.zeroPoints = std::move(*zeroPoints);
  }
  return d;
}

/// The zero point operand of an integer contraction: none for 0, a scalar
/// when all agree, else a vector of `channels`.
Value zeroPointOperand(OpBuilder &b, Location loc, const Dequantized &d, int64_t channels) {
  if (d.runTimeZeroPoint)
    return d.runTimeZeroPoint;
  if (d.zeroPoints.empty())
    return Value();
  Type element = getElementTypeOrSelf(d.integers.getType());
  auto toInt = [](double v) { return static_cast<int64_t>(v); };
  if (llvm::all_equal(d.zeroPoints))
    return int8Constant(b, loc, {}, element, {toInt(d.zeroPoints.front())});
  SmallVector<int64_t> values = llvm::map_to_vector(d.zeroPoints, toInt);
  return int8Constant(b, loc, {channels}, element, values);
}

/// `lhsScale * rhsScale[c]` for each of `channels` (one value when both are
/// per tensor).
SmallVector<float> productScales(const Dequantized &lhs, const Dequantized &rhs,
                                 int64_t channels) {
  size_t n = rhs.scales.size() == 1 ? 1 : channels;
  SmallVector<float> out;
  for (size_t c = 0; c < n; ++c)
    out.push_back(static_cast<float>(lhs.scales.front() * rhs.scales[rhs.scales.size() == 1 ? 0 : c]));
  return out;
}

/// `z * sums`: the i32 constant of `shape` that takes the zero point z of
/// 8-bit activations off a contraction of their raw values by int8 weights,
/// sum (x - z) * w = sum x * w - z * sum w, with `sums` the weights' sums
/// along the reduction, computed here at compile time (a run-time sum costs
/// every workgroup a pass over the weights).
Value zeroPointCorrection(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, int64_t z,
                         ArrayRef<int64_t> sums) {
  auto type = RankedTensorType::get(shape, b.getI32Type());
  SmallVector<APInt> values;
  for (int64_t sum : sums)
    values.push_back(APInt(32, static_cast<uint64_t>(z * sum), /*isSigned=*/true));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, values));
}

/// The scale of the integer accumulator: the constant `scales` of `shape`
/// (sx * sw per channel), times the activation's run-time scale when it has
/// one (dynamic quantization; `scales` are then sw alone).
Value scaleProduct(OpBuilder &b, Location loc, const Dequantized &activation,
                   ArrayRef<int64_t> shape, ArrayRef<float> scales) {
  Value constant = f32Constant(b, loc, shape, scales);
  if (!activation.runTimeScale)
    return constant;
  Value scalar = ReshapeOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                   activation.runTimeScale);
  return MulOp::create(b, loc, RankedTensorType::get(shape, b.getF32Type()), scalar, constant);
}

/// conv(dequantize(x), dequantize(w), bias) with x per tensor and w per
/// tensor or per output channel -> float(conv_integer(x, w)) * sx * sw + bias.
struct FoldQuantizedConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    auto resultType = op.getType();
    if (!resultType.getElementType().isF32())
      return failure();
    int64_t channels = op.getFilter().getType().getDimSize(0);
    std::optional<Dequantized> input = matchDequantized(op.getInput(), -1, 1);
    std::optional<Dequantized> filter = matchDequantized(op.getFilter(), 0, channels);
    if (!input || !filter)
      return failure();
    Location loc = op.getLoc();
    Value inputZero = zeroPointOperand(rewriter, loc, *input, 1);
    Value filterZero = zeroPointOperand(rewriter, loc, *filter, channels);
    Value acc = ConvIntegerOp::create(rewriter, loc, input->integers, filter->integers, inputZero,
                                      filterZero, op.getStridesAttr(), op.getDilationsAttr(),
                                      op.getPadsAttr(), op.getGroupsAttr());
    Value real = CastOp::create(rewriter, loc, resultType, acc);
    SmallVector<int64_t> perChannel(resultType.getRank(), 1);
    SmallVector<float> scales = productScales(*input, *filter, channels);
    if (scales.size() > 1)
      perChannel[1] = channels;
    else
      perChannel.clear();
    real = MulOp::create(rewriter, loc, real,
                         scaleProduct(rewriter, loc, *input, perChannel, scales));
    if (Value bias = op.getBias()) {
      SmallVector<int64_t> biasShape(resultType.getRank(), 1);
      biasShape[1] = channels;
      Value shaped = ReshapeOp::create(
          rewriter, loc, RankedTensorType::get(biasShape, resultType.getElementType()), bias);
      real = AddOp::create(rewriter, loc, real, shaped);
    }
    rewriter.replaceOp(op, real);
    return success();
  }
};

/// The 4-bit operands of a product as 8-bit ones holding the same values
/// (kFourBitAttr): bytes are what the buffers hold either way, the cpu's
/// 8-bit kernels read them, and a signed activation moves to unsigned,
/// a + 8 with its zero point + 8 (0..15 as uint8: vpdpbusd multiplies uint8
/// by int8; the zero point comes off as a constant, kiln-fold-quantized-ops'
/// next pattern). Constant weights are cast at compile time. False when the
/// activation's zero point is known only at run time (not a 4-bit form).
bool widenFourBit(PatternRewriter &rewriter, Location loc, Dequantized &lhs, Dequantized &rhs) {
  if (lhs.runTimeZeroPoint || rhs.runTimeZeroPoint)
    return false;
  auto to8 = [&](Value v, bool isUnsigned) {
    auto type = cast<RankedTensorType>(v.getType());
    auto eight = IntegerType::get(rewriter.getContext(), 8,
                                  isUnsigned ? IntegerType::Unsigned : IntegerType::Signless);
    return rewriter.createOrFold<CastOp>(loc, type.clone(eight), v);
  };
  Type lhsElem = getElementTypeOrSelf(lhs.integers.getType());
  if (lhsElem.isUnsignedInteger()) {
    lhs.integers = to8(lhs.integers, true);
  } else {
    auto type = cast<RankedTensorType>(lhs.integers.getType());
    Value wide = to8(lhs.integers, false);
    Value eight = int8Constant(rewriter, loc, {}, rewriter.getIntegerType(8), {8});
    Value shifted = AddOp::create(rewriter, loc, type.clone(rewriter.getIntegerType(8)), wide, eight);
    lhs.integers = rewriter.createOrFold<CastOp>(
        loc, type.clone(IntegerType::get(rewriter.getContext(), 8, IntegerType::Unsigned)),
        shifted);
    if (lhs.zeroPoints.empty())
      lhs.zeroPoints = {0.0};
    for (double &z : lhs.zeroPoints)
      z += 8;
  }
  // A constant weight becomes an 8-bit constant here (kiln.cast folds
  // small constants only).
  auto rhsType = cast<RankedTensorType>(rhs.integers.getType());
  bool rhsUnsigned = rhsType.getElementType().isUnsignedInteger();
  if (std::optional<SmallVector<double>> values = constantValues(rhs.integers)) {
    auto eight = IntegerType::get(rewriter.getContext(), 8,
                                  rhsUnsigned ? IntegerType::Unsigned : IntegerType::Signless);
    rhs.integers = int8Constant(rewriter, loc, rhsType.getShape(), eight,
                                llvm::map_to_vector(*values, [](double v) { return int64_t(v); }));
  } else {
    rhs.integers = to8(rhs.integers, rhsUnsigned);
  }
  return true;
}

/// matmul(dequantize(a), dequantize(b)) with a per tensor and b [K, N] per
/// tensor or per column -> float(matmul_integer(a, b)) * sa * sb; a and b
/// both 8-bit, or both 4-bit (QDQ int4 activations and weights, as bytes
/// marked kFourBitAttr: widenFourBit). Before kiln.matmul_int4's fold of a
/// 4-bit weight alone (benefit 2), which would leave the activations in
/// float.
struct FoldQuantizedMatmul : OpRewritePattern<MatmulOp> {
  FoldQuantizedMatmul(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto resultType = op.getType();
    auto rhsType = op.getRhs().getType();
    if (!resultType.getElementType().isF32() || rhsType.getRank() != 2)
      return failure();
    int64_t columns = rhsType.getDimSize(1);
    std::optional<Dequantized> lhs, rhs;
    bool fourBit = false;
    for (unsigned width : {8u, 4u}) {
      lhs = matchDequantized(op.getLhs(), -1, 1, width);
      rhs = matchDequantized(op.getRhs(), 1, columns, width);
      fourBit = width == 4;
      if (lhs && rhs)
        break;
    }
    if (!lhs || !rhs)
      return failure();
    Location loc = op.getLoc();
    if (fourBit && !widenFourBit(rewriter, loc, *lhs, *rhs))
      return failure();
    Value lhsZero = zeroPointOperand(rewriter, loc, *lhs, 1);
    Value rhsZero = zeroPointOperand(rewriter, loc, *rhs, columns);
    auto integer = MatmulIntegerOp::create(rewriter, loc, lhs->integers, rhs->integers, lhsZero,
                                           rhsZero);
    if (fourBit)
      integer->setAttr(kFourBitAttr, rewriter.getUnitAttr());
    Value acc = integer;
    Value real = CastOp::create(rewriter, loc, resultType, acc);
    SmallVector<float> scales = productScales(*lhs, *rhs, columns);
    SmallVector<int64_t> shape;
    if (scales.size() > 1)
      shape.push_back(columns);
    real = MulOp::create(rewriter, loc, real, scaleProduct(rewriter, loc, *lhs, shape, scales));
    rewriter.replaceOp(op, real);
    return success();
  }
};

/// The sums of constant integer weights per output channel: `weights` in
/// row-major order holds `channels` contiguous rows (a filter [F, ...]), or
/// with `perColumn` is a [K, channels] matrix summed down its columns.
SmallVector<int64_t> weightSums(ArrayRef<double> weights, int64_t channels, bool perColumn) {
  SmallVector<int64_t> sums(channels, 0);
  int64_t rowLength = static_cast<int64_t>(weights.size()) / channels;
  for (auto [i, w] : llvm::enumerate(weights))
    sums[perColumn ? i % channels : i / rowLength] += static_cast<int64_t>(w);
  return sums;
}

/// The zero point of an integer contraction operand when it is one value
/// (0 for none); nullopt for a per-channel or unknown one.
std::optional<int64_t> uniformZeroPoint(Value zeroPoint) {
  if (!zeroPoint)
    return 0;
  std::optional<SmallVector<double>> values = constantValues(zeroPoint);
  if (!values || values->empty() || !llvm::all_equal(*values))
    return std::nullopt;
  return static_cast<int64_t>(values->front());
}

/// Whether `zeroPoint` is one value known only at run time
/// (DynamicQuantizeLinear's, as ONNX Runtime's dynamic quantizer emits it).
bool isRunTimeZeroPoint(Value zeroPoint) {
  return zeroPoint && !uniformZeroPoint(zeroPoint) &&
         cast<RankedTensorType>(zeroPoint.getType()).getNumElements() == 1;
}

/// The run-time zero point `zeroPoint` as a scalar tensor of its own type.
Value scalarZeroPoint(OpBuilder &b, Location loc, Value zeroPoint) {
  return ReshapeOp::create(
      b, loc, RankedTensorType::get({}, getElementTypeOrSelf(zeroPoint.getType())), zeroPoint);
}

/// `i32(z) * sums` of `shape` for a zero point z known only at run time: the
/// sums are still a compile-time constant, the product one multiply per
/// channel.
Value runTimeZeroPointCorrection(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                                 Value zeroPoint, ArrayRef<int64_t> sums) {
  Type i32 = b.getI32Type();
  Value wide = CastOp::create(b, loc, RankedTensorType::get({}, i32),
                              scalarZeroPoint(b, loc, zeroPoint));
  return MulOp::create(b, loc, RankedTensorType::get(shape, i32), wide,
                       zeroPointCorrection(b, loc, shape, 1, sums));
}

/// Constant int8 weights without a zero point: the activations' zero point z
/// of a conv_integer is applied at compile time. The input is padded with z
/// (what the convolution's zero padding means for x - z), convolved raw
/// without zero points, and z * (the filter's sums) subtracted as an i32
/// constant. A zero point known only at run time (dynamic quantization) is
/// applied the same way: the border is padded with 0 and z added to it
/// through a constant 0/1 mask of the padded positions (x is 0 there, z
/// nowhere else: no byte overflows), and i32(z) * (the filter's sums)
/// subtracted.
struct FoldConvIntegerZeroPoint : OpRewritePattern<ConvIntegerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvIntegerOp op, PatternRewriter &rewriter) const override {
    Value zeroPoint = op.getInputZeroPoint();
    std::optional<int64_t> z = uniformZeroPoint(zeroPoint);
    std::optional<int64_t> zw = uniformZeroPoint(op.getFilterZeroPoint());
    bool runTime = isRunTimeZeroPoint(zeroPoint);
    if (!zeroPoint || (!z && !runTime) || zw != 0 || op.getGroups() != 1 ||
        getElementTypeOrSelf(op.getFilter().getType()).isUnsignedInteger())
      return failure();
    std::optional<SmallVector<double>> weights = constantValues(op.getFilter());
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    if (!weights || !inType.hasStaticShape())
      return failure();
    Location loc = op.getLoc();
    int64_t rank = inType.getRank(), spatial = rank - 2;
    int64_t channels = cast<RankedTensorType>(op.getFilter().getType()).getDimSize(0);
    ArrayRef<int64_t> pads = op.getPads();
    SmallVector<int64_t> full(2 * rank, 0), shape(inType.getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      full[2 + i] = pads[i];
      full[rank + 2 + i] = pads[spatial + i];
      shape[2 + i] += pads[i] + pads[spatial + i];
    }
    Value x = op.getInput();
    Type element = inType.getElementType();
    auto paddedType = RankedTensorType::get(shape, element);
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      x = PadOp::create(rewriter, loc, paddedType, x, rewriter.getDenseI64ArrayAttr(full),
                        rewriter.getStringAttr("constant"),
                        rewriter.getF64FloatAttr(runTime ? 0.0 : static_cast<double>(*z)));
      if (runTime) {
        // [1, 1, spatial...]: 1 on the border the padding added.
        SmallVector<int64_t> maskShape(shape);
        maskShape[0] = maskShape[1] = 1;
        SmallVector<int64_t> mask;
        int64_t size = 1;
        for (int64_t d : maskShape)
          size *= d;
        for (int64_t flat = 0; flat < size; ++flat) {
          bool border = false;
          for (int64_t i = rank - 1, rest = flat; i >= 2; --i) {
            int64_t at = rest % maskShape[i];
            rest /= maskShape[i];
            border |= at < full[i] || at >= maskShape[i] - full[rank + i];
          }
          mask.push_back(border);
        }
        Value border = MulOp::create(
            rewriter, loc, RankedTensorType::get(maskShape, element),
            int8Constant(rewriter, loc, maskShape, element, mask),
            scalarZeroPoint(rewriter, loc, zeroPoint));
        x = AddOp::create(rewriter, loc, paddedType, x, border);
      }
    }
    SmallVector<int64_t> noPads(2 * spatial, 0);
    Value acc = ConvIntegerOp::create(rewriter, loc, x, op.getFilter(), Value(), Value(),
                                      op.getStridesAttr(), op.getDilationsAttr(),
                                      rewriter.getDenseI64ArrayAttr(noPads), op.getGroupsAttr());
    SmallVector<int64_t> perChannel(rank, 1);
    perChannel[1] = channels;
    if (runTime || *z != 0) {
      SmallVector<int64_t> sums = weightSums(*weights, channels, /*perColumn=*/false);
      Value correction =
          runTime ? runTimeZeroPointCorrection(rewriter, loc, perChannel, zeroPoint, sums)
                  : zeroPointCorrection(rewriter, loc, perChannel, *z, sums);
      acc = SubOp::create(rewriter, loc, acc.getType(), acc, correction);
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// The same for matmul_integer with constant [K, N] int8 weights: z * (the
/// column sums) comes off as a constant. A zero point known only at run time
/// (one value: DynamicQuantizeLinear's, as ONNX Runtime's dynamic quantizer
/// emits it) comes off as float-free `i32(z) * sums`, the sums still a
/// compile-time constant.
struct FoldMatmulIntegerZeroPoint : OpRewritePattern<MatmulIntegerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulIntegerOp op, PatternRewriter &rewriter) const override {
    Value zeroPoint = op.getLhsZeroPoint();
    std::optional<int64_t> z = uniformZeroPoint(zeroPoint);
    std::optional<int64_t> zw = uniformZeroPoint(op.getRhsZeroPoint());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    bool runTime = isRunTimeZeroPoint(zeroPoint);
    if (!zeroPoint || (!z && !runTime) || zw != 0 || rhsType.getRank() != 2 ||
        rhsType.getElementType().isUnsignedInteger())
      return failure();
    std::optional<SmallVector<double>> weights = constantValues(op.getRhs());
    if (!weights)
      return failure();
    Location loc = op.getLoc();
    int64_t columns = rhsType.getDimSize(1);
    SmallVector<int64_t> sums = weightSums(*weights, columns, /*perColumn=*/true);
    auto integer = MatmulIntegerOp::create(rewriter, loc, op.getLhs(), op.getRhs(), Value(), Value());
    integer->setDiscardableAttrs(op->getDiscardableAttrDictionary()); // kFourBitAttr
    Value acc = integer;
    if (runTime) {
      acc = SubOp::create(rewriter, loc, acc.getType(), acc,
                          runTimeZeroPointCorrection(rewriter, loc, {columns}, zeroPoint, sums));
    } else if (*z != 0) {
      acc = SubOp::create(rewriter, loc, acc,
                          zeroPointCorrection(rewriter, loc, {columns}, *z, sums));
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// transpose(dequantize(q, s, z)) -> dequantize(transpose(q), transpose(s),
/// transpose(z)) when the parameters have the operand's rank (Gemm's
/// transposed weights of a QDQ model): the matmul then sees a dequantized
/// operand, and kiln-fold-weight-layouts transposes the integer constant.
struct SinkTransposeIntoDequantize : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto dq = op.getInput().getDefiningOp<DequantizeOp>();
    if (!dq || !dq->hasOneUse())
      return failure();
    int64_t rank = dq.getType().getRank();
    auto sameRank = [&](Value v) {
      return !v || cast<RankedTensorType>(v.getType()).getRank() == rank;
    };
    auto oneValue = [](Value v) {
      return !v || cast<RankedTensorType>(v.getType()).getNumElements() == 1;
    };
    if (!(sameRank(dq.getScale()) || oneValue(dq.getScale())) ||
        !(sameRank(dq.getZeroPoint()) || oneValue(dq.getZeroPoint())))
      return failure();
    Location loc = op.getLoc();
    auto permute = [&](Value v) -> Value {
      if (!v || cast<RankedTensorType>(v.getType()).getRank() != rank)
        return v;
      return TransposeOp::create(rewriter, loc, v, op.getPermutationAttr());
    };
    Value q = permute(dq.getInput());
    rewriter.replaceOpWithNewOp<DequantizeOp>(op, op.getType(), q, permute(dq.getScale()),
                                              permute(dq.getZeroPoint()));
    return success();
  }
};

/// `kiln.matmul(x, W)` with W a `[K, N]` dequantization of constant 4-bit
/// integers (ONNX's int4 or uint4 weights, QDQ): per tensor, per column, or
/// in blocks of B rows along K (blocked DequantizeLinear imports as a
/// dequantization of `[K / B, B, N]` reshaped to `[K, N]`) becomes
/// `kiln.matmul_int4`, the codes shifted to 0..15 (int4 + 8) and packed.
struct FoldInt4WeightMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto rhsType = op.getRhs().getType();
    if (rhsType.getRank() != 2 || !rhsType.hasStaticShape() ||
        !op.getLhs().getType().getElementType().isF32())
      return failure();
    Value weight = op.getRhs();
    if (auto reshape = weight.getDefiningOp<ReshapeOp>())
      weight = reshape.getInput();
    auto dq = weight.getDefiningOp<DequantizeOp>();
    if (!dq || !dq.getType().getElementType().isF32())
      return failure();
    auto integer = dyn_cast<IntegerType>(dq.getInput().getType().getElementType());
    if (!integer || integer.getWidth() != 4)
      return failure();
    int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
    // The block: B rows of K per parameter row ([K / B, B, N] operands, or
    // [K, N] with parameters constant along K: B = K).
    auto dqShape = dq.getType().getShape();
    int64_t block;
    if (dqShape.size() == 3 && dqShape[0] * dqShape[1] == k && dqShape[2] == n)
      block = dqShape[1];
    else if (dqShape == rhsType.getShape())
      block = k;
    else
      return failure();
    if (block % 2 != 0)
      return failure();
    int64_t groups = k / block;
    // Parameters: each broadcasts to the operand; read them at [g, n].
    auto param = [&](Value v, double missing) -> std::optional<SmallVector<double>> {
      SmallVector<double> out(groups * n, missing);
      if (!v)
        return out;
      std::optional<SmallVector<double>> values = constantValues(v);
      auto type = cast<RankedTensorType>(v.getType());
      if (!values)
        return std::nullopt;
      // Right-aligned against the operand's shape (rank 3: [G, 1, N]; rank
      // 2: [1, N]).
      SmallVector<int64_t> shape(dqShape.size() - type.getRank(), 1);
      llvm::append_range(shape, type.getShape());
      bool blocked = dqShape.size() == 3;
      int64_t gDim = blocked ? shape[0] : 1, nDim = shape.back();
      if ((gDim != 1 && gDim != groups) || (nDim != 1 && nDim != n) ||
          (blocked && shape[1] != 1) || (!blocked && shape[0] != 1))
        return std::nullopt;
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t c = 0; c < n; ++c)
          out[g * n + c] = (*values)[(gDim == 1 ? 0 : g) * nDim + (nDim == 1 ? 0 : c)];
      return out;
    };
    std::optional<SmallVector<double>> scales = param(dq.getScale(), 1);
    std::optional<SmallVector<double>> zeros = param(dq.getZeroPoint(), 0);
    std::optional<SmallVector<double>> codes = constantValues(dq.getInput());
    if (!scales || !zeros || !codes || int64_t(codes->size()) != k * n)
      return failure();
    // Signed int4 -8..7 -> codes 0..15 with the zero point moved by 8.
    double shift = integer.isUnsigned() ? 0 : 8;
    std::vector<char> bytes = packInt4(k, n, block, [&](int64_t r, int64_t c) {
      return static_cast<uint8_t>((*codes)[r * n + c] + shift);
    });
    SmallVector<float> scale, zero;
    for (int64_t i = 0; i < groups * n; ++i) {
      scale.push_back(float((*scales)[i]));
      zero.push_back(float((*zeros)[i] + shift));
    }
    Location loc = dq.getLoc();
    auto byteType = RankedTensorType::get({groups, block / 2, n}, rewriter.getIntegerType(8));
    Value packed = bytesConstant(rewriter, loc, byteType, bytes, "int4_weight");
    Value s = f32Constant(rewriter, loc, {groups, n}, scale);
    Value z = f32Constant(rewriter, loc, {groups, n}, zero);
    rewriter.replaceOpWithNewOp<MatmulInt4Op>(op, op.getLhs(), packed, s, z);
    return success();
  }
};

struct KilnFoldQuantizedOpsPass
    : kiln::impl::KilnFoldQuantizedOpsBase<KilnFoldQuantizedOpsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldQuantizedConv, FoldQuantizedMatmul, FoldConvIntegerZeroPoint,
                 FoldMatmulIntegerZeroPoint, SinkTransposeIntoDequantize, FoldInt4WeightMatmul>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// kiln-quantize-int4-activations
//===----------------------------------------------------------------------===//

struct KilnQuantizeInt4ActivationsPass
    : kiln::impl::KilnQuantizeInt4ActivationsBase<KilnQuantizeInt4ActivationsPass> {
  void runOnOperation() override {
    getOperation().walk([&](MatmulInt4Op op) {
      if (!op.getLhs().getType().getElementType().isF32())
        return;
      // The kernel subtracts zero * (the sum of a group's int8 activations)
      // from the group's i32 sum: exact for whole zero points of 4 bits.
      std::optional<std::vector<float>> zeros;
      if (auto cst = op.getZeroPoint().getDefiningOp<ConstantOp>())
        zeros = f32ConstantValues(cst);
      if (!zeros || !llvm::all_of(*zeros, [](float z) {
            return z >= 0.0f && z <= 15.0f && z == std::nearbyint(z);
          }))
        return;
      op.setInt8Activations(true);
    });
  }
};

//===----------------------------------------------------------------------===//
// kiln-expand-quantization
//===----------------------------------------------------------------------===//

/// The smallest and largest values of integer type `type`.
std::pair<double, double> integerRange(Type type) {
  unsigned bits = type.getIntOrFloatBitWidth();
  if (type.isUnsignedInteger())
    return {0, std::ldexp(1.0, bits) - 1};
  return {-std::ldexp(1.0, bits - 1), std::ldexp(1.0, bits - 1) - 1};
}

Value castTo(OpBuilder &b, Location loc, Value value, Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == element)
    return value;
  return CastOp::create(b, loc, type.clone(element), value);
}

struct KilnExpandQuantizationPass
    : kiln::impl::KilnExpandQuantizationBase<KilnExpandQuantizationPass> {
  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto q = dyn_cast<QuantizeOp>(op)) {
        // saturate(round_half_even(x / scale) + zero_point), in x's type.
        Type real = q.getInput().getType().getElementType();
        Type integer = q.getType().getElementType();
        Value v = RoundOp::create(b, loc, DivOp::create(b, loc, q.getInput(), q.getScale()));
        if (Value zp = q.getZeroPoint())
          v = AddOp::create(b, loc, v, castTo(b, loc, zp, real));
        auto [lowest, highest] = integerRange(integer);
        v = ClipOp::create(b, loc, v, b.getF64FloatAttr(lowest), b.getF64FloatAttr(highest));
        q.replaceAllUsesWith(castTo(b, loc, v, integer));
        q.erase();
      } else if (auto dq = dyn_cast<DequantizeOp>(op)) {
        // (x - zero_point) * scale, in the scale's type.
        Type real = dq.getType().getElementType();
        Value v = castTo(b, loc, dq.getInput(), real);
        if (Value zp = dq.getZeroPoint())
          v = SubOp::create(b, loc, v, castTo(b, loc, zp, real));
        dq.replaceAllUsesWith(MulOp::create(b, loc, v, dq.getScale()).getResult());
        dq.erase();
      }
    });
  }
};

} // namespace
