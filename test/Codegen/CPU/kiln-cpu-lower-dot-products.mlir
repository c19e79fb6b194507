// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="vnni=true" | FileCheck %s --check-prefix=TILE
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="vnni=true" --kiln-cpu-lower-dot-products | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s --check-prefix=NOVNNI

// A workgroup tile of a quantized pointwise convolution as the lowering
// makes it: int8 weights (lhs, sign-extended) x uint8 activations (rhs,
// zero-extended), K = 64. With vnni, kiln-cpu-vectorize-gemm leaves each
// 16x16x4 register tile as a vector.contract of the extended bytes (read as
// their plain 16x4 and 4x16 tiles, not broadcast into the whole iteration
// space as linalg's vectorizer reads them); then
// kiln-cpu-lower-dot-products makes it 16 vpdpbusd, one per accumulator row:
// the uint8 operand is the 16 columns' 4 bytes side by side (one shuffle of
// the 4 rows read), the int8 one the row's 4 bytes broadcast as an i32.
// Without vnni, the same tile is widening i32 multiply-adds.
// TILE-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// TILE-DAG: #[[KN:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// TILE-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// TILE-LABEL: func @weights_by_activations
// TILE: scf.for %{{.*}} = %c0 to %c64 step %c4
// TILE: vector.transfer_read %{{.*}} : tensor<16x4xi8>, vector<16x4xi8>
// TILE: %[[W:.*]] = arith.extsi %{{.*}} : vector<16x4xi8> to vector<16x4xi32>
// TILE: vector.transfer_read %{{.*}} : tensor<4x16xi8>, vector<4x16xi8>
// TILE: %[[X:.*]] = arith.extui %{{.*}} : vector<4x16xi8> to vector<4x16xi32>
// TILE: vector.contract {indexing_maps = [#[[MK]], #[[KN]], #[[MN]]], {{.*}}} %[[W]], %[[X]], %{{.*}} : vector<16x4xi32>, vector<4x16xi32> into vector<16x16xi32>
// CHECK-LABEL: func @weights_by_activations
// CHECK-NOT: vector.contract
// CHECK: %[[COLS:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, {{.*}}, 15, 31, 47, 63] : vector<64xi8>, vector<64xi8>
// CHECK: %[[ROW:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[COLS]], %[[ROW]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-COUNT-15: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[COLS]], %{{.*}})
// CHECK-NOT: llvm.call_intrinsic
// CHECK-NOT: vector.contract
// NOVNNI-LABEL: func @weights_by_activations
// NOVNNI-NOT: vector.contract
// NOVNNI-NOT: llvm.call_intrinsic
// NOVNNI: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
#w = affine_map<(d0, d1, d2) -> (d0, d2)>
#x = affine_map<(d0, d1, d2) -> (d2, d1)>
#o = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @weights_by_activations(%w: tensor<16x64xi8>, %x: tensor<64x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#w, #x, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%w, %x : tensor<16x64xi8>, tensor<64x16xi8>) outs(%c : tensor<16x16xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %aw = arith.extsi %a : i8 to i32
    %bw = arith.extui %b : i8 to i32
    %p = arith.muli %aw, %bw : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<16x16xi32>
  return %0 : tensor<16x16xi32>
}

// -----

// The matmul form: uint8 activations (lhs) x int8 weights (rhs). The
// broadcast row is now the unsigned operand of vpdpbusd.
// CHECK-LABEL: func @activations_by_weights
// CHECK: %[[COLS:.*]] = vector.shuffle
// CHECK: %[[ROW:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[ROW]], %[[COLS]])
// CHECK-COUNT-15: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %[[COLS]])
// CHECK-NOT: llvm.call_intrinsic
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#r = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @activations_by_weights(%x: tensor<16x64xi8>, %w: tensor<64x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#a, #b, #r], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<16x64xi8>, tensor<64x16xi8>) outs(%c : tensor<16x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %pw = arith.extui %p : i8 to i32
    %qw = arith.extsi %q : i8 to i32
    %m = arith.muli %pw, %qw : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<16x16xi32>
  return %0 : tensor<16x16xi32>
}

// -----

// int8 x int8 (both sign-extended) has no vpdpbusd form: outer products.
// CHECK-LABEL: func @signed_by_signed
// CHECK-NOT: llvm.call_intrinsic
// CHECK-NOT: vector.contract
// CHECK: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
func.func @signed_by_signed(%x: tensor<16x64xi8>, %w: tensor<64x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%x, %w : tensor<16x64xi8>, tensor<64x16xi8>) outs(%c : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %0 : tensor<16x16xi32>
}
