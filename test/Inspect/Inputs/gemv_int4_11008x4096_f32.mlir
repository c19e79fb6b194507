// A decode-step W4A16 GEMV: one row of f32 activations times an 11008 x 4096
// weight in 4-bit codes (groups of 128 rows, f32 scales and zero points):
// a LLaMA-7B-sized down projection, 25.4 MB streamed.
func.func @main(%x: tensor<1x11008xf32>, %w: tensor<86x64x4096xi8>, %s: tensor<86x4096xf32>, %z: tensor<86x4096xf32>) -> tensor<1x4096xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x11008xf32>, tensor<86x64x4096xi8>, tensor<86x4096xf32>, tensor<86x4096xf32>) -> tensor<1x4096xf32>
  return %0 : tensor<1x4096xf32>
}
