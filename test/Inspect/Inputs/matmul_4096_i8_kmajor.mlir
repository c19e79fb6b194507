// A 4096^3 int8 GEMM (i32 results) whose B arrives k-fastest, [N, K] read
// through a transpose: the layout kiln-transpose-matmul-weights stores an
// int8 weight in (and what a transposed activation gives). The GEMM
// takes the transpose in and loads B along k like A, with no byte
// transposes in its main loop.
func.func @main(%a: tensor<4096x4096xi8>, %bt: tensor<4096x4096xi8>) -> tensor<4096x4096xi32> {
  %b = kiln.transpose %bt {permutation = array<i64: 1, 0>} : tensor<4096x4096xi8> -> tensor<4096x4096xi8>
  %0 = kiln.matmul_integer %a, %b : (tensor<4096x4096xi8>, tensor<4096x4096xi8>) -> tensor<4096x4096xi32>
  return %0 : tensor<4096x4096xi32>
}
