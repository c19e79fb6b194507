// Two dispatches as kiln-outline-dispatches leaves them: an f16 matmul with
// a bias and ReLU (the matrix-core GEMM builder) and an f32 add (the generic
// per-thread path).
func.func @dispatch_0_matmul(%a: tensor<128x256xf16>, %b: tensor<256x128xf16>, %bias: tensor<128xf16>) -> tensor<128x128xf16> attributes {kiln.dispatch} {
  %0 = kiln.matmul %a, %b : (tensor<128x256xf16>, tensor<256x128xf16>) -> tensor<128x128xf16>
  %1 = kiln.add %0, %bias : (tensor<128x128xf16>, tensor<128xf16>) -> tensor<128x128xf16>
  %2 = kiln.relu %1 : tensor<128x128xf16>
  return %2 : tensor<128x128xf16>
}
func.func @dispatch_1_add(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {kiln.dispatch} {
  %0 = kiln.add %x, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
