// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// Softmax along axis 1: max, e = exp(x - max) once per element, sum of e,
// 1 / sum once per row, e * (1 / sum); the statistics are [2, 5] tensors
// indexed by (d0, d2).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @softmax
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NEG]] : f32) outs(%{{.*}} : tensor<2x5xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<2x3x5xf32>) outs(%[[MAXINIT]] : tensor<2x5xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %[[MAX]] : tensor<2x3x5xf32>, tensor<2x5xf32>)
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   math.exp %[[D]]
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[EXP]] : tensor<2x3x5xf32>)
// CHECK-NOT: math.exp
// CHECK:   arith.addf
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x5xf32>)
// CHECK:   arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[EXP]], %[[INV]] :
// CHECK-NOT: math.exp
// CHECK:   arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = kiln.softmax %x {axis = 1 : i64} : tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Log-softmax: (x - max) - log(sum), the log once per row.
// CHECK-LABEL: func @log_softmax
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: %[[LOG:.*]] = linalg.generic
// CHECK:   math.log
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}}, %[[LOG]] :
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   arith.subf %[[D]], %{{.*}} : f32
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.softmax %x {axis = 1 : i64, log = true} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// f16 computes in f32 and rounds once at the end.
// CHECK-LABEL: func @softmax_f16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.generic
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf16>)
// CHECK:   %[[Y:.*]] = arith.mulf
// CHECK:   arith.truncf %[[Y]] : f32 to f16
func.func @softmax_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = kiln.softmax %x {axis = 1 : i64} : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// Layer norm over [1, 3): sum -> mean, sum of squared deviations -> 1/std,
// then (x - mean) * (1/std) * scale + bias; scale and bias broadcast against
// the trailing dimensions.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[STAT:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[VEC:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[TRAIL:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[STAT]]], iterator_types = ["parallel", "reduction", "reduction"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {indexing_maps = [#[[VEC]], #[[VEC]]], {{.*}}} ins(%[[SUM]] : tensor<2xf32>)
// CHECK:   %[[N:.*]] = arith.constant 1.200000e+01 : f32
// CHECK:   arith.divf %{{.*}}, %[[N]]
// CHECK: %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[STAT]], #[[STAT]]], iterator_types = ["parallel", "reduction", "reduction"]} ins(%arg0, %[[MEAN]] :
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   %[[D2:.*]] = arith.mulf %[[D]], %[[D]]
// CHECK:   arith.addf %{{.*}}, %[[D2]]
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<2xf32>)
// CHECK:   %[[VAR:.*]] = arith.divf
// CHECK:   %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK:   %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]]
// CHECK:   %[[STD:.*]] = math.sqrt %[[VE]]
// CHECK:   arith.divf %{{.*}}, %[[STD]]
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[STAT]], #[[STAT]], #[[LAST]], #[[TRAIL]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %[[MEAN]], %[[INV]], %arg1, %arg2 :
// CHECK:   %[[XC:.*]] = arith.subf
// CHECK:   %[[XN:.*]] = arith.mulf %[[XC]], %{{.*}}
// CHECK:   %[[XS:.*]] = arith.mulf %[[XN]], %{{.*}}
// CHECK:   arith.addf %[[XS]], %{{.*}}
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<2x3x4xf32>, %scale: tensor<4xf32>, %bias: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.layer_norm %x, %scale, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Without a bias the normalize step has no addition.
// CHECK-LABEL: func @layer_norm_nobias
// CHECK-COUNT-4: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}}, %{{.*}}, %arg1 : tensor<6x8xf32>, tensor<6xf32>, tensor<6xf32>, tensor<8xf32>)
// CHECK:   arith.mulf
// CHECK:   %[[Y:.*]] = arith.mulf
// CHECK-NEXT: linalg.yield %[[Y]]
func.func @layer_norm_nobias(%x: tensor<6x8xf32>, %scale: tensor<8xf32>) -> tensor<6x8xf32> {
  %0 = kiln.layer_norm %x, %scale {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// RMS norm: mean of squares, x / sqrt(ms + eps) * scale.
// CHECK-LABEL: func @rms_norm
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<6x8xf32>) outs(%{{.*}} : tensor<6xf32>)
// CHECK:   %[[X2:.*]] = arith.mulf %{{.*}}, %{{.*}}
// CHECK:   arith.addf %{{.*}}, %[[X2]]
// CHECK: %[[RMS:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<6xf32>)
// CHECK:   math.sqrt
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[RMS]], %arg1 :
// CHECK:   %[[Q:.*]] = arith.divf
// CHECK:   arith.mulf %[[Q]], %{{.*}}
func.func @rms_norm(%x: tensor<6x8xf32>, %scale: tensor<8xf32>) -> tensor<6x8xf32> {
  %0 = kiln.rms_norm %x, %scale {axis = 1 : i64, epsilon = 1.0e-06 : f64} : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// Batch norm: sqrt(var + eps) per channel, then one elementwise generic that
// reads the [C] parameters along dimension 1.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>, %[[S:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[M:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>)
// CHECK: %[[STD:.*]] = linalg.generic {{.*}} ins(%[[V]] : tensor<3xf32>)
// CHECK:   math.sqrt
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[CHAN]], #[[CHAN]], #[[CHAN]], #[[CHAN]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]], %[[M]], %[[STD]], %[[S]], %[[B]] :
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   %[[N:.*]] = arith.divf %[[D]], %{{.*}}
// CHECK:   %[[SC:.*]] = arith.mulf %[[N]], %{{.*}}
// CHECK:   arith.addf %[[SC]], %{{.*}}
func.func @batch_norm(%x: tensor<2x3x4x5xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %0 = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}
