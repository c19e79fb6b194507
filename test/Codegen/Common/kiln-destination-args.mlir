// RUN: kiln-opt %s -split-input-file --kiln-destination-args | FileCheck %s

// Tensor arguments become memrefs read through `to_tensor restrict`; the
// result is materialized into a new trailing memref argument and the
// function returns nothing. A trailing expand_shape of the result becomes a
// collapse_shape of the output buffer, so the computation (on the collapsed
// [1, 4, 16] shape) writes the caller's [1, 4, 4, 4] buffer directly.
// CHECK-LABEL: func @expand_result
// CHECK-SAME: (%[[IN:.*]]: memref<1x4x16xf32>, %[[OUT:.*]]: memref<1x4x4x4xf32>)
// CHECK-SAME: attributes {kiln.dispatch}
// CHECK-NOT: ->
// CHECK-NEXT: %[[T:.*]] = bufferization.to_tensor %[[IN]] restrict : memref<1x4x16xf32> to tensor<1x4x16xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<1x4x16xf32>)
// CHECK: %[[V:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0], [1], [2, 3]] : memref<1x4x4x4xf32> into memref<1x4x16xf32>
// CHECK-NEXT: bufferization.materialize_in_destination %[[R]] in restrict writable %[[V]] : (tensor<1x4x16xf32>, memref<1x4x16xf32>) -> ()
// CHECK-NEXT: return{{$}}
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @expand_result(%x: tensor<1x4x16xf32>) -> tensor<1x4x4x4xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x4x16xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x16xf32>) outs(%e : tensor<1x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x4x16xf32>
  %1 = tensor.expand_shape %0 [[0], [1], [2, 3]] output_shape [1, 4, 4, 4] : tensor<1x4x16xf32> into tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}

// -----

// A trailing collapse_shape becomes an expand_shape of the output buffer;
// reshapes in a row are all moved onto the buffer. Two results get two
// trailing arguments, in order; non-tensor arguments are kept as they are.
// CHECK-LABEL: func @two_results
// CHECK-SAME: (%[[A:.*]]: memref<2x4xf32>, %[[N:.*]]: index, %[[O0:.*]]: memref<8xf32>, %[[O1:.*]]: memref<4x2xf32>)
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[A]] restrict : memref<2x4xf32> to tensor<2x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<2x4xf32>)
// CHECK-DAG: %[[V0:.*]] = memref.expand_shape %[[O0]] {{\[}}[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
// CHECK-DAG: bufferization.materialize_in_destination %[[R]] in restrict writable %[[V0]] : (tensor<2x4xf32>, memref<2x4xf32>) -> ()
// CHECK-DAG: %[[C:.*]] = memref.collapse_shape %[[O1]] {{\[}}[0, 1]] : memref<4x2xf32> into memref<8xf32>
// CHECK-DAG: %[[V1:.*]] = memref.expand_shape %[[C]] {{\[}}[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
// CHECK-DAG: bufferization.materialize_in_destination %[[R]] in restrict writable %[[V1]] : (tensor<2x4xf32>, memref<2x4xf32>) -> ()
// CHECK: return{{$}}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_results(%a: tensor<2x4xf32>, %n: index) -> (tensor<8xf32>, tensor<4x2xf32>) attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %1 = tensor.collapse_shape %0 [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %2 = tensor.expand_shape %1 [[0, 1]] output_shape [4, 2] : tensor<8xf32> into tensor<4x2xf32>
  return %1, %2 : tensor<8xf32>, tensor<4x2xf32>
}

// -----

// Functions that are not dispatches keep their signature.
// CHECK-LABEL: func @not_a_dispatch
// CHECK-SAME: (%{{.*}}: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT: bufferization
// CHECK: return %{{.*}} : tensor<8xf32>
func.func @not_a_dispatch(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
