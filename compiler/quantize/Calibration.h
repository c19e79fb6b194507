//===- Calibration.h - post-training quantization: data and ranges -*- C++ -*-===//
//
// Calibration runs a float model, compiled for the CPU by Kiln itself with the
// activations to quantize as extra outputs (ImportOptions::observeQuantizable),
// on sample inputs, and turns what it sees into one range per activation
// (minmax, percentile, entropy or MSE). The ranges are kept in a calibration
// table (JSON) that later compiles reuse; the importer quantizes each
// activation with the parameters derived from its range. Validation runs the
// float and the quantized artifacts on held-back samples and says what the
// quantization cost.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_QUANTIZE_CALIBRATION_H
#define KILN_COMPILER_QUANTIZE_CALIBRATION_H

#include "import/onnx/OnnxImporter.h"
#include "quantize/CalibrationData.h"
#include "kiln/runtime.hpp"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::quantize {

struct CalibrationOptions {
  Method method = Method::MinMax;
  double percentile = 99.999; // Method::Percentile
  int bins = 2048;            // histogram bins over [0, max |x|]
  /// Called with (sample index, sample count, pass) as calibration goes.
  std::function<void(size_t, size_t, int)> progress;
};

/// Runs `session` (whose outputs include the float32 tensors `observed`) on
/// every sample and fills `table.tensors` (in `observed` order), `samples`
/// and `method`. False with `error`.
bool calibrate(Session &session, const std::vector<std::string> &observed,
               const std::vector<Sample> &samples, const CalibrationOptions &options,
               Table &table, std::string &error);

/// The clipping threshold of a histogram of |x| (`counts` over bins of
/// `width`) by `method` for `levels` quantization levels over [0, T]:
/// exposed for the unit tests.
double threshold(const std::vector<double> &counts, double width, Method method,
                 double percentile, int levels);

/// The uint8 asymmetric quantization of a range (widened to include 0).
onnx_import::ImportOptions::Quantization activationQuantization(const TensorRange &range);

/// What quantization cost on one model output.
struct OutputReport {
  std::string name;
  double cosine = 1;      // worst over the samples
  double meanCosine = 1;  // mean over the samples
  int64_t samples = 0;
  double maxAbsError = 0; // over the samples
  int64_t top1Agree = -1, top1Total = 0; // rank-2 [N, C > 1] outputs only
};

/// Runs `reference` (the float model; extra outputs ignored) and `quantized`
/// on `samples` and compares their outputs of the same name, per element.
bool compareOutputs(Session &reference, Session &quantized, const std::vector<Sample> &samples,
                    std::vector<OutputReport> &report, std::string &error);

/// The outputs of `reference` on each of `samples`, in order.
bool referenceOutputs(Session &reference, const std::vector<Sample> &samples,
                      std::vector<std::vector<Tensor>> &outputs, std::string &error);

/// Runs `sensitivity` (a shadowQuantized build whose module listed `nodes`
/// as shadowed) with node i's gate at `gates[i]` (1: quantized, 0: float) on
/// `samples` and compares its model outputs with `expected` (the float
/// model's, per sample).
bool compareGated(Session &sensitivity, const std::vector<std::string> &nodes,
                  const std::vector<float> &gates, const std::vector<Sample> &samples,
                  const std::vector<std::vector<Tensor>> &expected,
                  std::vector<OutputReport> &report, std::string &error);

/// What quantizing one node costs: on its own, its output from the float
/// activation against its output from the quantized one, with the float
/// model's input (ImportOptions::shadowQuantized); and on the model's
/// outputs, with only that node quantized.
struct LayerReport {
  std::string node;
  /// Signal to quantization noise, 10 log10(sum y^2 / sum (y - y_q)^2) over
  /// every element of every sample, in dB; +infinity when y_q == y.
  double sqnr = 0;
  /// The lowest mean cosine (over the samples) of any model output against
  /// the float model's with only this node quantized (NaN: not measured).
  /// The mean, not the worst sample: a layer's share of the error, steadier
  /// than one sample's.
  double cosineAlone = NAN;
};

/// Runs `session` (a shadowQuantized build whose module listed `nodes` as
/// shadowed) with every gate 0 on `samples` and fills `layers` in `nodes`
/// order.
bool layerSqnr(Session &session, const std::vector<std::string> &nodes,
               const std::vector<Sample> &samples, std::vector<LayerReport> &layers,
               std::string &error);

/// The worst cosine over `report` (1 when it is empty).
double worstCosine(const std::vector<OutputReport> &report);
/// The lowest mean cosine over `report` (1 when it is empty).
double worstMeanCosine(const std::vector<OutputReport> &report);

} // namespace kiln::quantize

#endif // KILN_COMPILER_QUANTIZE_CALIBRATION_H
