// The same decode-step GEMV as gemv_4096_f16.mlir with its weight in column
// panels [N / 16, K, 16], as kiln-compile stores a few-row product's constant
// weight for gfx targets (an argument here, so that its 32 MiB count as the
// dispatch's bytes): the GEMV kernel streams it.
func.func @main(%x: tensor<1x4096xf16>, %w: tensor<256x4096x16xf16>) -> tensor<1x4096xf16> {
  %0 = kiln.matmul_panels %x, %w {columns = 4096 : i64} : (tensor<1x4096xf16>, tensor<256x4096x16xf16>) -> tensor<1x4096xf16>
  return %0 : tensor<1x4096xf16>
}
