// A 1x1 f16 convolution with a bias and ReLU: the accumulator starts at the bias.
func.func @main(%x: tensor<1x32x16x16xf16>, %w: tensor<64x32x1x1xf16>, %bias: tensor<64xf16>) -> tensor<1x64x16x16xf16> {
  %0 = kiln.conv %x, %w, %bias {pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x16x16xf16>, tensor<64x32x1x1xf16>, tensor<64xf16>) -> tensor<1x64x16x16xf16>
  %1 = kiln.relu %0 : tensor<1x64x16x16xf16>
  return %1 : tensor<1x64x16x16xf16>
}
