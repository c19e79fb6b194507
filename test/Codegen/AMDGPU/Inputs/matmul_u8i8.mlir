// A 128 x 256 x 128 matmul of uint8 activations by int8 weights (what
// quantized models run) accumulating in i32.
func.func @main(%a: tensor<128x256xui8>, %b: tensor<256x128xi8>) -> tensor<128x128xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<128x256xui8>, tensor<256x128xi8>) -> tensor<128x128xi32>
  return %0 : tensor<128x128xi32>
}
