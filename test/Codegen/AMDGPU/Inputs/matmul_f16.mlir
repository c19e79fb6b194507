// A 128 x 256 x 128 f16 matmul with a bias and ReLU epilogue.
func.func @main(%a: tensor<128x256xf16>, %b: tensor<256x128xf16>, %bias: tensor<128xf16>) -> tensor<128x128xf16> {
  %0 = kiln.matmul %a, %b : (tensor<128x256xf16>, tensor<256x128xf16>) -> tensor<128x128xf16>
  %1 = kiln.add %0, %bias : (tensor<128x128xf16>, tensor<128xf16>) -> tensor<128x128xf16>
  %2 = kiln.relu %1 : tensor<128x128xf16>
  return %2 : tensor<128x128xf16>
}
