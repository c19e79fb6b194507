// The same matmul in f32: the generic per-thread path on the vector ALU (f32
// operands take no matrix cores without --precision=f16).
func.func @main(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %0 = kiln.matmul %a, %b : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %0 : tensor<4096x4096xf32>
}
