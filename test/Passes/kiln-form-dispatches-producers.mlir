// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches | FileCheck %s

// Regression test for a fixed bug: producer fusion never happens. Passes.td and FormDispatches.cpp
// say that single-use elementwise producers of a root that is not a
// contraction (softmax, pooling, reductions, normalizations) join the root's
// dispatch, but the pass visits ops in block order: the producer comes first,
// is not grouped yet, and becomes a dispatch of its own before the root is
// reached, so the root's producer scan always finds it already grouped.

// CHECK-LABEL: func @softmax_producer
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_softmax" (%arg0)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[E:.*]] = kiln.exp %[[X]]
// CHECK-NEXT: %[[S:.*]] = kiln.softmax %[[E]]
// CHECK-NEXT: kiln.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[D]]
func.func @softmax_producer(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.exp %x : tensor<2x8xf32>
  %1 = kiln.softmax %0 {axis = 1 : i64} : tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func @reduce_producer
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_reduce_sum" (%arg0)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x16xf32>):
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[X]], %[[X]]
// CHECK-NEXT: %[[R:.*]] = kiln.reduce_sum %[[M]]
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK-NOT: kiln.dispatch
func.func @reduce_producer(%x: tensor<4x16xf32>) -> tensor<4x1xf32> {
  %0 = kiln.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  return %1 : tensor<4x1xf32>
}
