// The per-row maximum of 4 rows of 16384: rows longer than the gfx row
// kernels take whole (test/Driver/split-reductions.test).
func.func @main(%x: tensor<4x16384xf32>) -> tensor<4xf32> {
  %0 = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x16384xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
