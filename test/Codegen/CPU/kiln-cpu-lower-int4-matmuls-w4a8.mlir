// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="dot-isa=avx512vnni" --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="dot-isa=avx2 rows=2 vectors=1" --canonicalize | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="dot-isa=avx512bw" --canonicalize | FileCheck %s --check-prefix=BW
// RUN: kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="dot-isa=none" --canonicalize | FileCheck %s --check-prefix=NONE
// RUN: not kiln-opt %s -split-input-file --kiln-cpu-lower-int4-matmuls="dot-isa=sse9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// The W4A8 generic of a kiln.matmul_int4 {int8_activations} (after
// bufferization): 5 rows, K = 64 in 2 groups of 32, N = 64 in 2 panels of
// 32, the codes four rows at a time ([2, 2, 4, 32, 4]), amax[m, g] the f32
// bits of each row's largest magnitude per group. Rows go 4 at a time, then
// one; each block is first quantized into buffers on the stack: x * 127 /
// amax (0 when amax is 0), rounded half to even, to int8, with the group's
// sum and amax / 127.
// CHECK-LABEL: func @w4a8_kernel
// CHECK-DAG: %[[XQ:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4x2x2x16xi8>
// CHECK-DAG: %[[XS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4x2xf32>
// CHECK-DAG: %[[XA:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4x2xf32>
// CHECK: scf.for %[[G:.*]] = %c0 to %c2 step %c1 {
// CHECK: %[[BITS:.*]] = memref.load %arg4[%c0, %[[G]]] : memref<5x2xi32>
// CHECK: %[[AMAX:.*]] = arith.bitcast %[[BITS]] : i32 to f32
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[AMAX]]
// CHECK: %[[INV:.*]] = arith.select %[[POS]]
// CHECK: %[[X:.*]] = vector.transfer_read %arg0[%c0, %[[G]], %c0, %c0]
// CHECK: %[[R:.*]] = math.roundeven
// CHECK: %[[I:.*]] = arith.fptosi %[[R]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[B:.*]] = arith.trunci %[[I]] : vector<16xi32> to vector<16xi8>
// CHECK: vector.transfer_write %[[B]], %[[XQ]][%c0, %[[G]], %c0, %c0]
// CHECK: vector.reduction <add>
// CHECK: memref.store %{{.*}}, %[[XS]][%c0, %[[G]]]
// CHECK: memref.store %{{.*}}, %[[XA]][%c0, %[[G]]]
// Then every 32 columns: per group, per four rows t, two 64-byte reads of
// the codes (16 columns x 4 rows each), split into low and high nibbles,
// and per row one vpdpbusd of each with the row's four int8 activations
// (rows 4t.. and B / 2 + 4t..) broadcast.
// CHECK: scf.for %[[N0:.*]] = %c0 to %c64 step %c32 {
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2], [3, 4]] : memref<2x2x4x32x4xi8> into memref<2x2x4x128xi8>
// CHECK: %{{.*}}:8 = scf.for %[[GG:.*]] = %c0 to %c2 step %c1 iter_args(
// CHECK: %[[SUMS:.*]]:8 = scf.for %[[T:.*]] = %c0 to %c4 step %c1 iter_args(%[[S0:[^ ]*]] = %[[Z0:[^,]*]],
// CHECK: %[[CODES:.*]] = vector.transfer_read %[[FLAT]][%{{.*}}, %[[GG]], %[[T]], %{{.*}}], {{.*}} : memref<2x2x4x128xi8>, vector<64xi8>
// CHECK: %[[LO:.*]] = arith.andi %[[CODES]]
// CHECK: %[[HI:.*]] = arith.shrui %[[CODES]]
// CHECK: %[[LOW:.*]] = vector.transfer_read %[[XQ]][%c0, %[[GG]], %c0, %{{.*}}], {{.*}} : memref<4x2x2x16xi8>, vector<4xi8>
// CHECK: %[[D0:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[S0]], %[[LO]], %{{.*}})
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[D0]], %[[HI]], %{{.*}})
// After the group, in f32: acc += (float(sum) - zero * sum(x)) * (amax / 127 * scale).
// CHECK: %[[SC:.*]] = vector.transfer_read %arg2
// CHECK: %[[ZP:.*]] = vector.transfer_read %arg3
// CHECK: %[[ZX:.*]] = arith.mulf %[[ZP]], %{{.*}} : vector<16xf32>
// CHECK: %[[F:.*]] = arith.sitofp %[[SUMS]]#0 : vector<16xi32> to vector<16xf32>
// CHECK: %[[EXACT:.*]] = arith.subf %[[F]], %[[ZX]]
// CHECK: %[[TS:.*]] = arith.mulf %{{.*}}, %[[SC]]
// CHECK: %[[TERM:.*]] = arith.mulf %[[EXACT]], %[[TS]]
// CHECK: arith.addf %{{.*}}, %[[TERM]]
// CHECK-COUNT-8: vector.transfer_write
// The fifth row alone: its low and high nibbles' sums apart, added after the group.
// CHECK: %[[ONE:.*]]:4 = scf.for
// CHECK: arith.addi %[[ONE]]#0, %[[ONE]]#1 : vector<16xi32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: kiln.int4_matmul
// On AVX2, two rows and 16 columns a step, each dot product vpmaddubsw (uint8
// codes by int8 activations, pair sums in i16) and vpmaddwd by ones on the
// two 32-byte halves, joined and added.
// AVX2-LABEL: func @w4a8_kernel
// AVX2-DAG: memref.alloca() {alignment = 64 : i64} : memref<2x2x2x16xi8>
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c16
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX2: vector.shuffle
// AVX2-NOT: vpdpbusd
// BW-LABEL: func @w4a8_kernel
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// BW-NOT: vpdpbusd
// No dot-product ISA: each of the four bytes by shifts and i32 multiplies.
// NONE-LABEL: func @w4a8_kernel
// NONE-NOT: llvm.call_intrinsic
// NONE: arith.shrsi
// NONE: arith.muli {{.*}} : vector<16xi32>
// BAD: kiln-cpu-lower-int4-matmuls: unknown dot-isa 'sse9' (expected none, avx2, avx512bw or avx512vnni)
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#w = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d4 floordiv 4, d1 mod 32, d4 mod 4)>
#gp = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d1 mod 32)>
#mg = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2)>
#mn = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
func.func @w4a8_kernel(%x: memref<5x2x2x16xf32>, %w: memref<2x2x4x32x4xi8>, %s: memref<2x2x32xf32>, %z: memref<2x2x32xf32>, %amax: memref<5x2xi32>, %out: memref<5x64xf32>) {
  linalg.generic {indexing_maps = [#lhs, #w, #gp, #gp, #mg, #mn], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w, %s, %z, %amax : memref<5x2x2x16xf32>, memref<2x2x4x32x4xi8>, memref<2x2x32xf32>, memref<2x2x32xf32>, memref<5x2xi32>) outs(%out : memref<5x64xf32>) attrs = {kiln.int4_matmul} {
  ^bb0(%in: f32, %byte: i8, %scale: f32, %zero: f32, %a: i32, %acc: f32):
    linalg.yield %acc : f32
  }
  return
}

// -----

// W4A8 with row-major codes (a gfx target shares the artifact) has no
// kernel: the generic stays, no longer marked.
// CHECK-LABEL: func @w4a8_row_major
// CHECK: linalg.generic
// CHECK-NOT: kiln.int4_matmul
// CHECK: return
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#w = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d1)>
#gn = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1)>
#mg = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2)>
#mn = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
func.func @w4a8_row_major(%x: memref<1x2x2x16xf32>, %w: memref<2x16x32xi8>, %s: memref<2x32xf32>, %z: memref<2x32xf32>, %amax: memref<1x2xi32>, %out: memref<1x32xf32>) {
  linalg.generic {indexing_maps = [#lhs, #w, #gn, #gn, #mg, #mn], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w, %s, %z, %amax : memref<1x2x2x16xf32>, memref<2x16x32xi8>, memref<2x32xf32>, memref<2x32xf32>, memref<1x2xi32>) outs(%out : memref<1x32xf32>) attrs = {kiln.int4_matmul} {
  ^bb0(%in: f32, %byte: i8, %scale: f32, %zero: f32, %a: i32, %acc: f32):
    linalg.yield %acc : f32
  }
  return
}
