// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// Broadcasting lives in the indexing maps: the [3] operand aligns with the
// trailing dimension; the [2, 1] operand's broadcast unit dimension is
// collapsed away ([2], read along d0), so that no map has a constant result
// (tile-and-fuse slices such operands like any other).
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @add_broadcast
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<2x1xf32> into tensor<2xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[C]], %arg1 : tensor<2xf32>, tensor<3xf32>) outs(%[[E]] : tensor<2x3xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK:   linalg.yield %[[S]] : f32
// CHECK: return %[[R]]
func.func @add_broadcast(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.add %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Integer arithmetic: truncating division; Mod takes the divisor's sign.
// CHECK-LABEL: func @int_div_mod
// CHECK: linalg.generic
// CHECK:   arith.divsi
// CHECK: linalg.generic
// CHECK:   %[[R:.*]] = arith.remsi %[[X:.*]], %[[Y:.*]] : i32
// CHECK:   %[[NZ:.*]] = arith.cmpi ne, %[[R]], %{{.*}}
// CHECK:   %[[RN:.*]] = arith.cmpi slt, %[[R]], %{{.*}}
// CHECK:   %[[YN:.*]] = arith.cmpi slt, %[[Y]], %{{.*}}
// CHECK:   %[[DIFF:.*]] = arith.xori %[[RN]], %[[YN]]
// CHECK:   %[[ADJ:.*]] = arith.andi %[[NZ]], %[[DIFF]]
// CHECK:   %[[SUM:.*]] = arith.addi %[[R]], %[[Y]]
// CHECK:   arith.select %[[ADJ]], %[[SUM]], %[[R]] : i32
func.func @int_div_mod(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = kiln.div %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = kiln.mod %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// -----

// Comparisons produce i1; booleans compare unsigned.
// CHECK-LABEL: func @compare
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi1>)
// CHECK:   arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi1>)
// CHECK:   arith.cmpi ugt, %{{.*}}, %{{.*}} : i1
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %p: tensor<4xi1>, %q: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.less %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = kiln.greater %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Select broadcasts all three operands.
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @select
// CHECK: linalg.generic {indexing_maps = [#[[C]], #[[ID]], #[[S]], #[[ID]]], {{.*}}} ins(%arg0, %arg1, %arg2 : tensor<3xi1>, tensor<2x3xf32>, tensor<f32>)
// CHECK: ^bb0(%[[P:.*]]: i1, %[[T:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// CHECK:   arith.select %[[P]], %[[T]], %[[F]] : f32
func.func @select(%c: tensor<3xi1>, %t: tensor<2x3xf32>, %f: tensor<f32>) -> tensor<2x3xf32> {
  %0 = kiln.select %c, %t, %f : (tensor<3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Unary ops: transcendentals stay math ops.
// CHECK-LABEL: func @unary
// CHECK: linalg.generic
// CHECK:   math.exp
// CHECK: linalg.generic
// CHECK:   %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   arith.maximumf %{{.*}}, %[[Z]] : f32
// CHECK: linalg.generic
// CHECK:   %[[NEG:.*]] = arith.negf
// CHECK:   %[[E:.*]] = math.exp %[[NEG]]
// CHECK:   %[[D:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK:   arith.divf %{{.*}}, %[[D]]
// CHECK: linalg.generic
// CHECK:   math.roundeven
func.func @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.exp %x : tensor<4xf32>
  %1 = kiln.relu %x : tensor<4xf32>
  %2 = kiln.sigmoid %x : tensor<4xf32>
  %3 = kiln.round %x : tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// GELU: erf form by default, tanh form on request.
// CHECK-LABEL: func @gelu
// CHECK: linalg.generic
// CHECK:   math.erf
// CHECK: linalg.generic
// CHECK:   math.tanh
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.gelu %x : tensor<4xf32>
  %1 = kiln.gelu %x {approximate = "tanh"} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Clip: an infinite float bound needs no clamp.
// CHECK-LABEL: func @clip
// CHECK: linalg.generic
// CHECK:   %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[M:.*]] = arith.maximumf %{{.*}}, %[[LO]]
// CHECK:   %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK:   arith.minimumf %[[M]], %[[HI]]
// CHECK: linalg.generic
// CHECK:   %[[LO2:.*]] = arith.constant -1.000000e+00 : f32
// CHECK:   %[[R:.*]] = arith.maximumf %{{.*}}, %[[LO2]]
// CHECK-NOT: arith.minimumf
// CHECK:   linalg.yield %[[R]]
func.func @clip(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  %1 = kiln.clip %x {min = -1.0 : f64, max = 0x7FF0000000000000 : f64} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Casts follow ONNX Cast: float -> int truncates, bool -> float is unsigned,
// anything -> bool compares with zero.
// CHECK-LABEL: func @casts
// CHECK: linalg.generic
// CHECK:   arith.fptosi %{{.*}} : f32 to i32
// CHECK: linalg.generic
// CHECK:   arith.uitofp %{{.*}} : i1 to f32
// CHECK: linalg.generic
// CHECK:   arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK: linalg.generic
// CHECK:   arith.extf %{{.*}} : f16 to f32
func.func @casts(%f: tensor<4xf32>, %b: tensor<4xi1>, %i: tensor<4xi64>, %h: tensor<4xf16>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = kiln.cast %f : tensor<4xf32> to tensor<4xi32>
  %1 = kiln.cast %b : tensor<4xi1> to tensor<4xf32>
  %2 = kiln.cast %i : tensor<4xi64> to tensor<4xi1>
  %3 = kiln.cast %h : tensor<4xf16> to tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// -----

// Constants and reshapes inside computations lower too.
// CHECK-LABEL: func @constant_reshape
// CHECK: %[[C:.*]] = arith.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK: %[[R:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: return %[[C]], %[[R]]
func.func @constant_reshape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %c = kiln.constant dense<1.0> : tensor<2x3xf32>
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %c, %0 : tensor<2x3xf32>, tensor<6xf32>
}

// -----

// A splat exponent of 2 is a multiply, not a powf.
// CHECK-LABEL: func.func @pow_square
// CHECK-NOT: math.powf
// CHECK: arith.mulf %[[IN:.*]], %[[IN]] : f32
func.func @pow_square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %0 = kiln.pow %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An infinite clip bound on an integer tensor saturates to the type's range.
// CHECK-LABEL: func.func @clip_i64_inf
// CHECK: arith.constant 9223372036854775807 : i64
// CHECK: arith.minsi
func.func @clip_i64_inf(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = kiln.clip %x {min = 0.0 : f64, max = 0x7FF0000000000000 : f64} : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// max and min of booleans are or and and.
// CHECK-LABEL: func.func @max_min_i1
// CHECK: arith.ori
// CHECK: arith.andi
func.func @max_min_i1(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.max %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = kiln.min %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Trigonometric and hyperbolic functions and their inverses stay math ops
// (the gfx pipeline expands or approximates them, the cpu one calls libm).
// CHECK-LABEL: func @trig
// CHECK: math.tan %{{.*}} : f32
// CHECK: math.asin %{{.*}} : f32
// CHECK: math.acos %{{.*}} : f32
// CHECK: math.atan %{{.*}} : f32
// CHECK: math.sinh %{{.*}} : f32
// CHECK: math.cosh %{{.*}} : f32
// CHECK: math.asinh %{{.*}} : f32
// CHECK: math.acosh %{{.*}} : f32
// CHECK: math.atanh %{{.*}} : f32
func.func @trig(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.tan %x : tensor<4xf32>
  %1 = kiln.asin %0 : tensor<4xf32>
  %2 = kiln.acos %1 : tensor<4xf32>
  %3 = kiln.atan %2 : tensor<4xf32>
  %4 = kiln.sinh %3 : tensor<4xf32>
  %5 = kiln.cosh %4 : tensor<4xf32>
  %6 = kiln.asinh %5 : tensor<4xf32>
  %7 = kiln.acosh %6 : tensor<4xf32>
  %8 = kiln.atanh %7 : tensor<4xf32>
  return %8 : tensor<4xf32>
}

// -----

// Rotary embedding: one generic over the input; each element's partner
// (j + 4 in the first half, j - 4 in the second) read with tensor.extract
// and negated in the first half; f16 computes in f32 and rounds once.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[POS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func @rotary_embedding
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[POS]], #[[POS]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %arg1, %arg2 : tensor<2x4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>)
// CHECK: ^bb0(%[[X:.*]]: f16, %[[C:.*]]: f16, %[[S:.*]]: f16, %{{.*}}: f16):
// CHECK-DAG: %[[I0:.*]] = linalg.index 0
// CHECK-DAG: %[[I1:.*]] = linalg.index 1
// CHECK-DAG: %[[J:.*]] = linalg.index 2
// CHECK-DAG: %[[H:.*]] = arith.constant 4 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[J]], %[[H]]
// CHECK-DAG: %[[DOWN:.*]] = arith.subi %[[J]], %[[H]]
// CHECK-DAG: %[[UP:.*]] = arith.addi %[[J]], %[[H]]
// CHECK: %[[P:.*]] = arith.select %[[FIRST]], %[[UP]], %[[DOWN]]
// CHECK: %[[OTHER:.*]] = tensor.extract %arg0[%[[I0]], %[[I1]], %[[P]]]
// CHECK: %[[O32:.*]] = arith.extf %[[OTHER]] : f16 to f32
// CHECK: %[[NEG:.*]] = arith.negf %[[O32]]
// CHECK: %[[ROT:.*]] = arith.select %[[FIRST]], %[[NEG]], %[[O32]]
// CHECK: %[[XC:.*]] = arith.mulf
// CHECK: %[[RS:.*]] = arith.mulf %[[ROT]]
// CHECK: %[[Y:.*]] = arith.addf %[[XC]], %[[RS]] : f32
// CHECK: arith.truncf %[[Y]] : f32 to f16
func.func @rotary_embedding(%x: tensor<2x4x8xf16>, %c: tensor<4x8xf16>, %s: tensor<4x8xf16>) -> tensor<2x4x8xf16> {
  %y = kiln.rotary_embedding %x, %c, %s : (tensor<2x4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<2x4x8xf16>
  return %y : tensor<2x4x8xf16>
}

// -----

// Interleaved: the partner is j xor 1, negated at even j.
// CHECK-LABEL: func @rotary_embedding_interleaved
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[P:.*]] = arith.xori %[[J]], %[[ONE]]
// CHECK: %[[ODD:.*]] = arith.andi %[[J]], %[[ONE]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[ODD]]
// CHECK: tensor.extract %arg0[%{{.*}}, %[[P]]]
// CHECK: arith.select %[[FIRST]]
func.func @rotary_embedding_interleaved(%x: tensor<3x6xf32>, %c: tensor<6xf32>, %s: tensor<6xf32>) -> tensor<3x6xf32> {
  %y = kiln.rotary_embedding %x, %c, %s {interleaved = true} : (tensor<3x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}
