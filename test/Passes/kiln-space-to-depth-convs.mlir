// RUN: kiln-opt %s -split-input-file --kiln-space-to-depth-convs | FileCheck %s

// A patch embedding (kernel 4x4 = strides, no padding, 8x12 image): the
// input is split into [N, C, OH, KH, OW, KW], the kernel offsets moved
// before the output pixels and folded into the channels (c KH KW + i KW +
// j, the filter's row-major order), and the convolution is 1x1 with unit
// strides. A constant filter is reshaped in place (its constant folds);
// the bias stays.
// CHECK-LABEL: func.func @patches
// CHECK: %[[SPLIT:.*]] = kiln.reshape %arg0 : tensor<1x2x8x12xf32> -> tensor<1x2x2x4x3x4xf32>
// CHECK: %[[MOVED:.*]] = kiln.transpose %[[SPLIT]] {permutation = array<i64: 0, 1, 3, 5, 2, 4>} : tensor<1x2x2x4x3x4xf32> -> tensor<1x2x4x4x2x3xf32>
// CHECK: %[[DEPTH:.*]] = kiln.reshape %[[MOVED]] : tensor<1x2x4x4x2x3xf32> -> tensor<1x32x2x3xf32>
// CHECK: %[[W:.*]] = kiln.constant dense<5.000000e-01> : tensor<6x32x1x1xf32>
// CHECK: kiln.conv %[[DEPTH]], %[[W]], %arg1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x2x3xf32>, tensor<6x32x1x1xf32>, tensor<6xf32>) -> tensor<1x6x2x3xf32>
func.func @patches(%x: tensor<1x2x8x12xf32>, %b: tensor<6xf32>) -> tensor<1x6x2x3xf32> {
  %w = kiln.constant dense<0.5> : tensor<6x2x4x4xf32>
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 4, 4>} : (tensor<1x2x8x12xf32>, tensor<6x2x4x4xf32>, tensor<6xf32>) -> tensor<1x6x2x3xf32>
  return %0 : tensor<1x6x2x3xf32>
}

// -----

// A 2x1 kernel with strides 2x1 on a batch of 2 (a downsampling layer), the
// filter an argument: reshaped by a kiln.reshape.
// CHECK-LABEL: func.func @rows
// CHECK: %[[SPLIT:.*]] = kiln.reshape %arg0 : tensor<2x3x4x5xf32> -> tensor<2x3x2x2x5x1xf32>
// CHECK: %[[MOVED:.*]] = kiln.transpose %[[SPLIT]] {permutation = array<i64: 0, 1, 3, 5, 2, 4>} : tensor<2x3x2x2x5x1xf32> -> tensor<2x3x2x1x2x5xf32>
// CHECK: %[[DEPTH:.*]] = kiln.reshape %[[MOVED]] : tensor<2x3x2x1x2x5xf32> -> tensor<2x6x2x5xf32>
// CHECK: %[[W:.*]] = kiln.reshape %arg1 : tensor<4x3x2x1xf32> -> tensor<4x6x1x1xf32>
// CHECK: kiln.conv %[[DEPTH]], %[[W]] {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x6x2x5xf32>, tensor<4x6x1x1xf32>) -> tensor<2x4x2x5xf32>
func.func @rows(%x: tensor<2x3x4x5xf32>, %w: tensor<4x3x2x1xf32>) -> tensor<2x4x2x5xf32> {
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 1>} : (tensor<2x3x4x5xf32>, tensor<4x3x2x1xf32>) -> tensor<2x4x2x5xf32>
  return %0 : tensor<2x4x2x5xf32>
}

// -----

// Not rewritten: overlapping windows (3x3, strides 2), strides above the
// kernel (2x2, strides 3: pixels skipped), padding, dilation, an image the
// kernel does not divide (2x2 on 7x7: the last row and column unread), two
// groups, a 1x1 kernel, integer operands.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.reshape
// CHECK-COUNT-8: kiln.conv
func.func @kept(%x: tensor<1x4x8x8xf32>, %x7: tensor<1x4x7x7xf32>, %xi: tensor<1x4x8x8xi32>, %w3: tensor<8x4x3x3xf32>, %w2: tensor<8x4x2x2xf32>, %wg: tensor<8x2x2x2xf32>, %w1: tensor<8x4x1x1xf32>, %wi: tensor<8x4x2x2xi32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x3x3xf32>, tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xi32>) {
  %0 = kiln.conv %x, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xf32>
  %1 = kiln.conv %x, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>} : (tensor<1x4x8x8xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x3x3xf32>
  %2 = kiln.conv %x, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x5x5xf32>
  %3 = kiln.conv %x, %w2 {dilations = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x3x3xf32>
  %4 = kiln.conv %x7, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x3x3xf32>
  %5 = kiln.conv %x, %wg {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x2x2x2xf32>) -> tensor<1x8x4x4xf32>
  %6 = kiln.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %7 = kiln.conv %xi, %wi {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xi32>, tensor<8x4x2x2xi32>) -> tensor<1x8x4x4xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<1x8x4x4xf32>, tensor<1x8x3x3xf32>, tensor<1x8x5x5xf32>, tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xi32>
}
