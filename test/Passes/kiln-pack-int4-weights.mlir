// RUN: kiln-opt %s -split-input-file --kiln-pack-int4-weights="panel=16" | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-pack-int4-weights="panel=24" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

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

// BAD: error: kiln-pack-int4-weights: panel must be a positive multiple of 16, got 24
func.func @bad_panel() {
  return
}
