// A 7x7 stride-2 f16 convolution with padding 3 (a ResNet stem): an implicit
// GEMM whose window has more taps than the window table's 31 bits.
func.func @main(%x: tensor<1x3x32x32xf16>, %w: tensor<16x3x7x7xf16>) -> tensor<1x16x16x16xf16> {
  %0 = kiln.conv %x, %w {pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x32x32xf16>, tensor<16x3x7x7xf16>) -> tensor<1x16x16x16xf16>
  return %0 : tensor<1x16x16x16xf16>
}
