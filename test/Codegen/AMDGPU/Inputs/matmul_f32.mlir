// A 96 x 200 x 80 f32 matmul (shapes that are not multiples of the tiles).
func.func @main(%a: tensor<96x200xf32>, %b: tensor<200x80xf32>) -> tensor<96x80xf32> {
  %0 = kiln.matmul %a, %b : (tensor<96x200xf32>, tensor<200x80xf32>) -> tensor<96x80xf32>
  return %0 : tensor<96x80xf32>
}
