//===- Resize.cpp - ONNX Resize and Upsample -> kiln ----------------------===//
//
// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9), decomposed into
// kiln ops. Shapes are static and the scales, sizes and roi operands must be
// constants, so where every output element reads from, and with which
// weight, is known at import time. The resize is applied separably, one
// resized axis at a time: output position j of an axis is a weighted sum of a
// few input positions along it (its taps), computed in double as the ONNX
// reference does. Tap t of every output position becomes one kiln.gather
// along the axis with a constant index vector, multiplied by a constant
// weight vector broadcast along the axis; the taps are summed. Nearest
// interpolation is a single gather; linear has two taps, cubic four, and
// antialiased downscaling (opset 18) widens the filter to as many taps as its
// support covers. tf_crop_and_resize positions outside the input take
// `extrapolation_value` through a kiln.select with a constant mask.
//
// Linear and cubic interpolation of integer tensors (and of f16/bf16) is
// computed in f32 and converted back at the end (integers truncated after
// clamping to their range, as ONNX Runtime does).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

namespace {

enum class Interpolation { Nearest, Linear, Cubic };

/// What a Resize or Upsample node computes, with every operand resolved to
/// one entry per dimension of the input.
struct ResizeSpec {
  Interpolation mode = Interpolation::Nearest;
  std::string coordinateMode = "half_pixel";
  /// One of ONNX's nearest modes, or "simple": Upsample's and Resize-10's
  /// rounding (down when upsampling, up when downsampling).
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolationValue = 0.0;
  llvm::SmallVector<double> scales;
  llvm::SmallVector<int64_t> outShape;
  llvm::SmallVector<double> roiStart, roiEnd;
};

/// The taps of one resized axis: output position j is the sum over t of
/// input[index[t][j]] * weight[t][j], or the extrapolation value where
/// outside[j] is set.
struct AxisTaps {
  llvm::SmallVector<llvm::SmallVector<int64_t>> index;
  llvm::SmallVector<llvm::SmallVector<double>> weight;
  llvm::SmallVector<bool> outside;
};

} // namespace

/// At most this many taps (output positions times taps per position) per
/// axis: the index and weight vectors are constants built at import time.
static constexpr int64_t kMaxTapEntries = int64_t(1) << 26;

/// The input coordinate that output position `x` of an axis of `in` input
/// and `out` output elements maps to.
static double sourceCoordinate(const ResizeSpec &spec, int64_t axis, int64_t x,
                               int64_t in, int64_t out) {
  double scale = spec.scales[axis];
  // The reference computes with the unrounded output length.
  double outWidth = scale * (double)in;
  double xd = (double)x;
  const std::string &mode = spec.coordinateMode;
  if (mode == "asymmetric")
    return xd / scale;
  if (mode == "align_corners")
    return outWidth == 1 ? 0.0 : xd * (double)(in - 1) / (outWidth - 1);
  if (mode == "tf_crop_and_resize") {
    double start = spec.roiStart[axis], end = spec.roiEnd[axis];
    double span =
        out == 1 ? (end - start) * (double)(in - 1) / 2
                 : xd * (end - start) * (double)(in - 1) / (double)(out - 1);
    return span + start * (double)(in - 1);
  }
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
  if (mode == "half_pixel_symmetric") {
    double adjustment = (double)out / outWidth;
    double offset = (double)in / 2 * (1 - adjustment);
    return offset + (xd + 0.5) / scale - 0.5;
  }
  if (mode == "tf_half_pixel_for_nn")
    return (xd + 0.5) / scale;
  return (xd + 0.5) / scale - 0.5; // half_pixel
}

/// The input index nearest to coordinate `x` under `mode` (not yet clamped).
static int64_t nearestIndex(double x, StringRef mode, bool downsampling) {
  if (mode == "simple")
    return downsampling ? (int64_t)std::ceil(x) : (int64_t)x;
  double floor = std::floor(x);
  if (x == floor)
    return (int64_t)x;
  double ratio = x - floor;
  bool up = llvm::StringSwitch<bool>(mode)
                .Case("round_prefer_ceil", ratio >= 0.5)
                .Case("floor", false)
                .Case("ceil", true)
                .Default(ratio > 0.5); // round_prefer_floor
  return (int64_t)floor + (up ? 1 : 0);
}

/// The cubic convolution kernel with coefficient `a` at distance `x`.
static double cubicKernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

/// The interpolation weights of the taps at offsets `first`, `first + 1`, ...
/// from the input position left of a coordinate whose fraction is `ratio`
/// (in (0, 1]) on an axis scaled by `scale`.
static SmallVector<double> tapWeights(const ResizeSpec &spec, double ratio,
                                      double scale, int64_t &first) {
  SmallVector<double> weights;
  // Without antialiasing, or when upscaling, the filters keep their width.
  double support = spec.antialias ? std::min(scale, 1.0) : 1.0;
  if (spec.mode == Interpolation::Linear) {
    first = (int64_t)std::floor(-1 / support) + 1;
    int64_t count = 2 - 2 * first;
    for (int64_t i = first; i < first + count; ++i)
      weights.push_back(
          std::clamp(1 - std::abs(((double)i - ratio) * support), 0.0, 1.0));
  } else {
    first = (int64_t)std::floor(-2 / support) + 1;
    for (int64_t i = first; i < 2 - first; ++i)
      weights.push_back(
          cubicKernel(support * ((double)i - ratio), spec.cubicA));
  }
  if (spec.antialias) {
    double sum = 0;
    for (double w : weights)
      sum += w;
    for (double &w : weights)
      w /= sum;
  }
  return weights;
}

/// How many taps each output position of an axis scaled by `scale` needs
/// before merging (in double: a tiny antialiasing scale needs more taps than
/// an int64_t holds).
static double tapsPerPosition(const ResizeSpec &spec, double scale) {
  if (spec.mode == Interpolation::Nearest)
    return 1;
  double support = spec.antialias ? std::min(scale, 1.0) : 1.0;
  double reach = spec.mode == Interpolation::Linear ? 1 : 2;
  return 2 - 2 * (std::floor(-reach / support) + 1);
}

/// The taps of `axis` (from `in` to `out` elements).
static AxisTaps axisTaps(const ResizeSpec &spec, int64_t axis, int64_t in,
                         int64_t out) {
  AxisTaps taps;
  SmallVector<std::map<int64_t, double>> rows(out);
  taps.outside.assign(out, false);
  double scale = spec.scales[axis];
  for (int64_t x = 0; x < out; ++x) {
    double coordinate = sourceCoordinate(spec, axis, x, in, out);
    if (spec.coordinateMode == "tf_crop_and_resize" &&
        (coordinate < 0 || coordinate > (double)(in - 1))) {
      taps.outside[x] = true;
      rows[x][0] = 0.0;
      continue;
    }
    if (spec.mode == Interpolation::Nearest) {
      int64_t i = nearestIndex(coordinate, spec.nearestMode, scale < 1);
      rows[x][std::clamp<int64_t>(i, 0, in - 1)] = 1.0;
      continue;
    }
    // As the reference: an integral coordinate is the right end (ratio 1) of
    // the interval left of it.
    double floor = std::floor(coordinate);
    bool integral = coordinate == floor;
    int64_t base = (int64_t)floor - (integral ? 1 : 0);
    double ratio = integral ? 1.0 : coordinate - floor;
    int64_t first = 0;
    SmallVector<double> weights = tapWeights(spec, ratio, scale, first);
    if (spec.excludeOutside) {
      double sum = 0;
      for (auto [k, w] : llvm::enumerate(weights)) {
        int64_t i = base + first + (int64_t)k;
        if (i < 0 || i >= in)
          w = 0;
        sum += w;
      }
      if (sum != 0)
        for (double &w : weights)
          w /= sum;
    }
    // Taps past either end read the edge element: merge them.
    for (auto [k, w] : llvm::enumerate(weights)) {
      int64_t i = std::clamp<int64_t>(base + first + (int64_t)k, 0, in - 1);
      rows[x][i] += w;
    }
  }
  // Drop taps with no weight; pad short rows with weightless taps.
  size_t numTaps = 1;
  for (auto &row : rows) {
    for (auto it = row.begin(); it != row.end();)
      it = (it->second == 0 && row.size() > 1) ? row.erase(it) : std::next(it);
    numTaps = std::max(numTaps, row.size());
  }
  taps.index.assign(numTaps, SmallVector<int64_t>(out, 0));
  taps.weight.assign(numTaps, SmallVector<double>(out, 0.0));
  for (auto [x, row] : llvm::enumerate(rows)) {
    size_t t = 0;
    for (auto [i, w] : row) {
      taps.index[t][x] = i;
      taps.weight[t][x] = w;
      ++t;
    }
    for (; t < numTaps; ++t)
      taps.index[t][x] = row.begin()->first;
  }
  return taps;
}

/// Whether `taps` copy the axis unchanged.
static bool isIdentity(const AxisTaps &taps, int64_t in) {
  if (taps.index.size() != 1 || (int64_t)taps.index[0].size() != in ||
      llvm::is_contained(taps.outside, true))
    return false;
  for (int64_t x = 0; x < in; ++x)
    if (taps.index[0][x] != x || taps.weight[0][x] != 1.0)
      return false;
  return true;
}

/// A constant of `type` holding `values` (converted to its float type).
static Value floatConstant(NodeContext &node, RankedTensorType type,
                           ArrayRef<double> values) {
  auto element = cast<FloatType>(type.getElementType());
  SmallVector<APFloat> converted;
  for (double v : values) {
    APFloat f(v);
    bool losesInfo;
    f.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    converted.push_back(f);
  }
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(type, converted));
}

/// `value` resized along `axis` by `taps`.
static Value applyTaps(NodeContext &node, Value value, int64_t axis,
                       const AxisTaps &taps, double extrapolationValue) {
  OpBuilder &b = node.builder();
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  int64_t out = taps.outside.size();
  // The weights and mask vary along `axis` and broadcast along the others.
  SmallVector<int64_t> alongAxis(type.getRank(), 1);
  alongAxis[axis] = out;
  auto indexType = RankedTensorType::get({out}, b.getI64Type());
  Value sum;
  for (auto [index, weight] : llvm::zip(taps.index, taps.weight)) {
    Value indices = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(indexType, ArrayRef(index)));
    Value tap = node.create<GatherOp>(value, indices, axis);
    if (llvm::any_of(weight, [](double w) { return w != 1.0; }))
      tap = node.create<MulOp>(
          tap, floatConstant(node, RankedTensorType::get(alongAxis, element),
                             weight));
    sum = sum ? node.create<AddOp>(sum, tap) : tap;
  }
  if (llvm::is_contained(taps.outside, true)) {
    SmallVector<bool> mask(taps.outside.begin(), taps.outside.end());
    auto maskType = RankedTensorType::get(alongAxis, b.getI1Type());
    Value maskValue = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(maskType, ArrayRef(mask)));
    sum = node.create<SelectOp>(maskValue,
                                node.scalar(element, extrapolationValue), sum);
  }
  return sum;
}

/// Reads the interpolation attributes of Resize-11 and later into `spec`;
/// failure after a diagnostic.
static LogicalResult readModes(NodeContext &node, ResizeSpec &spec) {
  std::string mode = node.stringAttr("mode", "nearest");
  if (mode == "nearest")
    spec.mode = Interpolation::Nearest;
  else if (mode == "linear")
    spec.mode = Interpolation::Linear;
  else if (mode == "cubic" && node.opType() == "Resize" && node.opset() >= 11)
    spec.mode = Interpolation::Cubic;
  else {
    node.emitError() << "unsupported mode '" << mode << "' (expected "
                     << (node.opType() == "Resize" && node.opset() >= 11
                             ? "nearest, linear or cubic"
                             : "nearest or linear")
                     << ")";
    return failure();
  }
  if (node.opType() == "Upsample" || node.opset() < 11) {
    // Before opset 11 the coordinates are always asymmetric and nearest
    // rounds as ONNX Runtime's "simple" mode does.
    spec.coordinateMode = "asymmetric";
    spec.nearestMode = "simple";
    return success();
  }
  spec.coordinateMode =
      node.stringAttr("coordinate_transformation_mode", "half_pixel");
  SmallVector<StringRef> modes = {"half_pixel", "pytorch_half_pixel",
                                  "align_corners", "asymmetric",
                                  "tf_crop_and_resize"};
  if (node.opset() < 13)
    modes.push_back("tf_half_pixel_for_nn");
  if (node.opset() >= 19)
    modes.push_back("half_pixel_symmetric");
  if (!llvm::is_contained(modes, spec.coordinateMode)) {
    InFlightDiagnostic diag = node.emitError();
    diag << "unsupported coordinate_transformation_mode '"
         << spec.coordinateMode << "' (expected ";
    llvm::interleave(modes, diag, ", ");
    diag << ")";
    return failure();
  }
  spec.nearestMode = node.stringAttr("nearest_mode", "round_prefer_floor");
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          spec.nearestMode)) {
    node.emitError() << "unsupported nearest_mode '" << spec.nearestMode
                     << "' (expected round_prefer_floor, round_prefer_ceil, "
                        "floor or ceil)";
    return failure();
  }
  spec.cubicA = node.floatAttr("cubic_coeff_a", -0.75);
  spec.excludeOutside = node.intAttr("exclude_outside", 0) != 0;
  spec.extrapolationValue = node.floatAttr("extrapolation_value", 0.0);
  if (node.opset() >= 18)
    spec.antialias = node.intAttr("antialias", 0) != 0 &&
                     spec.mode != Interpolation::Nearest;
  return success();
}

/// Whether optional input `i` is given with at least one element (opset 11
/// and 13 models pass an empty constant for the one of scales and sizes
/// they do not use).
static bool nonEmptyInput(NodeContext &node, unsigned i) {
  if (!node.hasInput(i))
    return false;
  DenseElementsAttr attr = node.constantInput(i);
  return !attr || attr.getNumElements() != 0;
}

/// Resolves the scales, sizes, roi and axes of `node` into `spec` for an
/// input of shape `inShape`; failure after a diagnostic.
static LogicalResult readShapes(NodeContext &node, ArrayRef<int64_t> inShape,
                                ResizeSpec &spec) {
  int64_t rank = inShape.size();
  bool isResize11 = node.opType() == "Resize" && node.opset() >= 11;
  // The dimensions the scales, sizes and roi describe (opset 18's axes).
  SmallVector<int64_t> axes;
  if (isResize11 && node.opset() >= 18 && node.hasAttr("axes")) {
    for (int64_t axis : node.intsAttr("axes")) {
      auto normalized = node.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      if (llvm::is_contained(axes, *normalized)) {
        node.emitError() << "axis " << axis << " is listed twice in axes";
        return failure();
      }
      axes.push_back(*normalized);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  int64_t count = axes.size();

  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  if (node.opType() == "Upsample" && node.opset() < 9) {
    scales = node.floatsAttr("scales"); // required: the ONNX checker says so
  } else {
    unsigned scalesInput = isResize11 ? 2 : 1;
    bool hasScales = nonEmptyInput(node, scalesInput);
    bool hasSizes = isResize11 && nonEmptyInput(node, 3);
    if (hasScales && hasSizes) {
      node.emitError() << "only one of 'scales' and 'sizes' may be given";
      return failure();
    }
    if (!hasScales && !hasSizes) {
      node.emitError() << (isResize11 ? "one of 'scales' and 'sizes' must be "
                                        "given"
                                      : "missing input 'scales'");
      return failure();
    }
    if (hasScales) {
      auto values = node.constantFloats(scalesInput, "scales");
      if (failed(values))
        return failure();
      scales = *values;
    } else {
      auto values = node.constantInts(3, "sizes");
      if (failed(values))
        return failure();
      sizes = *values;
    }
  }

  spec.scales.assign(rank, 1.0);
  spec.outShape.assign(inShape.begin(), inShape.end());
  if (!scales.empty() || sizes.empty()) {
    if ((int64_t)scales.size() != count) {
      node.emitError() << "expected " << count << " scales, got "
                       << scales.size();
      return failure();
    }
    for (auto [axis, scale] : llvm::zip(axes, scales)) {
      if (!(scale > 0) || !std::isfinite(scale)) {
        node.emitError() << "scale " << scale << " of axis " << axis
                         << " is not positive";
        return failure();
      }
      spec.scales[axis] = scale;
      double out = std::floor(scale * (double)inShape[axis]);
      if (out < 1 || out > (double)kMaxTensorElements) {
        node.emitError() << "scale " << scale << " gives axis " << axis
                         << " of " << inShape[axis] << " elements an output "
                         << "length of " << out;
        return failure();
      }
      spec.outShape[axis] = (int64_t)out;
    }
  } else {
    if ((int64_t)sizes.size() != count) {
      node.emitError() << "expected " << count << " sizes, got "
                       << sizes.size();
      return failure();
    }
    for (auto [axis, size] : llvm::zip(axes, sizes)) {
      if (size < 1 || size > kMaxTensorElements) {
        node.emitError() << "size " << size << " of axis " << axis
                         << " is not positive";
        return failure();
      }
    }
    std::string policy = "stretch";
    if (node.opset() >= 18)
      policy = node.stringAttr("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (auto [axis, size] : llvm::zip(axes, sizes)) {
        spec.outShape[axis] = size;
        spec.scales[axis] = (double)size / (double)inShape[axis];
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      // One scale for all the axes: the largest that fits in the sizes, or
      // the smallest that covers them.
      double scale = policy == "not_larger" ? INFINITY : 0.0;
      for (auto [axis, size] : llvm::zip(axes, sizes)) {
        double ratio = (double)size / (double)inShape[axis];
        scale = policy == "not_larger" ? std::min(scale, ratio)
                                       : std::max(scale, ratio);
      }
      for (int64_t axis : axes) {
        spec.scales[axis] = scale;
        spec.outShape[axis] = std::max<int64_t>(
            1, (int64_t)std::round(scale * (double)inShape[axis]));
      }
    } else {
      node.emitError() << "unsupported keep_aspect_ratio_policy '" << policy
                       << "' (expected stretch, not_larger or not_smaller)";
      return failure();
    }
  }

  spec.roiStart.assign(rank, 0.0);
  spec.roiEnd.assign(rank, 1.0);
  if (spec.coordinateMode == "tf_crop_and_resize") {
    if (!nonEmptyInput(node, 1)) {
      node.emitError() << "coordinate_transformation_mode tf_crop_and_resize "
                          "needs the 'roi' input";
      return failure();
    }
    auto roi = node.constantFloats(1, "roi");
    if (failed(roi))
      return failure();
    if ((int64_t)roi->size() != 2 * count) {
      node.emitError() << "expected " << 2 * count << " roi values, got "
                       << roi->size();
      return failure();
    }
    for (auto [n, axis] : llvm::enumerate(axes)) {
      spec.roiStart[axis] = (*roi)[n];
      spec.roiEnd[axis] = (*roi)[count + n];
    }
  }
  return success();
}

static LogicalResult convertResize(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  ResizeSpec spec;
  if (failed(readModes(node, spec)) ||
      failed(readShapes(node, type.getShape(), spec)))
    return failure();
  if (!isWithinSizeLimit(spec.outShape)) {
    node.emitError() << "its result would have more than " << kMaxTensorElements
                     << " elements";
    return failure();
  }

  // Interpolating modes compute in f32 (f64 for f64 inputs).
  Type element = type.getElementType();
  Type compute = element;
  if (spec.mode != Interpolation::Nearest && !element.isF32() &&
      !element.isF64()) {
    if (!element.isIntOrFloat() || element.isInteger(1)) {
      node.emitError() << "linear and cubic modes need a numeric input, got "
                       << type;
      return failure();
    }
    compute = node.builder().getF32Type();
  }

  // The axes that change, innermost first (the order of the reference's
  // recursion).
  SmallVector<std::pair<int64_t, AxisTaps>> resized;
  for (int64_t axis = type.getRank() - 1; axis >= 0; --axis) {
    int64_t in = type.getShape()[axis], out = spec.outShape[axis];
    if (in == 0) {
      node.emitError() << "cannot resize axis " << axis << " of " << type
                       << ": it is empty";
      return failure();
    }
    double perPosition = tapsPerPosition(spec, spec.scales[axis]);
    if (perPosition * (double)out > (double)kMaxTapEntries) {
      node.emitError() << "resizing axis " << axis << " to " << out
                       << " elements would need more than " << kMaxTapEntries
                       << " taps (output elements times filter taps)";
      return failure();
    }
    AxisTaps taps = axisTaps(spec, axis, in, out);
    if (!isIdentity(taps, in))
      resized.emplace_back(axis, std::move(taps));
  }

  Value result = node.cast(input, compute);
  for (const auto &[axis, taps] : resized)
    result = applyTaps(node, result, axis, taps, spec.extrapolationValue);
  if (compute != element && isa<IntegerType>(element)) {
    // Clamp first: cubic overshoots, and a float out of an integer type's
    // range has no defined conversion.
    unsigned width = element.getIntOrFloatBitWidth();
    bool isUnsigned = element.isUnsignedInteger();
    double low = isUnsigned ? 0.0 : -std::ldexp(1.0, width - 1);
    double high = isUnsigned ? std::ldexp(1.0, width) - 1
                             : std::ldexp(1.0, width - 1) - 1;
    // The largest f32 not above it (2^31 - 1 rounds up to 2^31).
    float highF32 = (float)high;
    if ((double)highF32 > high)
      highF32 = std::nextafter(highF32, 0.0f);
    high = highF32;
    result = node.create<ClipOp>(result, node.builder().getF64FloatAttr(low),
                                 node.builder().getF64FloatAttr(high));
  }
  node.setOutput(0, node.cast(result, element));
  return success();
}

void onnx_import::registerResizePatterns(PatternRegistry &r) {
  r.add("Upsample", 7, convertResize);
  r.add("Resize", 10, convertResize);
}
