// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches="inline-scalars=false" | FileCheck %s --check-prefix=OFF

// A dynamic quantization's tail, from its range (%lo, %hi): the zero point
// (one element, its own dispatch), its casts to f32 (read by the quantize)
// and to i32 (read by the correction's product with the column sums). The
// zero point and its casts are computed again at the start of the two
// elementwise dispatches that read them instead of launched: two
// dispatches instead of five.
// CHECK-LABEL: func @zero_point
// CHECK: %[[Q:.*]] = kiln.dispatch "dispatch_2_div" (%arg0, %arg2, %arg1)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x16xf32>, %[[S:.*]]: tensor<f32>, %[[L:.*]]: tensor<f32>):
// CHECK-NEXT: kiln.constant
// CHECK-NEXT: %[[ZD:.*]] = kiln.div %[[L]], %[[S]]
// CHECK-NEXT: %[[ZS:.*]] = kiln.sub %{{.*}}, %[[ZD]]
// CHECK-NEXT: %[[ZR:.*]] = kiln.round %[[ZS]]
// CHECK-NEXT: %[[ZC:.*]] = kiln.clip %[[ZR]]
// CHECK-NEXT: %[[Z8:.*]] = kiln.cast %[[ZC]] : tensor<f32> to tensor<ui8>
// CHECK-NEXT: %[[ZF:.*]] = kiln.cast %[[Z8]] : tensor<ui8> to tensor<f32>
// CHECK-NEXT: %[[D:.*]] = kiln.div %[[X]], %[[S]]
// CHECK-NEXT: %[[R:.*]] = kiln.round %[[D]]
// CHECK-NEXT: kiln.add %[[R]], %[[ZF]]
// CHECK: %[[C:.*]] = kiln.dispatch "dispatch_4_mul" (%arg3, %arg1, %arg2)
// CHECK: kiln.cast %{{.*}} : tensor<f32> to tensor<ui8>
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<ui8> to tensor<i32>
// CHECK-NEXT: kiln.mul
// CHECK-NOT: kiln.dispatch
// CHECK: return %[[Q]], %[[C]]
// OFF-LABEL: func @zero_point
// OFF-COUNT-5: kiln.dispatch
// OFF-NOT: kiln.dispatch
func.func @zero_point(%x: tensor<4x16xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %colsum: tensor<8xi32>) -> (tensor<4x16xf32>, tensor<8xi32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %zd = kiln.div %lo, %hi : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zs = kiln.sub %zero, %zd : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zr = kiln.round %zs : tensor<f32>
  %zc = kiln.clip %zr {max = 2.550000e+02 : f64, min = 0.000000e+00 : f64} : tensor<f32>
  %z8 = kiln.cast %zc : tensor<f32> to tensor<ui8>
  %zf = kiln.cast %z8 : tensor<ui8> to tensor<f32>
  %d = kiln.div %x, %hi : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %r = kiln.round %d : tensor<4x16xf32>
  %q = kiln.add %r, %zf : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %zi = kiln.cast %z8 : tensor<ui8> to tensor<i32>
  %c = kiln.mul %zi, %colsum : (tensor<i32>, tensor<8xi32>) -> tensor<8xi32>
  return %q, %c : tensor<4x16xf32>, tensor<8xi32>
}

// -----

// A one-element value a reduction (not an elementwise dispatch) also reads
// stays a dispatch of its own: the row-reduction and GEMM kernels take
// their operands as arguments.
// CHECK-LABEL: func @read_by_a_reduction
// CHECK: %[[S:.*]] = kiln.dispatch "dispatch_0_mul"
// CHECK: kiln.dispatch "dispatch_1_reduce_sum" (%arg0, %[[S]])
// CHECK: kiln.dispatch "dispatch_2_add" (%arg0, %[[S]])
// OFF-LABEL: func @read_by_a_reduction
// OFF-COUNT-3: kiln.dispatch
func.func @read_by_a_reduction(%x: tensor<4x16xf32>, %m: tensor<f32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %s = kiln.mul %m, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.div %x, %s : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = kiln.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x16xf32>) -> tensor<f32>
  %a = kiln.add %x, %s : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  return %t, %a : tensor<f32>, tensor<4x16xf32>
}
