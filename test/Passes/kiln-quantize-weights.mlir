// RUN: kiln-opt %s -split-input-file --kiln-quantize-weights | FileCheck %s

// A conv whose input is quantized gets its f32 filter as int8, one scale per
// output channel: max |w| / 127, values rounded half to even into
// [-127, 127]. Channel 0 [1, -1.27]: scale 0.01, [100, -127]; channel 1
// [0.5, -0.1]: scale 0.5 / 127, [127, -25.4 -> -25].
// CHECK-LABEL: func.func @conv
// CHECK-DAG: %[[Q:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[100, -127]]], {{\[}}{{\[}}[127, -25]]]]> : tensor<2x1x1x2xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[0.00999999977]]], {{\[}}{{\[}}[0.00393700786]]]]> : tensor<2x1x1x1xf32>
// CHECK: %[[W:.*]] = kiln.dequantize %[[Q]], %[[S]] : (tensor<2x1x1x2xi8>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x2xf32>
// CHECK: kiln.conv %{{.*}}, %[[W]]
func.func @conv(%x: tensor<1x1x3x3xui8>) -> tensor<1x2x3x2xf32> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<128> : tensor<ui8>
  %d = kiln.dequantize %x, %s zero_point(%z) : (tensor<1x1x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x3x3xf32>
  %w = kiln.constant dense<[[[[1.0, -1.27]]], [[[0.5, -0.1]]]]> : tensor<2x1x1x2xf32>
  %y = kiln.conv %d, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// -----

// A matmul's [K, N] weight: one scale per column. Column 0 [1.27, -0.5]:
// scale 0.01, [127, -50]; column 1 [0.5, -0.2]: [127, -50.8 -> -51].
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[Q:.*]] = kiln.constant dense<{{\[}}[127, 127], [-50, -51]]> : tensor<2x2xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}[0.00999999977, 0.00393700786]]> : tensor<1x2xf32>
// CHECK: %[[W:.*]] = kiln.dequantize %[[Q]], %[[S]] : (tensor<2x2xi8>, tensor<1x2xf32>) -> tensor<2x2xf32>
// CHECK: kiln.matmul %{{.*}}, %[[W]]
func.func @matmul(%x: tensor<3x2xi8>) -> tensor<3x2xf32> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.dequantize %x, %s : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %w = kiln.constant dense<[[1.27, 0.5], [-0.5, -0.2]]> : tensor<2x2xf32>
  %y = kiln.matmul %d, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A weight of zeros gets scale 1 (never a division by zero).
// CHECK-LABEL: func.func @zeros
// CHECK-DAG: kiln.constant dense<{{(0|\[\[0, 0\], \[0, 0\]\])}}> : tensor<2x2xi8>
// CHECK-DAG: kiln.constant dense<1.000000e+00> : tensor<1x2xf32>
func.func @zeros(%x: tensor<3x2xi8>) -> tensor<3x2xf32> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.dequantize %x, %s : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %w = kiln.constant dense<0.0> : tensor<2x2xf32>
  %y = kiln.matmul %d, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Weights stay float when the activation is not quantized, and batched
// (rank 3) matmul weights are not quantized.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: kiln.dequantize {{.*}}xi8>, tensor<{{.*}}> -> tensor<2x2x2xf32>
// CHECK: kiln.conv %arg0, %{{.*}} :
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x3x2xf32>, tensor<2x2x2xf32>)
func.func @untouched(%x: tensor<1x1x3x3xf32>, %a: tensor<2x3x2xi8>) -> (tensor<1x2x3x2xf32>, tensor<2x3x2xf32>) {
  %w = kiln.constant dense<[[[[1.0, -1.27]]], [[[0.5, -0.1]]]]> : tensor<2x1x1x2xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.dequantize %a, %s : (tensor<2x3x2xi8>, tensor<f32>) -> tensor<2x3x2xf32>
  %b = kiln.constant dense<1.0> : tensor<2x2x2xf32>
  %z = kiln.matmul %d, %b : (tensor<2x3x2xf32>, tensor<2x2x2xf32>) -> tensor<2x3x2xf32>
  return %y, %z : tensor<1x2x3x2xf32>, tensor<2x3x2xf32>
}
