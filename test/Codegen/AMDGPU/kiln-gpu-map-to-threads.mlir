// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-gpu-map-to-threads | FileCheck %s
//
// After bufferization the per-thread scf.forall of kiln-gpu-distribute
// becomes its body, run by the thread whose global id (block id x
// workgroup size + thread id, both constants known) is the iteration's
// linear index, guarded by id < tiles; temporaries become private allocas at
// the function entry and their deallocations go.

// 16 x 16 iterations of a (1, 4)-step forall, 256 threads per workgroup.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// CHECK-DAG: #[[X4:.*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-LABEL: func @elementwise
// CHECK-NEXT: %[[T:.*]] = memref.alloca() : memref<1x4xf32>
// CHECK-NEXT: %[[B:.*]] = gpu.block_id x
// CHECK-NEXT: %[[TH:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[G:.*]] = affine.apply #[[ID]](%[[B]], %[[TH]])
// CHECK-NEXT: %[[N:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[OK:.*]] = arith.cmpi ult, %[[G]], %[[N]] : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: %[[IJ:.*]]:2 = affine.delinearize_index %[[G]] into (16, 16)
// CHECK-NEXT: %[[I:.*]] = affine.apply #{{.*}}(%[[IJ]]#0)
// CHECK-NEXT: %[[J:.*]] = affine.apply #[[X4]](%[[IJ]]#1)
// CHECK-NEXT: %[[S:.*]] = memref.subview %arg0[%[[I]], %[[J]]] [1, 4] [1, 1]
// CHECK-NEXT: %[[D:.*]] = memref.subview %arg1[%[[I]], %[[J]]] [1, 4] [1, 1]
// CHECK-NEXT: linalg.exp ins(%[[S]] : {{.*}}) outs(%[[T]] : memref<1x4xf32>)
// CHECK-NEXT: memref.copy %[[T]], %[[D]]
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NOT: scf.forall
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.dealloc
func.func @elementwise(%a: memref<16x64xf32>, %out: memref<16x64xf32>) attributes {kiln.dispatch, kiln.thread_tiles = 256 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 256 : i64} {
  scf.forall (%i, %j) = (0, 0) to (16, 64) step (1, 4) {
    %s = memref.subview %a[%i, %j] [1, 4] [1, 1] : memref<16x64xf32> to memref<1x4xf32, strided<[64, 1], offset: ?>>
    %d = memref.subview %out[%i, %j] [1, 4] [1, 1] : memref<16x64xf32> to memref<1x4xf32, strided<[64, 1], offset: ?>>
    %t = memref.alloc() : memref<1x4xf32>
    linalg.exp ins(%s : memref<1x4xf32, strided<[64, 1], offset: ?>>) outs(%t : memref<1x4xf32>)
    memref.copy %t, %d : memref<1x4xf32> to memref<1x4xf32, strided<[64, 1], offset: ?>>
    memref.dealloc %t : memref<1x4xf32>
  }
  return
}

// -----

// 100 tiles in workgroups of 64: the threads past 100 idle; a dispatch
// without a forall (not tiled) runs on the guarded thread ids as it is.
// CHECK-LABEL: func @untiled
// CHECK: %[[G:.*]] = affine.apply #{{.*}}(%{{.*}}, %{{.*}})
// CHECK: %[[N:.*]] = arith.constant 100 : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[G]], %[[N]]
// CHECK: scf.if %[[OK]] {
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NEXT: }
func.func @untiled(%a: memref<4xf32>, %out: memref<4xf32>) attributes {kiln.dispatch, kiln.thread_tiles = 100 : i64, kiln.workgroup_count = 2 : i64, kiln.workgroup_size = 64 : i64} {
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Kernels of the GEMM builder (no kiln.thread_tiles) and functions that are
// not dispatches are already thread-level code: left alone.
// CHECK-LABEL: func @gemm_kernel
// CHECK-NOT: gpu.block_id
// CHECK-NOT: scf.if
// CHECK: memref.copy
func.func @gemm_kernel(%a: memref<4xf32>, %out: memref<4xf32>) attributes {kiln.dispatch, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 256 : i64} {
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// expected-error @+1 {{expected a bufferized dispatch function without results}}
func.func @results(%a: memref<4xf32>) -> memref<4xf32> attributes {kiln.dispatch, kiln.thread_tiles = 4 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  return %a : memref<4xf32>
}

// -----

// A temporary whose size depends on the thread (a window clipped at the
// border: min(8 - 2i, 3) elements, at most 3) is an alloca of its upper
// bound at the entry, viewed at the thread's size where it was allocated.
// CHECK-LABEL: func @bounded_temporary
// CHECK: %[[T:.*]] = memref.alloca() : memref<1x3xf32>
// CHECK: scf.if
// CHECK: affine.min
// CHECK: %[[N:.*]] = affine.max
// CHECK: %[[V:.*]] = memref.reinterpret_cast %[[T]] to offset: [0], sizes: [1, %[[N]]], strides: [%[[N]], 1] : memref<1x3xf32> to memref<1x?xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[V]] : memref<1x?xf32>)
func.func @bounded_temporary(%out: memref<4xf32>) attributes {kiln.dispatch, kiln.thread_tiles = 4 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  scf.forall (%i) in (4) {
    %n = affine.min affine_map<(d0) -> (-d0 * 2 + 8, 3)>(%i)
    %m = affine.max affine_map<(d0) -> (d0, 0)>(%n)
    %t = memref.alloc(%m) : memref<1x?xf32>
    %z = arith.constant 0.0 : f32
    linalg.fill ins(%z : f32) outs(%t : memref<1x?xf32>)
  }
  return
}

// -----

func.func @dynamic_temporary(%n: index) attributes {kiln.dispatch, kiln.thread_tiles = 4 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  // expected-error @+1 {{temporary in a gfx kernel whose size has no upper bound known at compile time}}
  %t = memref.alloc(%n) : memref<?xf32>
  return
}

// -----

func.func @large_temporary() attributes {kiln.dispatch, kiln.thread_tiles = 4 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  // expected-error @+1 {{per-thread temporaries of 65540 bytes exceed the 65536 bytes a gfx thread may use}}
  %t = memref.alloc() : memref<16385xf32>
  return
}

// -----

func.func @dynamic_bounds(%n: index, %out: memref<?xf32>) attributes {kiln.dispatch, kiln.thread_tiles = 4 : i64, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  // expected-error @+1 {{thread loop bounds must be static}}
  scf.forall (%i) in (%n) {
    %z = arith.constant 0.0 : f32
    memref.store %z, %out[%i] : memref<?xf32>
  }
  return
}
