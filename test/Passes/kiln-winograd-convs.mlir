// RUN: kiln-opt %s -split-input-file --kiln-winograd-convs="min-channels=1 exclude=kept" | FileCheck %s

// F(2,3) (a 4x4 output is below min-f4-size): the input padded to cover
// two tiles each way (6x6), 16 tile slices with step 2, the input transform
// B^T d B as two matmuls, one batched GEMM with the transformed filter, the
// output transform A^T M A as two matmuls, the tiles back in NCHW, the bias.
// The filter transform of an all-ones 3x3 filter is u u^T with u = G 1 =
// [1, 1.5, 0.5, 1] (G's row sums): row by row 1 1.5 0.5 1 / 1.5 2.25 0.75 1.5 / ...
// CHECK-LABEL: func.func @f23
// CHECK: %[[PAD:.*]] = kiln.pad %arg0 {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x6x6xf32>
// CHECK: kiln.slice %[[PAD]] {ends = array<i64: 1, 1, 3, 3>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>}
// CHECK-COUNT-14: kiln.slice %[[PAD]]
// CHECK: %[[LAST:.*]] = kiln.slice %[[PAD]] {ends = array<i64: 1, 1, 6, 6>, starts = array<i64: 0, 0, 3, 3>, steps = array<i64: 1, 1, 2, 2>}
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}}, %[[LAST]] {axis = 0 : i64} : {{.*}} -> tensor<16x1x2x2xf32>
// CHECK: %[[BT:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, -1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, -1.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00, -1.000000e+00]]> : tensor<4x4xf32>
// CHECK: %[[ROWS:.*]] = kiln.reshape %[[COLS]] : tensor<16x1x2x2xf32> -> tensor<4x16xf32>
// CHECK: %[[V1:.*]] = kiln.matmul %[[BT]], %[[ROWS]] : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[V1R:.*]] = kiln.reshape %[[V1]] : tensor<4x16xf32> -> tensor<4x4x4xf32>
// CHECK: %[[V:.*]] = kiln.matmul %[[BT]], %[[V1R]] : (tensor<4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
// CHECK: %[[U:.*]] = kiln.constant dense<{{\[}}{{\[}}[1.000000e+00]], {{\[}}[1.500000e+00]], {{\[}}[5.000000e-01]], {{\[}}[1.000000e+00]], {{\[}}[1.500000e+00]], {{\[}}[2.250000e+00]], {{\[}}[7.500000e-01]], {{\[}}[1.500000e+00]], {{\[}}[5.000000e-01]], {{\[}}[7.500000e-01]], {{\[}}[2.500000e-01]], {{\[}}[5.000000e-01]], {{\[}}[1.000000e+00]], {{\[}}[1.500000e+00]], {{\[}}[5.000000e-01]], {{\[}}[1.000000e+00]]]> : tensor<16x1x1xf32>
// CHECK: %[[M:.*]] = kiln.matmul %[[U]], %{{.*}} : (tensor<16x1x1xf32>, tensor<16x1x4xf32>) -> tensor<16x1x4xf32>
// CHECK: %[[AT:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, -1.000000e+00, -1.000000e+00]]> : tensor<2x4xf32>
// CHECK: %[[MR:.*]] = kiln.reshape %[[M]] : tensor<16x1x4xf32> -> tensor<4x16xf32>
// CHECK: %[[Y1:.*]] = kiln.matmul %[[AT]], %[[MR]] : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
// CHECK: %[[Y1R:.*]] = kiln.reshape %[[Y1]] : tensor<2x16xf32> -> tensor<2x4x4xf32>
// CHECK: %[[Y:.*]] = kiln.matmul %[[AT]], %[[Y1R]] : (tensor<2x4xf32>, tensor<2x4x4xf32>) -> tensor<2x2x4xf32>
// CHECK: %[[Y6:.*]] = kiln.reshape %[[Y]] : tensor<2x2x4xf32> -> tensor<2x2x1x1x2x2xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[Y6]] {permutation = array<i64: 3, 2, 4, 0, 5, 1>} : tensor<2x2x1x1x2x2xf32> -> tensor<1x1x2x2x2x2xf32>
// CHECK: %[[NCHW:.*]] = kiln.reshape %[[T]] : tensor<1x1x2x2x2x2xf32> -> tensor<1x1x4x4xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<5.000000e-01> : tensor<1x1x1x1xf32>
// CHECK: %[[R:.*]] = kiln.add %[[NCHW]], %[[B]]
// CHECK-NOT: kiln.conv
// CHECK: return %[[R]]
func.func @f23(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<1x1x3x3xf32>
  %b = kiln.constant dense<0.5> : tensor<1xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  return %c : tensor<1x1x4x4xf32>
}

// -----

// F(4,3) for outputs of 12 or more: 6x6 tiles with step 4. A 13x14 output
// (no padding on top, two rows below) needs 4x4 tiles: the padded input is
// 18x18 and the 16x16 result is cropped. No bias: no add. Batch 2: the
// transformed input's batch moves next to the tiles (the GEMM's columns).
// CHECK-LABEL: func.func @f43_crop_batch
// CHECK: kiln.pad %arg0 {pads = array<i64: 0, 0, 0, 1, 0, 0, 3, 2>} : tensor<2x2x15x15xf32> -> tensor<2x2x18x18xf32>
// CHECK-COUNT-36: kiln.slice {{.*}}steps = array<i64: 1, 1, 4, 4>
// CHECK: kiln.concat {{.*}} -> tensor<72x2x4x4xf32>
// CHECK: kiln.matmul {{.*}} : (tensor<6x6xf32>, tensor<6x384xf32>) -> tensor<6x384xf32>
// CHECK: kiln.matmul {{.*}} : (tensor<6x6xf32>, tensor<6x6x64xf32>) -> tensor<6x6x64xf32>
// CHECK: kiln.transpose {{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<36x2x2x16xf32> -> tensor<36x2x2x16xf32>
// CHECK: kiln.matmul {{.*}} : (tensor<36x3x2xf32>, tensor<36x2x32xf32>) -> tensor<36x3x32xf32>
// CHECK: kiln.matmul {{.*}} : (tensor<4x6xf32>, tensor<6x576xf32>) -> tensor<4x576xf32>
// CHECK: kiln.matmul {{.*}} : (tensor<4x6xf32>, tensor<4x6x96xf32>) -> tensor<4x4x96xf32>
// CHECK: kiln.transpose {{.*}} : tensor<4x4x3x2x4x4xf32> -> tensor<2x3x4x4x4x4xf32>
// CHECK: %[[FULL:.*]] = kiln.reshape {{.*}} -> tensor<2x3x16x16xf32>
// CHECK: %[[CROP:.*]] = kiln.slice %[[FULL]] {ends = array<i64: 2, 3, 13, 14>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NOT: kiln.add
// CHECK: return %[[CROP]]
func.func @f43_crop_batch(%x: tensor<2x2x15x15xf32>) -> tensor<2x3x13x14xf32> {
  %w = kiln.constant dense<0.25> : tensor<3x2x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 0>} : (tensor<2x2x15x15xf32>, tensor<3x2x3x3xf32>) -> tensor<2x3x13x14xf32>
  return %c : tensor<2x3x13x14xf32>
}

// -----

// What stays a direct convolution: strides, dilations, groups, another
// window, a filter known only at run time, f16, and a node named in
// `exclude`.
// CHECK-LABEL: func.func @direct
// CHECK-COUNT-7: kiln.conv
// CHECK-NOT: kiln.matmul
func.func @direct(%x: tensor<1x2x8x8xf32>, %wx: tensor<2x2x3x3xf32>, %h: tensor<1x2x8x8xf16>)
    -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>,
        tensor<1x2x8x8xf32>, tensor<1x2x8x8xf16>, tensor<1x2x8x8xf32>) {
  %w = kiln.constant dense<1.0> : tensor<2x2x3x3xf32>
  %g = kiln.constant dense<1.0> : tensor<2x1x3x3xf32>
  %w1 = kiln.constant dense<1.0> : tensor<2x2x1x1xf32>
  %w16 = kiln.constant dense<1.0> : tensor<2x2x3x3xf16>
  %strided = kiln.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %dilated = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %grouped = kiln.conv %x, %g {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x2x8x8xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x8x8xf32>
  %pointwise = kiln.conv %x, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x8x8xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x8x8xf32>
  %runtime = kiln.conv %x, %wx {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  %half = kiln.conv %h, %w16 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8xf16>, tensor<2x2x3x3xf16>) -> tensor<1x2x8x8xf16>
  %kept = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x8xf32> loc("kept")
  return %strided, %dilated, %grouped, %pointwise, %runtime, %half, %kept
      : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>,
        tensor<1x2x8x8xf32>, tensor<1x2x8x8xf16>, tensor<1x2x8x8xf32>
}
