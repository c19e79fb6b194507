// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-cpu-winograd-kernels))' -verify-diagnostics

// A Winograd transform is a dispatch of its own (kiln-form-dispatches).
func.func @not_alone(%m: tensor<16x4x4xf32>) -> tensor<1x4x4x4xf32> attributes {kiln.dispatch} {
  %0 = kiln.winograd_output %m {tile = 2 : i64} : (tensor<16x4x4xf32>) -> tensor<1x4x4x4xf32>
  // expected-error @+1 {{a Winograd transform is a dispatch of its own, but this dispatch also has kiln.sigmoid}}
  %1 = kiln.sigmoid %0 : tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}
