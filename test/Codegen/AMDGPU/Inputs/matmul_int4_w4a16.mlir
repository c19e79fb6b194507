// A 96 x 256 x 160 matmul by 4-bit weights (groups of 128 rows along K, a
// scale and zero point per group and column): kiln.matmul_int4.
func.func @main(%x: tensor<96x256xf32>, %w: tensor<2x64x160xi8>, %s: tensor<2x160xf32>, %z: tensor<2x160xf32>) -> tensor<96x160xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<96x256xf32>, tensor<2x64x160xi8>, tensor<2x160xf32>, tensor<2x160xf32>) -> tensor<96x160xf32>
  return %0 : tensor<96x160xf32>
}
