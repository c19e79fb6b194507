// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// One group, padded, with bias: the bias broadcast along the channels is the
// accumulator the named convolution adds into.
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @conv2d_bias
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<6x4x3x3xf32>, %[[B:.*]]: tensor<6xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 1, 0] high[0, 0, 2, 1]
// CHECK:   tensor.yield %[[ZERO]] : f32
// CHECK: } : tensor<1x4x8x8xf32> to tensor<1x4x11x9xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[CHAN]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[B]] : tensor<6xf32>)
// CHECK: %[[CONV:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%[[PAD]], %[[W]] : tensor<1x4x11x9xf32>, tensor<6x4x3x3xf32>) outs(%[[INIT]] : tensor<1x6x5x5xf32>)
// CHECK: return %[[CONV]]
func.func @conv2d_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x5x5xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 2, 1>, dilations = array<i64: 1, 2>, pads = array<i64: 1, 0, 2, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  return %0 : tensor<1x6x5x5xf32>
}

// -----

// No bias, no padding: a zero accumulator and no tensor.pad.
// CHECK-LABEL: func @conv2d_nobias
// CHECK-NOT: tensor.pad
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : {{.*}}) outs(%[[FILL]] : tensor<1x2x3x3xf32>)
func.func @conv2d_nobias(%x: tensor<1x3x5x5xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Depthwise (groups == C == F): the [C, 1, KH, KW] filter collapses to
// [C, KH, KW].
// CHECK-LABEL: func @depthwise
// CHECK: %[[F:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2], [3]] : tensor<4x1x3x3xf32> into tensor<4x3x3xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%{{.*}}, %[[F]] : tensor<1x4x10x10xf32>, tensor<4x3x3xf32>)
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 4} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Other group counts: the grouped layouts NGCHW x GFCHW -> NGFHW. The
// accumulator is built in the grouped layout (the bias [4] read as [2, 2]),
// not reshaped from [N, F, H, W], so that tiling the convolution fuses it.
// CHECK-DAG: #[[GCHAN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
// CHECK-DAG: #[[GID:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func @grouped
// CHECK: %[[GB:.*]] = tensor.expand_shape %arg2 {{\[}}[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[GCHAN]], #[[GID]]], {{.*}}} ins(%[[GB]] : tensor<2x2xf32>) outs(%{{.*}} : tensor<1x2x2x4x4xf32>)
// CHECK: %[[IN:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 6, 6] : tensor<1x6x6x6xf32> into tensor<1x2x3x6x6xf32>
// CHECK: %[[F:.*]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 2, 3, 3, 3] : tensor<4x3x3x3xf32> into tensor<2x2x3x3x3xf32>
// CHECK: %[[C:.*]] = linalg.conv_2d_ngchw_gfchw {{.*}} ins(%[[IN]], %[[F]] : {{.*}}) outs(%[[INIT]] : tensor<1x2x2x4x4xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[C]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x4x4xf32> into tensor<1x4x4x4xf32>
// CHECK: return %[[R]]
func.func @grouped(%x: tensor<1x6x6x6xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, groups = 2} : (tensor<1x6x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// 1-D and 3-D with one group: the named ops.
// CHECK-LABEL: func @conv1d
// CHECK: linalg.conv_1d_ncw_fcw {dilations = dense<2> : tensor<1xi64>, strides = dense<3> : tensor<1xi64>}
func.func @conv1d(%x: tensor<2x3x16xf32>, %w: tensor<5x3x3xf32>) -> tensor<2x5x4xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 3>, dilations = array<i64: 2>, pads = array<i64: 0, 0>} : (tensor<2x3x16xf32>, tensor<5x3x3xf32>) -> tensor<2x5x4xf32>
  return %0 : tensor<2x5x4xf32>
}

// CHECK-LABEL: func @conv3d
// CHECK: linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>}
func.func @conv3d(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x3x3xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x3x3xf32>
  return %0 : tensor<1x3x3x3x3xf32>
}

// -----

// Grouped 1-D: one generic over (n, g, f, o, c, k) on the grouped layouts,
// accumulating integers in the element type.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 * 2 + d5 * 3)>
// CHECK-DAG: #[[F:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @grouped1d_int
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<1x2x3x2xi32>)
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[F]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x2x2x10xi32>, tensor<2x3x2x3xi32>) outs(%[[FILL]] : tensor<1x2x3x2xi32>)
// CHECK:   arith.muli
// CHECK:   arith.addi
// CHECK: tensor.collapse_shape %[[C]] {{\[}}[0], [1, 2], [3]] : tensor<1x2x3x2xi32> into tensor<1x6x2xi32>
func.func @grouped1d_int(%x: tensor<1x4x9xi32>, %w: tensor<6x2x3xi32>) -> tensor<1x6x2xi32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 2>, dilations = array<i64: 3>, pads = array<i64: 1, 0>, groups = 2} : (tensor<1x4x9xi32>, tensor<6x2x3xi32>) -> tensor<1x6x2xi32>
  return %0 : tensor<1x6x2xi32>
}

// -----

// kiln.conv_integer, signed operands without zero points: the named
// convolution reads the i8 operands (sign-extending them) into i32.
// CHECK-LABEL: func @conv_integer_signed
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %arg1 : tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) outs(%{{.*}} : tensor<1x3x3x3xi32>)
func.func @conv_integer_signed(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xi32> {
  %0 = kiln.conv_integer %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xi32>
  return %0 : tensor<1x3x3x3xi32>
}

// -----

// Zero points are subtracted in i32 before the convolution: the uint8 input
// is zero-extended minus its constant zero point; the per-output-channel
// filter zero point [F] is read along the filter's dimension 0 (as
// [F, 1, 1, 1], its broadcast unit dimensions collapsed away). Zero padding
// comes after the subtraction, i.e. the input is padded with its zero point.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0)>
// CHECK-LABEL: func @conv_integer_zero_points
// CHECK: %[[X:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], {{.*}}} ins(%arg0 : tensor<1x2x5x5xi8>) outs(%{{.*}} : tensor<1x2x5x5xi32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT: %[[VW:.*]] = arith.extui %[[V]] : i8 to i32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 128 : i32
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[VW]], %[[Z]] : i32
// CHECK: %[[ZW:.*]] = tensor.expand_shape %arg2 {{\[}}[0, 1, 2, 3]] output_shape [3, 1, 1, 1] : tensor<3xi8> into tensor<3x1x1x1xi8>
// CHECK: %[[ZC:.*]] = tensor.collapse_shape %[[ZW]] {{\[}}[0, 1, 2, 3]] : tensor<3x1x1x1xi8> into tensor<3xi8>
// CHECK: %[[W:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CHAN]], #[[ID]]], {{.*}}} ins(%arg1, %[[ZC]] : tensor<3x2x3x3xi8>, tensor<3xi8>) outs(%{{.*}} : tensor<3x2x3x3xi32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.yield %[[ZERO]] : i32
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%[[P]], %[[W]] : tensor<1x2x7x7xi32>, tensor<3x2x3x3xi32>) outs(%{{.*}} : tensor<1x3x5x5xi32>)
func.func @conv_integer_zero_points(%x: tensor<1x2x5x5xui8>, %w: tensor<3x2x3x3xi8>, %zw: tensor<3xi8>) -> tensor<1x3x5x5xi32> {
  %zx = kiln.constant dense<128> : tensor<ui8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) filter_zero_point(%zw) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x5x5xi32>
  return %0 : tensor<1x3x5x5xi32>
}

// -----

// The quantized pointwise form (1x1, stride 1, unpadded; uint8 input with
// one zero point, int8 filter without one): a GEMM over the raw bytes,
// out[n, f, p] = sum_c w[f, c] * x[n, c, p] with the input zero-extended
// and the filter sign-extended in the body (so that both stay 8-bit), minus
// the zero point times the filter's sums over c, broadcast along F.
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func @conv_integer_pointwise
// CHECK: %[[XC:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<2x8x3x5xi8> into tensor<2x8x15xi8>
// CHECK: %[[WC:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<4x8x1x1xi8> into tensor<4x8xi8>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[W]], #[[X]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[WC]], %[[XC]] : tensor<4x8xi8>, tensor<2x8x15xi8>) outs(%{{.*}} : tensor<2x4x15xi32>)
// CHECK-NEXT: ^bb0(%[[WV:.*]]: i8, %[[XV:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[WW:.*]] = arith.extsi %[[WV]] : i8 to i32
// CHECK-NEXT: %[[XW:.*]] = arith.extui %[[XV]] : i8 to i32
// CHECK-NEXT: %[[P:.*]] = arith.muli %[[WW]], %[[XW]] : i32
// CHECK-NEXT: arith.addi %[[ACC]], %[[P]] : i32
// CHECK: %[[R:.*]] = tensor.expand_shape %[[G]] {{\[}}[0], [1], [2, 3]] output_shape [2, 4, 3, 5] : tensor<2x4x15xi32> into tensor<2x4x3x5xi32>
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%arg1 : tensor<4x8x1x1xi8>) outs(%{{.*}} : tensor<4x1x1xi32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: i8, %[[T:.*]]: i32):
// CHECK-NEXT: %[[VW:.*]] = arith.extsi %[[V]] : i8 to i32
// CHECK-NEXT: arith.addi %[[T]], %[[VW]] : i32
// CHECK: %[[SC:.*]] = tensor.collapse_shape %{{.*}} : tensor<4x1x1xi32> into tensor<4xi32>
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[CHAN]], #[[ID4]]], {{.*}}} ins(%[[R]], %[[SC]] : tensor<2x4x3x5xi32>, tensor<4xi32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[Z:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[ZB:.*]] = arith.muli %[[Z]], %[[B]] : i32
// CHECK-NEXT: arith.subi %[[A]], %[[ZB]] : i32
func.func @conv_integer_pointwise(%x: tensor<2x8x3x5xui8>, %w: tensor<4x8x1x1xi8>) -> tensor<2x4x3x5xi32> {
  %zx = kiln.constant dense<7> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) filter_zero_point(%zw) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<2x8x3x5xui8>, tensor<4x8x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x4x3x5xi32>
  return %0 : tensor<2x4x3x5xi32>
}

// -----

// Any other ungrouped quantized convolution stays 8-bit: the uint8 input's
// top bit is flipped (x - 128 as int8, which the named convolution
// sign-extends), its zero point 130 becomes 2, the input is padded with 2,
// convolved as bytes, and 2 * (the filter's sums over C, KH, KW) comes off.
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func @conv_integer_quantized
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x2x5x5xi8>) outs(%{{.*}} : tensor<1x2x5x5xi8>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT: %[[TOP:.*]] = arith.constant -128 : i8
// CHECK-NEXT: arith.xori %[[V]], %[[TOP]] : i8
// CHECK: %[[Z:.*]] = arith.constant 2 : i8
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[Z]] : i8
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[P]], %arg1 : tensor<1x2x7x7xi8>, tensor<3x2x3x3xi8>) outs(%{{.*}} : tensor<1x3x5x5xi32>)
// CHECK: %[[WF:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<3x2x3x3xi8> into tensor<3x18xi8>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[WF]] : tensor<3x18xi8>) outs(%{{.*}} : tensor<3xi32>)
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[CHAN]], #[[ID4]]], {{.*}}} ins(%[[C]], %{{.*}} : tensor<1x3x5x5xi32>, tensor<3xi32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[ZW:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[ZB:.*]] = arith.muli %[[ZW]], %[[B]] : i32
// CHECK-NEXT: arith.subi %[[A]], %[[ZB]] : i32
func.func @conv_integer_quantized(%x: tensor<1x2x5x5xui8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x5x5xi32> {
  %zx = kiln.constant dense<130> : tensor<ui8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>) -> tensor<1x3x5x5xi32>
  return %0 : tensor<1x3x5x5xi32>
}

// -----

// The same for a depthwise convolution (groups = channels): the named
// depthwise op on the flipped bytes (what the CPU pipeline vectorizes per
// tap), each output channel's correction the sum of its own 9 weights.
// CHECK-LABEL: func @conv_integer_quantized_depthwise
// CHECK: arith.xori
// CHECK: %[[P:.*]] = tensor.pad
// CHECK: %[[C:.*]] = linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%[[P]], %{{.*}} : tensor<1x4x7x7xi8>, tensor<4x3x3xi8>) outs(%{{.*}} : tensor<1x4x5x5xi32>)
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<4x1x3x3xi8> into tensor<4x9xi8>
// CHECK: arith.subi
func.func @conv_integer_quantized_depthwise(%x: tensor<1x4x5x5xui8>, %w: tensor<4x1x3x3xi8>) -> tensor<1x4x5x5xi32> {
  %zx = kiln.constant dense<130> : tensor<ui8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<1x4x5x5xui8>, tensor<4x1x3x3xi8>, tensor<ui8>) -> tensor<1x4x5x5xi32>
  return %0 : tensor<1x4x5x5xi32>
}

// -----

// A grouped one (2 groups of 2 channels): the grouped named convolution on
// the flipped bytes.
// CHECK-LABEL: func @conv_integer_quantized_grouped
// CHECK: arith.xori
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x2x7x7xi8>, tensor<2x3x2x3x3xi8>) outs(%{{.*}} : tensor<1x2x3x5x5xi32>)
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<6x2x3x3xi8> into tensor<6x18xi8>
func.func @conv_integer_quantized_grouped(%x: tensor<1x4x5x5xui8>, %w: tensor<6x2x3x3xi8>) -> tensor<1x6x5x5xi32> {
  %zx = kiln.constant dense<130> : tensor<ui8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x4x5x5xui8>, tensor<6x2x3x3xi8>, tensor<ui8>) -> tensor<1x6x5x5xi32>
  return %0 : tensor<1x6x5x5xi32>
}

// -----

// A padded grouped convolution pads its input after reshaping it to the
// grouped layout: the pad sits right under the convolution, where tiling
// (cpu workgroups, gfx threads) fuses it; padded before the reshape, it was
// materialized whole outside the tiles.
// CHECK-LABEL: func @conv_grouped_padded
// CHECK: %[[G:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 6, 6] : tensor<1x4x6x6xf32> into tensor<1x2x2x6x6xf32>
// CHECK: %[[P:.*]] = tensor.pad %[[G]] low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1]
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%[[P]], %{{.*}} : tensor<1x2x2x8x8xf32>, tensor<2x2x2x3x3xf32>)
func.func @conv_grouped_padded(%x: tensor<1x4x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 2} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}
