// RUN: kiln-opt %s -split-input-file --kiln-pack-int4-weights="panel=16" | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-pack-int4-weights="panel=24" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: kiln-opt %s -split-input-file --kiln-pack-int4-weights="panel=32 w4a8-only=1" | FileCheck %s --check-prefix=ONLY

// Codes [K / B = 1, B / 2 = 2, N = 32] in panels of 16: [2, 1, 2, 16], the
// first panel holding columns 0..15 of both byte rows, then columns 16..31.
// Byte [g, j, n] is 32 j + n here, so the packed bytes are 0..15, 32..47,
// 16..31, 48..63. The scales [1, 32] = 0..31 (f32) become [2, 1, 16]:
// 0..15 then 16..31, unchanged in order because there is one group. The
// splat zero points become a splat of the new shape, and the old constants
// go. (Constants of 64 elements or fewer are dense attributes, larger ones
// blobs named int4_panels_N.)
// CHECK-LABEL: func.func @pack
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [32, 33, {{.*}}, 47]]], {{\[\[\[}}16, 17, {{.*}}, 31], [48, 49, {{.*}}, 63]]]]> : tensor<2x1x2x16xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, {{.*}}, 1.500000e+01]], {{\[\[}}1.600000e+01, {{.*}}, 3.100000e+01]]]> : tensor<2x1x16xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<8.000000e+00> : tensor<2x1x16xf32>
// CHECK: kiln.matmul_int4 %arg0, %[[W]], %[[S]], %[[Z]] : (tensor<1x4xf32>, tensor<2x1x2x16xi8>, tensor<2x1x16xf32>, tensor<2x1x16xf32>) -> tensor<1x32xf32>
// CHECK-NOT: kiln.constant
// CHECK: return
func.func @pack(%x: tensor<1x4xf32>) -> tensor<1x32xf32> {
  %w = kiln.constant dense_resource<codes> : tensor<1x2x32xi8>
  %s = kiln.constant dense_resource<scales> : tensor<1x32xf32>
  %z = kiln.constant dense<8.0> : tensor<1x32xf32>
  %y = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x4xf32>, tensor<1x2x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}
{-#
  dialect_resources: {
    builtin: {
      codes: "0x01000000000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F",
      scales: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F841"
    }
  }
#-}

// -----

// N = 40 is not a multiple of the panel, and codes computed at run time
// cannot be rearranged: both keep the row-major layout.
// CHECK-LABEL: func.func @unpacked
// CHECK: kiln.matmul_int4 %arg0, %{{.*}} : (tensor<1x4xf32>, tensor<1x2x40xi8>, tensor<1x40xf32>, tensor<1x40xf32>) -> tensor<1x40xf32>
// CHECK: kiln.matmul_int4 %arg0, %arg1, {{.*}} : (tensor<1x4xf32>, tensor<1x2x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
func.func @unpacked(%x: tensor<1x4xf32>, %w2: tensor<1x2x32xi8>) -> (tensor<1x40xf32>, tensor<1x32xf32>) {
  %w = kiln.constant dense<17> : tensor<1x2x40xi8>
  %s = kiln.constant dense<0.5> : tensor<1x40xf32>
  %y = kiln.matmul_int4 %x, %w, %s, %s : (tensor<1x4xf32>, tensor<1x2x40xi8>, tensor<1x40xf32>, tensor<1x40xf32>) -> tensor<1x40xf32>
  %s2 = kiln.constant dense<0.5> : tensor<1x32xf32>
  %y2 = kiln.matmul_int4 %x, %w2, %s2, %s2 : (tensor<1x4xf32>, tensor<1x2x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
  return %y, %y2 : tensor<1x40xf32>, tensor<1x32xf32>
}

// -----

// W4A8 (int8_activations): codes [K / B = 1, B / 2 = 8, N = 20] in the
// dot-product panels [ceil(N / 16) = 2, 1, B / 8 = 2, 16, 4], byte [c, g,
// t, l, i] = byte [g, 4 t + i, 16 c + l]: with byte [0, j, n] = (20 j + n)
// mod 100, column 0's first four rows are 0, 20, 40, 60, column 1's 1, 21,
// 41, 61, and rows 4..7 of column 0 are 80, 0, 20, 40. The 12 columns past
// N = 20 get codes and scales of 0; the splat zero points stay a splat; the
// result is sliced to N.
// CHECK-LABEL: func.func @pack_int8_activations
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<int4_panels_0> : tensor<2x1x2x16x4xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, {{.*}}, 1.500000e+01]], {{\[\[}}1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01, 0.000000e+00, {{.*}}, 0.000000e+00]]]> : tensor<2x1x16xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<8.000000e+00> : tensor<2x1x16xf32>
// CHECK: %[[Y:.*]] = kiln.matmul_int4 %arg0, %[[W]], %[[S]], %[[Z]] {int8_activations} : (tensor<1x16xf32>, tensor<2x1x2x16x4xi8>, tensor<2x1x16xf32>, tensor<2x1x16xf32>) -> tensor<1x32xf32>
// CHECK: %[[R:.*]] = kiln.slice %[[Y]] {ends = array<i64: 1, 20>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<1x32xf32> -> tensor<1x20xf32>
// CHECK: return %[[R]]
// CHECK: int4_panels_0: "0x{{........}}0014283C0115293D02162A3E{{[0-9A-F]+}}50001428
func.func @pack_int8_activations(%x: tensor<1x16xf32>) -> tensor<1x20xf32> {
  %w = kiln.constant dense<[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],[20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39],[40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59],[60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79],[80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99],[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],[20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39],[40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]]]> : tensor<1x8x20xi8>
  %s = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]]> : tensor<1x20xf32>
  %z = kiln.constant dense<8.0> : tensor<1x20xf32>
  %y = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<1x16xf32>, tensor<1x8x20xi8>, tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x20xf32>
  return %y : tensor<1x20xf32>
}

// -----

// w4a8-only (kiln-compile with a gfx target: the gfx W4A8 kernel reads the
// W4A8 panels, the gfx W4A16 kernels the row-major codes): the op with
// int8_activations is packed, the other keeps its codes. Without the
// option both are packed.
// CHECK-LABEL: func.func @w4a8_only
// CHECK-DAG: kiln.matmul_int4 %arg0, %{{.*}} : (tensor<1x16xf32>, tensor<2x1x8x16xi8>, tensor<2x1x16xf32>, tensor<2x1x16xf32>) -> tensor<1x32xf32>
// CHECK-DAG: kiln.matmul_int4 %arg0, %{{.*}} {int8_activations} : (tensor<1x16xf32>, tensor<2x1x2x16x4xi8>, tensor<2x1x16xf32>, tensor<2x1x16xf32>) -> tensor<1x32xf32>
// ONLY-LABEL: func.func @w4a8_only
// ONLY-DAG: kiln.matmul_int4 %arg0, %{{.*}} : (tensor<1x16xf32>, tensor<1x8x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
// ONLY-DAG: kiln.matmul_int4 %arg0, %{{.*}} {int8_activations} : (tensor<1x16xf32>, tensor<1x1x2x32x4xi8>, tensor<1x1x32xf32>, tensor<1x1x32xf32>) -> tensor<1x32xf32>
func.func @w4a8_only(%x: tensor<1x16xf32>) -> (tensor<1x32xf32>, tensor<1x32xf32>) {
  %w = kiln.constant dense<17> : tensor<1x8x32xi8>
  %s = kiln.constant dense<0.5> : tensor<1x32xf32>
  %z = kiln.constant dense<8.0> : tensor<1x32xf32>
  %a = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x16xf32>, tensor<1x8x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
  %b = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<1x16xf32>, tensor<1x8x32xi8>, tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
  return %a, %b : tensor<1x32xf32>, tensor<1x32xf32>
}

// -----

// BAD: error: kiln-pack-int4-weights: panel must be a positive multiple of 16, got 24
func.func @bad_panel() {
  return
}
