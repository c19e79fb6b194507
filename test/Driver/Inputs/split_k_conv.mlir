// A ResNet-50 layer4 3x3 convolution (512 -> 512 channels, 7x7 pixels) with
// a constant filter and bias, then ReLU: 8 output tiles of 64 x 64.
func.func @main(%x: tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> {
  %w = kiln.constant dense<0.01> : tensor<512x512x3x3xf32>
  %b = kiln.constant dense<0.5> : tensor<512xf32>
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>, tensor<512xf32>) -> tensor<1x512x7x7xf32>
  %1 = kiln.relu %0 : tensor<1x512x7x7xf32>
  return %1 : tensor<1x512x7x7xf32>
}
