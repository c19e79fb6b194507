// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-gpu-distribute --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-gpu-distribute=workgroup-size=64 --canonicalize | FileCheck %s --check-prefix=WG64
//
// The generic gfx path: the last op of a dispatch is tiled into one fused
// tile per thread (an scf.forall with one iteration per thread), and the
// thread count and workgroups are recorded. The pipeline canonicalizes
// afterwards (the untiled originals are then dead); so does this test.

// Elementwise, 16 x 64: tiles of 4 along the last dimension, 16 * 16 = 256
// threads, one workgroup of 256 (four of 64).
// CHECK-LABEL: func @elementwise
// CHECK-SAME: kiln.thread_tiles = 256 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 256 : i64
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (16, 64) step (1, 4) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK-DAG: tensor.extract_slice %arg0[%[[I]], %[[J]]] [1, 4] [1, 1]
// CHECK-DAG: tensor.extract_slice %arg1[%[[I]], %[[J]]] [1, 4] [1, 1]
// CHECK: %[[ADD:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4xf32>)
// CHECK: arith.addf
// CHECK: tensor.parallel_insert_slice %[[ADD]] into %[[OUT]][%[[I]], %[[J]]] [1, 4] [1, 1]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// WG64-LABEL: func @elementwise
// WG64-SAME: kiln.thread_tiles = 256 : i64, kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 64 : i64
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: tensor<16x64xf32>, %b: tensor<16x64xf32>) -> tensor<16x64xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<16x64xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// A matmul with a ReLU: 4 x 4 outputs per thread behind a contraction, the
// fill and the matmul fused into the ReLU's tile (whole K per thread).
// 64 x 128 / 16 = 512 threads, two workgroups.
// CHECK-LABEL: func @matmul_relu
// CHECK-SAME: kiln.thread_tiles = 512 : i64, kiln.workgroup_count = 2 : i64
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (64, 128) step (4, 4)
// CHECK: %[[A:.*]] = tensor.extract_slice %arg0[%[[I]], 0] [4, 32] [1, 1]
// CHECK: %[[B:.*]] = tensor.extract_slice %arg1[0, %[[J]]] [32, 4] [1, 1]
// CHECK: %[[F:.*]] = linalg.fill {{.*}} -> tensor<4x4xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x32xf32>, tensor<32x4xf32>) outs(%[[F]] : tensor<4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<4x4xf32>)
// CHECK: arith.maximumf
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.matmul
// CHECK: return
// WG64-LABEL: func @matmul_relu
// WG64-SAME: kiln.thread_tiles = 512 : i64, kiln.workgroup_count = 8 : i64
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_relu(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>) -> tensor<64x128xf32> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %z : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

// -----

// Not a dispatch, or already given its workgroups (by the GEMM builder):
// left alone.
// CHECK-LABEL: func @not_a_dispatch
// CHECK-NOT: scf.forall
// CHECK-NOT: kiln.thread_tiles
// CHECK: math.exp
func.func @not_a_dispatch(%a: tensor<16xf32>) -> tensor<16xf32> {
  %0 = math.exp %a : tensor<16xf32>
  return %0 : tensor<16xf32>
}
// CHECK-LABEL: func @already_distributed
// CHECK-SAME: attributes {kiln.dispatch, kiln.workgroup_count = 3 : i64}
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
func.func @already_distributed(%a: tensor<16xf32>) -> tensor<16xf32> attributes {kiln.dispatch, kiln.workgroup_count = 3 : i64} {
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// expected-error @+1 {{dynamic iteration domain in a dispatch}}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> attributes {kiln.dispatch} {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A 3x3 conv over 960 padded channels: tiled as it is, every thread would
// hold its 960 x 3 x 3 padded window (69 KB, more than a gfx thread may
// have). The conv reads through the pad instead: a linalg.generic over the
// conv's loops whose body computes the input index (c, oh + kh - 1, ow + kw - 1),
// reads the argument where it falls inside (clamped to stay in bounds) and
// takes the padding value elsewhere; no tensor.pad and no window remain.
// CHECK-LABEL: func @padded_conv
// CHECK-NOT: tensor.pad
// CHECK: scf.forall
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: linalg.index 4
// CHECK: linalg.index 5
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sge
// CHECK: %[[READ:.*]] = tensor.extract %arg0[
// CHECK: %[[VALUE:.*]] = arith.select %{{.*}}, %[[READ]], %cst
// CHECK: arith.mulf %[[VALUE]]
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.generate
func.func @padded_conv(%x: tensor<1x960x4x4xf32>, %w: tensor<16x960x3x3xf32>) -> tensor<1x16x4x4xf32> attributes {kiln.dispatch} {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x960x4x4xf32> to tensor<1x960x6x6xf32>
  %e = tensor.empty() : tensor<1x16x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x960x6x6xf32>, tensor<16x960x3x3xf32>) outs(%f : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %c : tensor<1x16x4x4xf32>
}

// -----

// A dispatch that is one slice (columns 32..63 of every other row): a
// linalg.generic that reads the source at offset + stride * index, tiled
// over the threads like any elementwise op, instead of one thread copying
// everything. The rank-reducing slice keeps its dropped dimension at its
// offset.
// CHECK-LABEL: func @slice
// CHECK-SAME: kiln.thread_tiles = 32 : i64
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK: tensor.extract %arg0[
// CHECK-NOT: tensor.extract_slice %arg0[0, 32]
func.func @slice(%x: tensor<8x96xf32>) -> tensor<4x32xf32> attributes {kiln.dispatch} {
  %s = tensor.extract_slice %x[0, 32] [4, 32] [2, 1] : tensor<8x96xf32> to tensor<4x32xf32>
  return %s : tensor<4x32xf32>
}

// -----

// CHECK-LABEL: func @slice_rank_reducing
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: linalg.generic
// CHECK: tensor.extract %arg0[%[[C2]],
func.func @slice_rank_reducing(%x: tensor<3x64xf32>) -> tensor<64xf32> attributes {kiln.dispatch} {
  %s = tensor.extract_slice %x[2, 0] [1, 64] [1, 1] : tensor<3x64xf32> to tensor<64xf32>
  return %s : tensor<64xf32>
}
