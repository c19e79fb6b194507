//===- Spectral.cpp - ONNX DFT, STFT and MelWeightMatrix -> kiln ----------===//
//
// A DFT of static length is a matrix product: the signal, seen as rows of
// [n, real/imag] pairs, times a constant [n * c, bins * 2] matrix of cosines
// and sines computed here in double precision (one kiln.matmul, exact to the
// rounding of the product; no FFT). DFT (opset 17: axis an attribute; 20:
// an input) moves its axis next to the real/imaginary dimension, multiplies
// and moves it back. STFT gathers the
// frames with a constant index tensor, multiplies them by the window and
// takes the same product. MelWeightMatrix depends only on its scalar inputs,
// which must be constants: the whole matrix is computed here.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"

#include "onnx/onnx_pb.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The largest DFT matrix built at compile time, in elements (a 2048-point
/// complex transform; 64 MB of f32).
static constexpr int64_t kMaxDftMatrixElements = int64_t(1) << 24;

/// The most samples STFT's frames hold together (the gather's constant
/// index tensor has one entry per sample).
static constexpr int64_t kMaxFrameIndices = int64_t(1) << 24;

/// The largest MelWeightMatrix computed at compile time, in elements.
static constexpr int64_t kMaxMelElements = int64_t(1) << 20;

/// The one scalar of integer constant input `i` ('what'), or failure after
/// a diagnostic.
static FailureOr<int64_t> scalarInt(NodeContext &node, unsigned i,
                                    StringRef what) {
  auto values = node.constantInts(i, what);
  if (failed(values))
    return failure();
  if (values->size() != 1) {
    node.emitError() << what << " must be a scalar, got " << values->size()
                     << " values";
    return failure();
  }
  return values->front();
}

/// cos and sin of 2 pi r / n for 0 <= r < n, exact at the quarter turns
/// (so that the matrix has zeros where the transform has them).
static std::pair<double, double> unitRoot(int64_t r, int64_t n) {
  if ((4 * r) % n == 0) {
    static const double quarterCos[] = {1, 0, -1, 0};
    int64_t quarter = 4 * r / n;
    return {quarterCos[quarter], quarterCos[(quarter + 3) % 4]};
  }
  double angle = 2 * M_PI * (double)r / (double)n;
  return {std::cos(angle), std::sin(angle)};
}

/// The DFT of `x`, a tensor [..., n, c] of c = 1 (real) or 2 (complex,
/// real then imaginary) parts, along n with `length` points (x cut to
/// `length` samples or implicitly zero-padded to it): the first `bins`
/// frequencies, [..., bins, 2], in x's element type. Computed in f64 for f64
/// inputs and in f32 otherwise. Failure after a diagnostic when the matrix
/// would be too large.
static FailureOr<Value> dftLastAxes(NodeContext &node, Value x, int64_t length,
                                    int64_t bins, bool inverse) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t rank = type.getRank(), parts = shape[rank - 1];
  if (shape[rank - 2] > length) {
    SmallVector<int64_t> starts(rank, 0), ends(shape), steps(rank, 1);
    ends[rank - 2] = length;
    x = node.create<SliceOp>(x, starts, ends, steps);
    shape[rank - 2] = length;
  }
  int64_t samples = shape[rank - 2];
  int64_t elements = samples * parts * bins * 2;
  if (elements > kMaxDftMatrixElements) {
    node.emitError() << "a DFT of " << length << " points on " << samples
                     << (parts == 2 ? " complex" : " real")
                     << " samples needs a matrix of " << elements
                     << " elements, more than the " << kMaxDftMatrixElements
                     << " Kiln builds";
    return failure();
  }
  Type element = type.getElementType();
  OpBuilder &b = node.builder();
  Type compute = element.isF64() ? Type(b.getF64Type()) : Type(b.getF32Type());
  // Row (t, part), column (k, re/im): x[t] * exp(sign * 2 pi i k t / length)
  // scaled by 1 / length when inverse.
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / length : 1.0;
  SmallVector<double> matrix(elements);
  for (int64_t t = 0; t < samples; ++t)
    for (int64_t k = 0; k < bins; ++k) {
      auto [cosine, sine] = unitRoot((k * t) % length, length);
      double c = scale * cosine, s = scale * sign * sine;
      int64_t re = (t * parts) * bins * 2 + k * 2;
      // (0.0 - x, not -x: no negative zeros in the matrix.)
      matrix[re] = c;
      matrix[re + 1] = 0.0 + s;
      if (parts == 2) {
        int64_t im = re + bins * 2;
        matrix[im] = 0.0 - s;
        matrix[im + 1] = c;
      }
    }
  auto matrixType = RankedTensorType::get({samples * parts, bins * 2}, compute);
  DenseElementsAttr values;
  if (compute.isF64()) {
    values = DenseElementsAttr::get(matrixType, ArrayRef<double>(matrix));
  } else {
    SmallVector<float> narrowed(matrix.begin(), matrix.end());
    values = DenseElementsAttr::get(matrixType, ArrayRef<float>(narrowed));
  }
  Value weights = ConstantOp::create(b, node.loc(), values);
  ArrayRef<int64_t> outer = ArrayRef<int64_t>(shape).drop_back(2);
  Value rows = node.reshape(node.cast(x, compute),
                            {computeProduct(outer), samples * parts});
  Value product = node.create<MatmulOp>(rows, weights);
  SmallVector<int64_t> resultShape(outer);
  resultShape.append({bins, 2});
  return node.cast(node.reshape(product, resultShape), element);
}

/// A floating-point input `i` whose last dimension is 1 or 2 (real or
/// complex) and of rank >= `minRank`, or null after a diagnostic.
static Value signalInput(NodeContext &node, unsigned i, int64_t minRank) {
  Value x = node.input(i);
  auto type = cast<RankedTensorType>(x.getType());
  if (!isa<FloatType>(type.getElementType()) || type.getRank() < minRank ||
      (type.getShape().back() != 1 && type.getShape().back() != 2)) {
    node.emitError() << "expected a floating-point tensor of rank >= "
                     << minRank
                     << " whose last dimension is 1 (real) or 2 (complex), got "
                     << type;
    return Value();
  }
  return x;
}

/// DFT: along `axis` (not the last, real/imaginary dimension; opset 17 an
/// attribute, default 1; from opset 20 input 2, a constant, default -2),
/// dft_length points (input 1, a constant; default the axis size), forward
/// or inverse, the first floor(n / 2) + 1 bins when `onesided` (real input,
/// forward only).
static LogicalResult convertDft(NodeContext &node, bool axisInput) {
  Value x = signalInput(node, 0, 2);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  int64_t axisValue = axisInput ? -2 : node.intAttr("axis", 1);
  if (axisInput && node.hasInput(2)) {
    auto given = scalarInt(node, 2, "axis");
    if (failed(given))
      return failure();
    axisValue = *given;
  }
  auto axis = node.normalizeAxis(axisValue, rank);
  if (failed(axis))
    return failure();
  if (*axis == rank - 1) {
    node.emitError() << "axis " << *axis
                     << " is the real/imaginary dimension, not a signal one";
    return failure();
  }
  int64_t length = type.getShape()[*axis];
  if (node.hasInput(1)) {
    auto given = scalarInt(node, 1, "dft_length");
    if (failed(given))
      return failure();
    length = *given;
  }
  if (length < 1) {
    node.emitError() << "dft_length must be positive, got " << length;
    return failure();
  }
  bool inverse = node.intAttr("inverse", 0) != 0;
  bool onesided = node.intAttr("onesided", 0) != 0;
  bool complex = type.getShape().back() == 2;
  if (onesided && (complex || inverse)) {
    node.emitError() << "onesided is only defined for a forward DFT of a real "
                        "input (this one is "
                     << (inverse ? "inverse" : "of a complex input") << ")";
    return failure();
  }
  int64_t bins = onesided ? length / 2 + 1 : length;
  // [..., axis, ..., c] -> [..., ..., axis, c] and back.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != *axis)
      perm.push_back(d);
  perm.append({*axis, rank - 1});
  bool moved = *axis != rank - 2;
  if (moved)
    x = node.create<TransposeOp>(x, perm);
  FailureOr<Value> y = dftLastAxes(node, x, length, bins, inverse);
  if (failed(y))
    return failure();
  Value result = *y;
  if (moved)
    result = node.create<TransposeOp>(result, invertPermutationVector(perm));
  node.setOutput(0, result);
  return success();
}

/// STFT (opset 17): frames of frame_length samples (input 3, or the
/// window's length) every frame_step samples (input 1; both constants),
/// each multiplied by the window (input 2, default rectangular) and
/// transformed; [batch, frames, bins, 2] with frame_length / 2 + 1 bins
/// when `onesided` (the default; real signals only).
static LogicalResult convertStft(NodeContext &node) {
  Value signal = signalInput(node, 0, 3);
  if (!signal)
    return failure();
  auto type = cast<RankedTensorType>(signal.getType());
  if (type.getRank() != 3) {
    node.emitError() << "the signal must be [batch, length, 1 or 2], got "
                     << type;
    return failure();
  }
  auto step = scalarInt(node, 1, "frame_step");
  if (failed(step))
    return failure();
  if (*step < 1) {
    node.emitError() << "frame_step must be positive, got " << *step;
    return failure();
  }
  Value window = node.input(2);
  int64_t frameLength = 0;
  if (window) {
    auto windowType = node.inputType(2);
    if (windowType.getRank() != 1 ||
        !isa<FloatType>(windowType.getElementType())) {
      node.emitError() << "the window must be a floating-point vector, got "
                       << windowType;
      return failure();
    }
    frameLength = windowType.getShape()[0];
  }
  if (node.hasInput(3)) {
    auto given = scalarInt(node, 3, "frame_length");
    if (failed(given))
      return failure();
    if (window && *given != frameLength) {
      node.emitError() << "frame_length " << *given
                       << " differs from the window's length " << frameLength;
      return failure();
    }
    frameLength = *given;
  } else if (!window) {
    node.emitError() << "needs a window or a frame_length";
    return failure();
  }
  int64_t signalLength = type.getShape()[1];
  if (frameLength < 1 || frameLength > signalLength) {
    node.emitError() << "frame length " << frameLength
                     << " is not in [1, " << signalLength
                     << "], the signal's length";
    return failure();
  }
  bool complex = type.getShape()[2] == 2;
  bool onesided = node.intAttr("onesided", 1) != 0;
  if (onesided && complex) {
    node.emitError() << "onesided is only defined for a real signal";
    return failure();
  }
  int64_t frames = (signalLength - frameLength) / *step + 1;
  if (frames * frameLength > kMaxFrameIndices) {
    node.emitError() << frames << " frames of " << frameLength
                     << " samples are more than the " << kMaxFrameIndices
                     << " samples Kiln gathers";
    return failure();
  }
  // Frame f, sample t is signal sample f * step + t.
  SmallVector<int64_t> indices;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frameLength; ++t)
      indices.push_back(f * *step + t);
  OpBuilder &b = node.builder();
  auto indexType = RankedTensorType::get({frames, frameLength}, b.getI64Type());
  Value positions = ConstantOp::create(
      b, node.loc(), DenseElementsAttr::get(indexType, ArrayRef(indices)));
  Value framed =
      node.create<GatherOp>(signal, positions, b.getI64IntegerAttr(1));
  if (window)
    framed = node.create<MulOp>(
        framed, node.reshape(node.cast(window, type.getElementType()),
                             {frameLength, 1}));
  FailureOr<Value> y = dftLastAxes(node, framed, frameLength,
                                   onesided ? frameLength / 2 + 1 : frameLength,
                                   /*inverse=*/false);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

/// `v` printed as %g does (8000, not 8.000000e+03).
static std::string shortest(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

/// MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangular
/// filters, evenly spaced on the mel scale mel(f) = 2595 log10(1 + f / 700)
/// between lower_edge_hertz and upper_edge_hertz, their corners rounded down
/// to DFT bins (ONNX's reference definition). All five inputs must be
/// constants; the matrix is computed here.
static LogicalResult convertMelWeightMatrix(NodeContext &node) {
  static const char *const names[] = {"num_mel_bins", "dft_length",
                                      "sample_rate", "lower_edge_hertz",
                                      "upper_edge_hertz"};
  bool missing = false;
  for (unsigned i = 0; i < 5; ++i)
    if (!node.constantInput(i)) {
      node.notConstant(i, names[i], "a scalar constant");
      missing = true;
    }
  if (missing)
    return failure();
  int64_t ints[3];
  for (unsigned i = 0; i < 3; ++i) {
    auto value = scalarInt(node, i, names[i]);
    if (failed(value))
      return failure();
    if (*value < 1) {
      node.emitError() << names[i] << " must be positive, got " << *value;
      return failure();
    }
    ints[i] = *value;
  }
  double edges[2];
  for (unsigned i = 3; i < 5; ++i) {
    auto value = node.constantFloats(i, names[i]);
    if (failed(value))
      return failure();
    if (value->size() != 1) {
      node.emitError() << names[i] << " must be a scalar, got "
                       << value->size() << " values";
      return failure();
    }
    edges[i - 3] = value->front();
  }
  auto [melBins, dftLength, sampleRate] = std::tuple(ints[0], ints[1], ints[2]);
  auto [lower, upper] = std::pair(edges[0], edges[1]);
  if (!(lower >= 0 && lower < upper)) {
    node.emitError() << "the edges must satisfy 0 <= lower_edge_hertz < "
                        "upper_edge_hertz, got "
                     << shortest(lower) << " and " << shortest(upper);
    return failure();
  }
  int64_t spectrumBins = dftLength / 2 + 1;
  if (spectrumBins * melBins > kMaxMelElements) {
    node.emitError() << "a " << spectrumBins << " x " << melBins
                     << " matrix is more than the " << kMaxMelElements
                     << " elements Kiln computes at compile time";
    return failure();
  }
  FailureOr<Type> element = node.dataType(
      node.intAttr("output_datatype", onnx::TensorProto::FLOAT),
      "attribute 'output_datatype'");
  if (failed(element))
    return failure();
  // The filters' corners: num_mel_bins + 2 points evenly spaced in mel
  // (the step is the range over the number of points, as ONNX defines it),
  // back in hertz, as DFT bins.
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double low = mel(lower), step = (mel(upper) - low) / (double)(melBins + 2);
  SmallVector<int64_t> corners;
  for (int64_t i = 0; i < melBins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (low + i * step) / 2595) - 1);
    corners.push_back(
        (int64_t)std::floor((double)(dftLength + 1) * hz / (double)sampleRate));
  }
  SmallVector<double> matrix(spectrumBins * melBins, 0.0);
  bool outside = false;
  auto set = [&](int64_t bin, int64_t filter, double value) {
    if (bin < 0 || bin >= spectrumBins)
      outside = true;
    else
      matrix[bin * melBins + filter] = value;
  };
  for (int64_t i = 0; i < melBins; ++i) {
    int64_t left = corners[i], center = corners[i + 1], right = corners[i + 2];
    if (center == left)
      set(center, i, 1.0);
    else
      for (int64_t j = left; j <= center; ++j)
        set(j, i, (double)(j - left) / (double)(center - left));
    for (int64_t j = center; j < right; ++j)
      set(j, i, (double)(right - j) / (double)(right - center));
  }
  if (outside) {
    node.emitError() << "upper_edge_hertz " << shortest(upper)
                     << " lies above the "
                     << spectrumBins << " bins of a " << dftLength
                     << "-point DFT at " << sampleRate << " Hz";
    return failure();
  }
  OpBuilder &b = node.builder();
  SmallVector<Attribute> values;
  for (double v : matrix)
    values.push_back(isa<FloatType>(*element)
                         ? Attribute(b.getFloatAttr(*element, v))
                         : Attribute(b.getIntegerAttr(*element, (int64_t)v)));
  auto type = RankedTensorType::get({spectrumBins, melBins}, *element);
  node.setOutput(0, ConstantOp::create(b, node.loc(),
                                       DenseElementsAttr::get(type, values)));
  return success();
}

void onnx_import::registerSpectralPatterns(PatternRegistry &r) {
  r.add("DFT", 17, [](NodeContext &n) { return convertDft(n, false); });
  r.add("DFT", 20, [](NodeContext &n) { return convertDft(n, true); });
  r.add("STFT", 17, convertStft);
  r.add("MelWeightMatrix", 17, convertMelWeightMatrix);
}
