//===- CalibrationTest.cpp - the calibration methods on known histograms --===//
//
// Each method's threshold on histograms whose answer is known by
// construction, and the activation parameters of a range.
//
//===----------------------------------------------------------------------===//

#include "quantize/Calibration.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln::quantize;

namespace {

// 100 bins of width 0.01: 99 % of the mass spread evenly over [0, 0.5), and
// one far outlier bin at [0.99, 1.0).
std::vector<double> bulkAndOutlier() {
  std::vector<double> counts(100, 0);
  for (int i = 0; i < 50; ++i)
    counts[i] = 99 * 20; // 99,000 in the bulk
  counts[99] = 1000;
  return counts;
}

TEST(Calibration, PercentileIsTheBinWhereTheMassIsReached) {
  std::vector<double> counts(100, 1); // uniform over [0, 1)
  EXPECT_NEAR(threshold(counts, 0.01, Method::Percentile, 50, 256), 0.50, 1e-12);
  EXPECT_NEAR(threshold(counts, 0.01, Method::Percentile, 99.5, 256), 1.00, 1e-12);
  // The outlier holds the last 1 %: 99 % of the mass lies within [0, 0.5).
  EXPECT_NEAR(threshold(bulkAndOutlier(), 0.01, Method::Percentile, 99, 256), 0.50, 1e-12);
  EXPECT_NEAR(threshold(bulkAndOutlier(), 0.01, Method::Percentile, 99.99, 256), 1.00, 1e-12);
}

// A Laplacian bulk (as activations look) decaying over [0, 0.4) and one far
// outlier bin at [0.99, 1.0).
std::vector<double> laplacianAndOutlier() {
  std::vector<double> counts(100, 0);
  for (int i = 0; i < 40; ++i)
    counts[i] = std::floor(10000 * std::exp(-i / 6.0));
  counts[99] = 3;
  return counts;
}

TEST(Calibration, EntropyAndMseClipAFarOutlierButNotAUniformRange) {
  double entropy = threshold(laplacianAndOutlier(), 0.01, Method::Entropy, 0, 16);
  double mse = threshold(laplacianAndOutlier(), 0.01, Method::Mse, 0, 16);
  EXPECT_LT(entropy, 0.5) << "entropy kept the outlier";
  EXPECT_GE(entropy, 0.16) << "entropy clipped the bulk";
  EXPECT_LT(mse, 0.5) << "mse kept the outlier";
  EXPECT_GE(mse, 0.1) << "mse clipped the bulk";
  // Negative control: a uniform histogram has nothing worth clipping.
  std::vector<double> uniform(100, 1);
  EXPECT_NEAR(threshold(uniform, 0.01, Method::Entropy, 0, 16), 1.0, 0.05);
  EXPECT_NEAR(threshold(uniform, 0.01, Method::Mse, 0, 16), 1.0, 0.05);
}

TEST(Calibration, EmptyHistogramHasNoThreshold) {
  EXPECT_EQ(threshold(std::vector<double>(16, 0), 0.1, Method::Entropy, 0, 8), 0);
}

TEST(Calibration, ActivationParametersCoverTheRangeAndZero) {
  TensorRange r;
  r.lo = -1.0;
  r.hi = 3.0;
  auto q = activationQuantization(r);
  EXPECT_FALSE(q.isSigned);
  EXPECT_FLOAT_EQ(static_cast<float>(q.scale), 4.0f / 255.0f);
  EXPECT_EQ(q.zeroPoint, 64); // round(1 / (4 / 255)) = round(63.75)
  // A range that excludes 0 is widened to include it: [2, 5] -> [0, 5].
  r.lo = 2.0;
  r.hi = 5.0;
  q = activationQuantization(r);
  EXPECT_FLOAT_EQ(static_cast<float>(q.scale), 5.0f / 255.0f);
  EXPECT_EQ(q.zeroPoint, 0);
  // All zeros: scale 1, never a division by zero.
  r.lo = r.hi = 0;
  q = activationQuantization(r);
  EXPECT_EQ(q.scale, 1.0);
  EXPECT_EQ(q.zeroPoint, 0);
}

} // namespace
