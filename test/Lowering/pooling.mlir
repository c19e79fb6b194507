// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// Max pooling pads with -inf; with ceil_mode the padding also covers the
// last, partial window (5 rows: windows at 0, 2, 4 need 6).
// CHECK-LABEL: func @max_ceil
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK:   tensor.yield %[[NEG]] : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEG]] : f32) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK: %[[R:.*]] = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[PAD]], %[[WIN]] : tensor<1x2x6x6xf32>, tensor<2x2xf32>) outs(%[[INIT]] : tensor<1x2x3x3xf32>)
// CHECK: return %[[R]]
func.func @max_ceil(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Average pooling without pads: one uniform divisor.
// CHECK-LABEL: func @avg_uniform
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<1x3x4x4xf32>)
// CHECK:   %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK:   arith.divf %{{.*}}, %[[N]] : f32
func.func @avg_uniform(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %0 = kiln.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// Pads excluded from the count: the border windows average fewer elements,
// one count vector per spatial dimension (rows: 2, 3, 2; columns: 2, 3, 3).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d2)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func @avg_exclude_pad
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 0]
// CHECK:   tensor.yield %[[ZERO]] : f32
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum
// CHECK-DAG: %[[ROWS:.*]] = arith.constant dense<[2.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[COLS:.*]] = arith.constant dense<[2.000000e+00, 3.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[COL]], #[[ID]]], {{.*}}} ins(%[[SUM]], %[[ROWS]], %[[COLS]] :
// CHECK:   %[[COUNT:.*]] = arith.mulf
// CHECK:   arith.divf %{{.*}}, %[[COUNT]] : f32
func.func @avg_exclude_pad(%x: tensor<1x2x5x6xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 0>} : (tensor<1x2x5x6xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// count_include_pad with ceil_mode: pads count, the overhang past the end
// padding does not (6 columns + 1 + 1 pads, windows of 3 at stride 2 start
// at -1, 1, 3, 5: the last covers 5, the pad 6 and the overhang 7).
// CHECK-LABEL: func @avg_include_pad_ceil
// CHECK: tensor.pad %arg0 low[0, 0, 0, 1] high[0, 0, 0, 2]
// CHECK: linalg.pooling_nchw_sum
// CHECK: %[[COLS:.*]] = arith.constant dense<[3.000000e+00, 3.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[COLS]] :
// CHECK:   %[[K:.*]] = arith.constant 3.000000e+00 : f32
// CHECK:   %[[COUNT:.*]] = arith.mulf %[[K]], %{{.*}} : f32
// CHECK:   arith.divf %{{.*}}, %[[COUNT]] : f32
func.func @avg_include_pad_ceil(%x: tensor<1x1x3x6xf32>) -> tensor<1x1x1x4xf32> {
  %0 = kiln.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x1x3x6xf32>) -> tensor<1x1x1x4xf32>
  return %0 : tensor<1x1x1x4xf32>
}

// -----

// 1-D: the NCW named op.
// CHECK-LABEL: func @max_1d
// CHECK: linalg.pooling_ncw_max {dilations = dense<2> : tensor<1xi64>, strides = dense<1> : tensor<1xi64>}
func.func @max_1d(%x: tensor<2x3x8xf32>) -> tensor<2x3x6xf32> {
  %0 = kiln.max_pool %x {kernel = array<i64: 2>, strides = array<i64: 1>, dilations = array<i64: 2>, pads = array<i64: 0, 0>} : (tensor<2x3x8xf32>) -> tensor<2x3x6xf32>
  return %0 : tensor<2x3x6xf32>
}

// -----

// 3-D: a generic over (n, c, o..., k...) with a shape-only window operand.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2 * 2 + d5, d3 * 2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d6, d7)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func @max_3d
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[WIN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK:   arith.maximumf
func.func @max_3d(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32> {
  %0 = kiln.max_pool %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
  return %0 : tensor<1x2x2x2x2xf32>
}
