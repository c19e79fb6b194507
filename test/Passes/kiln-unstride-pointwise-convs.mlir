// RUN: kiln-opt %s -split-input-file --kiln-unstride-pointwise-convs | FileCheck %s

// A 1x1 convolution with strides 2 and no padding reads every other pixel
// of its 7x7 input (0, 2, 4, 6): its input becomes the slice of those
// pixels (steps 2, ending after pixel 6) and its strides 1; filter, bias
// and groups stay.
// CHECK-LABEL: func.func @strided
// CHECK: %[[S:.*]] = kiln.slice %arg0 {ends = array<i64: 1, 8, 7, 7>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x8x7x7xf32> -> tensor<1x8x4x4xf32>
// CHECK: kiln.conv %[[S]], %arg1, %arg2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
func.func @strided(%x: tensor<1x8x7x7xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x7x7xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  return %0 : tensor<1x16x4x4xf32>
}

// -----

// Not rewritten: a 3x3 filter, a padded 1x1 convolution (its border reads
// the padding), an unstrided one.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.slice
// CHECK-COUNT-3: kiln.conv %arg0
func.func @kept(%x: tensor<1x8x8x8xf32>, %w3: tensor<16x8x3x3xf32>, %w1: tensor<16x8x1x1xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x5x5xf32>, tensor<1x16x8x8xf32>) {
  %0 = kiln.conv %x, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  %1 = kiln.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x5x5xf32>
  %2 = kiln.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x8x8xf32>
  return %0, %1, %2 : tensor<1x16x4x4xf32>, tensor<1x16x5x5xf32>, tensor<1x16x8x8xf32>
}
