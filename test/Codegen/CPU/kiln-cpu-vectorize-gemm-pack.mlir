// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="pack-panels=false" | FileCheck %s --check-prefix=NOPACK

// Panel packing: the 64 rows of A make 4 row tiles of 16 that all read the
// same 16-column block of B, so each column block (32 x 16) is first copied
// into a contiguous panel, a row of 16 floats per vector read and write,
// and the row tiles (16 x 16 accumulators carried through the k loop) read
// the panel. Without the option, the tiles read B in place (64 floats
// between consecutive k rows).
// CHECK-LABEL: func @packed
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<32x16xf32>
// CHECK: %[[PANEL:.*]] = scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %[[EMPTY]]) -> (tensor<32x16xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<32x16xf32>, vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<32x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// CHECK: tensor.extract_slice %[[PANEL]][%{{.*}}, 0] [4, 16] [1, 1]
// CHECK-COUNT-64: vector.fma
// NOPACK-LABEL: func @packed
// NOPACK-NOT: vector<16xf32>, tensor<32x16xf32>
// NOPACK: scf.for %{{.*}} = %c0 to %c32 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// NOPACK-NOT: vector<16xf32>, tensor<32x16xf32>
func.func @packed(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

// One row tile (16 rows) reads each column block once: nothing to gain from
// a copy, so none is made.
// CHECK-LABEL: func @single_row_tile
// CHECK-NOT: vector<16xf32>, tensor<32x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// CHECK-NOT: vector<16xf32>, tensor<32x16xf32>
func.func @single_row_tile(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// Two contractions in one block: each column tile of each is packed once.
// (The first packing collected every contraction of the enclosing block,
// so the first product's tiles were copied again and the second product's
// whole right-hand side was copied before it was tiled.) The first product
// has 4 column blocks of 16 over k = 32, the second 2 over k = 64.
// CHECK-LABEL: func @two_products
// CHECK-NOT: vector<16xf32>, tensor<{{[0-9]+}}x16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<32x16xf32>
// CHECK-NOT: vector<16xf32>, tensor<{{[0-9]+}}x16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<64x16xf32>
// CHECK-NOT: vector<16xf32>, tensor<{{[0-9]+}}x16xf32>
// CHECK: return
func.func @two_products(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<64x64xf32>, %d: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = linalg.matmul ins(%0, %a : tensor<64x64xf32>, tensor<64x32xf32>) outs(%d : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %1 : tensor<64x32xf32>
}
