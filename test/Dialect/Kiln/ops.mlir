// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xi1>) -> tensor<2x3xf32> {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.sub
  %1 = kiln.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.mul
  %2 = kiln.mul %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.div
  %3 = kiln.div %2, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.pow
  %4 = kiln.pow %3, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.max
  %5 = kiln.max %4, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.min
  %6 = kiln.min %5, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.less {{.*}} -> tensor<2x3xi1>
  %7 = kiln.less %6, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.and {{.*}} -> tensor<2x3xi1>
  %8 = kiln.and %7, %c : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  // CHECK: kiln.select
  %9 = kiln.select %8, %6, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.relu
  %10 = kiln.relu %9 : tensor<2x3xf32>
  // CHECK: kiln.gelu %{{.*}} {approximate = "tanh"}
  %11 = kiln.gelu %10 {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK: kiln.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
  %12 = kiln.clip %11 {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  // CHECK: kiln.hard_sigmoid
  %13 = kiln.hard_sigmoid %12 {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<2x3xf32>
  // CHECK: kiln.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xf16>
  %14 = kiln.cast %13 : tensor<2x3xf32> to tensor<2x3xf16>
  return %13 : tensor<2x3xf32>
}

// CHECK-LABEL: func @math_and_unsigned
func.func @math_and_unsigned(%x: tensor<4xf32>, %u: tensor<4xui8>, %s: tensor<4xui8>) -> (tensor<4xf32>, tensor<4xui8>) {
  // CHECK: kiln.tan %{{.*}} : tensor<4xf32>
  %0 = kiln.tan %x : tensor<4xf32>
  // CHECK: kiln.asin
  %1 = kiln.asin %0 : tensor<4xf32>
  // CHECK: kiln.acos
  %2 = kiln.acos %1 : tensor<4xf32>
  // CHECK: kiln.atan
  %3 = kiln.atan %2 : tensor<4xf32>
  // CHECK: kiln.sinh
  %4 = kiln.sinh %3 : tensor<4xf32>
  // CHECK: kiln.cosh
  %5 = kiln.cosh %4 : tensor<4xf32>
  // CHECK: kiln.asinh
  %6 = kiln.asinh %5 : tensor<4xf32>
  // CHECK: kiln.acosh
  %7 = kiln.acosh %6 : tensor<4xf32>
  // CHECK: kiln.atanh
  %8 = kiln.atanh %7 : tensor<4xf32>
  // CHECK: kiln.shift_left %{{.*}}, %{{.*}} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %9 = kiln.shift_left %u, %s : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: kiln.shift_right
  %10 = kiln.shift_right %9, %s : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: kiln.max {{.*}} -> tensor<4xui8>
  %11 = kiln.max %10, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // Xor is bitwise on integers.
  // CHECK: kiln.xor {{.*}} -> tensor<4xui8>
  %12 = kiln.xor %11, %s : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %8, %12 : tensor<4xf32>, tensor<4xui8>
}

// CHECK-LABEL: func @contractions
func.func @contractions(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %bias: tensor<4xf32>,
                        %a: tensor<2x1x4x5xf32>, %b: tensor<3x5x6xf32>) -> (tensor<1x4x4x4xf32>, tensor<2x3x4x6xf32>) {
  // CHECK: kiln.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %0 = kiln.conv %x, %w, %bias {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: kiln.matmul {{.*}} -> tensor<2x3x4x6xf32>
  %1 = kiln.matmul %a, %b : (tensor<2x1x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %0, %1 : tensor<1x4x4x4xf32>, tensor<2x3x4x6xf32>
}

// 8-bit operands keep their signedness (ui8 unsigned, i8 signed); the zero
// points are optional and independent.
// CHECK-LABEL: func @integer_contractions
func.func @integer_contractions(%a: tensor<2x3x4xui8>, %b: tensor<4x5xi8>, %za: tensor<3x1xui8>, %zb: tensor<5xi8>,
                                %x: tensor<1x4x8x8xui8>, %w: tensor<6x2x3x3xui8>, %zx: tensor<ui8>, %zw: tensor<6xui8>)
    -> (tensor<2x3x5xi32>, tensor<2x3x5xi32>, tensor<2x3x5xi32>, tensor<1x6x4x4xi32>, tensor<1x6x8x8xi32>) {
  // CHECK: kiln.matmul_integer %{{.*}}, %{{.*}} : (tensor<2x3x4xui8>, tensor<4x5xi8>) -> tensor<2x3x5xi32>
  %0 = kiln.matmul_integer %a, %b : (tensor<2x3x4xui8>, tensor<4x5xi8>) -> tensor<2x3x5xi32>
  // CHECK: kiln.matmul_integer %{{.*}}, %{{.*}} lhs_zero_point(%{{.*}}) rhs_zero_point(%{{.*}}) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<3x1xui8>, tensor<5xi8>) -> tensor<2x3x5xi32>
  %1 = kiln.matmul_integer %a, %b lhs_zero_point(%za) rhs_zero_point(%zb) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<3x1xui8>, tensor<5xi8>) -> tensor<2x3x5xi32>
  // CHECK: kiln.matmul_integer %{{.*}}, %{{.*}} rhs_zero_point(%{{.*}}) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<5xi8>) -> tensor<2x3x5xi32>
  %2 = kiln.matmul_integer %a, %b rhs_zero_point(%zb) : (tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<5xi8>) -> tensor<2x3x5xi32>
  // CHECK: kiln.conv_integer %{{.*}}, %{{.*}} input_zero_point(%{{.*}}) filter_zero_point(%{{.*}}) {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %3 = kiln.conv_integer %x, %w input_zero_point(%zx) filter_zero_point(%zw) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 2} : (tensor<1x4x8x8xui8>, tensor<6x2x3x3xui8>, tensor<ui8>, tensor<6xui8>) -> tensor<1x6x4x4xi32>
  // CHECK: kiln.conv_integer %{{.*}}, %{{.*}} filter_zero_point(%{{.*}}) {{{.*}}} : (tensor<1x4x8x8xui8>, tensor<6x2x3x3xui8>, tensor<ui8>) -> tensor<1x6x8x8xi32>
  %4 = kiln.conv_integer %x, %w filter_zero_point(%zx) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, groups = 2} : (tensor<1x4x8x8xui8>, tensor<6x2x3x3xui8>, tensor<ui8>) -> tensor<1x6x8x8xi32>
  return %0, %1, %2, %3, %4 : tensor<2x3x5xi32>, tensor<2x3x5xi32>, tensor<2x3x5xi32>, tensor<1x6x4x4xi32>, tensor<1x6x8x8xi32>
}

// CHECK-LABEL: func @pooling_and_reductions
func.func @pooling_and_reductions(%x: tensor<1x8x112x112xf32>) -> (tensor<1x8x56x56xf32>, tensor<1x8x56x56xf32>, tensor<1x8x1x1xf32>, tensor<1x112xi64>) {
  // CHECK: kiln.max_pool
  %0 = kiln.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
  // CHECK: kiln.avg_pool {{.*}}ceil_mode = true
  %1 = kiln.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
  // CHECK: kiln.reduce_mean {{.*}}axes = array<i64: 2, 3>
  %2 = kiln.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<1x8x112x112xf32>) -> tensor<1x8x1x1xf32>
  // CHECK: kiln.reduce_sum {{.*}}keepdims = false
  %3 = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<1x8x112x112xf32>) -> tensor<1x112x112xf32>
  // CHECK: kiln.argmax
  %4 = kiln.argmax %3 {axis = 2 : i64, keepdims = false} : (tensor<1x112x112xf32>) -> tensor<1x112xi64>
  return %0, %1, %2, %4 : tensor<1x8x56x56xf32>, tensor<1x8x56x56xf32>, tensor<1x8x1x1xf32>, tensor<1x112xi64>
}

// CHECK-LABEL: func @normalizations
func.func @normalizations(%x: tensor<2x16x32xf32>, %s: tensor<32xf32>, %img: tensor<1x4x2x2xf32>, %c: tensor<4xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<1x4x2x2xf32>) {
  // CHECK: kiln.softmax {{.*}}axis = 2
  %0 = kiln.softmax %x {axis = 2 : i64} : tensor<2x16x32xf32>
  // CHECK: kiln.layer_norm
  %1 = kiln.layer_norm %x, %s, %s {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  // CHECK: kiln.rms_norm
  %2 = kiln.rms_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-6 : f64} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  // CHECK: kiln.batch_norm
  %3 = kiln.batch_norm %img, %c, %c, %c, %c {epsilon = 1.0e-5 : f64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  return %0, %1, %2, %3 : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<1x4x2x2xf32>
}

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>, tensor<4x5x6xf32>, tensor<2x2x3x4xf32>) {
  // CHECK: kiln.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: kiln.transpose {{.*}}permutation = array<i64: 2, 1, 0>
  %1 = kiln.transpose %x {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  // CHECK: kiln.concat
  %2 = kiln.concat %x, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: kiln.slice
  %3 = kiln.slice %x {starts = array<i64: 0, 2, 3>, ends = array<i64: 2, 0, -1>, steps = array<i64: 1, -1, -2>} : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  // CHECK: kiln.gather
  %4 = kiln.gather %x, %i {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK: kiln.pad {{.*}}mode = "reflect"
  %5 = kiln.pad %x {pads = array<i64: 1, 1, 1, 1, 1, 1>, mode = "reflect"} : tensor<2x3x4xf32> -> tensor<4x5x6xf32>
  // CHECK: kiln.expand
  %6 = kiln.expand %x : tensor<2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>, tensor<4x5x6xf32>, tensor<2x2x3x4xf32>
}

// CHECK-LABEL: func @element_indexing
func.func @element_indexing(%x: tensor<3x5xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>, %j: tensor<4xi32>, %v: tensor<2xf32>) -> (tensor<3x2xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<4x6xf32>) {
  // CHECK: kiln.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %0 = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  // CHECK: kiln.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
  %1 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
  // CHECK: kiln.scatter_elements {{.*}}reduction = "max"
  %2 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "max"} : (tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
  // CHECK: kiln.one_hot %{{.*}}, %{{.*}} {axis = 1 : i64, depth = 6 : i64} : (tensor<4xi32>, tensor<2xf32>) -> tensor<4x6xf32>
  %3 = kiln.one_hot %j, %v {axis = 1 : i64, depth = 6 : i64} : (tensor<4xi32>, tensor<2xf32>) -> tensor<4x6xf32>
  return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<4x6xf32>
}

// CHECK-LABEL: func @constants
func.func @constants() -> (tensor<2xi64>, tensor<4xf32>) {
  // CHECK: kiln.constant dense<[1, 2]> : tensor<2xi64>
  %0 = kiln.constant dense<[1, 2]> : tensor<2xi64>
  // CHECK: kiln.constant dense_resource<weights> : tensor<4xf32>
  %1 = kiln.constant dense_resource<weights> : tensor<4xf32>
  return %0, %1 : tensor<2xi64>, tensor<4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// CHECK-LABEL: func @dispatch
// CHECK: %[[R:.*]] = kiln.dispatch "dispatch_0_matmul" (%arg0, %arg1) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>):
// CHECK-NEXT: %[[M:.*]] = kiln.matmul %[[A]], %[[B]]
// CHECK-NEXT: %[[Y:.*]] = kiln.relu %[[M]]
// CHECK-NEXT: kiln.yield %[[Y]] : tensor<2x4xf32>
// CHECK: return %[[R]]
func.func @dispatch(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = kiln.dispatch "dispatch_0_matmul" (%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>):
    %1 = kiln.matmul %x, %y : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %2 = kiln.relu %1 : tensor<2x4xf32>
    kiln.yield %2 : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func @quantization
func.func @quantization(%x: tensor<1x3x4xf32>, %s: tensor<1x3x1xf32>, %z: tensor<1x3x1xi8>, %q: tensor<1x3x4xi32>, %t: tensor<f32>) -> (tensor<1x3x4xi8>, tensor<1x3x4xf32>) {
  // CHECK: kiln.quantize %{{.*}}, %{{.*}} zero_point(%{{.*}}) : (tensor<1x3x4xf32>, tensor<1x3x1xf32>, tensor<1x3x1xi8>) -> tensor<1x3x4xi8>
  %0 = kiln.quantize %x, %s zero_point(%z) : (tensor<1x3x4xf32>, tensor<1x3x1xf32>, tensor<1x3x1xi8>) -> tensor<1x3x4xi8>
  // CHECK: kiln.dequantize %{{.*}}, %{{.*}} : (tensor<1x3x4xi32>, tensor<f32>) -> tensor<1x3x4xf32>
  %1 = kiln.dequantize %q, %t : (tensor<1x3x4xi32>, tensor<f32>) -> tensor<1x3x4xf32>
  return %0, %1 : tensor<1x3x4xi8>, tensor<1x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_int4
func.func @matmul_int4(%x: tensor<2x3x64xf32>, %w: tensor<2x16x40xi8>, %s: tensor<2x40xf32>, %z: tensor<2x40xf32>) -> tensor<2x3x40xf32> {
  // CHECK: kiln.matmul_int4 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3x64xf32>, tensor<2x16x40xi8>, tensor<2x40xf32>, tensor<2x40xf32>) -> tensor<2x3x40xf32>
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<2x3x64xf32>, tensor<2x16x40xi8>, tensor<2x40xf32>, tensor<2x40xf32>) -> tensor<2x3x40xf32>
  return %0 : tensor<2x3x40xf32>
}

// Column panels of 8: N = 5 * 8.
// CHECK-LABEL: func.func @matmul_int4_panels
func.func @matmul_int4_panels(%x: tensor<3x64xf32>, %w: tensor<5x2x16x8xi8>, %s: tensor<5x2x8xf32>) -> tensor<3x40xf32> {
  // CHECK: kiln.matmul_int4 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x64xf32>, tensor<5x2x16x8xi8>, tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<3x40xf32>
  %0 = kiln.matmul_int4 %x, %w, %s, %s : (tensor<3x64xf32>, tensor<5x2x16x8xi8>, tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<3x40xf32>
  return %0 : tensor<3x40xf32>
}

// W4A8: int8 activations, the codes in panels of 32 columns four rows at a
// time ([N / P, K / B, B / 8, P, 4]: B = 8 * 4 = 32, K = 2 * 32).
// CHECK-LABEL: func.func @matmul_int4_int8_activations
func.func @matmul_int4_int8_activations(%x: tensor<1x64xf32>, %w: tensor<2x2x4x32x4xi8>, %s: tensor<2x2x32xf32>) -> tensor<1x64xf32> {
  // CHECK: kiln.matmul_int4 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {int8_activations} : (tensor<1x64xf32>, tensor<2x2x4x32x4xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<1x64xf32>
  %0 = kiln.matmul_int4 %x, %w, %s, %s {int8_activations} : (tensor<1x64xf32>, tensor<2x2x4x32x4xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

// A [256, 40] weight in 3 panels of 16 (the last with 8 columns of padding).
// CHECK-LABEL: func.func @matmul_panels
func.func @matmul_panels(%x: tensor<2x1x256xf32>, %w: tensor<3x256x16xf32>) -> tensor<2x1x40xf32> {
  // CHECK: kiln.matmul_panels %{{.*}}, %{{.*}} {columns = 40 : i64} : (tensor<2x1x256xf32>, tensor<3x256x16xf32>) -> tensor<2x1x40xf32>
  %0 = kiln.matmul_panels %x, %w {columns = 40 : i64} : (tensor<2x1x256xf32>, tensor<3x256x16xf32>) -> tensor<2x1x40xf32>
  return %0 : tensor<2x1x40xf32>
}

// 8-bit: uint8 activations by int8 weights, the i32 products.
// CHECK-LABEL: func.func @matmul_panels_integer
func.func @matmul_panels_integer(%x: tensor<1x256xui8>, %w: tensor<2x256x32xi8>) -> tensor<1x64xi32> {
  // CHECK: kiln.matmul_panels %{{.*}}, %{{.*}} {columns = 64 : i64} : (tensor<1x256xui8>, tensor<2x256x32xi8>) -> tensor<1x64xi32>
  %0 = kiln.matmul_panels %x, %w {columns = 64 : i64} : (tensor<1x256xui8>, tensor<2x256x32xi8>) -> tensor<1x64xi32>
  return %0 : tensor<1x64xi32>
}

// Winograd transforms: a 14x14 image padded by one, F(4,3): 4 x 4 tiles.
// CHECK-LABEL: func @winograd
func.func @winograd(%x: tensor<1x8x14x14xf32>, %m: tensor<36x4x16xf32>, %b: tensor<4xf32>, %r: tensor<1x4x14x14xf32>) -> (tensor<36x8x16xf32>, tensor<1x4x14x14xf32>, tensor<1x4x14x14xf32>) {
  // CHECK: kiln.winograd_input %{{.*}} {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x8x14x14xf32> -> tensor<36x8x16xf32>
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x8x14x14xf32> -> tensor<36x8x16xf32>
  // CHECK: kiln.winograd_output %{{.*}} bias(%{{.*}}) residual(%{{.*}}) {relu, tile = 4 : i64} : (tensor<36x4x16xf32>, tensor<4xf32>, tensor<1x4x14x14xf32>) -> tensor<1x4x14x14xf32>
  %1 = kiln.winograd_output %m bias(%b) residual(%r) {relu, tile = 4 : i64} : (tensor<36x4x16xf32>, tensor<4xf32>, tensor<1x4x14x14xf32>) -> tensor<1x4x14x14xf32>
  // CHECK: kiln.winograd_output %{{.*}} {tile = 4 : i64} : (tensor<36x4x16xf32>) -> tensor<1x4x14x14xf32>
  %2 = kiln.winograd_output %m {tile = 4 : i64} : (tensor<36x4x16xf32>) -> tensor<1x4x14x14xf32>
  return %0, %1, %2 : tensor<36x8x16xf32>, tensor<1x4x14x14xf32>, tensor<1x4x14x14xf32>
}
