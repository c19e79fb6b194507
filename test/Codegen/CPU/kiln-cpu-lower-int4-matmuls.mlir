// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="rows=2 vectors=1" --canonicalize | FileCheck %s --check-prefix=AVX2

// The generic of a kiln.matmul_int4 (as the lowering makes it, after
// bufferization): 5 rows, K = 64 in 2 groups of 32, N = 56 columns. The
// kernel covers 32 columns (2 vectors of 16) per step, then 16, and leaves
// the last 8 to the generic on their subviews; rows go 4 at a time, then
// one (the canonicalizer folds the loops that run once). Per group the
// scales and zero points are read once per vector; per byte row, the
// bytes' low and high four bits are converted and dequantized ((code -
// zero) * scale), and each row adds its two broadcast activations times
// them into accumulators the loops carry.
// CHECK-LABEL: func @int4_kernel
// CHECK-COUNT-8: vector.transfer_read %arg4
// CHECK: %{{.*}}:8 = scf.for %[[G:.*]] = %c0 to %c2 step %c1 iter_args
// CHECK: %[[S:.*]] = vector.transfer_read %arg2[%[[G]], %c0]
// CHECK: %[[Z:.*]] = vector.transfer_read %arg3[%[[G]], %c0]
// CHECK: %{{.*}}:8 = scf.for %[[J:.*]] = %c0 to %c16 step %c1 iter_args(%[[ACC0:[^ ]*]] = {{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[B:.*]] = vector.transfer_read %arg1[%[[G]], %[[J]], %c0], %{{.*}} : memref<2x16x56xi8>, vector<16xi8>
// CHECK: %[[WIDE:.*]] = arith.extui %[[B]] : vector<16xi8> to vector<16xi32>
// CHECK: %[[LO:.*]] = arith.andi %[[WIDE]]
// CHECK: %[[HI:.*]] = arith.shrui %[[WIDE]]
// CHECK: %[[LOF:.*]] = arith.uitofp %[[LO]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[LOZ:.*]] = arith.subf %[[LOF]], %[[Z]]
// CHECK: %[[WLO:.*]] = arith.mulf %[[LOZ]], %[[S]]
// CHECK: %[[HIF:.*]] = arith.uitofp %[[HI]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[HIZ:.*]] = arith.subf %[[HIF]], %[[Z]]
// CHECK: %[[WHI:.*]] = arith.mulf %[[HIZ]], %[[S]]
// CHECK: %[[A0:.*]] = memref.load %arg0[%c0, %[[G]], %c0, %[[J]]]
// CHECK: %[[A1:.*]] = memref.load %arg0[%c0, %[[G]], %c1, %[[J]]]
// CHECK: %[[B0:.*]] = vector.broadcast %[[A0]] : f32 to vector<16xf32>
// CHECK: %[[B1:.*]] = vector.broadcast %[[A1]] : f32 to vector<16xf32>
// CHECK: %[[F0:.*]] = vector.fma %[[B0]], %[[WLO]], %[[ACC0]] : vector<16xf32>
// CHECK: vector.fma %[[B1]], %[[WHI]], %[[F0]] : vector<16xf32>
// CHECK-COUNT-8: vector.transfer_write
// The fifth row alone, 32 columns; then 16 columns for 4 rows and for 1.
// CHECK: %{{.*}}:2 = scf.for
// CHECK: %{{.*}}:4 = scf.for
// CHECK: %{{.*}} = scf.for
// The last 8 columns: the generic on their subviews, no longer marked.
// CHECK: %[[TAIL:.*]] = memref.subview %arg4[0, 48] [5, 8] [1, 1]
// CHECK: linalg.generic {{.*}} outs(%[[TAIL]] : memref<5x8xf32, strided<[56, 1], offset: 48>>) {
// CHECK-NOT: kiln.int4_matmul
// AVX2 hosts: one vector and two rows per step, 48 columns.
// AVX2-LABEL: func @int4_kernel
// AVX2: scf.for %{{.*}} = %c0 to %c48 step %c16
// AVX2: scf.for %{{.*}} = %c0 to %c4 step %c2
// AVX2: %{{.*}}:2 = scf.for
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#w = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d1)>
#gn = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
func.func @int4_kernel(%x: memref<5x2x2x16xf32>, %w: memref<2x16x56xi8>, %s: memref<2x56xf32>, %z: memref<2x56xf32>, %out: memref<5x56xf32>) {
  linalg.generic {indexing_maps = [#lhs, #w, #gn, #gn, #mn], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w, %s, %z : memref<5x2x2x16xf32>, memref<2x16x56xi8>, memref<2x56xf32>, memref<2x56xf32>) outs(%out : memref<5x56xf32>) attrs = {kiln.int4_matmul} {
  ^bb0(%in: f32, %byte: i8, %scale: f32, %zero: f32, %acc: f32):
    %wide = arith.extui %byte : i8 to i32
    %p = linalg.index 3 : index
    %pi = arith.index_cast %p : index to i32
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %pi, %c4 : i32
    %c15 = arith.constant 15 : i32
    %sh = arith.shrui %wide, %shift : i32
    %code = arith.andi %sh, %c15 : i32
    %f = arith.sitofp %code : i32 to f32
    %d = arith.subf %f, %zero : f32
    %wv = arith.mulf %d, %scale : f32
    %prod = arith.mulf %in, %wv : f32
    %sum = arith.addf %acc, %prod : f32
    linalg.yield %sum : f32
  }
  return
}
