// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-cpu-winograd-kernels{workgroups=4}),canonicalize,cse)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-cpu-winograd-kernels{workgroups=4 vector-lanes=8}),canonicalize,cse)' | FileCheck %s --check-prefix=AVX2

// A 14x14 image in F(4,3): 4 x 4 tiles, a row of 4 tiles, so a vector
// holds 4 tile rows (one block, at the border: the image rows it reads
// are known; rows 14 and 15 are zeros, not read). Workgroups: the halves of
// alpha (points 0-17 and 18-35, the outer dimension) times two blocks of
// two channels; each half stores its 18 transformed vectors once per
// channel.
// CHECK-LABEL: func.func @input_narrow
// CHECK-SAME: kiln.flops = 55296 : i64, kiln.workgroup_count = 4 : i64
// CHECK: scf.forall (%[[P0:.*]], %[[C0:.*]]) = (0, 0) to (36, 4) step (18, 2)
// CHECK: tensor.extract_slice %{{.*}}[%[[P0]], %[[C0]], 0] [18, 2, 16] [1, 1, 1]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[P0]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: scf.for
// CHECK-COUNT-14: vector.transfer_read %arg0
// CHECK-NOT: vector.transfer_read
// CHECK: vector.shuffle
// CHECK: vector.fma
// CHECK-COUNT-18: vector.transfer_write {{.*}} {in_bounds = [true]} : vector<16xf32>, tensor<18x2x16xf32>
// CHECK: } else {
// CHECK-COUNT-18: vector.transfer_write {{.*}} {in_bounds = [true]} : vector<16xf32>, tensor<18x2x16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: tensor.parallel_insert_slice
// With 8 lanes: two rows of 4 tiles per block, two blocks.
// AVX2-LABEL: func.func @input_narrow
// AVX2-COUNT-72: vector.transfer_write {{.*}} : vector<8xf32>, tensor<18x2x16xf32>
// AVX2-NOT: vector.transfer_write
func.func @input_narrow(%x: tensor<1x4x14x14xf32>) -> tensor<36x4x16xf32> attributes {kiln.dispatch} {
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x4x14x14xf32> -> tensor<36x4x16xf32>
  return %0 : tensor<36x4x16xf32>
}

// -----

// 70 columns: 18 tiles a row, one tile row per block: a block of 16 tiles
// and one of 2 (its stores masked to 2 lanes).
// CHECK-LABEL: func.func @input_wide
// AVX2-LABEL: func.func @input_wide
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (36, 2) step (18, 1)
// CHECK-DAG: %[[MASK:.*]] = vector.constant_mask [2] : vector<16xi1>
// CHECK-COUNT-18: vector.transfer_write {{.*}} {in_bounds = [true]} : vector<16xf32>, tensor<18x1x36xf32>
// CHECK-COUNT-18: vector.transfer_write {{.*}}, %[[MASK]] {in_bounds = [true]} : vector<16xf32>, tensor<18x1x36xf32>
func.func @input_wide(%x: tensor<1x2x8x70xf32>) -> tensor<36x2x36xf32> attributes {kiln.dispatch} {
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x2x8x70xf32> -> tensor<36x2x36xf32>
  return %0 : tensor<36x2x36xf32>
}

// -----

// The output transform with bias (read per channel), residual and ReLU:
// 14 output rows of one vector each per channel (columns past 14 masked off
// by the image's width: in_bounds false), rows 14 and 15 not stored.
// CHECK-LABEL: func.func @output
// CHECK-SAME: kiln.workgroup_count = 4 : i64
// CHECK: scf.forall (%[[F:.*]]) in (4)
// CHECK: %[[B:.*]] = tensor.extract %arg1[%[[F]]]
// CHECK: vector.broadcast %[[B]] : f32 to vector<16xf32>
// CHECK-COUNT-36: vector.transfer_read %arg0
// CHECK: vector.shuffle
// CHECK: vector.transfer_read %arg2
// CHECK: arith.maximumf
// CHECK-COUNT-14: vector.transfer_write {{.*}} : vector<16xf32>, tensor<1x1x14x14xf32>
// CHECK-NOT: vector.transfer_write
func.func @output(%m: tensor<36x4x16xf32>, %b: tensor<4xf32>, %r: tensor<1x4x14x14xf32>) -> tensor<1x4x14x14xf32> attributes {kiln.dispatch} {
  %1 = kiln.winograd_output %m bias(%b) residual(%r) {relu, tile = 4 : i64} : (tensor<36x4x16xf32>, tensor<4xf32>, tensor<1x4x14x14xf32>) -> tensor<1x4x14x14xf32>
  return %1 : tensor<1x4x14x14xf32>
}

// -----

// 300 columns: 75 tiles a row, 5 blocks of 16: the first (it reads the left
// padding) and the last (11 tiles, masked) unrolled, the three between a
// loop from tile 16 to tile 64.
// CHECK-LABEL: func.func @input_very_wide
// CHECK: scf.for %{{.*}} = %c16 to %c64 step %c16
// CHECK: vector.constant_mask [11] : vector<16xi1>
// CHECK-LABEL: func.func @output_very_wide
// CHECK: scf.for %{{.*}} = %c16 to %c64 step %c16
func.func @input_very_wide(%x: tensor<1x2x4x300xf32>) -> tensor<36x2x75xf32> attributes {kiln.dispatch} {
  %0 = kiln.winograd_input %x {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : tensor<1x2x4x300xf32> -> tensor<36x2x75xf32>
  return %0 : tensor<36x2x75xf32>
}
func.func @output_very_wide(%m: tensor<36x2x75xf32>) -> tensor<1x2x4x300xf32> attributes {kiln.dispatch} {
  %0 = kiln.winograd_output %m {tile = 4 : i64} : (tensor<36x2x75xf32>) -> tensor<1x2x4x300xf32>
  return %0 : tensor<1x2x4x300xf32>
}
