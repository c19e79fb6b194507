// The same matmul in f32: v_mfma_f32_16x16x4_f32 on CDNA (gfx942, gfx950),
// the generic per-thread path on the vector ALU of the chips without an f32
// matrix instruction (RDNA3/4, gfx1250).
func.func @main(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %0 = kiln.matmul %a, %b : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %0 : tensor<4096x4096xf32>
}
