// W4A8 with 512 groups along K (16384 / 32): their scales (2 x 16 rows x 512
// x 4 bytes) do not fit in gfx942's 64 KiB of LDS next to the panels.
func.func @main(%x: tensor<2x16384xf32>, %w: tensor<1x512x4x32x4xi8>, %s: tensor<1x512x32xf32>, %z: tensor<1x512x32xf32>) -> tensor<2x32xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<2x16384xf32>, tensor<1x512x4x32x4xi8>, tensor<1x512x32xf32>, tensor<1x512x32xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}
