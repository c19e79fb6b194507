// RUN: kiln-opt %s -split-input-file --kiln-transpose-pointwise-convs="max-points=4 min-channels=2" | FileCheck %s

// A 1x1 convolution of a 2 x 2 image, 2 -> 3 channels, with a constant
// filter: the image transposed to [points, channels], the filter transposed
// at compile time to [2, 3] (W^T[c][f] = W[f][c]), the product with its bias,
// and the result transposed back to NCHW.
// CHECK-LABEL: func.func @taken
// CHECK: %[[R:.*]] = kiln.reshape %arg0 : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[R]] {permutation = array<i64: 0, 2, 1>} : tensor<1x2x4xf32> -> tensor<1x4x2xf32>
// CHECK: %[[A:.*]] = kiln.reshape %[[T]] : tensor<1x4x2xf32> -> tensor<4x2xf32>
// CHECK: %[[WT:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK: %[[M:.*]] = kiln.matmul %[[A]], %[[WT]] : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[S:.*]] = kiln.add %[[M]], %arg1 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: %[[E:.*]] = kiln.reshape %[[S]] : tensor<4x3xf32> -> tensor<1x2x2x3xf32>
// CHECK: %[[Y:.*]] = kiln.transpose %[[E]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x2x2x3xf32> -> tensor<1x3x2x2xf32>
// CHECK-NOT: kiln.conv
// CHECK: return %[[Y]]
func.func @taken(%x: tensor<1x2x2x2xf32>, %b: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %w = kiln.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// Not rewritten: a filter that is not a constant, an image of more than
// max-points points, a 3x3 filter, a padded convolution, a strided one (left
// to kiln-unstride-pointwise-convs), and one output channel (fewer than
// min-channels).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.matmul
// CHECK-COUNT-6: kiln.conv
// CHECK-NOT: kiln.matmul
func.func @kept(%x: tensor<1x2x2x2xf32>, %big: tensor<1x2x3x3xf32>, %wv: tensor<3x2x1x1xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x3x3xf32>, tensor<1x3x2x2xf32>, tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x1x2x2xf32>) {
  %w = kiln.constant dense<1.0> : tensor<3x2x1x1xf32>
  %w3 = kiln.constant dense<1.0> : tensor<3x2x3x3xf32>
  %w1 = kiln.constant dense<1.0> : tensor<1x2x1x1xf32>
  %0 = kiln.conv %x, %wv {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x2x2xf32>
  %1 = kiln.conv %big, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x3x3xf32>
  %2 = kiln.conv %x, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  %3 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %4 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x1x1xf32>
  %5 = kiln.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<1x3x2x2xf32>, tensor<1x3x3x3xf32>, tensor<1x3x2x2xf32>, tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x1x2x2xf32>
}
