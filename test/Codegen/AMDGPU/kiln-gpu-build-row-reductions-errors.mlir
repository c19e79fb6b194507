// RUN: kiln-opt %s -verify-diagnostics --kiln-gpu-build-row-reductions=test-fault=nonsense
// RUN: not kiln-opt %s --kiln-gpu-build-row-reductions=chip=gfx9000 2>&1 | FileCheck %s
//
// The pass's diagnostics: an unknown test fault, an unknown target.

// expected-error @below {{unknown test fault 'nonsense' (known: swap-operands, shift-lanes, window-taps, skip-lane)}}
func.func @rows(%arg0: tensor<4x64xf32>) -> tensor<4x64xf32> attributes {kiln.dispatch} {
  %0 = tensor.empty() : tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// CHECK: error: unknown gfx target 'gfx9000'
