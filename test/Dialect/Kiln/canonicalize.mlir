// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// Shape computations that exported models carry fold to constants.
// CHECK-LABEL: func @shape_chain
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_chain() -> tensor<2xi64> {
  %shape = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<1xi64>
  %i12 = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %d0 = kiln.gather %shape, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = kiln.gather %shape, %i12 {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %r0 = kiln.slice %rest {starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : tensor<2xi64> -> tensor<1xi64>
  %r1 = kiln.slice %rest {starts = array<i64: 1>, ends = array<i64: 2>, steps = array<i64: 1>} : tensor<2xi64> -> tensor<1xi64>
  %prod = kiln.mul %r0, %r1 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %cat = kiln.concat %d0, %prod {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %cat : tensor<2xi64>
}

// -----

// CHECK-LABEL: func @arith_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]]
func.func @arith_identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<4xf32>
  %0 = kiln.add %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = kiln.mul %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = kiln.sub %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = kiln.div %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Adding zero that broadcasts the operand to a larger shape is not an identity.
// CHECK-LABEL: func @add_zero_broadcasts
// CHECK: kiln.add
func.func @add_zero_broadcasts(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %zero = kiln.constant dense<0.0> : tensor<2x4xf32>
  %0 = kiln.add %x, %zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func @int_arith
// CHECK-NEXT: kiln.constant dense<[5, -3, 7, 1]> : tensor<4xi64>
// CHECK-NEXT: kiln.constant dense<[true, false, true, false]> : tensor<4xi1>
// CHECK-NEXT: kiln.constant dense<[-2, 2, -2, 1]> : tensor<4xi64>
func.func @int_arith() -> (tensor<4xi64>, tensor<4xi1>, tensor<4xi64>) {
  %a = kiln.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %b = kiln.constant dense<[-2, 4, 0, 8]> : tensor<4xi64>
  %sum = kiln.add %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %quarter = kiln.constant dense<[-3, 3, -3, 8]> : tensor<4xi64>
  %m = kiln.mod %a, %quarter : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %gt = kiln.greater %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %r = kiln.add %sum, %m : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %fin = kiln.sub %r, %sum : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %sum, %gt, %fin : tensor<4xi64>, tensor<4xi1>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func @division_by_zero_is_not_folded
// CHECK: kiln.div
func.func @division_by_zero_is_not_folded() -> tensor<2xi64> {
  %a = kiln.constant dense<[4, 6]> : tensor<2xi64>
  %b = kiln.constant dense<[2, 0]> : tensor<2xi64>
  %0 = kiln.div %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func @select_and_cast
// CHECK-NEXT: kiln.constant dense<[1.000000e+00, -2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT: kiln.constant dense<[1, -2, 3]> : tensor<3xi32>
func.func @select_and_cast() -> (tensor<3xf32>, tensor<3xi32>) {
  %c = kiln.constant dense<[true, false, true]> : tensor<3xi1>
  %t = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %f = kiln.constant dense<-2.0> : tensor<f32>
  %0 = kiln.select %c, %t, %f : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = kiln.cast %0 : tensor<3xf32> to tensor<3xi32>
  return %0, %1 : tensor<3xf32>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func @select_splat_condition
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>, %[[Y:.*]]: tensor<3xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @select_splat_condition(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %c = kiln.constant dense<false> : tensor<3xi1>
  %0 = kiln.select %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> (tensor<24xf32>, tensor<2x3x4xf32>) {
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %2 : tensor<24xf32>, tensor<2x3x4xf32>
}

// -----

// A weight blob is reshaped in place: same blob, new type.
// CHECK-LABEL: func @reshape_blob
// CHECK-NEXT: %[[W:.*]] = kiln.constant dense_resource<w> : tensor<2x2xf32>
// CHECK-NEXT: return %[[W]]
func.func @reshape_blob() -> tensor<2x2xf32> {
  %w = kiln.constant dense_resource<w> : tensor<4xf32>
  %0 = kiln.reshape %w : tensor<4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// CHECK-LABEL: func @transposes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[T:.*]] = kiln.transpose %[[X]] {permutation = array<i64: 1, 0, 2>}
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi64>
// CHECK-NEXT: return %[[T]], %[[X]], %[[C]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<2x3x4xf32>, tensor<2x2xi64>) {
  %0 = kiln.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = kiln.transpose %0 {permutation = array<i64: 2, 1, 0>} : tensor<4x2x3xf32> -> tensor<3x2x4xf32>
  %2 = kiln.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %c = kiln.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %3 = kiln.transpose %c {permutation = array<i64: 1, 0>} : tensor<2x2xi64> -> tensor<2x2xi64>
  return %1, %2, %3 : tensor<3x2x4xf32>, tensor<2x3x4xf32>, tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func @expand_and_negate
// CHECK-NEXT: kiln.constant dense<{{\[}}[-1, -2], [-1, -2], [-1, -2]]> : tensor<3x2xi64>
func.func @expand_and_negate() -> tensor<3x2xi64> {
  %c = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %0 = kiln.expand %c : tensor<2xi64> -> tensor<3x2xi64>
  %1 = kiln.neg %0 : tensor<3x2xi64>
  return %1 : tensor<3x2xi64>
}

// -----

// Logical negation of a constant (an optional's "has no element" test).
// CHECK-LABEL: func @not_constant
// CHECK-NEXT: kiln.constant dense<[false, true]> : tensor<2xi1>
func.func @not_constant() -> tensor<2xi1> {
  %c = kiln.constant dense<[true, false]> : tensor<2xi1>
  %0 = kiln.not %c : tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

// Rounding, relu and abs of constants (a Range's trip count computed as
// ceil((limit - start) / delta) from pinned inputs, as ONNX's expansion does).
// Values checked against numpy: floor/ceil/rint/maximum(x, 0)/abs.
// CHECK-LABEL: func @rounding_constants
// CHECK-DAG: kiln.constant dense<[-2.000000e+00, -1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[-1.000000e+00, -0.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[-2.000000e+00, -0.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[0.000000e+00, 0.000000e+00, 2.500000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[1.500000e+00, 5.000000e-01, 2.500000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[0, 0, 7]> : tensor<3xi32>
// CHECK-DAG: kiln.constant dense<[3, 0, 7]> : tensor<3xi32>
// CHECK-DAG: kiln.constant dense<[200, 0]> : tensor<2xui8>
// CHECK-NOT: kiln.floor
// CHECK-NOT: kiln.ceil
// CHECK-NOT: kiln.round
// CHECK-NOT: kiln.relu
// CHECK-NOT: kiln.abs
func.func @rounding_constants() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<2xui8>) {
  %c = kiln.constant dense<[-1.5, -0.5, 2.5, 2.0]> : tensor<4xf32>
  %0 = kiln.floor %c : tensor<4xf32>
  %1 = kiln.ceil %c : tensor<4xf32>
  %2 = kiln.round %c : tensor<4xf32>
  %3 = kiln.relu %c : tensor<4xf32>
  %4 = kiln.abs %c : tensor<4xf32>
  %i = kiln.constant dense<[-3, 0, 7]> : tensor<3xi32>
  %5 = kiln.relu %i : tensor<3xi32>
  %6 = kiln.abs %i : tensor<3xi32>
  %u = kiln.constant dense<[200, 0]> : tensor<2xui8>
  %7 = kiln.abs %u : tensor<2xui8>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<2xui8>
}

// -----

// CHECK-LABEL: func @empty_reduction
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @empty_reduction(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = kiln.reduce_sum %x {axes = array<i64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Zero points that are constant zeros (scalars or all-zero vectors) are
// dropped; others stay.
// CHECK-LABEL: func @zero_zero_points
// CHECK-SAME: (%[[A:.*]]: tensor<3x4xui8>, %[[B:.*]]: tensor<4x2xi8>, %[[X:.*]]: tensor<1x2x5x5xui8>, %[[W:.*]]: tensor<3x2x3x3xi8>)
// CHECK-DAG: %[[ZB:.*]] = kiln.constant dense<-1> : tensor<i8>
// CHECK-DAG: %[[ZW:.*]] = kiln.constant dense<[0, 1, 0]> : tensor<3xi8>
// CHECK: kiln.matmul_integer %[[A]], %[[B]] : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK: kiln.matmul_integer %[[A]], %[[B]] rhs_zero_point(%[[ZB]]) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<i8>) -> tensor<3x2xi32>
// CHECK: kiln.conv_integer %[[X]], %[[W]] filter_zero_point(%[[ZW]])
// CHECK: kiln.conv_integer %[[X]], %[[W]] {
func.func @zero_zero_points(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>, %x: tensor<1x2x5x5xui8>, %w: tensor<3x2x3x3xi8>)
    -> (tensor<3x2xi32>, tensor<3x2xi32>, tensor<1x3x3x3xi32>, tensor<1x3x3x3xi32>) {
  %za = kiln.constant dense<0> : tensor<ui8>
  %zb0 = kiln.constant dense<0> : tensor<2xi8>
  %zb = kiln.constant dense<-1> : tensor<i8>
  %zw = kiln.constant dense<[0, 1, 0]> : tensor<3xi8>
  %zw0 = kiln.constant dense<[0, 0, 0]> : tensor<3xi8>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%za) rhs_zero_point(%zb0) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, tensor<2xi8>) -> tensor<3x2xi32>
  %1 = kiln.matmul_integer %a, %b lhs_zero_point(%za) rhs_zero_point(%zb) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, tensor<i8>) -> tensor<3x2xi32>
  %2 = kiln.conv_integer %x, %w input_zero_point(%za) filter_zero_point(%zw) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x3x3xi32>
  %3 = kiln.conv_integer %x, %w input_zero_point(%za) filter_zero_point(%zw0) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x3x3xi32>
  return %0, %1, %2, %3 : tensor<3x2xi32>, tensor<3x2xi32>, tensor<1x3x3x3xi32>, tensor<1x3x3x3xi32>
}
