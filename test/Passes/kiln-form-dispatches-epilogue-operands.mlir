// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches="epilogue-operands=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches | FileCheck %s --check-prefix=OFF

// A dynamically quantized matmul's tail: the correction (the zero point
// times the weight's column sums) and the scale (the activation's scale
// times the weight's per-channel scales) are per-channel products of
// scalars and constants that only the integer matmul's epilogue reads.
// With epilogue-operands both are computed in the matmul's dispatch (the
// zero point with them: it was inlined into the correction's dispatch):
// one dispatch instead of three.
// CHECK-LABEL: func @per_channel
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_{{[0-9]+}}_matmul_integer" (%arg0, %arg1, %arg4, %arg3, %arg2, %arg5)
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9]+]]: tensor<4x16xui8>, %[[W:[a-z0-9]+]]: tensor<16x8xi8>, %[[CS:[a-z0-9]+]]: tensor<8xi32>, %[[L:[a-z0-9]+]]: tensor<f32>, %[[S:[a-z0-9]+]]: tensor<f32>, %[[WS:[a-z0-9]+]]: tensor<8xf32>):
// CHECK: %[[SC:.*]] = kiln.mul %[[S]], %[[WS]]
// CHECK: kiln.cast %{{.*}} : tensor<ui8> to tensor<i32>
// CHECK: %[[CORR:.*]] = kiln.mul %{{.*}}, %[[CS]]
// CHECK: %[[P:.*]] = kiln.matmul_integer %[[X]], %[[W]]
// CHECK-NEXT: %[[C:.*]] = kiln.sub %[[P]], %[[CORR]]
// CHECK-NEXT: %[[F:.*]] = kiln.cast %[[C]]
// CHECK-NEXT: kiln.mul %[[F]], %[[SC]]
// CHECK-NOT: kiln.dispatch
// CHECK: return %[[D]]
// OFF-LABEL: func @per_channel
// OFF-COUNT-3: kiln.dispatch
// OFF-NOT: kiln.dispatch
func.func @per_channel(%x: tensor<4x16xui8>, %w: tensor<16x8xi8>, %s: tensor<f32>, %lo: tensor<f32>,
                       %colsum: tensor<8xi32>, %wscale: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %zd = kiln.div %lo, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zs = kiln.sub %zero, %zd : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zr = kiln.round %zs : tensor<f32>
  %zc = kiln.clip %zr {max = 2.550000e+02 : f64, min = 0.000000e+00 : f64} : tensor<f32>
  %z8 = kiln.cast %zc : tensor<f32> to tensor<ui8>
  %zi = kiln.cast %z8 : tensor<ui8> to tensor<i32>
  %corr = kiln.mul %zi, %colsum : (tensor<i32>, tensor<8xi32>) -> tensor<8xi32>
  %sc = kiln.mul %s, %wscale : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %p = kiln.matmul_integer %x, %w : (tensor<4x16xui8>, tensor<16x8xi8>) -> tensor<4x8xi32>
  %c = kiln.sub %p, %corr : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  %f = kiln.cast %c : tensor<4x8xi32> to tensor<4x8xf32>
  %y = kiln.mul %f, %sc : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Left as dispatches: a product also read by a second matmul, one read by a
// float matmul, and one of more than 4096 elements.
// CHECK-LABEL: func @kept
// OFF-LABEL: func @kept
// CHECK-COUNT-5: kiln.dispatch
// CHECK-NOT: kiln.dispatch
func.func @kept(%x: tensor<4x16xui8>, %w: tensor<16x8xi8>, %s: tensor<f32>, %wscale: tensor<8xf32>,
                %a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %xl: tensor<4x16xui8>,
                %wl: tensor<16x5000xi8>, %wsl: tensor<5000xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x5000xf32>) {
  %sc = kiln.mul %s, %wscale : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %p = kiln.matmul_integer %x, %w : (tensor<4x16xui8>, tensor<16x8xi8>) -> tensor<4x8xi32>
  %f = kiln.cast %p : tensor<4x8xi32> to tensor<4x8xf32>
  %y = kiln.mul %f, %sc : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %q = kiln.matmul %a, %b : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %z = kiln.mul %q, %sc : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %scl = kiln.mul %s, %wsl : (tensor<f32>, tensor<5000xf32>) -> tensor<5000xf32>
  %pl = kiln.matmul_integer %xl, %wl : (tensor<4x16xui8>, tensor<16x5000xi8>) -> tensor<4x5000xi32>
  %fl = kiln.cast %pl : tensor<4x5000xi32> to tensor<4x5000xf32>
  %yl = kiln.mul %fl, %scl : (tensor<4x5000xf32>, tensor<5000xf32>) -> tensor<4x5000xf32>
  return %y, %z, %y, %yl : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x5000xf32>
}

// -----

// The same for an integer convolution: its per-channel scale ([1, F, 1, 1],
// from a scalar and a small constant) is computed in its dispatch.
// CHECK-LABEL: func @conv
// CHECK: kiln.dispatch "dispatch_{{[0-9]+}}_conv_integer"
// CHECK: kiln.mul %{{.*}}, %{{.*}} : (tensor<f32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK: kiln.conv_integer
// CHECK-NOT: kiln.dispatch
// OFF-LABEL: func @conv
// OFF-COUNT-2: kiln.dispatch
func.func @conv(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>, %s: tensor<f32>) -> tensor<1x4x6x6xf32> {
  %ws = kiln.constant dense<[[[[0.5]], [[0.25]], [[0.125]], [[2.0]]]]> : tensor<1x4x1x1xf32>
  %sc = kiln.mul %s, %ws : (tensor<f32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
  %p = kiln.conv_integer %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi32>
  %f = kiln.cast %p : tensor<1x4x6x6xi32> to tensor<1x4x6x6xf32>
  %y = kiln.mul %f, %sc : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}
