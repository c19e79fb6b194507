//===- Matmul.cpp - ONNX MatMul, Gemm and MatMulInteger -> kiln -----------===//
//
// MatMul follows numpy: 1-D operands are promoted to matrices and the added
// dimension is dropped again. Gemm becomes transposes, kiln.matmul, and the
// alpha/beta-scaled bias add. MatMulInteger (the same promotion) becomes
// kiln.matmul_integer, its zero points in the shapes that op takes;
// QLinearMatMul is that product requantized to its output's scale. Einsum
// becomes diagonals (strided slices), sums and one kiln.matmul per pair of
// operands.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Checks operand element types and contraction sizes with a message that
/// names the node, then emits kiln.matmul.
/// The shape rules of a (batched) matrix product of l by r: the contraction
/// dimensions agree and the batch dimensions broadcast.
static LogicalResult checkProductShapes(NodeContext &node, RankedTensorType l,
                                        RankedTensorType r) {
  if (l.getShape().back() != r.getShape()[r.getRank() - 2]) {
    node.emitError() << "cannot multiply " << l << " by " << r
                     << ": the contraction dimensions differ";
    return failure();
  }
  if (failed(broadcastShapes(l.getShape().drop_back(2),
                             r.getShape().drop_back(2)))) {
    node.emitError() << "batch dimensions of " << l << " and " << r
                     << " do not broadcast";
    return failure();
  }
  return success();
}

static FailureOr<Value> matmul(NodeContext &node, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getElementType() != r.getElementType()) {
    node.emitError() << "operand element types differ: " << l << " and " << r;
    return failure();
  }
  if (failed(checkProductShapes(node, l, r)))
    return failure();
  return node.create<MatmulOp>(lhs, rhs);
}

/// Numpy's matmul promotion of 1-D operands, around `multiply` (which gets
/// and returns operands of rank 2 or more): a vector `lhs` becomes a `[1, K]`
/// matrix, a vector `rhs` a `[K, 1]` one, and the added dimensions are
/// dropped from the product again.
static LogicalResult
convertVectorPromoted(NodeContext &node,
                      function_ref<FailureOr<Value>(Value, Value)> multiply,
                      unsigned lhsInput = 0, unsigned rhsInput = 1) {
  Value lhs = node.input(lhsInput), rhs = node.input(rhsInput);
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  if (l.getRank() == 0 || r.getRank() == 0) {
    node.emitError() << "operands must have rank 1 or more";
    return failure();
  }
  bool vectorLhs = l.getRank() == 1, vectorRhs = r.getRank() == 1;
  if (vectorLhs)
    lhs = node.reshape(lhs, {1, l.getShape()[0]});
  if (vectorRhs)
    rhs = node.reshape(rhs, {r.getShape()[0], 1});
  FailureOr<Value> product = multiply(lhs, rhs);
  if (failed(product))
    return failure();
  Value result = *product;
  if (vectorLhs || vectorRhs) {
    auto shape = SmallVector<int64_t>(
        cast<RankedTensorType>(result.getType()).getShape());
    if (vectorRhs)
      shape.pop_back();
    if (vectorLhs)
      shape.erase(shape.end() - (vectorRhs ? 1 : 2));
    result = node.reshape(result, shape);
  }
  node.setOutput(0, result);
  return success();
}

static LogicalResult convertMatMul(NodeContext &node) {
  return convertVectorPromoted(
      node, [&](Value lhs, Value rhs) { return matmul(node, lhs, rhs); });
}

/// The zero point of MatMulInteger's (or QLinearMatMul's) operand `index`
/// (0: A, 1: B), node input `input`, in the form
/// kiln.matmul_integer takes: a per-row vector `[M]` of A becomes `[M, 1]`, a
/// one-element vector a scalar; null when absent. `operand` is the (promoted)
/// operand, for the error message.
static FailureOr<Value> matmulZeroPoint(NodeContext &node, unsigned index,
                                        Value operand, unsigned input) {
  if (!node.hasInput(input))
    return Value();
  Value zp = node.input(input);
  auto type = cast<RankedTensorType>(zp.getType());
  auto operandType = cast<RankedTensorType>(operand.getType());
  StringRef name = index == 0 ? "a_zero_point" : "b_zero_point";
  if (type.getElementType() != operandType.getElementType()) {
    node.emitError() << name << " element type " << type.getElementType()
                     << " differs from " << (index == 0 ? "A" : "B")
                     << " element type " << operandType.getElementType();
    return failure();
  }
  if (type.getRank() == 1 && type.getShape()[0] == 1)
    return node.reshape(zp, {});
  if (index == 0 && type.getRank() == 1)
    zp = node.reshape(zp, {type.getShape()[0], 1});
  // Broadcasts to the operand with size 1 along K (see the op's verifier).
  ArrayRef<int64_t> shape = cast<RankedTensorType>(zp.getType()).getShape(),
                    full = operandType.getShape();
  int64_t offset = (int64_t)full.size() - (int64_t)shape.size();
  int64_t k = index == 0 ? full.size() - 1 : full.size() - 2;
  auto broadcast = broadcastShapes(shape, full);
  if (offset < 0 || failed(broadcast) ||
      ArrayRef<int64_t>(*broadcast) != full ||
      (k >= offset && shape[k - offset] != 1)) {
    node.emitError() << name << " of type " << type
                     << " is neither a scalar nor "
                     << (index == 0 ? "one value per row"
                                    : "one value per column")
                     << " of " << (index == 0 ? "A " : "B ") << operandType;
    return failure();
  }
  return zp;
}

/// kiln.matmul_integer of the (promoted) 8-bit operands with the zero
/// points of node inputs `lhsZp` and `rhsZp` (when present): an int32
/// product, or failure after a diagnostic.
static FailureOr<Value> integerProduct(NodeContext &node, Value lhs, Value rhs,
                                       unsigned lhsZp, unsigned rhsZp) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  for (RankedTensorType t : {l, r})
    if (!t.getElementType().isInteger(8)) {
      node.emitError() << "operands must be int8 or uint8 tensors, got " << l
                       << " and " << r;
      return failure();
    }
  if (failed(checkProductShapes(node, l, r)))
    return failure();
  FailureOr<Value> lhsZero = matmulZeroPoint(node, 0, lhs, lhsZp);
  FailureOr<Value> rhsZero = matmulZeroPoint(node, 1, rhs, rhsZp);
  if (failed(lhsZero) || failed(rhsZero))
    return failure();
  return node.create<MatmulIntegerOp>(lhs, rhs, *lhsZero, *rhsZero);
}

/// MatMulInteger: 8-bit operands (each int8 or uint8) and optional zero
/// points, an int32 product (kiln.matmul_integer).
static LogicalResult convertMatMulInteger(NodeContext &node) {
  return convertVectorPromoted(node, [&](Value lhs, Value rhs) {
    return integerProduct(node, lhs, rhs, 2, 3);
  });
}

/// A QLinearMatMul scale (input `input`): a scalar, or per row of A ([M]
/// becomes [M, 1]) or per column of B.
static Value matmulScale(NodeContext &node, unsigned input, bool perRow) {
  Value scale = node.input(input);
  auto type = cast<RankedTensorType>(scale.getType());
  if (type.getNumElements() == 1)
    return node.reshape(scale, {});
  if (perRow && type.getRank() == 1)
    return node.reshape(scale, {type.getShape()[0], 1});
  return scale;
}

/// QLinearMatMul: the int32 product of the zero-point-corrected 8-bit
/// operands (kiln.matmul_integer), scaled by a_scale * b_scale / y_scale
/// and quantized to y's type with y_zero_point.
static LogicalResult convertQLinearMatMul(NodeContext &node) {
  if (!isQuantizedOutputZeroPoint(node, 7))
    return failure();
  return convertVectorPromoted(
      node,
      [&](Value lhs, Value rhs) -> FailureOr<Value> {
        FailureOr<Value> integer = integerProduct(node, lhs, rhs, 2, 5);
        if (failed(integer))
          return failure();
        Value product = *integer;
        Type f32 = node.builder().getF32Type();
        Value inputScale = node.create<MulOp>(
            node.cast(matmulScale(node, 1, /*perRow=*/true), f32),
            node.cast(matmulScale(node, 4, /*perRow=*/false), f32));
        Value scale = node.create<DivOp>(
            node.cast(matmulScale(node, 6, false), f32), inputScale);
        Value zeroPoint = node.reshape(node.input(7), {});
        return quantizeLinear(node, node.cast(product, f32), scale, zeroPoint,
                              node.inputType(7).getElementType());
      },
      /*lhsInput=*/0, /*rhsInput=*/3);
}

static LogicalResult convertGemm(NodeContext &node) {
  Value a = node.input(0), b = node.input(1);
  if (cast<RankedTensorType>(a.getType()).getRank() != 2 ||
      cast<RankedTensorType>(b.getType()).getRank() != 2) {
    node.emitError() << "A and B must be matrices, got " << a.getType()
                     << " and " << b.getType();
    return failure();
  }
  if (node.intAttr("transA", 0))
    a = node.create<TransposeOp>(a, ArrayRef<int64_t>{1, 0});
  if (node.intAttr("transB", 0))
    b = node.create<TransposeOp>(b, ArrayRef<int64_t>{1, 0});
  FailureOr<Value> product = matmul(node, a, b);
  if (failed(product))
    return failure();
  Value y = *product;
  Type element = getElementTypeOrSelf(y.getType());
  double alpha = node.floatAttr("alpha", 1.0), beta = node.floatAttr("beta", 1.0);
  if (alpha != 1.0)
    y = node.create<MulOp>(y, node.scalar(element, alpha));
  if (node.hasInput(2) && beta != 0.0) {
    Value c = node.input(2);
    if (failed(broadcastShapes(cast<RankedTensorType>(c.getType()).getShape(),
                               cast<RankedTensorType>(y.getType()).getShape()))) {
      node.emitError() << "C of type " << c.getType()
                       << " does not broadcast to the product " << y.getType();
      return failure();
    }
    if (beta != 1.0)
      c = node.create<MulOp>(c, node.scalar(element, beta));
    y = node.create<AddOp>(y, c);
  }
  node.setOutput(0, y);
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

namespace {
/// An Einsum operand with one label per dimension: letters are their
/// character codes; the dimensions an ellipsis stands for get labels from
/// kEllipsisLabel on, aligned to the right across operands (they
/// broadcast).
struct Labeled {
  Value value;
  SmallVector<int> labels;
};
constexpr int kEllipsisLabel = 256;
} // namespace

/// The labels of one term of an Einsum equation for an operand of `rank`
/// dimensions (`rank` < 0 for the output, whose ellipsis stands for all
/// `ellipsisRank` broadcast dimensions). Failure after a diagnostic.
static FailureOr<SmallVector<int>> parseTerm(NodeContext &node, StringRef term,
                                             int64_t rank,
                                             int64_t ellipsisRank) {
  SmallVector<int> labels;
  bool sawEllipsis = false;
  int64_t letters = llvm::count_if(term, llvm::isAlpha);
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (llvm::isAlpha(c)) {
      labels.push_back(c);
      continue;
    }
    if (term.substr(i).starts_with("...") && !sawEllipsis) {
      sawEllipsis = true;
      i += 2;
      int64_t count = rank < 0 ? ellipsisRank : rank - letters;
      if (count < 0)
        break;
      for (int64_t j = 0; j < count; ++j)
        labels.push_back(kEllipsisLabel + ellipsisRank - count + j);
      continue;
    }
    node.emitError() << "bad character '" << c << "' in the equation term '"
                     << term << "'";
    return failure();
  }
  if (rank >= 0 && (int64_t)labels.size() != rank) {
    node.emitError() << "the equation term '" << term << "' has "
                     << labels.size() << " labels for an input of rank "
                     << rank;
    return failure();
  }
  return labels;
}

static Value transposeTo(NodeContext &node, Labeled &x, ArrayRef<int> order) {
  SmallVector<int64_t> perm;
  for (int label : order)
    perm.push_back(llvm::find(x.labels, label) - x.labels.begin());
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    x.value = node.create<TransposeOp>(x.value, ArrayRef<int64_t>(perm));
  x.labels.assign(order.begin(), order.end());
  return x.value;
}

/// Sums `x` over the labels `keep` does not hold.
static void sumAllBut(NodeContext &node, Labeled &x,
                      llvm::function_ref<bool(int)> keep) {
  SmallVector<int64_t> axes;
  SmallVector<int> kept;
  for (auto [i, label] : llvm::enumerate(x.labels))
    if (keep(label))
      kept.push_back(label);
    else
      axes.push_back(i);
  if (axes.empty())
    return;
  OpBuilder &b = node.builder();
  x.value = node.create<ReduceSumOp>(x.value, b.getDenseI64ArrayAttr(axes),
                                     b.getBoolAttr(false));
  x.labels = kept;
}

/// Replaces each label repeated within `x` by its diagonal: the two
/// dimensions moved last, merged, and sliced with a step of n + 1.
static LogicalResult takeDiagonals(NodeContext &node, Labeled &x) {
  for (;;) {
    int repeated = -1;
    for (int label : x.labels)
      if (llvm::count(x.labels, label) > 1) {
        repeated = label;
        break;
      }
    if (repeated < 0)
      return success();
    auto shape = cast<RankedTensorType>(x.value.getType()).getShape();
    size_t first = llvm::find(x.labels, repeated) - x.labels.begin();
    size_t second = std::find(x.labels.begin() + first + 1, x.labels.end(),
                              repeated) - x.labels.begin();
    int64_t n = shape[first];
    if (shape[second] != n) {
      node.emitError() << "label '" << (char)repeated
                       << "' stands for dimensions of sizes " << n << " and "
                       << shape[second];
      return failure();
    }
    SmallVector<int> rest;
    SmallVector<int64_t> perm;
    for (auto [i, label] : llvm::enumerate(x.labels))
      if (i != first && i != second) {
        rest.push_back(label);
        perm.push_back(i);
      }
    perm.append({(int64_t)first, (int64_t)second});
    x.value = node.create<TransposeOp>(x.value, ArrayRef<int64_t>(perm));
    SmallVector<int64_t> merged;
    for (int64_t i : ArrayRef<int64_t>(perm).drop_back(2))
      merged.push_back(shape[i]);
    merged.push_back(n * n);
    Value flat = node.reshape(x.value, merged);
    SmallVector<int64_t> starts(merged.size(), 0), ends(merged), steps(merged.size(), 1);
    steps.back() = n + 1;
    x.value = node.create<SliceOp>(flat, starts, ends, steps);
    rest.push_back(repeated);
    x.labels = rest;
  }
}

/// The product of `a` and `b` summed over their common labels that `keep`
/// does not hold, as one kiln.matmul: [batch, freeA, contracted] times
/// [batch, contracted, freeB], the batch dimensions broadcasting (a
/// broadcast kiln.mul when nothing is summed).
static Labeled contract(NodeContext &node, Labeled a, Labeled b,
                        llvm::function_ref<bool(int)> keep) {
  auto in = [](const Labeled &x, int label) {
    return llvm::is_contained(x.labels, label);
  };
  sumAllBut(node, a, [&](int l) { return keep(l) || in(b, l); });
  sumAllBut(node, b, [&](int l) { return keep(l) || in(a, l); });
  SmallVector<int> batch, freeA, freeB, contracted;
  for (int l : a.labels)
    (in(b, l) ? (keep(l) ? batch : contracted) : freeA).push_back(l);
  for (int l : b.labels)
    if (!in(a, l))
      freeB.push_back(l);
  auto sizes = [&](Labeled &x, ArrayRef<int> labels) {
    auto shape = cast<RankedTensorType>(x.value.getType()).getShape();
    SmallVector<int64_t> result;
    for (int l : labels)
      result.push_back(shape[llvm::find(x.labels, l) - x.labels.begin()]);
    return result;
  };
  SmallVector<int64_t> batchA = sizes(a, batch), batchB = sizes(b, batch);
  SmallVector<int64_t> freeASizes = sizes(a, freeA), freeBSizes = sizes(b, freeB);
  Labeled result{Value(), batch};
  result.labels.append(freeA.begin(), freeA.end());
  result.labels.append(freeB.begin(), freeB.end());
  if (contracted.empty()) {
    // Nothing to sum: a broadcast product [batch, freeA, 1..] * [batch, 1.., freeB].
    SmallVector<int> orderA(batch), orderB(batch);
    orderA.append(freeA.begin(), freeA.end());
    orderB.append(freeB.begin(), freeB.end());
    SmallVector<int64_t> shapeA(batchA), shapeB(batchB);
    shapeA.append(freeASizes.begin(), freeASizes.end());
    shapeA.append(freeB.size(), 1);
    shapeB.append(freeA.size(), 1);
    shapeB.append(freeBSizes.begin(), freeBSizes.end());
    result.value = node.create<MulOp>(
        node.reshape(transposeTo(node, a, orderA), shapeA),
        node.reshape(transposeTo(node, b, orderB), shapeB));
    return result;
  }
  int64_t m = computeProduct(freeASizes), n = computeProduct(freeBSizes);
  int64_t k = computeProduct(sizes(a, contracted));
  SmallVector<int> orderA(batch), orderB(batch);
  orderA.append(freeA.begin(), freeA.end());
  orderA.append(contracted.begin(), contracted.end());
  orderB.append(contracted.begin(), contracted.end());
  orderB.append(freeB.begin(), freeB.end());
  SmallVector<int64_t> shapeA(batchA), shapeB(batchB);
  shapeA.append({m, k});
  shapeB.append({k, n});
  Value lhs = node.reshape(transposeTo(node, a, orderA), shapeA);
  Value rhs = node.reshape(transposeTo(node, b, orderB), shapeB);
  Value product = node.create<MatmulOp>(lhs, rhs);
  auto productShape = cast<RankedTensorType>(product.getType()).getShape();
  SmallVector<int64_t> shape(productShape.drop_back(2));
  shape.append(freeASizes.begin(), freeASizes.end());
  shape.append(freeBSizes.begin(), freeBSizes.end());
  result.value = node.reshape(product, shape);
  return result;
}

static LogicalResult convertEinsum(NodeContext &node) {
  std::string equation = node.stringAttr("equation", "");
  llvm::erase(equation, ' ');
  auto [inputs, output] = StringRef(equation).split("->");
  bool implicit = !StringRef(equation).contains("->");
  SmallVector<StringRef> terms;
  inputs.split(terms, ',');
  if (terms.size() != node.numInputs()) {
    node.emitError() << "the equation '" << equation << "' has "
                     << terms.size() << " input terms for "
                     << node.numInputs() << " inputs";
    return failure();
  }
  int64_t ellipsisRank = 0;
  for (auto [i, term] : llvm::enumerate(terms))
    if (term.contains("..."))
      ellipsisRank = std::max<int64_t>(
          ellipsisRank, node.inputType(i).getRank() -
                            llvm::count_if(term, llvm::isAlpha));
  SmallVector<Labeled> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    auto labels =
        parseTerm(node, term, node.inputType(i).getRank(), ellipsisRank);
    if (failed(labels))
      return failure();
    operands.push_back({node.input(i), *labels});
    if (failed(takeDiagonals(node, operands.back())))
      return failure();
  }
  SmallVector<int> outputLabels;
  if (implicit) {
    // The broadcast dimensions, then the letters used once, in order.
    for (int64_t j = 0; j < ellipsisRank; ++j)
      outputLabels.push_back(kEllipsisLabel + j);
    std::string once;
    for (char c : inputs)
      if (llvm::isAlpha(c) && llvm::count(inputs, c) == 1)
        once.push_back(c);
    llvm::sort(once);
    outputLabels.append(once.begin(), once.end());
  } else {
    auto labels = parseTerm(node, output, -1, ellipsisRank);
    if (failed(labels))
      return failure();
    outputLabels = *labels;
  }
  for (int label : outputLabels) {
    bool used = llvm::any_of(operands, [&](const Labeled &x) {
      return llvm::is_contained(x.labels, label);
    });
    if (llvm::count(outputLabels, label) > 1 || !used) {
      node.emitError() << "output label '" << (char)label
                       << "' is repeated or no input has it";
      return failure();
    }
  }
  auto inOutput = [&](int l) { return llvm::is_contained(outputLabels, l); };
  Labeled acc = operands.front();
  for (size_t i = 1; i < operands.size(); ++i) {
    // Keep what the output or a later operand still needs.
    auto needed = [&](int l) {
      if (inOutput(l))
        return true;
      for (size_t j = i + 1; j < operands.size(); ++j)
        if (llvm::is_contained(operands[j].labels, l))
          return true;
      return false;
    };
    acc = contract(node, acc, operands[i], needed);
  }
  sumAllBut(node, acc, inOutput);
  node.setOutput(0, transposeTo(node, acc, outputLabels));
  return success();
}

//===----------------------------------------------------------------------===//
// com.microsoft MatMulNBits
//===----------------------------------------------------------------------===//

/// The bytes of constant input `i` (dense, splat expanded, or a blob) and
/// its element type, or nullopt when it is not a constant.
static std::optional<std::pair<std::vector<char>, Type>> constantBytes(NodeContext &node,
                                                                       unsigned i) {
  Value v = node.input(i);
  ElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  Type element = attr.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  size_t width = element.getIntOrFloatBitWidth() / 8;
  std::vector<char> bytes;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat())
      for (int64_t e = 0; e < dense.getNumElements(); ++e)
        bytes.insert(bytes.end(), raw.begin(), raw.begin() + width);
    else
      bytes.assign(raw.begin(), raw.end());
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    ArrayRef<char> raw = blob->getData();
    bytes.assign(raw.begin(), raw.end());
  } else {
    return std::nullopt;
  }
  if (bytes.size() != size_t(attr.getNumElements()) * width)
    return std::nullopt;
  return std::make_pair(std::move(bytes), element);
}

/// The values of constant input `i` as doubles (f32, f16, bf16, 8-bit
/// integers as unsigned), or nullopt.
static std::optional<SmallVector<double>> constantNumbers(NodeContext &node, unsigned i) {
  auto data = constantBytes(node, i);
  if (!data)
    return std::nullopt;
  auto &[bytes, element] = *data;
  SmallVector<double> out;
  if (element.isF32()) {
    for (size_t o = 0; o + 4 <= bytes.size(); o += 4) {
      float f;
      std::memcpy(&f, bytes.data() + o, 4);
      out.push_back(f);
    }
  } else if (element.isF16() || element.isBF16()) {
    const llvm::fltSemantics &sem = cast<FloatType>(element).getFloatSemantics();
    for (size_t o = 0; o + 2 <= bytes.size(); o += 2) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + o, 2);
      out.push_back(APFloat(sem, APInt(16, h)).convertToDouble());
    }
  } else if (element.isInteger(8)) {
    for (char c : bytes)
      out.push_back(static_cast<uint8_t>(c));
  } else {
    return std::nullopt;
  }
  return out;
}

/// ONNX Runtime's MatMulNBits (bits = 4): Y = A x dequantize(B)^T, B holding
/// [N, n_blocks, block_size / 2] bytes of 4-bit codes (element k of a block
/// in byte k / 2, the low four bits first), scales [N * n_blocks] and
/// optional zero points (packed 4-bit codes, [N * ceil(n_blocks / 2)]
/// bytes, or floats [N * n_blocks]; 8 when absent), plus an optional bias
/// [N]. The codes are repacked at import into kiln.matmul_int4's layout;
/// A is padded with zeros to n_blocks * block_size columns when K is not a
/// multiple of the block.
static LogicalResult convertMatMulNBits(NodeContext &node) {
  int64_t k = node.intAttr("K", 0), n = node.intAttr("N", 0);
  int64_t bits = node.intAttr("bits", 4), block = node.intAttr("block_size", 0);
  if (bits != 4) {
    node.emitError() << "bits = " << bits << " is not supported (Kiln imports 4-bit weights)";
    return failure();
  }
  if (k <= 0 || n <= 0 || block < 16 || (block & (block - 1)) != 0) {
    node.emitError() << "needs K > 0, N > 0 and a block_size that is a power of 2 from 16, got K = "
                     << k << ", N = " << n << ", block_size = " << block;
    return failure();
  }
  if (node.hasInput(4)) {
    node.emitError() << "g_idx (input 4, act-order group indices) is not supported";
    return failure();
  }
  Value a = node.input(0);
  auto aType = node.inputType(0);
  if (!aType || !isa<FloatType>(aType.getElementType()) || aType.getRank() < 1 ||
      aType.getShape().back() != k) {
    node.emitError() << "A must be a float tensor [..., K = " << k << "], got " << a.getType();
    return failure();
  }
  int64_t blocks = llvm::divideCeil(k, block), blob = block / 2;
  auto b = constantBytes(node, 1);
  if (!b) {
    node.notConstant(1, "B", "a constant");
    return failure();
  }
  if (int64_t(b->first.size()) != n * blocks * blob || !b->second.isInteger(8)) {
    node.emitError() << "B must hold N * n_blocks * block_size / 2 = " << n * blocks * blob
                     << " bytes (uint8), got " << node.input(1).getType();
    return failure();
  }
  std::optional<SmallVector<double>> scales = constantNumbers(node, 2);
  if (!scales || int64_t(scales->size()) != n * blocks) {
    node.emitError() << "scales must be a constant of N * n_blocks = " << n * blocks
                     << " floats";
    return failure();
  }
  // Zero points per (n, block): 8 by default.
  std::vector<float> zeros(n * blocks, 8.0f);
  if (node.hasInput(3)) {
    std::optional<SmallVector<double>> values = constantNumbers(node, 3);
    if (!values) {
      node.notConstant(3, "zero_points", "a constant");
      return failure();
    }
    Type zpType = node.inputType(3).getElementType();
    int64_t packedRow = llvm::divideCeil(blocks, 2);
    if (zpType.isInteger(8) && int64_t(values->size()) == n * packedRow) {
      for (int64_t c = 0; c < n; ++c)
        for (int64_t g = 0; g < blocks; ++g) {
          auto byte = static_cast<uint8_t>((*values)[c * packedRow + g / 2]);
          zeros[c * blocks + g] = float(g % 2 == 0 ? byte & 15 : byte >> 4);
        }
    } else if (isa<FloatType>(zpType) && int64_t(values->size()) == n * blocks) {
      for (int64_t i = 0; i < n * blocks; ++i)
        zeros[i] = float((*values)[i]);
    } else {
      node.emitError() << "zero_points must be N * ceil(n_blocks / 2) = " << n * packedRow
                       << " packed uint8 codes or N * n_blocks = " << n * blocks
                       << " floats, got " << node.input(3).getType();
      return failure();
    }
  }
  // Repack: our byte [g, j, c] holds the codes of rows g * block + j (low)
  // and g * block + block / 2 + j (high) of column c.
  const std::vector<char> &raw = b->first;
  auto code = [&](int64_t c, int64_t g, int64_t r) {
    auto byte = static_cast<uint8_t>(raw[(c * blocks + g) * blob + r / 2]);
    return r % 2 == 0 ? byte & 15 : byte >> 4;
  };
  std::vector<char> packed(blocks * blob * n);
  std::vector<float> scale(blocks * n), zero(blocks * n);
  for (int64_t g = 0; g < blocks; ++g)
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t j = 0; j < blob; ++j)
        packed[(g * blob + j) * n + c] =
            static_cast<char>(code(c, g, j) | (code(c, g, blob + j) << 4));
      scale[g * n + c] = float((*scales)[c * blocks + g]);
      zero[g * n + c] = zeros[c * blocks + g];
    }
  OpBuilder &builder = node.builder();
  Type f32 = builder.getF32Type();
  auto byteType = RankedTensorType::get({blocks, blob, n}, builder.getIntegerType(8));
  auto paramType = RankedTensorType::get({blocks, n}, f32);
  Value weights = ConstantOp::create(builder, node.loc(),
                                     DenseElementsAttr::getFromRawBuffer(byteType, packed));
  Value scaleValue =
      ConstantOp::create(builder, node.loc(), DenseElementsAttr::get(paramType, ArrayRef<float>(scale)));
  Value zeroValue =
      ConstantOp::create(builder, node.loc(), DenseElementsAttr::get(paramType, ArrayRef<float>(zero)));
  Type element = aType.getElementType();
  Value x = node.cast(a, f32);
  if (aType.getRank() == 1)
    x = node.reshape(x, {1, k});
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (blocks * block != k) {
    SmallVector<int64_t> pads(2 * rank, 0);
    pads[2 * rank - 1] = blocks * block - k;
    x = node.create<PadOp>(x, builder.getDenseI64ArrayAttr(pads), builder.getStringAttr("constant"),
                           builder.getF64FloatAttr(0));
  }
  Value y = node.create<MatmulInt4Op>(x, weights, scaleValue, zeroValue);
  if (aType.getRank() == 1)
    y = node.reshape(y, {n});
  y = node.cast(y, element);
  if (node.hasInput(5)) {
    Value bias = node.input(5);
    auto biasType = node.inputType(5);
    if (!biasType || biasType.getShape() != ArrayRef<int64_t>{n}) {
      node.emitError() << "bias must be [N] = [" << n << "], got " << bias.getType();
      return failure();
    }
    y = node.create<AddOp>(y, node.cast(bias, element));
  }
  node.setOutput(0, y);
  return success();
}

void onnx_import::registerMatmulPatterns(PatternRegistry &r) {
  r.add("MatMul", 7, convertMatMul);
  r.add("Gemm", 7, convertGemm);
  r.add("Einsum", 12, convertEinsum);
  r.add("MatMulInteger", 10, convertMatMulInteger);
  r.add("QLinearMatMul", 10, convertQLinearMatMul);
  r.add("com.microsoft.MatMulNBits", 1, convertMatMulNBits);
}
