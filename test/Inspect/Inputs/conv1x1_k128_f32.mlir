// ResNet-50's layer2 1x1 convolution (128 -> 512 channels, 28 x 28, bias,
// a residual add and ReLU): with --precision=f16 on gfx950 its K loop of two
// 64-deep steps is unrolled away.
func.func @main(%x: tensor<1x128x28x28xf32>, %w: tensor<512x128x1x1xf32>, %b: tensor<512xf32>, %r: tensor<1x512x28x28xf32>) -> tensor<1x512x28x28xf32> {
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<512x128x1x1xf32>, tensor<512xf32>) -> tensor<1x512x28x28xf32>
  %1 = kiln.add %0, %r : (tensor<1x512x28x28xf32>, tensor<1x512x28x28xf32>) -> tensor<1x512x28x28xf32>
  %2 = kiln.relu %1 : tensor<1x512x28x28xf32>
  return %2 : tensor<1x512x28x28xf32>
}
