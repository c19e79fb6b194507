// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-cpu-workgroup-to-args | FileCheck %s

// The bufferized workgroup loop becomes straight-line code: a trailing i64
// argument is the workgroup id, delinearized over the trip counts with the
// last dimension fastest. Dim 1: (64 - 0) / 32 = 2 trips, j = (id mod 2) *
// 32 + 0; dim 0: ceil((64 - 8) / 16) = 4 trips, i = (id / 2) * 16 + 8 (the
// outermost index is not reduced modulo its trip count).
// CHECK-LABEL: func @two_dims
// CHECK-SAME: (%[[IN:.*]]: memref<64x64xf32>, %[[OUT:.*]]: memref<64x64xf32>, %[[ID:.*]]: i64) attributes {kiln.dispatch}
// CHECK-NOT: scf.forall
// CHECK: %[[LIN:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[JI:.*]] = arith.remui %[[LIN]], %[[C2]] : index
// CHECK: %[[REST:.*]] = arith.divui %[[LIN]], %[[C2]] : index
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[JS:.*]] = arith.muli %[[JI]], %[[C32]] : index
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[J:.*]] = arith.addi %[[JS]], %[[C0]] : index
// CHECK-NOT: arith.remui
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[IS:.*]] = arith.muli %[[REST]], %[[C16]] : index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[I:.*]] = arith.addi %[[IS]], %[[C8]] : index
// CHECK: %[[S:.*]] = memref.subview %[[IN]][%[[I]], %[[J]]] [16, 32] [1, 1]
// CHECK: %[[D:.*]] = memref.subview %[[OUT]][%[[I]], %[[J]]] [16, 32] [1, 1]
// CHECK: memref.copy %[[S]], %[[D]]
// CHECK-NOT: scf.forall
// CHECK: return
func.func @two_dims(%in: memref<64x64xf32>, %out: memref<64x64xf32>) attributes {kiln.dispatch} {
  scf.forall (%i, %j) = (8, 0) to (64, 64) step (16, 32) {
    %s = memref.subview %in[%i, %j] [16, 32] [1, 1] : memref<64x64xf32> to memref<16x32xf32, strided<[64, 1], offset: ?>>
    %d = memref.subview %out[%i, %j] [16, 32] [1, 1] : memref<64x64xf32> to memref<16x32xf32, strided<[64, 1], offset: ?>>
    memref.copy %s, %d : memref<16x32xf32, strided<[64, 1], offset: ?>> to memref<16x32xf32, strided<[64, 1], offset: ?>>
  }
  return
}

// -----

// A dispatch without a workgroup loop (one workgroup) still takes the id, so
// that every kernel has the same ABI; its body is unchanged.
// CHECK-LABEL: func @no_loop
// CHECK-SAME: (%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: i64) attributes {kiln.dispatch}
// CHECK-NEXT: memref.copy
// CHECK-NEXT: return
func.func @no_loop(%in: memref<4xf32>, %out: memref<4xf32>) attributes {kiln.dispatch} {
  memref.copy %in, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Functions that are not dispatches are left alone.
// CHECK-LABEL: func @not_a_dispatch
// CHECK-SAME: (%{{.*}}: memref<64xf32>) {
// CHECK: scf.forall
func.func @not_a_dispatch(%out: memref<64xf32>) {
  %cst = arith.constant 0.0 : f32
  scf.forall (%i) in (64) {
    memref.store %cst, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// expected-error @+1 {{expected one bufferized workgroup loop}}
func.func @two_loops(%out: memref<64xf32>) attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (64) step (32) {
    memref.store %cst, %out[%i] : memref<64xf32>
  }
  scf.forall (%i) = (0) to (64) step (16) {
    memref.store %cst, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// A loop that still has results has not been bufferized.
// expected-error @+1 {{expected one bufferized workgroup loop}}
func.func @not_bufferized(%t: tensor<64xf32>) attributes {kiln.dispatch} {
  %0 = scf.forall (%i) = (0) to (64) step (32) shared_outs(%o = %t) -> (tensor<64xf32>) {
    %s = tensor.extract_slice %o[%i] [32] [1] : tensor<64xf32> to tensor<32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i] [32] [1] : tensor<32xf32> into tensor<64xf32>
    }
  }
  return
}

// -----

func.func @dynamic_bounds(%out: memref<?xf32>, %n: index) attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  // expected-error @+1 {{workgroup loop bounds must be static}}
  scf.forall (%i) = (0) to (%n) step (32) {
    memref.store %cst, %out[%i] : memref<?xf32>
  }
  return
}
