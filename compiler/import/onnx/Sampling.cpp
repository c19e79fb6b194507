//===- Sampling.cpp - ONNX GridSample and RoiAlign -> kiln ----------------===//
//
// GridSample (opsets 16 and 20, 2-D) and RoiAlign (opsets 10 and 16),
// decomposed into kiln ops. Unlike Resize, where every output element reads
// from is known at import time, these ops sample at positions computed at run
// time (from the grid, from the regions of interest), so the coordinates,
// tap positions and interpolation weights are tensor arithmetic. Both read
// their taps the same way: the image [N, C, H, W] is viewed as one row of C
// channels per pixel, [N * H * W, C], and every tap is one row number
// (n * H * W + y * W + x) of a single kiln.gather; the weighted taps are then
// summed (or, for RoiAlign's max mode, maximized) over the tap axes, and the
// channels moved back to the second dimension.
//
// The arithmetic follows the ONNX operator definitions as ONNX Runtime
// computes them (the order of operations included, so that nearest rounding
// and the bins of RoiAlign fall the same way), in f32 (f64 for f64 inputs).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// A constant of `shape` and float type `element` (f32 or f64) holding
/// `values`.
static Value floatTensor(NodeContext &node, ArrayRef<int64_t> shape,
                         Type element, ArrayRef<double> values) {
  auto type = RankedTensorType::get(shape, element);
  if (element.isF64())
    return ConstantOp::create(node.builder(), node.loc(),
                              DenseElementsAttr::get(type, values));
  SmallVector<float> narrowed(values.begin(), values.end());
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(type, ArrayRef(narrowed)));
}

/// The element type the coordinates and weights are computed in for a
/// floating-point `element`: f64 stays, the others compute in f32.
static Type computeType(NodeContext &node, Type element) {
  return element.isF64() ? element : node.builder().getF32Type();
}

/// Index `index` of the last dimension of `value`, that dimension dropped.
static Value lastComponent(NodeContext &node, Value value, int64_t index) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1);
  starts.back() = index;
  ends.back() = index + 1;
  Value slice = node.create<SliceOp>(value, starts, ends, steps);
  return node.reshape(slice, type.getShape().drop_back());
}

/// The image [N, C, H, W] as one row of channels per pixel, [N * H * W, C],
/// in element type `compute`.
static Value pixelRows(NodeContext &node, Value image, Type compute) {
  auto type = cast<RankedTensorType>(image.getType());
  ArrayRef<int64_t> shape = type.getShape();
  Value channelsLast = node.create<TransposeOp>(node.cast(image, compute),
                                                ArrayRef<int64_t>{0, 2, 3, 1});
  return node.reshape(channelsLast, {shape[0] * shape[2] * shape[3], shape[1]});
}

/// The sampled values [N, ..., C] (channels last) as `outShape`
/// [N, C, ...]: the channel axis moved to the second position.
static Value channelsFirst(NodeContext &node, Value sampled,
                           ArrayRef<int64_t> outShape) {
  auto type = cast<RankedTensorType>(sampled.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> perm = {0, rank - 1};
  for (int64_t d = 1; d < rank - 1; ++d)
    perm.push_back(d);
  return node.reshape(node.create<TransposeOp>(sampled, perm), outShape);
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

namespace {
enum class SampleMode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

/// The taps of one spatial axis of GridSample for every output position:
/// tap positions (integral floats), their weights (null for nearest) and,
/// for zeros padding, whether each lies inside the image; each [N, P, K].
struct AxisTaps {
  Value position, weight, inside;
};
} // namespace

/// The cubic convolution kernel with coefficient `a` at distance `s` in
/// [0, 1] (`near`) or [1, 2] (`far`), evaluated on a tensor.
static Value cubicWeight(NodeContext &node, Value s, double a, bool near) {
  Type element = cast<RankedTensorType>(s.getType()).getElementType();
  auto c = [&](double v) { return node.scalar(element, v); };
  if (near) {
    // ((a + 2) * s - (a + 3)) * s * s + 1
    Value w = node.create<SubOp>(node.create<MulOp>(c(a + 2), s), c(a + 3));
    w = node.create<MulOp>(node.create<MulOp>(w, s), s);
    return node.create<AddOp>(w, c(1));
  }
  // ((a * s - 5a) * s + 8a) * s - 4a
  Value w = node.create<SubOp>(node.create<MulOp>(c(a), s), c(5 * a));
  w = node.create<AddOp>(node.create<MulOp>(w, s), c(8 * a));
  return node.create<SubOp>(node.create<MulOp>(w, s), c(4 * a));
}

/// `v` reflected into [lo, hi] again and again until it lies inside, as the
/// ONNX definition of GridSample's reflection padding does: the distance past
/// the border, folded by the length of the range, counted from the border
/// the number of folds leaves it at.
static Value reflect(NodeContext &node, Value v, double lo, double hi) {
  auto type = cast<RankedTensorType>(v.getType());
  Type element = type.getElementType();
  if (hi <= lo) // a one-pixel axis with align_corners: everything is at lo
    return node.splat(type, lo);
  auto c = [&](double x) { return node.scalar(element, x); };
  double range = hi - lo;
  Value below = node.create<LessOp>(v, c(lo));
  Value above = node.create<GreaterOp>(v, c(hi));
  Value past = node.create<SelectOp>(below, node.create<SubOp>(c(lo), v),
                                     node.create<SubOp>(v, c(hi)));
  Value folds = node.create<FloorOp>(node.create<DivOp>(past, c(range)));
  Value rest = node.create<SubOp>(past, node.create<MulOp>(folds, c(range)));
  Value even = node.create<EqualOp>(node.create<ModOp>(folds, c(2)), c(0));
  // From below: lo + rest after an even number of folds, hi - rest after an
  // odd one; from above the mirror image of that.
  Value fromBelow = node.create<SelectOp>(even, node.create<AddOp>(c(lo), rest),
                                          node.create<SubOp>(c(hi), rest));
  Value fromAbove = node.create<SubOp>(c(lo + hi), fromBelow);
  return node.create<SelectOp>(below, fromBelow,
                               node.create<SelectOp>(above, fromAbove, v));
}

/// The taps along one axis of `size` pixels for the sample coordinates
/// `coord` [N, P, 1] (already in pixel units and padded), their positions
/// padded as `padding` says and clamped into the axis.
static AxisTaps axisTaps(NodeContext &node, Value coord, int64_t size,
                         SampleMode mode, Padding padding, bool alignCorners) {
  auto type = cast<RankedTensorType>(coord.getType());
  Type element = type.getElementType();
  auto c = [&](double x) { return node.scalar(element, x); };
  AxisTaps taps;
  if (mode == SampleMode::Nearest) {
    taps.position = coord;
  } else {
    Value floor = node.create<FloorOp>(coord);
    SmallVector<double> offsets = mode == SampleMode::Linear
                                      ? SmallVector<double>{0, 1}
                                      : SmallVector<double>{-1, 0, 1, 2};
    int64_t k = offsets.size();
    taps.position =
        node.create<AddOp>(floor, floatTensor(node, {k}, element, offsets));
    SmallVector<Value> weights;
    if (mode == SampleMode::Linear) {
      // (floor + 1 - x, x - floor)
      weights.push_back(
          node.create<SubOp>(node.create<AddOp>(floor, c(1)), coord));
      weights.push_back(node.create<SubOp>(coord, floor));
    } else {
      Value t = node.create<SubOp>(coord, floor);
      double a = -0.75;
      weights.push_back(
          cubicWeight(node, node.create<AddOp>(t, c(1)), a, false));
      weights.push_back(cubicWeight(node, t, a, true));
      weights.push_back(
          cubicWeight(node, node.create<SubOp>(c(1), t), a, true));
      weights.push_back(
          cubicWeight(node, node.create<SubOp>(c(2), t), a, false));
    }
    taps.weight = node.create<ConcatOp>(weights, int64_t(2));
  }
  double last = (double)(size - 1);
  OpBuilder &b = node.builder();
  auto clamp = [&](Value v) {
    return node.create<ClipOp>(v, b.getF64FloatAttr(0.0),
                               b.getF64FloatAttr(last));
  };
  switch (padding) {
  case Padding::Zeros: {
    Value low = node.create<GreaterEqualOp>(taps.position, c(0));
    Value high = node.create<LessEqualOp>(taps.position, c(last));
    taps.inside = node.create<AndOp>(low, high);
    taps.position = clamp(taps.position);
    break;
  }
  case Padding::Border:
    taps.position = clamp(taps.position);
    break;
  case Padding::Reflection: {
    double lo = alignCorners ? 0.0 : -0.5;
    double hi = alignCorners ? last : (double)size - 0.5;
    taps.position = clamp(reflect(node, taps.position, lo, hi));
    break;
  }
  }
  return taps;
}

/// Grid coordinate `g` (in [-1, 1] across the image) in pixel units of an
/// axis of `size` pixels, rounded for nearest sampling and, when outside
/// the image, brought back in by border or reflection padding. Bicubic
/// sampling pads only its taps, as PyTorch's grid_sample and ONNX Runtime
/// do: the ONNX reference implementation clamps the coordinate first, which
/// for border padding moves the taps (for reflection the two agree).
static Value sampleCoordinate(NodeContext &node, Value g, int64_t size,
                              SampleMode mode, Padding padding,
                              bool alignCorners) {
  Type element = cast<RankedTensorType>(g.getType()).getElementType();
  auto c = [&](double x) { return node.scalar(element, x); };
  double length = (double)size;
  Value plusOne = node.create<AddOp>(g, c(1));
  Value x;
  if (alignCorners) // (g + 1) / 2 * (size - 1)
    x = node.create<MulOp>(node.create<DivOp>(plusOne, c(2)), c(length - 1));
  else // ((g + 1) * size - 1) / 2
    x = node.create<DivOp>(
        node.create<SubOp>(node.create<MulOp>(plusOne, c(length)), c(1)), c(2));
  if (mode == SampleMode::Nearest)
    x = node.create<RoundOp>(x); // half to even
  double lo = alignCorners ? 0.0 : -0.5;
  double hi = alignCorners ? length - 1 : length - 0.5;
  if (mode == SampleMode::Cubic)
    return x;
  if (padding == Padding::Border) {
    Value outside = node.create<OrOp>(node.create<LessOp>(x, c(lo)),
                                      node.create<GreaterOp>(x, c(hi)));
    OpBuilder &b = node.builder();
    Value clamped = node.create<ClipOp>(x, b.getF64FloatAttr(0.0),
                                        b.getF64FloatAttr(length - 1));
    x = node.create<SelectOp>(outside, clamped, x);
  } else if (padding == Padding::Reflection) {
    x = reflect(node, x, lo, hi);
  }
  return x;
}

static LogicalResult convertGridSample(NodeContext &node) {
  Value image = node.input(0), grid = node.input(1);
  RankedTensorType imageType = node.inputType(0), gridType = node.inputType(1);
  if (imageType.getRank() != 4 || !isa<FloatType>(imageType.getElementType())) {
    node.emitError() << "expected a floating-point input X of rank 4 (2-D "
                        "sampling), got "
                     << imageType;
    return failure();
  }
  ArrayRef<int64_t> in = imageType.getShape(), g = gridType.getShape();
  if (gridType.getRank() != 4 || g[0] != in[0] || g[3] != 2 ||
      !isa<FloatType>(gridType.getElementType())) {
    node.emitError() << "expected a floating-point grid of shape [" << in[0]
                     << ", H_out, W_out, 2], got " << gridType;
    return failure();
  }
  bool opset20 = node.opset() >= 20;
  std::string modeName =
      node.stringAttr("mode", opset20 ? "linear" : "bilinear");
  SampleMode mode;
  if (modeName == "nearest")
    mode = SampleMode::Nearest;
  else if (modeName == (opset20 ? "linear" : "bilinear"))
    mode = SampleMode::Linear;
  else if (modeName == (opset20 ? "cubic" : "bicubic"))
    mode = SampleMode::Cubic;
  else {
    node.emitError() << "unsupported mode '" << modeName << "' (expected "
                     << (opset20 ? "linear, nearest or cubic"
                                 : "bilinear, nearest or bicubic")
                     << ")";
    return failure();
  }
  std::string paddingName = node.stringAttr("padding_mode", "zeros");
  Padding padding;
  if (paddingName == "zeros")
    padding = Padding::Zeros;
  else if (paddingName == "border")
    padding = Padding::Border;
  else if (paddingName == "reflection")
    padding = Padding::Reflection;
  else {
    node.emitError() << "unsupported padding_mode '" << paddingName
                     << "' (expected zeros, border or reflection)";
    return failure();
  }
  bool alignCorners = node.intAttr("align_corners", 0) != 0;
  int64_t n = in[0], channels = in[1], height = in[2], width = in[3];
  int64_t points = g[1] * g[2];
  SmallVector<int64_t> outShape = {n, channels, g[1], g[2]};
  if (height == 0 || width == 0) {
    node.emitError() << "cannot sample the empty image " << imageType;
    return failure();
  }

  Type element = imageType.getElementType();
  Type compute = computeType(node, element);
  Value flatGrid = node.reshape(node.cast(grid, compute), {n, points, 1, 2});
  AxisTaps xs =
      axisTaps(node,
               sampleCoordinate(node, lastComponent(node, flatGrid, 0), width,
                                mode, padding, alignCorners),
               width, mode, padding, alignCorners);
  AxisTaps ys =
      axisTaps(node,
               sampleCoordinate(node, lastComponent(node, flatGrid, 1), height,
                                mode, padding, alignCorners),
               height, mode, padding, alignCorners);
  int64_t kx = cast<RankedTensorType>(xs.position.getType()).getShape()[2];
  int64_t ky = cast<RankedTensorType>(ys.position.getType()).getShape()[2];

  // Row numbers n * H * W + y * W + x, [N, P, Ky, Kx].
  Type i64 = node.builder().getI64Type();
  Value col = node.reshape(node.cast(xs.position, i64), {n, points, 1, kx});
  Value row = node.reshape(node.cast(ys.position, i64), {n, points, ky, 1});
  SmallVector<int64_t> imageOffsets;
  for (int64_t i = 0; i < n; ++i)
    imageOffsets.push_back(i * height * width);
  Value rows = node.create<AddOp>(
      node.create<AddOp>(node.create<MulOp>(row, node.scalar(i64, width)), col),
      i64Tensor(node, {n, 1, 1, 1}, imageOffsets));
  Value taps = node.create<GatherOp>(pixelRows(node, image, compute), rows,
                                     int64_t(0)); // [N, P, Ky, Kx, C]
  if (padding == Padding::Zeros) {
    Value inside =
        node.create<AndOp>(node.reshape(ys.inside, {n, points, ky, 1, 1}),
                           node.reshape(xs.inside, {n, points, 1, kx, 1}));
    taps = node.create<SelectOp>(inside, taps, node.scalar(compute, 0));
  }
  Value sampled;
  if (mode == SampleMode::Nearest) {
    sampled = node.reshape(taps, {n, points, channels});
  } else {
    Value weights =
        node.create<MulOp>(node.reshape(ys.weight, {n, points, ky, 1, 1}),
                           node.reshape(xs.weight, {n, points, 1, kx, 1}));
    OpBuilder &b = node.builder();
    sampled = node.create<ReduceSumOp>(node.create<MulOp>(taps, weights),
                                       b.getDenseI64ArrayAttr({2, 3}),
                                       b.getBoolAttr(false));
  }
  node.setOutput(0, node.cast(channelsFirst(node, sampled, outShape), element));
  return success();
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

/// At most this many sampling points along a side of a RoiAlign bin (the
/// grid of sampling_ratio 0, or sampling_ratio itself).
static constexpr int64_t kMaxGridSide = 1024;

/// The per-ROI sampling grid of RoiAlign when `sampling_ratio` is 0: the
/// ceiling of each region's height and width over the output's, from
/// constant `rois`, computed with the operator's arithmetic in `compute`
/// (f32 rounds every step). Failure after a diagnostic.
static LogicalResult adaptiveGrid(NodeContext &node, Type compute,
                                  double spatialScale, double offset,
                                  bool clampSize, int64_t outH, int64_t outW,
                                  SmallVector<int64_t> &gridH,
                                  SmallVector<int64_t> &gridW) {
  if (!node.constantInput(1)) {
    node.notConstant(1, "rois",
                     "(with sampling_ratio 0 the sampling points depend on "
                     "each region's size) a constant");
    return failure();
  }
  auto values = node.constantFloats(1, "rois");
  if (failed(values))
    return failure();
  auto round = [&](double v) { return compute.isF64() ? v : (double)(float)v; };
  double scale = round(spatialScale);
  gridH.clear();
  gridW.clear();
  for (size_t r = 0; r + 3 < values->size(); r += 4) {
    auto at = [&](size_t i) {
      return round(round(round((*values)[r + i]) * scale) - offset);
    };
    double width = round(at(2) - at(0)), height = round(at(3) - at(1));
    if (clampSize) {
      width = std::max(width, 1.0);
      height = std::max(height, 1.0);
    }
    double h = std::ceil(round(height / (double)outH));
    double w = std::ceil(round(width / (double)outW));
    if (!(h <= (double)kMaxGridSide && w <= (double)kMaxGridSide)) {
      node.emitError() << "region " << r / 4 << " of 'rois' would need more "
                       << "than " << kMaxGridSide
                       << " sampling points along a side of each bin";
      return failure();
    }
    gridH.push_back(std::max<int64_t>((int64_t)h, 0));
    gridW.push_back(std::max<int64_t>((int64_t)w, 0));
  }
  return success();
}

static LogicalResult convertRoiAlign(NodeContext &node) {
  Value image = node.input(0), rois = node.input(1);
  RankedTensorType imageType = node.inputType(0), roisType = node.inputType(1),
                   batchType = node.inputType(2);
  if (imageType.getRank() != 4 || !isa<FloatType>(imageType.getElementType())) {
    node.emitError() << "expected a floating-point input X of rank 4, got "
                     << imageType;
    return failure();
  }
  if (roisType.getRank() != 2 || roisType.getShape()[1] != 4 ||
      roisType.getElementType() != imageType.getElementType()) {
    node.emitError() << "expected rois of shape [num_rois, 4] and X's element "
                        "type, got "
                     << roisType;
    return failure();
  }
  int64_t numRois = roisType.getShape()[0];
  if (batchType.getRank() != 1 || batchType.getShape()[0] != numRois ||
      !isa<IntegerType>(batchType.getElementType())) {
    node.emitError() << "expected integer batch_indices of shape [" << numRois
                     << "], got " << batchType;
    return failure();
  }
  std::string modeName = node.stringAttr("mode", "avg");
  if (modeName != "avg" && modeName != "max") {
    node.emitError() << "unsupported mode '" << modeName
                     << "' (expected avg or max)";
    return failure();
  }
  bool maxMode = modeName == "max";
  std::string transform =
      node.opset() >= 16
          ? node.stringAttr("coordinate_transformation_mode", "half_pixel")
          : "output_half_pixel";
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    node.emitError() << "unsupported coordinate_transformation_mode '"
                     << transform
                     << "' (expected half_pixel or output_half_pixel)";
    return failure();
  }
  bool halfPixel = transform == "half_pixel";
  int64_t outH = node.intAttr("output_height", 1);
  int64_t outW = node.intAttr("output_width", 1);
  int64_t ratio = node.intAttr("sampling_ratio", 0);
  double spatialScale = node.floatAttr("spatial_scale", 1.0);
  if (outH < 1 || outW < 1 || ratio < 0) {
    node.emitError() << "output_height and output_width must be positive and "
                        "sampling_ratio not negative, got "
                     << outH << ", " << outW << " and " << ratio;
    return failure();
  }
  if (ratio > kMaxGridSide) {
    node.emitError() << "sampling_ratio " << ratio << " asks for more than the "
                     << kMaxGridSide << " sampling points per bin side Kiln supports";
    return failure();
  }
  int64_t n = imageType.getShape()[0], channels = imageType.getShape()[1];
  int64_t height = imageType.getShape()[2], width = imageType.getShape()[3];
  if (numRois == 0) {
    node.setOutput(0,
                   node.splat(RankedTensorType::get({0, channels, outH, outW},
                                                    imageType.getElementType()),
                              0));
    return success();
  }
  if (n == 0 || height == 0 || width == 0) {
    node.emitError() << "cannot sample the empty image " << imageType;
    return failure();
  }

  Type element = imageType.getElementType();
  Type compute = computeType(node, element);
  auto c = [&](double v) { return node.scalar(compute, v); };
  double offset = halfPixel ? 0.5 : 0.0;

  // The sampling grid of every region's bins: gridH x gridW points, the same
  // for every region unless sampling_ratio is 0.
  SmallVector<int64_t> gridH(numRois, ratio), gridW(numRois, ratio);
  if (ratio == 0 && failed(adaptiveGrid(node, compute, spatialScale, offset,
                                        !halfPixel, outH, outW, gridH, gridW)))
    return failure();
  int64_t maxH = std::max<int64_t>(1, *llvm::max_element(gridH));
  int64_t maxW = std::max<int64_t>(1, *llvm::max_element(gridW));
  int64_t samples = maxH * maxW;
  bool uniform = llvm::all_equal(gridH) && llvm::all_equal(gridW) &&
                 gridH.front() == maxH && gridW.front() == maxW;

  // Region corners in pixels, [R, 1, 1, 1] each.
  Value box = node.create<SubOp>(
      node.create<MulOp>(node.cast(rois, compute), c(spatialScale)), c(offset));
  auto corner = [&](int64_t i) {
    return node.reshape(lastComponent(node, box, i), {numRois, 1, 1, 1});
  };
  Value startW = corner(0), startH = corner(1);
  Value roiW = node.create<SubOp>(corner(2), startW);
  Value roiH = node.create<SubOp>(corner(3), startH);
  if (!halfPixel) { // malformed regions become 1 x 1
    roiW = node.create<MaxOp>(roiW, c(1));
    roiH = node.create<MaxOp>(roiH, c(1));
  }
  Value binH = node.create<DivOp>(roiH, c((double)outH));
  Value binW = node.create<DivOp>(roiW, c((double)outW));

  // Sample s of a bin is grid point (s / maxW, s % maxW).
  SmallVector<double> iy, ix;
  for (int64_t s = 0; s < samples; ++s) {
    iy.push_back((double)(s / maxW) + 0.5);
    ix.push_back((double)(s % maxW) + 0.5);
  }
  auto perRoi = [&](ArrayRef<int64_t> values) {
    return floatTensor(node, {numRois, 1, 1, 1}, compute,
                       llvm::map_to_vector(values, [](int64_t v) {
                         return (double)std::max<int64_t>(v, 1);
                       }));
  };
  auto ramp = [&](int64_t count, ArrayRef<int64_t> shape) {
    SmallVector<double> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back((double)i);
    return floatTensor(node, shape, compute, values);
  };
  // start + bin index * bin + (grid point + 0.5) * bin / grid:
  // y [R, outH, 1, S], x [R, 1, outW, S].
  Value y = node.create<AddOp>(
      node.create<AddOp>(startH,
                         node.create<MulOp>(ramp(outH, {1, outH, 1, 1}), binH)),
      node.create<DivOp>(
          node.create<MulOp>(floatTensor(node, {1, 1, 1, samples}, compute, iy),
                             binH),
          perRoi(gridH)));
  Value x = node.create<AddOp>(
      node.create<AddOp>(startW,
                         node.create<MulOp>(ramp(outW, {1, 1, outW, 1}), binW)),
      node.create<DivOp>(
          node.create<MulOp>(floatTensor(node, {1, 1, 1, samples}, compute, ix),
                             binW),
          perRoi(gridW)));

  // Bilinear taps: a sample more than a pixel outside the image reads
  // nothing; the others are clamped into it. Per axis: the low and high
  // positions [.., 2] and their weights (1 - frac, frac).
  OpBuilder &b = node.builder();
  auto axis = [&](Value v, int64_t size, Value &positions, Value &weights,
                  Value &inside, int64_t at) {
    double last = (double)(size - 1);
    inside = node.create<AndOp>(node.create<GreaterEqualOp>(v, c(-1)),
                                node.create<LessEqualOp>(v, c((double)size)));
    Value clamped =
        node.create<ClipOp>(v, b.getF64FloatAttr(0.0), b.getF64FloatAttr(last));
    Value low = node.create<FloorOp>(clamped);
    Value high = node.create<MinOp>(node.create<AddOp>(low, c(1)), c(last));
    Value frac = node.create<SubOp>(clamped, low);
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    SmallVector<int64_t> one(shape);
    one.append({1, 1});
    positions = node.create<ConcatOp>(
        ValueRange{node.reshape(low, one), node.reshape(high, one)},
        int64_t(4 + at));
    weights = node.create<ConcatOp>(
        ValueRange{node.reshape(node.create<SubOp>(c(1), frac), one),
                   node.reshape(frac, one)},
        int64_t(4 + at));
  };
  Value posY, weightY, insideY, posX, weightX, insideX;
  axis(y, height, posY, weightY, insideY, 0); // [R, outH, 1, S, 2, 1]
  axis(x, width, posX, weightX, insideX, 1);  // [R, 1, outW, S, 1, 2]
  Value inside = node.reshape(node.create<AndOp>(insideY, insideX),
                              {numRois, outH, outW, samples, 1, 1});
  Value weights =
      node.create<SelectOp>(inside, node.create<MulOp>(weightY, weightX), c(0));

  // Row numbers batch * H * W + y * W + x; batch indices are clamped into
  // the batch (ONNX leaves others undefined).
  Type i64 = b.getI64Type();
  Value batch = node.cast(node.input(2), i64);
  batch = node.create<MinOp>(node.create<MaxOp>(batch, node.scalar(i64, 0)),
                             node.scalar(i64, n - 1));
  batch =
      node.reshape(node.create<MulOp>(batch, node.scalar(i64, height * width)),
                   {numRois, 1, 1, 1, 1, 1});
  Value rows = node.create<AddOp>(
      node.create<AddOp>(
          node.create<MulOp>(node.cast(posY, i64), node.scalar(i64, width)),
          node.cast(posX, i64)),
      batch); // [R, outH, outW, S, 2, 2]
  Value taps = node.create<GatherOp>(pixelRows(node, image, compute), rows,
                                     int64_t(0)); // [.., S, 2, 2, C]
  SmallVector<int64_t> weightShape = {numRois, outH, outW, samples, 2, 2, 1};
  Value weighted = node.create<MulOp>(taps, node.reshape(weights, weightShape));
  DenseI64ArrayAttr sampleAxes = b.getDenseI64ArrayAttr({3, 4, 5});
  Value pooled;
  if (maxMode) {
    // The largest weighted tap of any sample; grid points past a region's
    // own grid (sampling_ratio 0) take no part, and a region without any
    // gives 0.
    if (!uniform) {
      SmallVector<bool> used;
      for (int64_t r = 0; r < numRois; ++r)
        for (int64_t s = 0; s < samples; ++s)
          used.push_back(s / maxW < gridH[r] && s % maxW < gridW[r]);
      auto maskType = RankedTensorType::get({numRois, 1, 1, samples, 1, 1, 1},
                                            b.getI1Type());
      Value mask = ConstantOp::create(
          b, node.loc(), DenseElementsAttr::get(maskType, ArrayRef(used)));
      weighted = node.create<SelectOp>(mask, weighted, c(-INFINITY));
    }
    pooled =
        node.create<ReduceMaxOp>(weighted, sampleAxes, b.getBoolAttr(false));
    if (!uniform) {
      SmallVector<bool> empty;
      for (int64_t r = 0; r < numRois; ++r)
        empty.push_back(gridH[r] == 0 || gridW[r] == 0);
      if (llvm::is_contained(empty, true)) {
        auto emptyType =
            RankedTensorType::get({numRois, 1, 1, 1}, b.getI1Type());
        Value none = ConstantOp::create(
            b, node.loc(), DenseElementsAttr::get(emptyType, ArrayRef(empty)));
        pooled = node.create<SelectOp>(none, c(0), pooled);
      }
    }
  } else {
    // The sum over the samples divided by their number (at least 1); grid
    // points past a region's own grid have no weight.
    if (!uniform) {
      SmallVector<double> used;
      for (int64_t r = 0; r < numRois; ++r)
        for (int64_t s = 0; s < samples; ++s)
          used.push_back(s / maxW < gridH[r] && s % maxW < gridW[r] ? 1 : 0);
      weighted = node.create<MulOp>(
          weighted,
          floatTensor(node, {numRois, 1, 1, samples, 1, 1, 1}, compute, used));
    }
    SmallVector<int64_t> counts;
    for (int64_t r = 0; r < numRois; ++r)
      counts.push_back(std::max<int64_t>(gridH[r] * gridW[r], 1));
    Value count = perRoi(counts);
    pooled = node.create<DivOp>(
        node.create<ReduceSumOp>(weighted, sampleAxes, b.getBoolAttr(false)),
        count);
  }
  node.setOutput(
      0, node.cast(channelsFirst(node, pooled, {numRois, channels, outH, outW}),
                   element));
  return success();
}

void onnx_import::registerSamplingPatterns(PatternRegistry &r) {
  r.add("GridSample", 16, convertGridSample);
  r.add("GridSample", 20, convertGridSample);
  r.add("RoiAlign", 10, convertRoiAlign);
  r.add("RoiAlign", 16, convertRoiAlign);
}
