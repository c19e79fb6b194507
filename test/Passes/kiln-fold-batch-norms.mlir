// RUN: kiln-opt %s -split-input-file --kiln-fold-batch-norms | FileCheck %s

// s = scale / sqrt(var + eps) = [4 / sqrt(3 + 1), 3 / sqrt(8 + 1)] = [2, 1]:
// filter channel 0 [1, -1] -> [2, -2], channel 1 [0.5, 2] unchanged; the
// bias (b - mean) s + beta = [(1 - 0.5) 2 + 1, (0 - 1) 1 + 5] = [2, 4].
// CHECK-LABEL: func.func @conv_bias
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[2.000000e+00, -2.000000e+00]]], {{\[}}{{\[}}[5.000000e-01, 2.000000e+00]]]]> : tensor<2x1x1x2xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK: %[[Y:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_norm
// CHECK: return %[[Y]]
func.func @conv_bias(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x2xf32> {
  %w = kiln.constant dense<[[[[1.0, -1.0]]], [[[0.5, 2.0]]]]> : tensor<2x1x1x2xf32>
  %b = kiln.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %scale = kiln.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %beta = kiln.constant dense<[1.0, 5.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %var = kiln.constant dense<[3.0, 8.0]> : tensor<2xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  %y = kiln.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (tensor<1x2x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// -----

// Without a bias the convolution gains one: -mean s + beta = [-1, 1]; a
// splat scale and variance give s = 4 / sqrt(3 + 1) = 2 for every channel.
// CHECK-LABEL: func.func @conv_no_bias
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[2.000000e+00, -2.000000e+00]]], {{\[}}{{\[}}[1.000000e+00, 4.000000e+00]]]]> : tensor<2x1x1x2xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[-1.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK: kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_norm
func.func @conv_no_bias(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x2xf32> {
  %w = kiln.constant dense<[[[[1.0, -1.0]]], [[[0.5, 2.0]]]]> : tensor<2x1x1x2xf32>
  %scale = kiln.constant dense<4.0> : tensor<2xf32>
  %beta = kiln.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %var = kiln.constant dense<3.0> : tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  %y = kiln.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (tensor<1x2x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// -----

// What stays: a convolution another op reads too, parameters that are
// inputs, and a normalization of something else.
// CHECK-LABEL: func.func @kept
// CHECK: %[[C:.*]] = kiln.conv
// CHECK: kiln.batch_norm %[[C]]
// CHECK: %[[C2:.*]] = kiln.conv
// CHECK: kiln.batch_norm %[[C2]], %arg1
// CHECK: kiln.batch_norm %arg0
func.func @kept(%x: tensor<1x1x3x3xf32>, %mean_in: tensor<2xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x1x3x3xf32>) {
  %w = kiln.constant dense<[[[[1.0, -1.0]]], [[[0.5, 2.0]]]]> : tensor<2x1x1x2xf32>
  %p = kiln.constant dense<1.0> : tensor<2xf32>
  %p1 = kiln.constant dense<1.0> : tensor<1xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  %y = kiln.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-5 : f64} : (tensor<1x2x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  %c2 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  %y2 = kiln.batch_norm %c2, %mean_in, %p, %p, %p {epsilon = 1.0e-5 : f64} : (tensor<1x2x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  %y3 = kiln.batch_norm %x, %p1, %p1, %p1, %p1 {epsilon = 1.0e-5 : f64} : (tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x3x3xf32>
  return %y, %c, %y2, %y3 : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x1x3x3xf32>
}
