// RUN: kiln-opt %s -split-input-file --kiln-fold-weight-layouts | FileCheck %s

// A transpose of a weight blob is done here: the 2x3 weight [[1, 2, 3],
// [4, 5, 6]] becomes a new 3x2 blob [[1, 4], [2, 5], [3, 6]] (f32 little
// endian after the blob's alignment word, 16 for the new blob) and the
// transpose is gone.
// CHECK-LABEL: func.func @gemm_weight
// CHECK-NEXT: %[[W:.*]] = kiln.constant dense_resource<[[BLOB:.*]]> : tensor<3x2xf32>
// CHECK-NEXT: kiln.matmul %{{.*}}, %[[W]]
// CHECK-NOT: kiln.transpose
// CHECK: [[BLOB]]: "0x100000000000803F00008040000000400000A040000040400000C040"
func.func @gemm_weight(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense_resource<w> : tensor<2x3xf32>
  %t = kiln.transpose %w {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}

// -----

// A transpose of something computed at run time stays.
// CHECK-LABEL: func.func @activation
// CHECK: kiln.transpose
func.func @activation(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// Transcendentals of f32 constants are evaluated here whatever their size
// (a rotary embedding's cosine and sine tables of constant angles; exp of a
// blob): cos(0, 1, 2, 3), sin(0, 1, 2, 3), exp(1, 2), rounded once from
// double. An f16 constant's stays (the kernels compute it).
// CHECK-LABEL: func.func @unary_math
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<[1.000000e+00, 0.540302277, -0.416146845, -0.989992499]> : tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = kiln.constant dense<[0.000000e+00, 0.841470957, 0.909297406, 1.411200e-01]> : tensor<4xf32>
// CHECK-NEXT: %[[E:.*]] = kiln.constant dense<[2.71828175, 7.3890562]> : tensor<2xf32>
// CHECK-NEXT: %[[H:.*]] = kiln.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf16>
// CHECK-NEXT: %[[HC:.*]] = kiln.cos %[[H]] : tensor<2xf16>
// CHECK-NEXT: return %[[C]], %[[S]], %[[E]], %[[HC]]
func.func @unary_math() -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf16>) {
  %a = kiln.constant dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf32>
  %c = kiln.cos %a : tensor<4xf32>
  %s = kiln.sin %a : tensor<4xf32>
  %w = kiln.constant dense_resource<w1> : tensor<2xf32>
  %e = kiln.exp %w : tensor<2xf32>
  %h = kiln.constant dense<[0.0, 1.0]> : tensor<2xf16>
  %hc = kiln.cos %h : tensor<2xf16>
  return %c, %s, %e, %hc : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf16>
}
{-#
  dialect_resources: {
    builtin: {
      w1: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// A table of more than 64 elements becomes a new blob.
// CHECK-LABEL: func.func @large_table
// CHECK-NEXT: %[[T:.*]] = kiln.constant dense_resource<evaluated_0> : tensor<8x9xf32>
// CHECK-NEXT: return %[[T]]
func.func @large_table() -> tensor<8x9xf32> {
  %a = kiln.constant dense<0.5> : tensor<8x9xf32>
  %c = kiln.cos %a : tensor<8x9xf32>
  return %c : tensor<8x9xf32>
}
