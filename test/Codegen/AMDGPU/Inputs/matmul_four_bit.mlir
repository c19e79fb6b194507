// A 128 x 256 x 128 uint8 x int8 matmul whose values fit in 4 bits
// (kiln.four_bit: what kiln-fold-quantized-ops writes for a QDQ int4
// product), accumulating in i32.
func.func @main(%a: tensor<128x256xui8>, %b: tensor<256x128xi8>) -> tensor<128x128xi32> {
  %0 = kiln.matmul_integer %a, %b {kiln.four_bit} : (tensor<128x256xui8>, tensor<256x128xi8>) -> tensor<128x128xi32>
  return %0 : tensor<128x128xi32>
}
