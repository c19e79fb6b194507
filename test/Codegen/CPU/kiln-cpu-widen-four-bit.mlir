// RUN: kiln-opt %s -split-input-file --kiln-cpu-widen-four-bit --canonicalize | FileCheck %s

// A contraction of i4 values reads them as bytes on the cpu: the operands
// and the zero point cast to 8 bits of their own signedness, a constant
// weight at compile time (the cast folds).
// CHECK-LABEL: func.func @four_bit
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x4xui4>
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}[-8, 1], [7, 2], [0, -1], [3, 4]]> : tensor<4x2xi8>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<8> : tensor<ui8>
// CHECK: %[[A8:.*]] = kiln.cast %[[A]] : tensor<3x4xui4> to tensor<3x4xui8>
// CHECK: kiln.matmul_integer %[[A8]], %[[W]] lhs_zero_point(%[[Z]]) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>) -> tensor<3x2xi32>
func.func @four_bit(%a: tensor<3x4xui4>) -> tensor<3x2xi32> {
  %b = kiln.constant dense<[[-8, 1], [7, 2], [0, -1], [3, 4]]> : tensor<4x2xi4>
  %z = kiln.constant dense<8> : tensor<ui4>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%z) : (tensor<3x4xui4>, tensor<4x2xi4>, tensor<ui4>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// 8-bit contractions are left alone.
// CHECK-LABEL: func.func @eight_bit
// CHECK-NOT: kiln.cast
// CHECK: kiln.matmul_integer %arg0, %arg1 : (tensor<3x4xui8>, tensor<4x2xi8>)
func.func @eight_bit(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>) -> tensor<3x2xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}
