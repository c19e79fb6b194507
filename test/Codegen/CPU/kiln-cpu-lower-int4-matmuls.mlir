// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="rows=2 vectors=1 tile-rows=4" --canonicalize | FileCheck %s --check-prefix=AVX2

// The generic of a kiln.matmul_int4 (as the lowering makes it, after
// bufferization): 5 rows, K = 64 in 2 groups of 32, N = 56 columns,
// row-major codes. The few-rows kernel covers 32 columns (2 vectors of 16)
// per step, then 16, and leaves the last 8 to the generic on their
// subviews; rows go 4 at a time, then one (the canonicalizer folds the
// loops that run once). Per byte row, the bytes' low and high four bits are
// converted to floats and each row multiplies-adds its two broadcast
// activations by them into per-group sums, which start from zero; after
// the group, its zero point times the row's sum of activations is
// subtracted and the result scaled into the accumulators.
// CHECK-LABEL: func @int4_kernel
// CHECK-COUNT-8: vector.transfer_read %arg4
// CHECK: %{{.*}}:8 = scf.for %[[G:.*]] = %c0 to %c2 step %c1 iter_args(%[[OUT0:[^ ]*]] = {{.*}})
// CHECK: %[[SUMS:.*]]:8 = scf.for %[[J:.*]] = %c0 to %c16 step %c1 iter_args(%[[ACC0:[^ ]*]] = %[[ZERO:[^,]*]], %{{[^ ]*}} = %[[ZERO]],
// CHECK: %[[B:.*]] = vector.transfer_read %arg1[%[[G]], %[[J]], %c0], %{{.*}} : memref<2x16x56xi8>, vector<16xi8>
// CHECK: %[[WIDE:.*]] = arith.extui %[[B]] : vector<16xi8> to vector<16xi32>
// CHECK: %[[LO:.*]] = arith.andi %[[WIDE]]
// CHECK: %[[HI:.*]] = arith.shrui %[[WIDE]]
// CHECK: %[[LOF:.*]] = arith.uitofp %[[LO]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[HIF:.*]] = arith.uitofp %[[HI]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[A0:.*]] = memref.load %arg0[%c0, %[[G]], %c0, %[[J]]]
// CHECK: %[[A1:.*]] = memref.load %arg0[%c0, %[[G]], %c1, %[[J]]]
// CHECK: %[[B0:.*]] = vector.broadcast %[[A0]] : f32 to vector<16xf32>
// CHECK: %[[B1:.*]] = vector.broadcast %[[A1]] : f32 to vector<16xf32>
// CHECK: %[[F0:.*]] = vector.fma %[[B0]], %[[LOF]], %[[ACC0]] : vector<16xf32>
// CHECK: vector.fma %[[B1]], %[[HIF]], %[[F0]] : vector<16xf32>
// CHECK: %[[S:.*]] = vector.transfer_read %arg2[%[[G]], %c0]
// CHECK: %[[Z:.*]] = vector.transfer_read %arg3[%[[G]], %c0]
// CHECK: %[[XS:.*]] = vector.transfer_read %arg0[%c0, %[[G]], %c0, %c0], {{.*}} : memref<5x2x2x16xf32>, vector<2x16xf32>
// CHECK: %[[FLAT:.*]] = vector.shape_cast %[[XS]] : vector<2x16xf32> to vector<32xf32>
// CHECK: %[[XSUM:.*]] = vector.reduction <add>, %[[FLAT]] fastmath<reassoc>
// CHECK: %[[XB:.*]] = vector.broadcast %[[XSUM]]
// CHECK: %[[ZX:.*]] = arith.mulf %[[Z]], %[[XB]]
// CHECK: %[[SHIFTED:.*]] = arith.subf %[[SUMS]]#0, %[[ZX]]
// CHECK: vector.fma %[[S]], %[[SHIFTED]], %[[OUT0]]
// CHECK-COUNT-8: vector.transfer_write
// The fifth row alone, 32 columns, its low and high products in separate
// sums (4 of them) added after the group; then 16 columns for 4 rows and
// for 1.
// CHECK: %{{.*}}:2 = scf.for
// CHECK: %[[ROW:.*]]:4 = scf.for
// CHECK: arith.addf %[[ROW]]#0, %[[ROW]]#1
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


// -----

// Codes in column panels of 32 (kiln-pack-int4-weights): 20 rows, 64
// columns. From 16 rows each group's 16 x 32 block of weights is
// dequantized once into a buffer on the stack ((code - zero) * scale, low
// nibbles in buffer row 0, high in row 1), at [panel, group, byte row,
// column in panel]; register tiles of 8 rows x 32 columns read it, then
// the 4 rows left one at a time.
// CHECK-LABEL: func @int4_buffered
// CHECK: %[[BUF:.*]] = memref.alloca() {alignment = 64 : i64} : memref<2x16x32xf32>
// CHECK: scf.for %[[N0:.*]] = %c0 to %c64 step %c32
// CHECK: %[[P:.*]] = arith.divui %[[N0]], %c32
// CHECK: %[[L:.*]] = arith.remui %[[N0]], %c32
// CHECK: scf.for %[[G:.*]] = %c0 to %c2 step %c1
// CHECK: %[[S:.*]] = vector.transfer_read %arg2[%[[P]], %[[G]], %[[L]]]
// CHECK: %[[Z:.*]] = vector.transfer_read %arg3[%[[P]], %[[G]], %[[L]]]
// CHECK: scf.for %[[J:.*]] = %c0 to %c16 step %c1
// CHECK: vector.transfer_read %arg1[%[[P]], %[[G]], %[[J]], %[[L]]], {{.*}} : memref<2x2x16x32xi8>, vector<16xi8>
// CHECK: %[[LOZ:.*]] = arith.subf %{{.*}}, %[[Z]]
// CHECK: %[[W:.*]] = arith.mulf %[[LOZ]], %[[S]]
// CHECK: vector.transfer_write %[[W]], %[[BUF]][%c0, %[[J]], %c0]
// CHECK: scf.for %[[M0:.*]] = %c0 to %c16 step %c8
// CHECK: %{{.*}}:16 = scf.for %[[K:.*]] = %c0 to %c16 step %c1
// CHECK: vector.transfer_read %[[BUF]][%c0, %[[K]], %c0]
// CHECK: vector.transfer_read %[[BUF]][%c0, %[[K]], %c16]
// CHECK: memref.load %arg0[%[[M0]], %[[G]], %c0, %[[K]]]
// CHECK-COUNT-2: vector.fma
// CHECK: %{{.*}}:16 = scf.for %[[K1:.*]] = %c0 to %c16 step %c1
// CHECK: vector.transfer_read %[[BUF]][%c1, %[[K1]], %c0]
// CHECK: memref.load %arg0[%[[M0]], %[[G]], %c1, %[[K1]]]
// CHECK: scf.for %{{.*}} = %c16 to %c20 step %c1
// CHECK-NOT: kiln.int4_matmul
// On AVX2 hosts, 16 columns per step (both halves of each panel), tiles of 4 rows.
// AVX2-LABEL: func @int4_buffered
// AVX2: memref.alloca() {alignment = 64 : i64} : memref<2x16x16xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c16
// AVX2: scf.for %{{.*}} = %c0 to %c20 step %c4
// AVX2: %{{.*}}:4 = scf.for
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#wp = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d4, d1 mod 32)>
#gp = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d1 mod 32)>
#mn = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
func.func @int4_buffered(%x: memref<20x2x2x16xf32>, %w: memref<2x2x16x32xi8>, %s: memref<2x2x32xf32>, %z: memref<2x2x32xf32>, %out: memref<20x64xf32>) {
  linalg.generic {indexing_maps = [#lhs, #wp, #gp, #gp, #mn], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w, %s, %z : memref<20x2x2x16xf32>, memref<2x2x16x32xi8>, memref<2x2x32xf32>, memref<2x2x32xf32>) outs(%out : memref<20x64xf32>) attrs = {kiln.int4_matmul} {
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
