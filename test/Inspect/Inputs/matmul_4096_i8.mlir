// A 4096^3 int8 GEMM (i32 results) whose B is an argument in [K, N],
// n-fastest: the main loop transposes B's bytes into k-fastest fragments
// every K step.
func.func @main(%a: tensor<4096x4096xi8>, %b: tensor<4096x4096xi8>) -> tensor<4096x4096xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<4096x4096xi8>, tensor<4096x4096xi8>) -> tensor<4096x4096xi32>
  return %0 : tensor<4096x4096xi32>
}
