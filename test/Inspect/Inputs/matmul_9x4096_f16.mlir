// Nine rows of f16 activations times a 4096 x 4096 f16 weight (an argument
// here, so that its 32 MiB count as the dispatch's bytes): one row more than
// a GEMV kernel takes, so the matrix-core GEMM with its 64 x 64 tiles, 64
// workgroups of them.
func.func @main(%x: tensor<9x4096xf16>, %w: tensor<4096x4096xf16>) -> tensor<9x4096xf16> {
  %0 = kiln.matmul %x, %w : (tensor<9x4096xf16>, tensor<4096x4096xf16>) -> tensor<9x4096xf16>
  return %0 : tensor<9x4096xf16>
}
