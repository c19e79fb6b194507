// RUN: kiln-opt %s -split-input-file --kiln-winograd-convs="min-channels=1 transform-ops=true" | FileCheck %s

// With transform-ops, a convolution is kiln.winograd_input, the batched
// GEMM with the transformed filter, and kiln.winograd_output, which takes in
// the bias and the ReLU after it. A 14x14 image padded by one: F(4,3), 4 x 4
// tiles.
// CHECK-LABEL: func.func @bias_relu
// CHECK: %[[V:.*]] = kiln.winograd_input %arg0 {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x2x14x14xf32> -> tensor<36x2x16xf32>
// CHECK: %[[U:.*]] = kiln.constant {{.*}} : tensor<36x3x2xf32>
// CHECK: %[[M:.*]] = kiln.matmul %[[U]], %[[V]] : (tensor<36x3x2xf32>, tensor<36x2x16xf32>) -> tensor<36x3x16xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK: %[[Y:.*]] = kiln.winograd_output %[[M]] bias(%[[B]]) {relu, tile = 4 : i64} : (tensor<36x3x16xf32>, tensor<3xf32>) -> tensor<1x3x14x14xf32>
// CHECK-NOT: kiln.relu
// CHECK-NOT: kiln.conv
// CHECK: return %[[Y]]
func.func @bias_relu(%x: tensor<1x2x14x14xf32>) -> tensor<1x3x14x14xf32> {
  %w = kiln.constant dense<1.0> : tensor<3x2x3x3xf32>
  %b = kiln.constant dense<0.5> : tensor<3xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x14x14xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x14x14xf32>
  %r = kiln.relu %c : tensor<1x3x14x14xf32>
  return %r : tensor<1x3x14x14xf32>
}

// -----

// A residual add of the output's shape (either operand order), then a ReLU,
// are taken in; the output transform comes after the residual, which is
// computed after the convolution. F(2,3) for a 6x6 output.
// CHECK-LABEL: func.func @residual_relu
// CHECK: %[[V:.*]] = kiln.winograd_input %arg0 {pads = array<i64: 1, 1, 1, 1>, tile = 2 : i64} : tensor<1x2x6x6xf32> -> tensor<16x2x9xf32>
// CHECK: %[[M:.*]] = kiln.matmul %{{.*}}, %[[V]]
// CHECK: %[[RES:.*]] = kiln.exp %arg1
// CHECK: %[[Y:.*]] = kiln.winograd_output %[[M]] residual(%[[RES]]) {relu, tile = 2 : i64} : (tensor<16x2x9xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NOT: kiln.add
// CHECK: return %[[Y]]
func.func @residual_relu(%x: tensor<1x2x6x6xf32>, %s: tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32> {
  %w = kiln.constant dense<1.0> : tensor<2x2x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %e = kiln.exp %s : tensor<1x2x6x6xf32>
  %a = kiln.add %e, %c : (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %r = kiln.relu %a : tensor<1x2x6x6xf32>
  return %r : tensor<1x2x6x6xf32>
}

// -----

// What is not taken in: an add that broadcasts, an add of the convolution
// to itself, a ReLU whose input is read elsewhere too; other activations.
// CHECK-LABEL: func.func @not_taken_in
// CHECK: %[[Y1:.*]] = kiln.winograd_output %{{.*}} {tile = 2 : i64} : (tensor<16x2x9xf32>) -> tensor<1x2x6x6xf32>
// CHECK: kiln.add %[[Y1]], %arg1 : (tensor<1x2x6x6xf32>, tensor<1x2x1x1xf32>)
// CHECK: %[[Y2:.*]] = kiln.winograd_output %{{.*}} {tile = 2 : i64}
// CHECK: kiln.add %[[Y2]], %[[Y2]]
// CHECK: %[[Y3:.*]] = kiln.winograd_output %{{.*}} {tile = 2 : i64}
// CHECK: kiln.relu %[[Y3]]
// CHECK: kiln.sigmoid %[[Y3]]
func.func @not_taken_in(%x: tensor<1x2x6x6xf32>, %s: tensor<1x2x1x1xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) {
  %w = kiln.constant dense<1.0> : tensor<2x2x3x3xf32>
  %c1 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %a1 = kiln.add %c1, %s : (tensor<1x2x6x6xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x6x6xf32>
  %c2 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %a2 = kiln.add %c2, %c2 : (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %c3 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %r3 = kiln.relu %c3 : tensor<1x2x6x6xf32>
  %s3 = kiln.sigmoid %c3 : tensor<1x2x6x6xf32>
  return %a1, %a2, %r3, %s3 : tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>
}

// -----

// Padding beyond 16 (which kiln.winograd_input does not take): the ordinary
// ops of the transforms.
// CHECK-LABEL: func.func @wide_pads
// CHECK: kiln.pad
// CHECK: kiln.concat
// CHECK-NOT: kiln.winograd_input
func.func @wide_pads(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x38x2xf32> {
  %w = kiln.constant dense<1.0> : tensor<2x2x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 18, 0, 18, 0>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x38x2xf32>
  return %c : tensor<1x2x38x2xf32>
}
