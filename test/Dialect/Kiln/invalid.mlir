// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the kiln dialect's verifiers and shape inference, one
// case each.

func.func @case0(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes [2, 3] and [4] are not broadcast-compatible}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case1(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{operand element types must match, got 'f32' and 'f16'}}
  %0 = kiln.mul %a, %b : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

func.func @case2(%a: tensor<2xi32>, %b: tensor<2xi32>) {
  // expected-error @+1 {{operands must be i1 tensors, got 'i32'}}
  %0 = kiln.and %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return
}

// -----

func.func @case3(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2xi1>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  %0 = kiln.less %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case4(%c: tensor<2xi1>, %a: tensor<3xf32>, %b: tensor<1xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes [2], [3] and [1] are not broadcast-compatible}}
  %0 = kiln.select %c, %a, %b : (tensor<2xi1>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @case5(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi32>) {
  // expected-error @+1 {{value element types must match, got 'f32' and 'i32'}}
  %0 = kiln.select %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

func.func @case6(%a: tensor<2xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = kiln.gelu %a {approximate = "fast"} : tensor<2xf32>
  return
}

// -----

func.func @case7(%a: tensor<2xf32>) {
  // expected-error @+1 {{min 6.000000e+00 is greater than max 0.000000e+00}}
  %0 = kiln.clip %a {min = 6.0 : f64, max = 0.0 : f64} : tensor<2xf32>
  return
}

// -----

func.func @case8(%a: tensor<4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands must have rank 2 or more, got 1 and 2}}
  %0 = kiln.matmul %a, %b : (tensor<4xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case9(%a: tensor<3x4xf32>, %b: tensor<5x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contraction dimensions differ: lhs [3, 4] has K = 4, rhs [5, 2] has K = 5}}
  %0 = kiln.matmul %a, %b : (tensor<3x4xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @case10(%a: tensor<2x3x4xf32>, %b: tensor<3x4x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch dimensions [2] and [3] are not broadcast-compatible}}
  %0 = kiln.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x2xf32>) -> tensor<2x3x2xf32>
  return
}

// -----

func.func @case11(%a: tensor<3x4xi8>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{operand element types must match, got 'i8' and 'f32'}}
  %0 = kiln.matmul %a, %b : (tensor<3x4xi8>, tensor<4x2xf32>) -> tensor<3x2xi8>
  return
}

// -----

func.func @case12(%x: tensor<3x8xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input must have rank 3 or more, got 2}}
  %0 = kiln.conv %x, %w {strides = array<i64>, dilations = array<i64>, pads = array<i64>} : (tensor<3x8xf32>, tensor<4x3xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @case13(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{filter rank 3 differs from input rank 4}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case14(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 strides, got 1}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case15(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 dilations, got 3}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case16(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 4 pads, got 2}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case17(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{strides must be positive, got [0, 1]}}
  %0 = kiln.conv %x, %w {strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case18(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{dilations must be positive, got [1, -1]}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, -1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case19(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{pads must be non-negative, got [0, -1, 0, 0]}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, -1, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case20(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, groups = 0} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case21(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input has 4 channels but filter expects 3 x 1 groups}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case22(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{filter count 3 is not divisible by groups 2}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, groups = 2} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @case23(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias must have shape [4], got [3]}}
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @case24(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+1 {{filter element type must match the input's}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @matmul_integer_zero_point_type(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>, %z: tensor<i8>) {
  // expected-error @+1 {{lhs_zero_point element type 'i8' differs from lhs element type 'ui8'}}
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%z) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<i8>) -> tensor<3x2xi32>
  return
}

// -----

// One zero point per column of lhs is not one per row.
func.func @matmul_integer_zero_point_shape(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>, %z: tensor<4xui8>) {
  // expected-error @+1 {{lhs_zero_point shape [4] does not broadcast to lhs shape [3, 4] with size 1 along K}}
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%z) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<4xui8>) -> tensor<3x2xi32>
  return
}

// -----

func.func @matmul_integer_operand_type(%a: tensor<3x4xi16>, %b: tensor<4x2xi8>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 8-bit signless integer or 8-bit unsigned integer or 4-bit signless integer or 4-bit unsigned integer values}}
  %0 = kiln.matmul_integer %a, %b : (tensor<3x4xi16>, tensor<4x2xi8>) -> tensor<3x2xi32>
  return
}

// -----

func.func @matmul_integer_contraction(%a: tensor<3x4xui8>, %b: tensor<5x2xi8>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contraction dimensions differ: lhs [3, 4] has K = 4, rhs [5, 2] has K = 5}}
  %0 = kiln.matmul_integer %a, %b : (tensor<3x4xui8>, tensor<5x2xi8>) -> tensor<3x2xi32>
  return
}

// -----

func.func @conv_integer_input_zero_point_type(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xui8>, %z: tensor<i8>) {
  // expected-error @+1 {{input_zero_point element type 'i8' differs from input element type 'ui8'}}
  %0 = kiln.conv_integer %x, %w input_zero_point(%z) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xui8>, tensor<i8>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @conv_integer_input_zero_point_shape(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xui8>, %z: tensor<3xui8>) {
  // expected-error @+1 {{input_zero_point must be a scalar, got shape [3]}}
  %0 = kiln.conv_integer %x, %w input_zero_point(%z) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xui8>, tensor<3xui8>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @conv_integer_filter_zero_point_type(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>, %z: tensor<ui8>) {
  // expected-error @+1 {{filter_zero_point element type 'ui8' differs from filter element type 'i8'}}
  %0 = kiln.conv_integer %x, %w filter_zero_point(%z) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>, tensor<ui8>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @conv_integer_filter_zero_point_shape(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>, %z: tensor<3xi8>) {
  // expected-error @+1 {{filter_zero_point must be a scalar or have shape [4], got [3]}}
  %0 = kiln.conv_integer %x, %w filter_zero_point(%z) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>, tensor<3xi8>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @conv_integer_result_type(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit signless integer values}}
  %0 = "kiln.conv_integer"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi16>
  return
}

// -----

func.func @case25(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 kernel sizes, got 1}}
  %0 = kiln.max_pool %x {kernel = array<i64: 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  return
}

// -----

func.func @case26(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{kernel sizes must be positive, got [0, 2]}}
  %0 = kiln.max_pool %x {kernel = array<i64: 0, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  return
}

// -----

func.func @case27(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{pads [2, 0, 0, 0] must be smaller than the kernel [2, 2]}}
  %0 = kiln.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 2, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x7xf32>
  return
}

// -----

func.func @case28(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{reduction axis 3 is out of range for rank 3}}
  %0 = kiln.reduce_sum %x {axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @case29(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{reduction axiss must be sorted and unique, got [1, 0]}}
  %0 = kiln.reduce_max %x {axes = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @case30(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.argmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  return
}

// -----

func.func @case31(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = kiln.softmax %x {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @case32(%x: tensor<2x32xf32>, %s: tensor<16xf32>) {
  // expected-error @+1 {{scale shape [16] does not broadcast to the normalized dimensions [32]}}
  %0 = kiln.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x32xf32>, tensor<16xf32>) -> tensor<2x32xf32>
  return
}

// -----

func.func @case33(%x: tensor<2x32xf32>, %s: tensor<32xf16>) {
  // expected-error @+1 {{scale element type must match the input's}}
  %0 = kiln.rms_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x32xf32>, tensor<32xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @case34(%x: tensor<2x32xf32>, %s: tensor<32xf32>) {
  // expected-error @+1 {{result type must match the input type}}
  %0 = kiln.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x32xf32>, tensor<32xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @case35(%x: tensor<1x4x2x2xf32>, %c: tensor<4xf32>, %d: tensor<3xf32>) {
  // expected-error @+1 {{parameters must have shape [4], got [3]}}
  %0 = kiln.batch_norm %x, %c, %d, %c, %c {epsilon = 1.0e-5 : f64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @case36(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{cannot reshape 24 elements [2, 3, 4] into 20 elements [5, 4]}}
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<5x4xf32>
  return
}

// -----

func.func @case37(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{element types of input and result must match}}
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<24xi32>
  return
}

// -----

func.func @case38(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{permutation [0, 1] does not have rank 3}}
  %0 = kiln.transpose %x {permutation = array<i64: 0, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @case39(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{permutation [0, 1, 1] is not a permutation of [0, 3)}}
  %0 = kiln.transpose %x {permutation = array<i64: 0, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x3x3xf32>
  return
}

// -----

func.func @case40(%a: tensor<3x5xf32>, %b: tensor<2x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input 1 has shape [2, 5], which differs from [3, 5] outside axis 1}}
  %0 = kiln.concat %a, %b {axis = 1 : i64} : (tensor<3x5xf32>, tensor<2x5xf32>) -> tensor<3x10xf32>
  return
}

// -----

func.func @case41(%a: tensor<3x5xf32>, %b: tensor<3x5xi32>) {
  // expected-error @+1 {{input element types must match}}
  %0 = kiln.concat %a, %b {axis = 0 : i64} : (tensor<3x5xf32>, tensor<3x5xi32>) -> tensor<6x5xf32>
  return
}

// -----

func.func @case42(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{starts, ends and steps must have 2 entries each}}
  %0 = kiln.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case43(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{step of dimension 1 is zero}}
  %0 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 2>, steps = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @case44(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{slice bounds [0, 5) are out of range for dimension 0 of size 4}}
  %0 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 2>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<5x2xf32>
  return
}

// -----

func.func @case45(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 4 pads, got 2}}
  %0 = kiln.pad %x {pads = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<5x5xf32>
  return
}

// -----

func.func @case46(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{mode must be constant, reflect or edge, got "wrap"}}
  %0 = kiln.pad %x {pads = array<i64: 1, 1, 1, 1>, mode = "wrap"} : tensor<4x4xf32> -> tensor<6x6xf32>
  return
}

// -----

func.func @case47(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{pads [-3, 0, -2, 0] crop dimension 0 below zero}}
  %0 = kiln.pad %x {pads = array<i64: -3, 0, -2, 0>} : tensor<4x4xf32> -> tensor<0x4xf32>
  return
}

// -----

func.func @case48(%x: tensor<4x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.gather %x, %i {axis = 2 : i64} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<4x4x2xf32>
  return
}

// -----

func.func @case49(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{cannot broadcast [3, 4] to [2, 4]}}
  %0 = kiln.expand %x : tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @gather_elements_axis(%x: tensor<4x4xf32>, %i: tensor<4x4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.gather_elements %x, %i {axis = 2 : i64} : (tensor<4x4xf32>, tensor<4x4xi64>) -> tensor<4x4xf32>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<4x4xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices rank 1 differs from data rank 2}}
  %0 = kiln.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_larger(%x: tensor<4x4xf32>, %i: tensor<2x5xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices shape [2, 5] is larger than data shape [4, 4] outside axis 0}}
  %0 = kiln.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x5xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @scatter_elements_updates_shape(%x: tensor<4x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{updates shape [2, 3] differs from indices shape [2, 4]}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x4xi64>, tensor<2x3xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_elements_updates_type(%x: tensor<4x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xi32>) {
  // expected-error @+1 {{updates element type 'i32' differs from data element type 'f32'}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x4xi64>, tensor<2x4xi32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_elements_reduction(%x: tensor<4x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{reduction must be none, add, mul, max or min, got "sub"}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "sub"} : (tensor<4x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %v: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{values must have shape [2], got [3]}}
  %0 = kiln.one_hot %i, %v {axis = 1 : i64, depth = 4 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.one_hot %i, %v {axis = 2 : i64, depth = 4 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @one_hot_depth(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{depth must be positive, got 0}}
  %0 = kiln.one_hot %i, %v {axis = 1 : i64, depth = 0 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x0xf32>
  return
}

// -----

func.func @dispatch_arity(%x: tensor<4xf32>) {
  // expected-error @+1 {{has 1 inputs but its body takes 2 arguments}}
  %0 = kiln.dispatch "d" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @dispatch_argument_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{input 0 has type 'tensor<4xf32>' but body argument 0 has type 'tensor<4xf16>'}}
  %0 = kiln.dispatch "d" (%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf16>):
    kiln.yield %a : tensor<4xf16>
  }
  return
}

// -----

func.func @dispatch_yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{yields 1 values whose types differ from its results}}
  %0 = kiln.dispatch "d" (%x) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @dispatch_terminator(%x: tensor<4xf32>) {
  // expected-error @+1 {{body must end with kiln.yield}}
  %0 = kiln.dispatch "d" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    func.return
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'kiln.dispatch'}}
  kiln.yield %x : tensor<4xf32>
}

// -----

func.func @xor_float(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operands must be i1 or integer tensors, got 'f32'}}
  %0 = kiln.xor %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @shift_float(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operands must be integer tensors, got 'f32'}}
  %0 = kiln.shift_left %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @shift_bool(%a: tensor<2xi1>, %b: tensor<2xi1>) {
  // expected-error @+1 {{operands must be integer tensors, got 'i1'}}
  %0 = kiln.shift_right %a, %b : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

func.func @acos_integer(%a: tensor<2xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = kiln.acos %a : tensor<2xi32>
  return
}

// -----

func.func @quantize_shape(%x: tensor<2x3xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{float shape [2, 3] differs from integer shape [3, 2]}}
  %0 = kiln.quantize %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x2xui8>
  return
}

// -----

func.func @quantize_scale_type(%x: tensor<2x3xf32>, %s: tensor<f16>) {
  // expected-error @+1 {{scale element type 'f16' must be 'f32'}}
  %0 = kiln.quantize %x, %s : (tensor<2x3xf32>, tensor<f16>) -> tensor<2x3xui8>
  return
}

// -----

func.func @quantize_zero_point_type(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<i8>) {
  // expected-error @+1 {{zero_point element type 'i8' must be 'ui8'}}
  %0 = kiln.quantize %x, %s zero_point(%z) : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xui8>
  return
}

// -----

// One scale per row is not one per column.
func.func @dequantize_scale_shape(%q: tensor<2x3xi8>, %s: tensor<2xf32>) {
  // expected-error @+1 {{scale shape [2] does not broadcast to [2, 3]}}
  %0 = kiln.dequantize %q, %s : (tensor<2x3xi8>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @dequantize_bool(%q: tensor<2x3xi1>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %0 = kiln.dequantize %q, %s : (tensor<2x3xi1>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

// Two groups of 32 rows are K = 64, not 48.
func.func @matmul_int4_groups(%x: tensor<1x48xf32>, %w: tensor<2x16x8xi8>, %s: tensor<2x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights [2, 16, 8] hold 2 groups of 32 rows, but lhs [1, 48] has K = 48}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x48xf32>, tensor<2x16x8xi8>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @matmul_int4_weights_rank(%x: tensor<1x64xf32>, %w: tensor<32x8xi8>, %s: tensor<2x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights must be [K / B, B / 2, N], [N / P, K / B, B / 2, P] or [N / P, K / B, B / 8, P, 4] bytes, got [32, 8]}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x64xf32>, tensor<32x8xi8>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @matmul_int4_scale_shape(%x: tensor<1x64xf32>, %w: tensor<2x16x8xi8>, %s: tensor<8x2xf32>, %z: tensor<2x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale must be [K / B, N] = [2, 8], got [8, 2]}}
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x64xf32>, tensor<2x16x8xi8>, tensor<8x2xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

// Column panels: scale must be panelled like the weights.
func.func @matmul_int4_panel_scale(%x: tensor<1x64xf32>, %w: tensor<2x2x16x4xi8>, %s: tensor<2x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale must be [N / P, K / B, P] = [2, 2, 4], got [2, 8]}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x64xf32>, tensor<2x2x16x4xi8>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

// W4A8's panels hold each column's codes four rows at a time.
func.func @matmul_int4_quads(%x: tensor<1x64xf32>, %w: tensor<1x2x8x16x2xi8>, %s: tensor<1x2x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights must be [K / B, B / 2, N], [N / P, K / B, B / 2, P] or [N / P, K / B, B / 8, P, 4] bytes, got [1, 2, 8, 16, 2]}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s {int8_activations} : (tensor<1x64xf32>, tensor<1x2x8x16x2xi8>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @matmul_int4_quads_groups(%x: tensor<1x48xf32>, %w: tensor<1x2x4x16x4xi8>, %s: tensor<1x2x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights [1, 2, 4, 16, 4] hold 2 groups of 32 rows, but lhs [1, 48] has K = 48}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s {int8_activations} : (tensor<1x48xf32>, tensor<1x2x4x16x4xi8>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @matmul_int4_panel_groups(%x: tensor<1x48xf32>, %w: tensor<2x2x16x4xi8>, %s: tensor<2x2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights [2, 2, 16, 4] hold 2 groups of 32 rows, but lhs [1, 48] has K = 48}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x48xf32>, tensor<2x2x16x4xi8>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<1x8xf32>
  return
}

// -----

// 3 panels of 16 hold 33 to 48 columns.
func.func @matmul_panels_columns(%x: tensor<1x8xf32>, %w: tensor<3x8x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{columns = 32 do not fill the last of 3 panels of 16}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xf32>, tensor<3x8x16xf32>) -> tensor<1x32xf32>
  return
}

// -----

func.func @matmul_panels_k(%x: tensor<1x8xf32>, %w: tensor<2x4x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights [2, 4, 16] have K = 4, but lhs [1, 8] has K = 8}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xf32>, tensor<2x4x16xf32>) -> tensor<1x32xf32>
  return
}

// -----

func.func @matmul_panels_rank(%x: tensor<1x8xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights must be [ceil(N / P), K, P], got [8, 32]}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xf32>, tensor<8x32xf32>) -> tensor<1x32xf32>
  return
}

// -----

func.func @matmul_panels_type(%x: tensor<1x8xf32>, %w: tensor<2x8x16xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weights element type 'f16' differs from lhs element type 'f32'}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xf32>, tensor<2x8x16xf16>) -> tensor<1x32xf32>
  return
}

// -----

// 8-bit activations take int8 weights (vpdpbusd's signed operand).
func.func @matmul_panels_unsigned_weights(%x: tensor<1x8xui8>, %w: tensor<2x8x16xui8>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{8-bit lhs needs i8 weights, got 'ui8'}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xui8>, tensor<2x8x16xui8>) -> tensor<1x32xi32>
  return
}

// -----

func.func @matmul_panels_i32(%x: tensor<1x8xi32>, %w: tensor<2x8x16xi32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{lhs must be float or 8-bit integer, got 'i32'}}
  %0 = kiln.matmul_panels %x, %w {columns = 32 : i64} : (tensor<1x8xi32>, tensor<2x8x16xi32>) -> tensor<1x32xi32>
  return
}

// -----

func.func @matmul_int4_zero_type(%x: tensor<1x64xf32>, %w: tensor<2x16x8xi8>, %s: tensor<2x8xf32>, %z: tensor<2x8xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{zero_point element type 'f16' differs from lhs element type 'f32'}}
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x64xf32>, tensor<2x16x8xi8>, tensor<2x8xf32>, tensor<2x8xf16>) -> tensor<1x8xf32>
  return
}

// -----

func.func @matmul_int4_lhs_rank(%x: tensor<64xf32>, %w: tensor<2x16x8xi8>, %s: tensor<2x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{lhs must have rank 2 or more, got 1}}
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<64xf32>, tensor<2x16x8xi8>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @winograd_input_tile(%x: tensor<1x8x14x14xf32>) {
  // expected-error @+1 {{tile must be 2 or 4, got 3}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 3 : i64} : tensor<1x8x14x14xf32> -> tensor<25x8x25xf32>
  return
}

// -----

func.func @winograd_input_points(%x: tensor<1x8x14x14xf32>) {
  // expected-error @+1 {{F(4, 3) has 36 transform points, got 16}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x8x14x14xf32> -> tensor<16x8x16xf32>
  return
}

// -----

func.func @winograd_input_pads(%x: tensor<1x8x14x14xf32>) {
  // expected-error @+1 {{pads must be 4 values from 0 to 16 ([top, left, bottom, right]), got [1, 17, 1, 1]}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 17, 1, 1>, tile = 4 : i64} : tensor<1x8x14x14xf32> -> tensor<36x8x16xf32>
  return
}

// -----

func.func @winograd_input_tiles(%x: tensor<1x8x14x14xf32>) {
  // expected-error @+1 {{result must be [36, 8, 16] for 14 x 14 outputs in tiles of 4, got [36, 8, 9]}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x8x14x14xf32> -> tensor<36x8x9xf32>
  return
}

// -----

func.func @winograd_input_empty(%x: tensor<1x8x2x14xf32>) {
  // expected-error @+1 {{the 3x3 convolution's output would be empty (0 x 12)}}
  %0 = kiln.winograd_input %x {pads = array<i64: 0, 0, 0, 0>, tile = 2 : i64} : tensor<1x8x2x14xf32> -> tensor<16x8x1xf32>
  return
}

// -----

func.func @winograd_input_rank(%x: tensor<8x14x14xf32>) {
  // expected-error @+1 {{input must be [N, C, H, W] and the result [points, C, tiles], got [8, 14, 14] and [36, 8, 16]}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<8x14x14xf32> -> tensor<36x8x16xf32>
  return
}

// -----

func.func @winograd_input_dynamic(%x: tensor<1x8x?x14xf32>) {
  // expected-error @+1 {{shapes must be static}}
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x8x?x14xf32> -> tensor<36x8x16xf32>
  return
}

// -----

func.func @winograd_output_tiles(%m: tensor<36x4x16xf32>) {
  // expected-error @+1 {{input must be [36, 4, 8] for the result [1, 4, 7, 14] in tiles of 4, got [36, 4, 16]}}
  %0 = kiln.winograd_output %m {tile = 4 : i64} : (tensor<36x4x16xf32>) -> tensor<1x4x7x14xf32>
  return
}

// -----

func.func @winograd_output_points(%m: tensor<36x4x16xf32>) {
  // expected-error @+1 {{F(2, 3) has 16 transform points, got 36}}
  %0 = kiln.winograd_output %m {tile = 2 : i64} : (tensor<36x4x16xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @winograd_output_rank(%m: tensor<36x64xf32>) {
  // expected-error @+1 {{input must be [points, F, tiles] and the result [N, F, OH, OW], got [36, 64] and [1, 4, 14, 14]}}
  %0 = kiln.winograd_output %m {tile = 4 : i64} : (tensor<36x64xf32>) -> tensor<1x4x14x14xf32>
  return
}

// -----

func.func @winograd_output_bias(%m: tensor<36x4x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must have shape [4], got [8]}}
  %0 = kiln.winograd_output %m bias(%b) {tile = 4 : i64} : (tensor<36x4x16xf32>, tensor<8xf32>) -> tensor<1x4x14x14xf32>
  return
}

// -----

func.func @winograd_output_residual(%m: tensor<36x4x16xf32>, %r: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{residual must have the result's type 'tensor<1x4x14x14xf32>', got 'tensor<1x4x16x16xf32>'}}
  %0 = kiln.winograd_output %m residual(%r) {tile = 4 : i64} : (tensor<36x4x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x14x14xf32>
  return
}

// -----

func.func @four_bit_on_four_bit_operands(%a: tensor<3x4xi4>, %b: tensor<4x2xi4>) {
  // expected-error @+1 {{'kiln.four_bit' must be a unit attribute on a kiln.matmul_integer of 8-bit operands (or a linalg contraction)}}
  %0 = kiln.matmul_integer %a, %b {kiln.four_bit} : (tensor<3x4xi4>, tensor<4x2xi4>) -> tensor<3x2xi32>
  return
}

// -----

func.func @four_bit_not_unit(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>) {
  // expected-error @+1 {{'kiln.four_bit' must be a unit attribute on a kiln.matmul_integer of 8-bit operands (or a linalg contraction)}}
  %0 = kiln.matmul_integer %a, %b {kiln.four_bit = 1 : i64} : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
  return
}

// -----

func.func @four_bit_on_add(%a: tensor<3xi8>) {
  // expected-error @+1 {{'kiln.four_bit' must be a unit attribute on a kiln.matmul_integer of 8-bit operands (or a linalg contraction)}}
  %0 = kiln.add %a, %a {kiln.four_bit} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
  return
}

// -----

func.func @odd(%x: tensor<2x7xf32>, %c: tensor<7xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{last dimension must be even, got 7}}
  %y = kiln.rotary_embedding %x, %c, %c : (tensor<2x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<2x7xf32>
  return %y : tensor<2x7xf32>
}

// -----

func.func @cos_shape(%x: tensor<2x8xf32>, %c: tensor<4xf32>, %s: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{cos shape [4] does not broadcast to [2, 8]}}
  %y = kiln.rotary_embedding %x, %c, %s : (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @sin_rank(%x: tensor<2x8xf32>, %c: tensor<8xf32>, %s: tensor<1x2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{sin shape [1, 2, 8] does not broadcast to [2, 8]}}
  %y = kiln.rotary_embedding %x, %c, %s : (tensor<2x8xf32>, tensor<8xf32>, tensor<1x2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @sin_type(%x: tensor<2x8xf32>, %c: tensor<8xf32>, %s: tensor<8xf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{sin element type 'f16' must be the input's, 'f32'}}
  %y = kiln.rotary_embedding %x, %c, %s : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf16>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @result(%x: tensor<2x8xf32>, %c: tensor<8xf32>) -> tensor<2x8xf16> {
  // expected-error @+1 {{result type must match the input type}}
  %y = kiln.rotary_embedding %x, %c, %c : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}
