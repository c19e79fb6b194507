// A 1024^3 int8 GEMM (i32 results): the small tiling on every gfx target
// (64 x 64 tiles: too few 128 x 128 ones to fill a chip twice).
func.func @main(%a: tensor<1024x1024xi8>, %b: tensor<1024x1024xi8>) -> tensor<1024x1024xi32> {
  %0 = kiln.matmul_integer %a, %b : (tensor<1024x1024xi8>, tensor<1024x1024xi8>) -> tensor<1024x1024xi32>
  return %0 : tensor<1024x1024xi32>
}
