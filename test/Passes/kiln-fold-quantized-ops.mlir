// RUN: kiln-opt %s -split-input-file --kiln-fold-quantized-ops | FileCheck %s

// conv(dequantize(x), dequantize(w), bias) -> float(conv_integer) * (sx * sw)
// + bias: x per tensor (scale 0.5, zero point 128), w per output channel
// (0.25, 0.125), so the scales of the two channels are 0.125 and 0.0625.
// CHECK-LABEL: func.func @conv
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x1x3x3xui8>, %[[W:[a-z0-9]+]]: tensor<2x1x1x1xi8>, %[[B:[a-z0-9]+]]: tensor<2xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<128> : tensor<ui8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.250000e-01]], {{\[}}[6.250000e-02]]]]> : tensor<1x2x1x1xf32>
// CHECK: %[[ACC:.*]] = kiln.conv_integer %[[X]], %[[W]] input_zero_point(%[[Z]]) {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x2x3x3xi32>
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]] : tensor<1x2x3x3xi32> to tensor<1x2x3x3xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[F]], %[[S]]
// CHECK: %[[RB:.*]] = kiln.reshape %[[B]] : tensor<2xf32> -> tensor<1x2x1x1xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[M]], %[[RB]]
// CHECK-NOT: kiln.conv %
// CHECK: return %[[Y]]
func.func @conv(%x: tensor<1x1x3x3xui8>, %w: tensor<2x1x1x1xi8>, %b: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %dx = kiln.dequantize %x, %sx zero_point(%zx) : (tensor<1x1x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x3x3xf32>
  %sw = kiln.constant dense<[[[[0.25]]], [[[0.125]]]]> : tensor<2x1x1x1xf32>
  %dw = kiln.dequantize %w, %sw : (tensor<2x1x1x1xi8>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x1xf32>
  %y = kiln.conv %dx, %dw, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// matmul of a per-tensor lhs and a per-column [K, N] rhs with zero points:
// the zero points become matmul_integer's (rhs one per column), the scale
// products one per column (0.1 * [2, 4]).
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x4xui8>, %[[B:[a-z0-9]+]]: tensor<4x2xi8>
// CHECK-DAG: %[[ZA:.*]] = kiln.constant dense<3> : tensor<ui8>
// CHECK-DAG: %[[ZB:.*]] = kiln.constant dense<[1, -1]> : tensor<2xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<[{{0.200000003|2.000000e-01}}, {{0.400000006|4.000000e-01}}]> : tensor<2xf32>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[A]], %[[B]] lhs_zero_point(%[[ZA]]) rhs_zero_point(%[[ZB]]) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, tensor<2xi8>) -> tensor<3x2xi32>
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]]
// CHECK: %[[Y:.*]] = kiln.mul %[[F]], %[[S]]
// CHECK: return %[[Y]]
func.func @matmul(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>) -> tensor<3x2xf32> {
  %sa = kiln.constant dense<0.1> : tensor<f32>
  %za = kiln.constant dense<3> : tensor<ui8>
  %da = kiln.dequantize %a, %sa zero_point(%za) : (tensor<3x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<3x4xf32>
  %sb = kiln.constant dense<[[2.0, 4.0]]> : tensor<1x2xf32>
  %zb = kiln.constant dense<[[1, -1]]> : tensor<1x2xi8>
  %db = kiln.dequantize %b, %sb zero_point(%zb) : (tensor<4x2xi8>, tensor<1x2xf32>, tensor<1x2xi8>) -> tensor<4x2xf32>
  %y = kiln.matmul %da, %db : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Left alone: a scale known only at run time, a per-channel activation, and
// 16-bit integers (no 8-bit kernel takes them).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: _integer
// CHECK: kiln.matmul
// CHECK: kiln.matmul
// CHECK: kiln.matmul
func.func @untouched(%a: tensor<3x4xui8>, %b: tensor<4x2xi8>, %s: tensor<f32>, %c: tensor<3x4xi16>, %d: tensor<4x2xi16>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %da = kiln.dequantize %a, %s : (tensor<3x4xui8>, tensor<f32>) -> tensor<3x4xf32>
  %db = kiln.dequantize %b, %one : (tensor<4x2xi8>, tensor<f32>) -> tensor<4x2xf32>
  %y0 = kiln.matmul %da, %db : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %rows = kiln.constant dense<[[1.0], [2.0], [3.0]]> : tensor<3x1xf32>
  %dr = kiln.dequantize %a, %rows : (tensor<3x4xui8>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %y1 = kiln.matmul %dr, %db : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %dc = kiln.dequantize %c, %one : (tensor<3x4xi16>, tensor<f32>) -> tensor<3x4xf32>
  %dd = kiln.dequantize %d, %one : (tensor<4x2xi16>, tensor<f32>) -> tensor<4x2xf32>
  %y2 = kiln.matmul %dc, %dd : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y0, %y1, %y2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Constant int8 weights without a zero point: the activations' zero point
// (128) is applied at compile time. The input is padded with it (what zero
// padding of x - 128 means), convolved raw without zero points, and
// 128 * (the filter sums [3 + -1 + 2 + 0, -4 + 5 + 1 + 1] = [4, 3]) is
// subtracted in i32 before the float epilogue.
// CHECK-LABEL: func.func @conv_constant_weights
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x1x3x3xui8>
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[512]], {{\[}}[384]]]]> : tensor<1x2x1x1xi32>
// CHECK: %[[P:.*]] = kiln.pad %[[X]] {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 1.280000e+02 : f64} : tensor<1x1x3x3xui8> -> tensor<1x1x5x5xui8>
// CHECK: %[[ACC:.*]] = kiln.conv_integer %[[P]], %{{.*}} {{{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}}} : (tensor<1x1x5x5xui8>, tensor<2x1x2x2xi8>) -> tensor<1x2x4x4xi32>
// CHECK: %[[D:.*]] = kiln.sub %[[ACC]], %[[C]]
// CHECK: kiln.cast %[[D]]
func.func @conv_constant_weights(%x: tensor<1x1x3x3xui8>) -> tensor<1x2x4x4xf32> {
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %dx = kiln.dequantize %x, %sx zero_point(%zx) : (tensor<1x1x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x3x3xf32>
  %w = kiln.constant dense<[[[[3, -1], [2, 0]]], [[[-4, 5], [1, 1]]]]> : tensor<2x1x2x2xi8>
  %sw = kiln.constant dense<0.25> : tensor<f32>
  %dw = kiln.dequantize %w, %sw : (tensor<2x1x2x2xi8>, tensor<f32>) -> tensor<2x1x2x2xf32>
  %y = kiln.conv %dx, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// The same for a matmul: 3 * (the column sums [1 + 2, -3 + 4]) comes off.
// CHECK-LABEL: func.func @matmul_constant_weights
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[9, 3]> : tensor<2xi32>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %{{.*}}, %{{.*}} : (tensor<3x2xui8>, tensor<2x2xi8>) -> tensor<3x2xi32>
// CHECK: kiln.sub %[[ACC]], %[[C]]
func.func @matmul_constant_weights(%a: tensor<3x2xui8>) -> tensor<3x2xf32> {
  %sa = kiln.constant dense<0.1> : tensor<f32>
  %za = kiln.constant dense<3> : tensor<ui8>
  %da = kiln.dequantize %a, %sa zero_point(%za) : (tensor<3x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<3x2xf32>
  %b = kiln.constant dense<[[1, -3], [2, 4]]> : tensor<2x2xi8>
  %sb = kiln.constant dense<2.0> : tensor<f32>
  %db = kiln.dequantize %b, %sb : (tensor<2x2xi8>, tensor<f32>) -> tensor<2x2xf32>
  %y = kiln.matmul %da, %db : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A zero point known only at run time (DynamicQuantizeLinear's) comes off
// as i32(z) * (the column sums [1 + 2, -3 + 4]), the sums a constant.
// CHECK-LABEL: func.func @matmul_run_time_zero_point
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x2xui8>, %[[Z:[a-z0-9]+]]: tensor<ui8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<[3, 1]> : tensor<2xi32>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[A]], %{{.*}} : (tensor<3x2xui8>, tensor<2x2xi8>) -> tensor<3x2xi32>
// CHECK: %[[ZW:.*]] = kiln.cast %[[Z]] : tensor<ui8> to tensor<i32>
// CHECK: %[[C:.*]] = kiln.mul %[[ZW]], %[[S]] : (tensor<i32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK: kiln.sub %[[ACC]], %[[C]] : (tensor<3x2xi32>, tensor<2xi32>) -> tensor<3x2xi32>
func.func @matmul_run_time_zero_point(%a: tensor<3x2xui8>, %za: tensor<ui8>) -> tensor<3x2xi32> {
  %b = kiln.constant dense<[[1, -3], [2, 4]]> : tensor<2x2xi8>
  %0 = kiln.matmul_integer %a, %b lhs_zero_point(%za) : (tensor<3x2xui8>, tensor<2x2xi8>, tensor<ui8>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// The same for a conv_integer (dynamic quantization of a convolution): the
// border is padded with 0 and z added there through a constant 0/1 mask
// ([1, 1, 4, 4]: 1 on the one-pixel border of a 2x2 image), then i32(z) *
// (the filters' sums [3 - 1 + 2 + 0, -4 + 5 + 1 + 1]) comes off.
// CHECK-LABEL: func.func @conv_run_time_zero_point
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x1x2x2xui8>, %[[Z:[a-z0-9]+]]: tensor<ui8>
// CHECK-DAG: %[[MASK:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[1, 1, 1, 1], [1, 0, 0, 1], [1, 0, 0, 1], [1, 1, 1, 1]]]]> : tensor<1x1x4x4xui8>
// CHECK-DAG: %[[SUMS:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[4]], {{\[}}[3]]]]> : tensor<1x2x1x1xi32>
// CHECK: %[[P:.*]] = kiln.pad %[[X]] {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : tensor<1x1x2x2xui8> -> tensor<1x1x4x4xui8>
// CHECK: %[[B:.*]] = kiln.mul %[[Z]], %[[MASK]] : (tensor<ui8>, tensor<1x1x4x4xui8>) -> tensor<1x1x4x4xui8>
// CHECK: %[[PZ:.*]] = kiln.add %[[P]], %[[B]]
// CHECK: %[[ACC:.*]] = kiln.conv_integer %[[PZ]], %{{.*}} {{{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}}} : (tensor<1x1x4x4xui8>, tensor<2x1x2x2xi8>) -> tensor<1x2x3x3xi32>
// CHECK: %[[ZW:.*]] = kiln.cast %[[Z]] : tensor<ui8> to tensor<i32>
// CHECK: %[[C:.*]] = kiln.mul %[[ZW]], %[[SUMS]] : (tensor<i32>, tensor<1x2x1x1xi32>) -> tensor<1x2x1x1xi32>
// CHECK: kiln.sub %[[ACC]], %[[C]] : (tensor<1x2x3x3xi32>, tensor<1x2x1x1xi32>) -> tensor<1x2x3x3xi32>
// CHECK-NOT: input_zero_point
func.func @conv_run_time_zero_point(%x: tensor<1x1x2x2xui8>, %zx: tensor<ui8>) -> tensor<1x2x3x3xi32> {
  %w = kiln.constant dense<[[[[3, -1], [2, 0]]], [[[-4, 5], [1, 1]]]]> : tensor<2x1x2x2xi8>
  %0 = kiln.conv_integer %x, %w input_zero_point(%zx) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x2x2xui8>, tensor<2x1x2x2xi8>, tensor<ui8>) -> tensor<1x2x3x3xi32>
  return %0 : tensor<1x2x3x3xi32>
}

// -----

// A matmul by a per-column uint4 weight (one block of K = 4 rows): codes as
// they are, zero points 1 and 2 as floats; byte j holds rows j (low) and
// 2 + j (high): column 0 rows (0, 1, 2, 3) -> 0 | 2 << 4 = 32, 1 | 3 << 4 =
// 49; column 1 rows (15, 14, 13, 12) -> 15 | 13 << 4 = 223 (-33), 14 | 12 <<
// 4 = 206 (-50).
// CHECK-LABEL: func.func @int4_per_column
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}[32, -33], [49, -50]]]> : tensor<1x2x2xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}[5.000000e-01, 2.500000e-01]]> : tensor<1x2xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
// CHECK: kiln.matmul_int4 %arg0, %[[W]], %[[S]], %[[Z]] : (tensor<3x4xf32>, tensor<1x2x2xi8>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
// CHECK-NOT: kiln.dequantize
func.func @int4_per_column(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %q = kiln.constant dense<[[0, 15], [1, 14], [2, 13], [3, 12]]> : tensor<4x2xui4>
  %s = kiln.constant dense<[[0.5, 0.25]]> : tensor<1x2xf32>
  %z = kiln.constant dense<[[1, 2]]> : tensor<1x2xui4>
  %w = kiln.dequantize %q, %s zero_point(%z) : (tensor<4x2xui4>, tensor<1x2xf32>, tensor<1x2xui4>) -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Blocked signed int4 (blocks of 2 rows, as blocked DequantizeLinear
// imports): codes + 8, zero point 8. Block 0 rows (-8, 7) -> 0 | 15 << 4 =
// 240 (-16); block 1 rows (0, -1) -> 8 | 7 << 4 = 120.
// CHECK-LABEL: func.func @int4_blocked
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}[-16]], {{\[}}[120]]]> : tensor<2x1x1xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}[1.000000e+00], [2.000000e+00]]> : tensor<2x1xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<8.000000e+00> : tensor<2x1xf32>
// CHECK: kiln.matmul_int4 %arg0, %[[W]], %[[S]], %[[Z]]
func.func @int4_blocked(%x: tensor<1x4xf32>) -> tensor<1x1xf32> {
  %q = kiln.constant dense<[[[-8], [7]], [[0], [-1]]]> : tensor<2x2x1xi4>
  %s = kiln.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %d = kiln.dequantize %q, %s : (tensor<2x2x1xi4>, tensor<2x1x1xf32>) -> tensor<2x2x1xf32>
  %w = kiln.reshape %d : tensor<2x2x1xf32> -> tensor<4x1xf32>
  %y = kiln.matmul %x, %w : (tensor<1x4xf32>, tensor<4x1xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}

// -----

// 4-bit activations by 4-bit weights (a QDQ model quantized to int4 on
// both sides): an integer contraction like the 8-bit ones, before
// kiln.matmul_int4's fold of the weight alone could take it. The values
// become bytes (kiln.four_bit says they fit in 4 bits): the uint4
// activations cast to uint8, the int4 weights an int8 constant; the zero
// point 8 comes off the constant weights as 8 * (the column sums
// [-8 + 7, 1 + 2]).
// CHECK-LABEL: func.func @int4_by_int4
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x2xui4>
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[-8, 24]> : tensor<2xi32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<[{{0.200000003|2.000000e-01}}, {{0.400000006|4.000000e-01}}]> : tensor<2xf32>
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}[-8, 1], [7, 2]]> : tensor<2x2xi8>
// CHECK: %[[A8:.*]] = kiln.cast %[[A]] : tensor<3x2xui4> to tensor<3x2xui8>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[A8]], %[[W]] {kiln.four_bit} : (tensor<3x2xui8>, tensor<2x2xi8>) -> tensor<3x2xi32>
// CHECK: %[[D:.*]] = kiln.sub %[[ACC]], %[[C]]
// CHECK: %[[F:.*]] = kiln.cast %[[D]]
// CHECK: kiln.mul %[[F]], %[[S]]
// CHECK-NOT: kiln.matmul_int4
func.func @int4_by_int4(%a: tensor<3x2xui4>) -> tensor<3x2xf32> {
  %sa = kiln.constant dense<0.1> : tensor<f32>
  %za = kiln.constant dense<8> : tensor<ui4>
  %da = kiln.dequantize %a, %sa zero_point(%za) : (tensor<3x2xui4>, tensor<f32>, tensor<ui4>) -> tensor<3x2xf32>
  %b = kiln.constant dense<[[-8, 1], [7, 2]]> : tensor<2x2xi4>
  %sb = kiln.constant dense<[[2.0, 4.0]]> : tensor<1x2xf32>
  %db = kiln.dequantize %b, %sb : (tensor<2x2xi4>, tensor<1x2xf32>) -> tensor<2x2xf32>
  %y = kiln.matmul %da, %db : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Signed int4 activations move to unsigned bytes, a + 8 (uint8 by int8 is
// what vpdpbusd multiplies), with their zero point -1 + 8 = 7 taken off as
// 7 * (the column sums [3, -1]) = [21, -7].
// CHECK-LABEL: func.func @signed_int4_activations
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x2xi4>
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[21, -7]> : tensor<2xi32>
// CHECK-DAG: %[[EIGHT:.*]] = kiln.constant dense<8> : tensor<i8>
// CHECK: %[[A8:.*]] = kiln.cast %[[A]] : tensor<3x2xi4> to tensor<3x2xi8>
// CHECK: %[[U:.*]] = kiln.add %[[A8]], %[[EIGHT]]
// CHECK: %[[UA:.*]] = kiln.cast %[[U]] : tensor<3x2xi8> to tensor<3x2xui8>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[UA]], %{{.*}} {kiln.four_bit} : (tensor<3x2xui8>, tensor<2x2xi8>) -> tensor<3x2xi32>
// CHECK: kiln.sub %[[ACC]], %[[C]]
func.func @signed_int4_activations(%a: tensor<3x2xi4>) -> tensor<3x2xf32> {
  %sa = kiln.constant dense<0.1> : tensor<f32>
  %za = kiln.constant dense<-1> : tensor<i4>
  %da = kiln.dequantize %a, %sa zero_point(%za) : (tensor<3x2xi4>, tensor<f32>, tensor<i4>) -> tensor<3x2xf32>
  %b = kiln.constant dense<[[1, -3], [2, 2]]> : tensor<2x2xi4>
  %sb = kiln.constant dense<2.0> : tensor<f32>
  %db = kiln.dequantize %b, %sb : (tensor<2x2xi4>, tensor<f32>) -> tensor<2x2xf32>
  %y = kiln.matmul %da, %db : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// 8-bit activations by 4-bit weights are no integer contraction (one width
// per product): the weight alone becomes kiln.matmul_int4's, the
// activations stay a float dequantization.
// CHECK-LABEL: func.func @int8_by_int4
// CHECK: kiln.dequantize %arg0
// CHECK-NOT: kiln.matmul_integer
// CHECK: kiln.matmul_int4
func.func @int8_by_int4(%a: tensor<3x2xi8>) -> tensor<3x2xf32> {
  %sa = kiln.constant dense<0.1> : tensor<f32>
  %da = kiln.dequantize %a, %sa : (tensor<3x2xi8>, tensor<f32>) -> tensor<3x2xf32>
  %b = kiln.constant dense<[[-8, 1], [7, 2]]> : tensor<2x2xi4>
  %sb = kiln.constant dense<[[2.0, 4.0]]> : tensor<1x2xf32>
  %db = kiln.dequantize %b, %sb : (tensor<2x2xi4>, tensor<1x2xf32>) -> tensor<2x2xf32>
  %y = kiln.matmul %da, %db : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}
