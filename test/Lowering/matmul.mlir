// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// [.., M, K] x [K, N]: the leading dimensions fold into M, one linalg.matmul
// into a zero-filled accumulator.
// CHECK-LABEL: func @matmul_weight
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<6x5xf32>)
// CHECK: %[[C:.*]] = linalg.matmul ins(%[[A]], %arg1 : tensor<6x4xf32>, tensor<4x5xf32>) outs(%[[ACC]] : tensor<6x5xf32>)
// CHECK: %[[R:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
// CHECK: return %[[R]]
func.func @matmul_weight(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Plain 2-D: no reshapes.
// CHECK-LABEL: func @matmul_2d
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[C:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<3x4xi32>, tensor<4x5xi32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[C]]
func.func @matmul_2d(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) -> tensor<3x5xi32> {
  %0 = kiln.matmul %a, %b : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

// Equal batch dimensions: one generic contraction over (b0, b1, m, n, k),
// no reshapes (so an epilogue shares the iteration space and fuses).
// CHECK-DAG: #[[BL:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[BR:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// CHECK-DAG: #[[BO:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @batch_matmul
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {indexing_maps = [#[[BL]], #[[BR]], #[[BO]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) outs(%{{.*}} : tensor<2x3x4x6xf32>)
// CHECK-NOT: tensor.expand_shape
func.func @batch_matmul(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}

// -----

// Broadcast batches: a generic contraction over (b0, b1, m, n, k) whose lhs
// map pins the broadcast batch dimension to 0.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @matmul_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<2x1x4x5xf32>, tensor<3x5x6xf32>) outs(%{{.*}} : tensor<2x3x4x6xf32>)
// CHECK:   %[[P:.*]] = arith.mulf
// CHECK:   arith.addf %{{.*}}, %[[P]]
func.func @matmul_broadcast(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x1x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}
