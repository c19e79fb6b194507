// W4A8 (kiln.matmul_int4 with int8_activations, codes in the W4A8 panels):
// 40 rows, K = 512 in groups of 256, N = 64.
func.func @main(%x: tensor<40x512xf32>, %w: tensor<2x2x32x32x4xi8>, %s: tensor<2x2x32xf32>, %z: tensor<2x2x32xf32>) -> tensor<40x64xf32> {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<40x512xf32>, tensor<2x2x32x32x4xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<40x64xf32>
  return %0 : tensor<40x64xf32>
}
