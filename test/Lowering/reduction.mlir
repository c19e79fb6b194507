// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// CHECK-LABEL: func @sum_keepdims
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: %[[R:.*]] = linalg.reduce { arith.addf } ins(%arg0 : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>) dimensions = [1]
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1, 2]] output_shape [2, 1, 4] : tensor<2x4xf32> into tensor<2x1x4xf32>
// CHECK: return %[[E]]
func.func @sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = kiln.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// The mean divides the sum by the number of reduced elements.
// CHECK-LABEL: func @mean
// CHECK: %[[R:.*]] = linalg.reduce { arith.addf } ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3xf32>) dimensions = [0, 2]
// CHECK: linalg.generic {{.*}} ins(%[[R]] : tensor<3xf32>)
// CHECK:   %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK:   arith.divf %{{.*}}, %[[N]] : f32
// CHECK-NOT: tensor.expand_shape
func.func @mean(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %0 = kiln.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Integer mean: truncating division.
// CHECK-LABEL: func @mean_int
// CHECK: linalg.reduce { arith.addi {{.*}}}
// CHECK: arith.divsi
func.func @mean_int(%x: tensor<4x6xi32>) -> tensor<4xi32> {
  %0 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x6xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Identities: -inf / +inf for floats, the integer extremes, 1 for products.
// CHECK-LABEL: func @max_f32
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEG]] : f32)
// CHECK: linalg.reduce { arith.maximumf }
func.func @max_f32(%x: tensor<4x6xf32>) -> tensor<4x1xf32> {
  %0 = kiln.reduce_max %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// CHECK-LABEL: func @min_i64
// CHECK: %[[MAX:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: linalg.fill ins(%[[MAX]] : i64)
// CHECK: linalg.reduce { arith.minsi }
func.func @min_i64(%x: tensor<4x6xi64>) -> tensor<6xi64> {
  %0 = kiln.reduce_min %x {axes = array<i64: 0>, keepdims = false} : (tensor<4x6xi64>) -> tensor<6xi64>
  return %0 : tensor<6xi64>
}

// CHECK-LABEL: func @max_i8
// CHECK: %[[MIN:.*]] = arith.constant -128 : i8
// CHECK: linalg.fill ins(%[[MIN]] : i8)
// CHECK: linalg.reduce { arith.maxsi }
func.func @max_i8(%x: tensor<4x6xi8>) -> tensor<6xi8> {
  %0 = kiln.reduce_max %x {axes = array<i64: 0>, keepdims = false} : (tensor<4x6xi8>) -> tensor<6xi8>
  return %0 : tensor<6xi8>
}

// CHECK-LABEL: func @prod_all
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<f32>)
// CHECK: linalg.reduce { arith.mulf } ins(%arg0 : tensor<4x6xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0, 1]
func.func @prod_all(%x: tensor<4x6xf32>) -> tensor<f32> {
  %0 = kiln.reduce_prod %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x6xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// No axes: the identity.
// CHECK-LABEL: func @no_axes
// CHECK-NEXT: return %arg0
func.func @no_axes(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = kiln.reduce_sum %x {axes = array<i64>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Argmax: one generic reducing axis 1 into (value, index); a strictly greater
// element replaces the running maximum, so ties keep the first index.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RED:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @argmax
// CHECK-DAG: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[V:.*]] = linalg.fill ins(%[[NEG]] : f32) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK-DAG: %[[I:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2x4xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[RED]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%[[V]], %[[I]] : tensor<2x4xf32>, tensor<2x4xi64>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[BEST:.*]]: f32, %[[BI:.*]]: i64):
// CHECK:   %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[BEST]] : f32
// CHECK:   %[[IDX:.*]] = linalg.index 1 : index
// CHECK:   %[[IDX64:.*]] = arith.index_cast %[[IDX]] : index to i64
// CHECK:   %[[NV:.*]] = arith.select %[[GT]], %[[X]], %[[BEST]] : f32
// CHECK:   %[[NI:.*]] = arith.select %[[GT]], %[[IDX64]], %[[BI]] : i64
// CHECK:   linalg.yield %[[NV]], %[[NI]] : f32, i64
// CHECK: tensor.expand_shape %[[R]]#1 {{\[}}[0], [1, 2]] output_shape [2, 1, 4] : tensor<2x4xi64> into tensor<2x1x4xi64>
func.func @argmax(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
  %0 = kiln.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  return %0 : tensor<2x1x4xi64>
}

// -----

// Argmin with select_last_index: a non-strict comparison keeps the last tie.
// CHECK-LABEL: func @argmin_last
// CHECK: %[[MAX:.*]] = arith.constant 2147483647 : i32
// CHECK: linalg.fill ins(%[[MAX]] : i32)
// CHECK: linalg.generic
// CHECK:   arith.cmpi sle
// CHECK-NOT: tensor.expand_shape
func.func @argmin_last(%x: tensor<5x3xi32>) -> tensor<3xi64> {
  %0 = kiln.argmin %x {axis = 0 : i64, keepdims = false, select_last_index = true} : (tensor<5x3xi32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}
