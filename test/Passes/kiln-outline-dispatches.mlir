// RUN: kiln-opt %s -split-input-file --kiln-outline-dispatches | FileCheck %s
// RUN: kiln-opt %S/kiln-form-dispatches.mlir -split-input-file --kiln-form-dispatches --kiln-outline-dispatches | FileCheck %s --check-prefix=PIPE

// Each region becomes a function named after the dispatch, marked
// kiln.dispatch, with the region's block arguments as parameters and a
// func.return in place of kiln.yield. The dispatch op becomes a call with the
// same operands; constants and reshapes stay in @main, which is marked as the
// program.
// CHECK-LABEL: func.func @dispatch_0_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {kiln.dispatch}
// CHECK-NEXT: %[[M:.*]] = kiln.matmul %[[A]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[M]]
// CHECK-NEXT: return %[[R]] : tensor<4x16xf32>
// CHECK-LABEL: func.func @dispatch_1_softmax
// CHECK-SAME: (%{{.*}}: tensor<64xf32>) -> tensor<64xf32> attributes {kiln.dispatch}
// CHECK-NEXT: kiln.softmax
// CHECK-NEXT: return
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> tensor<64xf32> {
// CHECK-NEXT: %[[W:.*]] = kiln.constant dense_resource<w>
// CHECK-NEXT: %[[C0:.*]] = kiln.launch @dispatch_0_matmul(%[[X]], %[[W]]) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[V:.*]] = kiln.reshape %[[C0]] : tensor<4x16xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[C1:.*]] = kiln.launch @dispatch_1_softmax(%[[V]]) : (tensor<64xf32>) -> tensor<64xf32>
// CHECK-NEXT: kiln.return %[[C1]]
// CHECK-NOT: kiln.dispatch "
// CHECK-NOT: kiln.yield
func.func @main(%x: tensor<4x8xf32>) -> tensor<64xf32> {
  %w = kiln.constant dense_resource<w> : tensor<8x16xf32>
  %0 = kiln.dispatch "dispatch_0_matmul" (%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>):
    %m = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %r = kiln.relu %m : tensor<4x16xf32>
    kiln.yield %r : tensor<4x16xf32>
  }
  %1 = kiln.reshape %0 : tensor<4x16xf32> -> tensor<64xf32>
  %2 = kiln.dispatch "dispatch_1_softmax" (%1) : (tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%a: tensor<64xf32>):
    %s = kiln.softmax %a {axis = 0 : i64} : tensor<64xf32>
    kiln.yield %s : tensor<64xf32>
  }
  return %2 : tensor<64xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x04000000"
    }
  }
#-}

// -----

// A dispatch whose name is already a symbol of the module: the function is
// renamed and the launch refers to the new name. The existing function is
// left alone. A dispatch with two results becomes a function with two results.
// CHECK-LABEL: func.func private @dispatch_0_relu(tensor<8xf32>) -> tensor<8xf32>
// CHECK-LABEL: func.func @dispatch_0_relu_0(
// CHECK-SAME: -> (tensor<8xf32>, tensor<8xf32>) attributes {kiln.dispatch}
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: return %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>
// CHECK-LABEL: kiln.program @main
// CHECK-NEXT: %[[C:.*]]:2 = kiln.launch @dispatch_0_relu_0(%arg0) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: kiln.return %[[C]]#1, %[[C]]#0
// CHECK-NOT: kiln.dispatch
func.func private @dispatch_0_relu(tensor<8xf32>) -> tensor<8xf32>
func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0:2 = kiln.dispatch "dispatch_0_relu" (%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>):
    %r = kiln.relu %a : tensor<8xf32>
    %n = kiln.neg %r : tensor<8xf32>
    kiln.yield %r, %n : tensor<8xf32>, tensor<8xf32>
  }
  return %0#1, %0#0 : tensor<8xf32>, tensor<8xf32>
}

// Formation and outlining together, on the formation test's functions: only
// launches, constants and reshapes are left in the programs.
// PIPE-LABEL: func.func @dispatch_0_conv(
// PIPE-SAME: attributes {kiln.dispatch}
// PIPE: kiln.conv
// PIPE: kiln.relu
// PIPE: kiln.add
// PIPE-LABEL: kiln.program @conv_bias_relu_residual
// PIPE-NEXT: kiln.launch @dispatch_0_conv(%arg0, %arg1, %arg2, %arg3)
// PIPE-NEXT: kiln.return
// PIPE-LABEL: kiln.program @constants_and_reshapes
// PIPE-NOT: kiln.matmul
// PIPE-NOT: kiln.relu
// PIPE-NOT: kiln.add
// PIPE: %[[D0:.*]] = kiln.launch @dispatch_0_matmul(
// PIPE-NEXT: %[[RS:.*]] = kiln.reshape %[[D0]]
// PIPE-NEXT: %[[D1:.*]] = kiln.launch @dispatch_1_relu(%[[RS]])
// PIPE-NEXT: %[[D2:.*]] = kiln.launch @dispatch_2_add(
// PIPE-NEXT: kiln.return %[[D1]], %[[D2]]

// -----

// Branches stay private: only the kiln.if runs them, and they are planned
// and laid out inside @main's arena.
// CHECK-LABEL: kiln.program @main
// CHECK-NEXT: kiln.if %arg0 then @branch(%arg1) else @branch(%arg1)
// CHECK-LABEL: kiln.program private @branch
// CHECK-NEXT: %[[R:.*]] = kiln.launch @dispatch_0_neg(%arg0)
// CHECK-NEXT: kiln.return %[[R]]
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.if %c then @branch(%x) else @branch(%x) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @branch(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.dispatch "dispatch_0_neg" (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%b: tensor<4xf32>):
    %n = kiln.neg %b : tensor<4xf32>
    kiln.yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
