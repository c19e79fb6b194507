// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches=transposed-operands=true | FileCheck %s --check-prefix=OPERANDS
// RUN: kiln-opt %s -split-input-file --kiln-form-dispatches=slice-views=false | FileCheck %s --check-prefix=NOVIEWS

// Conv + bias + relu + residual add: the conv is the root and every
// elementwise consumer (each the only user of the previous result, with the
// same shape) joins it. One dispatch; its inputs are everything the members
// read from outside, in order of first use.
// CHECK-LABEL: func @conv_bias_relu_residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[R:.*]]: tensor<1x4x8x8xf32>)
// CHECK-NOT: kiln.conv
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_conv" (%[[X]], %[[W]], %[[B]], %[[R]])
// CHECK-NEXT: ^bb0(%[[BX:.*]]: tensor<1x4x8x8xf32>, %[[BW:.*]]: tensor<4x4x3x3xf32>, %[[BB:.*]]: tensor<4xf32>, %[[BR:.*]]: tensor<1x4x8x8xf32>):
// CHECK-NEXT: %[[C:.*]] = kiln.conv %[[BX]], %[[BW]], %[[BB]]
// CHECK-NEXT: %[[A:.*]] = kiln.relu %[[C]]
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[A]], %[[BR]]
// CHECK-NEXT: kiln.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[D]]
func.func @conv_bias_relu_residual(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = kiln.relu %0 : tensor<1x4x8x8xf32>
  %2 = kiln.add %1, %r : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// Matmul with a broadcast bias add as its epilogue: one dispatch.
// CHECK-LABEL: func @matmul_bias
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_matmul" (%arg0, %arg1, %arg2)
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add {{.*}} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.dispatch
// CHECK: return %[[D]]
func.func @matmul_bias(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.add %0, %c : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// A consumer that broadcasts the root's result to a bigger shape does not
// join (the dispatch's iteration space is the root's): it is a dispatch of
// its own, named after it, reading the first dispatch's result.
// CHECK-LABEL: func @consumer_changes_shape
// CHECK: %[[M:.*]] = kiln.dispatch "dispatch_0_matmul" (%arg0, %arg1) : {{.*}} -> tensor<1x8xf32>
// CHECK: kiln.matmul
// CHECK-NOT: kiln.add
// CHECK: kiln.yield
// CHECK: %[[A:.*]] = kiln.dispatch "dispatch_1_add" (%[[M]], %arg2) : {{.*}} -> tensor<4x8xf32>
// CHECK: kiln.add
// CHECK: return %[[A]]
func.func @consumer_changes_shape(%a: tensor<1x8xf32>, %b: tensor<8x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.matmul %a, %b : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %1 = kiln.add %0, %r : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A chain of elementwise ops without a root: the first op starts a dispatch
// (named after it) and the rest join as consumers.
// CHECK-LABEL: func @elementwise_chain
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_add" (%arg0, %arg1)
// CHECK-NEXT: ^bb0(%[[P:.*]]: tensor<4x8xf32>, %[[Q:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[P]], %[[Q]]
// CHECK-NEXT: %[[G:.*]] = kiln.sigmoid %[[S]]
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[G]], %[[P]]
// CHECK-NEXT: kiln.yield %[[M]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[D]]
func.func @elementwise_chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.sigmoid %0 : tensor<4x8xf32>
  %2 = kiln.mul %1, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// The matmul result has two users (the relu and the return): the relu cannot
// join, because the matmul result must then be materialized anyway. Two
// dispatches; the first one's result is both returned and read by the second.
// CHECK-LABEL: func @two_users_stop_fusion
// CHECK: %[[M:.*]] = kiln.dispatch "dispatch_0_matmul" (%arg0, %arg1)
// CHECK: kiln.matmul
// CHECK-NOT: kiln.relu
// CHECK: kiln.yield
// CHECK: %[[R:.*]] = kiln.dispatch "dispatch_1_relu" (%[[M]])
// CHECK: kiln.relu
// CHECK: return %[[M]], %[[R]]
func.func @two_users_stop_fusion(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.relu %0 : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An elementwise producer of a softmax that has another user stays out of
// the softmax dispatch (it is its own dispatch, whose result is returned).
// CHECK-LABEL: func @shared_producer
// CHECK: %[[E:.*]] = kiln.dispatch "dispatch_0_exp" (%arg0)
// CHECK: kiln.exp
// CHECK-NOT: kiln.softmax
// CHECK: kiln.yield
// CHECK: %[[S:.*]] = kiln.dispatch "dispatch_1_softmax" (%[[E]])
// CHECK-NOT: kiln.exp
// CHECK: kiln.softmax
// CHECK: return %[[E]], %[[S]]
func.func @shared_producer(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = kiln.exp %x : tensor<2x8xf32>
  %1 = kiln.softmax %0 {axis = 1 : i64} : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Constants: a small dense constant (<= 64 elements) and a splat of any size
// are cloned into the dispatch; a weight (dense_resource) and a bigger
// non-splat constant stay outside and become inputs. Reshapes stay outside
// (they are views) and split the elementwise chain; ops after a reshape form
// new dispatches, numbered in order.
// CHECK-LABEL: func @constants_and_reshapes
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<weight> : tensor<8x4xf32>
// CHECK-DAG: %[[BIG:.*]] = kiln.constant dense<[0, 1, 2, {{.*}}, 63, 64]> : tensor<65xi8>
// CHECK: %[[D0:.*]] = kiln.dispatch "dispatch_0_matmul" (%arg0, %[[W]]) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x8xf32>, %[[BW:.*]]: tensor<8x4xf32>):
// CHECK-NEXT: %[[SCALE:.*]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT: %[[MM:.*]] = kiln.matmul %[[A]], %[[BW]]
// CHECK-NEXT: %[[SC:.*]] = kiln.mul %[[MM]], %[[SCALE]]
// CHECK-NEXT: kiln.yield %[[SC]]
// CHECK: %[[RS:.*]] = kiln.reshape %[[D0]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: %[[D1:.*]] = kiln.dispatch "dispatch_1_relu" (%[[RS]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: kiln.relu
// CHECK: kiln.yield
// CHECK: %[[D2:.*]] = kiln.dispatch "dispatch_2_add" (%arg1, %[[BIG]])
// CHECK-NEXT: ^bb0(%[[I:.*]]: tensor<65xi8>, %[[BB:.*]]: tensor<65xi8>):
// CHECK-NEXT: %[[SPLAT:.*]] = kiln.constant dense<3> : tensor<65xi8>
// CHECK-NEXT: %[[S0:.*]] = kiln.add %[[I]], %[[BB]]
// CHECK-NEXT: %[[S1:.*]] = kiln.add %[[S0]], %[[SPLAT]]
// CHECK-NEXT: kiln.yield %[[S1]]
// CHECK: return %[[D1]], %[[D2]]
func.func @constants_and_reshapes(%a: tensor<2x8xf32>, %i: tensor<65xi8>) -> (tensor<8xf32>, tensor<65xi8>) {
  %w = kiln.constant dense_resource<weight> : tensor<8x4xf32>
  %scale = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %big = kiln.constant dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F40"> : tensor<65xi8>
  %splat = kiln.constant dense<3> : tensor<65xi8>
  %0 = kiln.matmul %a, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = kiln.mul %0, %scale : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = kiln.reshape %1 : tensor<2x4xf32> -> tensor<8xf32>
  %3 = kiln.relu %2 : tensor<8xf32>
  %4 = kiln.add %i, %big : (tensor<65xi8>, tensor<65xi8>) -> tensor<65xi8>
  %5 = kiln.add %4, %splat : (tensor<65xi8>, tensor<65xi8>) -> tensor<65xi8>
  return %3, %5 : tensor<8xf32>, tensor<65xi8>
}

// -----

// Consumers that read the root more than once: HardSwish (x *
// hard_sigmoid(x)) and SiLU (x * sigmoid(x)) after a conv join its
// dispatch, as does the next layer's bias add; one value leaves it.
// CHECK-LABEL: func.func @multi_use_epilogue
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_conv" (%arg0, %arg1, %arg2)
// CHECK: %[[C:.*]] = kiln.conv
// CHECK-NEXT: %[[HS:.*]] = kiln.hard_sigmoid %[[C]]
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[C]], %[[HS]]
// CHECK-NEXT: %[[R:.*]] = kiln.add %[[M]], %{{.*}}
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK-NOT: kiln.dispatch
// CHECK: return %[[D]]
func.func @multi_use_epilogue(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %r: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %hs = kiln.hard_sigmoid %c {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64} : tensor<1x4x8x8xf32>
  %m = kiln.mul %c, %hs : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %y = kiln.add %m, %r : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// The same, but the conv's result is also read outside (a second branch):
// two values would leave the dispatch, so only the chain of single-use
// consumers joins (none here) and the activation gets a dispatch of its own.
// CHECK-LABEL: func.func @multi_use_escapes
// CHECK: kiln.dispatch "dispatch_0_conv"
// CHECK-NOT: kiln.sigmoid
// CHECK: kiln.yield
// CHECK: kiln.dispatch "dispatch_1_sigmoid"
// CHECK: kiln.dispatch "dispatch_2_relu"
func.func @multi_use_escapes(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = kiln.sigmoid %c : tensor<1x4x8x8xf32>
  %m = kiln.mul %c, %s : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r = kiln.relu %c : tensor<1x4x8x8xf32>
  return %m, %r : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F841"
    }
  }
#-}

// -----

// A concat takes in its single-use slices (kiln-winograd-convs' tile
// gathers: one kernel instead of one per slice); a slice that something
// else also reads stays a dispatch of its own.
// CHECK-LABEL: func @concat_of_slices
// CHECK: %[[SHARED:.*]] = kiln.dispatch "dispatch_0_slice" (%arg0)
// CHECK: %[[CAT:.*]] = kiln.dispatch "dispatch_1_concat" (%arg0, %[[SHARED]])
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[S:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[A:.*]] = kiln.slice %[[X]] {ends = array<i64: 4, 8>, starts = array<i64: 0, 0>, steps = array<i64: 2, 1>}
// CHECK-NEXT: %[[B:.*]] = kiln.slice %[[X]] {ends = array<i64: 4, 8>, starts = array<i64: 1, 0>, steps = array<i64: 2, 1>}
// CHECK-NEXT: %[[C:.*]] = kiln.concat %[[A]], %[[B]], %[[S]] {axis = 0 : i64}
// CHECK-NEXT: kiln.yield %[[C]]
// CHECK: return %[[CAT]], %[[SHARED]]
func.func @concat_of_slices(%x: tensor<4x8xf32>) -> (tensor<6x8xf32>, tensor<2x8xf32>) {
  %shared = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<2x8xf32>
  %even = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 2, 1>} : tensor<4x8xf32> -> tensor<2x8xf32>
  %odd = kiln.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 4, 8>, steps = array<i64: 2, 1>} : tensor<4x8xf32> -> tensor<2x8xf32>
  %cat = kiln.concat %even, %odd, %shared {axis = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<6x8xf32>
  return %cat, %shared : tensor<6x8xf32>, tensor<2x8xf32>
}

// -----

// A Winograd transform takes in nothing: the elementwise consumers of the
// output transform (those kiln-winograd-convs did not take in) are a
// dispatch of their own.
// CHECK-LABEL: func @winograd_alone
// CHECK: %[[V:.*]] = kiln.dispatch "dispatch_0_winograd_input" (%arg0)
// CHECK: %[[M:.*]] = kiln.dispatch "dispatch_1_matmul" (%arg1, %[[V]])
// CHECK: %[[Y:.*]] = kiln.dispatch "dispatch_2_winograd_output" (%[[M]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.winograd_output
// CHECK-NEXT: kiln.yield
// CHECK: kiln.dispatch "dispatch_3_sigmoid" (%[[Y]])
func.func @winograd_alone(%x: tensor<1x2x6x6xf32>, %u: tensor<16x2x2xf32>) -> tensor<1x2x6x6xf32> {
  %v = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 2 : i64} : tensor<1x2x6x6xf32> -> tensor<16x2x9xf32>
  %m = kiln.matmul %u, %v : (tensor<16x2x2xf32>, tensor<16x2x9xf32>) -> tensor<16x2x9xf32>
  %y = kiln.winograd_output %m {tile = 2 : i64} : (tensor<16x2x9xf32>) -> tensor<1x2x6x6xf32>
  %s = kiln.sigmoid %y : tensor<1x2x6x6xf32>
  return %s : tensor<1x2x6x6xf32>
}

// -----

// A weight stored k-fastest (kiln-transpose-matmul-weights) and in f16
// (kiln-narrow-matmul-weights): the contraction takes in its transpose and
// its cast, in that order, and reads the stored [9, 8] constant. A
// transpose of a constant that another op reads too stays out: a dispatch
// of its own.
// CHECK-LABEL: func @transposed_weight
// CHECK: %[[T:.*]] = kiln.constant {{.*}} : tensor<9x8xf16>
// CHECK: %[[D:.*]] = kiln.dispatch "dispatch_0_matmul" (%[[T]], %arg0, %arg1)
// CHECK-NEXT: ^bb0(%[[BT:.*]]: tensor<9x8xf16>, %[[BX:.*]]: tensor<16x8xf32>, %[[BB:.*]]: tensor<9xf32>):
// CHECK-NEXT: %[[W:.*]] = kiln.transpose %[[BT]]
// CHECK-NEXT: %[[C:.*]] = kiln.cast %[[W]]
// CHECK-NEXT: %[[P:.*]] = kiln.matmul %[[BX]], %[[C]]
// CHECK-NEXT: kiln.add %[[P]], %[[BB]]
// CHECK: kiln.dispatch "dispatch_1_transpose"
// CHECK: kiln.dispatch "dispatch_3_matmul"
func.func @transposed_weight(%x: tensor<16x8xf32>, %b: tensor<9xf32>) -> (tensor<16x9xf32>, tensor<16x9xf16>, tensor<8x9xf16>) {
  %t = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0], [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0], [40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0], [48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0], [56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0], [64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<9x8xf16>
  %w = kiln.transpose %t {permutation = array<i64: 1, 0>} : tensor<9x8xf16> -> tensor<8x9xf16>
  %c = kiln.cast %w : tensor<8x9xf16> to tensor<8x9xf32>
  %0 = kiln.matmul %x, %c : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
  %1 = kiln.add %0, %b : (tensor<16x9xf32>, tensor<9xf32>) -> tensor<16x9xf32>
  %s = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0], [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0], [40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0], [48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0], [56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0], [64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<9x8xf16>
  %v = kiln.transpose %s {permutation = array<i64: 1, 0>} : tensor<9x8xf16> -> tensor<8x9xf16>
  %h = kiln.cast %x : tensor<16x8xf32> to tensor<16x8xf16>
  %2 = kiln.matmul %h, %v : (tensor<16x8xf16>, tensor<8x9xf16>) -> tensor<16x9xf16>
  return %1, %2, %v : tensor<16x9xf32>, tensor<16x9xf16>, tensor<8x9xf16>
}

// -----

// Attention's heads: with transposed-operands (kiln-compile sets it for gfx
// targets alone) the matmul takes in the transposes of Q and K, which it
// alone reads; a transpose read by two ops stays out. Without it, every
// transpose is a dispatch of its own.
// CHECK-LABEL: func @transposed_heads
// CHECK-COUNT-3: kiln.dispatch "dispatch_{{[0-9]}}_transpose"
// CHECK: kiln.dispatch "dispatch_{{[0-9]}}_transpose"
// OPERANDS-LABEL: func @transposed_heads
// OPERANDS: kiln.dispatch "dispatch_0_transpose" (%arg2)
// OPERANDS: kiln.dispatch "dispatch_1_matmul" (%arg0, %arg1)
// OPERANDS-NEXT: ^bb0(%[[Q:.*]]: tensor<1x8x2x4xf32>, %[[K:.*]]: tensor<1x8x2x4xf32>):
// OPERANDS-NEXT: %[[QT:.*]] = kiln.transpose %[[Q]] {permutation = array<i64: 0, 2, 1, 3>}
// OPERANDS-NEXT: %[[KT:.*]] = kiln.transpose %[[K]] {permutation = array<i64: 0, 2, 3, 1>}
// OPERANDS-NEXT: kiln.matmul %[[QT]], %[[KT]]
// The second matmul also takes in the transpose of its result (and a
// relu between them), last: nothing after it joins.
// OPERANDS: kiln.dispatch "dispatch_2_matmul"
// OPERANDS: %[[O:.*]] = kiln.matmul
// OPERANDS-NEXT: %[[R:.*]] = kiln.relu %[[O]]
// OPERANDS-NEXT: %[[C:.*]] = kiln.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>}
// OPERANDS-NEXT: kiln.yield %[[C]]
// OPERANDS: kiln.dispatch "dispatch_3_neg"
func.func @transposed_heads(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>) {
  %qt = kiln.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kt = kiln.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x2x4xf32> -> tensor<1x2x4x8xf32>
  %vt = kiln.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %qt, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %o = kiln.matmul %s, %vt : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %r = kiln.relu %o : tensor<1x2x8x4xf32>
  %c = kiln.transpose %r {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x8x4xf32> -> tensor<1x8x2x4xf32>
  %n = kiln.neg %c : tensor<1x8x2x4xf32>
  return %n, %vt : tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// Grouped-query attention: K and V have 2 heads, repeated to the 4 query
// heads (reshape, expand, reshape). With transposed-operands the matmuls
// take in the expand and the reshape after it (and K's transpose); the
// reshape before the expand stays a view outside. An expand read by two
// ops stays a dispatch of its own. Without it, every expand is one.
// CHECK-LABEL: func @grouped_query
// CHECK-COUNT-3: kiln.dispatch "dispatch_{{[0-9]}}_expand"
// OPERANDS-LABEL: func @grouped_query
// OPERANDS: %[[K5:.*]] = kiln.reshape %arg1 : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
// OPERANDS: kiln.dispatch "dispatch_0_matmul" (%[[K5]], %arg0)
// OPERANDS-NEXT: ^bb0(%[[K:.*]]: tensor<1x2x1x3x4xf32>, %[[Q:.*]]: tensor<1x4x3x4xf32>):
// OPERANDS-NEXT: %[[KE:.*]] = kiln.expand %[[K]] : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
// OPERANDS-NEXT: %[[KR:.*]] = kiln.reshape %[[KE]] : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
// OPERANDS-NEXT: %[[KT:.*]] = kiln.transpose %[[KR]] {permutation = array<i64: 0, 1, 3, 2>}
// OPERANDS-NEXT: kiln.matmul %[[Q]], %[[KT]]
// OPERANDS: kiln.dispatch "dispatch_1_matmul"
// OPERANDS: kiln.expand
// OPERANDS-NEXT: kiln.reshape
// OPERANDS-NEXT: kiln.matmul
// OPERANDS: kiln.dispatch "dispatch_2_expand"
// OPERANDS: kiln.dispatch "dispatch_3_matmul"
// OPERANDS-NEXT: ^bb0
// OPERANDS-NEXT: kiln.matmul
func.func @grouped_query(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> (tensor<1x4x3x4xf32>, tensor<1x2x2x3x4xf32>, tensor<1x4x3x4xf32>) {
  %k5 = kiln.reshape %k : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %ke = kiln.expand %k5 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %kr = kiln.reshape %ke : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x4xf32> -> tensor<1x4x4x3xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x3x3xf32>
  %v5 = kiln.reshape %v : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %ve = kiln.expand %v5 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %vr = kiln.reshape %ve : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %o = kiln.matmul %s, %vr : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  // Read twice: by the matmul and returned.
  %we = kiln.expand %v5 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %wr = kiln.reshape %we : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %p = kiln.matmul %s, %wr : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %sum = kiln.add %o, %p : (tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  return %sum, %we, %o : tensor<1x4x3x4xf32>, tensor<1x2x2x3x4xf32>, tensor<1x4x3x4xf32>
}

// -----

// A slice that is a view (one contiguous, 64-byte aligned range of a
// value: row 0 of [2, 16] f32) stays outside, like a reshape, and its
// reader's dispatch takes it as an input. Row 1 (64 bytes in) returned
// through a reshape is copied by a dispatch: an output is never part of a
// larger buffer. A slice of a constant is never a view. Without
// slice-views, every slice is a dispatch.
// CHECK-LABEL: func @slice_views
// CHECK: %[[R:.*]] = kiln.dispatch "dispatch_0_relu"
// CHECK: %[[A:.*]] = kiln.slice %[[R]] {{.*}} : tensor<2x16xf32> -> tensor<1x16xf32>
// CHECK: kiln.dispatch "dispatch_1_neg" (%[[A]])
// CHECK: kiln.dispatch "dispatch_2_slice" (%[[R]])
// CHECK: kiln.dispatch "dispatch_3_slice"
// NOVIEWS-LABEL: func @slice_views
// NOVIEWS: kiln.dispatch "dispatch_0_relu"
// NOVIEWS: kiln.dispatch "dispatch_1_slice"
// NOVIEWS-NEXT: ^bb0
// NOVIEWS-NEXT: kiln.slice
// NOVIEWS-NEXT: kiln.neg
// NOVIEWS: kiln.dispatch "dispatch_2_slice"
// NOVIEWS: kiln.dispatch "dispatch_3_slice"
func.func @slice_views(%x: tensor<2x16xf32>) -> (tensor<1x16xf32>, tensor<16xf32>, tensor<1x16xf32>) {
  %r = kiln.relu %x : tensor<2x16xf32>
  %a = kiln.slice %r {starts = array<i64: 0, 0>, ends = array<i64: 1, 16>, steps = array<i64: 1, 1>} : tensor<2x16xf32> -> tensor<1x16xf32>
  %n = kiln.neg %a : tensor<1x16xf32>
  %b = kiln.slice %r {starts = array<i64: 1, 0>, ends = array<i64: 2, 16>, steps = array<i64: 1, 1>} : tensor<2x16xf32> -> tensor<1x16xf32>
  %br = kiln.reshape %b : tensor<1x16xf32> -> tensor<16xf32>
  %c = kiln.constant dense_resource<c> : tensor<2x16xf32>
  %cs = kiln.slice %c {starts = array<i64: 1, 0>, ends = array<i64: 2, 16>, steps = array<i64: 1, 1>} : tensor<2x16xf32> -> tensor<1x16xf32>
  %cn = kiln.neg %cs : tensor<1x16xf32>
  return %n, %br, %cn : tensor<1x16xf32>, tensor<16xf32>, tensor<1x16xf32>
}
{-#
  dialect_resources: {
    builtin: {
      c: "0x0400000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    }
  }
#-}

// -----

// A rotary embedding read only by an elementwise op joins that op's
// dispatch, ahead of it: a decode step's key cache write (the rotated row
// selected into the cache at the step's position) is one kernel. Read by
// anything else too (here the query's product), it stays a dispatch.
// CHECK-LABEL: func @rotary_into_cache_write
// CHECK: %[[W:.*]] = kiln.dispatch "dispatch_0_rotary_embedding"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[K:.*]] = kiln.rotary_embedding
// CHECK-NEXT: kiln.select %{{.*}}, %[[K]], %{{.*}} : (tensor<1x1x16x1xi1>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
// CHECK: %[[Q:.*]] = kiln.dispatch "dispatch_1_rotary_embedding"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.rotary_embedding
// CHECK-NEXT: kiln.yield
// CHECK: kiln.dispatch "dispatch_2_select" (%{{.*}}, %[[Q]], %{{.*}})
// CHECK: kiln.dispatch "dispatch_3_add" (%[[Q]], %{{.*}})
// CHECK: return %[[W]]
func.func @rotary_into_cache_write(%k: tensor<1x2x1x8xf32>, %q: tensor<1x2x1x8xf32>, %cos: tensor<1x8xf32>, %sin: tensor<1x8xf32>, %at: tensor<1x1x16x1xi1>, %past: tensor<1x2x16x8xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x1x8xf32>) {
  %rk = kiln.rotary_embedding %k, %cos, %sin : (tensor<1x2x1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x2x1x8xf32>
  %present = kiln.select %at, %rk, %past : (tensor<1x1x16x1xi1>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %rq = kiln.rotary_embedding %q, %cos, %sin : (tensor<1x2x1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x2x1x8xf32>
  %other = kiln.select %at, %rq, %past : (tensor<1x1x16x1xi1>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %twice = kiln.add %rq, %k : (tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  return %present, %other, %twice : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x1x8xf32>
}

// -----

// A rotary embedding whose elementwise reader joins a contraction's
// dispatch (an epilogue) stays a dispatch of its own: the GEMM kernels
// take elementwise epilogues, not the rotation's gather.
// CHECK-LABEL: func @rotary_into_epilogue
// CHECK: %[[R:.*]] = kiln.dispatch "dispatch_1_rotary_embedding"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.rotary_embedding
// CHECK-NEXT: kiln.yield
// CHECK: kiln.dispatch "dispatch_0_matmul" ({{.*}}%[[R]])
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NOT: kiln.rotary_embedding
// CHECK: return
func.func @rotary_into_epilogue(%a: tensor<1x2x4x8xf32>, %b: tensor<1x2x8x8xf32>, %x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %m = kiln.matmul %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %r = kiln.rotary_embedding %x, %cos, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %s = kiln.add %m, %r : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %s : tensor<1x2x4x8xf32>
}
