// The per-row maximum of 16 rows of 4096: a reduction of few outputs over
// many elements that the gfx row kernels take whole
// (test/Driver/split-reductions.test).
func.func @main(%x: tensor<16x4096xf32>) -> tensor<16xf32> {
  %0 = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<16x4096xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
