// RUN: kiln-opt %s -split-input-file --kiln-raise-rms-norms | FileCheck %s

// RMSNorm as a LLaMA-style export writes it: x * (1 / sqrt(mean(x^2) + eps))
// * w becomes one kiln.rms_norm, and the chain is gone.
// CHECK-LABEL: func @pow_div_mul
// CHECK-NEXT: %[[Y:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @pow_div_mul(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<1x8x64xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %q = kiln.pow %x, %two : (tensor<1x8x64xf32>, tensor<f32>) -> tensor<1x8x64xf32>
  %m = kiln.reduce_mean %q {axes = array<i64: 2>} : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
  %v = kiln.add %m, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32>
  %s = kiln.sqrt %v : tensor<1x8x1xf32>
  %r = kiln.div %one, %s : (tensor<f32>, tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %n = kiln.mul %x, %r : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32>
  %y = kiln.mul %n, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// x * x, eps first, rsqrt, the scale on the left.
// CHECK-LABEL: func @square_rsqrt
// CHECK-NEXT: %[[Y:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @square_rsqrt(%x: tensor<4x32xf32>, %w: tensor<32xf32>) -> tensor<4x32xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<1x1xf32>
  %q = kiln.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %v = kiln.add %eps, %m : (tensor<1x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = kiln.rsqrt %v : tensor<4x1xf32>
  %n = kiln.mul %r, %x : (tensor<4x1xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = kiln.mul %w, %n : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// x / sqrt(...) and reciprocal(sqrt(...)), over the last two dimensions.
// CHECK-LABEL: func @div_and_reciprocal
// CHECK: kiln.rms_norm %arg0, %arg1 {axis = 1 : i64, {{.*}}} : (tensor<2x4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
// CHECK: kiln.rms_norm %arg0, %arg1 {axis = 1 : i64, {{.*}}} : (tensor<2x4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NOT: kiln.reduce_mean
func.func @div_and_reciprocal(%x: tensor<2x4x16xf32>, %w: tensor<4x16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %q = kiln.mul %x, %x : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %m = kiln.reduce_mean %q {axes = array<i64: 1, 2>} : (tensor<2x4x16xf32>) -> tensor<2x1x1xf32>
  %v = kiln.add %m, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %s = kiln.sqrt %v : tensor<2x1x1xf32>
  %n = kiln.div %x, %s : (tensor<2x4x16xf32>, tensor<2x1x1xf32>) -> tensor<2x4x16xf32>
  %y = kiln.mul %n, %w : (tensor<2x4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
  %q2 = kiln.mul %x, %x : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %m2 = kiln.reduce_mean %q2 {axes = array<i64: 1, 2>} : (tensor<2x4x16xf32>) -> tensor<2x1x1xf32>
  %v2 = kiln.add %m2, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %s2 = kiln.sqrt %v2 : tensor<2x1x1xf32>
  %r2 = kiln.reciprocal %s2 : tensor<2x1x1xf32>
  %n2 = kiln.mul %x, %r2 : (tensor<2x4x16xf32>, tensor<2x1x1xf32>) -> tensor<2x4x16xf32>
  %y2 = kiln.mul %n2, %w : (tensor<2x4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
  return %y, %y2 : tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// Not RMSNorms: the mean read elsewhere too, a mean over the first axis, a
// cube, an epsilon per row, a scale along the rows.
// CHECK-LABEL: func @not_rms_norms
// CHECK-NOT: kiln.rms_norm
// CHECK: return
func.func @not_rms_norms(%x: tensor<4x32xf32>, %w: tensor<32xf32>, %e: tensor<4x1xf32>, %rw: tensor<4x1xf32>)
    -> (tensor<4x32xf32>, tensor<4x1xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %q = kiln.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %v = kiln.add %m, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.rsqrt %v : tensor<4x1xf32>
  %n = kiln.mul %x, %r : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = kiln.mul %n, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // axis 0
  %q1 = kiln.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %m1 = kiln.reduce_mean %q1 {axes = array<i64: 0>} : (tensor<4x32xf32>) -> tensor<1x32xf32>
  %v1 = kiln.add %m1, %eps : (tensor<1x32xf32>, tensor<f32>) -> tensor<1x32xf32>
  %r1 = kiln.rsqrt %v1 : tensor<1x32xf32>
  %n1 = kiln.mul %x, %r1 : (tensor<4x32xf32>, tensor<1x32xf32>) -> tensor<4x32xf32>
  %y1 = kiln.mul %n1, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // x^3
  %q2 = kiln.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m2 = kiln.reduce_mean %q2 {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %v2 = kiln.add %m2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r2 = kiln.rsqrt %v2 : tensor<4x1xf32>
  %n2 = kiln.mul %x, %r2 : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y2 = kiln.mul %n2, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // an epsilon per row
  %q3 = kiln.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %m3 = kiln.reduce_mean %q3 {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %v3 = kiln.add %m3, %e : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %r3 = kiln.rsqrt %v3 : tensor<4x1xf32>
  %n3 = kiln.mul %x, %r3 : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y3 = kiln.mul %n3, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // a scale along the rows
  %q4 = kiln.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %m4 = kiln.reduce_mean %q4 {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %v4 = kiln.add %m4, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r4 = kiln.rsqrt %v4 : tensor<4x1xf32>
  %n4 = kiln.mul %x, %r4 : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y4 = kiln.mul %n4, %rw : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  return %y, %m, %y1, %y2, %y3, %y4 : tensor<4x32xf32>, tensor<4x1xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// A dynamic shape stays as it is (kiln.rms_norm is lowered for static ones).
// CHECK-LABEL: func @dynamic_rows
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.reduce_mean
func.func @dynamic_rows(%x: tensor<?x32xf32>, %w: tensor<32xf32>) -> tensor<?x32xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %q = kiln.mul %x, %x : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<?x32xf32>) -> tensor<?x1xf32>
  %v = kiln.add %m, %eps : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %r = kiln.rsqrt %v : tensor<?x1xf32>
  %n = kiln.mul %x, %r : (tensor<?x32xf32>, tensor<?x1xf32>) -> tensor<?x32xf32>
  %y = kiln.mul %n, %w : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
