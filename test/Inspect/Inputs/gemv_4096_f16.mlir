// A decode-step GEMV: one row of f16 activations times a 4096 x 4096 f16
// weight (an argument here, so that its 32 MiB count as the dispatch's bytes).
func.func @main(%x: tensor<1x4096xf16>, %w: tensor<4096x4096xf16>) -> tensor<1x4096xf16> {
  %0 = kiln.matmul %x, %w : (tensor<1x4096xf16>, tensor<4096x4096xf16>) -> tensor<1x4096xf16>
  return %0 : tensor<1x4096xf16>
}
