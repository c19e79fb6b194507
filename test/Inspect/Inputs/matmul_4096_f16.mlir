// A 4096 x 4096 x 4096 f16 matmul: one matrix-core GEMM kernel on every gfx
// target (4096 workgroups of the 64 x 64 tile: more waves than any chip has SIMDs).
func.func @main(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
  %0 = kiln.matmul %a, %b : (tensor<4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<4096x4096xf16>
  return %0 : tensor<4096x4096xf16>
}
