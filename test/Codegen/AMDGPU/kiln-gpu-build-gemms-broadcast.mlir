// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --canonicalize --kiln-gpu-build-gemms --canonicalize --cse | FileCheck %s

// Grouped-query attention's scores: K has 2 heads, repeated to the 8 query
// heads (kiln.expand, reshape) and transposed, all inside the dispatch. The
// MFMA kernel reads K's head (workgroup / 4) where it is, with 16-byte
// buffer loads along k like Q's: no copy of the repeated heads.
// CHECK-DAG: #[[GROUP:.*]] = affine_map<()[s0] -> (s0 floordiv 4)>
// CHECK-LABEL: func @grouped_query_scores
// CHECK-SAME: (%arg0: memref<1x2x1x64x32xf16>, %arg1: memref<1x8x64x32xf16>, %arg2: memref<1x8x64x64xf16>)
// CHECK-SAME: kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 8
// CHECK: %[[K:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3], [4]] : memref<1x2x1x64x32xf16> into memref<1x2x64x32xf16>
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[H:.*]] = arith.index_cast %[[B]] : index to i32
// CHECK: amdgpu.raw_buffer_load %arg1[%{{.*}}, %[[H]], %{{.*}}, %{{.*}}] : memref<1x8x64x32xf16>, i32, i32, i32, i32 -> vector<8xf16>
// CHECK: %[[G:.*]] = affine.apply #[[GROUP]]()[%[[B]]]
// CHECK: %[[G32:.*]] = arith.index_cast %[[G]] : index to i32
// CHECK: amdgpu.raw_buffer_load %[[K]][%{{.*}}, %[[G32]], %{{.*}}, %{{.*}}] : memref<1x2x64x32xf16>, i32, i32, i32, i32 -> vector<8xf16>
// CHECK: amdgpu.mfma
func.func @grouped_query_scores(%k: tensor<1x2x1x64x32xf16>, %q: tensor<1x8x64x32xf16>) -> tensor<1x8x64x64xf16> attributes {kiln.dispatch} {
  %ke = kiln.expand %k : tensor<1x2x1x64x32xf16> -> tensor<1x2x4x64x32xf16>
  %kr = kiln.reshape %ke : tensor<1x2x4x64x32xf16> -> tensor<1x8x64x32xf16>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x8x64x32xf16> -> tensor<1x8x32x64xf16>
  %s = kiln.matmul %q, %kt : (tensor<1x8x64x32xf16>, tensor<1x8x32x64xf16>) -> tensor<1x8x64x64xf16>
  return %s : tensor<1x8x64x64xf16>
}

// -----

// Its context at a decode step: one row per head, V's 2 heads repeated to
// 8: the row-major GEMV kernel (no matrix instruction) reads V's head
// (workgroup / 4).
// CHECK-DAG: #[[GROUP:.*]] = affine_map<()[s0] -> (s0 floordiv 4)>
// CHECK-LABEL: func @grouped_query_decode_context
// CHECK-NOT: kiln.matrix_instruction
// CHECK: %[[V:.*]] = memref.collapse_shape %arg0
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[G:.*]] = affine.apply #[[GROUP]]()[%[[B]]]
// CHECK: vector.load %[[V]][%{{.*}}, %[[G]], %{{.*}}, %{{.*}}] : memref<1x2x40x32xf16>
func.func @grouped_query_decode_context(%v: tensor<1x2x1x40x32xf16>, %p: tensor<1x8x1x40xf16>) -> tensor<1x8x1x32xf16> attributes {kiln.dispatch} {
  %ve = kiln.expand %v : tensor<1x2x1x40x32xf16> -> tensor<1x2x4x40x32xf16>
  %vr = kiln.reshape %ve : tensor<1x2x4x40x32xf16> -> tensor<1x8x40x32xf16>
  %o = kiln.matmul %p, %vr : (tensor<1x8x1x40xf16>, tensor<1x8x40x32xf16>) -> tensor<1x8x1x32xf16>
  return %o : tensor<1x8x1x32xf16>
}
