// RUN: kiln-opt %s --kiln-quantize-int4-activations | FileCheck %s

// Every kiln.matmul_int4 with f32 activations and constant zero points that
// are whole numbers from 0 to 15 (a splat of 8, per-column ones) gets
// int8_activations (W4A8). A fractional zero point (MatMulNBits allows
// float ones) would make the kernel's i32 correction inexact, and zero
// points computed at run time cannot be checked: those ops, and f16 ones,
// keep float activations.
// CHECK-LABEL: func.func @w4a8
// CHECK: kiln.matmul_int4 %arg0, %arg1, %arg2, %{{.*}} {int8_activations}
// CHECK: kiln.matmul_int4 %arg0, %arg1, %arg2, %{{.*}} {int8_activations}
// CHECK: kiln.matmul_int4 %arg0, %arg1, %arg2, %{{[^ ]*}} :
// CHECK: kiln.matmul_int4 %arg0, %arg1, %arg2, %arg2 :
// CHECK: kiln.matmul_int4 %arg3, %arg1, %{{[^ ]*}}, %{{[^ ]*}} :
func.func @w4a8(%x: tensor<1x64xf32>, %w: tensor<2x16x4xi8>, %s: tensor<2x4xf32>, %h: tensor<1x64xf16>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf16>) {
  %z = kiln.constant dense<8.0> : tensor<2x4xf32>
  %y = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x64xf32>, tensor<2x16x4xi8>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
  %z2 = kiln.constant dense<[[0.0, 15.0, 3.0, 7.0], [1.0, 2.0, 9.0, 12.0]]> : tensor<2x4xf32>
  %y2 = kiln.matmul_int4 %x, %w, %s, %z2 : (tensor<1x64xf32>, tensor<2x16x4xi8>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
  %z3 = kiln.constant dense<[[0.0, 15.0, 3.5, 7.0], [1.0, 2.0, 9.0, 12.0]]> : tensor<2x4xf32>
  %y3 = kiln.matmul_int4 %x, %w, %s, %z3 : (tensor<1x64xf32>, tensor<2x16x4xi8>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
  %y4 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x64xf32>, tensor<2x16x4xi8>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<1x4xf32>
  %sh = kiln.constant dense<0.5> : tensor<2x4xf16>
  %zh = kiln.constant dense<8.0> : tensor<2x4xf16>
  %y5 = kiln.matmul_int4 %h, %w, %sh, %zh : (tensor<1x64xf16>, tensor<2x16x4xi8>, tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<1x4xf16>
  return %y, %y2, %y3, %y4, %y5 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf16>
}
