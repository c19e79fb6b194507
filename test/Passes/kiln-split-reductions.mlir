// RUN: kiln-opt %s -split-input-file --kiln-split-reductions | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-split-reductions=threads=0 | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s -split-input-file --kiln-split-reductions=min-reduced=0 | FileCheck %s --check-prefix=SMALL
// RUN: kiln-opt %s -split-input-file --kiln-split-reductions=max-row=8192 | FileCheck %s --check-prefix=ROWS

// The per-row minimum of 16 rows of 8192 (a range --quantize=int8-dynamic
// takes at run time): each row in 256 parts of 32, so that 4096 threads
// reduce at once, then the parts.
// CHECK-LABEL: func @rows
// CHECK: %[[V:.*]] = kiln.reshape %arg0 : tensor<16x8192xf32> -> tensor<16x256x32xf32>
// CHECK: %[[P:.*]] = kiln.reduce_min %[[V]] {axes = array<i64: 2>, keepdims = false} : (tensor<16x256x32xf32>) -> tensor<16x256xf32>
// CHECK: %[[R:.*]] = kiln.reduce_min %[[P]] {axes = array<i64: 1>, keepdims = false} : (tensor<16x256xf32>) -> tensor<16xf32>
// CHECK: return %[[R]]
// OFF-LABEL: func @rows
// OFF: kiln.reduce_min %arg0 {axes = array<i64: 1>, keepdims = false} : (tensor<16x8192xf32>) -> tensor<16xf32>
// OFF-NOT: kiln.reduce_min
// With max-row=8192 (kiln-compile's, for the gfx row kernels) the rows stay
// whole: one reduction of the last axis alone, 8192 elements per output.
// ROWS-LABEL: func @rows
// ROWS-NOT: kiln.reshape
// ROWS: kiln.reduce_min %arg0 {axes = array<i64: 1>, keepdims = false} : (tensor<16x8192xf32>) -> tensor<16xf32>
// ROWS-NOT: kiln.reduce_min
func.func @rows(%x: tensor<16x8192xf32>) -> tensor<16xf32> {
  %0 = kiln.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<16x8192xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A mean over every axis but the first, kept: 4096 parts of 8, the mean of
// the parts' means, reshaped back to the kept dimensions; a sum and a
// maximum of trailing axes likewise.
// With max-row=8192 the mean and the sum, over two axes, are split all the
// same, and so is the maximum of rows of 16384 (more than max-row).
// ROWS-LABEL: func @whole
// ROWS: kiln.reduce_mean %{{.*}} : (tensor<1x4096x8xf32>) -> tensor<1x4096xf32>
// ROWS: kiln.reduce_sum %{{.*}} : (tensor<2x1024x8xf16>) -> tensor<2x1024xf16>
// ROWS: kiln.reduce_max %{{.*}} : (tensor<2x2048x8xf32>) -> tensor<2x2048xf32>
// CHECK-LABEL: func @whole
// CHECK: kiln.reshape %arg0 : tensor<1x128x256xf32> -> tensor<1x4096x8xf32>
// CHECK: kiln.reduce_mean %{{.*}} {axes = array<i64: 2>, keepdims = false} : (tensor<1x4096x8xf32>) -> tensor<1x4096xf32>
// CHECK: %[[M:.*]] = kiln.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = false} : (tensor<1x4096xf32>) -> tensor<1xf32>
// CHECK: kiln.reshape %[[M]] : tensor<1xf32> -> tensor<1x1x1xf32>
// CHECK: kiln.reduce_sum %{{.*}} : (tensor<2x1024x8xf16>) -> tensor<2x1024xf16>
// CHECK: kiln.reduce_sum %{{.*}} : (tensor<2x1024xf16>) -> tensor<2xf16>
// CHECK: kiln.reduce_max %{{.*}} : (tensor<2x2048x8xf32>) -> tensor<2x2048xf32>
func.func @whole(%x: tensor<1x128x256xf32>, %y: tensor<2x64x128xf16>, %z: tensor<2x16384xf32>) -> (tensor<1x1x1xf32>, tensor<2xf16>, tensor<2xf32>) {
  %0 = kiln.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x128x256xf32>) -> tensor<1x1x1xf32>
  %1 = kiln.reduce_sum %y {axes = array<i64: 1, 2>, keepdims = false} : (tensor<2x64x128xf16>) -> tensor<2xf16>
  %2 = kiln.reduce_max %z {axes = array<i64: 1>, keepdims = false} : (tensor<2x16384xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<1x1x1xf32>, tensor<2xf16>, tensor<2xf32>
}

// -----

// Unchanged: a reduced axis before a kept one (no view splits it), 4096
// outputs (threads enough), reductions of 1024 and of 15 elements (fewer
// than min-reduced), integers, and a product. With min-reduced=0 the sum
// of 1024 is split into 128 parts of 8; 15 elements still are not (no part
// of 8 or more divides them).
// CHECK-LABEL: func @unchanged
// CHECK-NOT: kiln.reshape
// CHECK: return
// SMALL-LABEL: func @unchanged
// SMALL: kiln.reshape %{{.*}} : tensor<2x1024xf32> -> tensor<2x128x8xf32>
// SMALL-NOT: kiln.reshape
func.func @unchanged(%a: tensor<4x4096x8xf32>, %b: tensor<4096x64xf32>, %c: tensor<2x15xf32>, %d: tensor<2x4096xi32>, %e: tensor<2x4096xf32>, %f: tensor<2x1024xf32>)
    -> (tensor<4x8xf32>, tensor<4096xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = kiln.reduce_sum %a {axes = array<i64: 1>, keepdims = false} : (tensor<4x4096x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.reduce_sum %b {axes = array<i64: 1>, keepdims = false} : (tensor<4096x64xf32>) -> tensor<4096xf32>
  %2 = kiln.reduce_max %c {axes = array<i64: 1>, keepdims = false} : (tensor<2x15xf32>) -> tensor<2xf32>
  %3 = kiln.reduce_sum %d {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xi32>) -> tensor<2xi32>
  %4 = kiln.reduce_prod %e {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xf32>) -> tensor<2xf32>
  %5 = kiln.reduce_sum %f {axes = array<i64: 1>, keepdims = false} : (tensor<2x1024xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4096xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>
}
