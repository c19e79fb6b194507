// A 128 x 256 x 128 int4 matmul accumulating in i32.
func.func @main(%a: tensor<128x256xi4>, %b: tensor<256x128xi4>) -> tensor<128x128xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<128x256xi4>, tensor<256x128xi4>) -> tensor<128x128xi32>
  return %0 : tensor<128x128xi32>
}
