//===- Calibration.cpp - post-training quantization: data and ranges ------===//

#include "quantize/Calibration.h"

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using namespace kiln;
using namespace kiln::quantize;

//===----------------------------------------------------------------------===//
// Ranges
//===----------------------------------------------------------------------===//

namespace {

const float *floats(const Tensor &t) { return reinterpret_cast<const float *>(t.data.data()); }

/// The output of `outputs` named `name`, or null.
const Tensor *findOutput(const std::vector<Tensor> &outputs, const std::string &name) {
  for (const Tensor &t : outputs)
    if (t.name == name)
      return &t;
  return nullptr;
}

/// KL(P || Q) of two unnormalized histograms, Q smoothed where P has mass.
double divergence(const std::vector<double> &p, const std::vector<double> &q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp == 0 || sq == 0)
    return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0)
      continue;
    double pi = p[i] / sp, qi = std::max(q[i] / sq, 1e-12);
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

} // namespace

double quantize::threshold(const std::vector<double> &counts, double width, Method method,
                           double percentile, int levels) {
  const int bins = static_cast<int>(counts.size());
  double total = 0;
  for (double c : counts)
    total += c;
  if (total == 0 || bins == 0)
    return 0;
  if (method == Method::Percentile) {
    double target = total * percentile / 100.0, cumulative = 0;
    for (int i = 0; i < bins; ++i) {
      cumulative += counts[i];
      if (cumulative >= target)
        return (i + 1) * width;
    }
    return bins * width;
  }
  if (method == Method::Entropy) {
    // The threshold whose quantized distribution (levels bins, the mass
    // past it clipped into the last bin) is closest to the histogram.
    double best = std::numeric_limits<double>::infinity();
    int bestBins = bins;
    for (int i = std::min(levels, bins); i <= bins; ++i) {
      std::vector<double> p(counts.begin(), counts.begin() + i);
      double outliers = 0;
      for (int j = i; j < bins; ++j)
        outliers += counts[j];
      p.back() += outliers;
      std::vector<double> q(i, 0);
      for (int level = 0; level < levels; ++level) {
        int begin = static_cast<int>(int64_t(level) * i / levels);
        int end = static_cast<int>(int64_t(level + 1) * i / levels);
        double mass = 0;
        int nonzero = 0;
        for (int j = begin; j < end; ++j) {
          mass += counts[j];
          nonzero += counts[j] != 0;
        }
        for (int j = begin; j < end; ++j)
          if (counts[j] != 0)
            q[j] = mass / nonzero;
      }
      double kl = divergence(p, q);
      if (kl < best) {
        best = kl;
        bestBins = i;
      }
    }
    return bestBins * width;
  }
  if (method == Method::Mse) {
    // The threshold with the least expected squared error: rounding inside
    // [0, T] and clipping beyond it, each bin at its centre.
    double best = std::numeric_limits<double>::infinity(), bestT = bins * width;
    for (int i = 1; i <= bins; ++i) {
      double t = i * width, step = t / (levels - 1), error = 0;
      for (int j = 0; j < bins; ++j) {
        if (counts[j] == 0)
          continue;
        double x = (j + 0.5) * width;
        double e = x > t ? x - t : x - std::nearbyint(x / step) * step;
        error += counts[j] * e * e;
      }
      if (error < best) {
        best = error;
        bestT = t;
      }
    }
    return bestT;
  }
  return bins * width;
}

bool quantize::calibrate(Session &session, const std::vector<std::string> &observed,
                         const std::vector<Sample> &samples, const CalibrationOptions &options,
                         Table &table, std::string &error) {
  table.method = options.method;
  table.percentile = options.percentile;
  table.samples = static_cast<int64_t>(samples.size());
  table.tensors.assign(observed.size(), TensorRange());
  for (size_t i = 0; i < observed.size(); ++i) {
    table.tensors[i].name = observed[i];
    table.tensors[i].min = std::numeric_limits<double>::infinity();
    table.tensors[i].max = -std::numeric_limits<double>::infinity();
  }
  bool histograms = options.method != Method::MinMax;
  std::vector<std::vector<double>> counts(observed.size(), std::vector<double>(options.bins, 0));
  std::vector<double> widths(observed.size(), 0);
  for (int pass = 1; pass <= (histograms ? 2 : 1); ++pass) {
    for (size_t s = 0; s < samples.size(); ++s) {
      if (options.progress)
        options.progress(s, samples.size(), pass);
      std::vector<Tensor> outputs;
      Status status = session.run(samples[s].inputs, outputs);
      if (!status.ok()) {
        error = "sample '" + samples[s].name + "': " + status.message();
        return false;
      }
      for (size_t i = 0; i < observed.size(); ++i) {
        const Tensor *t = findOutput(outputs, observed[i]);
        if (!t || t->dtype != KILN_DTYPE_F32) {
          error = "the calibration model has no float32 output '" + observed[i] + "'";
          return false;
        }
        const float *data = floats(*t);
        uint64_t n = t->data.size() / 4;
        TensorRange &range = table.tensors[i];
        if (pass == 1) {
          for (uint64_t k = 0; k < n; ++k) {
            if (!std::isfinite(data[k])) {
              error = "sample '" + samples[s].name + "': tensor '" + observed[i] +
                      "' holds a value that is not finite";
              return false;
            }
            range.min = std::min(range.min, double(data[k]));
            range.max = std::max(range.max, double(data[k]));
          }
        } else {
          double width = widths[i];
          if (width == 0)
            continue;
          std::vector<double> &c = counts[i];
          for (uint64_t k = 0; k < n; ++k) {
            int bin = static_cast<int>(std::fabs(data[k]) / width);
            c[std::min(bin, options.bins - 1)] += 1;
          }
        }
      }
    }
    if (pass == 1)
      for (size_t i = 0; i < observed.size(); ++i) {
        TensorRange &range = table.tensors[i];
        double amax = std::max(std::fabs(range.min), std::fabs(range.max));
        widths[i] = amax / options.bins;
      }
  }
  for (size_t i = 0; i < observed.size(); ++i) {
    TensorRange &range = table.tensors[i];
    if (!histograms || widths[i] == 0) {
      range.lo = std::min(range.min, 0.0);
      range.hi = std::max(range.max, 0.0);
      continue;
    }
    // A tensor that is never negative is quantized over [0, T] (256
    // levels), any other over [-T, T] (128 on each side).
    bool nonNegative = range.min >= 0;
    double t = threshold(counts[i], widths[i], options.method, options.percentile,
                         nonNegative ? 256 : 128);
    range.lo = nonNegative ? 0.0 : -t;
    range.hi = t;
  }
  return true;
}

onnx_import::ImportOptions::Quantization quantize::activationQuantization(const TensorRange &range) {
  onnx_import::ImportOptions::Quantization q;
  double lo = std::min(range.lo, 0.0), hi = std::max(range.hi, 0.0);
  if (!(hi - lo > 1e-30)) { // a tensor that is all zeros
    q.scale = 1;
    q.zeroPoint = 0;
    return q;
  }
  // The float32 scale the kernels use, and the zero point that maps lo to 0.
  q.scale = static_cast<float>((hi - lo) / 255.0);
  q.zeroPoint = static_cast<int64_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.0, 255.0));
  q.isSigned = false;
  return q;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

/// Whether `name` is one of a sensitivity build's extra outputs.
bool isShadowOutput(llvm::StringRef name) {
  return name.ends_with(kShadowFloatSuffix) || name.ends_with(kShadowQuantizedSuffix);
}

/// Adds one sample's comparison of `actual` with `expected` to `report`
/// (started from the float outputs of `actual` other than shadow ones).
bool compareSample(const std::vector<Tensor> &actual, const std::vector<Tensor> &expected,
                   std::vector<OutputReport> &report, std::string &error) {
  if (report.empty())
    for (const Tensor &t : actual)
      if (t.dtype == KILN_DTYPE_F32 && !isShadowOutput(t.name)) {
        report.push_back(OutputReport());
        report.back().name = t.name;
      }
  for (OutputReport &r : report) {
    const Tensor *a = findOutput(actual, r.name), *e = findOutput(expected, r.name);
    if (!a || !e || a->data.size() != e->data.size()) {
      error = "output '" + r.name + "' differs in shape between the float and the "
              "quantized model";
      return false;
    }
    const float *x = floats(*a), *y = floats(*e);
    uint64_t n = a->data.size() / 4;
    double dot = 0, xx = 0, yy = 0;
    for (uint64_t k = 0; k < n; ++k) {
      dot += double(x[k]) * y[k];
      xx += double(x[k]) * x[k];
      yy += double(y[k]) * y[k];
      r.maxAbsError = std::max(r.maxAbsError, std::fabs(double(x[k]) - y[k]));
    }
    double cosine = xx == 0 && yy == 0 ? 1.0 : dot / std::sqrt(std::max(xx * yy, 1e-300));
    r.cosine = std::isnan(cosine) || std::isnan(r.cosine) ? NAN : std::min(r.cosine, cosine);
    r.meanCosine = (r.meanCosine * double(r.samples) + cosine) / double(r.samples + 1);
    ++r.samples;
    // Top-1 agreement of a classifier's scores [N, C].
    if (a->shape.size() == 2 && a->shape[1] > 1) {
      int64_t rows = a->shape[0], classes = a->shape[1];
      if (r.top1Agree < 0)
        r.top1Agree = 0;
      for (int64_t row = 0; row < rows; ++row) {
        const float *xr = x + row * classes, *yr = y + row * classes;
        r.top1Agree += std::max_element(xr, xr + classes) - xr ==
                       std::max_element(yr, yr + classes) - yr;
        r.top1Total += 1;
      }
    }
  }
  return true;
}

/// Runs `session` on `sample`, failing with an error that names the sample.
bool runSample(Session &session, const Sample &sample, const std::vector<Tensor> &extra,
               std::vector<Tensor> &outputs, std::string &error) {
  Status status;
  if (extra.empty()) {
    status = session.run(sample.inputs, outputs);
  } else {
    std::vector<Tensor> inputs = sample.inputs;
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    status = session.run(inputs, outputs);
  }
  if (!status.ok()) {
    error = "sample '" + sample.name + "': " + status.message();
    return false;
  }
  return true;
}

/// The gate inputs of a sensitivity build: one [1] float per node.
std::vector<Tensor> gateInputs(const std::vector<std::string> &nodes,
                               const std::vector<float> &gates) {
  std::vector<Tensor> inputs(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    inputs[i].name = nodes[i] + kShadowGateSuffix.str();
    inputs[i].dtype = KILN_DTYPE_F32;
    inputs[i].shape = {1};
    inputs[i].data.resize(sizeof(float));
    std::memcpy(inputs[i].data.data(), &gates[i], sizeof(float));
  }
  return inputs;
}

} // namespace

bool quantize::compareOutputs(Session &reference, Session &quantized,
                              const std::vector<Sample> &samples,
                              std::vector<OutputReport> &report, std::string &error) {
  report.clear();
  for (const Sample &sample : samples) {
    std::vector<Tensor> expected, actual;
    if (!runSample(reference, sample, {}, expected, error) ||
        !runSample(quantized, sample, {}, actual, error) ||
        !compareSample(actual, expected, report, error))
      return false;
  }
  return true;
}

bool quantize::referenceOutputs(Session &reference, const std::vector<Sample> &samples,
                                std::vector<std::vector<Tensor>> &outputs, std::string &error) {
  outputs.assign(samples.size(), {});
  for (size_t i = 0; i < samples.size(); ++i)
    if (!runSample(reference, samples[i], {}, outputs[i], error))
      return false;
  return true;
}

bool quantize::compareGated(Session &sensitivity, const std::vector<std::string> &nodes,
                            const std::vector<float> &gates, const std::vector<Sample> &samples,
                            const std::vector<std::vector<Tensor>> &expected,
                            std::vector<OutputReport> &report, std::string &error) {
  report.clear();
  std::vector<Tensor> extra = gateInputs(nodes, gates);
  for (size_t i = 0; i < samples.size(); ++i) {
    std::vector<Tensor> actual;
    if (!runSample(sensitivity, samples[i], extra, actual, error) ||
        !compareSample(actual, expected[i], report, error))
      return false;
  }
  return true;
}

bool quantize::layerSqnr(Session &session, const std::vector<std::string> &nodes,
                         const std::vector<Sample> &samples, std::vector<LayerReport> &layers,
                         std::string &error) {
  std::vector<double> signal(nodes.size(), 0), noise(nodes.size(), 0);
  // Every gate 0: the graph goes on from the float copies.
  std::vector<Tensor> gates = gateInputs(nodes, std::vector<float>(nodes.size(), 0.0f));
  for (const Sample &sample : samples) {
    std::vector<Tensor> outputs;
    if (!runSample(session, sample, gates, outputs, error))
      return false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Tensor *real = findOutput(outputs, nodes[i] + kiln::kShadowFloatSuffix.str());
      const Tensor *quantized = findOutput(outputs, nodes[i] + kiln::kShadowQuantizedSuffix.str());
      if (!real || !quantized || real->dtype != KILN_DTYPE_F32 ||
          quantized->dtype != KILN_DTYPE_F32 || real->data.size() != quantized->data.size()) {
        error = "node '" + nodes[i] + "': the sensitivity build has no float and quantized "
                "output of it";
        return false;
      }
      const float *y = floats(*real), *q = floats(*quantized);
      for (uint64_t k = 0, n = real->data.size() / 4; k < n; ++k) {
        double d = double(y[k]) - q[k];
        signal[i] += double(y[k]) * y[k];
        noise[i] += std::isfinite(d) ? d * d : std::numeric_limits<double>::infinity();
      }
    }
  }
  layers.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    LayerReport layer;
    layer.node = nodes[i];
    if (noise[i] == 0)
      layer.sqnr = std::numeric_limits<double>::infinity();
    else if (signal[i] == 0 || !std::isfinite(noise[i]))
      layer.sqnr = -std::numeric_limits<double>::infinity();
    else
      layer.sqnr = 10 * std::log10(signal[i] / noise[i]);
    layers.push_back(std::move(layer));
  }
  return true;
}

double quantize::worstCosine(const std::vector<OutputReport> &report) {
  double worst = 1;
  for (const OutputReport &r : report)
    worst = std::isnan(r.cosine) ? -1 : std::min(worst, r.cosine);
  return worst;
}

double quantize::worstMeanCosine(const std::vector<OutputReport> &report) {
  double worst = 1;
  for (const OutputReport &r : report)
    worst = std::isnan(r.meanCosine) ? -1 : std::min(worst, r.meanCosine);
  return worst;
}
