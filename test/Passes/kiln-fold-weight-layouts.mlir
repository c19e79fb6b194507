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
