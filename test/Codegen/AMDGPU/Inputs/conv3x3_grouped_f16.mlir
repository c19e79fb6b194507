// A grouped 3x3 f16 convolution (4 groups of 16 -> 16 channels) with
// padding 1, a bias and ReLU: an implicit GEMM per group.
func.func @main(%x: tensor<1x64x14x14xf16>, %w: tensor<64x16x3x3xf16>, %bias: tensor<64xf16>) -> tensor<1x64x14x14xf16> {
  %0 = kiln.conv %x, %w, %bias {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x64x14x14xf16>, tensor<64x16x3x3xf16>, tensor<64xf16>) -> tensor<1x64x14x14xf16>
  %1 = kiln.relu %0 : tensor<1x64x14x14xf16>
  return %1 : tensor<1x64x14x14xf16>
}
