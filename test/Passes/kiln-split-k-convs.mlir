// RUN: kiln-opt %s -split-input-file --kiln-split-k-convs="compute-units=2 min-reduction=4 min-depth=1" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-split-k-convs | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s -split-input-file --kiln-split-k-convs="compute-units=2 min-reduction=4 min-depth=1 split-f32=false" | FileCheck %s --check-prefix=OFF

// One output tile for a chip of 2 CUs: the 4 input channels split in 2
// parts. The filter [2, 4, 1, 1] ([[1, 2, 3, 4], [5, 6, 7, 8]]) becomes
// [4, 2, 1, 1]: part 0's filters (channels 0 and 1 of output channels 0 and
// 1), then part 1's (channels 2 and 3). The grouped convolution's 4
// channels are the parts' sums, reshaped to [1, 2, 2, 3, 3] and added over
// the parts; the bias comes after, ReLU still reads the sum.
// CHECK-LABEL: func.func @split
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e+00]], {{\[\[}}6.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}7.000000e+00]], {{\[\[}}8.000000e+00]]]]> : tensor<4x2x1x1xf32>
// CHECK: %[[P:.*]] = kiln.conv %arg0, %[[W]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x3x3xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[P]] : tensor<1x4x3x3xf32> -> tensor<1x2x2x3x3xf32>
// CHECK: %[[S:.*]] = kiln.reduce_sum %[[R]] {axes = array<i64: 1>, keepdims = false} : (tensor<1x2x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK: %[[B:.*]] = kiln.reshape %{{.*}} : tensor<2xf32> -> tensor<2x1x1xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[S]], %[[B]] : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK: kiln.relu %[[Y]]
// CHECK-NOT: kiln.conv
// OFF-LABEL: func.func @split
// OFF-NOT: kiln.reduce_sum
// OFF: kiln.conv %arg0, %{{.*}}, %{{.*}} {dilations
func.func @split(%x: tensor<1x4x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = kiln.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], [[[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<2x4x1x1xf32>
  %b = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %1 = kiln.relu %0 : tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// -----

// A 3x3 convolution without a bias, strided and padded, its filter one
// value (a splat stays one): the parts keep the window; the sum is the
// result.
// CHECK-LABEL: func.func @window
// CHECK: %[[W:.*]] = kiln.constant dense<1.000000e+00> : tensor<2x1x3x3xf32>
// CHECK: %[[P:.*]] = kiln.conv %arg0, %[[W]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[P]] : tensor<1x2x3x3xf32> -> tensor<1x2x1x3x3xf32>
// CHECK: %[[S:.*]] = kiln.reduce_sum %[[R]] {axes = array<i64: 1>, keepdims = false}
// CHECK: return %[[S]]
func.func @window(%x: tensor<1x2x6x6xf32>) -> tensor<1x1x3x3xf32> {
  %w = kiln.constant dense<1.0> : tensor<1x2x3x3xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>, tensor<1x2x3x3xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// Kept whole: a filter known only at run time, a grouped convolution, 3
// input channels (3 products per output, under min-reduction; no 2 parts
// divide them), and 128 output channels, which already give 2 tiles.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.reduce_sum
// CHECK-COUNT-4: kiln.conv %
func.func @kept(%x: tensor<1x4x3x3xf32>, %wr: tensor<2x4x1x1xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x128x3x3xf32>) {
  %0 = kiln.conv %x, %wr {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x3x3xf32>
  %wg = kiln.constant dense<1.0> : tensor<2x2x1x1xf32>
  %1 = kiln.conv %x, %wg {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %x3 = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x4x3x3xf32> -> tensor<1x3x3x3xf32>
  %w3 = kiln.constant dense<1.0> : tensor<2x3x1x1xf32>
  %2 = kiln.conv %x3, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x3x3xf32>
  %wt = kiln.constant dense<1.0> : tensor<128x4x1x1xf32>
  %3 = kiln.conv %x, %wt {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<128x4x1x1xf32>) -> tensor<1x128x3x3xf32>
  return %0, %1, %2, %3 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x128x3x3xf32>
}
