// RUN: kiln-opt %s -split-input-file --kiln-merge-range-reductions | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-merge-range-reductions=max-reduced=1024 | FileCheck %s --check-prefix=SHORT

// A dynamic quantization's range in two steps (what the importer writes for
// DynamicQuantizeLinear of 32768 elements): the rows' minimum and maximum
// become the minima of [x; -x], one reduction of [2, 16, 2048]; the first
// half of its result is the rows' minimum, the second, negated, their
// maximum, both through slices (views: 16 floats, 64 bytes, per half).
// The second step is unchanged.
// CHECK-LABEL: func @range
// CHECK: %[[ROWS:.*]] = kiln.reshape %arg0 : tensor<1x128x256xf32> -> tensor<16x2048xf32>
// CHECK: %[[V:.*]] = kiln.reshape %[[ROWS]] : tensor<16x2048xf32> -> tensor<1x16x2048xf32>
// CHECK: %[[SIGNS:.*]] = kiln.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK: %[[P:.*]] = kiln.mul %[[V]], %[[SIGNS]] : (tensor<1x16x2048xf32>, tensor<2x1x1xf32>) -> tensor<2x16x2048xf32>
// CHECK: %[[E:.*]] = kiln.reduce_min %[[P]] {axes = array<i64: 2>, keepdims = false} : (tensor<2x16x2048xf32>) -> tensor<2x16xf32>
// CHECK: %[[A:.*]] = kiln.slice %[[E]] {ends = array<i64: 1, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x16xf32> -> tensor<1x16xf32>
// CHECK: %[[LO:.*]] = kiln.reshape %[[A]] : tensor<1x16xf32> -> tensor<16xf32>
// CHECK: %[[B:.*]] = kiln.slice %[[E]] {ends = array<i64: 2, 16>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : tensor<2x16xf32> -> tensor<1x16xf32>
// CHECK: %[[NHI:.*]] = kiln.reshape %[[B]] : tensor<1x16xf32> -> tensor<16xf32>
// CHECK: %[[HI:.*]] = kiln.neg %[[NHI]] : tensor<16xf32>
// CHECK: kiln.reduce_min %[[LO]] {axes = array<i64: 0>, keepdims = false} : (tensor<16xf32>) -> tensor<f32>
// CHECK: kiln.reduce_max %[[HI]] {axes = array<i64: 0>, keepdims = false} : (tensor<16xf32>) -> tensor<f32>
// CHECK-NOT: kiln.reduce_max %[[ROWS]]
// With max-reduced=1024 rows of 2048 are left as they are.
// SHORT-LABEL: func @range
// SHORT-NOT: kiln.mul
// SHORT: kiln.reduce_min %{{.*}} : (tensor<16x2048xf32>) -> tensor<16xf32>
// SHORT: kiln.reduce_max %{{.*}} : (tensor<16x2048xf32>) -> tensor<16xf32>
func.func @range(%x: tensor<1x128x256xf32>) -> (tensor<f32>, tensor<f32>) {
  %rows = kiln.reshape %x : tensor<1x128x256xf32> -> tensor<16x2048xf32>
  %0 = kiln.reduce_min %rows {axes = array<i64: 1>, keepdims = false} : (tensor<16x2048xf32>) -> tensor<16xf32>
  %1 = kiln.reduce_min %0 {axes = array<i64: 0>, keepdims = false} : (tensor<16xf32>) -> tensor<f32>
  %2 = kiln.reduce_max %rows {axes = array<i64: 1>, keepdims = false} : (tensor<16x2048xf32>) -> tensor<16xf32>
  %3 = kiln.reduce_max %2 {axes = array<i64: 0>, keepdims = false} : (tensor<16xf32>) -> tensor<f32>
  return %1, %3 : tensor<f32>, tensor<f32>
}

// -----

// Left as they are: 5 rows (a half of 5 floats is no aligned view), a
// maximum alone, a pair over different axes, a pair over two axes, keepdims,
// f16, and a pair over rows of 16384 (more than max-reduced).
// CHECK-LABEL: func @unchanged
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.neg
// CHECK: return
func.func @unchanged(%a: tensor<5x2000xf32>, %b: tensor<16x64xf32>, %c: tensor<16x16x64xf32>,
                     %d: tensor<16x64xf16>, %e: tensor<16x16384xf32>)
    -> (tensor<5xf32>, tensor<5xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>,
        tensor<16xf32>, tensor<16xf32>, tensor<16x1xf32>, tensor<16x1xf32>, tensor<16xf16>,
        tensor<16xf16>, tensor<16xf32>, tensor<16xf32>) {
  %0 = kiln.reduce_min %a {axes = array<i64: 1>, keepdims = false} : (tensor<5x2000xf32>) -> tensor<5xf32>
  %1 = kiln.reduce_max %a {axes = array<i64: 1>, keepdims = false} : (tensor<5x2000xf32>) -> tensor<5xf32>
  %2 = kiln.reduce_max %b {axes = array<i64: 1>, keepdims = false} : (tensor<16x64xf32>) -> tensor<16xf32>
  %3 = kiln.reduce_min %b {axes = array<i64: 0>, keepdims = false} : (tensor<16x64xf32>) -> tensor<64xf32>
  %4 = kiln.reduce_min %c {axes = array<i64: 1, 2>, keepdims = false} : (tensor<16x16x64xf32>) -> tensor<16xf32>
  %5 = kiln.reduce_max %c {axes = array<i64: 1, 2>, keepdims = false} : (tensor<16x16x64xf32>) -> tensor<16xf32>
  %6 = kiln.reduce_min %b {axes = array<i64: 1>, keepdims = true} : (tensor<16x64xf32>) -> tensor<16x1xf32>
  %7 = kiln.reduce_max %b {axes = array<i64: 1>, keepdims = true} : (tensor<16x64xf32>) -> tensor<16x1xf32>
  %8 = kiln.reduce_min %d {axes = array<i64: 1>, keepdims = false} : (tensor<16x64xf16>) -> tensor<16xf16>
  %9 = kiln.reduce_max %d {axes = array<i64: 1>, keepdims = false} : (tensor<16x64xf16>) -> tensor<16xf16>
  %10 = kiln.reduce_min %e {axes = array<i64: 1>, keepdims = false} : (tensor<16x16384xf32>) -> tensor<16xf32>
  %11 = kiln.reduce_max %e {axes = array<i64: 1>, keepdims = false} : (tensor<16x16384xf32>) -> tensor<16xf32>
  return %0, %1, %2, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<5xf32>, tensor<5xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x1xf32>, tensor<16x1xf32>, tensor<16xf16>, tensor<16xf16>, tensor<16xf32>, tensor<16xf32>
}

// -----

// The minimum after its maximum, each read before the other's op: the
// merged reduction goes before both.
// CHECK-LABEL: func @order
// CHECK: kiln.reduce_min %{{.*}} : (tensor<2x32x64xf32>) -> tensor<2x32xf32>
// CHECK: kiln.neg
// CHECK: kiln.add
// CHECK: kiln.sub
func.func @order(%x: tensor<32x64xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %0 = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<32x64xf32>) -> tensor<32xf32>
  %1 = kiln.add %0, %0 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %2 = kiln.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<32x64xf32>) -> tensor<32xf32>
  %3 = kiln.sub %2, %1 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  return %1, %3 : tensor<32xf32>, tensor<32xf32>
}
