// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-panel-matmuls --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-panel-matmuls="rows=2 vectors=2" --canonicalize | FileCheck %s --check-prefix=AVX2

// The generic of a kiln.matmul_panels after bufferization: 5 rows, K = 8,
// N = 90 columns in 6 panels of 16 (the last with 6 columns of padding).
// Columns 0..63: 4 panels per step, 4 rows at a time (16 accumulators
// carried through K; each k step loads one row of 16 from each panel and
// broadcasts each row's activation), then the fifth row alone. Columns
// 64..79: one panel. Columns 80..89: the last panel with masked reads and
// writes of the result.
// CHECK-LABEL: func @panel_kernel
// CHECK: %{{.*}}:16 = scf.for %[[K:.*]] = %c0 to %c8 step %c1
// CHECK: vector.transfer_read %arg1[%c0, %[[K]], %c0], {{.*}} {in_bounds = [true]} : memref<6x8x16xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg1[%c1, %[[K]], %c0]
// CHECK: vector.transfer_read %arg1[%c2, %[[K]], %c0]
// CHECK: vector.transfer_read %arg1[%c3, %[[K]], %c0]
// CHECK: memref.load %arg0[%c0, %[[K]]]
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %arg0[%c3, %[[K]]]
// CHECK-COUNT-4: vector.fma
// CHECK-COUNT-16: vector.transfer_write {{.*}} {in_bounds = [true]}
// CHECK: %{{.*}}:4 = scf.for
// CHECK: vector.transfer_write {{.*}}, %arg2[%c4, %c48] {in_bounds = [true]}
// CHECK: %{{.*}}:4 = scf.for
// CHECK: vector.transfer_read %arg1[%c4, %{{.*}}, %c0]
// CHECK: vector.transfer_write {{.*}}, %arg2[%c3, %c64] {in_bounds = [true]}
// CHECK: %[[LAST:.*]] = vector.transfer_read %arg2[%c0, %c80], %{{.*}} : memref<5x90xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK: vector.transfer_read %arg1[%c5, %{{.*}}, %c0], {{.*}} {in_bounds = [true]}
// CHECK: vector.transfer_write %{{.*}}, %arg2[%c0, %c80] : vector<16xf32>, memref<5x90xf32>
// CHECK-NOT: kiln.panel_matmul
// AVX2 hosts: 2 panels and 2 rows per step.
// AVX2-LABEL: func @panel_kernel
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c32
// AVX2: scf.for %{{.*}} = %c0 to %c4 step %c2
// AVX2: %{{.*}}:4 = scf.for %[[K:.*]] = %c0 to %c8
// AVX2: vector.transfer_read %arg1[%{{.*}}, %[[K]], %{{.*}}]
// AVX2: vector.transfer_read %arg1[%{{.*}}, %[[K]], %{{.*}}]
// AVX2-NOT: vector.transfer_read %arg1
// AVX2: scf.yield
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 16, d2, d1 mod 16)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @panel_kernel(%x: memref<5x8xf32>, %w: memref<6x8x16xf32>, %out: memref<5x90xf32>) {
  linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<5x8xf32>, memref<6x8x16xf32>) outs(%out : memref<5x90xf32>) attrs = {kiln.panel_matmul} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The result is filled with zero just before the product (the workgroup's
// accumulator): the fill is dropped and the accumulators start from the
// constant instead of reading the result, which the kernel writes whole.
// CHECK-LABEL: func @filled_result
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NOT: vector.transfer_read %arg2
// CHECK: scf.for {{.*}} iter_args({{.*}} = %[[ZERO]]
// CHECK-NOT: vector.transfer_read %arg2
// CHECK: vector.transfer_write
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 16, d2, d1 mod 16)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @filled_result(%x: memref<4x8xf32>, %w: memref<4x8x16xf32>, %out: memref<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<4x64xf32>)
  linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<4x8x16xf32>) outs(%out : memref<4x64xf32>) attrs = {kiln.panel_matmul} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A write to the result between the fill and the product: the fill stays,
// and the kernel reads the result.
// CHECK-LABEL: func @written_between
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: vector.transfer_read %arg2
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 16, d2, d1 mod 16)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @written_between(%x: memref<4x8xf32>, %w: memref<4x8x16xf32>, %out: memref<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%out : memref<4x64xf32>)
  memref.store %one, %out[%c0, %c0] : memref<4x64xf32>
  linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<4x8x16xf32>) outs(%out : memref<4x64xf32>) attrs = {kiln.panel_matmul} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
