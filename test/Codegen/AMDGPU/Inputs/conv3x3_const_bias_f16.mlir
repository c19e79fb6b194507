// A 3x3 f16 convolution whose bias is a constant inside the dispatch.
func.func @main(%x: tensor<1x16x8x8xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<1x32x8x8xf16> {
  %bias = kiln.constant dense<[0.5, -0.25, 1.0, 0.125, -1.0, 2.0, 0.75, -0.5, 0.5, -0.25, 1.0, 0.125, -1.0, 2.0, 0.75, -0.5, 0.5, -0.25, 1.0, 0.125, -1.0, 2.0, 0.75, -0.5, 0.5, -0.25, 1.0, 0.125, -1.0, 2.0, 0.75, -0.5]> : tensor<32xf16>
  %0 = kiln.conv %x, %w, %bias {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf16>, tensor<32x16x3x3xf16>, tensor<32xf16>) -> tensor<1x32x8x8xf16>
  return %0 : tensor<1x32x8x8xf16>
}
