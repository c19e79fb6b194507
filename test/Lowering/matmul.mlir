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

// -----

// kiln.matmul_integer, signed operands without zero points: one linalg.matmul
// reading the i8 operands (linalg's default cast sign-extends them) into an
// i32 accumulator.
// CHECK-LABEL: func @matmul_integer_signed
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<3x5xi32>)
// CHECK: %[[C:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<3x4xi8>, tensor<4x5xi8>) outs(%[[ACC]] : tensor<3x5xi32>)
// CHECK: return %[[C]]
func.func @matmul_integer_signed(%a: tensor<3x4xi8>, %b: tensor<4x5xi8>) -> tensor<3x5xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<3x4xi8>, tensor<4x5xi8>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

// Unsigned operands and operands with zero points are widened to i32 first:
// ui8 elements (signless i8 after the lowering) are zero-extended, i8 ones
// sign-extended; a run-time zero point is extended the same way, a constant
// one is extended at compile time. The GEMM then multiplies in i32.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @matmul_integer_zero_points
// CHECK-SAME: (%arg0: tensor<2x3x4xi8>, %arg1: tensor<4x5xi8>, %arg2: tensor<i8>)
// CHECK: %[[A:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[SCALAR]], #[[ID3]]], {{.*}}} ins(%arg0, %arg2 : tensor<2x3x4xi8>, tensor<i8>) outs(%{{.*}} : tensor<2x3x4xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[ZX:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT: %[[XW:.*]] = arith.extui %[[X]] : i8 to i32
// CHECK-NEXT: %[[ZW:.*]] = arith.extui %[[ZX]] : i8 to i32
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[XW]], %[[ZW]] : i32
// CHECK-NEXT: linalg.yield %[[D]] : i32
// CHECK: %[[ZB:.*]] = arith.constant dense<[1, -2, 3, 0, 5]> : tensor<5xi32>
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[COL]], #[[ID2]]], {{.*}}} ins(%arg1, %[[ZB]] : tensor<4x5xi8>, tensor<5xi32>) outs(%{{.*}} : tensor<4x5xi32>)
// CHECK-NEXT: ^bb0(%[[Y:.*]]: i8, %[[ZY:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[YW:.*]] = arith.extsi %[[Y]] : i8 to i32
// CHECK-NEXT: %[[E:.*]] = arith.subi %[[YW]], %[[ZY]] : i32
// CHECK-NEXT: linalg.yield %[[E]] : i32
// CHECK: %[[A2:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1], [2]] : tensor<2x3x4xi32> into tensor<6x4xi32>
// CHECK: linalg.matmul ins(%[[A2]], %[[B]] : tensor<6x4xi32>, tensor<4x5xi32>) outs(%{{.*}} : tensor<6x5xi32>)
func.func @matmul_integer_zero_points(%a: tensor<2x3x4xui8>, %b: tensor<4x5xi8>, %za: tensor<ui8>) -> tensor<2x3x5xi32> {
  %zb = kiln.constant dense<[1, -2, 3, 0, 5]> : tensor<5xi8>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%za) rhs_zero_point(%zb) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<ui8>, tensor<5xi8>) -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}

// -----

// Batched integer products take the generic contraction, extending any i8
// operand left in the body.
// CHECK-LABEL: func @batch_matmul_integer
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x4x5xi8>) outs(%{{.*}} : tensor<2x4x5xi32>)
// CHECK-NEXT: ^bb0(%[[U:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT: arith.extui %[[U]] : i8 to i32
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[B]] : tensor<2x3x4xi8>, tensor<2x4x5xi32>) outs(%{{.*}} : tensor<2x3x5xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[Y:.*]]: i32, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[XW:.*]] = arith.extsi %[[X]] : i8 to i32
// CHECK-NEXT: %[[P:.*]] = arith.muli %[[XW]], %[[Y]] : i32
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : i32
func.func @batch_matmul_integer(%a: tensor<2x3x4xi8>, %b: tensor<2x4x5xui8>) -> tensor<2x3x5xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<2x3x4xi8>, tensor<2x4x5xui8>) -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}

// -----

// The quantized form (uint8 activations with one constant zero point, int8
// weights whose zero point is 0): one GEMM generic over the raw bytes, the
// lhs zero-extended and the rhs sign-extended in the body, minus the zero
// point times the column sums of the weights.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[COL3:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @matmul_integer_quantized
// CHECK-NOT: linalg.matmul
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %arg1 : tensor<6x4xi8>, tensor<4x5xi8>) outs(%{{.*}} : tensor<6x5xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[Y:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[XW:.*]] = arith.extui %[[X]] : i8 to i32
// CHECK-NEXT: %[[YW:.*]] = arith.extsi %[[Y]] : i8 to i32
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[COL]]], iterator_types = ["reduction", "parallel"]} ins(%arg1 : tensor<4x5xi8>) outs(%{{.*}} : tensor<5xi32>)
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[COL3]], #[[ID3]]], {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<2x3x5xi32>, tensor<5xi32>)
// CHECK-NEXT: ^bb0(%[[P:.*]]: i32, %[[Q:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[Z:.*]] = arith.constant 200 : i32
// CHECK-NEXT: %[[ZQ:.*]] = arith.muli %[[Z]], %[[Q]] : i32
// CHECK-NEXT: arith.subi %[[P]], %[[ZQ]] : i32
func.func @matmul_integer_quantized(%a: tensor<2x3x4xui8>, %b: tensor<4x5xi8>) -> tensor<2x3x5xi32> {
  %za = kiln.constant dense<200> : tensor<ui8>
  %zb = kiln.constant dense<0> : tensor<i8>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%za) rhs_zero_point(%zb) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}

// -----

// The same for uint4 activations by int4 weights (a QDQ int4 model): both
// read as 4-bit values, the lhs zero-extended in the body, so that the gfx
// kernels see 4-bit operands (RDNA's iu4 WMMA).
// CHECK-LABEL: func @matmul_integer_quantized_int4
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<6x4xi4>, tensor<4x5xi4>) outs(%{{.*}} : tensor<6x5xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i4, %[[Y:.*]]: i4, %{{.*}}: i32):
// CHECK-NEXT: arith.extui %[[X]] : i4 to i32
// CHECK-NEXT: arith.extsi %[[Y]] : i4 to i32
// CHECK: arith.constant 8 : i32
func.func @matmul_integer_quantized_int4(%a: tensor<2x3x4xui4>, %b: tensor<4x5xi4>) -> tensor<2x3x5xi32> {
  %za = kiln.constant dense<8> : tensor<ui4>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%za) : (tensor<2x3x4xui4>, tensor<4x5xi4>, tensor<ui4>) -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}

// -----

// kiln.matmul_int4: the leading dimensions fold into M and K splits into
// (group, half, j) so that every map is a projection: lhs[m, g, p, j] is
// k = g * B + p * B / 2 + j, the byte weights[g, j, n] holds that row's
// code in bits 4p..4p+3; (code - zero) * scale is the weight.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d1)>
// CHECK-DAG: #[[GN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
// CHECK-LABEL: func @matmul_int4
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x3x64xf32> into tensor<6x64xf32>
// CHECK: %[[X:.*]] = tensor.expand_shape %[[A]] {{\[}}[0], [1, 2, 3]] output_shape [6, 2, 2, 16]
// CHECK: %[[ACC:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[W]], #[[GN]], #[[GN]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %arg1, %arg2, %arg3 : {{.*}}) outs(%[[ACC]] : tensor<6x40xf32>) attrs = {kiln.int4_matmul}
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[BYTE:.*]]: i8, %[[S:.*]]: f32, %[[Z:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK: %[[WIDE:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK: %[[P:.*]] = linalg.index 3 : index
// CHECK: %[[SHIFT:.*]] = arith.muli
// CHECK: %[[SH:.*]] = arith.shrui %[[WIDE]], %[[SHIFT]] : i32
// CHECK: %[[CODE:.*]] = arith.andi %[[SH]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.sitofp %[[CODE]] : i32 to f32
// CHECK: %[[D:.*]] = arith.subf %[[F]], %[[Z]] : f32
// CHECK: %[[WV:.*]] = arith.mulf %[[D]], %[[S]] : f32
// CHECK: %[[PROD:.*]] = arith.mulf %[[IN]], %[[WV]] : f32
// CHECK: arith.addf %[[OUT]], %[[PROD]] : f32
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 3, 40]
func.func @matmul_int4(%x: tensor<2x3x64xf32>, %w: tensor<2x16x40xi8>, %s: tensor<2x40xf32>, %z: tensor<2x40xf32>) -> tensor<2x3x40xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<2x3x64xf32>, tensor<2x16x40xi8>, tensor<2x40xf32>, tensor<2x40xf32>) -> tensor<2x3x40xf32>
  return %0 : tensor<2x3x40xf32>
}

// -----

// Column panels of 32 (kiln-pack-int4-weights): the same loops, the codes
// read at (n floordiv 32, g, j, n mod 32) and the scales and zero points at
// (n floordiv 32, g, n mod 32); the result's map stays (m, n).
// CHECK-DAG: #[[WP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d4, d1 mod 32)>
// CHECK-DAG: #[[GP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d1 mod 32)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
// CHECK-LABEL: func @matmul_int4_panels
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[WP]], #[[GP]], #[[GP]], #[[MN]]], {{.*}} outs(%{{.*}} : tensor<3x64xf32>) attrs = {kiln.int4_matmul}
func.func @matmul_int4_panels(%x: tensor<3x64xf32>, %w: tensor<2x2x16x32xi8>, %s: tensor<2x2x32xf32>, %z: tensor<2x2x32xf32>) -> tensor<3x64xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<3x64xf32>, tensor<2x2x16x32xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<3x64xf32>
  return %0 : tensor<3x64xf32>
}

// -----

// W4A8 (int8_activations) in the dot-product kernel's panels: a first
// generic takes each row's largest magnitude per group as the bits of the
// f32 in an i32 (max of unsigned integers); the product reads it, quantizes
// its element (x * 127 / amax, rounded half to even; 0 when amax is 0) and
// scales by amax / 127 * scale. The codes are read at (n floordiv 32, g,
// j floordiv 4, n mod 32, j mod 4).
// CHECK-DAG: #[[X4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[MG4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-DAG: #[[WQ:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d4 floordiv 4, d1 mod 32, d4 mod 4)>
// CHECK-DAG: #[[GP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d1 mod 32)>
// CHECK-DAG: #[[MG:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
// CHECK-LABEL: func @matmul_int4_int8_activations
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2, 3]] output_shape [3, 2, 2, 16]
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<3x2xi32>
// CHECK: %[[AMAX:.*]] = linalg.generic {indexing_maps = [#[[X4]], #[[MG4]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[X]] : tensor<3x2x2x16xf32>) outs(%[[ZERO]] : tensor<3x2xi32>)
// CHECK: %[[ABS:.*]] = math.absf
// CHECK: %[[BITS:.*]] = arith.bitcast %[[ABS]] : f32 to i32
// CHECK: arith.maxui %{{.*}}, %[[BITS]] : i32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[WQ]], #[[GP]], #[[GP]], #[[MG]], #[[MN]]], {{.*}} ins(%[[X]], %arg1, %arg2, %arg3, %[[AMAX]] : {{.*}}) outs(%{{.*}} : tensor<3x64xf32>) attrs = {kiln.int4_matmul}
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: i8, %[[S:.*]]: f32, %[[Z:.*]]: f32, %[[A:.*]]: i32, %[[OUT:.*]]: f32):
// CHECK: %[[D:.*]] = arith.subf %{{.*}}, %[[Z]] : f32
// CHECK: %[[AF:.*]] = arith.bitcast %[[A]] : i32 to f32
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[AF]]
// CHECK: %[[INV:.*]] = arith.select %[[POS]]
// CHECK: %[[XS:.*]] = arith.mulf %[[IN]], %[[INV]] : f32
// CHECK: %[[XQ:.*]] = math.roundeven %[[XS]] : f32
// CHECK: %[[SA:.*]] = arith.divf %[[AF]]
// CHECK: %[[T:.*]] = arith.mulf %[[SA]], %[[S]] : f32
// CHECK: %[[P:.*]] = arith.mulf %[[XQ]], %[[D]] : f32
// CHECK: %[[U:.*]] = arith.mulf %[[P]], %[[T]] : f32
// CHECK: arith.addf %[[OUT]], %[[U]] : f32
func.func @matmul_int4_int8_activations(%x: tensor<3x64xf32>, %w: tensor<2x2x4x32x4xi8>, %s: tensor<2x2x32xf32>, %z: tensor<2x2x32xf32>) -> tensor<3x64xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<3x64xf32>, tensor<2x2x4x32x4xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<3x64xf32>
  return %0 : tensor<3x64xf32>
}

// -----

// kiln.matmul_panels: loops (m, n, k), the weight read at (n floordiv 16,
// k, n mod 16) and the result's map the projection (m, n); the leading
// dimensions fold into M.
// CHECK-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[WP:.*]] = affine_map<(d0, d1, d2) -> (d1 floordiv 16, d2, d1 mod 16)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @matmul_panels
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<2x1x8xf32> into tensor<2x8xf32>
// CHECK: %[[ACC:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[WP]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[A]], %arg1 : tensor<2x8xf32>, tensor<3x8x16xf32>) outs(%[[ACC]] : tensor<2x40xf32>) attrs = {kiln.panel_matmul}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [2, 1, 40]
func.func @matmul_panels(%x: tensor<2x1x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<2x1x40xf32> {
  %0 = kiln.matmul_panels %x, %w {columns = 40 : i64} : (tensor<2x1x8xf32>, tensor<3x8x16xf32>) -> tensor<2x1x40xf32>
  return %0 : tensor<2x1x40xf32>
}

// -----

// An 8-bit kiln.matmul_panels: the uint8 activations as signless bytes,
// zero-extended in the body, the int8 weights sign-extended, the i32 sum.
// CHECK-LABEL: func @matmul_panels_integer
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x8xi8>, tensor<2x8x16xi8>) outs(%{{.*}} : tensor<1x32xi32>) attrs = {kiln.panel_matmul}
// CHECK: ^bb0(%[[X:.*]]: i8, %[[W:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK: arith.extui %[[X]] : i8 to i32
// CHECK: arith.extsi %[[W]] : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
func.func @matmul_panels_integer(%x: tensor<1x8xui8>, %w: tensor<2x8x16xi8>) -> tensor<1x32xi32> {
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xui8>, tensor<2x8x16xi8>) -> tensor<1x32xi32>
  return %0 : tensor<1x32xi32>
}

// -----

// kiln.four_bit carries over to the contraction (the gfx GEMM builder's
// cue for a 4-bit instruction), also where the result is reshaped back.
// CHECK-LABEL: func @matmul_integer_four_bit
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<6x4xi8>, tensor<4x5xi8>) {{.*}} attrs = {kiln.four_bit}
func.func @matmul_integer_four_bit(%a: tensor<2x3x4xui8>, %b: tensor<4x5xi8>) -> tensor<2x3x5xi32> {
  %0 = kiln.matmul_integer %a, %b {kiln.four_bit} : (tensor<2x3x4xui8>, tensor<4x5xi8>) -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}

// -----

// CHECK-LABEL: func @matmul_integer_four_bit_signed
// CHECK: linalg.matmul {kiln.four_bit} ins(%arg0, %arg1 : tensor<3x4xi8>, tensor<4x5xi8>)
func.func @matmul_integer_four_bit_signed(%a: tensor<3x4xi8>, %b: tensor<4x5xi8>) -> tensor<3x5xi32> {
  %0 = kiln.matmul_integer %a, %b {kiln.four_bit} : (tensor<3x4xi8>, tensor<4x5xi8>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}
