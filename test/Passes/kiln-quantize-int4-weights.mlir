// RUN: kiln-opt %s -split-input-file --kiln-quantize-int4-weights='group-size=2' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-quantize-int4-weights='group-size=2 zero-points=true' | FileCheck %s --check-prefix=ZP
// RUN: kiln-opt %s -split-input-file --kiln-quantize-int4-weights='group-size=4' | FileCheck %s --check-prefix=G4
// RUN: not kiln-opt %s -split-input-file --kiln-quantize-int4-weights='group-size=3' 2>&1 | FileCheck %s --check-prefix=ODD

// Symmetric groups of 2 rows: scale max |w| / 7, codes rint(w / scale) + 8.
// Column 0, rows 0-1 [7, -3]: scale 1, codes 15, 5 -> byte 15 | 5 << 4 = 95.
// Column 1, rows 0-1 [-3.5, 1.75]: scale 0.5, codes 1, rint(3.5) + 8 = 12
// (half to even) -> 1 | 12 << 4 = 193 = -63 as i8. Rows 2-3: [0, 0]:
// scale 1 (not 0), codes 8, 8 -> 136 = -120; [14, -14]: scale 2, codes 15,
// 1 -> 31.
// CHECK-LABEL: func.func @symmetric
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}[95, -63]], {{\[}}[-120, 31]]]> : tensor<2x1x2xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 5.000000e-01], [1.000000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<8.000000e+00> : tensor<2x2xf32>
// CHECK: kiln.matmul_int4 %arg0, %[[W]], %[[S]], %[[Z]] : (tensor<3x4xf32>, tensor<2x1x2xi8>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// CHECK-NOT: kiln.matmul %
// G4-LABEL: func.func @symmetric
// G4: kiln.matmul_int4 %arg0, %{{.*}} : (tensor<3x4xf32>, tensor<1x2x2xi8>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
func.func @symmetric(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[7.0, -3.5], [-3.0, 1.75], [0.0, 14.0], [0.0, -14.0]]> : tensor<4x2xf32>
  %y = kiln.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// With zero points, over [min(w, 0), max(w, 0)]: column 0 [15, 0]: scale 1,
// zero point 0, codes 15, 0 -> 15. Column 1 [-2, 13]: scale 15 / 15 = 1,
// zero point rint(2) = 2, codes 0, 15 -> 240 = -16.
// ZP-LABEL: func.func @asymmetric
// ZP-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}[15, -16]]]> : tensor<1x1x2xi8>
// ZP-DAG: %[[Z:.*]] = kiln.constant dense<{{\[}}[0.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
// ZP: kiln.matmul_int4 %arg0, %{{.*}}, %{{.*}}, %[[Z]]
func.func @asymmetric(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense<[[15.0, -2.0], [0.0, 13.0]]> : tensor<2x2xf32>
  %y = kiln.matmul %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// -----

// K = 3 is not a multiple of the group: the weight gains a zero row
// (scale 1, codes 15 | 15 << 4 = -1 for rows 0-1, 15 | 8 << 4 = -113 for
// row 2 and the padding's 0) and x a zero column.
// CHECK-LABEL: func.func @padded
// CHECK: %[[X:.*]] = kiln.pad %arg0 {pads = array<i64: 0, 0, 0, 1>} : tensor<1x3xf32> -> tensor<1x4xf32>
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}[-1, -1]], {{\[}}[-113, -113]]]> : tensor<2x1x2xi8>
// CHECK: kiln.matmul_int4 %[[X]], %[[W]], %{{.*}}, %{{.*}} : (tensor<1x4xf32>, tensor<2x1x2xi8>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
// With zero points the padding's code is the group's zero point (0 here:
// the group [7, 0] has min 0): 15 | 0 << 4.
// ZP-LABEL: func.func @padded
// ZP-DAG: kiln.constant dense<{{\[}}{{\[}}[-1, -1]], {{\[}}[15, 15]]]> : tensor<2x1x2xi8>
func.func @padded(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense<7.0> : tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// -----

// An activation times an activation has no weight; a node that
// --quantize-exclude names (kiln.float_nodes) stays float: both keep
// kiln.matmul.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.matmul_int4
// CHECK-COUNT-2: kiln.matmul %
module attributes {kiln.float_nodes = ["head"]} {
func.func @kept(%a: tensor<1x2xf32>, %b: tensor<2x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %z = kiln.matmul %a, %b : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %v = kiln.constant dense<1.0> : tensor<2x2xf32>
  %h = kiln.matmul %a, %v : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32> loc("head")
  return %z, %h : tensor<1x2xf32>, tensor<1x2xf32>
}
}

// ODD: error: kiln-quantize-int4-weights: group-size must be even and at least 2, got 3
