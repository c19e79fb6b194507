// An elementwise f32 add: the generic SIMT path, 4 consecutive elements per lane.
func.func @main(%x: tensor<64x256xf32>, %y: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = kiln.add %x, %y : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}
