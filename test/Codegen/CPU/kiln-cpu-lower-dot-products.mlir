// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni" | FileCheck %s --check-prefix=TILE
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni" --kiln-cpu-lower-dot-products | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s --check-prefix=NOVNNI
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx2 mr=4" --kiln-cpu-lower-dot-products="isa=avx2" | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx2 mr=4 vector-lanes=8" | FileCheck %s --check-prefix=SPLIT
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512bw" --kiln-cpu-lower-dot-products="isa=avx512bw" | FileCheck %s --check-prefix=BW
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni wide-mr=8 wide-nr=32" | FileCheck %s --check-prefix=ILV
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni wide-mr=8 wide-nr=32" --kiln-cpu-lower-dot-products | FileCheck %s --check-prefix=ILVDOT
// RUN: not kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx3" 2>&1 | FileCheck %s --check-prefix=BAD-TILE
// RUN: not kiln-opt %s -split-input-file --kiln-cpu-lower-dot-products="isa=sse" 2>&1 | FileCheck %s --check-prefix=BAD-LOWER

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
// Without VNNI: vpmaddwd of two k steps widened to 16 bits. On AVX2 (4 x 16
// tiles) the 16 columns are two ymm halves of 8: per two k steps, two
// column operands (the two k rows' bytes interleaved, zero-extended) and,
// per accumulator row, its two weights broadcast (sign-extended) against
// each half, then added.
// AVX2-LABEL: func @weights_by_activations
// AVX2: %[[LO:.*]] = arith.extui %{{.*}} : vector<16xi8> to vector<16xi16>
// AVX2: %[[HI:.*]] = arith.extui %{{.*}} : vector<16xi8> to vector<16xi16>
// AVX2: arith.extsi %{{.*}} : vector<2xi8> to vector<2xi16>
// AVX2: %[[ROW:.*]] = vector.bitcast %{{.*}} : vector<8xi32> to vector<16xi16>
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[ROW]], %[[LO]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[ROW]], %[[HI]])
// AVX2-COUNT-14: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX2-NOT: llvm.call_intrinsic
// AVX2-NOT: arith.muli
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi32>, vector<8xi32>
// AVX2-NOT: vector.contract
// BW-LABEL: func @weights_by_activations
// BW-COUNT-32: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// BW-NOT: vector.contract
// BW-LABEL: func @activations_by_weights
// BAD-TILE: error: unknown dot-product ISA 'avx3' (none, avx2, avx512bw, avx512vnni)
// BAD-LOWER: error: unknown dot-product ISA 'sse' (none, avx2, avx512bw, avx512vnni)
// A tile of 16 rows (one row tile per column block) keeps 16 x 16 and
// interleaves its columns itself, wide tile or not.
// ILV-LABEL: func @weights_by_activations
// ILV-NOT: vector.transpose
// ILV: vector.contract {{.*}} : vector<16x4xi32>, vector<4x16xi32> into vector<16x16xi32>
// ILV-NOT: vector.transpose
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

// int8 x int8 (both sign-extended) has no vpdpbusd form: on a VNNI host it
// is vpmaddwd of the bytes widened to 16 bits, two k steps per instruction
// (exact: no 16-bit saturation), then an add.
// CHECK-LABEL: func @signed_by_signed
// CHECK-NOT: arith.muli
// CHECK: %[[COLS:.*]] = arith.extsi %{{.*}} : vector<32xi8> to vector<32xi16>
// CHECK: %[[PAIR:.*]] = arith.extsi %{{.*}} : vector<2xi8> to vector<2xi16>
// CHECK: %[[WORD:.*]] = vector.bitcast %[[PAIR]] : vector<2xi16> to vector<1xi32>
// CHECK: %[[PROD:.*]] = llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %[[COLS]]) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// CHECK: arith.addi %{{.*}}, %[[PROD]] : vector<16xi32>
// CHECK-COUNT-31: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// CHECK-NOT: llvm.call_intrinsic
// CHECK-NOT: arith.muli
// CHECK-NOT: vector.contract
// NOVNNI-LABEL: func @signed_by_signed
// NOVNNI: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
func.func @signed_by_signed(%x: tensor<16x64xi8>, %w: tensor<64x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%x, %w : tensor<16x64xi8>, tensor<64x16xi8>) outs(%c : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %0 : tensor<16x16xi32>
}

// -----

// 12 columns: on AVX2 a chunk of 8 and one of 4, whose lanes past its last
// column are poison in the operand and dropped from the sum; the chunks come
// from and go back into the 12-column row by shuffles (LLVM scalarizes
// strided slices of odd vectors). With AVX2's 8 lanes per register
// (vector-lanes=8), kiln-cpu-vectorize-gemm splits such a tile into 8 + 4
// columns instead: a loop-carried vector of 12 lanes would be kept in 12
// scalar registers.
// CHECK-LABEL: func @narrow_columns
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 12, 24, 36, 1, 13, 25, 37, {{.*}}, 11, 23, 35, 47, -1, -1, -1, -1, {{.*}}] : vector<48xi8>, vector<48xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// AVX2-LABEL: func @narrow_columns
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15] : vector<16xi8>, vector<16xi8>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7, -1, -1, -1, -1, -1, -1, -1, -1] : vector<8xi8>, vector<8xi8>
// AVX2-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] : vector<8xi32>, vector<8xi32>
// SPLIT-LABEL: func @narrow_columns
// SPLIT: scf.for
// SPLIT: vector.contract {{.*}} : vector<4x4xi32>, vector<4x8xi32> into vector<4x8xi32>
// SPLIT: vector.contract {{.*}} : vector<4x4xi32>, vector<4x4xi32> into vector<4x4xi32>
// SPLIT-NOT: vector<4x12xi32>
// SPLIT: return
// AVX2-NOT: vector.contract
// BW-LABEL: func @narrow_columns
// BW: vector.shuffle %{{.*}}, %{{.*}} [0, 12, 1, 13, 2, 14, 3, 15, {{.*}}, 11, 23, -1, -1, -1, -1, -1, -1, -1, -1] : vector<24xi8>, vector<24xi8>
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// BW-NOT: vector.contract
func.func @narrow_columns(%x: tensor<4x64xi8>, %w: tensor<64x12xi8>, %c: tensor<4x12xi32>) -> tensor<4x12xi32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x64xi8>, tensor<64x12xi8>) outs(%c : tensor<4x12xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %pw = arith.extui %p : i8 to i32
    %qw = arith.extsi %q : i8 to i32
    %m = arith.muli %pw, %qw : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<4x12xi32>
  return %0 : tensor<4x12xi32>
}

// -----

// A workgroup of 64 rows by one column block of 32 (8 row tiles of the wide
// 8 x 32 tile read the same columns): the block is interleaved once, before
// the row tiles, 16 columns at a time (4 k rows read, one byte shuffle, 64
// bytes written: each column's 4 k bytes side by side), into [K/4, 32 * 4].
// Every k step of a tile then reads its 32 columns' operand as 128
// contiguous bytes, a vector<32x4xi8> transposed back to the 4 x 32 the
// contraction multiplies; kiln-cpu-lower-dot-products takes each half of
// those bytes as they are for vpdpbusd: no shuffle in the row tiles.
// ILV-LABEL: func @interleaved_columns
// ILV: scf.forall
// ILV: vector.transfer_read %{{.*}} : tensor<64x32xi8>, vector<4x16xi8>
// ILV: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 32, 48, 1, 17, 33, 49, {{.*}}, 15, 31, 47, 63] : vector<64xi8>, vector<64xi8>
// ILV: vector.transfer_write %{{.*}} : vector<64xi8>, tensor<16x128xi8>
// ILV: scf.for %{{.*}} = %c0 to %c64 step %c8
// ILV: scf.for %[[K:.*]] = %c0 to %c64 step %c4
// ILV: %[[G:.*]] = arith.divui %[[K]], %{{.*}} : index
// ILV: %[[FLAT:.*]] = vector.transfer_read %{{.*}}[%[[G]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<16x128xi8>, vector<128xi8>
// ILV: %[[COLS:.*]] = vector.shape_cast %[[FLAT]] : vector<128xi8> to vector<32x4xi8>
// ILV: %[[T:.*]] = vector.transpose %[[COLS]], [1, 0] : vector<32x4xi8> to vector<4x32xi8>
// ILV: %[[X:.*]] = arith.extui %[[T]] : vector<4x32xi8> to vector<4x32xi32>
// ILV: vector.contract {{.*}} %[[X]], %{{.*}} : vector<8x4xi32>, vector<4x32xi32> into vector<8x32xi32>
// ILVDOT-LABEL: func @interleaved_columns
// ILVDOT: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 32, 48, {{.*}}] : vector<64xi8>, vector<64xi8>
// ILVDOT: scf.for %{{.*}} = %c0 to %c64 step %c8
// ILVDOT-NOT: vector.shuffle {{.*}} : vector<64xi8>, vector<64xi8>
// ILVDOT: vector.extract_strided_slice %{{.*}} {offsets = [0, 0], sizes = [16, 4], strides = [1, 1]} : vector<32x4xi8> to vector<16x4xi8>
// ILVDOT: vector.extract_strided_slice %{{.*}} {offsets = [16, 0], sizes = [16, 4], strides = [1, 1]} : vector<32x4xi8> to vector<16x4xi8>
// ILVDOT-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// ILVDOT-NOT: vector.shuffle {{.*}} : vector<64xi8>, vector<64xi8>
// ILVDOT-NOT: vector.contract
// ILVDOT: return
#wi = affine_map<(d0, d1, d2) -> (d0, d2)>
#xi = affine_map<(d0, d1, d2) -> (d2, d1)>
#oi = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @interleaved_columns(%w: tensor<64x64xi8>, %x: tensor<64x64xi8>) -> tensor<64x64xi32> attributes {kiln.dispatch} {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %r = scf.forall (%j) = (0) to (64) step (32) shared_outs(%o = %e) -> (tensor<64x64xi32>) {
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xi8> to tensor<64x32xi8>
    %ot = tensor.extract_slice %o[0, %j] [64, 32] [1, 1] : tensor<64x64xi32> to tensor<64x32xi32>
    %init = linalg.fill ins(%zero : i32) outs(%ot : tensor<64x32xi32>) -> tensor<64x32xi32>
    %mm = linalg.generic {indexing_maps = [#wi, #xi, #oi], iterator_types = ["parallel", "parallel", "reduction"]} ins(%w, %xt : tensor<64x64xi8>, tensor<64x32xi8>) outs(%init : tensor<64x32xi32>) {
    ^bb0(%a: i8, %b: i8, %acc: i32):
      %aw = arith.extsi %a : i8 to i32
      %bw = arith.extui %b : i8 to i32
      %p = arith.muli %aw, %bw : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    } -> tensor<64x32xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %mm into %o[0, %j] [64, 32] [1, 1] : tensor<64x32xi32> into tensor<64x64xi32>
    }
  }
  return %r : tensor<64x64xi32>
}

// -----

// A matrix-vector product's one-row tile of 160 columns (10 instructions'
// worth, the GEMV tile of kiln-cpu-vectorize-gemm): one vpdpbusd per 16
// columns and k step, each into its own accumulator, the row's 4 bytes
// broadcast once; the accumulators go back into the row by strided inserts.
// CHECK-LABEL: func @gemv_row
// CHECK: scf.for
// CHECK-COUNT-10: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: llvm.call_intrinsic
// CHECK: vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [144], strides = [1]} : vector<16xi32> into vector<160xi32>
// CHECK-NOT: vector.contract
#ga = affine_map<(d0, d1, d2) -> (d0, d2)>
#gb = affine_map<(d0, d1, d2) -> (d2, d1)>
#gr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @gemv_row(%x: tensor<1x256xi8>, %w: tensor<256x160xi8>, %c: tensor<1x160xi32>) -> tensor<1x160xi32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#ga, #gb, #gr], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x256xi8>, tensor<256x160xi8>) outs(%c : tensor<1x160xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %pw = arith.extui %p : i8 to i32
    %qw = arith.extsi %q : i8 to i32
    %m = arith.muli %pw, %qw : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<1x160xi32>
  return %0 : tensor<1x160xi32>
}
